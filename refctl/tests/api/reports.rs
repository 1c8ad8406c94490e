//! Reports and switching over HTTP: the summary's series, the portal's
//! daily series, the referrals list, bulk import, the CSV export, tax forms
//! and the yearly payments report.

use std::collections::BTreeMap;
use std::str::FromStr;

use chrono::{Datelike, Duration, Utc};
use rust_decimal::Decimal;
use serde_json::{json, Value};

use api::domain::tenant::Mode;

use crate::payouts::Fx;
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

async fn referrals(key: &str, query: &str) -> Vec<Value> {
    let r = call("GET", &format!("/api/v1/referrals{query}"), Some(key), None).await;
    assert_eq!(r.status, 200, "{query}: {:?}", r.body);
    r.data().as_array().unwrap().clone()
}

#[tokio::test]
async fn referrals_list_each_customer_once_without_its_email() {
    let (m, c, a, code) = program().await;
    let k = m.test_key.as_str();
    let c2 = id(&campaign(k, json!({})).await);
    let code2 = unique("RQ");
    let a2 = id(&affiliate_with_code(k, &c2, &code2).await);
    let email = format!("{}@buyers.example.com", unique("b").to_lowercase());
    // A customer named by id and e-mail, paying twice: listed once, by its id.
    let cus = unique("cus_");
    for _ in 0..2 {
        sale(
            k,
            json!({"affiliateCode": code, "customerId": cus, "customerEmail": email}),
        )
        .await;
    }
    // One known by e-mail only, and one of the other affiliate.
    let other_mail = format!("{}@buyers.example.com", unique("c").to_lowercase());
    sale(
        k,
        json!({"affiliateCode": code, "customerEmail": other_mail}),
    )
    .await;
    let cus2 = unique("cus_");
    sale(k, json!({"affiliateCode": code2, "customerId": cus2})).await;

    let all = referrals(k, "").await;
    assert_eq!(all.len(), 3, "{all:?}");
    let text = serde_json::to_string(&all).unwrap();
    for secret in [
        email.clone(),
        other_mail.clone(),
        api::domain::referral::email_hash(&email),
    ] {
        assert!(!text.contains(&secret), "{text}");
    }
    // Newest first.
    assert_eq!(all[0]["customerId"], json!(cus2));
    assert_eq!(all[1]["customerId"], Value::Null);
    assert_eq!(all[2]["customerId"], json!(cus));
    let first = &all[2];
    assert!(first["id"].as_str().unwrap().starts_with("ref_"));
    assert_eq!(first["affiliateId"], json!(a));
    assert_eq!(first["campaignId"], json!(c));
    assert_eq!(first["attribution"], "PAYMENT");
    assert!(first["firstPaymentAt"].is_string());
    assert!(first["createdAt"].is_string());

    let mine = referrals(k, &format!("?affiliate_id={a}")).await;
    assert_eq!(mine.len(), 2);
    let theirs = referrals(k, &format!("?campaign_id={c2}")).await;
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0]["affiliateId"], json!(a2));
    assert!(referrals(k, &format!("?affiliate_id={a}&campaign_id={c2}"))
        .await
        .is_empty());
    // Paging, and nobody else's.
    let r = call("GET", "/api/v1/referrals?limit=2", Some(k), None).await;
    assert_eq!(r.data().as_array().unwrap().len(), 2);
    let next = r.body["meta"]["nextCursor"].as_str().unwrap().to_string();
    let rest = referrals(k, &format!("?cursor={next}")).await;
    assert_eq!(rest.len(), 1);
    assert!(referrals(&m.live_key, "").await.is_empty());
    assert!(referrals(&merchant().await.test_key, "").await.is_empty());
    call("GET", "/api/v1/referrals?email=x", Some(k), None)
        .await
        .assert_error(400, "VALIDATION_FAILED");
}

/// A CSV answer's rows as maps of its header's names.
pub fn csv_rows(bytes: &[u8]) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_reader(bytes);
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            header
                .iter()
                .cloned()
                .zip(rec.iter().map(String::from))
                .collect()
        })
        .collect()
}

/// A GET answered with bytes: (status, headers, body).
pub async fn get_bytes(
    key: &str,
    path: &str,
    accept: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    get_bytes_on(&crate::support::server().base, key, path, accept).await
}

