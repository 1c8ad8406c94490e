//! Hardening: bounded waits on a stalled store, inputs that must never reach
//! a 500, static documents without DynamoDB, and the headers every response carries.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use api::services::app::App;
use api::store::config::{Config, SdkTimeouts};
use serde_json::json;

use crate::support::{call_on, merchant_in, start, test_config, Merchant, Resp, Server};

/// Timeouts short enough for a test, with the retry bound of production.
fn short_timeouts(operation: Duration) -> SdkTimeouts {
    SdkTimeouts {
        connect: Duration::from_secs(1),
        attempt: Duration::from_secs(1),
        operation,
        max_attempts: 3,
    }
}

/// A TCP endpoint that accepts connections, reads what comes and never answers.
fn black_hole() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            std::thread::spawn(move || std::io::copy(&mut stream, &mut std::io::sink()));
        }
    });
    format!("http://{addr}")
}

/// A proxy to DynamoDB Local that forwards every request but drops every
/// answer on a connection once it has carried a write (`PutItem`,
/// `TransactWriteItems`): the write reaches the store, its answer never comes
/// back. Only the first `losses` connections with a write are treated so.
fn lossy_proxy(upstream: &str, losses: usize) -> String {
    lossy_proxy_counted(upstream, losses).0
}

/// [`lossy_proxy`], with the count of losses it has left.
fn lossy_proxy_counted(upstream: &str, losses: usize) -> (String, Arc<AtomicUsize>) {
    let upstream = upstream
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let budget = Arc::new(AtomicUsize::new(losses));
    let left = budget.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(&upstream) else {
                continue;
            };
            let lose = Arc::new(AtomicBool::new(false));
            let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (lose2, budget) = (lose.clone(), budget.clone());
            std::thread::spawn(move || forward_requests(client, server, &lose2, &budget));
            std::thread::spawn(move || forward_answers(s2, c2, &lose));
        }
    });
    (format!("http://{addr}"), left)
}

fn forward_requests(
    mut from: TcpStream,
    mut to: TcpStream,
    lose: &AtomicBool,
    budget: &AtomicUsize,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut tail: Vec<u8> = Vec::new();
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        // Look across the chunk boundary too, so a split header is still seen.
        tail.extend_from_slice(&buf[..n]);
        let is_write = [
            &b"DynamoDB_20120810.PutItem"[..],
            b"DynamoDB_20120810.TransactWriteItems",
        ]
        .iter()
        .any(|t| tail.windows(t.len()).any(|w| w == *t));
        if is_write
            && !lose.load(Ordering::SeqCst)
            && budget
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |b| b.checked_sub(1))
                .is_ok()
        {
            // Set before the request leaves, so its answer cannot slip through.
            lose.store(true, Ordering::SeqCst);
        }
        let keep = tail.len().saturating_sub(64);
        tail.drain(..keep);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}

fn forward_answers(mut from: TcpStream, mut to: TcpStream, lose: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        if !lose.load(Ordering::SeqCst) && to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
}

/// A server whose DynamoDB never answers, with 1-second timeouts.
fn stalled_server() -> &'static Server {
    static STALLED: OnceLock<Server> = OnceLock::new();
    STALLED.get_or_init(|| {
        let mut config = test_config();
        config.dynamodb_endpoint = Some(black_hole());
        config.sdk_timeouts = short_timeouts(Duration::from_secs(1));
        start(config, false)
    })
}

/// A well-signed key whose ids are well formed but name nothing.
fn signed_key(config: &Config) -> String {
    use api::domain::ids::{new_id, IdKind};
    api::services::auth::api_key::issue(
        &config.api_key_secret,
        &new_id(IdKind::Key),
        &new_id(IdKind::Account),
        api::domain::tenant::Mode::Test,
    )
}

