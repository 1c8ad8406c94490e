//! The real Lambda entry points: each function binary runs under a local
//! Lambda Runtime API and answers every sample event of `events/` meant for
//! it as the in-process router answers the same request on the same table.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::Arc;

use api::domain::tenant::Mode;
use api::services::app::App;
use api::store::accounts;
use api::store::config::Config;
use serde_json::{json, Value};

use refctl::runtime_api::{function_command, Outcome, RuntimeApi};

const FUNCTIONS: &[&str] = &[
    "affiliates",
    "applications",
    "assets",
    "campaigns",
    "conversions",
    "integrations",
    "payouts",
    "portal",
    "public",
    "reports",
    "webhooks",
    "invoices",
    "payout-job",
    "webhook-delivery",
    "webhook-sweep",
];

/// The sample ids and placeholders the events carry.
const SAMPLE_KEY: &str = "rk_test_REPLACE_WITH_A_TEST_KEY";
const SAMPLE_CAMPAIGN: &str = "cmp_01JD8Z3K4M5N6P7Q8R9S0T1V2W";
const SAMPLE_AFFILIATE: &str = "aff_01JD9A7C2E4G6J8M0P2R4T6V8X";
const SAMPLE_APPLICATION: &str = "app_01JD9A7C2E4G6J8M0P2R4T6V8Y";
const SAMPLE_ASSET: &str = "ast_01JD9B3D5F7H9K1N3Q5S7T9W1Y";
const SAMPLE_CONVERSION: &str = "cnv_01JD3Q5W6X7Y8Z9A0B1C2D3E4F";
const SAMPLE_EXTERNAL_ID: &str = "order_10001";

/// The function binaries, built beside this test by `cargo build --bins`
/// (scripts/test.sh runs it first): a cargo build started from inside the
/// test would fight the outer one over the same target directory.
fn binaries() -> BTreeMap<String, PathBuf> {
    let exe = std::env::current_exe().expect("test path");
    // target/<profile>/deps/lambda-<hash> -> target/<profile>
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let mut bins = BTreeMap::new();
    for f in FUNCTIONS {
        let path = dir.join(f);
        assert!(
            path.is_file(),
            "{} is missing: run `cargo build --workspace --bins` first (scripts/test.sh does)",
            path.display()
        );
        bins.insert(f.to_string(), path);
    }
    bins
}

/// A function process and its runtime endpoint; the process ends with it.
struct Function {
    api: RuntimeApi,
    child: Child,
}

impl Drop for Function {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Function {
    async fn start(
        name: &str,
        exe: &std::path::Path,
        config: &Config,
        extra: &[(&str, &str)],
    ) -> Self {
        let api = RuntimeApi::start().await;
        let mut cmd = function_command(exe, name, &api, config);
        cmd.stdout(Stdio::null()).stderr(Stdio::inherit());
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("function starts");
        Function { api, child }
    }

