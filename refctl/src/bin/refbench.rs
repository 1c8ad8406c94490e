//! `refbench`: per API operation, the DynamoDB calls made and the capacity
//! units consumed, measured against DynamoDB Local through the same router
//! the Lambdas run; plus the sizes of the release binaries found on disk.
//! Counts, not timings: they are stable on a shared, noisy machine.

use std::sync::Arc;

use http::{HeaderMap, HeaderValue, Method};
use serde_json::{json, Value};
use shared::config::Config;
use shared::domain::tenant::Mode;
use shared::http::{ApiRequest, Router};
use shared::store::accounts;
use shared::App;

struct Bench {
    app: Arc<App>,
    router: Router,
    rows: Vec<(String, u64, f64, f64)>,
}

impl Bench {
    async fn send(&self, method: Method, path: &str, key: Option<&str>, body: Option<&Value>) -> (u16, Value) {
        let (path, query) = match path.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (path, None),
        };
        let mut headers = HeaderMap::new();
        if let Some(k) = key {
            headers.insert("authorization", HeaderValue::from_str(&format!("Bearer {k}")).unwrap());
        }
        if body.is_some() {
            headers.insert("content-type", HeaderValue::from_static("application/json"));
        }
        let req = ApiRequest::new(
            method,
            path,
            query,
            headers,
            body.map(|b| serde_json::to_vec(b).unwrap()).unwrap_or_default(),
            Some("192.0.2.10".into()),
        );
        let resp = self.router.handle(self.app.clone(), req).await;
        let status = resp.status().as_u16();
        (status, serde_json::from_slice(resp.body()).unwrap_or(Value::Null))
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
        let before = self.app.store.metrics().snapshot();
        let (status, out) = self.send(method, path, key, body).await;
        let d = self.app.store.metrics().snapshot().since(&before);
        assert_eq!(status, expect, "{name}: {out}");
        self.rows.push((name.to_string(), d.calls, d.read_units, d.write_units));
        out
    }

    /// Runs one request that must succeed and records what it cost.
    async fn measure(&mut self, name: &str, method: Method, path: &str, key: Option<&str>, body: Option<&Value>) -> Value {
        let expect = if method == Method::POST { 201 } else { 200 };
        self.measure_status(name, expect, method, path, key, body).await
    }
}

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

#[tokio::main]
async fn main() {
    let suffix = ulid::Ulid::new().to_string().to_lowercase();
    let mut config = Config::local(
        &env("DYNAMODB_ENDPOINT", "http://127.0.0.1:18000"),
        &env("S3_ENDPOINT", "http://127.0.0.1:19000"),
        &format!("bench-{suffix}"),
        &format!("bench-{suffix}"),
    );
    config.account_rate_per_minute = 1_000_000;
    config.public_rate_per_minute = 1_000_000;
    let app = App::new(config).await;
    refctl::setup::tables_create(&app).await.expect("tables");
    let account = accounts::create_account(&app.store, "Bench", "enterprise").await.unwrap();
    let (_, key) = accounts::create_key(&app.store, &app.config.api_key_secret, &account.id, "bench", Mode::Test)
        .await
        .unwrap();
    let mut b = Bench {
        app: app.clone(),
        router: refctl::serve::router(),
        rows: Vec::new(),
    };
    let k = Some(key.as_str());

    let body = json!({"name": "Bench", "commissionType": "PERCENTAGE", "commissionValue": 10, "isPublic": true});
    let created = b.measure("POST /campaigns (create)", Method::POST, "/api/v1/campaigns", k, Some(&body)).await;
    let id = created["data"]["id"].as_str().unwrap().to_string();
    b.measure("GET /campaigns/{id} (auth path + read)", Method::GET, &format!("/api/v1/campaigns/{id}"), k, None)
        .await;
    b.measure(
        "PUT /campaigns/{id} (partial update)",
        Method::PUT,
        &format!("/api/v1/campaigns/{id}"),
        k,
        Some(&json!({"commissionRecurring": true, "recurringMonthsLimit": 12})),
    )
    .await;
    b.measure("GET /campaigns/{id}/public (no key)", Method::GET, &format!("/api/v1/campaigns/{id}/public"), None, None)
        .await;
    b.measure_status("401: malformed key (rejected before any read)", 401, Method::GET, "/api/v1/campaigns", Some("rk_test_bogus"), None)
        .await;

    // Paging cost: page 1 against a page 50 deep, by cursor and by offset.
    for i in 0..1000 {
        let body = json!({"name": format!("c{i}"), "commissionType": "PERCENTAGE", "commissionValue": 5});
        let (s, _) = b.send(Method::POST, "/api/v1/campaigns", k, Some(&body)).await;
        assert_eq!(s, 201);
    }
    b.measure("GET /campaigns?limit=20 (page 1)", Method::GET, "/api/v1/campaigns?limit=20", k, None).await;
    let mut cursor = String::new();
    for _ in 0..49 {
        let path = if cursor.is_empty() {
            "/api/v1/campaigns?limit=20".to_string()
        } else {
            format!("/api/v1/campaigns?limit=20&cursor={cursor}")
        };
        let (_, v) = b.send(Method::GET, &path, k, None).await;
        cursor = v["meta"]["nextCursor"].as_str().unwrap().to_string();
    }
    b.measure(
        "GET /campaigns?limit=20&cursor=… (page 50)",
        Method::GET,
        &format!("/api/v1/campaigns?limit=20&cursor={cursor}"),
        k,
        None,
    )
    .await;
    b.measure("GET /campaigns?limit=20&offset=980 (page 50)", Method::GET, "/api/v1/campaigns?limit=20&offset=980", k, None)
        .await;

    println!("| operation | DynamoDB calls | read units | write units |");
    println!("|---|---:|---:|---:|");
    for (name, calls, r, w) in &b.rows {
        println!("| {name} | {calls} | {r:.1} | {w:.1} |");
    }
    println!();
    print_binary_sizes();
    app.store.delete_table().await.ok();
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