/// Asserts the 503 of a stalled store: envelope, `Retry-After`, and an
/// answer within the operation timeout plus a second.
fn assert_unavailable(r: &Resp, elapsed: Duration, config: &Config) {
    r.assert_error(503, "SERVICE_UNAVAILABLE");
    let retry: u64 = r
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .expect("Retry-After in whole seconds");
    assert!(retry >= 1, "{retry}");
    let bound = config.sdk_timeouts.operation + Duration::from_secs(1);
    assert!(
        elapsed <= bound,
        "answered after {elapsed:?}, bound {bound:?}"
    );
}

#[tokio::test]
async fn a_stalled_store_answers_503_with_retry_after_in_bounded_time() {
    let s = stalled_server();
    let key = signed_key(&s.app.config);
    let started = Instant::now();
    let r = call_on(&s.base, "GET", "/api/v1/campaigns", Some(&key), None).await;
    assert_unavailable(&r, started.elapsed(), &s.app.config);
}

/// A table on the test stack with a merchant, and a configuration for it.
async fn table_with_merchant() -> (Config, Merchant) {
    let config = test_config();
    let app = App::new(config.clone()).await;
    refctl::setup::tables_create(&app)
        .await
        .expect("tables create");
    let m = merchant_in(&app).await;
    (config, m)
}

/// The campaigns of a merchant named `name`, read through a server on the real store.
async fn campaigns_named(healthy: &Server, key: &str, name: &str) -> Vec<serde_json::Value> {
    let r = call_on(
        &healthy.base,
        "GET",
        "/api/v1/campaigns?limit=100",
        Some(key),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == name)
        .cloned()
        .collect()
}

fn campaign_body(name: &str) -> serde_json::Value {
    json!({"name": name, "commissionType": "PERCENTAGE", "commissionValue": 12.5, "cookieDays": 45})
}

#[tokio::test]
async fn a_write_whose_answers_are_lost_is_503_and_leaves_nothing_or_everything() {
    let (config, m) = table_with_merchant().await;
    let mut lossy = config.clone();
    lossy.dynamodb_endpoint = Some(lossy_proxy(
        config.dynamodb_endpoint.as_deref().unwrap(),
        usize::MAX,
    ));
    lossy.sdk_timeouts = short_timeouts(Duration::from_secs(1));
    let stalled = start(lossy.clone(), false);
    let started = Instant::now();
    let r = call_on(
        &stalled.base,
        "POST",
        "/api/v1/campaigns",
        Some(&m.test_key),
        Some(campaign_body("lost answer")),
    )
    .await;
    assert_unavailable(&r, started.elapsed(), &lossy);

    // The store is healthy again: the campaign is either absent or whole.
    let healthy = start(config, false);
    let found = campaigns_named(&healthy, &m.test_key, "lost answer").await;
    assert!(found.len() <= 1, "{found:?}");
    if let Some(c) = found.first() {
        let path = format!("/api/v1/campaigns/{}", c["id"].as_str().unwrap());
        let r = call_on(&healthy.base, "GET", &path, Some(&m.test_key), None).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        assert_eq!(r.data()["commissionValue"], json!(12.5));
        assert_eq!(r.data()["cookieDays"], json!(45));
    }
}

#[tokio::test]
async fn a_put_retried_after_its_answer_was_lost_reports_the_write() {
    let (config, m) = table_with_merchant().await;
    let mut lossy = config.clone();
    lossy.dynamodb_endpoint = Some(lossy_proxy(config.dynamodb_endpoint.as_deref().unwrap(), 1));
    lossy.sdk_timeouts = short_timeouts(Duration::from_secs(4));
    let server = start(lossy, false);
    let r = call_on(
        &server.base,
        "POST",
        "/api/v1/campaigns",
        Some(&m.test_key),
        Some(campaign_body("retried")),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let healthy = start(config, false);
    let found = campaigns_named(&healthy, &m.test_key, "retried").await;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["id"], r.data()["id"]);
}

