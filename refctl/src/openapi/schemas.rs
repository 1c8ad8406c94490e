//! What utoipa cannot say of the schemas the types derive, as the API's
//! conventions: answers carry every field (nullable ones as `null`), ids
//! and `object` names are written one way, numbers are decimals (no binary
//! format), request text refuses control characters and a `from`/`to` takes
//! a date or a date-time, and a record carrying another's fields is one
//! object. The domain types could state most of these in their attributes.

use api::ids::IdKind;
use api::schema::LINE_PATTERN;
use serde_json::{json, Map, Value};

/// Applies the conventions to the schemas of the description `doc`.
pub fn complete(doc: &mut Value) {
    let Some(mut schemas) = doc.pointer_mut("/components/schemas").map(Value::take) else {
        return;
    };
    if let Some(period) = schemas.get_mut("SummaryPeriod") {
        // Its wire names are not identifiers: clients name the members after the code's.
        let names = api::domain::summary::Period::ALL.map(|p| format!("{p:?}").to_uppercase());
        period["x-enum-varnames"] = json!(names);
    }
    if let Some(create) = schemas.get_mut("CampaignCreate") {
        create["allOf"] = api::domain::campaign::combination_rules();
    }
    merge_flattened(&mut schemas, &doc["paths"]);
    for (name, schema) in schemas.as_object_mut().into_iter().flatten() {
        tidy(schema);
        record_fields(name, schema);
        if schema["additionalProperties"] == json!(false) {
            body_strings(schema);
        } else if name != "SummaryGroup" {
            // An answer carries every field; a summary group states its own,
            // keyed by `status` or by `campaignId`.
            let all = schema.get("properties").and_then(Value::as_object);
            if let Some(keys) = all.map(|p| p.keys().map(|k| json!(k)).collect()) {
                schema["required"] = Value::Array(keys);
            }
        }
    }
    doc["components"]["schemas"] = schemas;
}

/// A record that carries another's fields (`#[serde(flatten)]`) is described
/// as the one object it is sent as, the parts' fields in order, when its
/// parts are named nowhere else (a part that is an answer of its own, as a
/// webhook endpoint is, stays a reference).
fn merge_flattened(schemas: &mut Value, paths: &Value) {
    let all = schemas.as_object().cloned().unwrap_or_default();
    let flattened: Vec<(&String, Vec<String>)> = all
        .iter()
        .filter(|(_, schema)| schema.get("properties").is_none())
        .filter_map(|(name, schema)| Some((name, part_names(schema)?)))
        .collect();
    let refs = |text: &str, part: &str| {
        text.matches(&format!("\"#/components/schemas/{part}\""))
            .count()
    };
    let in_merges = |part: &str| {
        flattened
            .iter()
            .flat_map(|(_, p)| p)
            .filter(|p| *p == part)
            .count()
    };
    let text = format!("{schemas}{paths}");
    let mut parts = Vec::new();
    for (name, names) in &flattened {
        if names.iter().any(|part| refs(&text, part) > in_merges(part)) {
            continue;
        }
        if let Some(one) = merged(&all[*name], &all) {
            schemas[*name] = one;
        }
        parts.extend(names);
    }
    // A part goes only once nothing names it: a record kept as `allOf`, or
    // one that could not be merged, still does.
    let text = format!("{schemas}{paths}");
    for part in parts {
        if refs(&text, part) == 0 {
            schemas.as_object_mut().map(|m| m.shift_remove(part));
        }
    }
}

/// The schemas an `allOf` of object parts names, or `None` when it is
/// something else (a rule, a part without fields).
fn part_names(schema: &Value) -> Option<Vec<String>> {
    let mut names = Vec::new();
    for part in schema.get("allOf")?.as_array()? {
        match part.get("$ref").and_then(Value::as_str) {
            Some(reference) => names.push(reference.rsplit('/').next()?.to_string()),
            None => {
                part.get("properties")?;
            }
        }
    }
    (!names.is_empty()).then_some(names)
}

/// The one object of a schema made of object parts (`allOf`).
fn merged(schema: &Value, all: &Map<String, Value>) -> Option<Value> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for part in schema.get("allOf")?.as_array()? {
        let part = match part.get("$ref").and_then(Value::as_str) {
            Some(reference) => all.get(reference.rsplit('/').next()?)?,
            None => part,
        };
        properties.extend(part.get("properties")?.as_object()?.clone());
        required.extend(part["required"].as_array().cloned().unwrap_or_default());
    }
    let mut out = json!({"type": "object"});
    if let Some(description) = schema.get("description") {
        out["description"] = description.clone();
    }
    out["required"] = Value::Array(required);
    out["properties"] = Value::Object(properties);
    Some(out)
}

