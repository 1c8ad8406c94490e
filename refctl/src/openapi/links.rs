//! Links, derived: an answer that carries a record (or a page of them)
//! links to every operation that takes one of its values, whether in the
//! path (`{id}` of the same resource), in the query (`campaign_id`) or in the
//! body (`campaignId`, `payoutIds`), so clients and the stateful fuzzer can
//! walk create -> act -> read for every resource.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

/// What an operation takes, found once over the whole description.
struct Taker {
    operation_id: String,
    /// The resource of its `{id}`, as the first path segment names it.
    path_resource: Option<String>,
    query: Vec<String>,
    body: Vec<(String, bool)>,
}

/// The records whose ids answers carry (`campaignId` names a campaign;
/// a click's session is `sessionId`).
const RECORDS: [&str; 11] = [
    "campaign",
    "affiliate",
    "application",
    "asset",
    "conversion",
    "payout",
    "event",
    "endpoint",
    "integration",
    "click",
    "session",
];

/// Reports, imports and files: they read or bring in records in bulk (or
/// serve a file) and give nothing to act on next, so they are neither linked
/// to nor from; walks (a client's, the stateful fuzzer's) stay on the
/// records' lifecycles.
const LEAVES: [&str; 7] = [
    "listReferrals",
    "exportConversions",
    "getPaymentsReport",
    "importAffiliates",
    "importReferrals",
    "getAffiliateTaxForm",
    "uploadPortalTaxForm",
];

/// Body fields that take another field's value under another name.
const ALIASES: [(&str, &str); 2] = [("code", "affiliateCode"), ("code", "ref")];

/// Adds the links to every success answer of `paths`.
pub fn complete(paths: &mut Value, schemas: &Value) {
    let takers = takers(paths, schemas);
    let Some(map) = paths.as_object_mut() else {
        return;
    };
    for (path, item) in map.iter_mut() {
        let resource = resource_of(path);
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for (method, op) in item.iter_mut() {
            if method == "parameters" {
                continue;
            }
            let own = op["operationId"].as_str().unwrap_or_default().to_string();
            if LEAVES.contains(&own.as_str()) {
                continue;
            }
            let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else {
                continue;
            };
            for (status, response) in responses.iter_mut() {
                if !status.starts_with('2') {
                    continue;
                }
                let Some((fields, base)) = data_fields(response, schemas) else {
                    continue;
                };
                let links = links_for(&fields, &base, &resource, &own, &takers);
                if !links.is_empty() {
                    response["links"] = Value::Object(links);
                }
            }
        }
    }
}

/// `/api/v1/campaigns/{id}` names `campaigns`.
fn resource_of(path: &str) -> String {
    path.trim_start_matches("/api/v1/")
        .split('/')
        .next()
        .unwrap_or_default()
        .to_string()
}

/// `campaigns` is the resource of `campaignId`, `campaign_id` and `campaignIds`.
fn singular(resource: &str) -> String {
    let one = resource.strip_suffix('s').unwrap_or(resource);
    match one {
        "webhook-endpoint" => "endpoint".into(),
        other => other.to_string(),
    }
}

fn takers(paths: &Value, schemas: &Value) -> Vec<Taker> {
    let mut out = Vec::new();
    for (path, item) in paths.as_object().into_iter().flatten() {
        for (method, op) in item.as_object().into_iter().flatten() {
            let id = op["operationId"].as_str().unwrap_or_default();
            if method == "parameters" || LEAVES.contains(&id) {
                continue;
            }
            let query = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["in"] == "query")
                .filter_map(|p| p["name"].as_str().map(str::to_string))
                .collect();
            let body = op
                .pointer("/requestBody/content/application~1json/schema/$ref")
                .and_then(Value::as_str)
                .map(|r| body_fields(r, schemas))
                .unwrap_or_default();
            out.push(Taker {
                operation_id: id.to_string(),
                path_resource: path.contains("{id}").then(|| resource_of(path)),
                query,
                body,
            });
        }
    }
    out
}

/// The fields a body schema takes (of every form, for a `oneOf`), and
/// whether each is an array.
fn body_fields(reference: &str, schemas: &Value) -> Vec<(String, bool)> {
    let Some(schema) = reference.rsplit('/').next().and_then(|n| schemas.get(n)) else {
        return Vec::new();
    };
    let mut out: Vec<(String, bool)> = Vec::new();
    if let Some(forms) = schema["oneOf"].as_array() {
        for form in forms {
            for f in form["$ref"]
                .as_str()
                .map(|r| body_fields(r, schemas))
                .unwrap_or_default()
            {
                if !out.contains(&f) {
                    out.push(f);
                }
            }
        }
    }
    for (k, v) in schema["properties"].as_object().into_iter().flatten() {
        out.push((k.clone(), v["type"] == "array"));
    }
    out
}

