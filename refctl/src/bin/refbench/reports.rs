//! Report rows (contract section 17): the 366-day daily series (Queries
//! against the months of the window), the import of 500 affiliates (calls
//! and write units per row), and the export of 20,000 conversions (its
//! answers and calls, and the peak RSS of the release `reports` binary
//! answering them under the local Lambda Runtime API).

use std::process::Stdio;

use http::Method;
use refctl::runtime_api::{function_command, Outcome, RuntimeApi};
use serde_json::{json, Value};

use crate::{Bench, Bulk};

/// The export's conversions.
const EXPORTED: usize = 20_000;
/// The import's rows.
const IMPORTED: usize = 500;

/// The report rows.
pub async fn rows(b: &mut Bench, key: &str, account_id: &str) {
    let k = Some(key);
    let (campaign_ids, affiliate_ids) = crate::conversion_parties(b, k).await;
    let tenant = api::domain::tenant::Tenant::new(account_id, api::domain::tenant::Mode::Test);
    let bulk = Bulk {
        tenant,
        campaign_ids: campaign_ids.clone(),
        affiliate_ids,
        now: chrono::Utc::now(),
    };
    series_rows(b, k, &bulk).await;
    import_row(b, k, &campaign_ids[0]).await;
    eprintln!("refbench: seeding {EXPORTED} conversions");
    bulk.seed(&b.app.store, 0, EXPORTED).await;
    export_rows(b, key).await;
}

/// One conversion's rollups on each of the last 366 days, then the series
/// by day, week and month over them.
async fn series_rows(b: &mut Bench, k: Option<&str>, bulk: &Bulk) {
    for day in 0..366_i64 {
        let mut sample = bulk.conversion(0);
        sample.occurred_at = bulk.now - chrono::Duration::days(day);
        let mut tx = b.app.store.tx();
        api::store::rollups::backfill(
            &mut tx,
            (),
            &bulk.tenant,
            &sample,
            sample.amount,
            sample.commission,
            1,
        );
        b.app
            .store
            .transact(tx)
            .await
            .map_err(|e| e.into_error())
            .unwrap();
    }
    let from = (bulk.now - chrono::Duration::days(365)).date_naive();
    for by in ["day", "week", "month"] {
        let out = b
            .measure(
                &format!("GET /conversions/summary?from=…&group_by={by} (366 days, 13 months)"),
                Method::GET,
                &format!("/api/v1/conversions/summary?from={from}&group_by={by}"),
                k,
                None,
            )
            .await;
        let points = out["data"]["series"].as_array().map_or(0, Vec::len);
        eprintln!("refbench: group_by={by}: {points} points");
    }
}

/// 500 new affiliates in one import, then the same rows again (all existing).
async fn import_row(b: &mut Bench, k: Option<&str>, campaign: &str) {
    let rows: Vec<Value> = (0..IMPORTED)
        .map(|i| {
            json!({"externalId": format!("rw_{i}"), "campaignId": campaign,
                "email": format!("imported-{i}@partners.example.com"), "name": format!("Imported {i}")})
        })
        .collect();
    let body = Value::Array(rows);
    for label in ["500 new rows", "the same 500 again: existing"] {
        let before = b.begin().await;
        let (s, v) = b
            .send(Method::POST, "/api/v1/affiliates/import", k, Some(&body))
            .await;
        assert_eq!(s, 200, "{v}");
        b.end(&format!("POST /affiliates/import ({label})"), before)
            .await;
        let n = |list: &str| v["data"][list].as_array().map_or(0, Vec::len);
        eprintln!(
            "refbench: import: {} created, {} existing, {} failed",
            n("created"),
            n("existing"),
            n("failed")
        );
    }
}

/// A request through the router: status, `Link` header, body bytes.
async fn get(b: &Bench, path: &str, key: &str) -> (u16, Option<String>, usize) {
    let req = http::Request::builder()
        .method(Method::GET)
        .uri(path)
        .header("authorization", format!("Bearer {key}"))
        .body(axum::body::Body::empty())
        .unwrap();
    let ip = std::net::IpAddr::from([192, 0, 2, 10]);
    let resp = refctl::serve::answer(&b.router, req, ip).await;
    let status = resp.status().as_u16();
    let link = resp
        .headers()
        .get("link")
        .and_then(|l| l.to_str().ok())
        .and_then(|l| Some(l.strip_prefix('<')?.split_once('>')?.0.to_string()));
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap_or_default();
    (status, link, bytes.len())
}

