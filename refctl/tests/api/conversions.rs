//! Conversions: attribution paths, commission arithmetic and recurring rules,
//! idempotency under concurrency, the summary, the quota, lists and reversal.

use std::collections::BTreeMap;
use std::str::FromStr;

use api::domain::referral::{email_hash, CustomerKey};
use api::domain::tenant::{Mode, Tenant};
use api::domain::timestamp;
use api::domain::tracking::{Click, ClickIds};
use api::store::keys::{self, GUARD_SK, RECORD_SK, TOTALS_SK};
use api::store::{accounts, clicks, string_value as attr};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Duration, Months, Utc};
use rust_decimal::Decimal;
use serde_json::{json, Value};

use crate::support::{
    affiliate_with_code, app_for, call, campaign, merchant, server, Merchant, Resp, TINY_PLAN,
    TINY_QUOTA,
};

const POSTBACK: &str = "/api/v1/conversions/postback";

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

fn dec(v: &Value) -> Decimal {
    Decimal::from_str(&v.to_string()).unwrap_or_else(|_| panic!("{v} is not a number"))
}

fn ts(t: DateTime<Utc>) -> String {
    timestamp::format(&t)
}

fn unique(prefix: &str) -> String {
    format!("{prefix}_{}", ulid::Ulid::new())
}

/// A public campaign (clicks need one) of a fresh merchant with one affiliate.
async fn setup(campaign_extra: Value) -> (Merchant, String, String, String) {
    let m = merchant().await;
    let mut body = json!({"isPublic": true});
    for (k, v) in campaign_extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let c = id(&campaign(&m.test_key, body).await);
    let code = format!("P{}", &ulid::Ulid::new().to_string()[18..]);
    let a = affiliate(&m.test_key, &c, &code).await;
    (m, c, a, code)
}