/// As [`get_bytes`], from a given server.
pub async fn get_bytes_on(
    base: &str,
    key: &str,
    path: &str,
    accept: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let mut req = crate::support::http_client()
        .get(format!("{base}{path}"))
        .bearer_auth(key);
    if let Some(a) = accept {
        req = req.header("accept", a);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.bytes().await.unwrap().to_vec())
}

#[tokio::test]
async fn the_export_is_csv_of_the_api_fields_page_by_page() {
    let (m, c, _, code) = program().await;
    let k = m.test_key.as_str();
    let now = Utc::now();
    let email = format!("{}@buyers.example.com", unique("e").to_lowercase());
    let mut posted = Vec::new();
    for (i, amount) in [19.99, 0.1, 1234.5, 7.0, 250.25].iter().enumerate() {
        let at = ts(now - Duration::days(i as i64 * 3));
        let body = json!({"affiliateCode": code, "amount": amount, "occurredAt": at,
            "customerEmail": email, "metadata": {"plan": "pro, yearly"}});
        posted.push(sale(k, body).await);
    }
    // Outside the window.
    sale(
        k,
        json!({"affiliateCode": code, "occurredAt": ts(now - Duration::days(40))}),
    )
    .await;

    let from = (now - Duration::days(20)).date_naive();
    let path = format!("/api/v1/conversions/export?from={from}&campaign_id={c}");
    let (status, headers, body) = get_bytes(k, &path, None).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert!(headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    assert!(headers.get("link").is_none());
    let text = String::from_utf8(body.clone()).unwrap();
    assert!(text.starts_with("id,object,externalId,"), "{text}");
    assert!(!text.contains(&email), "no customer e-mail");
    assert!(!text.contains("email:"), "nor its hash");
    let rows = csv_rows(&body);
    assert_eq!(rows.len(), 5);
    // Newest first, every field as the API's own view says it.
    for (row, v) in rows.iter().zip(&posted) {
        assert_eq!(row["id"], v["id"].as_str().unwrap());
        assert_eq!(row["amount"], v["amount"].to_string());
        assert_eq!(row["commission"], v["commission"].to_string());
        assert_eq!(
            row["commissionSource.kind"],
            v["commissionSource"]["kind"].as_str().unwrap()
        );
        assert_eq!(row["risk.level"], v["risk"]["level"].as_str().unwrap());
        assert_eq!(row["occurredAt"], v["occurredAt"].as_str().unwrap());
        assert_eq!(row["payoutId"], "");
        let meta: Value = serde_json::from_str(&row["metadata"]).unwrap();
        assert_eq!(meta, v["metadata"]);
    }
    assert_eq!(rows[2]["amount"], "1234.5");

    // Page by page: the `next` links walk the same rows.
    let mut seen = Vec::new();
    let mut next = Some(format!("{path}&limit=2"));
    let mut answers = 0;
    while let Some(p) = next.take() {
        let (status, headers, body) = get_bytes(k, &p, None).await;
        assert_eq!(status, 200);
        answers += 1;
        seen.extend(csv_rows(&body).into_iter().map(|r| r["id"].clone()));
        next = headers.get("link").map(|l| {
            let l = l.to_str().unwrap();
            l.strip_prefix('<')
                .unwrap()
                .split_once('>')
                .unwrap()
                .0
                .to_string()
        });
    }
    assert_eq!(answers, 3);
    let all: Vec<String> = rows.iter().map(|r| r["id"].clone()).collect();
    assert_eq!(seen, all);

    // Bad windows: 400 in the envelope.
    let long_ago = (now - Duration::days(400)).date_naive();
    for q in [
        String::new(),
        format!("?from={long_ago}"),
        format!("?from={from}&limit=0"),
        format!("?from={from}&cursor=nope"),
        format!("?from={from}&to={long_ago}"),
    ] {
        call(
            "GET",
            &format!("/api/v1/conversions/export{q}"),
            Some(k),
            None,
        )
        .await
        .assert_error(400, "VALIDATION_FAILED");
    }
}

/// Posts an import body (JSON rows, or CSV text); the answer.
async fn import(key: &str, path: &str, body: ImportBody) -> crate::support::Resp {
    let base = &crate::support::server().base;
    let (ctype, bytes) = match body {
        ImportBody::Json(v) => ("application/json", serde_json::to_vec(&v).unwrap()),
        ImportBody::Csv(t) => ("text/csv", t.into_bytes()),
    };
    crate::support::raw(
        base,
        "POST",
        path,
        Some(key),
        &[("content-type", ctype)],
        Some(bytes),
    )
    .await
}

enum ImportBody {
    Json(Value),
    Csv(String),
}

const AFFILIATES_IMPORT: &str = "/api/v1/affiliates/import";
const REFERRALS_IMPORT: &str = "/api/v1/referrals/import";

/// The rows of an outcome list.
fn rows_of(outcome: &Value, list: &str) -> Vec<u64> {
    outcome[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["row"].as_u64().unwrap())
        .collect()
}

async fn affiliate_count(key: &str, campaign: &str) -> usize {
    let path = format!("/api/v1/affiliates?campaign_id={campaign}&limit=100");
    call("GET", &path, Some(key), None)
        .await
        .data()
        .as_array()
        .unwrap()
        .len()
}

#[tokio::test]
async fn affiliates_import_answers_per_row_and_a_rerun_changes_nothing() {
    let (m, c, _, code) = program().await;
    let k = m.test_key.as_str();
    let mail = |n: &str| format!("{n}-{}@partners.example.com", unique("m").to_lowercase());
    let (ann, bob, cat) = (mail("ann"), mail("bob"), mail("cat"));
    let ann_code = unique("ANN");
    let rows = json!([
        {"externalId": "rw_1", "campaignId": c, "email": ann, "name": "Ann", "code": ann_code},
        {"externalId": "rw_2", "campaignId": c, "email": bob, "name": "Bob", "status": "PENDING",
            "payoutMethod": "PAYPAL", "payoutEmail": bob},
        {"externalId": "rw_3", "campaignId": c, "email": "not-an-email", "name": "Bad"},
        {"externalId": "rw_4", "campaignId": "cmp_01JD3Q5W6X7Y8Z9A0B1C2D3E4F", "email": cat, "name": "Cat"},
        {"externalId": "rw_5", "campaignId": c, "email": ann, "name": "Ann again"},
        {"externalId": "rw_6", "campaignId": c, "email": cat, "name": "Cat", "code": code},
        {"externalId": "rw_7", "campaignId": c, "email": cat, "name": "Cat", "nickname": "x"},
        {"campaignId": c, "email": cat, "name": "No id"},
    ]);
    let before = affiliate_count(k, &c).await;
    let r = import(k, AFFILIATES_IMPORT, ImportBody::Json(rows.clone())).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let out = r.data().clone();
    assert_eq!(rows_of(&out, "created"), [0, 1], "{out}");
    assert_eq!(rows_of(&out, "failed"), [2, 3, 4, 5, 6, 7], "{out}");
    let codes: Vec<&str> = out["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        [
            "VALIDATION_FAILED",
            "NOT_FOUND",
            "ALREADY_EXISTS",
            "ALREADY_EXISTS",
            "VALIDATION_FAILED",
            "VALIDATION_FAILED"
        ]
    );
    assert!(
        out["failed"][4]["message"]
            .as_str()
            .unwrap()
            .contains("nickname"),
        "{out}"
    );
    assert_eq!(affiliate_count(k, &c).await, before + 2);
    let ann_id = out["created"][0]["id"].as_str().unwrap().to_string();
    let got = call(
        "GET",
        &format!("/api/v1/affiliates/{ann_id}"),
        Some(k),
        None,
    )
    .await;
    assert_eq!(got.data()["code"], json!(ann_code));
    assert_eq!(got.data()["status"], "ACTIVE");
    let bob_id = out["created"][1]["id"].as_str().unwrap();
    let bob_now = call(
        "GET",
        &format!("/api/v1/affiliates/{bob_id}"),
        Some(k),
        None,
    )
    .await;
    assert_eq!(bob_now.data()["status"], "PENDING");
    let apps = call(
        "GET",
        &format!("/api/v1/applications?campaign_id={c}"),
        Some(k),
        None,
    )
    .await;
    assert_eq!(apps.each("affiliateId"), [json!(bob_id)]);

    // The same rows again: the two are existing, nothing is written.
    let again = import(k, AFFILIATES_IMPORT, ImportBody::Json(rows)).await;
    assert_eq!(rows_of(again.data(), "existing"), [0, 1]);
    assert_eq!(again.data()["existing"][0]["id"], json!(ann_id));
    assert!(again.data()["created"].as_array().unwrap().is_empty());
    assert_eq!(affiliate_count(k, &c).await, before + 2);

    // CSV: a header row, quoted cells, an empty cell is an absent field.
    let dan = mail("dan");
    let csv_text = format!(
        "externalId,campaignId,email,name,code\nfp_9,{c},{dan},\"Dan, Ltd\",\nfp_10,{c},bad,Eve,\n"
    );
    let r = import(k, AFFILIATES_IMPORT, ImportBody::Csv(csv_text)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(rows_of(r.data(), "created"), [0]);
    assert_eq!(rows_of(r.data(), "failed"), [1]);
    let dan_id = r.data()["created"][0]["id"].as_str().unwrap();
    let got = call(
        "GET",
        &format!("/api/v1/affiliates/{dan_id}"),
        Some(k),
        None,
    )
    .await;
    assert_eq!(got.data()["name"], "Dan, Ltd");
    assert_eq!(got.data()["code"].as_str().unwrap().len(), 8, "generated");
    // A missing column: each row says so. A long row fails on its own.
    let no_email = format!("externalId,campaignId,name\nfp_11,{c},Finn\n");
    let r = import(k, AFFILIATES_IMPORT, ImportBody::Csv(no_email)).await;
    assert!(
        r.data()["failed"][0]["message"]
            .as_str()
            .unwrap()
            .contains("email"),
        "{:?}",
        r.body
    );
    let long = format!(
        "externalId,campaignId,email,name\nfp_12,{c},{},{}\n",
        mail("gus"),
        "G".repeat(70_000)
    );
    let r = import(k, AFFILIATES_IMPORT, ImportBody::Csv(long)).await;
    assert_eq!(rows_of(r.data(), "failed"), [0]);

    // Refused whole, nothing written: no rows, 501 rows, a bad header, a
    // ragged line, a wrong content type, not an array.
    let count = affiliate_count(k, &c).await;
    let many: Vec<Value> = (0..501)
        .map(|i| json!({"externalId": format!("many_{i}"), "campaignId": c, "email": mail("m"), "name": "M"}))
        .collect();
    for body in [
        ImportBody::Json(json!([])),
        ImportBody::Json(Value::Array(many)),
        ImportBody::Json(json!({"externalId": "x"})),
        ImportBody::Csv("externalId,email,email\nx,a@b.co,c@d.co\n".into()),
        ImportBody::Csv(format!(
            "externalId,campaignId,email,name\nz1,{c},{},Z,extra\n",
            mail("z")
        )),
        ImportBody::Csv(String::new()),
    ] {
        let r = import(k, AFFILIATES_IMPORT, body).await;
        assert_eq!(r.status, 400, "{:?}", r.body);
    }
    let base = &crate::support::server().base;
    let r = crate::support::raw(
        base,
        "POST",
        AFFILIATES_IMPORT,
        Some(k),
        &[("content-type", "text/plain")],
        Some(b"a,b".to_vec()),
    )
    .await;
    r.assert_error(400, "INVALID_REQUEST");
    assert_eq!(affiliate_count(k, &c).await, count);
}

#[tokio::test]
async fn an_imported_referral_earns_recurring_commission_months_later() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    // 12 months of recurring commission; and a campaign of 3.
    let long = id(&campaign(
        k,
        json!({"commissionRecurring": true, "recurringMonthsLimit": 12}),
    )
    .await);
    let short = id(&campaign(
        k,
        json!({"commissionRecurring": true, "recurringMonthsLimit": 3}),
    )
    .await);
    let (code, short_code) = (unique("IMP"), unique("IMS"));
    let a = id(&affiliate_with_code(k, &long, &code).await);
    affiliate_with_code(k, &short, &short_code).await;
    let five_months_ago = ts(Utc::now() - Duration::days(152));
    let (cus, cus_short, mail) = (
        unique("cus_"),
        unique("cus_"),
        format!("{}@buyers.example.com", unique("r").to_lowercase()),
    );
    let taken = unique("cus_");
    sale(k, json!({"affiliateCode": code, "customerId": taken})).await;
    let rows = json!([
        {"externalId": "ref_1", "campaignId": long, "affiliateCode": code.to_lowercase(), "customerId": cus, "firstPaymentAt": five_months_ago},
        {"externalId": "ref_2", "campaignId": short, "affiliateCode": short_code, "customerId": cus_short, "firstPaymentAt": five_months_ago},
        {"externalId": "ref_3", "campaignId": long, "affiliateId": a, "customerEmail": mail},
        {"externalId": "ref_4", "campaignId": long, "affiliateCode": "NOSUCHCODE", "customerId": unique("cus_")},
        {"externalId": "ref_5", "campaignId": short, "affiliateCode": code, "customerId": unique("cus_")},
        {"externalId": "ref_6", "campaignId": long, "affiliateCode": code, "customerId": taken},
        {"externalId": "ref_7", "campaignId": long, "affiliateCode": code, "customerId": "c", "customerEmail": mail},
        {"externalId": "ref_8", "campaignId": long, "affiliateCode": code, "customerId": unique("cus_"), "firstPaymentAt": "2999-01-01T00:00:00Z"},
    ]);
    let r = import(k, REFERRALS_IMPORT, ImportBody::Json(rows.clone())).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let out = r.data().clone();
    assert_eq!(rows_of(&out, "created"), [0, 1, 2], "{out}");
    assert_eq!(rows_of(&out, "failed"), [3, 4, 5, 6, 7], "{out}");
    let codes: Vec<&str> = out["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        [
            "NOT_FOUND",
            "VALIDATION_FAILED",
            "ALREADY_EXISTS",
            "VALIDATION_FAILED",
            "VALIDATION_FAILED"
        ]
    );
    let again = import(k, REFERRALS_IMPORT, ImportBody::Json(rows)).await;
    assert_eq!(rows_of(again.data(), "existing"), [0, 1, 2]);
    assert_eq!(again.data()["existing"], out["created"]);

    // Listed, by the customer id, as imported.
    let listed = referrals(k, &format!("?affiliate_id={a}")).await;
    let imported = listed
        .iter()
        .find(|r| r["customerId"] == json!(cus))
        .unwrap();
    assert_eq!(imported["attribution"], "IMPORT");
    assert_eq!(imported["id"], out["created"][0]["id"]);
    assert_eq!(
        imported["firstPaymentAt"].as_str().unwrap()[..10],
        five_months_ago[..10]
    );

    // Five months on, the customer's payment earns as recurring in the 12-month campaign...
    let paid = sale(k, json!({"customerId": cus, "amount": 200})).await;
    assert_eq!(paid["affiliateId"], json!(a));
    assert_eq!(paid["isRecurring"], true);
    assert_eq!(dec(&paid["commission"]), Decimal::from(20));
    assert_eq!(paid["paymentNumber"], 2);
    // ...and nothing past the 3-month window.
    let late = sale(k, json!({"customerId": cus_short, "amount": 200})).await;
    assert_eq!(late["isRecurring"], true);
    assert_eq!(dec(&late["commission"]), Decimal::ZERO);
    assert!(late["commissionReason"].is_string(), "{late}");
    // The e-mail customer is the affiliate's too, and its first payment is a first.
    let first = sale(
        k,
        json!({"customerEmail": format!(" {} ", mail.to_uppercase()), "amount": 50}),
    )
    .await;
    assert_eq!(first["affiliateId"], json!(a));
    assert_eq!(first["isRecurring"], false);

    // CSV works the same way.
    let cus3 = unique("cus_");
    let csv_text =
        format!("externalId,campaignId,affiliateCode,customerId\nref_9,{long},{code},{cus3}\n");
    let r = import(k, REFERRALS_IMPORT, ImportBody::Csv(csv_text)).await;
    assert_eq!(rows_of(r.data(), "created"), [0], "{:?}", r.body);
}

