//! Cross-cutting contract: routing errors, request ids, the OpenAPI
//! description and the SAM template agree with the routes the functions
//! state.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::support::{call, merchant, raw, server};

#[tokio::test]
async fn unknown_routes_404_and_wrong_methods_405_with_allow() {
    let m = merchant().await;
    call("GET", "/api/v1/nothing-here", Some(&m.test_key), None)
        .await
        .assert_error(404, "NOT_FOUND");
    let r = call("DELETE", "/api/v1/campaigns", Some(&m.test_key), None).await;
    r.assert_error(405, "INVALID_REQUEST");
    assert_eq!(r.header("allow"), Some("GET, POST"));
}

#[tokio::test]
async fn request_ids_are_echoed_or_generated() {
    let base = &server().base;
    let r = raw(
        base,
        "GET",
        "/api/v1/openapi.json",
        None,
        &[("x-request-id", "trace-123.abc")],
        None,
    )
    .await;
    assert_eq!(r.header("x-request-id"), Some("trace-123.abc"));
    let r = raw(
        base,
        "GET",
        "/api/v1/nope",
        None,
        &[("x-request-id", "bad id with spaces")],
        None,
    )
    .await;
    let id = r.header("x-request-id").unwrap();
    assert!(id.starts_with("req_"), "{id}");
    assert_eq!(r.body["meta"]["requestId"], id);
}

#[test]
fn the_checked_in_description_is_the_generated_one() {
    let generated = refctl::openapi::document();
    assert!(
        generated == openapi(),
        "docs/openapi.json is stale: run `make openapi` (refctl openapi > docs/openapi.json)"
    );
    // The routes and the schemas both come from the code.
    assert!(generated["paths"].as_object().unwrap().len() >= 39);
    let schemas = &generated["components"]["schemas"];
    let name = rule_of(schemas, &schemas["CampaignCreate"]["properties"]["name"]);
    assert!(name["maxLength"].is_number(), "{name}");
}

/// A property's rule: the field rule's schema it refers to (also as the
/// non-null option of a nullable one), or the property itself.
pub fn rule_of<'a>(schemas: &'a Value, property: &'a Value) -> &'a Value {
    let named = property.get("$ref").or_else(|| {
        property["oneOf"]
            .as_array()?
            .iter()
            .find_map(|option| option.get("$ref"))
    });
    match named
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/components/schemas/"))
    {
        Some(name) => &schemas[name],
        None => property,
    }
}

/// A limit is written once, as a field rule's type or on the create body's
/// field (`wire` judges it by what it reads there, `domain::limits!`); a PATCH body
/// names the same rule or restates the limit for the description, so it
/// must state the very same limits.
#[test]
fn update_bodies_state_the_limits_of_their_create_bodies() {
    const LIMITS: [&str; 8] = [
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    ];
    let doc = refctl::openapi::document();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let mut pairs: Vec<(String, String)> = schemas
        .keys()
        .filter_map(|n| Some((format!("{}Create", n.strip_suffix("Update")?), n.clone())))
        .filter(|(create, _)| schemas.contains_key(create))
        .collect();
    pairs.push(("SwipeCopyCreate".into(), "AssetUpdate".into()));
    assert!(pairs.len() >= 4, "{pairs:?}");
    let mut compared = 0;
    let mut differ = Vec::new();
    for (create, update) in &pairs {
        let created = &schemas[create]["properties"];
        for (name, field) in schemas[update]["properties"].as_object().unwrap() {
            if created.get(name).is_none() {
                continue;
            }
            compared += 1;
            let (field, created) = (
                rule_of(&doc["components"]["schemas"], field),
                rule_of(&doc["components"]["schemas"], &created[name]),
            );
            for limit in LIMITS {
                if field.get(limit) != created.get(limit) {
                    differ.push(format!("{update}.{name} {limit} vs {create}"));
                }
            }
        }
    }
    assert!(compared >= 15, "only {compared} properties compared");
    assert!(
        differ.is_empty(),
        "limits written twice and apart: {differ:?}"
    );
}

