//! `refbench`: per API operation, the DynamoDB calls made and the capacity
//! units consumed, measured against DynamoDB Local through the same router
//! the Lambdas run; plus the sizes of the release binaries found on disk.
//! Counts, not timings: they are stable on a shared, noisy machine.

use std::sync::Arc;

use api::domain::tenant::Mode;
use api::store::config::Config;
use http::Method;
use serde_json::{json, Value};

use api::services::app::App;
use api::store::accounts;

mod cold_start;
mod hot_items;
mod load;
mod payout_job;
mod plans;
mod rails;
mod reports;
mod webhook_latency;
mod write_units;

use write_units::{Meter, Units};

/// One measured operation: its name, DynamoDB calls, sequential round
/// trips, read and write units as DynamoDB Local reports them, and the
/// write units DynamoDB bills (`write_units`), when metered.
type Row = (String, u64, u64, f64, f64, Option<Units>);

struct Bench {
    app: Arc<App>,
    router: axum::Router,
    rows: Vec<Row>,
    /// Counts the billed write units of each measured operation.
    meter: Option<Meter>,
}

/// `app` with its writes metered (see `write_units`): the meter, and the
/// app whose store notes its transactions for it.
async fn metered(app: Arc<App>) -> (Arc<App>, Meter) {
    let (meter, store) = Meter::open(&app).await;
    let mut noted = (*app).clone();
    noted.store = store;
    (Arc::new(noted), meter)
}

/// A test-mode key of an existing account, for the benchmark's requests.
async fn test_key(app: &App, account_id: &str) -> String {
    let (_, key) = api::services::auth::keys::create_key(
        &app.store,
        &app.signing,
        account_id,
        "bench",
        Mode::Test,
    )
    .await
    .unwrap();
    key
}

impl Bench {
    /// A bench on `app`'s router and a test-mode key of `account_id`.
    async fn with_key(app: Arc<App>, account_id: &str) -> (Bench, String) {
        let key = test_key(&app, account_id).await;
        let b = Bench {
            router: refctl::serve::service(app.clone()),
            app,
            rows: Vec::new(),
            meter: None,
        };
        (b, key)
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let bytes = body
            .map(|b| serde_json::to_vec(b).unwrap())
            .unwrap_or_default();
        let mut headers = Vec::new();
        if let Some(k) = key {
            headers.push(("authorization".to_string(), format!("Bearer {k}")));
        }
        self.send_bytes(method, path, &headers, body.map(|_| bytes))
            .await
    }