/// A click through the public API: (clickId, sessionId).
async fn click(campaign_id: &str, code: &str) -> (String, String) {
    let r = call(
        "POST",
        "/api/v1/track/click",
        None,
        Some(json!({"campaignId": campaign_id, "ref": code})),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    (
        r.data()["clickId"].as_str().unwrap().to_string(),
        r.data()["sessionId"].as_str().unwrap().to_string(),
    )
}

/// A click made in the past, written directly (the API only makes clicks now).
async fn past_click(
    m: &Merchant,
    campaign_id: &str,
    affiliate_id: &str,
    at: DateTime<Utc>,
    cookie_days: i64,
) -> String {
    let app = app_for(server()).await;
    let ids = ClickIds::generate();
    let expires = at + Duration::days(cookie_days);
    let c = Click {
        id: ids.click_id.clone(),
        tenant: Tenant::new(m.account_id.clone(), Mode::Test).key(),
        campaign_id: campaign_id.to_string(),
        affiliate_id: affiliate_id.to_string(),
        code: "past".into(),
        created_at: at,
        expires_at: expires,
        ttl: expires.timestamp(),
        landing_url: None,
        referrer: None,
        ip_hash: None,
        previous_session_id: None,
        flooded: false,
        customers_bound: 0,
    };
    clicks::insert(&app.store, &c).await.unwrap();
    ids.click_id
}

async fn postback(key: &str, body: Value) -> Resp {
    call("POST", POSTBACK, Some(key), Some(body)).await
}

/// A postback that must create a conversion; returns it.
async fn convert(key: &str, extra: Value) -> Value {
    let mut body = json!({
        "amount": 100, "currency": "USD", "externalId": unique("ord"), "conversionType": "SALE",
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let r = postback(key, body).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert!(r.header("idempotent-replayed").is_none());
    r.data().clone()
}

async fn summary(key: &str, query: &str) -> Value {
    let r = call(
        "GET",
        &format!("/api/v1/conversions/summary{query}"),
        Some(key),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.data().clone()
}

async fn list(key: &str, query: &str) -> Resp {
    call(
        "GET",
        &format!("/api/v1/conversions{query}"),
        Some(key),
        None,
    )
    .await
}

fn list_ids(r: &Resp) -> Vec<String> {
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.data().as_array().unwrap().iter().map(id).collect()
}

#[tokio::test]
async fn each_attribution_path_finds_its_affiliate() {
    let (m, c, a_click, code_click) = setup(json!({})).await;
    let k = m.test_key.as_str();
    let a_session = affiliate(k, &c, &format!("{code_click}S")).await;
    let a_code = affiliate(k, &c, &format!("{code_click}C")).await;
    let a_email = affiliate(k, &c, &format!("{code_click}E")).await;
    let a_hash = affiliate(k, &c, &format!("{code_click}H")).await;
    let a_cid = affiliate(k, &c, &format!("{code_click}I")).await;

    // Click id.
    let (clk, _) = click(&c, &code_click).await;
    let v = convert(k, json!({"clickId": clk, "amount": 50})).await;
    assert_eq!(v["affiliateId"], a_click.as_str());
    assert_eq!(v["campaignId"], c.as_str());
    assert_eq!(v["attribution"], "CLICK");
    assert_eq!(v["status"], "PENDING");
    assert_eq!(dec(&v["commission"]), Decimal::from(5));
    assert_eq!(v["customerRef"], CustomerKey::from_click(&clk).to_string());
    assert_eq!(v["isRecurring"], false);

    // Session id.
    let (_, ses) = click(&c, &format!("{code_click}S")).await;
    let v = convert(k, json!({"sessionId": ses})).await;
    assert_eq!(v["affiliateId"], a_session.as_str());
    assert_eq!(v["attribution"], "SESSION");

    // Affiliate code, in any letter case.
    let v = convert(
        k,
        json!({"affiliateCode": format!("{code_click}C").to_lowercase()}),
    )
    .await;
    assert_eq!(v["affiliateId"], a_code.as_str());
    assert_eq!(v["attribution"], "CODE");
    assert_eq!(v["customerRef"], Value::Null, "no customer named");

    // E-mail after identify.
    let (_, ses) = click(&c, &format!("{code_click}E")).await;
    let r = call(
        "POST",
        "/api/v1/track/identify",
        None,
        Some(json!({"sessionId": ses, "customerEmail": "Buyer.One@Example.com"})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let v = convert(k, json!({"customerEmail": " buyer.one@example.COM "})).await;
    assert_eq!(v["affiliateId"], a_email.as_str());
    assert_eq!(v["attribution"], "EMAIL");
    assert_eq!(
        v["customerRef"],
        format!("email:{}", email_hash("buyer.one@example.com"))
    );
    assert!(
        !v.to_string().to_lowercase().contains("buyer.one"),
        "the plain e-mail is never stored or returned"
    );

    // E-mail hash (identify and postback both with the hash).
    let hash = email_hash("second@example.com");
    let (_, ses) = click(&c, &format!("{code_click}H")).await;
    let r = call(
        "POST",
        "/api/v1/track/identify",
        None,
        Some(json!({"sessionId": ses, "customerEmailHash": hash})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let v = convert(k, json!({"customerEmailHash": hash})).await;
    assert_eq!(v["affiliateId"], a_hash.as_str());
    assert_eq!(v["attribution"], "EMAIL");

    // Customer id bound by identify (ext method CUSTOMER).
    let (_, ses) = click(&c, &format!("{code_click}I")).await;
    let r = call(
        "POST",
        "/api/v1/track/identify",
        None,
        Some(json!({"sessionId": ses, "customerId": "cus_identify"})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let v = convert(k, json!({"customerId": "cus_identify"})).await;
    assert_eq!(v["affiliateId"], a_cid.as_str());
    assert_eq!(v["attribution"], "CUSTOMER");
    assert_eq!(v["customerRef"], "cid:cus_identify");

    // The order: a click beats a code.
    let (clk, _) = click(&c, &code_click).await;
    let v = convert(
        k,
        json!({"clickId": clk, "affiliateCode": format!("{code_click}C")}),
    )
    .await;
    assert_eq!(v["affiliateId"], a_click.as_str());
    assert_eq!(v["attribution"], "CLICK");

    // Unknown and malformed signals are skipped, never errors.
    let v = convert(
        k,
        json!({"affiliateCode": "NOPE-NOT-A-CODE", "clickId": "clk_garbage", "sessionId": "ses_01JD3Q5W6X7Y8Z9A0B1C2D3E4F"}),
    )
    .await;
    assert_eq!(v["status"], "UNATTRIBUTED");
    assert_eq!(v["attribution"], "NONE");
    assert_eq!(v["affiliateId"], Value::Null);
    assert_eq!(v["campaignId"], Value::Null);
    assert_eq!(dec(&v["commission"]), Decimal::ZERO);
    assert_eq!(v["commissionReason"], "UNATTRIBUTED");

    // campaignId restricts attribution and files the unattributed payment.
    let other = id(&campaign(k, json!({"name": "Other"})).await);
    let v = convert(
        k,
        json!({"affiliateCode": format!("{code_click}C"), "campaignId": other}),
    )
    .await;
    assert_eq!(v["status"], "UNATTRIBUTED");
    assert_eq!(v["campaignId"], other.as_str());
    let r = postback(
        k,
        json!({"amount": 1, "currency": "USD", "externalId": unique("ord"), "conversionType": "SALE", "campaignId": "cmp_01JD3Q5W6X7Y8Z9A0B1C2D3E4F"}),
    )
    .await;
    r.assert_error(404, "NOT_FOUND");

    // Another account's code and clicks do not attribute.
    let other_m = merchant().await;
    let v = convert(
        &other_m.test_key,
        json!({"affiliateCode": code_click, "clickId": clk}),
    )
    .await;
    assert_eq!(v["status"], "UNATTRIBUTED");
}

#[tokio::test]
async fn a_click_counts_only_inside_its_window() {
    let (m, c, a, _) = setup(json!({"cookieDays": 30})).await;
    let k = m.test_key.as_str();
    let now = Utc::now();
    let made = now - Duration::days(40);
    // Inside the window at occurredAt, even though the click has expired since.
    let inside = past_click(&m, &c, &a, made, 30).await;
    let v = convert(
        k,
        json!({"clickId": inside, "occurredAt": ts(now - Duration::days(20))}),
    )
    .await;
    assert_eq!(v["attribution"], "CLICK");
    assert_eq!(v["isRecurring"], false);
    // After the window.
    let late = past_click(&m, &c, &a, made, 30).await;
    let v = convert(k, json!({"clickId": late})).await;
    assert_eq!(v["status"], "UNATTRIBUTED");
    // Before the click (beyond five minutes of clock skew).
    let early = past_click(&m, &c, &a, made, 30).await;
    let v = convert(
        k,
        json!({"clickId": early, "occurredAt": ts(made - Duration::minutes(6))}),
    )
    .await;
    assert_eq!(v["status"], "UNATTRIBUTED");
    let v = convert(
        k,
        json!({"clickId": early, "occurredAt": ts(made - Duration::minutes(4))}),
    )
    .await;
    assert_eq!(v["attribution"], "CLICK");
    // Once a payment came through a click, the click names that customer for
    // good: a later payment naming it is the same customer's, window or not.
    let v = convert(k, json!({"clickId": inside})).await;
    assert_eq!(v["attribution"], "CLICK");
    assert_eq!(v["isRecurring"], true);
    assert_eq!(v["commissionReason"], "NOT_RECURRING");
}

#[tokio::test]
async fn a_suspended_affiliate_earns_nothing() {
    let (m, _c, a, code) = setup(json!({})).await;
    let k = m.test_key.as_str();
    let r = call(
        "PUT",
        &format!("/api/v1/affiliates/{a}"),
        Some(k),
        Some(json!({"status": "SUSPENDED"})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let v = convert(k, json!({"affiliateCode": code, "amount": 80})).await;
    assert_eq!(v["affiliateId"], a.as_str(), "still attributed");
    assert_eq!(v["status"], "PENDING");
    assert_eq!(dec(&v["commission"]), Decimal::ZERO);
    assert_eq!(v["commissionReason"], "AFFILIATE_NOT_ACTIVE");
    let aff = call("GET", &format!("/api/v1/affiliates/{a}"), Some(k), None).await;
    assert_eq!(aff.data()["earned"], json!({}), "nothing earned");

    // Reactivated, it earns again.
    call(
        "PUT",
        &format!("/api/v1/affiliates/{a}"),
        Some(k),
        Some(json!({"status": "ACTIVE"})),
    )
    .await;
    let v = convert(k, json!({"affiliateCode": code, "amount": 80})).await;
    assert_eq!(dec(&v["commission"]), Decimal::from(8));
    let aff = call("GET", &format!("/api/v1/affiliates/{a}"), Some(k), None).await;
    assert_eq!(dec(&aff.data()["earned"]["USD"]), Decimal::from(8));
}

/// Postbacks take campaigns and affiliates from the process's cache, yet a
/// change made a moment before is always seen: new terms apply at once, a
/// suspension stops earning at once, a reactivation earns again at once.
#[tokio::test]
async fn cached_campaigns_and_affiliates_never_give_stale_terms_or_status() {
    let (m, c, a, code) =
        setup(json!({"commissionType": "PERCENTAGE", "commissionValue": 10})).await;
    let k = m.test_key.as_str();
    let pay = |amount: i64| convert(k, json!({"affiliateCode": code, "amount": amount}));
    assert_eq!(dec(&pay(100).await["commission"]), Decimal::from(10));
    assert_eq!(
        dec(&pay(100).await["commission"]),
        Decimal::from(10),
        "from the cache"
    );

    let path = format!("/api/v1/campaigns/{c}");
    let r = call("PUT", &path, Some(k), Some(json!({"commissionValue": 25}))).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        dec(&pay(100).await["commission"]),
        Decimal::from(25),
        "new terms at once"
    );

    let path = format!("/api/v1/affiliates/{a}");
    let r = call("PUT", &path, Some(k), Some(json!({"status": "SUSPENDED"}))).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let v = pay(100).await;
    assert_eq!(dec(&v["commission"]), Decimal::ZERO, "suspended at once");
    assert_eq!(v["commissionReason"], "AFFILIATE_NOT_ACTIVE");

    let r = call("PUT", &path, Some(k), Some(json!({"status": "ACTIVE"}))).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        dec(&pay(100).await["commission"]),
        Decimal::from(25),
        "active again at once"
    );
    let aff = call("GET", &path, Some(k), None).await;
    assert_eq!(dec(&aff.data()["earned"]["USD"]), Decimal::from(70));
}

#[tokio::test]
async fn commission_arithmetic_is_exact() {
    let (m, c, _a, code) = setup(json!({"commissionValue": 10})).await;
    let k = m.test_key.as_str();
    let v = convert(
        k,
        json!({"affiliateCode": code, "amount": 19.99, "currency": "usd"}),
    )
    .await;
    assert_eq!(v["currency"], "USD");
    assert_eq!(dec(&v["amount"]).to_string(), "19.99");
    assert_eq!(dec(&v["commission"]), Decimal::from_str("2.00").unwrap());

    let c15 = id(&campaign(k, json!({"commissionValue": 15})).await);
    let code15 = format!("{code}J");
    affiliate(k, &c15, &code15).await;
    let v = convert(
        k,
        json!({"affiliateCode": code15, "amount": 1000, "currency": "JPY"}),
    )
    .await;
    assert_eq!(v["commission"], 150);
    assert_eq!(v["amount"], 1000);

    let fixed = id(&campaign(
        k,
        json!({"commissionType": "FIXED", "commissionValue": 25.5, "currency": "EUR"}),
    )
    .await);
    let code_f = format!("{code}F");
    affiliate(k, &fixed, &code_f).await;
    let v = convert(
        k,
        json!({"affiliateCode": code_f, "amount": 9.99, "currency": "EUR"}),
    )
    .await;
    assert_eq!(dec(&v["commission"]), Decimal::from_str("25.5").unwrap());
    assert_eq!(v["commissionReason"], Value::Null);
    let v = convert(
        k,
        json!({"affiliateCode": code_f, "amount": 100, "currency": "USD"}),
    )
    .await;
    assert_eq!(dec(&v["commission"]), Decimal::ZERO);
    assert_eq!(v["commissionReason"], "CURRENCY_MISMATCH");

    // KWD keeps three decimals; 12.345 at 10% = 1.2345 -> 1.234 (half-even).
    let v = convert(
        k,
        json!({"affiliateCode": code, "amount": 12.345, "currency": "KWD"}),
    )
    .await;
    assert_eq!(dec(&v["commission"]).to_string(), "1.234");
    let _ = c;

    // What the seed forbids.
    let base = |extra: Value| {
        let mut b = json!({"amount": 10, "currency": "USD", "externalId": unique("bad"), "conversionType": "SALE"});
        for (key, val) in extra.as_object().unwrap() {
            b[key] = val.clone();
        }
        b
    };
    for (bad, path) in [
        (json!({"amount": 0}), "amount"),
        (json!({"amount": -5}), "amount"),
        (json!({"amount": 19.999}), "amount"),
        (json!({"amount": 10.5, "currency": "JPY"}), "amount"),
        (json!({"amount": "10"}), "amount"),
        (json!({"currency": "ABC"}), "currency"),
        (json!({"currency": "US"}), "currency"),
        (json!({"conversionType": "REFUND"}), "conversionType"),
        (json!({"conversionType": "LEAD"}), "amount"),
        (json!({"externalId": ""}), "externalId"),
        (json!({"unknown": 1}), "unknown"),
        (json!({"customerEmail": "nope"}), "customerEmail"),
        (
            json!({"occurredAt": ts(Utc::now() + Duration::minutes(10))}),
            "occurredAt",
        ),
    ] {
        let r = postback(k, base(bad.clone())).await;
        r.assert_error(400, "VALIDATION_FAILED");
        assert_eq!(
            r.body["error"]["details"][0]["path"],
            json!([path]),
            "{bad}: {:?}",
            r.body
        );
    }
}

/// Posts a payment of a customer at a back-dated time.
async fn pay(key: &str, extra: Value, at: DateTime<Utc>) -> Value {
    let mut body = extra;
    body["occurredAt"] = json!(ts(at));
    convert(key, body).await
}

#[tokio::test]
async fn recurring_rules_follow_the_first_payment() {
    let now = Utc::now();
    let ago = |months: u32| now.checked_sub_months(Months::new(months)).unwrap();

    // Not recurring: the second payment earns 0.
    let (m, _, _, code) = setup(json!({"commissionRecurring": false})).await;
    let k = m.test_key.as_str();
    let first = pay(
        k,
        json!({"affiliateCode": code, "customerId": "cus_1"}),
        ago(2),
    )
    .await;
    assert_eq!(dec(&first["commission"]), Decimal::from(10));
    assert_eq!(first["isRecurring"], false);
    let second = pay(k, json!({"customerId": "cus_1"}), ago(1)).await;
    assert_eq!(second["attribution"], "CUSTOMER");
    assert_eq!(second["affiliateId"], first["affiliateId"]);
    assert_eq!(second["isRecurring"], true);
    assert_eq!(dec(&second["commission"]), Decimal::ZERO);
    assert_eq!(second["commissionReason"], "NOT_RECURRING");
    // Naming the affiliate again does not make it a first payment.
    let third = pay(
        k,
        json!({"affiliateCode": code, "customerId": "cus_1"}),
        now - Duration::days(1),
    )
    .await;
    assert_eq!(third["commissionReason"], "NOT_RECURRING");

    // 12-month limit: +11 months earns, +13 months earns 0.
    let (m, _, _, code) =
        setup(json!({"commissionRecurring": true, "recurringMonthsLimit": 12})).await;
    let k = m.test_key.as_str();
    let t0 = ago(14);
    let cust = json!({"customerEmail": "yearly@example.com"});
    let mut first = cust.clone();
    first["affiliateCode"] = json!(code);
    let v = pay(k, first, t0).await;
    assert_eq!(dec(&v["commission"]), Decimal::from(10));
    let v = pay(
        k,
        cust.clone(),
        t0.checked_add_months(Months::new(11)).unwrap(),
    )
    .await;
    assert_eq!(v["attribution"], "EMAIL");
    assert_eq!(v["isRecurring"], true);
    assert_eq!(dec(&v["commission"]), Decimal::from(10));
    assert_eq!(v["commissionReason"], Value::Null);
    let v = pay(k, cust, t0.checked_add_months(Months::new(13)).unwrap()).await;
    assert_eq!(dec(&v["commission"]), Decimal::ZERO);
    assert_eq!(v["commissionReason"], "RECURRING_WINDOW_ENDED");

    // Lifetime: a payment 5 years later earns.
    let (m, _, _, code) = setup(json!({"commissionRecurring": true})).await;
    let k = m.test_key.as_str();
    let t0 = ago(61);
    pay(
        k,
        json!({"affiliateCode": code, "customerId": "cus_life"}),
        t0,
    )
    .await;
    let v = pay(
        k,
        json!({"customerId": "cus_life"}),
        t0.checked_add_months(Months::new(60)).unwrap(),
    )
    .await;
    assert_eq!(v["isRecurring"], true);
    assert_eq!(dec(&v["commission"]), Decimal::from(10));
}

#[tokio::test]
async fn the_recurring_window_counts_from_the_first_payment_not_the_click() {
    let (m, c, a, _) =
        setup(json!({"commissionRecurring": true, "recurringMonthsLimit": 12, "cookieDays": 30}))
            .await;
    let k = m.test_key.as_str();
    let now = Utc::now();
    let click_at = now.checked_sub_months(Months::new(13)).unwrap();
    let clk = past_click(&m, &c, &a, click_at, 30).await;
    let first_at = click_at + Duration::days(25);
    let first = pay(k, json!({"clickId": clk, "customerId": "cus_w"}), first_at).await;
    assert_eq!(first["attribution"], "CLICK");
    assert_eq!(first["customerRef"], "cid:cus_w");
    assert_eq!(dec(&first["commission"]), Decimal::from(10));

    // More than 12 months after the click, less than 12 after the first payment.
    let inside = first_at.checked_add_months(Months::new(11)).unwrap() + Duration::days(20);
    assert!(inside > click_at.checked_add_months(Months::new(12)).unwrap());
    let v = pay(k, json!({"customerId": "cus_w"}), inside).await;
    assert_eq!(v["isRecurring"], true);
    assert_eq!(dec(&v["commission"]), Decimal::from(10), "{v}");
    let outside = first_at.checked_add_months(Months::new(12)).unwrap() + Duration::days(1);
    let v = pay(k, json!({"customerId": "cus_w"}), outside).await;
    assert_eq!(v["commissionReason"], "RECURRING_WINDOW_ENDED");

    // The referral remembers the first payment.
    let app = app_for(server()).await;
    let tenant = Tenant::new(m.account_id.clone(), Mode::Test);
    let item = app
        .store
        .get_item(
            &keys::referral(&tenant, &CustomerKey::from_id("cus_w").unwrap()),
            RECORD_SK,
        )
        .await
        .unwrap()
        .expect("referral created by the first payment");
    assert_eq!(
        item.get("firstPaymentAt").unwrap().as_s().unwrap(),
        &ts(first_at)
    );
    assert_eq!(item.get("affiliateId").unwrap().as_s().unwrap(), &a);
    assert_eq!(item.get("source").unwrap().as_s().unwrap(), "PAYMENT");
}

#[tokio::test]
async fn concurrent_distinct_postbacks_for_one_affiliate_all_land_once() {
    // Every one of these touches the same rollup items and the same affiliate
    // total: the transactions conflict and must be retried, not lost.
    let (m, c, a, code) = setup(json!({})).await;
    let mut tasks = Vec::new();
    for _ in 0..40 {
        let key = m.test_key.clone();
        let body = json!({
            "amount": 10, "currency": "USD", "externalId": unique("hot"), "conversionType": "SALE",
            "affiliateCode": code,
        });
        tasks.push(tokio::spawn(async move { postback(&key, body).await }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap().status);
    }
    assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
    let s = summary(&m.test_key, &format!("?campaign_id={c}")).await;
    assert_eq!(s["totals"][0]["count"], 40, "{s}");
    assert_eq!(dec(&s["totals"][0]["revenue"]), Decimal::from(400));
    let aff = call(
        "GET",
        &format!("/api/v1/affiliates/{a}"),
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(
        dec(&aff.data()["earned"]["USD"]),
        Decimal::from(40),
        "{:?}",
        aff.body
    );
}

#[tokio::test]
async fn concurrent_duplicates_make_one_conversion_and_other_accounts_get_409() {
    let (m, c, a, code) = setup(json!({})).await;
    let external = unique("dup");
    let body = json!({
        "amount": 42.5, "currency": "EUR", "externalId": external, "conversionType": "SALE",
        "affiliateCode": code,
    });
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let key = m.test_key.clone();
        let body = body.clone();
        tasks.push(tokio::spawn(async move { postback(&key, body).await }));
    }
    let mut created = 0;
    let mut ids = std::collections::BTreeSet::new();
    for t in tasks {
        let r = t.await.unwrap();
        match r.status {
            201 => created += 1,
            200 => assert_eq!(r.header("idempotent-replayed"), Some("true")),
            other => panic!("status {other}: {:?}", r.body),
        }
        ids.insert(id(r.data()));
    }
    assert_eq!(created, 1, "exactly one creation");
    assert_eq!(ids.len(), 1, "every response names the same conversion");
    let cnv = ids.into_iter().next().unwrap();

    let k = m.test_key.as_str();
    let r = list(k, &format!("?campaign_id={c}")).await;
    assert_eq!(list_ids(&r), vec![cnv.clone()]);
    let s = summary(k, "").await;
    assert_eq!(
        s["totals"],
        json!([{"currency": "EUR", "revenue": 42.5, "commission": 4.25, "count": 1}])
    );
    let aff = call("GET", &format!("/api/v1/affiliates/{a}"), Some(k), None).await;
    assert_eq!(aff.data()["earned"], json!({"EUR": 4.25}), "earned once");

    // A later replay answers 200 with the original, unchanged.
    let again = postback(
        k,
        json!({"amount": 999, "currency": "USD", "externalId": external, "conversionType": "SALE"}),
    )
    .await;
    assert_eq!(again.status, 200);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(id(again.data()), cnv);
    assert_eq!(again.data()["amount"], 42.5);

    // Another account, or this account's other mode: 409, nothing written.
    let other = merchant().await;
    postback(&other.test_key, body.clone())
        .await
        .assert_error(409, "ALREADY_EXISTS");
    postback(&m.live_key, body.clone())
        .await
        .assert_error(409, "ALREADY_EXISTS");
    assert!(list_ids(&list(&other.test_key, "").await).is_empty());
    assert!(list_ids(&list(&m.live_key, "").await).is_empty());
    assert_eq!(summary(&other.test_key, "").await["totals"], json!([]));
    assert_eq!(summary(k, "").await["totals"][0]["count"], 1);
    let got = call("GET", &format!("/api/v1/conversions/{cnv}"), Some(k), None).await;
    assert_eq!(got.data()["externalId"], external.as_str());
    assert_eq!(got.data()["amount"], 42.5);
}

#[derive(Default, Debug, PartialEq)]
struct Fig {
    revenue: Decimal,
    commission: Decimal,
    count: i64,
}

fn add(map: &mut BTreeMap<(String, String), Fig>, key: (&str, &str), v: &Value) {
    let f = map
        .entry((key.0.to_string(), key.1.to_string()))
        .or_default();
    f.revenue += dec(&v["amount"]);
    f.commission += dec(&v["commission"]);
    f.count += 1;
}

fn figures(rows: &Value, key_field: Option<&str>) -> BTreeMap<(String, String), Fig> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let key = key_field
                .map(|f| r[f].as_str().unwrap_or("-").to_string())
                .unwrap_or_default();
            (
                (key, r["currency"].as_str().unwrap().to_string()),
                Fig {
                    revenue: dec(&r["revenue"]),
                    commission: dec(&r["commission"]),
                    count: r["count"].as_i64().unwrap(),
                },
            )
        })
        .collect()
}

/// A conversion's id is derived from its externalId (its put is the claim);
/// an externalId claimed the older way, by an `XID#` item, still replays the
/// conversion that item names, for its account only.
#[tokio::test]
async fn an_externalid_claimed_by_an_older_claim_item_still_replays() {
    let (m, _, _, code) = setup(json!({})).await;
    let k = m.test_key.as_str();
    let first = convert(k, json!({"affiliateCode": code})).await;
    assert_eq!(
        id(&first),
        api::domain::postback::conversion_id_of(first["externalId"].as_str().unwrap())
    );
    let older = unique("older");
    let claim = api::domain::postback::ExternalIdClaim {
        tenant: Tenant::new(m.account_id.clone(), Mode::Test).key(),
        conversion_id: id(&first),
        created_at: Utc::now(),
    };
    let item = api::store::item_at(&keys::external_id_guard(&older), GUARD_SK, &claim).unwrap();
    assert!(server().app.store.put_new(item).await.unwrap());

    let body = json!({
        "amount": 5, "currency": "USD", "externalId": older, "affiliateCode": code,
        "conversionType": "SALE",
    });
    let r = postback(k, body.clone()).await;
    assert_eq!((r.status, id(r.data())), (200, id(&first)), "{:?}", r.body);
    assert_eq!(r.header("idempotent-replayed"), Some("true"));
    // Nothing was written at the key the older externalId derives.
    let derived = api::domain::postback::conversion_id_of(&older);
    assert!(server()
        .app
        .store
        .get_item(&derived, RECORD_SK)
        .await
        .unwrap()
        .is_none());
    let other = merchant().await;
    postback(&other.test_key, body)
        .await
        .assert_error(409, "ALREADY_EXISTS");
}

#[tokio::test]
async fn the_summary_equals_the_sum_of_the_posted_conversions() {
    let (m, c1, _a1, code1) = setup(json!({"commissionValue": 10})).await;
    let k = m.test_key.as_str();
    let c2 = id(&campaign(k, json!({"commissionValue": 12.5})).await);
    let code2 = format!("{code1}X");
    affiliate(k, &c2, &code2).await;

    let now = Utc::now();
    let posts = [
        (Some(&code1), 19.99, "USD", 0),
        (Some(&code1), 0.1, "USD", 1),
        (Some(&code1), 0.2, "USD", 2),
        (Some(&code2), 33.33, "USD", 3),
        (Some(&code2), 250.0, "EUR", 4),
        (Some(&code1), 17.01, "EUR", 5),
        (Some(&code2), 1234.0, "JPY", 6),
        (None, 70.0, "EUR", 7),
        (None, 0.01, "USD", 29),
    ];
    let mut totals = BTreeMap::new();
    let mut by_status = BTreeMap::new();
    let mut by_campaign = BTreeMap::new();
    let mut posted = Vec::new();
    for (code, amount, currency, days_ago) in posts {
        let mut body = json!({"amount": amount, "currency": currency, "occurredAt": ts(now - Duration::days(days_ago))});
        if let Some(c) = code {
            body["affiliateCode"] = json!(c);
        }
        let v = convert(k, body).await;
        add(&mut totals, ("", currency), &v);
        add(
            &mut by_status,
            (v["status"].as_str().unwrap(), currency),
            &v,
        );
        add(
            &mut by_campaign,
            (v["campaignId"].as_str().unwrap_or("-"), currency),
            &v,
        );
        posted.push(v);
    }
    // Outside 30 days: in 90d and all only.
    let old = convert(
        k,
        json!({"affiliateCode": code1, "amount": 5, "occurredAt": ts(now - Duration::days(40))}),
    )
    .await;

    let s = summary(k, "?period=30d&group_by=status").await;
    assert_eq!(s["period"], "30d");
    assert_eq!(s["granularity"], "day");
    assert_eq!(figures(&s["totals"], None), totals);
    assert_eq!(figures(&s["groups"], Some("status")), by_status);
    let s = summary(k, "?group_by=CAMPAIGN").await;
    assert_eq!(s["period"], "30d", "the default period");
    assert_eq!(figures(&s["groups"], Some("campaignId")), by_campaign);
    assert_eq!(figures(&s["totals"], None), totals);

    // One campaign only.
    let s = summary(k, &format!("?campaign_id={c2}")).await;
    let c2_only: BTreeMap<_, _> = by_campaign
        .iter()
        .filter(|((cmp, _), _)| *cmp == c2)
        .map(|((_, cur), f)| {
            (
                (String::new(), cur.clone()),
                Fig {
                    revenue: f.revenue,
                    commission: f.commission,
                    count: f.count,
                },
            )
        })
        .collect();
    assert_eq!(figures(&s["totals"], None), c2_only);

    // Wider periods include the older conversion.
    add(&mut totals, ("", "USD"), &old);
    for period in ["90d", "12m", "all"] {
        let s = summary(k, &format!("?period={period}")).await;
        assert_eq!(figures(&s["totals"], None), totals, "{period}");
    }
    assert_eq!(summary(k, "?period=all").await["granularity"], "month");
    assert_eq!(
        summary(k, "?period=24h").await["totals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["count"].as_i64().unwrap())
            .sum::<i64>(),
        2,
        "today and yesterday"
    );

    // A reversal leaves the totals and shows as its own status group.
    let gone = &posted[0];
    let r = call(
        "POST",
        &format!("/api/v1/conversions/{}/reverse", id(gone)),
        Some(k),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let s = summary(k, "?group_by=status").await;
    let usd = figures(&s["totals"], None)
        .remove(&(String::new(), "USD".to_string()))
        .unwrap();
    let before = totals.get(&(String::new(), "USD".to_string())).unwrap();
    assert_eq!(
        usd.revenue,
        before.revenue - dec(&old["amount"]) - dec(&gone["amount"])
    );
    assert_eq!(usd.count, before.count - 2);
    let groups = figures(&s["groups"], Some("status"));
    assert_eq!(
        groups.get(&("REVERSED".to_string(), "USD".to_string())),
        Some(&Fig {
            revenue: dec(&gone["amount"]),
            commission: dec(&gone["commission"]),
            count: 1
        })
    );

    // Bad parameters.
    for q in ["?period=1y", "?group_by=affiliate", "?nope=1"] {
        call(
            "GET",
            &format!("/api/v1/conversions/summary{q}"),
            Some(k),
            None,
        )
        .await
        .assert_error(400, "VALIDATION_FAILED");
    }
    let _ = c1;
}

/// Rollups stored before the month items held each day's figures (day
/// items, and month totals on the month items) are read with the new ones
/// and add up: nothing counted before is lost.
#[tokio::test]
async fn rollups_stored_before_the_month_items_held_the_days_still_count() {
    let (m, c1, _a1, code1) = setup(json!({"commissionValue": 10})).await;
    let k = m.test_key.as_str();
    let now = Utc::now();
    let posted = convert(k, json!({"affiliateCode": code1, "amount": 40})).await;
    let status = posted["status"].as_str().unwrap();

    // What the earlier format held for 3 conversions of yesterday, written
    // as it wrote them: a day item and the month's totals.
    let app = app_for(server()).await;
    let tenant = Tenant::new(m.account_id.clone(), Mode::Test);
    let day = (now - Duration::days(1)).date_naive();
    let tail = format!("USD#{status}#{c1}");
    let old = api::store::update::UpdateExpr::new()
        .add("revenue", api::store::number_value("12.5"))
        .add("commission", api::store::number_value("1.25"))
        .add("count", api::store::number_value(3))
        .set("campaignId", attr(c1.clone()));
    for sk in [
        format!("D#{}#{tail}", day.format("%Y-%m-%d")),
        format!("M#{}#{tail}", day.format("%Y-%m")),
    ] {
        app.store
            .update(&keys::rollups(&tenant), &sk, &old)
            .await
            .unwrap();
    }

    let usd = (String::new(), "USD".to_string());
    let expected = Fig {
        revenue: dec(&posted["amount"]) + Decimal::from_str("12.5").unwrap(),
        commission: dec(&posted["commission"]) + Decimal::from_str("1.25").unwrap(),
        count: 4,
    };
    for query in [
        "?period=7d".to_string(),
        "?period=all".to_string(),
        format!("?period=30d&campaign_id={c1}"),
    ] {
        let s = summary(k, &query).await;
        assert_eq!(
            figures(&s["totals"], None).get(&usd),
            Some(&expected),
            "{query}"
        );
    }
}

#[tokio::test]
async fn the_quota_refuses_at_the_cap_and_records_nothing() {
    let app = app_for(server()).await;
    let acct = accounts::create_account(&app.store, "Tiny", TINY_PLAN)
        .await
        .unwrap();
    let secret = &app.signing;
    let (_, live) =
        api::services::auth::keys::create_key(&app.store, secret, &acct.id, "live", Mode::Live)
            .await
            .unwrap();
    let (_, test) =
        api::services::auth::keys::create_key(&app.store, secret, &acct.id, "test", Mode::Test)
            .await
            .unwrap();
    let mut first = None;
    for _ in 0..TINY_QUOTA {
        let v = convert(&live, json!({})).await;
        first.get_or_insert(v["externalId"].as_str().unwrap().to_string());
    }
    let refused = unique("over");
    let r = postback(
        &live,
        json!({"amount": 10, "currency": "USD", "externalId": refused, "conversionType": "SALE"}),
    )
    .await;
    r.assert_error(429, "LIMIT_EXCEEDED");
    assert!(r.header("retry-after").is_none());

    // Nothing recorded: no conversion, no consumed externalId, no rollup.
    assert_eq!(list_ids(&list(&live, "").await).len(), TINY_QUOTA as usize);
    assert!(app
        .store
        .get_item(
            &api::domain::postback::conversion_id_of(&refused),
            RECORD_SK
        )
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        summary(&live, "").await["totals"][0]["count"],
        json!(TINY_QUOTA)
    );
    // A replay is not a new conversion and still answers.
    let r = postback(
        &live,
        json!({"amount": 10, "currency": "USD", "externalId": first.unwrap(), "conversionType": "SALE"}),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    // Test mode has no cap; the refused externalId is still free there.
    let r = postback(
        &test,
        json!({"amount": 10, "currency": "USD", "externalId": refused, "conversionType": "SALE"}),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
}

#[tokio::test]
async fn lists_filter_order_and_page() {
    let (m, c, a, code) = setup(json!({})).await;
    let k = m.test_key.as_str();
    let c2 = id(&campaign(k, json!({"name": "Second"})).await);
    let code2 = format!("{code}Z");
    let a2 = affiliate(k, &c2, &code2).await;
    let now = Utc::now();
    let mut made = Vec::new();
    // Posted out of order; listed by occurredAt.
    for (i, days) in [3, 9, 1, 7, 5, 2, 8, 4, 6].iter().enumerate() {
        let (code, amount) = if i % 3 == 0 {
            (&code2, 10 * (i + 1))
        } else {
            (&code, 10 * (i + 1))
        };
        let v = convert(
            k,
            json!({"affiliateCode": code, "amount": amount, "occurredAt": ts(now - Duration::days(*days))}),
        )
        .await;
        made.push((*days, v));
    }
    let unattributed = convert(k, json!({"amount": 1, "currency": "EUR"})).await;
    made.sort_by_key(|(d, _)| *d);
    let newest: Vec<String> = std::iter::once(id(&unattributed))
        .chain(made.iter().map(|(_, v)| id(v)))
        .collect();

    assert_eq!(list_ids(&list(k, "").await), newest);
    // Pages by cursor and by offset agree.
    let p1 = list(k, "?limit=4").await;
    assert_eq!(p1.body["meta"]["hasMore"], true);
    let cursor = p1.body["meta"]["nextCursor"].as_str().unwrap().to_string();
    let p2 = list(k, &format!("?limit=4&cursor={cursor}")).await;
    assert_eq!(list_ids(&p2), newest[4..8].to_vec());
    assert_eq!(
        list_ids(&list(k, "?limit=4&offset=4").await),
        newest[4..8].to_vec()
    );
    let last = list(k, "?limit=4&offset=8").await;
    assert_eq!(last.body["meta"]["hasMore"], false);
    assert_eq!(last.body["meta"]["nextCursor"], Value::Null);
    list(k, &format!("?cursor={cursor}&offset=1"))
        .await
        .assert_error(400, "VALIDATION_FAILED");

    let of = |pred: &dyn Fn(&Value) -> bool| -> Vec<String> {
        made.iter()
            .filter(|(_, v)| pred(v))
            .map(|(_, v)| id(v))
            .collect()
    };
    assert_eq!(
        list_ids(&list(k, &format!("?affiliate_id={a2}")).await),
        of(&|v| v["affiliateId"] == a2.as_str())
    );
    assert_eq!(
        list_ids(&list(k, &format!("?campaign_id={c}")).await),
        of(&|v| v["campaignId"] == c.as_str())
    );
    assert_eq!(
        list_ids(&list(k, &format!("?affiliate_id={a}&campaign_id={c2}")).await),
        Vec::<String>::new()
    );
    assert_eq!(
        list_ids(&list(k, "?status=unattributed").await),
        vec![id(&unattributed)]
    );
    assert_eq!(
        list_ids(&list(k, &format!("?status=Pending&campaign_id={c2}")).await),
        of(&|v| v["campaignId"] == c2.as_str())
    );
    assert_eq!(
        list_ids(&list(k, "?currency=eur").await),
        vec![id(&unattributed)]
    );
    // Amount bounds (inclusive) and date bounds (whole UTC days).
    assert_eq!(
        list_ids(&list(k, "?min_amount=30&max_amount=50").await),
        of(&|v| (30..=50).contains(&v["amount"].as_i64().unwrap()))
    );
    let from = (now - Duration::days(5)).date_naive();
    let to = (now - Duration::days(3)).date_naive();
    assert_eq!(
        list_ids(&list(k, &format!("?from={from}&to={to}")).await),
        made.iter()
            .filter(|(d, _)| (3..=5).contains(d))
            .map(|(_, v)| id(v))
            .collect::<Vec<_>>()
    );
    let since = ts(now - Duration::days(2) - Duration::hours(1));
    assert_eq!(
        list_ids(&list(k, &format!("?from={since}")).await),
        newest[..3].to_vec()
    );
    for bad in [
        "?status=LOST",
        "?from=2026-02-01&to=2026-01-01",
        "?min_amount=5&max_amount=1",
        "?min_amount=-1",
        "?currency=ABC",
        "?limit=0",
        "?from=yesterday",
    ] {
        list(k, bad).await.assert_error(400, "VALIDATION_FAILED");
    }
    // Another account or mode sees none of them.
    assert!(list_ids(&list(&m.live_key, "").await).is_empty());
}

#[tokio::test]
async fn totals_change_in_their_own_item_never_in_the_affiliate_record() {
    let (m, _c, a, code) = setup(json!({})).await;
    let k = m.test_key.as_str();
    let app = app_for(server()).await;
    let record = || async { app.store.get_item(&a, RECORD_SK).await.unwrap().unwrap() };
    let totals = || async { app.store.get_item(&a, TOTALS_SK).await.unwrap() };
    let before = record().await;
    assert!(before.keys().any(|k| k.starts_with("gsi")), "{before:?}");
    assert!(!before.contains_key("earned") && !before.contains_key("paid"));
    assert!(totals().await.is_none(), "created by the first earning");

    let first = convert(k, json!({"affiliateCode": code, "amount": 30})).await;
    convert(k, json!({"affiliateCode": code, "amount": 12.5})).await;
    convert(
        k,
        json!({"affiliateCode": code, "amount": 20, "currency": "EUR"}),
    )
    .await;
    // The record (and so its four index entries) is exactly as it was.
    assert_eq!(record().await, before);
    let t = totals().await.unwrap();
    let tenant = Tenant::new(m.account_id.clone(), Mode::Test).key();
    let mut names: Vec<&str> = t.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "customers",
            "earned_EUR",
            "earned_USD",
            "pk",
            "sk",
            "tenant"
        ],
        "no index attributes"
    );
    assert_eq!(t["tenant"], attr(tenant));
    let num = |v: &AttributeValue| Decimal::from_str(v.as_n().unwrap()).unwrap();
    assert_eq!(num(&t["earned_USD"]), Decimal::new(425, 2));
    assert_eq!(num(&t["earned_EUR"]), Decimal::from(2));
    let want = json!({"USD": 4.25, "EUR": 2});
    let got = call("GET", &format!("/api/v1/affiliates/{a}"), Some(k), None).await;
    assert_eq!(got.data()["earned"], want, "{:?}", got.body);
    assert_eq!(got.data()["paid"], json!({}));
    let listed = call("GET", "/api/v1/affiliates", Some(k), None).await;
    let row = listed
        .data()
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == a.as_str())
        .unwrap()
        .clone();
    assert_eq!(row["earned"], want);
    assert_eq!(row["paid"], json!({}));

    // A reversal gives the commission back in the same item.
    let r = call(
        "POST",
        &format!("/api/v1/conversions/{}/reverse", id(&first)),
        Some(k),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(record().await, before);
    assert_eq!(
        num(&totals().await.unwrap()["earned_USD"]),
        Decimal::new(125, 2)
    );

    // A merchant's update answers with the totals and leaves them alone.
    let r = call(
        "PUT",
        &format!("/api/v1/affiliates/{a}"),
        Some(k),
        Some(json!({"name": "Renamed"})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["earned"], json!({"USD": 1.25, "EUR": 2}));
    assert!(!record().await.contains_key("earned"));
    assert_eq!(
        num(&totals().await.unwrap()["earned_EUR"]),
        Decimal::from(2)
    );
}

#[tokio::test]
async fn reverse_moves_state_totals_and_rollups() {
    let (m, _c, a, code) = setup(json!({})).await;
    let k = m.test_key.as_str();
    let v = convert(k, json!({"affiliateCode": code, "amount": 30})).await;
    let keep = convert(k, json!({"affiliateCode": code, "amount": 50})).await;
    let path = format!("/api/v1/conversions/{}", id(&v));
    let aff = call("GET", &format!("/api/v1/affiliates/{a}"), Some(k), None).await;
    assert_eq!(aff.data()["earned"], json!({"USD": 8}));

    // Not through another account or mode.
    call("POST", &format!("{path}/reverse"), Some(&m.live_key), None)
        .await
        .assert_error(404, "NOT_FOUND");
    let r = call(
        "POST",
        &format!("{path}/reverse"),
        Some(k),
        Some(json!({"reason": "refunded"})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["status"], "REVERSED");
    assert_eq!(r.data()["reversalReason"], "refunded");
    assert!(r.data()["reversedAt"].is_string());
    let got = call("GET", &path, Some(k), None).await;
    assert_eq!(got.data(), r.data());
    assert_eq!(list_ids(&list(k, "?status=REVERSED").await), vec![id(&v)]);
    assert_eq!(list_ids(&list(k, "?status=PENDING").await), vec![id(&keep)]);
    let aff = call("GET", &format!("/api/v1/affiliates/{a}"), Some(k), None).await;
    assert_eq!(aff.data()["earned"], json!({"USD": 5}));
    let s = summary(k, "").await;
    assert_eq!(
        s["totals"],
        json!([{"currency": "USD", "revenue": 50, "commission": 5, "count": 1}])
    );

    // Again: 409 with the current state.
    let r = call("POST", &format!("{path}/reverse"), Some(k), None).await;
    r.assert_error(409, "INVALID_STATE");
    assert_eq!(r.body["error"]["details"]["currentState"], "REVERSED");

    // A conversion already in a payout is not reversed here.
    let app = app_for(server()).await;
    app.store
        .client()
        .update_item()
        .table_name(app.store.table())
        .key("pk", attr(id(&keep)))
        .key("sk", attr(RECORD_SK))
        .update_expression("SET payoutId = :p")
        .expression_attribute_values(":p", attr("po_01JD3Q5W6X7Y8Z9A0B1C2D3E4F"))
        .send()
        .await
        .unwrap();
    let r = call(
        "POST",
        &format!("/api/v1/conversions/{}/reverse", id(&keep)),
        Some(k),
        None,
    )
    .await;
    r.assert_error(409, "INVALID_STATE");
    assert_eq!(r.body["error"]["details"]["currentState"], "PENDING");

    // Unattributed conversions can be reversed too; unknown ids are 404.
    let u = convert(k, json!({})).await;
    let r = call(
        "POST",
        &format!("/api/v1/conversions/{}/reverse", id(&u)),
        Some(k),
        None,
    )
    .await;
    assert_eq!(r.data()["status"], "REVERSED");
    call(
        "POST",
        "/api/v1/conversions/cnv_nope/reverse",
        Some(k),
        None,
    )
    .await
    .assert_error(404, "NOT_FOUND");
    call(
        "POST",
        &format!("{path}/reverse"),
        Some(k),
        Some(json!({"why": 1})),
    )
    .await
    .assert_error(400, "VALIDATION_FAILED");
}

#[tokio::test]
async fn partial_reversals_cut_the_commission_and_never_reverse_more_than_the_amount() {
    let (m, _c, a, code) = setup(json!({})).await;
    let k = m.test_key.as_str();
    let v = convert(k, json!({"affiliateCode": code, "amount": 100})).await;
    assert_eq!(
        (
            &v["commission"],
            &v["reversedAmount"],
            &v["commissionReversed"]
        ),
        (&json!(10), &json!(0), &json!(0))
    );
    let path = format!("/api/v1/conversions/{}", id(&v));
    let reverse = |body: Value| {
        let path = format!("{path}/reverse");
        async move { call("POST", &path, Some(k), Some(body)).await }
    };
    let earned = || async {
        let aff = call("GET", &format!("/api/v1/affiliates/{a}"), Some(k), None).await;
        aff.data()["earned"]["USD"].clone()
    };

    let r = reverse(json!({"amount": 30, "reason": "partial refund"})).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        r.data()["status"],
        "PENDING",
        "a partial reversal keeps the status"
    );
    assert_eq!(
        (&r.data()["amount"], &r.data()["commission"]),
        (&json!(100), &json!(10))
    );
    assert_eq!(
        (&r.data()["reversedAmount"], &r.data()["commissionReversed"]),
        (&json!(30), &json!(3))
    );
    assert_eq!(earned().await, json!(7));
    let s = summary(k, "").await;
    assert_eq!(
        s["totals"],
        json!([{"currency": "USD", "revenue": 70, "commission": 7, "count": 1}])
    );

    // Refused, and nothing changes: more than is left, no amount, too many decimals.
    for (amount, code) in [(json!(70.01), "too_big"), (json!(0.001), "invalid_value")] {
        let r = reverse(json!({ "amount": amount })).await;
        r.assert_error(400, "VALIDATION_FAILED");
        assert_eq!(r.body["error"]["details"][0]["path"], json!(["amount"]));
        assert_eq!(r.body["error"]["details"][0]["code"], code, "{:?}", r.body);
    }
    let r = reverse(json!({"amount": 0})).await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert_eq!(
        call("GET", &path, Some(k), None).await.data()["reversedAmount"],
        30
    );

    // Eight refunds of 9 race for the 70 left: never more than the amount.
    // At most seven fit, so some amount is always left for the rest below.
    let racing: Vec<_> = (0..8)
        .map(|_| {
            let (path, key) = (format!("{path}/reverse"), k.to_string());
            tokio::spawn(async move {
                call("POST", &path, Some(&key), Some(json!({"amount": 9}))).await
            })
        })
        .collect();
    let mut answers = Vec::new();
    for t in racing {
        answers.push(t.await.unwrap());
    }
    let applied = answers.iter().filter(|r| r.status == 200).count();
    for r in answers.iter().filter(|r| r.status != 200) {
        assert!(matches!(r.status, 400 | 409 | 503), "{:?}", r.body);
    }
    assert!((1..=7).contains(&applied), "{applied} applied");
    let now = call("GET", &path, Some(k), None).await.data().clone();
    assert_eq!(now["reversedAmount"], json!(30 + 9 * applied));
    // Each refund of 9 cuts 0.9 of the commission: in cents, 700 - 90 each.
    let left = (700 - 90 * applied) as f64 / 100.0;
    assert_eq!(earned().await, json!(left));

    // The rest: REVERSED, the whole commission given back.
    let r = reverse(json!({})).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["status"], "REVERSED");
    assert_eq!(
        (&r.data()["reversedAmount"], &r.data()["commissionReversed"]),
        (&json!(100), &json!(10))
    );
    assert_eq!(earned().await, json!(0));
    assert_eq!(summary(k, "").await["totals"], json!([]));
    reverse(json!({"amount": 1}))
        .await
        .assert_error(409, "INVALID_STATE");

    // Every reversal is a `conversion.reversed` event carrying the amounts.
    let events = call(
        "GET",
        "/api/v1/events?type=conversion.reversed&limit=100",
        Some(k),
        None,
    )
    .await;
    let amounts: Vec<Value> = events
        .data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["data"]["id"] == v["id"])
        .map(|e| e["data"]["reversedAmount"].clone())
        .collect();
    assert_eq!(amounts.len(), applied + 2, "{amounts:?}");
    assert!(amounts.contains(&json!(30)) && amounts.contains(&json!(100)));
}

#[tokio::test]
async fn one_conversion_is_read_by_its_owner_only() {
    let (m, _c, _a, code) = setup(json!({"holdDays": 14})).await;
    let v = convert(
        &m.test_key,
        json!({"affiliateCode": code, "metadata": {"plan": "pro"}, "customerId": "cus_9"}),
    )
    .await;
    let path = format!("/api/v1/conversions/{}", id(&v));
    let got = call("GET", &path, Some(&m.test_key), None).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.data(), &v);
    assert_eq!(v["object"], "conversion");
    assert_eq!(v["holdDays"], 14);
    assert_eq!(v["metadata"], json!({"plan": "pro"}));
    assert_eq!(v["customerId"], "cus_9");
    assert_eq!(v["payoutId"], Value::Null);
    let occurred = timestamp::parse_datetime(v["occurredAt"].as_str().unwrap()).unwrap();
    let payable = timestamp::parse_datetime(v["payableAt"].as_str().unwrap()).unwrap();
    assert_eq!(payable - occurred, Duration::days(14));
    for leak in ["pk", "sk", "tenant", "gsi1pk", "amountValue"] {
        assert!(v.get(leak).is_none(), "{leak} must not leak");
    }
    call("GET", &path, Some(&m.live_key), None)
        .await
        .assert_error(404, "NOT_FOUND");
    let other = merchant().await;
    call("GET", &path, Some(&other.test_key), None)
        .await
        .assert_error(404, "NOT_FOUND");
    call("GET", "/api/v1/conversions/cnv_x", Some(&m.test_key), None)
        .await
        .assert_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn the_demo_seed_records_a_referral_and_conversions_in_two_currencies() {
    let (m, c, a, code) = setup(
        json!({"commissionValue": 20, "commissionRecurring": true, "recurringMonthsLimit": 12}),
    )
    .await;
    let app = app_for(server()).await;
    let tenant = Tenant::new(m.account_id.clone(), Mode::Test);
    let cmp = api::store::campaigns::get(&app.store, &tenant, &c)
        .await
        .unwrap();
    let out = refctl::demo::seed_conversions(&app, &tenant, &cmp, Some(&code))
        .await
        .unwrap();
    assert_eq!(out.as_array().unwrap().len(), 4);
    let k = m.test_key.as_str();
    let r = list(k, "?limit=10").await;
    let got: Vec<(String, String, String)> = r
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["attribution"].as_str().unwrap().to_string(),
                v["currency"].as_str().unwrap().to_string(),
                dec(&v["commission"]).to_string(),
            )
        })
        .collect();
    let want = [
        ("NONE", "EUR", "0"),
        ("CODE", "EUR", "24"),
        ("CUSTOMER", "USD", "9.8"),
        ("CODE", "USD", "9.8"),
    ];
    assert_eq!(
        got,
        want.map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    );
    assert_eq!(r.data()[0]["campaignId"], c.as_str());
    assert_eq!(r.data()[2]["isRecurring"], true);
    let referral = app
        .store
        .get_item(
            &keys::referral(&tenant, &CustomerKey::from_id("cus_demo_1").unwrap()),
            RECORD_SK,
        )
        .await
        .unwrap()
        .expect("the first payment binds the customer");
    assert_eq!(referral.get("affiliateId").unwrap().as_s().unwrap(), &a);
    let s = summary(k, "?period=90d").await;
    assert_eq!(
        s["totals"],
        json!([
            {"currency": "EUR", "revenue": 135.5, "commission": 24, "count": 2},
            {"currency": "USD", "revenue": 98, "commission": 19.6, "count": 2},
        ])
    );
    // Seeding again changes nothing (the external ids are taken).
    refctl::demo::seed_conversions(&app, &tenant, &cmp, Some(&code))
        .await
        .unwrap();
    assert_eq!(list_ids(&list(k, "?limit=10").await).len(), 4);
}

/// Adds an ACTIVE affiliate with a given code through the API; its id.
async fn affiliate(key: &str, campaign_id: &str, code: &str) -> String {
    id(&affiliate_with_code(key, campaign_id, code).await)
}

/// A JSON number written digit for digit (never through a binary float).
fn exact(text: &str) -> Value {
    Value::Number(text.parse().unwrap())
}

#[tokio::test]
async fn amounts_keep_every_digit_in_and_out() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"commissionValue": 100})).await;
    let code = format!("X{}", &ulid::Ulid::new().to_string()[18..]);
    let a = affiliate_with_code(k, c["id"].as_str().unwrap(), &code).await;
    // 16 digits: a binary float would answer 999999999999.9998.
    let body = |amount: &str| {
        json!({"amount": exact(amount), "currency": "CLF", "externalId": unique("exact"),
            "conversionType": "SALE", "affiliateCode": code})
    };
    let r = postback(k, body("999999999999.9999")).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let text = |v: &Value| v.to_string();
    assert_eq!(
        (text(&r.data()["amount"]), text(&r.data()["commission"])),
        ("999999999999.9999".into(), "999999999999.9999".into())
    );
    let r = postback(k, body("0.0001")).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    // Totals add up exactly: the summary and the affiliate's earned total.
    let s = summary(k, &format!("?campaign_id={}", c["id"].as_str().unwrap())).await;
    assert_eq!(text(&s["totals"][0]["revenue"]), "1000000000000", "{s}");
    let aff = call(
        "GET",
        &format!("/api/v1/affiliates/{}", a["id"].as_str().unwrap()),
        Some(k),
        None,
    )
    .await;
    assert_eq!(text(&aff.data()["earned"]["CLF"]), "1000000000000");
    // More decimals than the currency has are refused as sent, never rounded
    // first; so is a number with more digits than can be kept.
    for sent in [
        "10.00001",
        "10.0000000000000001",
        "0.000099999999999999999999",
    ] {
        let r = postback(k, body(sent)).await;
        r.assert_error(400, "VALIDATION_FAILED");
        assert_eq!(
            r.body["error"]["details"][0]["path"],
            json!(["amount"]),
            "{sent}"
        );
    }
    // A campaign's numbers too.
    let r = call(
        "PUT",
        &format!("/api/v1/campaigns/{}", c["id"].as_str().unwrap()),
        Some(k),
        Some(json!({"minimumPayout": exact("123456789012.3456")})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(text(&r.data()["minimumPayout"]), "123456789012.3456");
}

#[tokio::test]
async fn a_leap_second_is_refused_where_a_time_is_read() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let r = postback(
        k,
        json!({"amount": 1, "currency": "USD", "externalId": unique("leap"),
            "conversionType": "SALE", "occurredAt": "2026-11-20T10:00:60Z"}),
    )
    .await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert_eq!(r.body["error"]["details"][0]["path"], json!(["occurredAt"]));
    list(k, "?to=2026-11-20T10:00:60Z")
        .await
        .assert_error(400, "VALIDATION_FAILED");
}