/// A resource's answer: its `object` is its name, its `id` has its prefix.
fn record_fields(name: &str, schema: &mut Value) {
    let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(object) = props.get_mut("object") {
        *object = json!({"type": "string", "const": snake(name)});
    }
    let id = props.get_mut("id").filter(|id| id.get("pattern").is_none());
    if let (Some(id), Some(kind)) = (id, kind_of(name)) {
        id["pattern"] = json!(format!("^{}_[0-9A-HJKMNP-TV-Z]{{26}}$", kind.prefix()));
    }
}

/// The id kind of a resource's answer, by its schema name.
fn kind_of(schema: &str) -> Option<IdKind> {
    Some(match schema {
        "Campaign" | "PublicCampaign" => IdKind::Campaign,
        "Affiliate" => IdKind::Affiliate,
        "Application" => IdKind::Application,
        "Asset" => IdKind::Asset,
        "Conversion" => IdKind::Conversion,
        "Payout" => IdKind::Payout,
        "Event" => IdKind::Event,
        "WebhookEndpoint" => IdKind::WebhookEndpoint,
        "WebhookDelivery" => IdKind::Delivery,
        "Integration" => IdKind::Integration,
        _ => return None,
    })
}

/// `WebhookEndpoint` is `webhook_endpoint`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// Request bodies: text in arrays refuses control characters like every
/// other string, and a text `from`/`to` takes a date or a date-time (a
/// number's, as a month range's, stays a number).
fn body_strings(schema: &mut Value) {
    let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for (name, prop) in props.iter_mut() {
        let array = prop["type"] == "array";
        let text_items = prop.get_mut("items").filter(|i| {
            array && i["type"] == "string" && i.get("pattern").is_none() && i.get("enum").is_none()
        });
        if let Some(items) = text_items {
            items["pattern"] = json!(LINE_PATTERN);
        }
        let types = match &prop["type"] {
            Value::Array(types) => types.clone(),
            one => vec![one.clone()],
        };
        if (name == "from" || name == "to") && types.contains(&json!("string")) {
            let mut forms = vec![
                json!({"type": "string", "format": "date"}),
                json!({"type": "string", "format": "date-time"}),
            ];
            if types.contains(&json!("null")) {
                forms.push(json!({"type": "null"}));
            }
            let description = prop.get("description").cloned();
            *prop = json!({"anyOf": forms});
            if let Some(d) = description {
                prop["description"] = d;
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_named_only_by_flattening_is_merged_and_one_named_elsewhere_stays() {
        let object = |field: &str| json!({"type": "object", "required": [field], "properties": {field: {"type": "string"}}});
        let mut schemas = json!({
            "Terms": object("id"),
            "Portal": {"description": "d", "allOf": [{"$ref": "#/components/schemas/Terms"}, object("days")]},
            "Endpoint": object("url"),
            "WithSecret": {"allOf": [{"$ref": "#/components/schemas/Endpoint"}, object("secret")]},
        });
        let paths = json!({"/e": {"get": {"$ref": "#/components/schemas/Endpoint"}}});
        merge_flattened(&mut schemas, &paths);
        assert_eq!(
            schemas["Portal"],
            json!({"type": "object", "description": "d", "required": ["id", "days"],
                "properties": {"id": {"type": "string"}, "days": {"type": "string"}}})
        );
        assert!(schemas.get("Terms").is_none());
        assert!(schemas["WithSecret"].get("allOf").is_some());
        assert!(schemas.get("Endpoint").is_some());
    }

    #[test]
    fn a_part_a_kept_record_still_names_stays() {
        let object = |field: &str| json!({"type": "object", "required": [field], "properties": {field: {"type": "string"}}});
        let refer = |name: &str| json!({"$ref": format!("#/components/schemas/{name}")});
        let mut schemas = json!({
            "Shared": object("id"),
            "Endpoint": object("url"),
            "Merged": {"allOf": [refer("Shared"), object("days")]},
            "Kept": {"allOf": [refer("Shared"), refer("Endpoint")]},
        });
        let paths = json!({"/e": {"get": refer("Endpoint")}});
        merge_flattened(&mut schemas, &paths);
        assert!(schemas["Merged"].get("allOf").is_none());
        assert!(schemas["Kept"].get("allOf").is_some());
        assert!(schemas.get("Shared").is_some(), "Kept still names it");
    }
}
