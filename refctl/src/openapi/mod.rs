//! The OpenAPI 3.1 description: what utoipa states (`api::http::openapi`:
//! the handlers' statements, the types' schemas, the shared components and
//! the rules every operation and schema follows), completed here with what
//! it cannot say: keywords its model or its derive lacks (`schemas`), prose
//! as one line per paragraph and a stable key order (`layout`), and the
//! links between operations (`links`). `refctl openapi` prints it;
//! `docs/openapi.json` is its output, checked in, and served as is.

mod layout;
mod links;
mod schemas;

use serde_json::{json, Value};

/// The description of the whole API.
pub fn document() -> Value {
    api::http::router::describe_routes();
    let routes = crate::serve::routes().into_openapi();
    let described = api::http::openapi::describe(routes);
    let mut doc = serde_json::to_value(&described).unwrap_or_else(|_| json!({}));
    schemas::complete(&mut doc);
    layout::complete(&mut doc);
    links::complete(&mut doc);
    doc
}
