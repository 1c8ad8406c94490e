//! How long a webhook takes from a change's commit to its receiver, through
//! the local host's stream consumer (as `refctl serve` runs it), as a ratio
//! to the change's own response time: the median of 100 postbacks.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Method;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

use crate::Bench;

/// Arrival time of each delivery, by the conversion id its data names.
type Arrivals = Arc<Mutex<HashMap<String, Instant>>>;

async fn receive(
    req: hyper::Request<Incoming>,
    arrivals: Arrivals,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let at = Instant::now();
    if let Ok(body) = req.into_body().collect().await {
        if let Ok(v) = serde_json::from_slice::<Value>(&body.to_bytes()) {
            if let (Some(id), Ok(mut a)) = (v["data"]["id"].as_str(), arrivals.lock()) {
                a.entry(id.to_string()).or_insert(at);
            }
        }
    }
    Ok(hyper::Response::new(Full::new(Bytes::new())))
}

/// A receiver on loopback that records arrivals; its URL.
async fn receiver(arrivals: Arrivals) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let arrivals = arrivals.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req| receive(req, arrivals.clone()));
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    format!("http://{addr}/hook")
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// 100 postbacks with a subscribed endpoint; prints the medians' ratio.
pub async fn report(b: &mut Bench, key: &str, code: &str) {
    let arrivals: Arrivals = Arc::default();
    let url = receiver(arrivals.clone()).await;
    api::services::local_webhooks::spawn(b.app.clone());
    let body = json!({"url": url, "eventTypes": ["conversion.created"]});
    let (s, out) = b
        .send(
            Method::POST,
            "/api/v1/webhook-endpoints",
            Some(key),
            Some(&body),
        )
        .await;
    assert_eq!(s, 201, "webhook endpoint: {out}");
    let mut sent = Vec::new();
    for i in 0..100 {
        let sale = json!({"amount": 10, "currency": "USD", "externalId": format!("bench-hook-{}-{i}", ulid::Ulid::new()),
            "conversionType": "SALE", "affiliateCode": code});
        let t0 = Instant::now();
        let (s, out) = b
            .send(
                Method::POST,
                "/api/v1/conversions/postback",
                Some(key),
                Some(&sale),
            )
            .await;
        let t1 = Instant::now();
        assert_eq!(s, 201, "{out}");
        sent.push((out["data"]["id"].as_str().unwrap().to_string(), t0, t1));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while arrivals.lock().unwrap().len() < sent.len() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let arrived = arrivals.lock().unwrap().clone();
    let response: Vec<Duration> = sent.iter().map(|(_, t0, t1)| *t1 - *t0).collect();
    let delivery: Vec<Duration> = sent
        .iter()
        .filter_map(|(id, _, t1)| arrived.get(id).map(|at| at.saturating_duration_since(*t1)))
        .collect();
    println!(
        "Webhook delivery, commit to receiver, through the local stream consumer: {} of {} delivered; median {:.1}x the postback's own median response time.",
        delivery.len(),
        sent.len(),
        median(delivery).as_secs_f64() / median(response).as_secs_f64().max(1e-6)
    );
}
