//! Manual adjustments over HTTP (contract section 15): a bonus and a manual
//! clawback booked on an affiliate, `earned` moving with them, the event,
//! the list and the portal's list, bodies refused with the path of each
//! issue, another tenant's affiliate 404, `externalId` replays and
//! conflicts (a concurrent pair too), and the payout job netting them.

use api::domain::tenant::{Mode, Tenant};
use api::domain::timestamp;
use api::services::payout_job::{self as job, Budget};
use chrono::{Duration, Utc};
use serde_json::{json, Value};

use crate::support::{
    affiliate_with_code, app_for, call, call_on, campaign, events_about, merchant, merchant_on,
    payouts_server, Merchant, Resp,
};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

fn code() -> String {
    format!("ADJ{}", &ulid::Ulid::new().to_string()[16..])
}

/// An ACTIVE affiliate of a fresh campaign on the shared server: its id.
async fn affiliate(m: &Merchant) -> String {
    let c = campaign(&m.test_key, json!({})).await;
    id(&affiliate_with_code(&m.test_key, &id(&c), &code()).await)
}

async fn book_on(base: &str, key: &str, affiliate: &str, body: Value) -> Resp {
    let path = format!("/api/v1/affiliates/{affiliate}/adjustments");
    call_on(base, "POST", &path, Some(key), Some(body)).await
}

async fn book(m: &Merchant, affiliate: &str, body: Value) -> Resp {
    book_on(&crate::support::server().base, &m.test_key, affiliate, body).await
}

