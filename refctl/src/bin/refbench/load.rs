//! Throughput through the local host: 16 clients at a time, each on its own
//! keep-alive HTTP/1.1 connection, drive `refctl serve` (in this process, on
//! loopback) for a bounded time; then the same DynamoDB calls are issued
//! directly (the same store functions the handlers call, without HTTP,
//! routing, JSON or the envelope) at the same concurrency for the same time.
//! The ratio of the two rates is what the API layer costs.

use api::domain::ids::{new_id, IdKind};
use api::domain::timestamp;
use api::domain::tracking::Click;
use api::services::app::App;
use api::services::auth::Principal;
use api::services::{auth, rate_limit};
use api::store::{campaigns, clicks};
use api::wire::conversion::PostbackBody;
use bytes::Bytes;
use http::Method;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::Bench;

const CONCURRENCY: usize = 16;
const RUN: Duration = Duration::from_secs(8);

/// One request a client sends: method, path, key, body.
type Request = (Method, String, Option<String>, Option<Value>);

/// Sends requests on one connection until `until`; counts the 2xx answers.
async fn http_client(
    addr: std::net::SocketAddr,
    next: Arc<dyn Fn(usize, u64) -> Request + Send + Sync>,
    worker: usize,
    until: Instant,
) -> u64 {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let (mut ok, mut n) = (0, 0);
    while Instant::now() < until {
        n += 1;
        let (method, path, key, body) = next(worker, n);
        let mut req = http::Request::builder()
            .method(method)
            .uri(path)
            .header("host", "127.0.0.1");
        if let Some(k) = key {
            req = req.header("authorization", format!("Bearer {k}"));
        }
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        if !body.is_empty() {
            req = req.header("content-type", "application/json");
        }
        let req = req.body(Full::new(Bytes::from(body))).unwrap();
        sender.ready().await.expect("connection open");
        let resp = sender.send_request(req).await.expect("answer");
        let status = resp.status();
        let _ = resp.into_body().collect().await;
        if status.is_success() {
            ok += 1;
        }
    }
    ok
}

/// Runs `CONCURRENCY` copies of `work` for `RUN`; the rate of successes.
async fn rate<F, Fut>(work: F) -> f64
where
    F: Fn(usize, Instant) -> Fut,
    Fut: Future<Output = u64> + Send + 'static,
{
    let start = Instant::now();
    let until = start + RUN;
    let tasks: Vec<_> = (0..CONCURRENCY)
        .map(|w| tokio::spawn(work(w, until)))
        .collect();
    let mut done = 0;
    for t in tasks {
        done += t.await.expect("worker");
    }
    done as f64 / start.elapsed().as_secs_f64()
}

async fn api_rate(
    addr: std::net::SocketAddr,
    next: Arc<dyn Fn(usize, u64) -> Request + Send + Sync>,
) -> f64 {
    rate(|w, until| http_client(addr, next.clone(), w, until)).await
}

/// Loops `call` until `until`, counting successes.
async fn direct<F, Fut>(until: Instant, call: F) -> u64
where
    F: Fn(u64) -> Fut,
    Fut: Future<Output = bool>,
{
    let (mut ok, mut n) = (0, 0);
    while Instant::now() < until {
        n += 1;
        if call(n).await {
            ok += 1;
        }
    }
    ok
}

fn row(name: &str, api: f64, raw: f64) {
    println!(
        "| {name} | {api:.0} | {raw:.0} | {:.0}% |",
        100.0 * api / raw.max(1e-9)
    );
}

/// A request maker: (client, request number) -> request.
type Next = Arc<dyn Fn(usize, u64) -> Request + Send + Sync>;

/// Runs each side twice, alternating, and keeps each side's better rate, so
/// a burst of other work on the machine does not favour one side.
async fn compare<A, AF, R, RF>(api: A, raw: R) -> (f64, f64)
where
    A: Fn() -> AF,
    AF: Future<Output = f64>,
    R: Fn() -> RF,
    RF: Future<Output = f64>,
{
    let (mut best_api, mut best_raw) = (0f64, 0f64);
    for _ in 0..2 {
        best_api = best_api.max(api().await);
        best_raw = best_raw.max(raw().await);
    }
    (best_api, best_raw)
}