const FORM_PDF: &[u8] = b"%PDF-1.4\n% W-9 of a partner\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n";

/// Sends an affiliate's tax form through its portal session; the answer.
async fn send_form(
    fx: &Fx,
    affiliate: &str,
    form_type: &str,
    bytes: &[u8],
) -> crate::support::Resp {
    let path = format!("/api/v1/affiliates/{affiliate}/portal-sessions");
    let token = fx.call("POST", &path, Some(json!({}))).await.data()["token"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/api/v1/portal/tax-form?formType={form_type}");
    let headers = [("content-type", "application/pdf")];
    crate::support::raw(
        &fx.server.base,
        "PUT",
        &path,
        Some(&token),
        &headers,
        Some(bytes.to_vec()),
    )
    .await
}

#[tokio::test]
async fn a_required_tax_form_holds_approval_and_payment_until_it_is_sent() {
    let fx = Fx::new().await;
    let path = format!("/api/v1/campaigns/{}", fx.test_campaign);
    let setting = json!({"taxForm": {"required": true, "fromAmount": 5}});
    let r = fx.call("PUT", &path, Some(setting.clone())).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        r.data()["taxForm"],
        json!({"required": true, "fromAmount": 5})
    );
    let ids = fx.invoiced(Mode::Test, 2).await;
    let mut owners = Vec::new();
    for id in &ids {
        let p = fx.call("GET", &format!("/api/v1/payouts/{id}"), None).await;
        owners.push(p.data()["affiliateId"].as_str().unwrap().to_string());
    }
    let (ann, bob) = (owners[0].clone(), owners[1].clone());

    // Without a form: approve and batch-process refuse, nothing moves.
    let approve = |id: &str| format!("/api/v1/payouts/{id}/approve");
    fx.call("POST", &approve(&ids[0]), None)
        .await
        .assert_error(409, "INVALID_STATE");
    assert_eq!(fx.status_of(Mode::Test, &ids[0]).await, "INVOICE_UPLOADED");
    let missing = format!(
        "/api/v1/affiliates?campaign_id={}&tax_form=MISSING",
        fx.test_campaign
    );
    let listed = fx.call("GET", &missing, None).await.each("id");
    assert!(
        listed.contains(&json!(ann)) && listed.contains(&json!(bob)),
        "{listed:?}"
    );

    // Ann sends hers: bad files and types first.
    for (form_type, bytes, status) in [
        ("W-9", b"GIF89a not a pdf".as_slice(), 400),
        ("W-10", FORM_PDF, 400),
        ("W-9", b"".as_slice(), 400),
    ] {
        assert_eq!(send_form(&fx, &ann, form_type, bytes).await.status, status);
    }
    let big = [FORM_PDF, &vec![b' '; 4 * 1024 * 1024]].concat();
    assert_eq!(send_form(&fx, &ann, "W-9", &big).await.status, 400);
    assert_eq!(
        fx.call("GET", &format!("/api/v1/affiliates/{ann}/tax-form"), None)
            .await
            .status,
        404
    );
    let sent = send_form(&fx, &ann, "w-8ben", FORM_PDF).await;
    assert_eq!(sent.status, 200, "{:?}", sent.body);
    assert_eq!(sent.data()["formType"], "W-8BEN");
    let a = fx
        .call("GET", &format!("/api/v1/affiliates/{ann}"), None)
        .await;
    assert_eq!(a.data()["taxForm"]["formType"], "W-8BEN");
    assert!(
        a.data()["taxForm"].get("key").is_none(),
        "no storage key shown"
    );
    let (status, headers, body) = {
        let resp = crate::support::http_client()
            .get(format!(
                "{}/api/v1/affiliates/{ann}/tax-form",
                fx.server.base
            ))
            .bearer_auth(&fx.m.test_key)
            .send()
            .await
            .unwrap();
        (
            resp.status().as_u16(),
            resp.headers().clone(),
            resp.bytes().await.unwrap(),
        )
    };
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/pdf");
    assert_eq!(&body[..], FORM_PDF);
    let listed = fx.call("GET", &missing, None).await.each("id");
    assert!(
        !listed.contains(&json!(ann)) && listed.contains(&json!(bob)),
        "{listed:?}"
    );
    // Another account's affiliate: 404.
    let other = merchant().await;
    let r = call(
        "GET",
        &format!("/api/v1/affiliates/{ann}/tax-form"),
        Some(&other.test_key),
        None,
    )
    .await;
    assert_eq!(r.status, 404);

    // Ann's payout is approved and paid; Bob's still waits in the batch.
    assert_eq!(fx.call("POST", &approve(&ids[0]), None).await.status, 200);
    let body = json!({"payoutIds": [ids[0], ids[1]]});
    let r = fx
        .call("POST", "/api/v1/payouts/batch-process", Some(body))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["processed"][0]["id"], json!(ids[0]));
    assert_eq!(r.data()["processed"][0]["status"], "PAID");
    assert_eq!(r.data()["failed"][0]["id"], json!(ids[1]));
    assert_eq!(r.data()["failed"][0]["code"], "INVALID_STATE");
    assert!(r.data()["failed"][0]["message"]
        .as_str()
        .unwrap()
        .contains("tax form"));
    assert_eq!(fx.status_of(Mode::Test, &ids[1]).await, "INVOICE_UPLOADED");

    // The setting removed: Bob is paid without a form.
    let r = fx.call("PUT", &path, Some(json!({"taxForm": null}))).await;
    assert_eq!(r.data()["taxForm"], Value::Null);
    let body = json!({"payoutIds": [ids[1]]});
    let r = fx
        .call("POST", "/api/v1/payouts/batch-process", Some(body))
        .await;
    assert_eq!(r.data()["processed"][0]["status"], "PAID", "{:?}", r.body);
}

