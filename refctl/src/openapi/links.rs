//! Links, derived across operations (utoipa states each operation alone):
//! an answer that carries a record (or a page of them) links to every
//! operation that takes one of its values, whether in the path (`{id}` of
//! the same resource), in the query (`campaign_id`) or in the body
//! (`campaignId`, `payoutIds`), so clients and the stateful fuzzer can walk
//! create -> act -> read for every resource.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

/// The records whose ids answers carry (`campaignId` names a campaign; a
/// click's session is `sessionId`).
const RECORDS: &str = "campaign affiliate application asset conversion payout event endpoint \
    integration click session";

/// Reports, imports and files: they read or bring in records in bulk (or
/// serve a file) and give nothing to act on next, so they are neither linked
/// to nor from; walks (a client's, the stateful fuzzer's) stay on the
/// records' lifecycles.
const LEAVES: &str = "listReferrals exportConversions getPaymentsReport importAffiliates \
    importReferrals getAffiliateTaxForm uploadPortalTaxForm";

/// Body fields that take another field's value under another name.
const ALIASES: [(&str, &str); 2] = [("code", "affiliateCode"), ("code", "ref")];

/// What an operation takes: the resource of its `{id}` (as the path's
/// first segment names it), its query parameters, and its body's fields
/// (whether each is an array).
struct Taker {
    operation_id: String,
    path_resource: Option<String>,
    query: Vec<String>,
    body: Vec<(String, bool)>,
}

/// What one answer hands to one operation.
#[derive(Default)]
struct Handed {
    path: Option<String>,
    query: Vec<(String, String)>,
    body: Map<String, Value>,
}

/// Adds the links to every success answer of the description `doc`.
pub fn complete(doc: &mut Value) {
    let mut paths = doc["paths"].take();
    let schemas = &doc["components"]["schemas"];
    let takers = takers(&paths, schemas);
    for (path, item) in paths.as_object_mut().into_iter().flatten() {
        for (method, op) in item.as_object_mut().into_iter().flatten() {
            let own = op["operationId"].as_str().unwrap_or_default().to_string();
            let responses = op.get_mut("responses").and_then(Value::as_object_mut);
            if method == "parameters" || is_leaf(&own) {
                continue;
            }
            for (status, response) in responses.into_iter().flatten() {
                let data = data_fields(response, schemas).filter(|_| status.starts_with('2'));
                let Some((fields, base)) = data else {
                    continue;
                };
                let links = links_for(&fields, base, &resource_of(path), &own, &takers);
                if !links.is_empty() {
                    response["links"] = Value::Object(links);
                }
            }
        }
    }
    doc["paths"] = paths;
}

fn is_leaf(operation_id: &str) -> bool {
    LEAVES.split_whitespace().any(|leaf| leaf == operation_id)
}

/// `/api/v1/campaigns/{id}` names `campaigns`.
fn resource_of(path: &str) -> String {
    let rest = path.trim_start_matches("/api/v1/");
    rest.split('/').next().unwrap_or_default().to_string()
}

/// `campaigns` is the resource of `campaignId`, `campaign_id` and `campaignIds`.
fn singular(resource: &str) -> String {
    match resource.strip_suffix('s').unwrap_or(resource) {
        "webhook-endpoint" => "endpoint".into(),
        other => other.to_string(),
    }
}

fn takers(paths: &Value, schemas: &Value) -> Vec<Taker> {
    let mut out = Vec::new();
    for (path, item) in paths.as_object().into_iter().flatten() {
        for (method, op) in item.as_object().into_iter().flatten() {
            let id = op["operationId"].as_str().unwrap_or_default();
            if method == "parameters" || is_leaf(id) {
                continue;
            }
            let params = op["parameters"].as_array().into_iter().flatten();
            let query = params
                .filter(|p| p["in"] == "query")
                .filter_map(|p| p["name"].as_str().map(str::to_string))
                .collect();
            let body = op.pointer("/requestBody/content/application~1json/schema/$ref");
            out.push(Taker {
                operation_id: id.to_string(),
                path_resource: path.contains("{id}").then(|| resource_of(path)),
                query,
                body: body
                    .and_then(Value::as_str)
                    .map(|r| body_fields(r, schemas))
                    .unwrap_or_default(),
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
    for form in schema["oneOf"].as_array().into_iter().flatten() {
        for field in form["$ref"]
            .as_str()
            .map(|r| body_fields(r, schemas))
            .unwrap_or_default()
        {
            if !out.contains(&field) {
                out.push(field);
            }
        }
    }
    for (k, v) in schema["properties"].as_object().into_iter().flatten() {
        out.push((k.clone(), v["type"] == "array"));
    }
    out
}

/// The fields of the record an answer carries, and where it sits in the body.
fn data_fields(response: &Value, schemas: &Value) -> Option<(Vec<String>, &'static str)> {
    let envelope = response
        .pointer("/content/application~1json/schema/$ref")?
        .as_str()?;
    let data = &schemas.get(envelope.rsplit('/').next()?)?["properties"]["data"];
    let (reference, base) = match data.get("items") {
        Some(items) => (items.get("$ref")?, "$response.body#/data/0"),
        None => (data.get("$ref")?, "$response.body#/data"),
    };
    let record = schemas.get(reference.as_str()?.rsplit('/').next()?)?;
    Some((
        record["properties"].as_object()?.keys().cloned().collect(),
        base,
    ))
}

fn links_for(
    fields: &[String],
    base: &str,
    resource: &str,
    own: &str,
    takers: &[Taker],
) -> Map<String, Value> {
    let mut found: BTreeMap<&str, Handed> = BTreeMap::new();
    for field in fields {
        let value = format!("{base}/{field}");
        // The id of the record itself, or of another record it names.
        let named = match field.strip_suffix("Id") {
            _ if field == "id" => Some(singular(resource)),
            Some(r) if RECORDS.split_whitespace().any(|record| record == r) => Some(r.to_string()),
            _ => None,
        };
        for t in takers {
            let handed = found.entry(&t.operation_id).or_default();
            match &named {
                Some(r) => hand(r, &value, own, t, handed),
                None => {
                    for (prop, _) in &t.body {
                        if ALIASES.contains(&(field.as_str(), prop.as_str())) {
                            handed.body.insert(prop.clone(), json!(value));
                        }
                    }
                }
            }
        }
    }
    assemble(found)
}

/// What the id of record `r` (at `value`) hands to operation `t`.
fn hand(r: &str, value: &str, own: &str, t: &Taker, handed: &mut Handed) {
    if t.path_resource.as_deref().map(singular).as_deref() == Some(r) {
        handed.path = Some(value.to_string());
    }
    let query = format!("{}_id", r.replace('-', "_"));
    if t.query.contains(&query) && t.operation_id != own {
        handed.query.push((query, value.to_string()));
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

/// The links to each operation: one by path id, one per query parameter,
/// one with every body field (named `<Operation>By<Way>` when several).
fn assemble(found: BTreeMap<&str, Handed>) -> Map<String, Value> {
    let mut links = Map::new();
    for (operation_id, handed) in found {
        let name = pascal(operation_id);
        let ways = usize::from(handed.path.is_some())
            + handed.query.len()
            + usize::from(!handed.body.is_empty());
        let label = |way: &str| match ways {
            1 => name.clone(),
            _ => format!("{name}By{}", pascal(way)),
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