/// A campaign, 16 affiliates (one per client, so postbacks measure the path,
/// not one affiliate's hot items) and a warm click; then the three runs.
pub async fn report(b: &Bench, key: &str) {
    let app = b.app.clone();
    let campaign = prepare(b, key).await;
    let click = json!({"campaignId": campaign, "ref": "LOAD0"});
    let (s, out) = b
        .send(Method::POST, "/api/v1/track/click", None, Some(&click))
        .await;
    assert_eq!(s, 201, "{out}");
    let click_id = out["data"]["clickId"].as_str().unwrap();
    let template = clicks::get_live(&app.store, click_id, timestamp::now())
        .await
        .unwrap()
        .unwrap();

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(refctl::serve::serve(listener, app.clone()));

    println!(
        "Throughput through the local host: {CONCURRENCY} clients at a time, {} s per run, \
         the better of two runs per side (target: the API at least 80% of the direct rate \
         for clicks and GETs)",
        RUN.as_secs()
    );
    println!();
    println!("| requests | API per second | same calls direct per second | API ÷ direct |");
    println!("|---|---:|---:|---:|");

    let next: Next = Arc::new(move |_, _| {
        let path = "/api/v1/track/click".to_string();
        (Method::POST, path, None, Some(click.clone()))
    });
    let click_direct = |_, until| {
        let (app, c) = (app.clone(), template.clone());
        async move { direct(until, |_| click_direct(app.clone(), c.clone())).await }
    };
    let (api, raw) = compare(|| api_rate(addr, next.clone()), || rate(click_direct)).await;
    row("POST /track/click (warm)", api, raw);

    let (k, path) = (key.to_string(), format!("/api/v1/campaigns/{campaign}"));
    let next: Next = Arc::new(move |_, _| (Method::GET, path.clone(), Some(k.clone()), None));
    let get = |_, until| {
        let (app, key, campaign) = (app.clone(), key.to_string(), campaign.clone());
        async move {
            direct(until, |_| {
                get_direct(app.clone(), key.clone(), campaign.clone())
            })
            .await
        }
    };
    let (api, raw) = compare(|| api_rate(addr, next.clone()), || rate(get)).await;
    row("GET /campaigns/{id}", api, raw);

    let k = key.to_string();
    let next: Next = Arc::new(move |w, _| {
        let path = "/api/v1/conversions/postback".to_string();
        (Method::POST, path, Some(k.clone()), Some(postback_body(w)))
    });
    let post = |w, until| {
        let (app, key) = (app.clone(), key.to_string());
        async move { direct(until, |_| postback_direct(app.clone(), key.clone(), w)).await }
    };
    let (api, raw) = compare(|| api_rate(addr, next.clone()), || rate(post)).await;
    row("POST /conversions/postback (by code)", api, raw);
}

/// A public campaign and one affiliate per client; the campaign's id.
async fn prepare(b: &Bench, key: &str) -> String {
    let k = Some(key);
    let body = json!({"name": "Load", "commissionType": "PERCENTAGE", "commissionValue": 10, "isPublic": true});
    let (_, c) = b
        .send(Method::POST, "/api/v1/campaigns", k, Some(&body))
        .await;
    let campaign = c["data"]["id"].as_str().unwrap().to_string();
    for w in 0..CONCURRENCY {
        let aff = json!({"campaignId": campaign, "email": format!("load{w}@example.com"),
            "name": "Load", "code": format!("LOAD{w}")});
        let (s, out) = b
            .send(Method::POST, "/api/v1/affiliates", k, Some(&aff))
            .await;
        assert_eq!(s, 201, "{out}");
    }
    campaign
}

fn postback_body(worker: usize) -> Value {
    json!({"amount": 25, "currency": "USD", "conversionType": "SALE",
        "externalId": format!("load-{}", ulid::Ulid::new()), "affiliateCode": format!("LOAD{worker}")})
}

/// The calls of a warm click: the per-IP count with the flood count, then
/// the click.
async fn click_direct(app: Arc<App>, mut c: Click) -> bool {
    c.id = new_id(IdKind::Click);
    let limit = app.config.public_rate_per_minute;
    let scope = "ip:load:/api/v1/track/click";
    let now = timestamp::now();
    let (rate, flood) = tokio::join!(
        rate_limit::hit(&app.store, scope, limit),
        clicks::count_hourly(&app.store, &c.campaign_id, &c.code, "load", now)
    );
    rate.is_ok() && flood.is_ok() && clicks::insert(&app.store, &c).await.is_ok()
}

/// The calls of authentication and the account's rate limit (one round
/// trip), without the API layer around them.
async fn authenticated(app: &App, key: &str) -> Option<Principal> {
    let header = format!("Bearer {key}");
    let token = auth::verify(&app.signing, Some(&header)).await.ok()?;
    let scope = format!("acct:{}", token.account_id());
    let limit = app.config.account_rate_per_minute;
    let (p, r) = tokio::join!(
        auth::principal(&app.store, &token),
        rate_limit::hit(&app.store, &scope, limit)
    );
    r.ok()?;
    p.ok()
}

/// The calls of an authenticated read, without the API layer around them.
async fn get_direct(app: Arc<App>, key: String, campaign: String) -> bool {
    let Some(p) = authenticated(&app, &key).await else {
        return false;
    };
    campaigns::get(&app.store, &p.tenant, &campaign)
        .await
        .is_ok()
}

/// The calls of a postback by code, without the API layer around them.
async fn postback_direct(app: Arc<App>, key: String, worker: usize) -> bool {
    let Some(p) = authenticated(&app, &key).await else {
        return false;
    };
    let now = timestamp::now();
    let body = postback_body(worker);
    let Ok(input) = api::http::body::from_value::<PostbackBody>(body) else {
        return false;
    };
    let Ok(postback) = input.validate(now) else {
        return false;
    };
    api::services::postback::record(&app.store, &app.lookups, &p.tenant, &postback, None, now)
        .await
        .is_ok()
}
