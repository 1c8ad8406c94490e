//! Completes each operation the handlers state with what the rules of the
//! API give every operation of its kind: the envelope around its data, the
//! standard headers, the error answers of its access and shape, the `{id}`
//! parameter, and links from an answer carrying an id to every operation
//! that takes that id.

use serde_json::{json, Map, Value};

use super::components::ID_PARAMETERS;

/// The methods an operation can have, as the description spells them.
const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// Error answers named by their components response.
const NAMED_ERRORS: [&str; 11] = [
    "ValidationFailed",
    "InvalidRequest",
    "BadRequest",
    "Unauthorized",
    "PermissionDenied",
    "NotFound",
    "MethodNotAllowed",
    "Conflict",
    "TooManyRequests",
    "ServerError",
    "ServiceUnavailable",
];

/// Completes every operation of `paths`, adding envelope schemas to `schemas`.
pub fn complete(paths: &mut Value, schemas: &mut Value) {
    let Some(paths) = paths.as_object_mut() else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let id_param = id_parameter(path);
        if let Some(name) = id_param {
            item["parameters"] = json!([{"$ref": format!("#/components/parameters/{name}")}]);
        }
        for method in METHODS {
            if let Some(op) = item.get_mut(method) {
                complete_operation(op, id_param.is_some(), schemas);
                if method == "post" {
                    idempotent(op);
                }
            }
        }
    }
}

/// A merchant's POST (one taking the API key) takes `Idempotency-Key`,
/// and its successes may say `Idempotent-Replayed`.
fn idempotent(op: &mut Value) {
    let merchant = op
        .get("security")
        .and_then(Value::as_array)
        .is_none_or(|a| a.iter().any(|r| r.get("apiKey").is_some()));
    if !merchant {
        return;
    }
    let key = json!({"$ref": "#/components/parameters/IdempotencyKey"});
    match op.get_mut("parameters").and_then(Value::as_array_mut) {
        Some(params) => params.push(key),
        None => op["parameters"] = json!([key]),
    }
    let Some(responses) = op["responses"].as_object_mut() else {
        return;
    };
    responses
        .entry("409")
        .or_insert_with(|| json!({"$ref": "#/components/responses/Conflict"}));
    responses
        .entry("400")
        .or_insert_with(|| json!({"$ref": "#/components/responses/InvalidRequest"}));
    for (status, response) in responses.iter_mut() {
        if status.starts_with('2') {
            response["headers"]["Idempotent-Replayed"] =
                json!({"$ref": "#/components/headers/IdempotentReplayed"});
        }
    }
    let mut sorted: Vec<(String, Value)> = std::mem::take(responses).into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    op["responses"] = Value::Object(sorted.into_iter().collect());
}

/// The `{id}` parameter of a path, named after the resource the path starts
/// with (after `portal/` for the affiliate portal's own routes).
fn id_parameter(path: &str) -> Option<&'static str> {
    if !path.contains("{id}") {
        return None;
    }
    let rest = path.trim_start_matches("/api/v1/");
    let rest = rest.strip_prefix("portal/").unwrap_or(rest);
    let resource = rest.split('/').next()?;
    let noun = match resource {
        "campaigns" => "CampaignId",
        "affiliates" => "AffiliateId",
        "applications" => "ApplicationId",
        "assets" => "AssetId",
        "conversions" => "ConversionId",
        "payouts" => "PayoutId",
        "events" => "EventId",
        "webhook-endpoints" => "WebhookEndpointId",
        "integrations" => "IntegrationId",
        _ => return None,
    };
    ID_PARAMETERS.iter().find(|p| p.0 == noun).map(|p| p.0)
}

fn complete_operation(op: &mut Value, has_id: bool, schemas: &mut Value) {
    if let Some(d) = op["description"].as_str() {
        op["description"] = json!(unwrap_lines(d));
    }
    let public = op.get("security").is_some_and(|s| {
        s.as_array()
            .is_some_and(|a| a.iter().all(|r| r.as_object().is_some_and(Map::is_empty)))
    });
    if public {
        op["security"] = json!([]);
    }
    // A portal token of a locked account is 401 like any that stopped working.
    let portal = op.get("security").is_some_and(|s| {
        s.as_array()
            .is_some_and(|a| a.iter().all(|r| r.get("portalToken").is_some()))
    });
    let document = op["operationId"] == "getOpenApi";
    let has_query = op
        .get("parameters")
        .and_then(Value::as_array)
        .is_some_and(|ps| ps.iter().any(|p| p["in"] == "query"));
    optional_body(op);
    if let Some(params) = op.get_mut("parameters").and_then(Value::as_array_mut) {
        params.iter_mut().for_each(query_parameter);
    }
    let has_body = op.get("requestBody").is_some();
    let responses = op["responses"]
        .as_object_mut()
        .map(std::mem::take)
        .unwrap_or_default();
    let mut out = Map::new();
    for (status, mut response) in responses {
        if status.starts_with('2') {
            if !document {
                envelope(&mut response, schemas);
                standard_headers(&mut response, public);
            }
            out.insert(status, response);
        } else {
            out.insert(status, named_error(response));
        }
    }
    let mut add = |status: &str, name: &str| {
        out.entry(status.to_string())
            .or_insert_with(|| json!({"$ref": format!("#/components/responses/{name}")}));
    };
    if has_body {
        add("400", "BadRequest");
    } else if has_query {
        add("400", "ValidationFailed");
    }
    if !public {
        add("401", "Unauthorized");
    }
    if !public && !portal {
        add("403", "PermissionDenied");
    }
    if has_id || public && !document {
        add("404", "NotFound");
    }
    if !document {
        add("429", "TooManyRequests");
        add("503", "ServiceUnavailable");
    }
    add("500", "ServerError");
    let mut sorted: Vec<(String, Value)> = out.into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    op["responses"] = Value::Object(sorted.into_iter().collect());
    super::answers::special(op);
}