/// The export of the 20,000 conversions, answer by answer: the whole walk as
/// one row, then the peak RSS of the function answering it.
async fn export_rows(b: &mut Bench, key: &str) {
    let from = (chrono::Utc::now() - chrono::Duration::days(31)).date_naive();
    let first = format!("/api/v1/conversions/export?from={from}");
    let before = b.begin().await;
    let (mut answers, mut bytes, mut largest) = (0, 0, 0);
    let mut next = Some(first.clone());
    while let Some(path) = next.take() {
        let (status, link, size) = get(b, &path, key).await;
        assert_eq!(status, 200, "{path}");
        answers += 1;
        bytes += size;
        largest = largest.max(size);
        next = link;
    }
    b.end(
        &format!("GET /conversions/export ({EXPORTED} conversions: {answers} answers)"),
        before,
    )
    .await;
    eprintln!("refbench: export: {answers} answers, {bytes} bytes, the largest {largest} bytes");
    let peak = function_peak(b, key, &first).await;
    println!(
        "export of {EXPORTED} conversions: {answers} answers of at most {} rows, {bytes} bytes of CSV (largest answer {largest} bytes); \
         the release `reports` function's peak RSS after answering all of them: {} KiB (after the first: {} KiB)",
        api::services::conversion_export::ROWS_PER_ANSWER,
        peak.1,
        peak.0
    );
}

/// Builds the release `reports` binary and has it answer the export's
/// answers one after another under the local Runtime API: its peak RSS
/// (VmHWM, KiB) after the first answer and after the last.
async fn function_peak(b: &Bench, key: &str, first: &str) -> (u64, u64) {
    let exe = crate::cold_start::build_release_of(&["reports"])
        .remove("reports")
        .expect("cargo built reports");
    let api = RuntimeApi::start().await;
    let mut cmd = function_command(&exe, "reports", &api, &b.app.config);
    // The bench's signing secret, as a plain one (no Secrets Manager here);
    // its warnings and errors go to the bench's log.
    cmd.env("API_KEY_SECRET", &b.app.config.api_key_secret);
    cmd.stdout(Stdio::null()).stderr(Stdio::inherit());
    let mut child = cmd.spawn().expect("the binary starts");
    let (mut after_first, mut path) = (0, Some(first.to_string()));
    while let Some(p) = path.take() {
        let outcome = api.invoke(&export_event(&p, key)).await;
        let Outcome::Response(resp) = outcome else {
            panic!("reports: {outcome:?}");
        };
        assert_eq!(
            resp["statusCode"],
            200,
            "{}",
            resp["body"]
                .as_str()
                .unwrap_or_default()
                .chars()
                .take(300)
                .collect::<String>()
        );
        if after_first == 0 {
            after_first = crate::cold_start::peak_rss_kib(&child);
        }
        path = resp["headers"]["link"]
            .as_str()
            .and_then(|l| Some(l.strip_prefix('<')?.split_once('>')?.0.to_string()));
    }
    let last = crate::cold_start::peak_rss_kib(&child);
    let _ = child.kill();
    let _ = child.wait();
    (after_first, last)
}

/// An API Gateway (HTTP API, payload 2.0) event of a GET of `path_and_query`.
fn export_event(path_and_query: &str, key: &str) -> Value {
    let (path, query) = path_and_query
        .split_once('?')
        .unwrap_or((path_and_query, ""));
    let params: serde_json::Map<String, Value> = form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
    json!({
        "version": "2.0",
        "routeKey": "GET /api/v1/conversions/export",
        "rawPath": path,
        "rawQueryString": query,
        "headers": {"host": "bench.local", "authorization": format!("Bearer {key}")},
        "queryStringParameters": params,
        "requestContext": {
            "accountId": "123456789012", "apiId": "bench", "domainName": "bench.local",
            "domainPrefix": "bench", "requestId": "bench-export", "routeKey": "GET /api/v1/conversions/export",
            "stage": "$default", "time": "22/Nov/2026:10:00:00 +0000", "timeEpoch": 1795341600000_u64,
            "http": {"method": "GET", "path": path, "protocol": "HTTP/1.1", "sourceIp": "203.0.113.7", "userAgent": "refbench"}
        },
        "isBase64Encoded": false
    })
}
