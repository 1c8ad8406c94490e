//! Commission plans over HTTP, continued (contract section 15): payment
//! numbers, tiers crossed mid-stream (and by concurrent new customers),
//! leads paid once per customer, and their bad input.

use serde_json::{json, Value};

use crate::commission_plans::{code, stored};
use crate::support::{affiliate_with_code, call, campaign, merchant, Merchant};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

fn customer() -> String {
    format!("cus_{}", ulid::Ulid::new())
}

/// A postback of `conversionType` with `amount` (none: left out) by
/// `customer` with `code`.
async fn posted(key: &str, code: &str, customer: &str, kind: &str, amount: Option<u32>) -> Value {
    let mut body = json!({"externalId": format!("o-{}", ulid::Ulid::new()), "currency": "USD",
                          "conversionType": kind, "affiliateCode": code, "customerId": customer});
    if let Some(a) = amount {
        body["amount"] = json!(a);
    }
    let r = call(
        "POST",
        "/api/v1/conversions/postback",
        Some(key),
        Some(body),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    r.data().clone()
}

async fn sale(m: &Merchant, code: &str, customer: &str, amount: u32) -> Value {
    posted(&m.test_key, code, customer, "SALE", Some(amount)).await
}

async fn affiliate(m: &Merchant, id: &str) -> Value {
    let r = call(
        "GET",
        &format!("/api/v1/affiliates/{id}"),
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.data().clone()
}

/// The `affiliate.tier_changed` events of one affiliate, oldest first.
async fn tier_changes(m: &Merchant, affiliate_id: &str) -> Vec<Value> {
    let r = call(
        "GET",
        "/api/v1/events?type=affiliate.tier_changed&limit=100",
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let mut found: Vec<Value> = r
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["data"].clone())
        .filter(|d| d["affiliateId"] == affiliate_id)
        .collect();
    found.reverse();
    found
}

fn summary(c: &Value) -> (Value, Value, Value) {
    (
        c["commission"].clone(),
        c["commissionSource"]["kind"].clone(),
        c["paymentNumber"].clone(),
    )
}

#[tokio::test]
async fn payments_are_numbered_per_customer_and_rules_pay_by_the_number() {
    let m = merchant().await;
    let rules = json!([
        {"name": "First payment", "when": {"paymentNumber": {"to": 1}},
         "pay": {"type": "PERCENTAGE", "value": 100}},
        {"name": "Payments 2-3", "when": {"paymentNumber": {"from": 2, "to": 3}},
         "pay": {"type": "PERCENTAGE", "value": 50}},
    ]);
    let terms =
        json!({"commissionRecurring": true, "commissionValue": 20, "commissionRules": rules});
    let c = campaign(&m.test_key, terms).await;
    let code = code();
    affiliate_with_code(&m.test_key, &id(&c), &code).await;
    let (ann, bob) = (customer(), customer());
    let mut got = Vec::new();
    for who in [&ann, &ann, &bob, &ann, &ann] {
        got.push(summary(&sale(&m, &code, who, 100).await));
    }
    assert_eq!(
        got,
        [
            (json!(100), json!("RULE"), json!(1)),
            (json!(50), json!("RULE"), json!(2)),
            (json!(100), json!("RULE"), json!(1)),
            (json!(50), json!("RULE"), json!(3)),
            (json!(20), json!("CAMPAIGN"), json!(4)),
        ]
    );
    // Payments of one customer at once: numbered in turn, never twice (a
    // new customer's are held apart by its binding, a known one's by its count).
    let carl = customer();
    for first in [1, 3] {
        let (a, b) = tokio::join!(sale(&m, &code, &carl, 10), sale(&m, &code, &carl, 10));
        let mut numbers = [a["paymentNumber"].clone(), b["paymentNumber"].clone()];
        numbers.sort_by_key(|n| n.as_u64());
        assert_eq!(numbers, [json!(first), json!(first + 1)]);
    }
}

#[tokio::test]
async fn tiers_are_crossed_mid_stream_and_earlier_commissions_keep_their_amounts() {
    let m = merchant().await;
    let tiers = json!([
        {"name": "Silver", "minCustomers": 2, "pay": {"type": "PERCENTAGE", "value": 15}},
        {"name": "Gold", "minCustomers": 3, "pay": {"type": "PERCENTAGE", "value": 30}},
    ]);
    let terms = json!({"commissionRecurring": true, "commissionValue": 10, "tiers": tiers});
    let c = campaign(&m.test_key, terms).await;
    assert_eq!(c["tiers"], tiers);
    let code = code();
    let aff = id(&affiliate_with_code(&m.test_key, &id(&c), &code).await);
    let fresh = affiliate(&m, &aff).await;
    assert_eq!(
        (&fresh["tier"], &fresh["customersReferred"]),
        (&json!(null), &json!(0))
    );
    let (ann, bob, cat) = (customer(), customer(), customer());
    let first = sale(&m, &code, &ann, 100).await;
    let again = sale(&m, &code, &ann, 100).await;
    let crossing = sale(&m, &code, &bob, 100).await;
    let silver = sale(&m, &code, &ann, 100).await;
    let gold = sale(&m, &code, &cat, 100).await;
    let tier = |c: &Value| {
        (
            c["commission"].clone(),
            c["commissionSource"]["name"].clone(),
        )
    };
    assert_eq!(tier(&first), (json!(10), json!(null)));
    assert_eq!(
        tier(&again),
        (json!(10), json!(null)),
        "ann is still one customer"
    );
    assert_eq!(
        tier(&crossing),
        (json!(15), json!("Silver")),
        "bob's payment crosses"
    );
    assert_eq!(tier(&silver), (json!(15), json!("Silver")));
    assert_eq!(tier(&gold), (json!(30), json!("Gold")));
    assert_eq!(crossing["commissionSource"]["kind"], "TIER");
    // Earlier conversions keep what they earned.
    assert_eq!(stored(&m, &id(&first)).await["commission"], json!(10));
    let now = affiliate(&m, &aff).await;
    assert_eq!(now["customersReferred"], json!(3));
    assert_eq!(now["tier"]["name"], json!("Gold"));
    let changes = tier_changes(&m, &aff).await;
    let moves: Vec<_> = changes
        .iter()
        .map(|d| {
            (
                d["previousTier"].clone(),
                d["tier"]["name"].clone(),
                d["customersReferred"].clone(),
            )
        })
        .collect();
    assert_eq!(
        moves,
        [
            (json!(null), json!("Silver"), json!(2)),
            (json!("Silver"), json!("Gold"), json!(3)),
        ]
    );
    assert_eq!(changes[0]["conversionId"], json!(id(&crossing)));
}

#[tokio::test]
async fn new_customers_at_once_cross_a_tier_once() {
    let m = merchant().await;
    let tiers = json!([{"name": "Pro", "minCustomers": 4, "pay": {"type": "FIXED", "value": 7, "currency": "USD"}}]);
    let c = campaign(&m.test_key, json!({"tiers": tiers})).await;
    let code = code();
    let aff = id(&affiliate_with_code(&m.test_key, &id(&c), &code).await);
    let mut sales = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (key, code) = (m.test_key.clone(), code.clone());
        sales.spawn(async move { posted(&key, &code, &customer(), "SALE", Some(100)).await });
    }
    let all = sales.join_all().await;
    let tiered = all
        .iter()
        .filter(|c| c["commissionSource"]["kind"] == "TIER")
        .count();
    // The 4th to 8th customers (in the order they committed) earn the tier.
    assert_eq!(tiered, 5, "{all:?}");
    assert!(all
        .iter()
        .filter(|c| c["commissionSource"]["kind"] == "TIER")
        .all(|c| c["commission"] == json!(7)));
    assert_eq!(affiliate(&m, &aff).await["customersReferred"], json!(8));
    assert_eq!(tier_changes(&m, &aff).await.len(), 1);
}

#[tokio::test]
async fn a_lead_is_paid_once_per_customer_and_is_not_a_payment() {
    let m = merchant().await;
    let rules = json!([{"name": "Pro sign-ups", "when": {"conversionType": "LEAD", "planIds": ["pro"]},
                        "pay": {"type": "FIXED", "value": 9, "currency": "USD"}}]);
    let terms = json!({"leadCommission": {"value": 4, "currency": "USD"}, "commissionRules": rules,
                       "commissionRecurring": true});
    let c = campaign(&m.test_key, terms).await;
    assert_eq!(c["leadCommission"], json!({"value": 4, "currency": "USD"}));
    let code = code();
    let aff = id(&affiliate_with_code(&m.test_key, &id(&c), &code).await);
    let ann = customer();
    let lead = posted(&m.test_key, &code, &ann, "LEAD", None).await;
    assert_eq!(
        (
            &lead["conversionType"],
            &lead["amount"],
            &lead["commission"]
        ),
        (&json!("LEAD"), &json!(0), &json!(4))
    );
    assert_eq!(lead["commissionSource"]["kind"], "CAMPAIGN");
    assert_eq!(lead["paymentNumber"], json!(null));
    let twice = posted(&m.test_key, &code, &ann, "LEAD", Some(0)).await;
    assert_eq!(
        (&twice["commission"], &twice["commissionReason"]),
        (&json!(0), &json!("LEAD_ALREADY_REWARDED"))
    );
    // The lead bound the customer; its first payment is payment 1, not recurring.
    let paid = sale(&m, &code, &ann, 100).await;
    assert_eq!(
        (
            &paid["paymentNumber"],
            &paid["isRecurring"],
            &paid["commission"]
        ),
        (&json!(1), &json!(false), &json!(10))
    );
    assert_eq!(affiliate(&m, &aff).await["customersReferred"], json!(1));
    // A rule for leads decides before leadCommission.
    let mut body = json!({"externalId": format!("o-{}", ulid::Ulid::new()), "currency": "USD",
        "conversionType": "LEAD", "affiliateCode": code, "customerId": customer(), "planId": "pro"});
    let r = call(
        "POST",
        "/api/v1/conversions/postback",
        Some(&m.test_key),
        Some(body.clone()),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(
        (
            &r.data()["commission"],
            &r.data()["commissionSource"]["name"]
        ),
        (&json!(9), &json!("Pro sign-ups"))
    );
    // A lead with an amount is refused, and nothing is recorded.
    body["externalId"] = json!(format!("o-{}", ulid::Ulid::new()));
    body["amount"] = json!(5);
    let r = call(
        "POST",
        "/api/v1/conversions/postback",
        Some(&m.test_key),
        Some(body),
    )
    .await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert_eq!(r.body["error"]["details"][0]["path"], json!(["amount"]));
    // Without leadCommission a lead earns 0, and says why.
    let plain = campaign(&m.test_key, json!({})).await;
    let other = format!("N{}", &ulid::Ulid::new().to_string()[18..]);
    affiliate_with_code(&m.test_key, &id(&plain), &other).await;
    let unpaid = posted(&m.test_key, &other, &customer(), "LEAD", None).await;
    assert_eq!(
        (&unpaid["commission"], &unpaid["commissionReason"]),
        (&json!(0), &json!("NO_LEAD_COMMISSION"))
    );
    // A lead is reversed whole (it has no amount to reverse in part).
    let path = format!("/api/v1/conversions/{}/reverse", id(&lead));
    let part = call("POST", &path, Some(&m.test_key), Some(json!({"amount": 1}))).await;
    part.assert_error(400, "VALIDATION_FAILED");
    let whole = call("POST", &path, Some(&m.test_key), Some(json!({}))).await;
    assert_eq!(whole.status, 200, "{:?}", whole.body);
    assert_eq!(
        (&whole.data()["status"], &whole.data()["commissionReversed"]),
        (&json!("REVERSED"), &json!(4))
    );
}

#[tokio::test]
async fn bad_tiers_and_lead_commissions_are_refused_with_their_paths() {
    let m = merchant().await;
    let cases = [
        (
            json!({"tiers": [{"name": "A", "minCustomers": 5, "pay": {"type": "PERCENTAGE", "value": 10}},
                             {"name": "B", "minCustomers": 5, "pay": {"type": "PERCENTAGE", "value": 20}}]}),
            json!(["tiers", 1, "minCustomers"]),
        ),
        (
            json!({"tiers": [{"name": "A", "minCustomers": 1, "pay": {"type": "FIXED", "value": 3}}]}),
            json!(["tiers", 0, "pay", "currency"]),
        ),
        (
            json!({"tiers": [{"name": "A", "minCustomers": 1, "pay": {"type": "PERCENTAGE", "value": 101}}]}),
            json!(["tiers", 0, "pay", "value"]),
        ),
        (
            json!({"leadCommission": {"value": 0, "currency": "USD"}}),
            json!(["leadCommission", "value"]),
        ),
        (
            json!({"leadCommission": {"value": 1.234, "currency": "USD"}}),
            json!(["leadCommission", "value"]),
        ),
        (
            json!({"commissionRules": [{"name": "n", "when": {"paymentNumber": {"from": 3, "to": 2}},
                   "pay": {"type": "PERCENTAGE", "value": 5}}]}),
            json!(["commissionRules", 0, "when", "paymentNumber", "to"]),
        ),
    ];
    for (extra, path) in cases {
        let mut body = json!({"name": "C", "commissionType": "PERCENTAGE", "commissionValue": 10});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let r = call("POST", "/api/v1/campaigns", Some(&m.test_key), Some(body)).await;
        assert_eq!(r.status, 400, "{extra}: {:?}", r.body);
        let paths: Vec<Value> = r.body["error"]["details"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["path"].clone())
            .collect();
        assert!(paths.contains(&path), "{extra}: {paths:?}");
    }
    let eleven: Vec<Value> = (1..=11)
        .map(|n| json!({"name": format!("T{n}"), "minCustomers": n, "pay": {"type": "PERCENTAGE", "value": n}}))
        .collect();
    let c = campaign(&m.test_key, json!({})).await;
    let path = format!("/api/v1/campaigns/{}", id(&c));
    let r = call(
        "PUT",
        &path,
        Some(&m.test_key),
        Some(json!({"tiers": eleven})),
    )
    .await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    let stored = call("GET", &path, Some(&m.test_key), None).await;
    assert_eq!(stored.data()["tiers"], json!([]));
    // Null removes a lead commission; tiers replace as a whole.
    let r = call(
        "PUT",
        &path,
        Some(&m.test_key),
        Some(json!({"leadCommission": {"value": 2, "currency": "EUR"}})),
    )
    .await;
    assert_eq!(r.data()["leadCommission"]["currency"], "EUR");
    let r = call(
        "PUT",
        &path,
        Some(&m.test_key),
        Some(json!({"leadCommission": null})),
    )
    .await;
    assert_eq!(r.data()["leadCommission"], json!(null));
}

#[tokio::test]
async fn the_preview_counts_payment_numbers_and_tiers() {
    let m = merchant().await;
    let rules = json!([{"name": "Second on", "when": {"paymentNumber": {"from": 2}},
                        "pay": {"type": "PERCENTAGE", "value": 5}}]);
    let tiers =
        json!([{"name": "Gold", "minCustomers": 2, "pay": {"type": "PERCENTAGE", "value": 40}}]);
    let terms = json!({"commissionRecurring": true, "commissionRules": rules, "tiers": tiers});
    let c = campaign(&m.test_key, terms).await;
    let code = code();
    let aff = id(&affiliate_with_code(&m.test_key, &id(&c), &code).await);
    let path = format!("/api/v1/campaigns/{}/commission-preview", id(&c));
    let preview = |body: Value| {
        let path = path.clone();
        let key = m.test_key.clone();
        async move {
            let r = call("POST", &path, Some(&key), Some(body)).await;
            assert_eq!(r.status, 200, "{:?}", r.body);
            let d = r.data().clone();
            (
                d["commission"].clone(),
                d["commissionSource"]["kind"].clone(),
            )
        }
    };
    let base = json!({"amount": 100, "currency": "USD"});
    assert_eq!(preview(base.clone()).await, (json!(10), json!("CAMPAIGN")));
    let mut second = base.clone();
    second["paymentNumber"] = json!(2);
    assert_eq!(preview(second).await, (json!(5), json!("RULE")));
    let mut many = base.clone();
    many["customers"] = json!(2);
    assert_eq!(preview(many).await, (json!(40), json!("TIER")));
    // For the affiliate: its own count, this first payment's customer included.
    sale(&m, &code, &customer(), 100).await;
    let mut mine = base.clone();
    mine["affiliateId"] = json!(aff);
    assert_eq!(preview(mine).await, (json!(40), json!("TIER")));
    let lead = json!({"currency": "USD", "conversionType": "LEAD"});
    let r = call("POST", &path, Some(&m.test_key), Some(lead)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["reason"], json!("NO_LEAD_COMMISSION"));
}
