//! Hot items: 64 postbacks at a time for one tenant and one affiliate,
//! sustained for 30 s. Every one touches the same per-day rollup items, the
//! affiliate's TOTALS item and the account's rate-limit counter, so their
//! transactions conflict and are retried. Reports the sustained rate, how
//! many ended in 503, and whether the summary and the affiliate's total equal
//! what the accepted postbacks add up to.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Method;
use rust_decimal::Decimal;
use serde_json::{json, Value};

use crate::Bench;

const CONCURRENCY: usize = 64;
const SUSTAIN: Duration = Duration::from_secs(30);

/// An amount as answered, digit for digit.
fn dec(v: &Value) -> Decimal {
    match v {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.to_string().parse().ok(),
        _ => None,
    }
    .unwrap_or_default()
}

/// What one worker saw: statuses, and the accepted amounts and commissions.
#[derive(Default)]
struct Tally {
    statuses: BTreeMap<u16, u64>,
    amount: Decimal,
    commission: Decimal,
}

async fn worker(b: Arc<Bench>, key: String, code: String, until: Instant) -> Tally {
    let mut t = Tally::default();
    let mut n = 0u64;
    while Instant::now() < until {
        n += 1;
        let amount = Decimal::new(1000 + (n % 97) as i64, 2);
        let amount: Value = serde_json::from_str(&amount.to_string()).expect("a JSON number");
        let body = json!({"amount": amount, "currency": "USD", "conversionType": "SALE",
            "externalId": format!("hot-{}", ulid::Ulid::new()), "affiliateCode": code});
        let (status, out) = b
            .send(
                Method::POST,
                "/api/v1/conversions/postback",
                Some(&key),
                Some(&body),
            )
            .await;
        *t.statuses.entry(status).or_default() += 1;
        if status == 201 {
            t.amount += dec(&out["data"]["amount"]);
            t.commission += dec(&out["data"]["commission"]);
        }
    }
    t
}

/// Runs the load on a fresh campaign and affiliate and prints the result.
pub async fn report(b: Arc<Bench>, key: &str) {
    let k = Some(key);
    let body = json!({"name": "Hot", "commissionType": "PERCENTAGE", "commissionValue": 10});
    let (s, c) = b
        .send(Method::POST, "/api/v1/campaigns", k, Some(&body))
        .await;
    assert_eq!(s, 201, "{c}");
    let campaign = c["data"]["id"].as_str().unwrap().to_string();
    let aff = json!({"campaignId": campaign, "email": "hot@example.com", "name": "Hot", "code": "HOTITEM"});
    let (s, a) = b
        .send(Method::POST, "/api/v1/affiliates", k, Some(&aff))
        .await;
    assert_eq!(s, 201, "{a}");
    let affiliate = a["data"]["id"].as_str().unwrap().to_string();

    let start = Instant::now();
    let until = start + SUSTAIN;
    let workers: Vec<_> = (0..CONCURRENCY)
        .map(|_| tokio::spawn(worker(b.clone(), key.to_string(), "HOTITEM".into(), until)))
        .collect();
    let mut all = Tally::default();
    for w in workers {
        let t = w.await.expect("worker");
        for (s, n) in t.statuses {
            *all.statuses.entry(s).or_default() += n;
        }
        all.amount += t.amount;
        all.commission += t.commission;
    }
    let elapsed = start.elapsed();

    let q = format!("/api/v1/conversions/summary?campaign_id={campaign}");
    let (_, summary) = b.send(Method::GET, &q, k, None).await;
    let totals = &summary["data"]["totals"][0];
    let (_, aff) = b
        .send(
            Method::GET,
            &format!("/api/v1/affiliates/{affiliate}"),
            k,
            None,
        )
        .await;
    let created = all.statuses.get(&201).copied().unwrap_or(0);
    let exact = created > 0
        && totals["count"].as_u64() == Some(created)
        && dec(&totals["revenue"]) == all.amount
        && dec(&totals["commission"]) == all.commission
        && dec(&aff["data"]["earned"]["USD"]) == all.commission;
    println!(
        "Hot items: {CONCURRENCY} postbacks at a time for one tenant and one affiliate for {} s: \
         {created} recorded ({:.0} per second sustained), statuses {:?}; summary count, revenue, \
         commission and the affiliate's earned total {} the accepted postbacks' sums.",
        elapsed.as_secs(),
        created as f64 / elapsed.as_secs_f64(),
        all.statuses,
        if exact { "equal" } else { "DO NOT equal" },
    );
    assert!(
        exact,
        "summary {totals} / affiliate {} vs {created} recorded, {} revenue, {} commission",
        aff["data"]["earned"], all.amount, all.commission
    );
}