/// A transaction whose answer was lost is sent again by the SDK with the
/// idempotency token it gave the first attempt, so the store applies it once
/// and answers the retry as done: the accept is 200, made once, with one
/// event. (Without the token the retry would fail on the status the first
/// attempt moved, and the accept would be 409 INVALID_STATE.)
#[tokio::test]
async fn a_transaction_retried_after_its_answer_was_lost_is_applied_once() {
    let (config, m) = table_with_merchant().await;
    let healthy = start(config.clone(), false);
    let key = Some(m.test_key.as_str());
    let mut body = campaign_body("open");
    body["isPublic"] = json!(true);
    let r = call_on(&healthy.base, "POST", "/api/v1/campaigns", key, Some(body)).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let signup =
        json!({"campaignId": r.data()["id"], "email": "lost@partners.example.com", "name": "Lost"});
    let r = call_on(
        &healthy.base,
        "POST",
        "/api/v1/affiliates/signup",
        None,
        Some(signup),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let id = r.data()["applicationId"].as_str().unwrap().to_string();
    let mut lossy = config.clone();
    let (proxy, losses_left) = lossy_proxy_counted(config.dynamodb_endpoint.as_deref().unwrap(), 1);
    lossy.dynamodb_endpoint = Some(proxy);
    lossy.sdk_timeouts = short_timeouts(Duration::from_secs(4));
    let server = start(lossy, false);
    let path = format!("/api/v1/applications/{id}/accept");
    let r = call_on(&server.base, "POST", &path, key, Some(json!({}))).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["status"], "ACCEPTED");
    // The transaction's first answer was dropped, so the SDK sent it again.
    assert_eq!(losses_left.load(Ordering::SeqCst), 0);
    let path = format!("/api/v1/applications/{id}");
    let stored = call_on(&healthy.base, "GET", &path, key, None).await;
    assert_eq!(stored.data(), r.data());
    let events = "/api/v1/events?type=application.accepted&limit=100";
    let events = call_on(&healthy.base, "GET", events, key, None).await;
    assert_eq!(events.status, 200, "{:?}", events.body);
    let accepted: Vec<_> = events
        .data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["data"]["id"] == json!(id))
        .collect();
    assert_eq!(accepted.len(), 1, "{accepted:?}");
}

#[tokio::test]
async fn offsets_past_ten_thousand_are_400_pointing_at_cursor() {
    let m = crate::support::merchant().await;
    for list in [
        "campaigns",
        "affiliates",
        "applications",
        "assets",
        "conversions",
    ] {
        for offset in ["10001", "2147483648", "18446744073709551615"] {
            let path = format!("/api/v1/{list}?offset={offset}");
            let r = crate::support::call("GET", &path, Some(&m.test_key), None).await;
            r.assert_error(400, "VALIDATION_FAILED");
            let issue = &r.body["error"]["details"][0];
            assert_eq!(issue["path"], json!(["offset"]), "{path}");
            assert!(
                issue["message"].as_str().unwrap().contains("cursor"),
                "{path}: {issue}"
            );
        }
        let path = format!("/api/v1/{list}?offset=10000&limit=100");
        let r = crate::support::call("GET", &path, Some(&m.test_key), None).await;
        assert_eq!(r.status, 200, "{path}: {:?}", r.body);
    }
}

