//! The OpenAPI 3.1 description: what utoipa states (`api::http::openapi`:
//! the handlers' statements, the types' schemas, the shared components and
//! the rules of the API's layers), completed here with what it cannot say:
//! the schema conventions the domain types do not state yet, prose as one
//! line per paragraph, a stable key order, and the links between
//! operations. `refctl openapi` prints it; `docs/openapi.json` is its
//! output, checked in, and served as is.

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