/// An error answer stated by its component's name (`description =
/// "Conflict"`) becomes a reference to it.
fn named_error(response: Value) -> Value {
    match response["description"].as_str() {
        Some(name) if NAMED_ERRORS.contains(&name) && response.get("content").is_none() => {
            json!({"$ref": format!("#/components/responses/{name}")})
        }
        _ => response,
    }
}

/// The data schema of a success answer wrapped in the success envelope:
/// `X` becomes `XResponse`, a list of `X` becomes `XListResponse`.
fn envelope(response: &mut Value, schemas: &mut Value) {
    let Some(schema) = response.pointer_mut("/content/application~1json/schema") else {
        return;
    };
    let (data, name, meta) = match (schema.get("$ref"), schema.get("items")) {
        (Some(r), _) => {
            let base = ref_name(r);
            let base = base.strip_suffix("Result").unwrap_or(&base).to_string();
            (schema.clone(), format!("{base}Response"), "Meta")
        }
        (None, Some(items)) if items.get("$ref").is_some() => {
            let base = ref_name(&items["$ref"]);
            (schema.clone(), format!("{base}ListResponse"), "ListMeta")
        }
        _ => return,
    };
    if let Some(map) = schemas.as_object_mut() {
        map.entry(name.clone()).or_insert_with(|| {
            json!({
                "type": "object",
                "required": ["success", "data", "meta"],
                "properties": {
                    "success": {"type": "boolean", "const": true},
                    "data": data,
                    "meta": {"$ref": format!("#/components/schemas/{meta}")},
                },
            })
        });
    }
    *schema = json!({"$ref": format!("#/components/schemas/{name}")});
}

fn ref_name(r: &Value) -> String {
    r.as_str()
        .and_then(|s| s.rsplit('/').next())
        .unwrap_or_default()
        .to_string()
}

/// `X-Request-Id` and the rate-limit headers on every success answer, and
/// CORS on the public ones; the headers the statement names stay after them.
fn standard_headers(response: &mut Value, public: bool) {
    let stated = response["headers"].as_object().cloned().unwrap_or_default();
    let mut headers = Map::new();
    let mut refer = |name: &str, component: &str| {
        headers.insert(
            name.to_string(),
            json!({"$ref": format!("#/components/headers/{component}")}),
        );
    };
    refer("X-Request-Id", "XRequestId");
    refer("RateLimit-Limit", "RateLimitLimit");
    refer("RateLimit-Remaining", "RateLimitRemaining");
    refer("RateLimit-Reset", "RateLimitReset");
    if public {
        refer("Access-Control-Allow-Origin", "AccessControlAllowOrigin");
    }
    headers.extend(stated);
    response["headers"] = Value::Object(headers);
}

/// A doc comment's text as one line per paragraph: the line breaks of the
/// source are not the text's (list items and table rows keep theirs).
pub fn unwrap_lines(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let keeps_break = line.is_empty()
            || line.starts_with("- ")
            || line.starts_with('|')
            || out.ends_with('\n')
            || out.is_empty();
        if !keeps_break {
            out.push(' ');
        } else if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        if line.is_empty() {
            out.push('\n');
        }
        out.push_str(line);
    }
    out
}

/// A body whose every field is optional is stated as `Option<T>`: the body
/// is then not required, and its schema is `T`.
fn optional_body(op: &mut Value) {
    let Some(body) = op.get_mut("requestBody") else {
        return;
    };
    let Some(schema) = body.pointer_mut("/content/application~1json/schema") else {
        return;
    };
    let inner = schema["oneOf"]
        .as_array()
        .and_then(|o| o.iter().find(|s| s.get("$ref").is_some()))
        .cloned();
    if let Some(inner) = inner {
        *schema = inner;
        body["required"] = json!(false);
    }
}

/// The paging parameters are shared components; `from` and `to` take a date
/// or a date-time; any other text parameter refuses control characters.
fn query_parameter(p: &mut Value) {
    if p["in"] != "query" {
        return;
    }
    let name = p["name"].as_str().unwrap_or_default().to_string();
    let shared = match name.as_str() {
        "limit" => Some("Limit"),
        "offset" => Some("Offset"),
        "cursor" => Some("Cursor"),
        _ => None,
    };
    if let Some(component) = shared {
        *p = json!({"$ref": format!("#/components/parameters/{component}")});
        return;
    }
    if let Some(d) = p["description"].as_str() {
        p["description"] = json!(unwrap_lines(d));
    }
    super::answers::query_rules(&name, p);
    if name == "from" || name == "to" {
        p["schema"] = json!({"anyOf": [
            {"type": "string", "format": "date"},
            {"type": "string", "format": "date-time"},
        ]});
        return;
    }
    let schema = &mut p["schema"];
    if let Some(Value::Array(options)) = schema.get("oneOf").cloned() {
        // an optional enum parameter: the enum itself
        if let Some(r) = options.iter().find(|o| o.get("$ref").is_some()) {
            *schema = r.clone();
        }
    }
    if schema["type"] == json!(["string", "null"]) {
        *schema = json!({"type": "string"});
    }
    if schema["type"] == "string" && schema.get("pattern").is_none() {
        schema["pattern"] = json!(api::schema::LINE_PATTERN);
    }
    if matches!(schema["type"].as_array().map(Vec::len), Some(2)) {
        schema["type"] = schema["type"][0].clone();
    }
}