#[tokio::test]
async fn the_payments_report_adds_up_the_year_s_paid_payouts_as_json_or_csv() {
    let fx = Fx::new().await;
    let ids = fx.approved(Mode::Test, 2).await;
    let body = json!({"payoutIds": ids});
    let r = fx
        .call("POST", "/api/v1/payouts/batch-process", Some(body))
        .await;
    assert_eq!(
        r.data()["processed"].as_array().unwrap().len(),
        2,
        "{:?}",
        r.body
    );
    let paid: Vec<Value> = r.data()["processed"].as_array().unwrap().clone();
    // A third affiliate's payout, not paid: not in the report.
    fx.invoiced(Mode::Test, 1).await;
    let ann = paid[0]["affiliateId"].as_str().unwrap().to_string();
    assert_eq!(send_form(&fx, &ann, "W-9", FORM_PDF).await.status, 200);

    let year = Utc::now().year();
    let r = fx
        .call(
            "GET",
            &format!("/api/v1/reports/payments?year={year}"),
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let rows = r.data().as_array().unwrap().clone();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for p in &paid {
        let row = rows
            .iter()
            .find(|x| x["affiliateId"] == p["affiliateId"])
            .unwrap();
        assert_eq!(row["total"], p["amount"]);
        assert_eq!(row["count"], 1);
        assert_eq!(row["currency"], "USD");
        assert_eq!(row["methods"], json!(["PAYPAL"]));
        let a = fx
            .call(
                "GET",
                &format!("/api/v1/affiliates/{}", p["affiliateId"].as_str().unwrap()),
                None,
            )
            .await;
        assert_eq!(row["name"], a.data()["name"]);
        let form = if p["affiliateId"] == json!(ann) {
            json!("W-9")
        } else {
            Value::Null
        };
        assert_eq!(row["taxFormType"], form);
    }
    // The same rows as CSV.
    let path = format!("/api/v1/reports/payments?year={year}");
    let (status, headers, body) =
        get_bytes_on(&fx.server.base, &fx.m.test_key, &path, Some("text/csv")).await;
    assert_eq!(status, 200);
    assert!(headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    let csv_rows = csv_rows(&body);
    assert_eq!(csv_rows.len(), 2);
    for (c, j) in csv_rows.iter().zip(&rows) {
        assert_eq!(c["affiliateId"], j["affiliateId"].as_str().unwrap());
        assert_eq!(c["total"], j["total"].to_string());
        assert_eq!(c["methods"], "PAYPAL");
        assert_eq!(c["taxFormType"], j["taxFormType"].as_str().unwrap_or(""));
    }
    // Another year is empty; a bad one is 400.
    let r = fx
        .call("GET", "/api/v1/reports/payments?year=2001", None)
        .await;
    assert_eq!(r.data(), &json!([]));
    for bad in ["1999", "20x6", "10000"] {
        fx.call("GET", &format!("/api/v1/reports/payments?year={bad}"), None)
            .await
            .assert_error(400, "VALIDATION_FAILED");
    }
}

#[tokio::test]
async fn an_export_answer_of_large_rows_ends_early_and_the_next_one_goes_on() {
    let (m, c, _, code) = program().await;
    let k = m.test_key.as_str();
    // Metadata at its limits: 50 keys of 40 characters, values of 500.
    let metadata: serde_json::Map<String, Value> = (0..50)
        .map(|i| (format!("{i:0>40}"), json!("v".repeat(500))))
        .collect();
    let mut posted = Vec::new();
    for _ in 0..100 {
        let body = json!({"affiliateCode": code, "metadata": metadata});
        posted.push(id(&sale(k, body).await));
    }
    let from = (Utc::now() - Duration::days(1)).date_naive();
    let mut next = Some(format!(
        "/api/v1/conversions/export?from={from}&campaign_id={c}"
    ));
    let (mut seen, mut sizes) = (Vec::new(), Vec::new());
    while let Some(p) = next.take() {
        let (status, headers, body) = get_bytes(k, &p, None).await;
        assert_eq!(
            status,
            200,
            "{}",
            String::from_utf8_lossy(&body[..200.min(body.len())])
        );
        sizes.push(body.len());
        seen.extend(csv_rows(&body).into_iter().map(|r| r["id"].clone()));
        next = headers.get("link").map(|l| {
            let l = l.to_str().unwrap();
            l.strip_prefix('<')
                .unwrap()
                .split_once('>')
                .unwrap()
                .0
                .to_string()
        });
    }
    // Two answers (about 2.5 MB, then the rest), every row once, newest first.
    assert_eq!(sizes.len(), 2, "{sizes:?}");
    let budget = api::services::conversion_export::BYTES_PER_ANSWER;
    assert!(
        sizes[0] >= budget && sizes[0] < budget + 64 * 1024,
        "{sizes:?}"
    );
    posted.reverse();
    assert_eq!(seen, posted);
}

#[tokio::test]
async fn payouts_asked_together_count_towards_the_tax_form_amount() {
    let fx = Fx::new().await;
    let path = format!("/api/v1/campaigns/{}", fx.test_campaign);
    let setting = json!({"taxForm": {"required": true, "fromAmount": 15}});
    assert_eq!(fx.call("PUT", &path, Some(setting)).await.status, 200);
    // Two payouts of 10.00 USD for one affiliate: each under 15, together over.
    let a = fx.earner(Mode::Test, "PAYPAL", &[100]).await;
    fx.run_job().await;
    let code = fx
        .call("GET", &format!("/api/v1/affiliates/{a}"), None)
        .await
        .data()["code"]
        .as_str()
        .unwrap()
        .to_string();
    {
        let _alone = crate::payouts::JOBS.lock().await;
        fx.sell(Mode::Test, &code, 100, "USD").await;
    }
    fx.run_job().await;
    let payouts = fx.payouts_of(Mode::Test, &a).await;
    assert_eq!(payouts.len(), 2, "{payouts:?}");
    let (second, first) = (id(&payouts[0]), id(&payouts[1]));
    for p in [&first, &second] {
        fx.attach(Mode::Test, p).await;
    }
    // Asked together, the first goes and the second waits.
    let body = json!({"payoutIds": [first, second]});
    let r = fx
        .call("POST", "/api/v1/payouts/batch-process", Some(body))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["processed"][0]["id"], json!(first), "{:?}", r.body);
    assert_eq!(r.data()["failed"][0]["id"], json!(second));
    assert_eq!(r.data()["failed"][0]["code"], "INVALID_STATE");
    // Alone now, it counts the first one paid: it still waits.
    fx.call("POST", &format!("/api/v1/payouts/{second}/approve"), None)
        .await
        .assert_error(409, "INVALID_STATE");
    assert_eq!(send_form(&fx, &a, "W-9", FORM_PDF).await.status, 200);
    let r = fx
        .call("POST", &format!("/api/v1/payouts/{second}/approve"), None)
        .await;
    assert_eq!(r.data()["status"], "APPROVED", "{:?}", r.body);
}