    /// Sends a request with the given headers and raw body.
    async fn send_bytes(
        &self,
        method: Method,
        path: &str,
        headers: &[(String, String)],
        body: Option<Vec<u8>>,
    ) -> (u16, Value) {
        let mut req = http::Request::builder().method(method).uri(path);
        for (name, value) in headers {
            req = req.header(name.as_str(), value.as_str());
        }
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        let req = req
            .body(axum::body::Body::from(body.unwrap_or_default()))
            .unwrap();
        let ip = std::net::IpAddr::from([192, 0, 2, 10]);
        let resp = refctl::serve::answer(&self.router, req, ip).await;
        let status = resp.status().as_u16();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap_or_default();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// Runs one request, checks its status and records what it cost.
    async fn measure_status(
        &mut self,
        name: &str,
        expect: u16,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> Value {
        let before = self.begin().await;
        let (status, out) = self.send(method, path, key, body).await;
        assert_eq!(status, expect, "{name}: {out}");
        self.end(name, before).await;
        out
    }

    /// Starts measuring an operation: the counters as they stand.
    async fn begin(&mut self) -> api::store::metrics::MetricsSnapshot {
        if let Some(m) = &mut self.meter {
            m.start().await;
        }
        self.app.store.metrics().snapshot()
    }

    /// Records what the operation begun at `before` cost, as row `name`.
    async fn end(&mut self, name: &str, before: api::store::metrics::MetricsSnapshot) {
        let d = self.app.store.metrics().snapshot().since(&before);
        let billed = match &mut self.meter {
            Some(m) => Some(m.finish().await),
            None => None,
        };
        // Progress on stderr: a slow step shows which operation it is.
        eprintln!("refbench: measured {name}");
        self.rows.push((
            name.to_string(),
            d.calls,
            d.round_trips,
            d.read_units,
            d.write_units,
            billed,
        ));
    }

    /// Records a click (unmeasured) on `code` of `campaign`; its click id.
    async fn click_id(&self, campaign: &str, code: &str) -> Value {
        let click = json!({"campaignId": campaign, "ref": code});
        let (s, v) = self
            .send(Method::POST, "/api/v1/track/click", None, Some(&click))
            .await;
        assert_eq!(s, 201, "{v}");
        v["data"]["clickId"].clone()
    }

    /// Measures a postback of a 49.99 USD sale with `fields` (its
    /// `externalId` and attribution signals).
    async fn measure_postback(&mut self, name: &str, key: Option<&str>, fields: Value) -> Value {
        let mut body = json!({"amount": 49.99, "currency": "USD", "conversionType": "SALE"});
        for (k, v) in fields.as_object().into_iter().flatten() {
            body[k] = v.clone();
        }
        let path = "/api/v1/conversions/postback";
        self.measure(name, Method::POST, path, key, Some(&body))
            .await
    }

    /// Runs one request that must succeed and records what it cost.
    async fn measure(
        &mut self,
        name: &str,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> Value {
        let expect = if method == Method::POST { 201 } else { 200 };
        self.measure_status(name, expect, method, path, key, body)
            .await
    }

    /// Page 1 against a page 50 deep, by cursor and by offset, of a list.
    async fn page_costs(&mut self, list: &str, note: &str, key: Option<&str>) {
        let base = format!("/api/v1/{list}?limit=20");
        self.measure(
            &format!("GET /{list}?limit=20 (page 1{note})"),
            Method::GET,
            &base,
            key,
            None,
        )
        .await;
        let mut cursor = String::new();
        for _ in 0..49 {
            let path = if cursor.is_empty() {
                base.clone()
            } else {
                format!("{base}&cursor={cursor}")
            };
            let (_, v) = self.send(Method::GET, &path, key, None).await;
            cursor = v["meta"]["nextCursor"]
                .as_str()
                .expect("a next page")
                .to_string();
        }
        self.measure(
            &format!("GET /{list}?limit=20&cursor=… (page 50)"),
            Method::GET,
            &format!("{base}&cursor={cursor}"),
            key,
            None,
        )
        .await;
        self.measure(
            &format!("GET /{list}?limit=20&offset=980 (page 50)"),
            Method::GET,
            &format!("{base}&offset=980"),
            key,
            None,
        )
        .await;
    }
}

/// Seeding writes thousands of items at once into a shared DynamoDB Local:
/// the bench waits longer than the API would before giving up.
fn bench_timeouts(config: &mut Config) {
    config.sdk_timeouts.attempt = std::time::Duration::from_secs(30);
    config.sdk_timeouts.operation = std::time::Duration::from_secs(120);
}

#[tokio::main]
async fn main() {
    let mut config = refctl::setup::test_stack_config("bench");
    config.account_rate_per_minute = 1_000_000;
    config.public_rate_per_minute = 1_000_000;
    bench_timeouts(&mut config);
    // The webhook latency receiver listens on loopback.
    config.webhooks.allow_local = true;
    let app = App::new(config).await;
    refctl::setup::tables_create(&app).await.expect("tables");
    let account = accounts::create_account(&app.store, "Bench", "enterprise")
        .await
        .unwrap();
    let section = std::env::args().nth(1);
    // The operation tables meter the write units DynamoDB bills.
    let mut meter = None;
    let app = match section.as_deref() {
        None | Some("connectors") | Some("tracking") | Some("plans") | Some("reports") => {
            let (noted, m) = metered(app).await;
            meter = Some(m);
            noted
        }
        _ => app,
    };
    let (mut b, key) = Bench::with_key(app.clone(), &account.id).await;
    b.meter = meter;
    let k = Some(key.as_str());
    // `refbench cold-start`, `load`, `hot`, `webhooks`, `connectors`,
    // `tracking`, `plans`, `payouts`, `rails` and `reports` run one section alone;
    // without an argument it measures every operation (scripts/bench.sh runs
    // the sections one after another, each on a fresh DynamoDB Local).
    if let Some(name) = section.as_deref() {
        one_section(name, b, &key, &account.id).await;
        drop_table(&app.store).await;
        return;
    }
    let id = campaign_rows(&mut b, k).await;
    tracking_rows(&mut b, &id, k).await;
    affiliate_rows(&mut b, &id, k).await;

    // Conversions: postbacks, summary at 1,000 and 20,000 conversions, list pages.
    conversion_rows(&mut b, &key).await;

    paging_rows(&mut b, k).await;

    payout_job::rows(&mut b).await;

    print_rows(&b);
    print_binary_sizes();
    drop_table(&app.store).await;
}

/// Runs one named section of the benchmark alone.
async fn one_section(name: &str, mut b: Bench, key: &str, account_id: &str) {
    match name {
        "cold-start" => {
            // Its own table: this one is not needed while the binaries start.
            drop_table(&b.app.store).await;
            cold_start::report(b.app.config.clone()).await;
        }
        "load" => load::report(&b, key).await,
        "hot" => hot_items::report(Arc::new(b), key).await,
        "webhooks" => webhook_only(&mut b, key).await,
        "payouts" => {
            payout_job::rows(&mut b).await;
            print_rows(&b);
        }
        "rails" => {
            rails::rows(&mut b).await;
            print_rows(&b);
        }
        "connectors" => {
            connector_and_portal_rows(&mut b, key).await;
            print_rows(&b);
        }
        "tracking" => {
            let k = Some(key);
            let id = campaign_rows(&mut b, k).await;
            tracking_rows(&mut b, &id, k).await;
            print_rows(&b);
        }
        "plans" => {
            // The postbacks of the default section beside those on a plan.
            let k = Some(key);
            let (campaign_ids, _) = conversion_parties(&mut b, k).await;
            postback_rows(&mut b, k, &campaign_ids[0]).await;
            plans::plan_rows(&mut b, k).await;
            print_rows(&b);
        }
        "reports" => {
            reports::rows(&mut b, key, account_id).await;
            print_rows(&b);
        }
        other => {
            eprintln!("refbench: no section {other} (cold-start, load, hot, webhooks, payouts, rails, connectors, tracking, plans, reports)");
            std::process::exit(2);
        }
    }
}

/// Campaign create, read, update and public profile, and a refused key;
/// returns the campaign's id.
async fn campaign_rows(b: &mut Bench, k: Option<&str>) -> String {
    let body = json!({"name": "Bench", "commissionType": "PERCENTAGE", "commissionValue": 10, "isPublic": true});
    let created = b
        .measure(
            "POST /campaigns (create)",
            Method::POST,
            "/api/v1/campaigns",
            k,
            Some(&body),
        )
        .await;
    let id = created["data"]["id"].as_str().unwrap().to_string();
    b.measure(
        "GET /campaigns/{id} (auth path + read)",
        Method::GET,
        &format!("/api/v1/campaigns/{id}"),
        k,
        None,
    )
    .await;
    b.measure(
        "PUT /campaigns/{id} (partial update)",
        Method::PUT,
        &format!("/api/v1/campaigns/{id}"),
        k,
        Some(&json!({"commissionRecurring": true, "recurringMonthsLimit": 12})),
    )
    .await;
    b.measure(
        "GET /campaigns/{id}/public (no key)",
        Method::GET,
        &format!("/api/v1/campaigns/{id}/public"),
        None,
        None,
    )
    .await;
    b.measure_status(
        "401: malformed key (rejected before any read)",
        401,
        Method::GET,
        "/api/v1/campaigns",
        Some("rk_test_bogus"),
        None,
    )
    .await;
    id
}

/// Tracking (public, per-IP rate limit included): a click, then identify
/// with one identity, the same again (first touch kept), and two new ones.
async fn tracking_rows(b: &mut Bench, id: &str, k: Option<&str>) {
    let aff = json!({"campaignId": id, "email": "bench-aff@example.com", "name": "Bench affiliate", "code": "BENCH1"});
    let (s, _) = b
        .send(Method::POST, "/api/v1/affiliates", k, Some(&aff))
        .await;
    assert_eq!(s, 201, "affiliate for the tracking rows");
    let click =
        json!({"campaignId": id, "ref": "bench1", "url": "https://shop.example.com/?ref=bench1"});
    let out = b
        .measure(
            "POST /track/click (cold: campaign + code guard, 1 put)",
            Method::POST,
            "/api/v1/track/click",
            None,
            Some(&click),
        )
        .await;
    b.measure(
        "POST /track/click (warm: campaign and code from the 60 s lookup cache)",
        Method::POST,
        "/api/v1/track/click",
        None,
        Some(&click),
    )
    .await;
    let session = out["data"]["sessionId"].as_str().unwrap().to_string();
    let one = json!({"sessionId": session, "customerEmail": "bench-customer@example.com"});
    b.measure_status(
        "POST /track/identify (1 identity, newly bound)",
        200,
        Method::POST,
        "/api/v1/track/identify",
        None,
        Some(&one),
    )
    .await;
    b.measure_status(
        "POST /track/identify (1 identity, already bound)",
        200,
        Method::POST,
        "/api/v1/track/identify",
        None,
        Some(&one),
    )
    .await;
    let two = json!({"sessionId": session, "customerId": "bench-cus-2", "customerEmail": "bench-2@example.com"});
    b.measure_status(
        "POST /track/identify (2 new identities, 1 transaction)",
        200,
        Method::POST,
        "/api/v1/track/identify",
        None,
        Some(&two),
    )
    .await;
}

/// Paging cost: page 1 against a page 50 deep, by cursor and by offset.
async fn paging_rows(b: &mut Bench, k: Option<&str>) {
    for i in 0..1000 {
        let body =
            json!({"name": format!("c{i}"), "commissionType": "PERCENTAGE", "commissionValue": 5});
        let (s, _) = b
            .send(Method::POST, "/api/v1/campaigns", k, Some(&body))
            .await;
        assert_eq!(s, 201);
    }
    b.page_costs("campaigns", "", k).await;
}

/// The operations table, then where each operation's billed write units go.
fn print_rows(b: &Bench) {
    println!("| operation | DynamoDB calls | sequential round trips | read units | write units (Local) | write units billed |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, calls, trips, r, w, billed) in &b.rows {
        let billed = billed
            .as_ref()
            .map_or("-".to_string(), |u| format!("{:.1}", u.total));
        println!("| {name} | {calls} | {trips} | {r:.1} | {w:.1} | {billed} |");
    }
    println!();
    println!("Billed write units by item kind and index (`kind item`: the record; `kind GSIn`: its entry in that index; `kind check`: a ConditionCheck):");
    println!();
    println!("| operation | billed | by item and index |");
    println!("|---|---:|---|");
    for (name, .., billed) in &b.rows {
        if let Some(u) = billed.as_ref().filter(|u| u.total > 0.0) {
            println!("| {name} | {:.1} | {} |", u.total, u.breakdown());
        }
    }
    println!();
}

/// `refbench connectors`: the postback beside a provider's event and the
/// portal's reads, without the bulk seed and the payout rows (a quick run).
async fn connector_and_portal_rows(b: &mut Bench, key: &str) {
    let k = Some(key);
    let body = json!({"name": "Connectors", "commissionType": "PERCENTAGE", "commissionValue": 10, "isPublic": true});
    let (s, v) = b
        .send(Method::POST, "/api/v1/campaigns", k, Some(&body))
        .await;
    assert_eq!(s, 201, "{v}");
    let cmp = v["data"]["id"].as_str().unwrap().to_string();
    let aff = json!({"campaignId": cmp, "email": "benchcnv@example.com", "name": "BENCHCNV", "code": "BENCHCNV"});
    let (s, v) = b
        .send(Method::POST, "/api/v1/affiliates", k, Some(&aff))
        .await;
    assert_eq!(s, 201, "{v}");
    let affiliate = v["data"]["id"].as_str().unwrap().to_string();
    let click = json!({"campaignId": cmp, "ref": "BENCHCNV"});
    for name in [
        "POST /track/click (cold: campaign + code guard, 1 put + the affiliate's month click count + the flood count)",
        "POST /track/click (warm: campaign and code from the 60 s lookup cache)",
    ] {
        b.measure(
            name,
            Method::POST,
            "/api/v1/track/click",
            None,
            Some(&click),
        )
        .await;
    }
    b.measure_postback(
        "POST /conversions/postback (by affiliate code, no customer)",
        k,
        json!({"externalId": "bench-order-2", "affiliateCode": "BENCHCNV"}),
    )
    .await;
    let click_id = b.click_id(&cmp, "BENCHCNV").await;
    b.measure_postback(
        "POST /conversions/postback (by click id, new customer: referral created; affiliate and campaign cached)",
        k,
        json!({"externalId": "bench-order-3", "clickId": click_id, "customerId": "bench-cus-3"}),
    )
    .await;
    b.measure_postback(
        "POST /conversions/postback (by affiliate code, new customer: referral created; cached)",
        k,
        json!({"externalId": "bench-order-4", "affiliateCode": "BENCHCNV", "customerId": "bench-cus-4"}),
    )
    .await;
    stripe_event_costs(b, key, &affiliate).await;
    portal_rows(b, key, &affiliate).await;
}

/// A campaign and an affiliate to credit, then the webhook latency report.
async fn webhook_only(b: &mut Bench, key: &str) {
    let body = json!({"name": "Hooks", "commissionType": "PERCENTAGE", "commissionValue": 10});
    let (s, c) = b
        .send(Method::POST, "/api/v1/campaigns", Some(key), Some(&body))
        .await;
    assert_eq!(s, 201, "{c}");
    let aff = json!({"campaignId": c["data"]["id"], "email": "hooks@example.com", "name": "Hooks", "code": "BENCHHOOK"});
    let (s, a) = b
        .send(Method::POST, "/api/v1/affiliates", Some(key), Some(&aff))
        .await;
    assert_eq!(s, 201, "{a}");
    webhook_latency::report(b, key, "BENCHHOOK").await;
}

fn print_binary_sizes() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut rows = Vec::new();
    if let Ok(dirs) = std::fs::read_dir(root.join(".aws-sam/build")) {
        for d in dirs.flatten() {
            let p = d.path().join("bootstrap");
            if let Ok(m) = std::fs::metadata(&p) {
                rows.push((d.file_name().to_string_lossy().to_string(), m.len()));
            }
        }
    }
    rows.sort();
    if rows.is_empty() {
        println!("(no release binaries under .aws-sam/build: run `make build` first for sizes)");
        return;
    }
    println!("| function (sam build, arm64 release) | bootstrap size |");
    println!("|---|---:|");
    for (name, size) in rows {
        println!("| {name} | {:.2} MiB |", size as f64 / 1024.0 / 1024.0);
    }
}

/// Affiliate rows: public sign-up, accept, bulk-accept of 100, swipe-copy create.
async fn affiliate_rows(b: &mut Bench, campaign_id: &str, k: Option<&str>) {
    let signup = |i: usize| json!({"campaignId": campaign_id, "email": format!("signup-{i}@example.com"), "name": format!("Partner {i}")});
    let out = b
        .measure(
            "POST /affiliates/signup (affiliate + application + 2 guards, 1 transaction)",
            Method::POST,
            "/api/v1/affiliates/signup",
            None,
            Some(&signup(0)),
        )
        .await;
    let app = out["data"]["applicationId"]
        .as_str()
        .expect("an application")
        .to_string();
    b.measure_status(
        "POST /applications/{id}/accept (application + affiliate, 1 transaction)",
        200,
        Method::POST,
        &format!("/api/v1/applications/{app}/accept"),
        k,
        None,
    )
    .await;
    let mut ids = Vec::new();
    for i in 1..=100 {
        let (s, v) = b
            .send(
                Method::POST,
                "/api/v1/affiliates/signup",
                None,
                Some(&signup(i)),
            )
            .await;
        assert_eq!(s, 201, "{v}");
        ids.push(v["data"]["applicationId"].as_str().unwrap().to_string());
    }
    b.measure_status(
        "POST /applications/bulk-accept (100 pending)",
        200,
        Method::POST,
        "/api/v1/applications/bulk-accept",
        k,
        Some(&json!({ "applicationIds": ids })),
    )
    .await;
    b.measure(
        "POST /assets/swipe-copy (create)",
        Method::POST,
        "/api/v1/assets/swipe-copy",
        k,
        Some(&json!({"name": "Launch e-mail", "body": "Try the product: 20% off with my link."})),
    )
    .await;
}

/// Conversion rows: postbacks (by click, by code, a replay), the summary at
/// 1,000 and at 20,000 conversions (same calls and read units: it reads
/// rollups, not conversions) and list pages 1 and 50 by cursor and by offset.
/// The bulk conversions are written straight to the table (BatchWriteItem)
/// with their rollups backfilled per (day, currency, campaign), which is what
/// 20,000 postbacks would leave behind, in a fraction of the time.
async fn conversion_rows(b: &mut Bench, key: &str) {
    let k = Some(key);
    let (campaign_ids, affiliate_ids) = conversion_parties(b, k).await;
    postback_rows(b, k, &campaign_ids[0]).await;
    plans::plan_rows(b, k).await;
    let principal = api::services::auth::authenticate(
        &b.app.signing,
        &b.app.store,
        Some(&format!("Bearer {key}")),
    )
    .await
    .unwrap();
    let bulk = Bulk {
        tenant: principal.tenant,
        campaign_ids: campaign_ids.clone(),
        affiliate_ids: affiliate_ids.clone(),
        now: api::domain::timestamp::now(),
    };
    let started = std::time::Instant::now();
    bulk.seed(&b.app.store, 0, 1_000).await;
    if let Some(m) = &mut b.meter {
        m.skip_written(&b.app).await;
    }
    let at_1k: Vec<i64> = summary_rows(b, k, "1,000 conversions")
        .await
        .iter()
        .map(summary_count)
        .collect();
    bulk.seed(&b.app.store, 1_000, 20_000).await;
    if let Some(m) = &mut b.meter {
        m.skip_written(&b.app).await;
    }
    eprintln!(
        "refbench: 20,000 conversions seeded in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    // The tenant's earlier measurements recorded conversions of their own:
    // the 19,000 seeded since the first summary are what it must add.
    let at_20k = summary_rows(b, k, "20,000 conversions").await;
    for (answer, before) in at_20k.iter().zip(at_1k) {
        assert_eq!(
            summary_count(answer),
            before + 19_000,
            "the summary counts every conversion"
        );
    }
    let n = b.rows.len();
    for i in 0..2 {
        let (a, c) = (&b.rows[n - 4 + i], &b.rows[n - 2 + i]);
        // Calls and read units are counts; round trips depend on how calls
        // overlap on a busy machine, so they are reported, not compared.
        assert_eq!(
            (a.1, a.3),
            (c.1, c.3),
            "summary cost must not grow with conversions: {} vs {}",
            a.0,
            c.0
        );
    }

    b.page_costs("conversions", " of 20,004", k).await;
    let cmp = &campaign_ids[1];
    b.measure(
        "GET /conversions?campaign_id=…&status=pending&min_amount=50 (filtered page 1)",
        Method::GET,
        &format!("/api/v1/conversions?limit=20&campaign_id={cmp}&status=pending&min_amount=50"),
        k,
        None,
    )
    .await;
    stripe_event_costs(b, key, &affiliate_ids[0]).await;
    portal_rows(b, key, &affiliate_ids[0]).await;
}

/// Two recurring campaigns with one affiliate each: their ids.
async fn conversion_parties(b: &mut Bench, k: Option<&str>) -> (Vec<String>, Vec<String>) {
    let mut campaign_ids = Vec::new();
    let mut affiliate_ids = Vec::new();
    for (i, code) in ["BENCHCNV", "BENCHCNV2"].iter().enumerate() {
        let body = json!({"name": format!("Conversions {i}"), "commissionType": "PERCENTAGE", "commissionValue": 10, "isPublic": true,
            "commissionRecurring": true, "recurringMonthsLimit": 12});
        let (s, v) = b
            .send(Method::POST, "/api/v1/campaigns", k, Some(&body))
            .await;
        assert_eq!(s, 201, "{v}");
        let cmp = v["data"]["id"].as_str().unwrap().to_string();
        let aff = json!({"campaignId": cmp, "email": format!("{}@example.com", code.to_lowercase()), "name": code, "code": code});
        let (s, v) = b
            .send(Method::POST, "/api/v1/affiliates", k, Some(&aff))
            .await;
        assert_eq!(s, 201, "{v}");
        affiliate_ids.push(v["data"]["id"].as_str().unwrap().to_string());
        campaign_ids.push(cmp);
    }
    (campaign_ids, affiliate_ids)
}

/// Postbacks by click id, by code, recurring, unattributed, and a replay.
async fn postback_rows(b: &mut Bench, k: Option<&str>, campaign_id: &str) {
    let click_id = b.click_id(campaign_id, "BENCHCNV").await;
    b.measure_postback(
        "POST /conversions/postback (by click id; new customer: referral created; first postback of this affiliate in the process: its affiliate and campaign read)",
        k,
        json!({"externalId": "bench-order-1", "clickId": click_id, "customerId": "bench-cus-1"}),
    )
    .await;
    b.measure_postback(
        "POST /conversions/postback (by affiliate code, no customer)",
        k,
        json!({"externalId": "bench-order-2", "affiliateCode": "BENCHCNV"}),
    )
    .await;
    b.measure_postback(
        "POST /conversions/postback (recurring: customer's referral)",
        k,
        json!({"externalId": "bench-order-3", "customerId": "bench-cus-1"}),
    )
    .await;
    b.measure_postback(
        "POST /conversions/postback (unattributed)",
        k,
        json!({"externalId": "bench-order-4", "amount": 5, "currency": "EUR"}),
    )
    .await;
    let by_code = json!({"amount": 49.99, "currency": "USD", "externalId": "bench-order-2",
        "conversionType": "SALE", "affiliateCode": "BENCHCNV"});
    b.measure_status(
        "POST /conversions/postback (replay: 200, nothing written)",
        200,
        Method::POST,
        "/api/v1/conversions/postback",
        k,
        Some(&by_code),
    )
    .await;
}

/// The summary over 30 days by campaign and over all time; their answers.
/// The conversions a summary answer counts, over its groups.
fn summary_count(answer: &Value) -> i64 {
    answer["data"]["totals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["count"].as_i64().unwrap())
        .sum()
}

async fn summary_rows(b: &mut Bench, k: Option<&str>, at: &str) -> Vec<Value> {
    let mut answers = Vec::new();
    for (label, query) in [
        ("30d, group_by=campaign", "period=30d&group_by=campaign"),
        ("all", "period=all"),
    ] {
        let answer = b
            .measure(
                &format!("GET /conversions/summary?{label} ({at})"),
                Method::GET,
                &format!("/api/v1/conversions/summary?{query}"),
                k,
                None,
            )
            .await;
        answers.push(answer);
    }
    answers
}

/// Bulk conversions over the last 30 days, 2 currencies, 2 campaigns.
struct Bulk {
    tenant: api::domain::tenant::Tenant,
    campaign_ids: Vec<String>,
    affiliate_ids: Vec<String>,
    now: chrono::DateTime<chrono::Utc>,
}

impl Bulk {
    /// The `i`th bulk conversion: its day, currency and campaign cycle.
    fn conversion(&self, i: usize) -> api::domain::conversion::Conversion {
        use api::domain::conversion::{
            AttributionMethod, Conversion, ConversionStatus, ConversionType,
        };
        use api::domain::ids::{new_id, IdKind};
        use rust_decimal::Decimal;
        let currency =
            api::domain::money::Currency::parse("c", ["USD", "EUR"][(i / 30) % 2]).unwrap();
        let which = (i / 60) % 2;
        let amount = Decimal::new(1000 + (i % 9000) as i64, 2);
        let occurred_at = self.now
            - chrono::Duration::days((i % 30) as i64)
            - chrono::Duration::milliseconds(i as i64);
        Conversion {
            id: new_id(IdKind::Conversion),
            external_id: format!("bench-bulk-{i}"),
            campaign_id: Some(self.campaign_ids[which].clone()),
            affiliate_id: Some(self.affiliate_ids[which].clone()),
            amount,
            currency,
            conversion_type: ConversionType::Sale,
            commission: currency.round(amount / Decimal::TEN),
            commission_reason: None,
            status: ConversionStatus::Pending,
            attribution: AttributionMethod::Code,
            customer_ref: None,
            is_recurring: false,
            click_id: None,
            session_id: None,
            customer_id: None,
            hold_days: 30,
            payable_at: occurred_at + chrono::Duration::days(30),
            payout_id: None,
            metadata: Default::default(),
            occurred_at,
            created_at: self.now,
            updated_at: self.now,
            reversed_at: None,
            reversal_reason: None,
            reversed_amount: Decimal::ZERO,
            commission_reversed: Decimal::ZERO,
            commission_clawed_back: Decimal::ZERO,
            risk: Default::default(),
            product_id: None,
            plan_id: None,
            commission_source: None,
            payment_number: None,
        }
    }

    /// Writes conversions `from..to` (8 batches at a time), then the
    /// rollups their postbacks would have added.
    async fn seed(&self, store: &api::store::Store, from: usize, to: usize) {
        use api::store::conversions;
        let all: Vec<_> = (from..to).map(|i| self.conversion(i)).collect();
        let mut set = tokio::task::JoinSet::new();
        for chunk in all.chunks(25) {
            let items: Vec<_> = chunk
                .iter()
                .map(|c| conversions::item(&self.tenant, c).unwrap())
                .collect();
            let store = store.clone();
            set.spawn(async move { put_batch(&store, items).await });
            while set.len() >= 8 {
                set.join_next().await.unwrap().unwrap();
            }
        }
        while let Some(r) = set.join_next().await {
            r.unwrap();
        }
        self.backfill(store, &all).await;
    }

    /// Per (days ago, currency, campaign): a sample and the sums, as rollups.
    async fn backfill(
        &self,
        store: &api::store::Store,
        all: &[api::domain::conversion::Conversion],
    ) {
        use rust_decimal::Decimal;
        type Sums = (api::domain::conversion::Conversion, Decimal, Decimal, i64);
        let mut sums: std::collections::BTreeMap<(i64, &str, String), Sums> = Default::default();
        for c in all {
            let key = (
                (self.now - c.occurred_at).num_days(),
                c.currency.code(),
                c.campaign_id.clone().unwrap(),
            );
            let e = sums
                .entry(key)
                .or_insert_with(|| (c.clone(), Decimal::ZERO, Decimal::ZERO, 0));
            e.1 += c.amount;
            e.2 += c.commission;
            e.3 += 1;
        }
        for (_, (sample, revenue, commission, count)) in sums {
            let mut tx = store.tx();
            api::store::rollups::backfill(
                &mut tx,
                (),
                &self.tenant,
                &sample,
                revenue,
                commission,
                count,
            );
            store
                .transact(tx)
                .await
                .map_err(|e| e.into_error())
                .unwrap();
        }
    }
}

/// The affiliate portal: a session, then each portal read with its token
/// (auth is one round trip: the affiliate and account batch with the rate
/// limit beside it; each read should be one more).
async fn portal_rows(b: &mut Bench, key: &str, affiliate_id: &str) {
    let session = b
        .measure(
            "POST /affiliates/{id}/portal-sessions",
            Method::POST,
            &format!("/api/v1/affiliates/{affiliate_id}/portal-sessions"),
            Some(key),
            Some(&json!({})),
        )
        .await;
    let token = session["data"]["token"].as_str().unwrap().to_string();
    let t = Some(token.as_str());
    for (name, path) in [
        ("GET /portal/me (auth + campaign)", "/api/v1/portal/me"),
        (
            "GET /portal/stats?period=30d (auth + rollups and clicks at once)",
            "/api/v1/portal/stats?period=30d",
        ),
        (
            "GET /portal/stats?period=all",
            "/api/v1/portal/stats?period=all",
        ),
        (
            "GET /portal/conversions (page 1)",
            "/api/v1/portal/conversions",
        ),
        ("GET /portal/payouts (page 1)", "/api/v1/portal/payouts"),
        ("GET /portal/assets", "/api/v1/portal/assets"),
    ] {
        b.measure(name, Method::GET, path, t, None).await;
    }
}

/// Writes items with BatchWriteItem (at most 25), retrying unprocessed ones.
async fn put_batch(store: &api::store::Store, items: Vec<api::store::Item>) {
    use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
    let mut pending: Vec<WriteRequest> = items
        .into_iter()
        .map(|item| {
            WriteRequest::builder()
                .put_request(PutRequest::builder().set_item(Some(item)).build().unwrap())
                .build()
        })
        .collect();
    let mut attempt = 0;
    while !pending.is_empty() {
        let out = store
            .client()
            .batch_write_item()
            .request_items(store.table(), pending)
            .send()
            .await
            .expect("batch write");
        pending = out
            .unprocessed_items
            .and_then(|mut u| u.remove(store.table()))
            .unwrap_or_default();
        attempt += 1;
        if !pending.is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(20 * attempt)).await;
        }
    }
}

/// A Stripe `invoice.paid` through an integration, beside the postback it
/// makes (attributed by affiliate code, no customer), and its repeat; then
/// an invoice of the current API version (no payment ids) and the
/// `invoice_payment.paid` that links its payment intent, and a one-off
/// checkout attributed by the promotion code `affiliate` was given.
async fn stripe_event_costs(b: &mut Bench, key: &str, affiliate: &str) {
    let secret = "whsec_bench_0123456789abcdefghijkl";
    let body = json!({"provider": "STRIPE", "signingSecret": secret});
    let (s, v) = b
        .send(Method::POST, "/api/v1/integrations", Some(key), Some(&body))
        .await;
    assert_eq!(s, 201, "{v}");
    let integration = v["data"]["id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/integrations/{integration}/events");
    let invoice = |n: u32, ids: bool| {
        let mut inv = json!({"id": format!("in_bench_{n}"), "object": "invoice",
            "amount_paid": 5999, "total": 5999, "total_excluding_tax": 4999, "currency": "usd",
            "metadata": {"referral": "BENCHCNV"}});
        if ids {
            inv["payment_intent"] = json!(format!("pi_bench_{n}"));
            inv["charge"] = json!(format!("ch_bench_{n}"));
        }
        event(n, "invoice.paid", inv)
    };
    let link = event(
        3,
        "invoice_payment.paid",
        json!({"object": "invoice_payment", "invoice": "in_bench_2", "status": "paid",
               "payment": {"type": "payment_intent", "payment_intent": "pi_bench_2"}}),
    );
    let rows = [
        ("POST /integrations/{id}/events (Stripe invoice.paid by affiliate code, signed; the postback's path, its two payment ids claimed)", invoice(1, true)),
        ("POST /integrations/{id}/events (the same Stripe event again: DUPLICATE)", invoice(1, true)),
        ("POST /integrations/{id}/events (Stripe invoice.paid of API version basil: no payment ids, a kept link looked for)", invoice(2, false)),
        ("POST /integrations/{id}/events (Stripe invoice_payment.paid: the invoice's payment intent linked)", link),
    ];
    for (name, event) in rows {
        signed_event(b, &path, secret, name, &event).await;
    }
    let body =
        json!({"integrationId": integration, "providerId": "promo_bench1", "code": "BENCH20"});
    let codes = format!("/api/v1/affiliates/{affiliate}/promotion-codes");
    let (s, v) = b.send(Method::POST, &codes, Some(key), Some(&body)).await;
    assert_eq!(s, 201, "{v}");
    let checkout = event(
        4,
        "checkout.session.completed",
        json!({"id": "cs_bench_4", "object": "checkout.session", "mode": "payment",
               "payment_status": "paid", "client_reference_id": null, "customer": "cus_bench_4",
               "amount_total": 5000, "currency": "usd", "payment_intent": "pi_bench_4",
               "discounts": [{"coupon": null, "promotion_code": "promo_bench1"}],
               "total_details": {"amount_discount": 500, "amount_shipping": 0, "amount_tax": 0}}),
    );
    let name = "POST /integrations/{id}/events (Stripe checkout.session.completed by promotion code: the customer bound, the payment attributed)";
    signed_event(b, &path, secret, name, &checkout).await;
}

/// A Stripe event `evt_bench_{n}` of `kind` around `object`.
fn event(n: u32, kind: &str, object: Value) -> Value {
    json!({"id": format!("evt_bench_{n}"), "object": "event", "type": kind, "livemode": false,
           "created": chrono::Utc::now().timestamp(), "data": {"object": object}})
}

/// Measures one signed Stripe delivery (answered 200).
async fn signed_event(b: &mut Bench, path: &str, secret: &str, name: &str, event: &Value) {
    use api::domain::connector::Provider;
    let raw = serde_json::to_vec(event).unwrap();
    let header = Provider::Stripe.sign(&raw, secret, chrono::Utc::now().timestamp());
    let before = b.begin().await;
    let headers = [("stripe-signature".to_string(), header)];
    let (status, out) = b.send_bytes(Method::POST, path, &headers, Some(raw)).await;
    assert_eq!(status, 200, "{name}: {out}");
    b.end(name, before).await;
}

/// Deletes a bench table when its section is done, unless `REFBENCH_KEEP`
/// is set (its items can then be read, their sizes checked).
pub async fn drop_table(store: &api::store::Store) {
    if std::env::var_os("REFBENCH_KEEP").is_none() {
        store.delete_table().await.ok();
    }
}
