//! The conventions every schema of the API follows, applied to what the
//! types derive: answers carry every field (nullable ones as `null`), ids
//! and times are written one way, numbers are decimals (no binary format),
//! and the prose of doc comments is one line per paragraph.

use api::ids::IdKind;
use serde_json::{json, Map, Value};

use super::operations::unwrap_lines;

/// Applies the conventions to every schema.
pub fn complete(schemas: &mut Value) {
    let Some(map) = schemas.as_object_mut() else {
        return;
    };
    for (name, schema) in map.iter_mut() {
        tidy(schema);
        let is_body = schema["additionalProperties"] == json!(false);
        if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            for (prop, value) in props.iter_mut() {
                convention(name, prop, value);
            }
        }
        if is_body {
            body_strings(schema);
        } else if !KEYED_BY_ONE_OF.contains(&name.as_str()) {
            every_field_required(schema);
        }
    }
}

/// A record that carries another's fields (`#[serde(flatten)]`) is described
/// as the one object it is sent as, the parts' fields in order, when its
/// parts are named nowhere else (a part that is an answer of its own, as a
/// webhook endpoint is, stays a reference).
pub fn merge_flattened(schemas: &mut Value, paths: &Value) {
    let Some(map) = schemas.as_object() else {
        return;
    };
    let text = format!("{schemas}{paths}");
    let mut flattened: Vec<(String, Vec<String>)> = map
        .iter()
        .filter(|(_, schema)| schema.get("properties").is_none())
        .filter_map(|(name, schema)| Some((name.clone(), part_names(schema)?)))
        .collect();
    let named = |part: &String| {
        let reference = json!(format!("#/components/schemas/{part}")).to_string();
        let in_merges = flattened
            .iter()
            .flat_map(|(_, p)| p)
            .filter(|p| *p == part)
            .count();
        text.matches(&reference).count() > in_merges
    };
    let keep: Vec<bool> = flattened
        .iter()
        .map(|(_, parts)| !parts.iter().any(named))
        .collect();
    let mut keep = keep.into_iter();
    flattened.retain(|_| keep.next().unwrap_or(false));
    let all = map.clone();
    for (name, _) in &flattened {
        if let Some(one) = merged(&all[name], &all) {
            schemas[name] = one;
        }
    }
    // A part goes only once nothing names it: a record kept as `allOf`, or
    // one that could not be merged, still does.
    let text = format!("{schemas}{paths}");
    for part in flattened.iter().flat_map(|(_, parts)| parts) {
        let reference = json!(format!("#/components/schemas/{part}")).to_string();
        if !text.contains(&reference) {
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

/// Answers whose key is one field of several (a summary group is keyed by
/// `status` or by `campaignId`): they state their own required fields.
const KEYED_BY_ONE_OF: [&str; 1] = ["SummaryGroup"];

/// Request bodies: text in arrays refuses control characters like every
/// other string, and a text `from`/`to` takes a date or a date-time (a
/// number's, as a month range's, stays a number).
fn body_strings(schema: &mut Value) {
    let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for (name, prop) in props.iter_mut() {
        if prop["type"] == "array"
            && prop["items"]["type"] == "string"
            && prop["items"].get("pattern").is_none()
            && prop["items"].get("enum").is_none()
        {
            prop["items"]["pattern"] = json!(api::schema::LINE_PATTERN);
        }
        let text = prop["type"] == "string"
            || prop["type"]
                .as_array()
                .is_some_and(|t| t.contains(&json!("string")));
        if (name == "from" || name == "to") && text {
            let nullable = prop["type"]
                .as_array()
                .is_some_and(|t| t.contains(&json!("null")));
            let mut forms = vec![
                json!({"type": "string", "format": "date"}),
                json!({"type": "string", "format": "date-time"}),
            ];
            if nullable {
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

/// Answers (schemas that are not request bodies) always carry every field.
fn every_field_required(schema: &mut Value) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let all: Vec<Value> = props.keys().map(|k| json!(k)).collect();
    schema["required"] = Value::Array(all);
}

/// Ids, times and the `object` name of a resource's answer.
fn convention(schema: &str, prop: &str, value: &mut Value) {
    if prop == "object" {
        *value = json!({"type": "string", "const": snake(schema)});
    }
    if prop == "id" {
        if let Some(kind) = kind_of(schema) {
            let prefix = kind.prefix();
            if value.get("pattern").is_none() {
                value["pattern"] = json!(format!("^{prefix}_[0-9A-HJKMNP-TV-Z]{{26}}$"));
            }
        }
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

/// Recursively: prose as one line per paragraph, no binary number formats,
/// and a nullable reference's description beside the reference, not in it.
pub fn tidy(v: &mut Value) {
    match v {
        Value::Object(map) => {
            lift_description(map);
            if let Some(Value::String(d)) = map.get_mut("description") {
                *d = unwrap_lines(d);
            }
            let binary = matches!(
                map.get("format").and_then(Value::as_str),
                Some("int32" | "int64" | "double" | "float")
            );
            if binary {
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
    let nullable_ref = options.len() == 2 && options.iter().any(|o| o["type"] == "null");
    if !nullable_ref {
        return;
    }
    let lifted = options
        .iter_mut()
        .find_map(|o| o.as_object_mut().and_then(|o| o.remove("description")));
    if let Some(d) = lifted {
        map.insert("description".into(), d);
    }
}

/// The order keys are written in, so the description is the same on every
/// run (the derive keeps maps in hash order) and reads naturally.
const KEY_ORDER: [&str; 24] = [
    "$ref",
    "title",
    "type",
    "const",
    "enum",
    "format",
    "description",
    "required",
    "properties",
    "additionalProperties",
    "propertyNames",
    "maxProperties",
    "items",
    "minItems",
    "maxItems",
    "oneOf",
    "anyOf",
    "allOf",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "example",
];

/// Sorts the keys of every schema object by [`KEY_ORDER`] (others after,
/// alphabetically); property maps keep the order the types declare.
pub fn canonical(v: &mut Value, in_properties: bool) {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            if !in_properties {
                entries.sort_by_key(|a| rank(&a.0));
            }
            for (key, child) in entries.iter_mut() {
                if key != "example" && key != "examples" {
                    canonical(child, key == "properties" && !in_properties);
                }
            }
            *map = entries.into_iter().collect();
        }
        Value::Array(items) => items.iter_mut().for_each(|i| canonical(i, false)),
        _ => {}
    }
}

fn rank(key: &str) -> (usize, String) {
    let i = KEY_ORDER
        .iter()
        .position(|k| *k == key)
        .unwrap_or(KEY_ORDER.len());
    (i, key.to_string())
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
