//! Paying payouts through the rails (contract section 14), on a metered
//! table of its own against the stack's Stripe and PayPal stand-in: a
//! Stripe-paid payout, a PayPal-paid payout, PayPal's event, and
//! batch-process of 100 Stripe payouts. DynamoDB is measured as in every
//! row; the provider's requests are counted apart, with the most the
//! stand-in answered at once (100 transfers at most 8 at a time: 13 waves).

use api::domain::payout_rail::AccountUpdate;
use api::domain::tenant::Tenant;
use api::services::payout_accounts;
use api::services::payout_job::{self as job, Budget};
use chrono::Utc;
use http::Method;
use serde_json::{json, Value};

use crate::payout_job::{attach, enroll, job_table, payout_ids, programme, seed_spread, Programme};
use crate::Bench;

/// The stand-in's address (the test stack's).
fn standin() -> String {
    std::env::var("STRIPE_API_BASE").unwrap_or_else(|_| "http://127.0.0.1:18070".into())
}

async fn standin_call(method: Method, path: &str, body: Option<Value>) -> Value {
    let client = reqwest::Client::builder()
        .use_preconfigured_tls(api::store::tls::webhook_client_config())
        .build()
        .unwrap();
    let url = format!("{}{path}", standin());
    let r = match method {
        Method::GET => client.get(url),
        _ => client.post(url).json(&body.unwrap_or(json!({}))),
    };
    let r = r
        .send()
        .await
        .expect("the provider stand-in (scripts/stack.sh)");
    assert!(r.status().is_success(), "{path}: {}", r.status());
    r.json().await.unwrap()
}

/// The rows, each on a table and accounts of their own.
pub async fn rows(b: &mut Bench) {
    let (app, p) = job_table("bench-rails").await;
    let (app, meter) = crate::metered(app).await;
    let (mut rb, key) = Bench::with_key(app.clone(), &p.tenant.account_id).await;
    rb.meter = Some(meter);
    stripe_rows(&mut rb, &p, &key).await;
    let paypal = programme(&app).await;
    let (mut pb, pkey) = Bench::with_key(app.clone(), &paypal.tenant.account_id).await;
    pb.meter = rb.meter.take();
    paypal_rows(&mut pb, &paypal, &pkey).await;
    b.rows.append(&mut rb.rows);
    b.rows.append(&mut pb.rows);
    crate::drop_table(&app.store).await;
}

/// `n` affiliates paid through Stripe, their accounts ACTIVE, each with
/// one APPROVED payout; the payouts' ids.
async fn stripe_payouts(b: &mut Bench, p: &Programme, key: &str, n: usize) -> Vec<String> {
    let app = b.app.clone();
    let some = Programme {
        tenant: p.tenant.clone(),
        campaign: p.campaign.clone(),
        affiliates: enroll(&app, &p.tenant, &p.campaign, n).await,
    };
    for aff in &some.affiliates {
        connect(b, &p.tenant, key, aff).await;
    }
    approved(b, &some, key).await
}

/// Makes the affiliate's Stripe account and enables it, as Stripe would.
async fn connect(b: &mut Bench, tenant: &Tenant, key: &str, aff: &str) {
    let body = json!({"payoutMethod": "STRIPE"});
    let path = format!("/api/v1/affiliates/{aff}");
    let (s, v) = b.send(Method::PUT, &path, Some(key), Some(&body)).await;
    assert_eq!(s, 200, "{v}");
    let path = format!("/api/v1/affiliates/{aff}/payout-account");
    let (s, v) = b.send(Method::POST, &path, Some(key), None).await;
    assert_eq!(s, 201, "{v}");
    let (_, v) = b
        .send(
            Method::GET,
            &format!("/api/v1/affiliates/{aff}"),
            Some(key),
            None,
        )
        .await;
    let account = v["data"]["payoutAccount"]["accountId"]
        .as_str()
        .unwrap()
        .to_string();
    let enabled = json!({"payouts_enabled": true, "capabilities": {"transfers": "active"},
        "requirements": {"currently_due": [], "disabled_reason": null}});
    standin_call(
        Method::POST,
        &format!("/_standin/stripe/accounts/{account}"),
        Some(enabled),
    )
    .await;
    let update = AccountUpdate {
        account_id: account,
        payouts_enabled: true,
        disabled_reason: None,
        currently_due: vec![],
    };
    payout_accounts::account_updated(&b.app, tenant, &update, Utc::now())
        .await
        .unwrap();
}

/// The programme's affiliates' payouts, made by the job and approved.
async fn approved(b: &mut Bench, some: &Programme, key: &str) -> Vec<String> {
    seed_spread(&b.app, some).await;
    job::run(&b.app, Utc::now(), Budget::default())
        .await
        .unwrap();
    let mut ids = Vec::new();
    for aff in &some.affiliates {
        ids.extend(payout_ids(b, key, &format!("&affiliate_id={aff}")).await);
    }
    assert_eq!(ids.len(), some.affiliates.len());
    for id in &ids {
        attach(&b.app, &some.tenant, id).await;
        let path = format!("/api/v1/payouts/{id}/approve");
        let (s, v) = b.send(Method::POST, &path, Some(key), None).await;
        assert_eq!(s, 200, "{v}");
    }
    ids
}

