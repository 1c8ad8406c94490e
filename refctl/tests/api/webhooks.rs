//! Events and webhooks end to end: real HTTP receivers on loopback, the
//! local host's stream consumer and retry sweep, signatures checked with the
//! official Standard Webhooks library.

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use standardwebhooks::Webhook;
use tokio::net::TcpListener;

use crate::support::{call, call_on, merchant, server, strict_webhooks_server, Merchant};

/// How long any wait for a delivery may last before the test fails.
const DEADLINE: Duration = Duration::from_secs(120);
/// How long a test watches for deliveries that must not come: past a
/// retry delay (1 s) and an idle sweep period (5 s) of the test servers.
const QUIET: Duration = Duration::from_secs(7);

/// What a receiver answers.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Status(u16),
    /// Never answers (the delivery times out).
    Hang,
}

/// One request a receiver got.
#[derive(Debug, Clone)]
struct Received {
    headers: http::HeaderMap,
    body: Vec<u8>,
}

impl Received {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    fn header(&self, name: &str) -> &str {
        self.headers.get(name).unwrap().to_str().unwrap()
    }
}

#[derive(Default)]
struct Log {
    received: Vec<Received>,
    /// Answers given first, in order; then `then`.
    first: VecDeque<Answer>,
    then: Option<Answer>,
}

/// A webhook receiver on a loopback port that records every request.
#[derive(Clone)]
struct Receiver {
    addr: SocketAddr,
    log: Arc<Mutex<Log>>,
}