#[tokio::test]
async fn validly_signed_tokens_with_odd_claims_get_the_common_401() {
    use api::domain::tenant::Mode;
    let m = crate::support::merchant().await;
    let secret = &crate::support::server().app.config.api_key_secret;
    let kid = &m.test_key_id;
    let acct = &m.account_id;
    let long = "k".repeat(3000);
    let odd = [
        ("", acct.as_str()),
        (acct.as_str(), acct.as_str()),
        (long.as_str(), acct.as_str()),
        (acct.as_str(), kid.as_str()),
    ];
    for (k, a) in odd {
        let key = api::services::auth::api_key::issue(secret, k, a, Mode::Test);
        let r = crate::support::call("GET", "/api/v1/campaigns", Some(&key), None).await;
        r.assert_error(401, "UNAUTHORIZED");
        assert_eq!(
            r.body["error"]["message"], "invalid or expired API key",
            "kid {k:.40}, acct {a}"
        );
    }
    // The same ids the right way round still name a real key (hash aside).
    let r = crate::support::call("GET", "/api/v1/campaigns", Some(&m.test_key), None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
}

/// Sends raw JSON text to the shared server.
async fn send_text(method: &str, path: &str, key: &str, text: &str) -> Resp {
    crate::support::raw(
        &crate::support::server().base,
        method,
        path,
        Some(key),
        &[("content-type", "application/json")],
        Some(text.as_bytes().to_vec()),
    )
    .await
}

#[tokio::test]
async fn control_characters_are_refused_except_whitespace_in_free_text() {
    let m = crate::support::merchant().await;
    let k = &m.test_key;
    let base = campaign_body("x");
    let mut nul = base.clone();
    nul["name"] = json!("bad\u{0}name");
    let r = crate::support::call("POST", "/api/v1/campaigns", Some(k), Some(nul)).await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert_eq!(r.body["error"]["details"][0]["path"], json!(["name"]));
    // C1 controls (U+0080-U+009F) are control characters too.
    let mut nel = base.clone();
    nel["name"] = json!("bad\u{85}name");
    let r = crate::support::call("POST", "/api/v1/campaigns", Some(k), Some(nel)).await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert_eq!(r.body["error"]["details"][0]["path"], json!(["name"]));

    let mut meta = base.clone();
    meta["metadata"] = json!({"plan\u{7f}": "gold", "tier": "a\tb"});
    let r = crate::support::call("POST", "/api/v1/campaigns", Some(k), Some(meta)).await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert_eq!(r.body["error"]["details"].as_array().unwrap().len(), 2);

    let r = crate::support::call("GET", "/api/v1/campaigns?status=%00", Some(k), None).await;
    r.assert_error(400, "VALIDATION_FAILED");

    let copy = json!({"name": "Launch", "body": "Line one\twith a tab\r\nline two"});
    let r = crate::support::call("POST", "/api/v1/assets/swipe-copy", Some(k), Some(copy)).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(r.data()["body"], "Line one\twith a tab\r\nline two");
    let bell = json!({"name": "Launch", "body": "ding\u{7}"});
    let r = crate::support::call("POST", "/api/v1/assets/swipe-copy", Some(k), Some(bell)).await;
    r.assert_error(400, "VALIDATION_FAILED");
}

#[tokio::test]
async fn a_body_with_a_repeated_key_is_invalid_request() {
    let m = crate::support::merchant().await;
    let k = &m.test_key;
    let top = r#"{"name": "A", "name": "B", "commissionType": "PERCENTAGE", "commissionValue": 5}"#;
    let nested = r#"{"name": "A", "commissionType": "PERCENTAGE", "commissionValue": 5, "metadata": {"k": "1", "k": "2"}}"#;
    for text in [top, nested] {
        send_text("POST", "/api/v1/campaigns", k, text)
            .await
            .assert_error(400, "INVALID_REQUEST");
    }
    let r = send_text(
        "POST",
        "/api/v1/campaigns",
        k,
        r#"{"name": "A", "commissionType": "PERCENTAGE", "commissionValue": 5, "metadata": {"k": "1"}}"#,
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
}

#[tokio::test]
async fn static_documents_are_served_with_caching_while_the_store_is_unreachable() {
    let s = stalled_server();
    let r = crate::support::raw(&s.base, "GET", "/api/v1/openapi.json", None, &[], None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.header("cache-control"), Some("public, max-age=300"));
    assert_eq!(
        r.header("ratelimit-limit"),
        None,
        "no DynamoDB-backed limit"
    );
    let doc: serde_json::Value = serde_json::from_str(public::OPENAPI_JSON).unwrap();
    assert_eq!(r.body, doc);

    let client = crate::support::http_client();
    let r = client
        .get(format!("{}/tracker.js", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "public, max-age=300");
    assert!(r.text().await.unwrap().contains("consent"));

    // The same server does need the store for anything else.
    let r = crate::support::raw(
        &s.base,
        "GET",
        "/api/v1/campaigns/cmp_01JD0000000000000000000000/public",
        None,
        &[],
        None,
    )
    .await;
    r.assert_error(503, "SERVICE_UNAVAILABLE");
}

#[tokio::test]
async fn every_response_is_nosniff_and_authenticated_ones_are_no_store() {
    use crate::support::{call, raw, server};
    let m = crate::support::merchant().await;
    let k = Some(m.test_key.as_str());
    let created = call("POST", "/api/v1/campaigns", k, Some(campaign_body("h"))).await;
    assert_eq!(created.status, 201);
    let one = format!(
        "/api/v1/campaigns/{}",
        created.data()["id"].as_str().unwrap()
    );
    let authenticated = [
        created,
        call("GET", "/api/v1/campaigns", k, None).await,
        call("GET", &one, k, None).await,
        call(
            "GET",
            "/api/v1/campaigns/cmp_01JD0000000000000000000000",
            k,
            None,
        )
        .await,
        call("POST", "/api/v1/campaigns", k, Some(json!({}))).await,
        call("GET", "/api/v1/campaigns", Some("rk_test_nope"), None).await,
        call("GET", "/api/v1/campaigns", None, None).await,
    ];
    for r in &authenticated {
        assert_eq!(
            r.header("x-content-type-options"),
            Some("nosniff"),
            "{:?}",
            r.body
        );
        assert_eq!(r.header("cache-control"), Some("no-store"), "{:?}", r.body);
    }
    let base = &server().base;
    let public = [
        raw(base, "GET", "/api/v1/openapi.json", None, &[], None).await,
        raw(base, "OPTIONS", "/api/v1/track/click", None, &[], None).await,
        call("POST", "/api/v1/track/click", None, Some(json!({}))).await,
        call("GET", "/api/v1/nowhere", None, None).await,
        call("DELETE", "/api/v1/openapi.json", None, None).await,
    ];
    for r in &public {
        assert_eq!(
            r.header("x-content-type-options"),
            Some("nosniff"),
            "{}",
            r.status
        );
        assert_ne!(r.header("cache-control"), Some("no-store"), "{}", r.status);
    }
    for path in ["/tracker.js", "/demo/landing"] {
        let r = raw(base, "GET", path, None, &[], None).await;
        assert_eq!(
            r.header("x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
    }
}

/// The functions' SDK settings, built without aws-config, make real calls:
/// they answer from DynamoDB Local, and a black hole still fails within the
/// configured timeouts (the sleep and time sources the SDK needs are there).
#[tokio::test]
async fn the_functions_sdk_settings_call_dynamodb_and_time_out() {
    let config = test_config();
    let client = |endpoint: &str, config: &Config| {
        let sdk = api::store::sdk::plain_config(config, |_| None);
        aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(&sdk)
                .endpoint_url(endpoint)
                .build(),
        )
    };
    let endpoint = config.dynamodb_endpoint.clone().unwrap();
    let listed = client(&endpoint, &config).list_tables().send().await;
    assert!(listed.is_ok(), "{listed:?}");

    let mut stalled = config.clone();
    stalled.sdk_timeouts = short_timeouts(Duration::from_secs(2));
    let err = client(&black_hole(), &stalled)
        .list_tables()
        .send()
        .await
        .expect_err("nothing answers");
    assert!(
        matches!(err, aws_sdk_dynamodb::error::SdkError::TimeoutError(_)),
        "{err:?}"
    );
}

#[tokio::test]
async fn an_id_that_is_no_text_is_not_found_on_every_kind_of_route() {
    let base = &crate::support::server().base;
    let m = crate::support::merchant().await;
    for (method, path, key) in [
        ("GET", "/api/v1/campaigns/%ff/public", None),
        ("POST", "/api/v1/integrations/%ff/events", None),
        ("GET", "/api/v1/payouts/%c3%28", Some(m.test_key.as_str())),
        ("GET", "/api/v1/affiliates/x%80y", Some(m.test_key.as_str())),
    ] {
        let r = call_on(base, method, path, key, None).await;
        r.assert_error(404, "NOT_FOUND");
        assert!(r.header("x-request-id").is_some(), "{path}");
    }
}