    /// Invokes with an event and returns the posted response, failing on an error.
    async fn call(&self, event: &Value) -> Value {
        match self.api.invoke(event).await {
            Outcome::Response(v) => v,
            Outcome::Error(e) => panic!("function error: {e}"),
        }
    }
}

/// A fresh table, bucket and Secrets Manager secret on the test stack.
async fn setup() -> Arc<App> {
    let mut config = refctl::setup::test_stack_config("lambda");
    config.api_key_secret_arn = Some(format!("{}/api-key-secret", config.table_name));
    let app = App::new(config).await;
    refctl::setup::tables_create(&app).await.expect("tables");
    app
}

/// Converts a sample event and answers it in process, as `refctl serve` would.
async fn in_process(
    router: &axum::Router,
    event: &Value,
) -> (u16, BTreeMap<String, String>, Value) {
    let req = lambda_http::request::from_str(&event.to_string()).expect("event parses");
    let resp = api::lambda::answer(router, req).await;
    let headers = resp
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let body = match resp.body() {
        lambda_http::Body::Text(t) => serde_json::from_str(t).unwrap_or(Value::Null),
        lambda_http::Body::Binary(b) => serde_json::from_slice(b).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    (resp.status().as_u16(), headers, body)
}

/// The parts of an API Gateway (payload 2.0) response a function posted.
fn from_lambda(resp: &Value) -> (u16, BTreeMap<String, String>, Value) {
    let status = resp["statusCode"].as_u64().expect("statusCode") as u16;
    let headers = resp["headers"]
        .as_object()
        .map(|h| {
            h.iter()
                .map(|(k, v)| (k.to_lowercase(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    assert_ne!(resp["isBase64Encoded"], true, "JSON answers are text");
    let body = resp["body"]
        .as_str()
        .and_then(|b| serde_json::from_str(b).ok())
        .unwrap_or(Value::Null);
    (status, headers, body)
}

/// Ids of one merchant's prepared records, by the sample id they stand for.
struct Tenant {
    swaps: Vec<(String, String)>,
}

impl Tenant {
    /// The sample event with this tenant's key and ids.
    fn event(&self, text: &str) -> Value {
        let mut t = text.to_string();
        for (from, to) in &self.swaps {
            t = t.replace(from, to);
        }
        serde_json::from_str(&t).unwrap()
    }
}

/// An HTTP API event for a request, from the in-process side's point of view.
fn request_event(
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<Value>,
    ip: &str,
) -> Value {
    let mut headers = json!({ "content-type": "application/json" });
    if let Some(k) = key {
        headers["authorization"] = json!(format!("Bearer {k}"));
    }
    json!({
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "",
        "headers": headers,
        "requestContext": { "http": { "method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": ip },
            "requestId": "prep", "routeKey": "$default", "stage": "$default", "timeEpoch": 0, "accountId": "1", "apiId": "a" },
        "isBase64Encoded": false,
        "body": body.map(|b| b.to_string()),
    })
}

/// A merchant with a public campaign, an active affiliate `ALICE10`, a
/// pending application, a swipe-copy asset and a conversion.
async fn tenant(app: &Arc<App>, router: &axum::Router, n: usize) -> Tenant {
    let account = accounts::create_account(&app.store, "Lambda merchant", "growth")
        .await
        .unwrap();
    let (_, key) = api::services::auth::keys::create_key(
        &app.store,
        &app.signing,
        &account.id,
        "t",
        Mode::Test,
    )
    .await
    .unwrap();
    let ip = "198.51.100.1";
    let post = |path: &'static str, body: Value| {
        let ev = request_event("POST", path, Some(&key), Some(body), ip);
        async move {
            let (status, _, body) = in_process(router, &ev).await;
            assert!(status == 200 || status == 201, "{path}: {status} {body}");
            body["data"].clone()
        }
    };
    let campaign = post("/api/v1/campaigns", json!({"name": "C", "commissionType": "PERCENTAGE", "commissionValue": 10, "isPublic": true})).await;
    let cmp = campaign["id"].as_str().unwrap().to_string();
    let aff = post("/api/v1/affiliates", json!({"campaignId": cmp, "email": "alice-prep@example.org", "name": "Alice", "code": "ALICE10"})).await;
    let signup = post(
        "/api/v1/affiliates/signup",
        json!({"campaignId": cmp, "email": "carol@example.org", "name": "Carol"}),
    )
    .await;
    let asset = post(
        "/api/v1/assets/swipe-copy",
        json!({"name": "A", "body": "Try it: {{link}}", "campaignId": cmp}),
    )
    .await;
    let cnv = post("/api/v1/conversions/postback", json!({"amount": 20, "currency": "USD", "conversionType": "SALE", "externalId": format!("prep-{}-{n}", account.id), "affiliateCode": "ALICE10"})).await;
    let id = |v: &Value, k: &str| {
        v[k].as_str()
            .unwrap_or_else(|| panic!("{k} in {v}"))
            .to_string()
    };
    Tenant {
        swaps: vec![
            (SAMPLE_KEY.into(), key.clone()),
            (SAMPLE_CAMPAIGN.into(), cmp.clone()),
            (SAMPLE_AFFILIATE.into(), id(&aff, "id")),
            (SAMPLE_APPLICATION.into(), id(&signup, "applicationId")),
            (SAMPLE_ASSET.into(), id(&asset, "id")),
            (SAMPLE_CONVERSION.into(), id(&cnv, "id")),
            (
                SAMPLE_EXTERNAL_ID.into(),
                format!("order-{}-{n}", account.id),
            ),
        ],
    }
}

/// Which function a non-HTTP sample event is meant for: an S3 or a stream
/// record, or the schedule rule it names.
fn trigger_of(event: &Value) -> Option<&'static str> {
    if let Some(source) = event["Records"][0]["eventSource"].as_str() {
        return Some(match source {
            "aws:s3" => "invoices",
            "aws:dynamodb" => "webhook-delivery",
            other => panic!("no function takes {other} records"),
        });
    }
    if event["detail-type"] != "Scheduled Event" {
        return None;
    }
    let rule = event["resources"][0].as_str().unwrap_or_default();
    Some(if rule.contains("WebhookSweep") {
        "webhook-sweep"
    } else {
        "payout-job"
    })
}

/// Which function an HTTP sample event is meant for (the one whose router
/// states its route).
fn function_of(event: &Value) -> &'static str {
    let route_key = event["routeKey"].as_str().unwrap_or_default();
    if route_key == "$default" {
        return "public";
    }
    let (method, pattern) = route_key.split_once(' ').unwrap();
    let method: http::Method = method.parse().unwrap();
    refctl::serve::functions()
        .into_iter()
        .find(|(_, routes)| {
            routes
                .get_openapi()
                .paths
                .paths
                .get(pattern)
                .is_some_and(|item| api::http::router::operations(item).contains(&method.as_str()))
        })
        .map(|(function, _)| function)
        .unwrap_or_else(|| panic!("{route_key} is not a route"))
}

/// Status, envelope and the contract's headers agree; ids differ by tenant,
/// so `data` is compared by shape.
fn assert_same(
    file: &str,
    lambda: &(u16, BTreeMap<String, String>, Value),
    local: &(u16, BTreeMap<String, String>, Value),
) {
    let ((ls, lh, lb), (rs, rh, rb)) = (lambda, local);
    assert_eq!(ls, rs, "{file}: status ({lb} vs {rb})");
    assert_eq!(lb["success"], rb["success"], "{file}: success");
    assert_eq!(
        lb["error"]["code"], rb["error"]["code"],
        "{file}: error code"
    );
    let shape = |v: &Value| match v {
        Value::Object(m) => m.keys().cloned().collect::<Vec<_>>(),
        Value::Array(a) => vec![format!("array of {}", a.len())],
        other => vec![other.to_string()],
    };
    assert_eq!(shape(&lb["data"]), shape(&rb["data"]), "{file}: data");
    for h in [
        "content-type",
        "x-request-id",
        "x-content-type-options",
        "cache-control",
        "allow",
    ] {
        assert_eq!(lh.get(h), rh.get(h), "{file}: header {h}");
    }
    assert_eq!(
        lh.get("x-content-type-options").map(String::as_str),
        Some("nosniff"),
        "{file}"
    );
    // Documents (openapi.json) are not envelopes; every envelope names the request.
    if lb.get("success").is_some() {
        assert_eq!(
            lh.get("x-request-id").map(String::as_str),
            lb["meta"]["requestId"].as_str(),
            "{file}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_function_binary_answers_its_sample_events_like_the_router() {
    let bins = binaries();
    let app = setup().await;
    let router = refctl::serve::service(app.clone());
    // Two tenants prepared alike on one table: one answers through the
    // binaries, the other in process, so writes on one side leave the
    // other's state as it would have been.
    let (lambda_tenant, local_tenant) = (
        tenant(&app, &router, 1).await,
        tenant(&app, &router, 2).await,
    );
    let mut functions = BTreeMap::new();
    for f in FUNCTIONS {
        functions.insert(*f, Function::start(f, &bins[*f], &app.config, &[]).await);
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../events");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut answered = BTreeMap::<&str, usize>::new();
    for path in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
    {
        let file = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(path).unwrap();
        let raw: Value = serde_json::from_str(&text).unwrap();
        let function = trigger_of(&raw).unwrap_or_else(|| function_of(&raw));
        let lambda_event = lambda_tenant.event(&text);
        let answer = functions[function].call(&lambda_event).await;
        *answered.entry(function).or_default() += 1;
        if trigger_of(&raw).is_some() {
            assert!(answer.is_object(), "{file}: {answer}");
            continue;
        }
        let local = in_process(&router, &local_tenant.event(&text)).await;
        assert_same(&file, &from_lambda(&answer), &local);
    }
    assert_eq!(
        answered.len(),
        FUNCTIONS.len(),
        "every function got an event: {answered:?}"
    );
    source_ip_is_the_request_context_s(&functions["public"], &lambda_tenant).await;
}

/// The public rate limit counts per `requestContext.http.sourceIp`; an
/// `X-Forwarded-For` header changes nothing.
async fn source_ip_is_the_request_context_s(public: &Function, tenant: &Tenant) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../events/public-campaign-profile.json"
    ))
    .unwrap();
    let hit = |source_ip: &str, forwarded: &str| {
        let mut ev = tenant.event(&text);
        ev["requestContext"]["http"]["sourceIp"] = json!(source_ip);
        ev["headers"]["x-forwarded-for"] = json!(forwarded);
        ev
    };
    let remaining = |resp: &Value| -> u64 {
        let (status, headers, body) = from_lambda(resp);
        assert_eq!(status, 200, "{body}");
        headers["ratelimit-remaining"].parse().unwrap()
    };
    let first = remaining(&public.call(&hit("192.0.2.10", "192.0.2.99")).await);
    let second = remaining(&public.call(&hit("192.0.2.10", "192.0.2.98")).await);
    assert_eq!(
        second + 1,
        first,
        "same sourceIp, other X-Forwarded-For: one counter"
    );
    let other = remaining(&public.call(&hit("192.0.2.11", "192.0.2.10")).await);
    assert_eq!(
        other, first,
        "another sourceIp starts its own counter, whatever X-Forwarded-For says"
    );
}
