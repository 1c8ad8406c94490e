//! What utoipa cannot say of the schemas the types derive: numbers are
//! decimals (the derive gives every Rust number a binary `format`), a
//! nullable reference's description sits beside it (the derive puts it in
//! the reference), the summary period's member names (the derive states no
//! extension on an enum), and the new campaign's combination rules
//! (`if`/`then`, which its model lacks).

use serde_json::{json, Map, Value};

/// Completes the schemas of the description `doc`.
pub fn complete(doc: &mut Value) {
    let schemas = &mut doc["components"]["schemas"];
    tidy(schemas);
    if let Some(period) = schemas.get_mut("SummaryPeriod") {
        // Its wire names are not identifiers: clients name the members after the code's.
        let names = api::domain::summary::Period::ALL.map(|p| format!("{p:?}").to_uppercase());
        period["x-enum-varnames"] = json!(names);
    }
    if let Some(create) = schemas.get_mut("CampaignCreate") {
        create["allOf"] = api::domain::campaign::combination_rules();
    }
}

/// Recursively: no binary number formats, and a nullable reference's
/// description beside the reference, not in it.
fn tidy(v: &mut Value) {
    match v {
        Value::Object(map) => {
            lift_description(map);
            let format = map.get("format").and_then(Value::as_str);
            if matches!(format, Some("int32" | "int64" | "double" | "float")) {
                map.remove("format");
            }
            for (key, child) in map.iter_mut() {
                if key != "example" && key != "examples" && key != "default" {
                    tidy(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

fn lift_description(map: &mut Map<String, Value>) {
    if map.contains_key("description") {
        return;
    }
    let Some(Value::Array(options)) = map.get_mut("oneOf") else {
        return;
    };
    if options.len() != 2 || !options.iter().any(|o| o["type"] == "null") {
        return;
    }
    let lifted = options
        .iter_mut()
        .find_map(|o| o.as_object_mut()?.remove("description"));
    if let Some(d) = lifted {
        map.insert("description".into(), d);
    }
}
