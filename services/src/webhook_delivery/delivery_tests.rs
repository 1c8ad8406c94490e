//! Delivery against real HTTP receivers on loopback.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::*;
use domain::webhook_signature::{headers, Secret};

/// What a test receiver saw of one request.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    headers: http::HeaderMap,
    body: Vec<u8>,
}

/// What a test receiver answers to every request.
#[derive(Clone)]
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
}

fn reply(status: u16, body: &str) -> Reply {
    Reply {
        status,
        headers: Vec::new(),
        body: body.to_string(),
    }
}

type Log = Arc<Mutex<Vec<Received>>>;

/// Starts an HTTP/1.1 receiver on a loopback port; returns its address and
/// the log of what it received.
async fn receiver(answer: Reply) -> (SocketAddr, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log: Log = Arc::default();
    let seen = Arc::clone(&log);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (seen, answer) = (Arc::clone(&seen), answer.clone());
            let service = service_fn(move |req: Request<Incoming>| {
                let (seen, answer) = (Arc::clone(&seen), answer.clone());
                async move { Ok::<_, Infallible>(handle(req, &seen, &answer).await) }
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, log)
}

async fn handle(req: Request<Incoming>, seen: &Log, answer: &Reply) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    let headers = req.headers().clone();
    let body = req.into_body().collect().await.unwrap().to_bytes().to_vec();
    seen.lock().unwrap().push(Received {
        path,
        headers,
        body,
    });
    let mut response = Response::builder().status(answer.status);
    for (name, value) in &answer.headers {
        response = response.header(*name, value);
    }
    response
        .body(Full::new(Bytes::from(answer.body.clone())))
        .unwrap()
}

/// A target as the SSRF guard returns it for a loopback URL.
fn target(url: &str, addrs: &[SocketAddr]) -> Target {
    Target {
        url: url.parse().unwrap(),
        addrs: addrs.to_vec(),
    }
}

fn local(addr: SocketAddr) -> Target {
    target(&format!("http://{addr}/hook"), &[addr])
}

const BODY: &str = r#"{"id":"evt_1","type":"payout.paid","timestamp":"2026-11-22T10:00:00.000Z","data":{"id":"po_1"}}"#;

fn signed(secret: &Secret) -> Vec<(&'static str, String)> {
    headers(
        "evt_1",
        chrono::Utc::now().timestamp(),
        BODY.as_bytes(),
        &[secret],
    )
}

async fn post(deliverer: &Deliverer, target: &Target) -> AttemptResult {
    let pairs = signed(&Secret::generate());
    deliverer
        .post(target, &pairs, BODY.as_bytes().to_vec())
        .await
}

#[tokio::test]
async fn a_2xx_answer_is_delivered_with_headers_and_body_intact() {
    let (addr, log) = receiver(reply(200, "thanks")).await;
    let secret = Secret::generate();
    let pairs = signed(&secret);
    let deliverer = Deliverer::new().unwrap();
    let result = deliverer
        .post(&local(addr), &pairs, BODY.as_bytes().to_vec())
        .await;

    assert_eq!(result.verdict, Verdict::Delivered);
    assert_eq!(result.status, Some(200));
    assert_eq!(result.error, None);
    assert_eq!(result.response_excerpt.as_deref(), Some("thanks"));

    let received = log.lock().unwrap().clone();
    assert_eq!(received.len(), 1);
    let got = &received[0];
    assert_eq!(got.path, "/hook");
    assert_eq!(got.body, BODY.as_bytes());
    for (name, value) in &pairs {
        assert_eq!(got.headers.get(*name).unwrap(), value.as_str(), "{name}");
    }
    assert!(got.headers["user-agent"]
        .to_str()
        .unwrap()
        .starts_with("referrals-webhooks/"));
    let webhook = standardwebhooks::Webhook::new(&secret.to_text()).unwrap();
    webhook.verify(&got.body, &got.headers).unwrap();
}