impl Receiver {
    /// Answers `first` in order, then `then` to every later request.
    async fn start(first: &[Answer], then: Answer) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Log {
            received: Vec::new(),
            first: first.iter().copied().collect(),
            then: Some(then),
        }));
        let shared = Arc::clone(&log);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let log = Arc::clone(&shared);
                let service = service_fn(move |req: Request<Incoming>| {
                    let log = Arc::clone(&log);
                    async move { Ok::<_, Infallible>(answer(req, &log).await) }
                });
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Receiver { addr, log }
    }

    async fn ok() -> Receiver {
        Receiver::start(&[], Answer::Status(200)).await
    }

    fn url(&self) -> String {
        format!("http://{}/hooks", self.addr)
    }

    fn received(&self) -> Vec<Received> {
        self.log.lock().unwrap().received.clone()
    }

    /// How many requests carried each `webhook-id`.
    fn counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for r in self.received() {
            *counts
                .entry(r.header("webhook-id").to_string())
                .or_default() += 1;
        }
        counts
    }

    /// Waits until `done` holds for what was received, or fails the test.
    async fn wait(&self, what: &str, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let start = Instant::now();
        loop {
            let got = self.received();
            if done(&got) {
                return got;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "timed out waiting for {what}; got {} requests",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn wait_for(&self, n: usize) -> Vec<Received> {
        self.wait(&format!("{n} requests"), |r| r.len() >= n).await
    }

    /// Waits for a request of event `id` and returns it.
    async fn wait_event(&self, id: &str) -> Received {
        let got = self
            .wait(&format!("event {id}"), |r| {
                r.iter().any(|x| x.header("webhook-id") == id)
            })
            .await;
        got.into_iter()
            .find(|x| x.header("webhook-id") == id)
            .unwrap()
    }
}

async fn answer(req: Request<Incoming>, log: &Mutex<Log>) -> Response<Full<Bytes>> {
    let headers = req.headers().clone();
    let body = req.into_body().collect().await.unwrap().to_bytes().to_vec();
    let reply = {
        let mut log = log.lock().unwrap();
        log.received.push(Received { headers, body });
        let next = log.first.pop_front();
        next.or(log.then).unwrap_or(Answer::Status(200))
    };
    match reply {
        Answer::Status(status) => Response::builder()
            .status(status)
            .body(Full::new(Bytes::from_static(b"ok")))
            .unwrap(),
        Answer::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Response::new(Full::new(Bytes::new()))
        }
    }
}

/// Creates an endpoint on the shared server; returns (id, secret).
async fn endpoint(key: &str, url: &str, types: Option<&[&str]>) -> (String, String) {
    let mut body = json!({ "url": url, "description": "test receiver" });
    if let Some(t) = types {
        body["eventTypes"] = json!(t);
    }
    let r = call("POST", "/api/v1/webhook-endpoints", Some(key), Some(body)).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let d = r.data();
    (
        d["id"].as_str().unwrap().to_string(),
        d["secret"].as_str().unwrap().to_string(),
    )
}

/// An unattributed postback; returns the conversion id.
async fn postback(key: &str) -> String {
    let body = json!({
        "amount": 25, "currency": "USD", "conversionType": "SALE",
        "externalId": format!("wh_{}", ulid::Ulid::new()),
    });
    let r = call(
        "POST",
        "/api/v1/conversions/postback",
        Some(key),
        Some(body),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    r.data()["id"].as_str().unwrap().to_string()
}

/// The id of the event of `type` whose data is the record `record_id`.
async fn event_of(key: &str, event_type: &str, record_id: &str) -> String {
    let found = crate::support::events_about(&server().base, key, event_type, record_id).await;
    let e = found
        .first()
        .unwrap_or_else(|| panic!("no {event_type} event of {record_id}"));
    e["id"].as_str().unwrap().to_string()
}

/// The endpoint's attempts (newest first), once `done` holds for them.
async fn deliveries(
    key: &str,
    id: &str,
    query: &str,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let path = format!("/api/v1/webhook-endpoints/{id}/deliveries{query}");
        let r = call("GET", &path, Some(key), None).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        let list = r.data().as_array().unwrap().clone();
        if done(&list) {
            return list;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "deliveries never settled: {list:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn header_map(pairs: &[(&str, &str)]) -> http::HeaderMap {
    let mut map = http::HeaderMap::new();
    for (name, value) in pairs {
        map.insert(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    map
}

/// Verifies a received delivery with the official library, as a merchant would.
fn verifies(secret: &str, body: &[u8], headers: &http::HeaderMap) -> bool {
    Webhook::new(secret).unwrap().verify(body, headers).is_ok()
}

#[tokio::test]
async fn a_postback_is_delivered_signed_as_standard_webhooks_verify_it() {
    let m = merchant().await;
    let rx = Receiver::ok().await;
    let (whe, secret) = endpoint(&m.test_key, &rx.url(), Some(&["conversion.created"])).await;
    assert!(secret.starts_with("whsec_"));
    let cnv = postback(&m.test_key).await;
    let evt = event_of(&m.test_key, "conversion.created", &cnv).await;
    let got = rx.wait_event(&evt).await;

    let body = got.json();
    assert_eq!(body["id"], evt.as_str());
    assert_eq!(body["type"], "conversion.created");
    assert_eq!(body["data"]["id"], cnv.as_str());
    let keys: Vec<_> = body.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["id", "type", "timestamp", "data"]);
    let stored = call(
        "GET",
        &format!("/api/v1/events/{evt}"),
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(stored.data()["createdAt"], body["timestamp"]);
    assert_eq!(stored.data()["data"], body["data"]);
    assert_eq!(got.header("content-type"), "application/json");
    let ts: i64 = got.header("webhook-timestamp").parse().unwrap();
    assert!((chrono::Utc::now().timestamp() - ts).abs() < 60);
    assert_eq!(got.header("webhook-signature").split(' ').count(), 1);

    assert!(verifies(&secret, &got.body, &got.headers));
    let (_, other) = endpoint(&m.test_key, &rx.url(), Some(&["payout.paid"])).await;
    assert!(!verifies(&other, &got.body, &got.headers), "wrong secret");
    let changed = String::from_utf8(got.body.clone())
        .unwrap()
        .replace("25", "2500");
    assert!(
        !verifies(&secret, changed.as_bytes(), &got.headers),
        "changed body"
    );
    for shift in [-6 * 60, 6 * 60] {
        let mut headers = got.headers.clone();
        headers.insert(
            "webhook-timestamp",
            (ts + shift).to_string().parse().unwrap(),
        );
        assert!(!verifies(&secret, &got.body, &headers), "timestamp {shift}");
    }

    let list = deliveries(&m.test_key, &whe, "", |l| !l.is_empty()).await;
    assert_eq!(list[0]["eventId"], evt.as_str());
    assert_eq!(list[0]["eventType"], "conversion.created");
    assert_eq!(list[0]["status"], "SUCCEEDED");
    assert_eq!(list[0]["attempt"], 1);
    assert_eq!(list[0]["responseStatus"], 200);
    assert!(list[0]["nextAttemptAt"].is_null());
    assert!(list[0]["id"].as_str().unwrap().starts_with("dlv_"));

    // The secret appears in no read.
    let secret_body = &secret[6..];
    for path in [
        format!("/api/v1/webhook-endpoints/{whe}"),
        "/api/v1/webhook-endpoints".to_string(),
        format!("/api/v1/webhook-endpoints/{whe}/deliveries"),
        "/api/v1/events".to_string(),
    ] {
        let r = call("GET", &path, Some(&m.test_key), None).await;
        assert_eq!(r.status, 200, "{path}");
        assert!(!r.body.to_string().contains(secret_body), "{path}");
        assert!(!r.body.to_string().contains("whsec_"), "{path}");
    }
}

#[tokio::test]
async fn server_errors_are_retried_until_delivered_once() {
    let m = merchant().await;
    let rx = Receiver::start(
        &[Answer::Status(500), Answer::Status(500)],
        Answer::Status(200),
    )
    .await;
    let (whe, _) = endpoint(&m.test_key, &rx.url(), None).await;
    let cnv = postback(&m.test_key).await;
    let evt = event_of(&m.test_key, "conversion.created", &cnv).await;
    let got = rx.wait_for(3).await;
    assert!(got.iter().all(|r| r.header("webhook-id") == evt));
    let query = format!("?event_id={evt}");
    let list = deliveries(&m.test_key, &whe, &query, |l| l.len() >= 3).await;
    let seen: Vec<_> = list
        .iter()
        .map(|d| {
            (
                d["attempt"].as_u64().unwrap(),
                d["status"].as_str().unwrap(),
                d["responseStatus"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (3, "SUCCEEDED", 200),
            (2, "FAILED", 500),
            (1, "FAILED", 500)
        ]
    );
    // Each failed attempt names when the retry that followed it was due.
    assert!(list[1]["nextAttemptAt"].is_string());
    assert!(list[2]["nextAttemptAt"].is_string());
    assert!(list[0]["nextAttemptAt"].is_null());
    let failed = deliveries(&m.test_key, &whe, "?status=FAILED", |l| l.len() >= 2).await;
    assert_eq!(failed.len(), 2);
    assert!(failed.iter().all(|d| d["responseStatus"] == 500));
    // No attempt is PENDING: every listed attempt was made.
    let pending = call(
        "GET",
        &format!("/api/v1/webhook-endpoints/{whe}/deliveries?status=PENDING"),
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(pending.status, 200);
    assert_eq!(pending.data().as_array().unwrap().len(), 0);
    tokio::time::sleep(QUIET).await;
    assert_eq!(rx.received().len(), 3, "delivered once, then left alone");
}

#[tokio::test]
async fn a_410_disables_the_endpoint_with_its_reason() {
    let m = merchant().await;
    let rx = Receiver::start(&[], Answer::Status(410)).await;
    let (whe, _) = endpoint(&m.test_key, &rx.url(), None).await;
    postback(&m.test_key).await;
    rx.wait_for(1).await;
    let path = format!("/api/v1/webhook-endpoints/{whe}");
    let start = Instant::now();
    let disabled = loop {
        let r = call("GET", &path, Some(&m.test_key), None).await;
        if r.data()["status"] == "DISABLED" {
            break r.data().clone();
        }
        assert!(start.elapsed() < DEADLINE, "{:?}", r.body);
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(disabled["disabledReason"].as_str().unwrap().contains("410"));
    let list = deliveries(&m.test_key, &whe, "", |l| !l.is_empty()).await;
    assert_eq!(
        (
            list[0]["status"].as_str(),
            list[0]["responseStatus"].as_u64()
        ),
        (Some("FAILED"), Some(410))
    );
    postback(&m.test_key).await;
    tokio::time::sleep(QUIET).await;
    assert_eq!(rx.received().len(), 1, "no attempt after the 410");
    // Re-enabling clears the reason; redeliveries need an enabled endpoint.
    let r = call(
        "PATCH",
        &path,
        Some(&m.test_key),
        Some(json!({"status": "ENABLED"})),
    )
    .await;
    assert_eq!(
        (r.status, r.data()["disabledReason"].is_null()),
        (200, true)
    );
}

#[tokio::test]
async fn a_receiver_that_never_answers_is_retried_then_failed() {
    let m = merchant().await;
    let rx = Receiver::start(&[], Answer::Hang).await;
    let (whe, _) = endpoint(&m.test_key, &rx.url(), None).await;
    postback(&m.test_key).await;
    // The first attempt and one per delay of the test schedule (1s,1s,1s).
    rx.wait_for(4).await;
    let list = deliveries(&m.test_key, &whe, "", |l| {
        l.len() >= 4 && l[0]["status"] == "FAILED"
    })
    .await;
    assert_eq!(list.len(), 4);
    assert_eq!(list[0]["attempt"], 4);
    assert!(list[0]["nextAttemptAt"].is_null());
    for d in &list {
        assert!(d["responseStatus"].is_null());
        assert!(d["error"].as_str().unwrap().contains("timed out"), "{d}");
    }
    tokio::time::sleep(QUIET).await;
    assert_eq!(rx.received().len(), 4, "no attempt after the last");
}

#[tokio::test]
async fn after_a_rotation_deliveries_carry_both_signatures() {
    let m = merchant().await;
    let rx = Receiver::ok().await;
    let (whe, old) = endpoint(&m.test_key, &rx.url(), None).await;
    let path = format!("/api/v1/webhook-endpoints/{whe}/rotate-secret");
    let r = call("POST", &path, Some(&m.test_key), None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let new = r.data()["secret"].as_str().unwrap().to_string();
    assert!(new.starts_with("whsec_") && new != old);
    let cnv = postback(&m.test_key).await;
    let evt = event_of(&m.test_key, "conversion.created", &cnv).await;
    let got = rx.wait_event(&evt).await;
    let signatures: Vec<&str> = got.header("webhook-signature").split(' ').collect();
    assert_eq!(signatures.len(), 2);
    let (id, ts) = (got.header("webhook-id"), got.header("webhook-timestamp"));
    for (signature, secret, other) in [(signatures[0], &new, &old), (signatures[1], &old, &new)] {
        let one = header_map(&[
            ("webhook-id", id),
            ("webhook-timestamp", ts),
            ("webhook-signature", signature),
        ]);
        assert!(verifies(secret, &got.body, &one));
        assert!(!verifies(other, &got.body, &one));
    }
    assert!(verifies(&old, &got.body, &got.headers) && verifies(&new, &got.body, &got.headers));
}

#[tokio::test]
async fn redeliver_and_replay_send_exactly_the_asked_subscribed_events() {
    let m = merchant().await;
    let rx = Receiver::ok().await;
    let all = Receiver::ok().await;
    let from = api::domain::timestamp::format(&chrono::Utc::now());
    let (whe, _) = endpoint(&m.test_key, &rx.url(), Some(&["conversion.created"])).await;
    let (_, _) = endpoint(&m.test_key, &all.url(), None).await;
    let mut created = Vec::new();
    for _ in 0..3 {
        let cnv = postback(&m.test_key).await;
        created.push(event_of(&m.test_key, "conversion.created", &cnv).await);
    }
    let r = call(
        "POST",
        &format!(
            "/api/v1/conversions/{}/reverse",
            cnv_of(&m, &created[0]).await
        ),
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    rx.wait_for(3).await;
    all.wait_for(4).await;
    let reversed = all
        .received()
        .iter()
        .find(|r| r.json()["type"] == "conversion.reversed")
        .unwrap()
        .header("webhook-id")
        .to_string();

    // Redeliver one event to one endpoint.
    let body = json!({"endpointId": whe});
    let r = call(
        "POST",
        &format!("/api/v1/events/{}/redeliver", created[1]),
        Some(&m.test_key),
        Some(body),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["deliveries"][0]["status"], "SUCCEEDED");
    rx.wait(&format!("{} twice", created[1]), |r| {
        r.iter()
            .filter(|x| x.header("webhook-id") == created[1])
            .count()
            == 2
    })
    .await;
    let r = call(
        "POST",
        &format!("/api/v1/events/{reversed}/redeliver"),
        Some(&m.test_key),
        Some(json!({"endpointId": whe})),
    )
    .await;
    r.assert_error(400, "VALIDATION_FAILED");

    // Replay the window: each conversion.created once more, never the reversal.
    let to = api::domain::timestamp::format(&chrono::Utc::now());
    let r = call(
        "POST",
        &format!("/api/v1/webhook-endpoints/{whe}/replay"),
        Some(&m.test_key),
        Some(json!({"from": from, "to": to})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["scheduled"], 3);
    rx.wait_for(7).await;
    tokio::time::sleep(QUIET).await;
    let counts = rx.counts();
    let expected: BTreeMap<String, usize> = [
        (created[0].clone(), 2),
        (created[1].clone(), 3),
        (created[2].clone(), 2),
    ]
    .into();
    assert_eq!(counts, expected);
    assert_eq!(
        all.received().len(),
        4,
        "the other endpoint got nothing again"
    );
}

/// The conversion id an event names.
async fn cnv_of(m: &Merchant, event_id: &str) -> String {
    let r = call(
        "GET",
        &format!("/api/v1/events/{event_id}"),
        Some(&m.test_key),
        None,
    )
    .await;
    r.data()["data"]["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn event_types_choose_what_an_endpoint_gets() {
    let m = merchant().await;
    let reversals = Receiver::ok().await;
    let everything = Receiver::ok().await;
    endpoint(
        &m.test_key,
        &reversals.url(),
        Some(&["conversion.reversed"]),
    )
    .await;
    endpoint(&m.test_key, &everything.url(), Some(&["*"])).await;
    let cnv = postback(&m.test_key).await;
    everything.wait_for(1).await;
    let r = call(
        "POST",
        &format!("/api/v1/conversions/{cnv}/reverse"),
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let got = reversals.wait_for(1).await;
    assert_eq!(got[0].json()["type"], "conversion.reversed");
    everything.wait_for(2).await;
    tokio::time::sleep(QUIET).await;
    assert_eq!(reversals.received().len(), 1);
    let types: Vec<Value> = everything
        .received()
        .iter()
        .map(|r| r.json()["type"].clone())
        .collect();
    assert_eq!(types.len(), 2);
    assert!(
        types.contains(&json!("conversion.created"))
            && types.contains(&json!("conversion.reversed"))
    );
}

#[tokio::test]
async fn internal_urls_are_refused_without_the_local_setting() {
    let base = &strict_webhooks_server().base;
    let m = crate::support::merchant_on(strict_webhooks_server()).await;
    let refused = [
        "https://169.254.169.254/",
        "http://10.0.0.1/",
        "https://[::1]/",
        "https://localhost/",
        "http://127.0.0.1:9/hooks",
    ];
    for (url, key) in refused
        .iter()
        .flat_map(|u| [(u, &m.test_key), (u, &m.live_key)])
    {
        let r = call_on(
            base,
            "POST",
            "/api/v1/webhook-endpoints",
            Some(key),
            Some(json!({"url": url})),
        )
        .await;
        r.assert_error(400, "VALIDATION_FAILED");
        assert_eq!(
            r.body["error"]["details"][0]["path"],
            json!(["url"]),
            "{url}"
        );
    }
    // The shared test server allows loopback; a PATCH is checked the same way.
    let m = merchant().await;
    let (whe, _) = endpoint(&m.test_key, "http://127.0.0.1:9/hooks", None).await;
    let r = call(
        "PATCH",
        &format!("/api/v1/webhook-endpoints/{whe}"),
        Some(&m.test_key),
        Some(json!({"url": "https://169.254.169.254/"})),
    )
    .await;
    r.assert_error(400, "VALIDATION_FAILED");
}

#[tokio::test]
async fn test_mode_events_reach_test_mode_endpoints_only() {
    let m = merchant().await;
    let test_rx = Receiver::ok().await;
    let live_rx = Receiver::ok().await;
    endpoint(&m.test_key, &test_rx.url(), None).await;
    endpoint(&m.live_key, &live_rx.url(), None).await;
    let test_cnv = postback(&m.test_key).await;
    let live_cnv = postback(&m.live_key).await;
    let t = test_rx.wait_for(1).await;
    let l = live_rx.wait_for(1).await;
    assert_eq!(t[0].json()["data"]["id"], test_cnv.as_str());
    assert_eq!(l[0].json()["data"]["id"], live_cnv.as_str());
    tokio::time::sleep(QUIET).await;
    assert_eq!((test_rx.received().len(), live_rx.received().len()), (1, 1));
}

#[tokio::test]
async fn another_accounts_or_modes_ids_are_not_found() {
    let owner = merchant().await;
    let other = merchant().await;
    let rx = Receiver::ok().await;
    let (whe, _) = endpoint(&owner.test_key, &rx.url(), None).await;
    let cnv = postback(&owner.test_key).await;
    let evt = event_of(&owner.test_key, "conversion.created", &cnv).await;
    let ep = format!("/api/v1/webhook-endpoints/{whe}");
    let yesterday =
        api::domain::timestamp::format(&(chrono::Utc::now() - chrono::Duration::days(1)));
    let cases: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", ep.clone(), None),
        ("PATCH", ep.clone(), Some(json!({"description": "x"}))),
        ("DELETE", ep.clone(), None),
        ("POST", format!("{ep}/rotate-secret"), None),
        ("POST", format!("{ep}/test"), None),
        ("GET", format!("{ep}/deliveries"), None),
        (
            "POST",
            format!("{ep}/replay"),
            Some(json!({ "from": yesterday })),
        ),
        ("GET", format!("/api/v1/events/{evt}"), None),
        ("POST", format!("/api/v1/events/{evt}/redeliver"), None),
    ];
    for key in [&other.test_key, &owner.live_key] {
        for (method, path, body) in &cases {
            let r = call(method, path, Some(key), body.clone()).await;
            r.assert_error(404, "NOT_FOUND");
        }
    }
    let r = call(
        "POST",
        &format!("/api/v1/events/{evt}/redeliver"),
        Some(&owner.test_key),
        Some(json!({"endpointId": whe})),
    )
    .await;
    assert_eq!(r.status, 200, "the owner still can: {:?}", r.body);
    let r = call("GET", &ep, Some(&owner.test_key), None).await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn endpoints_are_managed_and_tested_and_events_listed() {
    let m = merchant().await;
    let rx = Receiver::ok().await;
    let (whe, secret) = endpoint(&m.test_key, &rx.url(), Some(&["payout.paid"])).await;
    let ep = format!("/api/v1/webhook-endpoints/{whe}");
    let r = call(
        "PATCH",
        &ep,
        Some(&m.test_key),
        Some(json!({"eventTypes": ["payout.paid", "conversion.created"], "description": null})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        r.data()["eventTypes"],
        json!(["payout.paid", "conversion.created"])
    );
    assert!(r.data()["description"].is_null() && r.data().get("secret").is_none());
    let r = call(
        "PATCH",
        &ep,
        Some(&m.test_key),
        Some(json!({"secret": "whsec_x"})),
    )
    .await;
    r.assert_error(400, "VALIDATION_FAILED");

    let r = call("POST", &format!("{ep}/test"), Some(&m.test_key), None).await;
    assert_eq!(
        (r.status, r.data()["status"].as_str()),
        (200, Some("SUCCEEDED")),
        "{:?}",
        r.body
    );
    let got = rx.wait_for(1).await;
    assert_eq!(got[0].json()["type"], "webhook.test");
    assert!(verifies(&secret, &got[0].body, &got[0].headers));
    let test_id = got[0].header("webhook-id").to_string();
    let r = call(
        "GET",
        &format!("/api/v1/events/{test_id}"),
        Some(&m.test_key),
        None,
    )
    .await;
    r.assert_error(404, "NOT_FOUND");

    // Events: filters, pages, cursor.
    for _ in 0..3 {
        postback(&m.test_key).await;
    }
    let r = call(
        "GET",
        "/api/v1/events?type=conversion.created&limit=2",
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        (
            r.data().as_array().unwrap().len(),
            r.body["meta"]["hasMore"].as_bool()
        ),
        (2, Some(true))
    );
    let cursor = r.body["meta"]["nextCursor"].as_str().unwrap().to_string();
    let r = call(
        "GET",
        &format!("/api/v1/events?type=conversion.created&limit=2&cursor={cursor}"),
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(r.data().as_array().unwrap().len(), 1);
    let r = call(
        "GET",
        "/api/v1/events?type=payout.paid",
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(r.data().as_array().unwrap().len(), 0);
    let r = call(
        "GET",
        "/api/v1/events?from=2020-01-01&to=2020-01-02",
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(r.data().as_array().unwrap().len(), 0);
    for bad in [
        "type=nope",
        "from=2026-02-02&to=2026-02-01",
        "offset=1&cursor=x",
        "limit=0",
    ] {
        let r = call(
            "GET",
            &format!("/api/v1/events?{bad}"),
            Some(&m.test_key),
            None,
        )
        .await;
        r.assert_error(400, "VALIDATION_FAILED");
    }
    let r = call(
        "POST",
        &format!("{ep}/replay"),
        Some(&m.test_key),
        Some(json!({"from": "2020-01-01"})),
    )
    .await;
    r.assert_error(400, "VALIDATION_FAILED");

    // DELETE removes it for good.
    let r = call("DELETE", &ep, Some(&m.test_key), None).await;
    assert_eq!(
        (
            r.status,
            r.data()["deleted"].as_bool(),
            r.data()["id"].as_str()
        ),
        (200, Some(true), Some(whe.as_str()))
    );
    call("GET", &ep, Some(&m.test_key), None)
        .await
        .assert_error(404, "NOT_FOUND");
    let r = call("GET", "/api/v1/webhook-endpoints", Some(&m.test_key), None).await;
    assert!(r.data().as_array().unwrap().is_empty());
}

#[tokio::test]
async fn concurrent_postbacks_are_each_delivered_exactly_once() {
    let m = merchant().await;
    let rx = Receiver::ok().await;
    endpoint(&m.test_key, &rx.url(), Some(&["conversion.created"])).await;
    // All 200 at once, at most 25 in flight, so the suite's other tests
    // keep their share of DynamoDB Local.
    let gate = Arc::new(tokio::sync::Semaphore::new(25));
    let mut tasks = Vec::new();
    for _ in 0..200 {
        let key = m.test_key.clone();
        let gate = Arc::clone(&gate);
        tasks.push(tokio::spawn(async move {
            let _permit = gate.acquire().await.unwrap();
            postback(&key).await
        }));
    }
    let mut conversions = Vec::new();
    for t in tasks {
        conversions.push(t.await.unwrap());
    }
    rx.wait("200 distinct events", |r| {
        r.iter()
            .map(|x| x.header("webhook-id"))
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            >= 200
    })
    .await;
    tokio::time::sleep(QUIET).await;
    let counts = rx.counts();
    assert_eq!(counts.len(), 200);
    assert!(counts.values().all(|n| *n == 1), "a delivery came twice");
    let delivered: std::collections::BTreeSet<String> = rx
        .received()
        .iter()
        .map(|r| r.json()["data"]["id"].as_str().unwrap().to_string())
        .collect();
    let made: std::collections::BTreeSet<String> = conversions.into_iter().collect();
    assert_eq!(delivered, made);
}

#[test]
fn the_test_servers_retry_on_the_short_schedule() {
    let schedule = &server().app.config.webhooks.retry_schedule;
    assert_eq!(schedule.max_attempts(), 4);
    assert!(server().app.config.webhooks.allow_local);
    assert!(!strict_webhooks_server().app.config.webhooks.allow_local);
}

#[tokio::test]
async fn a_redelivery_with_a_null_endpoint_goes_to_every_endpoint_as_without_it() {
    let m = merchant().await;
    let cnv = postback(&m.test_key).await;
    let evt = event_of(&m.test_key, "conversion.created", &cnv).await;
    let path = format!("/api/v1/events/{evt}/redeliver");
    // No endpoint received it: nothing to send, either way.
    for body in [json!({}), json!({"endpointId": null})] {
        let r = call("POST", &path, Some(&m.test_key), Some(body.clone())).await;
        assert_eq!(r.status, 200, "{body}: {:?}", r.body);
        assert_eq!(r.data()["deliveries"], json!([]), "{body}");
    }
}

/// Creates `n` endpoints at once with `key`; their answers' status codes
/// and error codes, sorted.
async fn create_at_once(key: &str, n: usize) -> Vec<(u16, String)> {
    let mut tasks = Vec::new();
    for i in 0..n {
        let key = key.to_string();
        tasks.push(tokio::spawn(async move {
            let body = json!({"url": format!("http://127.0.0.1:9/hook/{i}")});
            let r = call("POST", "/api/v1/webhook-endpoints", Some(&key), Some(body)).await;
            (r.status, r.code().to_string())
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out.sort();
    out
}

/// `n` answers of creates that were made.
fn made(n: usize) -> Vec<(u16, String)> {
    vec![(201, String::new()); n]
}

/// `n` answers of creates refused at the cap.
fn refused(n: usize) -> Vec<(u16, String)> {
    vec![(429, "LIMIT_EXCEEDED".to_string()); n]
}

/// How many endpoints the key's list holds.
async fn endpoint_count(key: &str) -> usize {
    let r = call(
        "GET",
        "/api/v1/webhook-endpoints?limit=100",
        Some(key),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.each("id").len()
}

#[tokio::test]
async fn an_account_holds_at_most_sixteen_endpoints_in_each_mode() {
    let m = merchant().await;
    // Twenty at once: sixteen are made, whatever the order.
    let got = create_at_once(&m.test_key, 20).await;
    assert_eq!(got, [made(16), refused(4)].concat());
    assert_eq!(endpoint_count(&m.test_key).await, 16);
    // The other mode counts its own.
    assert_eq!(create_at_once(&m.live_key, 1).await, made(1));
    // A delete makes room for one.
    let r = call(
        "GET",
        "/api/v1/webhook-endpoints?limit=1",
        Some(&m.test_key),
        None,
    )
    .await;
    let id = r.each("id")[0].as_str().unwrap().to_string();
    let path = format!("/api/v1/webhook-endpoints/{id}");
    assert_eq!(
        call("DELETE", &path, Some(&m.test_key), None).await.status,
        200
    );
    let got = create_at_once(&m.test_key, 2).await;
    assert_eq!(got, [made(1), refused(1)].concat());
    assert_eq!(endpoint_count(&m.test_key).await, 16);
}

#[tokio::test]
async fn endpoints_made_before_the_count_are_counted_from_the_list() {
    let m = merchant().await;
    assert_eq!(create_at_once(&m.test_key, 3).await, made(3));
    // An account whose endpoints predate the count has no count item.
    let app = crate::support::app_for(server()).await;
    let tenant =
        api::domain::tenant::Tenant::new(m.account_id.clone(), api::domain::tenant::Mode::Test);
    let pk = api::store::keys::webhook_endpoint_count(&tenant);
    app.store
        .delete(&pk, api::store::keys::RECORD_SK)
        .await
        .unwrap();
    let got = create_at_once(&m.test_key, 14).await;
    assert_eq!(got.iter().filter(|(s, _)| *s == 201).count(), 13);
    assert_eq!(got.iter().filter(|(s, _)| *s == 429).count(), 1);
    assert_eq!(endpoint_count(&m.test_key).await, 16);
}

#[tokio::test]
async fn a_count_the_list_contradicts_is_mended_at_the_cap() {
    let m = merchant().await;
    assert_eq!(create_at_once(&m.test_key, 16).await, made(16));
    // Two endpoints removed as a version without the count removed them:
    // the count still says 16.
    let app = crate::support::app_for(server()).await;
    let r = call(
        "GET",
        "/api/v1/webhook-endpoints?limit=2",
        Some(&m.test_key),
        None,
    )
    .await;
    for id in r.each("id") {
        let id = id.as_str().unwrap();
        app.store
            .delete(id, api::store::keys::RECORD_SK)
            .await
            .unwrap();
    }
    assert_eq!(endpoint_count(&m.test_key).await, 14);
    // At the cap the list is counted: two more are made, then no more.
    let mut got = Vec::new();
    for _ in 0..3 {
        got.extend(create_at_once(&m.test_key, 1).await);
    }
    assert_eq!(got[..2], made(2)[..]);
    assert_eq!(got[2], (429, "LIMIT_EXCEEDED".to_string()));
    assert_eq!(endpoint_count(&m.test_key).await, 16);
}

#[tokio::test]
async fn disabling_an_endpoint_drops_its_due_retries_and_says_so() {
    let m = merchant().await;
    let rx = Receiver::start(&[], Answer::Status(500)).await;
    let (whe, _) = endpoint(&m.test_key, &rx.url(), None).await;
    let cnv = postback(&m.test_key).await;
    let evt = event_of(&m.test_key, "conversion.created", &cnv).await;
    let query = format!("?event_id={evt}");
    let first = deliveries(&m.test_key, &whe, &query, |l| !l.is_empty()).await;
    assert!(
        first[0]["nextAttemptAt"].is_string(),
        "a retry is announced"
    );
    let path = format!("/api/v1/webhook-endpoints/{whe}");
    let r = call(
        "PATCH",
        &path,
        Some(&m.test_key),
        Some(json!({"status": "DISABLED"})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let made = rx.received().len();
    // The retry comes due while the endpoint is disabled: it is not made,
    // and the last attempt no longer announces it.
    let list = deliveries(&m.test_key, &whe, &query, |l| {
        l[0]["nextAttemptAt"].is_null()
    })
    .await;
    assert_eq!(list.len(), made, "{list:?}");
    assert_eq!(list[0]["status"], "FAILED");
    // Enabled again, the endpoint gets new events, not the dropped retry.
    let r = call(
        "PATCH",
        &path,
        Some(&m.test_key),
        Some(json!({"status": "ENABLED"})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    tokio::time::sleep(QUIET).await;
    assert_eq!(rx.received().len(), made, "no retry after enabling");
}