/// An empty body counts as `{}`, so a body whose fields are all optional
/// may be left out: the description must not call it required (a client
/// generated from it would insist on one, and a fuzzer sending none would
/// expect a refusal). Identify's body is the exception stated in words: it
/// names at least one identity, so an empty one is 400.
#[test]
fn a_body_of_optional_fields_is_described_as_optional() {
    let doc = refctl::openapi::document();
    let schemas = &doc["components"]["schemas"];
    let mut optional = 0;
    let mut wrong = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let Some(body) = op.get("requestBody") else {
                continue;
            };
            let Some(name) = body
                .pointer("/content/application~1json/schema/$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/components/schemas/"))
            else {
                continue;
            };
            // An array of rows (an import) has no fields to leave out.
            let fields_optional = schemas[name]["type"] != "array"
                && schemas[name]["required"]
                    .as_array()
                    .is_none_or(|r| r.is_empty());
            if !fields_optional || op["operationId"] == "trackIdentify" {
                continue;
            }
            optional += 1;
            if body["required"] != json!(false) {
                wrong.push(format!("{method} {path} ({name})"));
            }
        }
    }
    assert!(optional >= 14, "only {optional} bodies of optional fields");
    assert!(wrong.is_empty(), "described as required: {wrong:?}");
}

fn openapi() -> Value {
    serde_json::from_str(public::OPENAPI_JSON).expect("docs/openapi.json is JSON")
}

