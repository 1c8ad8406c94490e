//! The OpenAPI 3.1 description, generated: the operations from the
//! handlers' statements (`#[utoipa::path]`, registered by each function's
//! `routes()`), the schemas from the Rust types (`ToSchema`), and what every
//! operation shares (envelopes, error answers, headers, the id and paging
//! parameters) from the rules in this module. `refctl openapi` prints it;
//! `docs/openapi.json` is its output, checked in, and served as is.

mod answers;
mod components;
mod links;
mod operations;
mod schemas;

use serde_json::{json, Value};

/// The description of the whole API.
pub fn document() -> Value {
    api::http::router::describe_routes();
    let api = crate::serve::routes().into_openapi();
    let mut doc = serde_json::to_value(&api).unwrap_or_else(|_| json!({}));
    let generated = doc.as_object_mut().map(std::mem::take).unwrap_or_default();
    let mut out = serde_json::Map::new();
    out.insert("openapi".into(), json!("3.1.0"));
    out.insert("info".into(), info());
    out.insert(
        "servers".into(),
        json!([{"url": "http://127.0.0.1:3000", "description": "Local host (`refctl serve`)"}]),
    );
    out.insert("security".into(), json!([{"apiKey": []}]));
    out.insert("tags".into(), components::tags());
    let mut paths = generated.get("paths").cloned().unwrap_or_else(|| json!({}));
    let mut schemas = generated
        .get("components")
        .and_then(|c| c.get("schemas"))
        .cloned()
        .unwrap_or_else(|| json!({}));
    components::add_derived(&mut schemas);
    if let Some(period) = schemas.get_mut("SummaryPeriod") {
        // Its wire names are not identifiers: clients name the members after the code's.
        let names: Vec<String> = api::domain::summary::Period::ALL
            .iter()
            .map(|p| format!("{p:?}").to_uppercase())
            .collect();
        period["x-enum-varnames"] = json!(names);
    }
    if let Some(create) = schemas.get_mut("CampaignCreate") {
        create["allOf"] = api::domain::campaign::combination_rules();
    }
    schemas::merge_flattened(&mut schemas, &paths);
    operations::complete(&mut paths, &mut schemas);
    schemas::complete(&mut schemas);
    schemas::canonical(&mut schemas, false);
    links::complete(&mut paths, &schemas);
    out.insert("paths".into(), paths);
    out.insert("components".into(), components::components(schemas));
    out.insert("webhooks".into(), components::webhooks());
    Value::Object(out)
}

fn info() -> Value {
    json!({
        "title": "Affiliate Programme API",
        "version": "1.0.0",
        "description": include_str!("intro.md").trim_end(),
    })
}