/// The fields of the record an answer carries, and where it sits in the body.
fn data_fields(response: &Value, schemas: &Value) -> Option<(Vec<String>, String)> {
    let envelope = response
        .pointer("/content/application~1json/schema/$ref")?
        .as_str()?
        .rsplit('/')
        .next()?;
    let data = &schemas.get(envelope)?["properties"]["data"];
    let (reference, base) = match data.get("items") {
        Some(items) => (items.get("$ref")?, "$response.body#/data/0"),
        None => (data.get("$ref")?, "$response.body#/data"),
    };
    let record = schemas.get(reference.as_str()?.rsplit('/').next()?)?;
    let fields = record["properties"].as_object()?.keys().cloned().collect();
    Some((fields, base.to_string()))
}

/// What one answer hands to one operation.
#[derive(Default)]
struct Handed {
    path: Option<String>,
    query: Vec<(String, String)>,
    body: Map<String, Value>,
}

fn links_for(
    fields: &[String],
    base: &str,
    resource: &str,
    own: &str,
    takers: &[Taker],
) -> Map<String, Value> {
    let mut found: BTreeMap<String, Handed> = BTreeMap::new();
    for field in fields {
        hand(field, base, resource, own, takers, &mut found);
    }
    assemble(found)
}

/// What one field of the answer hands to each operation.
fn hand(
    field: &str,
    base: &str,
    resource: &str,
    own: &str,
    takers: &[Taker],
    found: &mut BTreeMap<String, Handed>,
) {
    let value = format!("{base}/{field}");
    // The id of the record itself, or of another record it names.
    let named = if field == "id" {
        Some(singular(resource))
    } else {
        field
            .strip_suffix("Id")
            .filter(|r| RECORDS.contains(r))
            .map(str::to_string)
    };
    let aliases: Vec<&str> = ALIASES
        .iter()
        .filter(|(f, _)| *f == field)
        .map(|(_, to)| *to)
        .collect();
    for t in takers {
        let handed = found.entry(t.operation_id.clone()).or_default();
        let Some(r) = &named else {
            for (prop, _) in t.body.iter().filter(|(p, _)| aliases.contains(&p.as_str())) {
                handed.body.insert(prop.clone(), json!(value));
            }
            continue;
        };
        if t.path_resource.as_deref().map(singular).as_deref() == Some(r.as_str()) {
            handed.path = Some(value.clone());
        }
        let query = format!("{}_id", r.replace('-', "_"));
        if t.query.contains(&query) && t.operation_id != own {
            handed.query.push((query, value.clone()));
        }
        for (prop, is_array) in &t.body {
            if *prop == format!("{r}Id") || (*prop == format!("{r}Ids") && *is_array) {
                let v = if *is_array {
                    json!([value])
                } else {
                    json!(value)
                };
                handed.body.insert(prop.clone(), v);
            }
        }
    }
}

/// The links to each operation: one by path id, one per query parameter,
/// one with every body field (named `<Operation>By<Way>` when several).
fn assemble(found: BTreeMap<String, Handed>) -> Map<String, Value> {
    let mut links = Map::new();
    for (operation_id, handed) in found {
        let name = pascal(&operation_id);
        let ways = usize::from(handed.path.is_some())
            + handed.query.len()
            + usize::from(!handed.body.is_empty());
        let label = |l: &str| {
            if ways > 1 {
                format!("{name}By{}", pascal(l))
            } else {
                name.clone()
            }
        };
        if let Some(v) = handed.path {
            let link = json!({"operationId": operation_id, "parameters": {"path.id": v}});
            links.insert(label("id"), link);
        }
        for (q, v) in handed.query {
            let link =
                json!({"operationId": operation_id, "parameters": {format!("query.{q}"): v}});
            links.insert(label(&q), link);
        }
        if !handed.body.is_empty() {
            let link = json!({"operationId": operation_id, "requestBody": handed.body});
            links.insert(label("body"), link);
        }
    }
    links
}

/// `getCampaign` is `GetCampaign`, `campaign_id` is `CampaignId`.
fn pascal(s: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in s.chars() {
        if c == '_' || c == '-' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}