async fn listed_on(base: &str, key: &str, affiliate: &str, query: &str) -> Resp {
    let path = format!("/api/v1/affiliates/{affiliate}/adjustments{query}");
    let r = call_on(base, "GET", &path, Some(key), None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r
}

/// The affiliate's `earned` in `currency` as the API shows it (null when none).
async fn earned(m: &Merchant, affiliate: &str, currency: &str) -> Value {
    let r = call(
        "GET",
        &format!("/api/v1/affiliates/{affiliate}"),
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.data()["earned"][currency].clone()
}

#[tokio::test]
async fn a_bonus_and_a_manual_clawback_move_earned_are_listed_and_recorded_as_events() {
    let m = merchant().await;
    let aff = affiliate(&m).await;
    let r = book(
        &m,
        &aff,
        json!({"amount": 25.5, "currency": "usd", "reason": "Launch week bonus"}),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let bonus = r.data().clone();
    assert!(bonus["id"].as_str().unwrap().starts_with("adj_"));
    let mut keys: Vec<_> = bonus.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    let fields = [
        "affiliateId",
        "amount",
        "createdAt",
        "currency",
        "externalId",
        "id",
        "object",
        "payoutId",
        "reason",
    ];
    assert_eq!(keys, fields);
    assert_eq!(
        (&bonus["affiliateId"], &bonus["amount"], &bonus["currency"]),
        (&json!(aff), &json!(25.5), &json!("USD"))
    );
    assert_eq!(bonus["reason"], "Launch week bonus");
    assert_eq!(
        (&bonus["externalId"], &bonus["payoutId"]),
        (&Value::Null, &Value::Null)
    );
    assert_eq!(earned(&m, &aff, "USD").await, json!(25.5));
    let r = book(
        &m,
        &aff,
        json!({"amount": -5.25, "currency": "USD", "reason": "Refund made outside the product"}),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let clawback = r.data().clone();
    assert_eq!(clawback["amount"], json!(-5.25));
    assert_eq!(earned(&m, &aff, "USD").await, json!(20.25));
    // Newest first, one per page through the cursor.
    let base = &crate::support::server().base;
    let all = listed_on(base, &m.test_key, &aff, "").await;
    assert_eq!(
        all.each("id"),
        [clawback["id"].clone(), bonus["id"].clone()]
    );
    let first = listed_on(base, &m.test_key, &aff, "?limit=1").await;
    assert_eq!(first.each("id"), [clawback["id"].clone()]);
    let cursor = first.body["meta"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_string();
    let next = listed_on(
        base,
        &m.test_key,
        &aff,
        &format!("?limit=1&cursor={cursor}"),
    )
    .await;
    assert_eq!(next.each("id"), [bonus["id"].clone()]);
    // Each booking recorded its event, the adjustment as answered.
    for a in [&bonus, &clawback] {
        let found = events_about(
            base,
            &m.test_key,
            "adjustment.created",
            a["id"].as_str().unwrap(),
        )
        .await;
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(&found[0]["data"], a);
    }
}

#[tokio::test]
async fn bodies_are_refused_with_the_path_of_every_issue() {
    let m = merchant().await;
    let aff = affiliate(&m).await;
    let r = book(
        &m,
        &aff,
        json!({"amount": 0, "currency": "JPY", "reason": "  ", "externalId": ""}),
    )
    .await;
    r.assert_error(400, "VALIDATION_FAILED");
    let paths: Vec<&Value> = r.body["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| &d["path"])
        .collect();
    assert_eq!(
        paths,
        [
            &json!(["amount"]),
            &json!(["reason"]),
            &json!(["externalId"])
        ]
    );
    let refused = [
        (
            json!({"amount": 1.5, "currency": "JPY", "reason": "x"}),
            "amount",
        ),
        (
            json!({"amount": 1e12, "currency": "USD", "reason": "x"}),
            "amount",
        ),
        (
            json!({"amount": 5, "currency": "XAU", "reason": "x"}),
            "currency",
        ),
        (
            json!({"amount": 5, "currency": "USD", "reason": "r".repeat(501)}),
            "reason",
        ),
        (
            json!({"amount": 5, "currency": "USD", "reason": "a\u{1}b"}),
            "reason",
        ),
        (json!({"amount": 5, "currency": "USD"}), "reason"),
        (
            json!({"amount": 5, "currency": "USD", "reason": "x", "note": "?"}),
            "note",
        ),
        (
            json!({"amount": "5", "currency": "USD", "reason": "x"}),
            "amount",
        ),
    ];
    for (body, path) in refused {
        let r = book(&m, &aff, body.clone()).await;
        r.assert_error(400, "VALIDATION_FAILED");
        assert_eq!(
            r.body["error"]["details"][0]["path"],
            json!([path]),
            "{body}"
        );
    }
    // Nothing was booked.
    assert_eq!(earned(&m, &aff, "USD").await, Value::Null);
    let base = &crate::support::server().base;
    assert_eq!(
        listed_on(base, &m.test_key, &aff, "")
            .await
            .each("id")
            .len(),
        0
    );
}

#[tokio::test]
async fn another_tenants_affiliate_is_not_found_and_a_pending_one_is_refused() {
    let (m, other) = (merchant().await, merchant().await);
    let aff = affiliate(&m).await;
    let body = json!({"amount": 5, "currency": "USD", "reason": "Bonus"});
    book(&other, &aff, body.clone())
        .await
        .assert_error(404, "NOT_FOUND");
    let path = format!("/api/v1/affiliates/{aff}/adjustments");
    call("GET", &path, Some(&other.test_key), None)
        .await
        .assert_error(404, "NOT_FOUND");
    // The other mode of the same account is another tenant too.
    call("POST", &path, Some(&m.live_key), Some(body.clone()))
        .await
        .assert_error(404, "NOT_FOUND");
    // A SUSPENDED affiliate's balance is still settled; a PENDING one has none.
    let r = call(
        "PUT",
        &format!("/api/v1/affiliates/{aff}"),
        Some(&m.test_key),
        Some(json!({"status": "SUSPENDED"})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(book(&m, &aff, body.clone()).await.status, 201);
    let c = campaign(&m.test_key, json!({"isPublic": true})).await;
    let signup = json!({"campaignId": id(&c), "email": format!("{}@apply.example.com", code().to_lowercase()), "name": "Applicant"});
    let r = call("POST", "/api/v1/affiliates/signup", None, Some(signup)).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let pending = id(&r.data()["affiliate"]);
    let r = book(&m, &pending, body).await;
    r.assert_error(409, "INVALID_STATE");
    assert_eq!(r.body["error"]["details"]["currentState"], "PENDING");
    assert_eq!(earned(&m, &aff, "USD").await, json!(5));
}

#[tokio::test]
async fn an_external_id_replays_the_same_body_and_refuses_another() {
    let m = merchant().await;
    let (aff, other) = (affiliate(&m).await, affiliate(&m).await);
    let xid = format!("bonus-{}", ulid::Ulid::new());
    let body =
        json!({"amount": 10, "currency": "EUR", "reason": "Referral contest", "externalId": xid});
    let first = book(&m, &aff, body.clone()).await;
    assert_eq!(first.status, 201, "{:?}", first.body);
    assert_eq!(first.data()["externalId"], json!(xid));
    assert_eq!(first.header("idempotent-replayed"), None);
    // The same body (10.00 is 10): the original, nothing written.
    let mut same = body.clone();
    same["amount"] = json!(10.0);
    let again = book(&m, &aff, same).await;
    assert_eq!(again.status, 200, "{:?}", again.body);
    assert_eq!(again.data(), first.data());
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(earned(&m, &aff, "EUR").await, json!(10));
    // Another amount, reason or affiliate under the key: 409 naming it.
    let mut changed = [body.clone(), body.clone()];
    changed[0]["amount"] = json!(11);
    changed[1]["reason"] = json!("Another contest");
    for (on, b) in [(&aff, &changed[0]), (&aff, &changed[1]), (&other, &body)] {
        let r = book(&m, on, b.clone()).await;
        r.assert_error(409, "ALREADY_EXISTS");
        assert!(r.body["error"]["message"].as_str().unwrap().contains(&xid));
    }
    let base = &crate::support::server().base;
    assert_eq!(
        listed_on(base, &m.test_key, &aff, "")
            .await
            .each("id")
            .len(),
        1
    );
    assert_eq!(
        listed_on(base, &m.test_key, &other, "")
            .await
            .each("id")
            .len(),
        0
    );
    // The key is the tenant's: another merchant may use it.
    let m2 = merchant().await;
    let aff2 = affiliate(&m2).await;
    assert_eq!(book(&m2, &aff2, body).await.status, 201);
}

#[tokio::test]
async fn a_concurrent_pair_with_one_external_id_books_one_adjustment() {
    let m = merchant().await;
    let aff = affiliate(&m).await;
    let body = json!({"amount": 7.5, "currency": "USD", "reason": "Race",
                      "externalId": format!("race-{}", ulid::Ulid::new())});
    let (a, b) = tokio::join!(book(&m, &aff, body.clone()), book(&m, &aff, body.clone()));
    let mut statuses = [a.status, b.status];
    statuses.sort();
    assert_eq!(statuses, [200, 201], "{:?} {:?}", a.body, b.body);
    assert_eq!(a.data()["id"], b.data()["id"]);
    let base = &crate::support::server().base;
    assert_eq!(
        listed_on(base, &m.test_key, &aff, "")
            .await
            .each("id")
            .len(),
        1
    );
    assert_eq!(earned(&m, &aff, "USD").await, json!(7.5));
    let found = events_about(
        base,
        &m.test_key,
        "adjustment.created",
        a.data()["id"].as_str().unwrap(),
    )
    .await;
    assert_eq!(found.len(), 1);
}

#[tokio::test]
async fn the_portal_lists_the_affiliates_adjustments() {
    let m = merchant().await;
    let aff = affiliate(&m).await;
    let body = json!({"amount": 12, "currency": "USD", "reason": "Thanks for the webinar",
                      "externalId": "webinar-1"});
    let booked = book(&m, &aff, body).await;
    assert_eq!(booked.status, 201, "{:?}", booked.body);
    let path = format!("/api/v1/affiliates/{aff}/portal-sessions");
    let r = call("POST", &path, Some(&m.test_key), Some(json!({}))).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let token = r.data()["token"].as_str().unwrap().to_string();
    let r = call("GET", "/api/v1/portal/adjustments", Some(&token), None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let d = booked.data();
    assert_eq!(
        r.data(),
        &json!([{"id": d["id"], "amount": 12, "currency": "USD",
                 "reason": "Thanks for the webinar", "payoutId": null, "createdAt": d["createdAt"]}])
    );
    // A merchant key is no portal token.
    call("GET", "/api/v1/portal/adjustments", Some(&m.test_key), None)
        .await
        .assert_error(401, "UNAUTHORIZED");
}

/// A campaign (`holdDays: 0`, `minimumPayout` 20, 10%) and an ACTIVE
/// affiliate on the payout server: the affiliate's id and code.
async fn payee(m: &Merchant) -> (String, String) {
    let base = &payouts_server().base;
    let body = json!({"name": "Bonuses", "commissionType": "PERCENTAGE", "commissionValue": 10,
                      "holdDays": 0, "minimumPayout": 20});
    let c = call_on(
        base,
        "POST",
        "/api/v1/campaigns",
        Some(&m.test_key),
        Some(body),
    )
    .await;
    assert_eq!(c.status, 201, "{:?}", c.body);
    let code = code();
    let body = json!({"campaignId": id(c.data()), "name": "Payee", "code": code,
                      "email": format!("{}@pay.example.com", code.to_lowercase())});
    let a = call_on(
        base,
        "POST",
        "/api/v1/affiliates",
        Some(&m.test_key),
        Some(body),
    )
    .await;
    assert_eq!(a.status, 201, "{:?}", a.body);
    (id(a.data()), code)
}

/// The affiliate's payouts over HTTP, newest first.
async fn payouts(m: &Merchant, affiliate: &str) -> Vec<Value> {
    let path = format!("/api/v1/payouts?affiliate_id={affiliate}&limit=100");
    let r = call_on(
        &payouts_server().base,
        "GET",
        &path,
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.data().as_array().unwrap().clone()
}

#[tokio::test]
async fn the_payout_job_nets_bonuses_and_manual_clawbacks_into_the_next_payout() {
    // No other test's job run may pay this pool halfway.
    let _quiet = crate::payouts::JOBS.lock().await;
    let m = merchant_on(payouts_server()).await;
    let app = app_for(payouts_server()).await;
    let base = &payouts_server().base;
    let (aff, code) = payee(&m).await;
    let run = || async { job::run(&app, Utc::now(), Budget::default()).await.unwrap() };
    let adjust = |amount: f64, reason: &'static str| {
        let body = json!({"amount": amount, "currency": "USD", "reason": reason});
        book_on(base, &m.test_key, &aff, body)
    };
    // A bonus alone, below the minimum: no payout, the balance carries over.
    assert_eq!(adjust(15.0, "Welcome bonus").await.status, 201);
    run().await;
    assert!(payouts(&m, &aff).await.is_empty());
    // With a sale's 10.00: 25.00, of which 15.00 adjustments.
    let at = timestamp::format(&(Utc::now() - Duration::hours(1)));
    let sale = json!({"amount": 100, "currency": "USD", "externalId": format!("o-{}", ulid::Ulid::new()),
                      "conversionType": "SALE", "affiliateCode": code, "occurredAt": at});
    let r = call_on(
        base,
        "POST",
        "/api/v1/conversions/postback",
        Some(&m.test_key),
        Some(sale),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    run().await;
    let first = payouts(&m, &aff).await;
    assert_eq!(first.len(), 1);
    let p = &first[0];
    assert_eq!(
        (&p["amount"], &p["adjustmentTotal"]),
        (&json!(25), &json!(15))
    );
    assert_eq!(p["conversionCount"], json!(1));
    let listed = listed_on(base, &m.test_key, &aff, "").await;
    assert_eq!(listed.each("payoutId"), [p["id"].clone()]);
    // A bonus and a manual clawback alone: 30.00 - 8.00 = 22.00, no conversion.
    assert_eq!(adjust(30.0, "Top seller of the month").await.status, 201);
    assert_eq!(
        adjust(-8.0, "Chargeback outside the product").await.status,
        201
    );
    run().await;
    let all = payouts(&m, &aff).await;
    assert_eq!(all.len(), 2);
    let second = all.iter().find(|q| q["id"] != p["id"]).unwrap();
    assert_eq!(
        (
            &second["amount"],
            &second["adjustmentTotal"],
            &second["conversionCount"]
        ),
        (&json!(22), &json!(22), &json!(0))
    );
    let listed = listed_on(base, &m.test_key, &aff, "").await;
    let held = [second["id"].clone(), second["id"].clone(), p["id"].clone()];
    assert_eq!(listed.each("payoutId"), held);
    // earned: 15 + 10 + 30 - 8; nothing paid yet.
    let t = Tenant::new(&m.account_id, Mode::Test);
    let a = api::store::affiliates::get(&app.store, &t, &aff)
        .await
        .unwrap();
    let usd = api::domain::money::Currency::parse("currency", "USD").unwrap();
    assert_eq!(
        a.earned.get(&usd).map(|d| d.normalize().to_string()),
        Some("47".into())
    );
}
