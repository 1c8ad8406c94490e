//! Reports and switching over HTTP: the summary's series, the portal's
//! daily series, the referrals list, bulk import, the CSV export, tax forms
//! and the yearly payments report.

use std::collections::BTreeMap;
use std::str::FromStr;

use chrono::{Datelike, Duration, Utc};
use rust_decimal::Decimal;
use serde_json::{json, Value};

use crate::support::{affiliate_with_code, call, campaign, merchant, Merchant};

pub fn unique(prefix: &str) -> String {
    let id = ulid::Ulid::new().to_string();
    format!("{prefix}{}", &id[id.len() - 10..])
}

pub fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

fn dec(v: &Value) -> Decimal {
    Decimal::from_str(&v.to_string()).unwrap()
}

/// A merchant with a campaign (10%) and one affiliate: (merchant, campaign, affiliate, code).
pub async fn program() -> (Merchant, String, String, String) {
    let m = merchant().await;
    let c = id(&campaign(&m.test_key, json!({"isPublic": true})).await);
    let code = unique("RP");
    let a = id(&affiliate_with_code(&m.test_key, &c, &code).await);
    (m, c, a, code)
}

/// A sale through the postback; the conversion.
pub async fn sale(key: &str, body: Value) -> Value {
    let mut b = json!({"amount": 100, "currency": "USD", "externalId": unique("ord"),
        "conversionType": "SALE"});
    for (k, v) in body.as_object().unwrap() {
        b[k] = v.clone();
    }
    let r = call("POST", "/api/v1/conversions/postback", Some(key), Some(b)).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    r.data().clone()
}

fn ts(t: chrono::DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

type Buckets = BTreeMap<(String, String), (Decimal, Decimal, i64)>;

fn points(series: &Value) -> Buckets {
    series
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let key = (
                p["date"].as_str().unwrap().to_string(),
                p["currency"].as_str().unwrap().to_string(),
            );
            let f = (
                dec(&p["revenue"]),
                dec(&p["commission"]),
                p["count"].as_i64().unwrap(),
            );
            (key, f)
        })
        .collect()
}

async fn summary(key: &str, query: &str) -> Value {
    let path = format!("/api/v1/conversions/summary{query}");
    let r = call("GET", &path, Some(key), None).await;
    assert_eq!(r.status, 200, "{query}: {:?}", r.body);
    r.data().clone()
}

#[tokio::test]
async fn the_summary_series_buckets_conversions_by_day_week_and_month() {
    let (m, _, _, code) = program().await;
    let k = m.test_key.as_str();
    let now = Utc::now();
    let posts = [
        (0, 10.5, "USD"),
        (1, 20.0, "USD"),
        (1, 7.25, "EUR"),
        (1, 5.0, "USD"),
        (9, 40.0, "USD"),
        (23, 12.0, "USD"),
        (47, 99.99, "EUR"),
    ];
    let first = (now - Duration::days(50)).date_naive();
    let mut want: BTreeMap<&str, Buckets> = BTreeMap::new();
    for (days_ago, amount, currency) in posts {
        let at = now - Duration::days(days_ago);
        let body = json!({"affiliateCode": code, "amount": amount, "currency": currency,
            "occurredAt": ts(at)});
        let v = sale(k, body).await;
        let day = at.date_naive();
        let week = day - Duration::days(i64::from(day.weekday().num_days_from_monday()));
        let month = day.with_day(1).unwrap();
        for (by, date) in [("day", day), ("week", week), ("month", month)] {
            let f = want
                .entry(by)
                .or_default()
                .entry((date.to_string(), currency.to_string()))
                .or_default();
            f.0 += dec(&v["amount"]);
            f.1 += dec(&v["commission"]);
            f.2 += 1;
        }
    }
    // A reversed conversion leaves the series, as it leaves the totals.
    let gone = sale(k, json!({"affiliateCode": code, "amount": 1000})).await;
    let path = format!("/api/v1/conversions/{}/reverse", id(&gone));
    assert_eq!(call("POST", &path, Some(k), None).await.status, 200);

    let window = format!("from={first}&to={}", now.date_naive());
    for by in ["day", "week", "month"] {
        let s = summary(k, &format!("?{window}&group_by={by}")).await;
        assert_eq!(points(&s["series"]), want[by], "{by}");
        assert_eq!(s["period"], Value::Null);
        assert_eq!(s["from"], format!("{first}T00:00:00.000Z"));
        assert!(s["groups"].as_array().unwrap().is_empty());
        // The series adds up to the totals.
        let total: i64 = s["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["count"].as_i64().unwrap())
            .sum();
        let counted: i64 = s["totals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["count"].as_i64().unwrap())
            .sum();
        assert_eq!((total, counted), (7, 7), "{by}");
    }
    // A period works too; a 7-day one holds the 4 recent sales only.
    let s = summary(k, "?period=7d&group_by=DAY").await;
    assert_eq!(s["period"], "7d");
    let recent: i64 = points(&s["series"]).values().map(|f| f.2).sum();
    assert_eq!(recent, 4);
    // A window of days inside the data: only its days.
    let yesterday = (now - Duration::days(1)).date_naive();
    let s = summary(k, &format!("?from={yesterday}&to={yesterday}&group_by=day")).await;
    let only: Vec<_> = points(&s["series"]).into_keys().collect();
    assert_eq!(
        only,
        [
            (yesterday.to_string(), "EUR".to_string()),
            (yesterday.to_string(), "USD".to_string())
        ]
    );

    // Bad windows: 400, nothing read.
    let long_ago = (now - Duration::days(366)).date_naive();
    for q in [
        format!("?from={long_ago}&group_by=day"),
        format!("?from={first}&period=7d"),
        "?period=all&group_by=week".to_string(),
        format!("?to={first}"),
        format!("?from={}&to={first}", now.date_naive()),
        "?from=yesterday".to_string(),
        "?group_by=hour".to_string(),
    ] {
        let path = format!("/api/v1/conversions/summary{q}");
        call("GET", &path, Some(k), None)
            .await
            .assert_error(400, "VALIDATION_FAILED");
    }
    // 366 days is the most.
    let longest = (now - Duration::days(365)).date_naive();
    let s = summary(k, &format!("?from={longest}&group_by=month")).await;
    let months: i64 = points(&s["series"]).values().map(|f| f.2).sum();
    assert_eq!(months, 7);
}