#[tokio::test]
async fn server_errors_are_retried_and_410_means_gone() {
    let deliverer = Deliverer::new().unwrap();
    let cases = [
        (500, Verdict::Retry),
        (503, Verdict::Retry),
        (404, Verdict::Retry),
        (410, Verdict::Gone),
        (201, Verdict::Delivered),
        (204, Verdict::Delivered),
    ];
    for (status, expected) in cases {
        let (addr, log) = receiver(reply(status, "")).await;
        let result = post(&deliverer, &local(addr)).await;
        assert_eq!(result.verdict, expected, "{status}");
        assert_eq!(result.status, Some(status));
        assert_eq!(result.error, None);
        assert_eq!(log.lock().unwrap().len(), 1);
    }
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let (elsewhere, elsewhere_log) = receiver(reply(200, "")).await;
    let mut moved = reply(302, "");
    moved
        .headers
        .push(("location", format!("http://{elsewhere}/stolen")));
    let (addr, log) = receiver(moved).await;

    let result = post(&Deliverer::new().unwrap(), &local(addr)).await;
    assert_eq!(result.verdict, Verdict::Retry);
    assert_eq!(result.status, Some(302));
    assert_eq!(log.lock().unwrap().len(), 1);
    assert!(elsewhere_log.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_receiver_that_never_answers_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // Accepts and holds the connections without ever answering.
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let deliverer = Deliverer::with_timeout(Duration::from_secs(1)).unwrap();
    let result = post(&deliverer, &local(addr)).await;
    assert_eq!(result.verdict, Verdict::Retry);
    assert_eq!(result.status, None);
    assert_eq!(result.error.as_deref(), Some("timed out after 1s"));
}

#[tokio::test]
async fn a_refused_connection_is_retried() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    // The listener is dropped: nothing listens on the port any more.
    let result = post(&Deliverer::new().unwrap(), &local(addr)).await;
    assert_eq!(result.verdict, Verdict::Retry);
    assert_eq!(result.status, None);
    let error = result.error.unwrap();
    assert!(error.starts_with("connection failed"), "{error}");
    assert!(!error.contains("/hook"), "{error}");
}

#[tokio::test]
async fn a_host_name_connects_to_its_checked_addresses_only() {
    let (addr, log) = receiver(reply(200, "")).await;
    let deliverer = Deliverer::new().unwrap();
    // `.invalid` never resolves: reaching the receiver proves the pin was used.
    let url = format!("http://hooks.example.invalid:{}/hook", addr.port());
    let result = post(&deliverer, &target(&url, &[addr])).await;
    assert_eq!(result.verdict, Verdict::Delivered);
    assert_eq!(log.lock().unwrap().len(), 1);

    let unchecked = format!("http://other.example.invalid:{}/hook", addr.port());
    let result = post(&deliverer, &target(&unchecked, &[])).await;
    assert_eq!(result.verdict, Verdict::Retry);
    assert!(result.error.unwrap().contains("no checked address"));
    assert_eq!(log.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn only_the_first_kilobyte_of_the_answer_is_kept() {
    let (addr, _log) = receiver(reply(400, &"é".repeat(4000))).await;
    let result = post(&Deliverer::new().unwrap(), &local(addr)).await;
    assert_eq!(result.verdict, Verdict::Retry);
    let excerpt = result.response_excerpt.unwrap();
    assert_eq!(excerpt, "é".repeat(EXCERPT_LIMIT / 2));
}

#[test]
fn truncation_keeps_whole_characters() {
    let cases = [
        ("abc", 5, "abc"),
        ("abcdef", 3, "abc"),
        ("aé", 2, "a"),
        ("", 0, ""),
    ];
    for (text, limit, expected) in cases {
        let mut s = text.to_string();
        truncate(&mut s, limit);
        assert_eq!(s, expected, "{text:?} {limit}");
    }
}

#[test]
fn verdicts_follow_the_status() {
    let cases = [
        (200, Verdict::Delivered),
        (299, Verdict::Delivered),
        (300, Verdict::Retry),
        (302, Verdict::Retry),
        (410, Verdict::Gone),
        (429, Verdict::Retry),
        (199, Verdict::Retry),
    ];
    for (status, expected) in cases {
        assert_eq!(verdict(status), expected, "{status}");
    }
}