/// Prints what the provider saw of a row: its requests and the most at once.
async fn provider_line(row: &str, stats: &Value, payouts: usize) {
    let (calls, peak) = (
        stats["calls"].as_u64().unwrap_or(0),
        stats["peak"].as_u64().unwrap_or(0),
    );
    let waves = if peak == 0 { 0 } else { calls.div_ceil(peak) };
    println!(
        "provider: {row}: {calls} requests for {payouts} payouts, at most {peak} at once ({waves} waves)"
    );
}

async fn stripe_rows(b: &mut Bench, p: &Programme, key: &str) {
    let api_key = format!("sk_test_bench{}", ulid::Ulid::new());
    let body = json!({"provider": "STRIPE", "signingSecret": "whsec_bench_0123456789abcdefghijkl", "apiKey": api_key});
    let (s, v) = b
        .send(Method::POST, "/api/v1/integrations", Some(key), Some(&body))
        .await;
    assert_eq!(s, 201, "{v}");
    let one = stripe_payouts(b, p, key, 1).await;
    let row = "POST /payouts/batch-process (1 payout, Stripe transfer)";
    standin_call(Method::POST, "/_standin/stats", None).await;
    let out = b
        .measure_status(
            row,
            200,
            Method::POST,
            "/api/v1/payouts/batch-process",
            Some(key),
            Some(&json!({"payoutIds": one})),
        )
        .await;
    assert_eq!(out["data"]["processed"][0]["status"], "PAID", "{out}");
    provider_line(
        row,
        &standin_call(Method::POST, "/_standin/stats", None).await,
        1,
    )
    .await;

    let hundred = stripe_payouts(b, p, key, 100).await;
    // Each transfer is answered after 200 ms, so the calls overlap as they would at Stripe.
    for id in &hundred {
        let fault = json!({"path": "/v1/transfers", "match": id, "kind": "delay", "seconds": 0.2});
        standin_call(Method::POST, "/_standin/faults", Some(fault)).await;
    }
    let row = "POST /payouts/batch-process (100 payouts, Stripe transfers)";
    standin_call(Method::POST, "/_standin/stats", None).await;
    let out = b
        .measure_status(
            row,
            200,
            Method::POST,
            "/api/v1/payouts/batch-process",
            Some(key),
            Some(&json!({"payoutIds": hundred})),
        )
        .await;
    let paid = out["data"]["processed"]
        .as_array()
        .map_or(0, |p| p.iter().filter(|x| x["status"] == "PAID").count());
    assert_eq!(paid, 100, "{out}");
    provider_line(
        row,
        &standin_call(Method::POST, "/_standin/stats", None).await,
        100,
    )
    .await;
}

async fn paypal_rows(b: &mut Bench, p: &Programme, key: &str) {
    let u = ulid::Ulid::new();
    let webhook = format!("WHbench{u}");
    let body = json!({"provider": "PAYPAL", "clientId": format!("Abench{u}"),
        "clientSecret": format!("EEbench{u}"), "webhookId": webhook});
    let (s, v) = b
        .send(Method::POST, "/api/v1/integrations", Some(key), Some(&body))
        .await;
    assert_eq!(s, 201, "{v}");
    let integration = v["data"]["id"].as_str().unwrap().to_string();
    let one = Programme {
        tenant: p.tenant.clone(),
        campaign: p.campaign.clone(),
        affiliates: enroll(&b.app, &p.tenant, &p.campaign, 1).await,
    };
    let aff = &one.affiliates[0];
    let body = json!({"payoutMethod": "PAYPAL", "payoutEmail": "bench@receivers.example.com"});
    let (s, v) = b
        .send(
            Method::PUT,
            &format!("/api/v1/affiliates/{aff}"),
            Some(key),
            Some(&body),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let ids = approved(b, &one, key).await;
    // A first token is fetched once per process: the row shows a reused one.
    let row = "POST /payouts/batch-process (1 payout, PayPal payout)";
    standin_call(Method::POST, "/_standin/stats", None).await;
    let out = b
        .measure_status(
            row,
            200,
            Method::POST,
            "/api/v1/payouts/batch-process",
            Some(key),
            Some(&json!({"payoutIds": ids})),
        )
        .await;
    assert_eq!(out["data"]["processed"][0]["status"], "PROCESSING", "{out}");
    provider_line(
        row,
        &standin_call(Method::POST, "/_standin/stats", None).await,
        1,
    )
    .await;

    let item = json!({"transaction_status": "SUCCESS", "webhook_id": webhook});
    let made = standin_call(
        Method::POST,
        &format!("/_standin/paypal/items/{}", ids[0]),
        Some(item),
    )
    .await;
    let mut headers: Vec<(String, String)> = made["headers"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect();
    headers.push(("content-type".into(), "application/json".into()));
    let row = "POST /integrations/{id}/events (PayPal PAYMENT.PAYOUTS-ITEM.SUCCEEDED)";
    let path = format!("/api/v1/integrations/{integration}/events");
    standin_call(Method::POST, "/_standin/stats", None).await;
    let before = b.begin().await;
    let body = made["event"].to_string().into_bytes();
    let (s, v) = b
        .send_bytes(Method::POST, &path, &headers, Some(body))
        .await;
    assert_eq!((s, &v["data"]["outcome"]), (200, &json!("APPLIED")), "{v}");
    b.end(row, before).await;
    provider_line(
        row,
        &standin_call(Method::POST, "/_standin/stats", None).await,
        1,
    )
    .await;
}