#[tokio::test]
async fn openapi_is_served_and_matches_the_routes() {
    let r = raw(
        &server().base,
        "GET",
        "/api/v1/openapi.json",
        None,
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, openapi());

    let doc = openapi();
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in ["get", "post", "put", "patch", "delete"] {
            if item.get(method).is_some() {
                documented.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    let routed: BTreeSet<_> = routes().into_iter().map(|(m, p, _)| (m, p)).collect();
    assert!(routed.len() > 40, "{routed:?}");
    assert_eq!(documented, routed, "OpenAPI paths == routes");

    let codes: BTreeSet<_> = doc["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    let expected: BTreeSet<_> = api::ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .collect();
    assert_eq!(codes, expected);
}

/// Every (METHOD, path, function) the functions' routers state.
fn routes() -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for (function, routes) in refctl::serve::functions() {
        for (path, item) in &routes.get_openapi().paths.paths {
            for method in api::http::router::operations(item) {
                out.insert((method.to_string(), path.clone(), function.to_string()));
            }
        }
    }
    out
}

/// Whether a path of the router answers CORS preflight.
async fn answers_preflight(path: &str) -> bool {
    let concrete = path.replace("{id}", "x_1");
    let r = raw(&server().base, "OPTIONS", &concrete, None, &[], None).await;
    r.status == 204
}

fn template() -> serde_yaml::Value {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml")).unwrap();
    serde_yaml::from_str(&text).unwrap()
}

#[tokio::test]
async fn template_routes_match_the_routers() {
    let t = template();
    let resources = t["Resources"].as_mapping().unwrap();
    let mut declared = BTreeSet::new();
    for (_, res) in resources {
        if res["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        let Some(events) = res["Properties"]["Events"].as_mapping() else {
            continue;
        };
        let binary = res["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .unwrap()
            .to_string();
        for (_, ev) in events {
            if ev["Type"].as_str() != Some("HttpApi") {
                continue;
            }
            let method = ev["Properties"]["Method"].as_str().unwrap().to_uppercase();
            let path = ev["Properties"]["Path"].as_str().unwrap().to_string();
            declared.insert((method, path, binary.clone()));
        }
    }
    let mut expected = BTreeSet::new();
    let mut public = 0;
    for (method, path, function) in routes() {
        if answers_preflight(&path).await {
            expected.insert(("OPTIONS".to_string(), path.clone(), function.clone()));
            public += 1;
        }
        expected.insert((method, path, function));
    }
    expected.insert((
        "ANY".to_string(),
        "$default".to_string(),
        "public".to_string(),
    ));
    assert_eq!(declared, expected);
    assert!(public >= 5, "the browser-facing routes answer preflight");
}

#[tokio::test]
async fn the_table_refctl_creates_is_the_one_the_template_declares() {
    let t = template();
    let table = &t["Resources"]["Table"]["Properties"];
    let app = crate::support::app_for(server()).await;
    let desc = app
        .store
        .client()
        .describe_table()
        .table_name(app.store.table())
        .send()
        .await
        .unwrap();
    let d = desc.table().unwrap();

    let attrs = |v: &serde_yaml::Value| -> BTreeSet<(String, String)> {
        v.as_sequence()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["AttributeName"].as_str().unwrap().to_string(),
                    a["AttributeType"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let live_attrs: BTreeSet<_> = d
        .attribute_definitions()
        .iter()
        .map(|a| {
            (
                a.attribute_name().to_string(),
                a.attribute_type().as_str().to_string(),
            )
        })
        .collect();
    assert_eq!(attrs(&table["AttributeDefinitions"]), live_attrs);

    let schema = |v: &serde_yaml::Value| -> Vec<(String, String)> {
        v.as_sequence()
            .unwrap()
            .iter()
            .map(|k| {
                (
                    k["AttributeName"].as_str().unwrap().to_string(),
                    k["KeyType"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let live_schema: Vec<_> = d
        .key_schema()
        .iter()
        .map(|k| {
            (
                k.attribute_name().to_string(),
                k.key_type().as_str().to_string(),
            )
        })
        .collect();
    assert_eq!(schema(&table["KeySchema"]), live_schema);

    // (index name, key schema, projection type)
    type Gsi = (String, Vec<(String, String)>, String);
    let mut t_gsis: Vec<Gsi> = table["GlobalSecondaryIndexes"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["IndexName"].as_str().unwrap().to_string(),
                schema(&g["KeySchema"]),
                g["Projection"]["ProjectionType"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    let mut l_gsis: Vec<Gsi> = d
        .global_secondary_indexes()
        .iter()
        .map(|g| {
            (
                g.index_name().unwrap().to_string(),
                g.key_schema()
                    .iter()
                    .map(|k| {
                        (
                            k.attribute_name().to_string(),
                            k.key_type().as_str().to_string(),
                        )
                    })
                    .collect(),
                g.projection()
                    .unwrap()
                    .projection_type()
                    .unwrap()
                    .as_str()
                    .to_string(),
            )
        })
        .collect();
    t_gsis.sort();
    l_gsis.sort();
    assert_eq!(t_gsis, l_gsis);
    assert_eq!(table["BillingMode"].as_str(), Some("PAY_PER_REQUEST"));
    assert_eq!(
        table["TimeToLiveSpecification"]["AttributeName"].as_str(),
        Some(api::store::attrs::TTL)
    );
    // The stream the webhook consumer reads: on, with the same view.
    let stream = d.stream_specification().expect("the table has a stream");
    assert!(stream.stream_enabled());
    assert_eq!(
        stream.stream_view_type().map(|v| v.as_str()),
        table["StreamSpecification"]["StreamViewType"].as_str()
    );
    assert_eq!(
        table["StreamSpecification"]["StreamViewType"].as_str(),
        Some(api::store::table::STREAM_VIEW.as_str())
    );
    let ttl = app
        .store
        .client()
        .describe_time_to_live()
        .table_name(app.store.table())
        .send()
        .await
        .unwrap();
    assert_eq!(
        ttl.time_to_live_description()
            .and_then(|t| t.attribute_name()),
        Some(api::store::attrs::TTL)
    );
}

/// A sample S3 notification: every created key, once decoded, names a
/// tenant and a payout as the invoice handler expects.
fn check_s3_event(path: &std::path::Path, text: &str) {
    let event: invoices::S3Event =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let keys = event.created_keys();
    assert!(!keys.is_empty(), "{}", path.display());
    for key in keys {
        assert!(
            api::services::paying::invoice::parse_key(&key).is_some(),
            "{}: {key} names no payout",
            path.display()
        );
    }
}

/// A sample event of a function that is not behind the HTTP API, checked
/// as its handler reads it; `None` for an API Gateway event.
fn background_event(path: &std::path::Path, text: &str, raw: &Value) -> Option<&'static str> {
    if raw["Records"][0]["eventSource"] == "aws:s3" {
        check_s3_event(path, text);
        return Some("invoices");
    }
    if let Some(records) = raw["Records"].as_array() {
        // DynamoDB Stream: every record is an inserted event item.
        assert!(!records.is_empty());
        for record in records {
            let found = api::store::stream::event_of_lambda_record(record).unwrap();
            assert!(found.is_some(), "{record}");
        }
        return Some("webhook-delivery");
    }
    if raw["detail-type"] == "Scheduled Event" {
        assert_eq!(raw["source"], "aws.events");
        // The payout job and the webhook sweep read the same schedule event.
        return Some("schedule");
    }
    None
}

/// The client address API Gateway put in the request context.
fn source_ip(req: &lambda_http::Request) -> Option<String> {
    use lambda_http::request::RequestContext;
    use lambda_http::RequestExt;
    match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx.http.source_ip.clone(),
        _ => None,
    }
}

/// Whether `path` fits the route `pattern` (`{name}` stands for one
/// non-empty segment).
fn path_matches(pattern: &str, path: &str) -> bool {
    let pat: Vec<&str> = pattern.split('/').collect();
    let segs: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    pat.len() == segs.len()
        && pat.iter().zip(&segs).all(|(p, s)| {
            if p.starts_with('{') && p.ends_with('}') {
                !s.is_empty()
            } else {
                p == s
            }
        })
}

#[test]
fn sample_events_parse_and_name_real_routes() {
    let routes = routes();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../events");
    let mut functions_covered = BTreeSet::new();
    let mut background = BTreeSet::new();
    let mut count = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let raw: Value = serde_json::from_str(&text).unwrap();
        if let Some(kind) = background_event(&path, &text, &raw) {
            background.insert(kind);
            count += 1;
            continue;
        }
        let route_key = raw["routeKey"].as_str().unwrap_or_default().to_string();
        let req = lambda_http::request::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            source_ip(&req).is_some(),
            "{}: source IP comes from the request context",
            path.display()
        );
        let request_path = req.uri().path().to_string();
        count += 1;
        if route_key == "$default" {
            assert!(
                !routes
                    .iter()
                    .any(|(_, p, _)| path_matches(p, &request_path)),
                "{}",
                path.display()
            );
            functions_covered.insert("public".to_string());
            continue;
        }
        let (method, pattern) = route_key.split_once(' ').unwrap();
        let (_, _, function) = routes
            .iter()
            .find(|(m, p, _)| m == method && p == pattern)
            .unwrap_or_else(|| panic!("{}: {route_key} is not a route", path.display()));
        assert!(
            path_matches(pattern, &request_path),
            "{}: path does not match",
            path.display()
        );
        functions_covered.insert(function.clone());
    }
    assert!(count > 0);
    let functions: BTreeSet<_> = routes.iter().map(|(_, _, f)| f.clone()).collect();
    assert_eq!(
        functions_covered, functions,
        "every function has a sample event"
    );
    assert_eq!(
        background,
        BTreeSet::from(["invoices", "schedule", "webhook-delivery"]),
        "the invoice events, the schedules and the stream consumer have sample events"
    );
}

/// Whether a Lambda event filter pattern matches a record: every key of the
/// pattern is in the record, and a leaf list matches when one of its values
/// does (a literal, or `{"prefix": …}`), as Lambda's filter rules read.
fn filter_matches(pattern: &Value, record: &Value) -> bool {
    match pattern {
        Value::Object(keys) => keys
            .iter()
            .all(|(k, p)| record.get(k).is_some_and(|r| filter_matches(p, r))),
        Value::Array(options) => options.iter().any(|o| match (o, record) {
            (Value::Object(rule), Value::String(s)) => rule
                .get("prefix")
                .and_then(Value::as_str)
                .is_some_and(|p| s.starts_with(p)),
            (literal, r) => literal == r,
        }),
        _ => false,
    }
}

/// A stream record (`INSERT`) of an item, its string attributes as the
/// stream writes them.
fn inserted(item: &api::store::Item) -> Value {
    let image: serde_json::Map<String, Value> = item
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), serde_json::json!({"S": v.as_s().ok()?}))))
        .collect();
    serde_json::json!({"eventName": "INSERT", "dynamodb": {"NewImage": image}})
}

#[test]
fn the_webhook_streams_filter_lets_every_event_through() {
    use api::domain::event::{EventType, Published};
    use api::domain::tenant::{Mode, Tenant};
    let t = template();
    let filters = &t["Resources"]["WebhookDeliveryFunction"]["Properties"]["Events"]
        ["NewEventItems"]["Properties"]["FilterCriteria"]["Filters"];
    let patterns: Vec<Value> = filters
        .as_sequence()
        .expect("the stream's filters")
        .iter()
        .map(|f| serde_json::from_str(f["Pattern"].as_str().unwrap()).unwrap())
        .collect();
    let passes = |item: &api::store::Item| {
        let record = inserted(item);
        patterns.iter().any(|p| filter_matches(p, &record))
    };
    let tenant = Tenant::new("acct_01JD3Q5W6X7Y8Z9A0B1C2D3E4F", Mode::Live);
    let event = Published::unstored(
        EventType::CampaignCreated,
        serde_json::json!({"id": "cmp_1"}),
        chrono::Utc::now(),
    );
    let item = api::store::events::item(&tenant, &event).unwrap();
    assert!(passes(&item), "an event as the code writes it");
    // An event of the older layout: keyed by its id, no id attribute.
    let mut older = item.clone();
    older.remove("id");
    older.insert("pk".into(), api::store::string_value(&event.id));
    older.insert("sk".into(), api::store::string_value("R"));
    assert!(passes(&older), "an event of the older layout");
    // What the delivery writes about the event stays out.
    let task = api::domain::webhook::Task::start(
        None,
        "whe_01JD3Q5W6X7Y8Z9A0B1C2D3E4F",
        (&event.id, event.event_type),
        chrono::Utc::now(),
        chrono::Duration::seconds(60),
    );
    let task = api::store::webhooks::task_item(&tenant, &task).unwrap();
    assert!(!passes(&task), "a delivery task");
    let mut campaign = item.clone();
    campaign.insert("id".into(), api::store::string_value("cmp_1"));
    campaign.insert("pk".into(), api::store::string_value("cmp_1"));
    assert!(!passes(&campaign), "a record keyed by its own id");
}

/// The query names each operation describes, its description resolving the
/// shared parameters (`Limit`, ...); header parameters left out.
fn described_query_names(doc: &Value, op: &Value) -> Vec<String> {
    let shared = &doc["components"]["parameters"];
    op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| match p["$ref"].as_str() {
            Some(r) => &shared[r.rsplit('/').next().unwrap_or_default()],
            None => p,
        })
        .filter(|p| p["in"] == "query")
        .filter_map(|p| Some(p["name"].as_str()?.to_string()))
        .collect()
}

/// The `unrecognized_keys` issues of an answer, by parameter name.
fn unrecognized(r: &crate::support::Resp) -> Vec<String> {
    r.body["error"]["details"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["code"] == "unrecognized_keys")
        .map(|i| i["path"][0].as_str().unwrap_or_default().to_string())
        .collect()
}

/// A route reads the names its description lists (whatever their values,
/// none is refused as unknown) and refuses a name it does not describe as
/// unknown: the accepted names are the ones the route's reader asks for, so
/// a described name that no reader asks for shows here.
#[tokio::test]
async fn every_query_accepts_the_names_it_describes_and_no_other() {
    let m = merchant().await;
    let c = crate::support::campaign(&m.test_key, json!({})).await;
    let code = format!("QN{}", &ulid::Ulid::new().to_string()[16..]);
    let a =
        crate::support::affiliate_with_code(&m.test_key, c["id"].as_str().unwrap(), &code).await;
    let sessions = format!(
        "/api/v1/affiliates/{}/portal-sessions",
        a["id"].as_str().unwrap()
    );
    let r = call("POST", &sessions, Some(&m.test_key), Some(json!({}))).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let token = r.data()["token"].as_str().unwrap().to_string();

    let doc = openapi();
    let mut checked = 0;
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let names = described_query_names(&doc, op);
            if names.is_empty() {
                continue;
            }
            let key = match op["security"].to_string() {
                s if s.contains("portalToken") => Some(token.as_str()),
                _ if path.starts_with("/api/") => Some(m.test_key.as_str()),
                _ => None,
            };
            let path = path.replace("{id}", "x_1");
            let described: Vec<String> = names.iter().map(|n| format!("{n}=x")).collect();
            let given = format!("{path}?{}", described.join("&"));
            let r = call(&method.to_uppercase(), &given, key, None).await;
            assert!(r.status != 401, "{method} {given}: {:?}", r.body);
            assert_eq!(unrecognized(&r), Vec::<String>::new(), "{method} {given}");
            let r = call(
                &method.to_uppercase(),
                &format!("{path}?not_described=1"),
                key,
                None,
            )
            .await;
            r.assert_error(400, "VALIDATION_FAILED");
            assert_eq!(unrecognized(&r), ["not_described"], "{method} {path}");
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} operations with a query");
}
