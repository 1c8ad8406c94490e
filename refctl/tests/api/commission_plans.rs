//! Commission plans over HTTP (contract section 15): a campaign's rules by
//! plan and customer tenure, an affiliate's override, the reason on every
//! conversion, the preview computed by the same function, and rules
//! refused with the path of what is wrong.

use serde_json::{json, Value};

use crate::support::{affiliate_with_code, call, campaign, merchant, Merchant};

fn id(v: &Value) -> &str {
    v["id"].as_str().unwrap()
}

/// A postback of `amount` USD by `customer` with `code`, and `extra` fields.
async fn paid(m: &Merchant, code: &str, customer: &str, amount: u32, extra: Value) -> Value {
    let mut body = json!({"externalId": format!("o-{}", ulid::Ulid::new()), "amount": amount,
                          "currency": "USD", "conversionType": "SALE", "affiliateCode": code,
                          "customerId": customer});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let r = call(
        "POST",
        "/api/v1/conversions/postback",
        Some(&m.test_key),
        Some(body),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    r.data().clone()
}

/// A conversion as it is stored now.
pub(crate) async fn stored(m: &Merchant, id: &str) -> Value {
    let path = format!("/api/v1/conversions/{id}");
    let r = call("GET", &path, Some(&m.test_key), None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.data().clone()
}

fn rules() -> Value {
    json!([
        {"name": "Yearly plan", "when": {"planIds": ["price_yearly"]},
         "pay": {"type": "FIXED", "value": 30, "currency": "USD"}},
        {"name": "First year", "when": {"monthsSinceFirstPayment": {"to": 12}},
         "pay": {"type": "PERCENTAGE", "value": 50}},
    ])
}

/// A fresh affiliate code.
pub(crate) fn code() -> String {
    format!("P{}", &ulid::Ulid::new().to_string()[18..])
}

#[tokio::test]
async fn rules_pay_by_plan_and_tenure_and_every_conversion_says_which() {
    let m = merchant().await;
    let extra =
        json!({"commissionRecurring": true, "commissionValue": 20, "commissionRules": rules()});
    let c = campaign(&m.test_key, extra).await;
    assert_eq!(c["commissionRules"], rules());
    let code = code();
    affiliate_with_code(&m.test_key, id(&c), &code).await;
    let customer = format!("cus_{}", ulid::Ulid::new());
    // The first payment, 14 months ago: the first-year rule (50%).
    let long_ago = (chrono::Utc::now() - chrono::Duration::days(430)).to_rfc3339();
    let first = paid(&m, &code, &customer, 100, json!({"occurredAt": long_ago})).await;
    assert_eq!(first["commission"], json!(50));
    assert_eq!(
        first["commissionSource"],
        json!({"kind": "RULE", "name": "First year", "index": 1})
    );
    // Today, past the first year: the campaign's own 20%.
    let later = paid(&m, &code, &customer, 100, json!({})).await;
    assert_eq!(later["commission"], json!(20));
    assert_eq!(
        later["commissionSource"],
        json!({"kind": "CAMPAIGN", "name": null, "index": null})
    );
    assert_eq!(later["isRecurring"], json!(true));
    // The yearly plan, named by the payment: the first rule, whatever the tenure.
    let yearly = paid(
        &m,
        &code,
        &customer,
        100,
        json!({"planId": "price_yearly", "productId": "pro"}),
    )
    .await;
    assert_eq!(
        (
            &yearly["commission"],
            &yearly["planId"],
            &yearly["productId"]
        ),
        (&json!(30), &json!("price_yearly"), &json!("pro"))
    );
    assert_eq!(yearly["commissionSource"]["index"], json!(0));

    // Changing the rules never changes a recorded commission.
    let path = format!("/api/v1/campaigns/{}", id(&c));
    let none = call(
        "PUT",
        &path,
        Some(&m.test_key),
        Some(json!({"commissionRules": []})),
    )
    .await;
    assert_eq!(
        (none.status, &none.data()["commissionRules"]),
        (200, &json!([]))
    );
    let again = stored(&m, id(&first)).await;
    assert_eq!(again["commission"], json!(50));
    assert_eq!(again["commissionSource"]["name"], json!("First year"));
}

#[tokio::test]
async fn an_affiliates_override_decides_before_the_rules() {
    let m = merchant().await;
    let c = campaign(&m.test_key, json!({"commissionRules": rules()})).await;
    let code = code();
    let a = affiliate_with_code(&m.test_key, id(&c), &code).await;
    let path = format!("/api/v1/affiliates/{}", id(&a));
    let set = json!({"commissionOverride": {"type": "PERCENTAGE", "value": 35}});
    let r = call("PUT", &path, Some(&m.test_key), Some(set)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        r.data()["commissionOverride"],
        json!({"type": "PERCENTAGE", "value": 35})
    );
    let cnv = paid(
        &m,
        &code,
        &format!("cus_{}", ulid::Ulid::new()),
        200,
        json!({"planId": "price_yearly"}),
    )
    .await;
    assert_eq!(cnv["commission"], json!(70));
    assert_eq!(
        cnv["commissionSource"],
        json!({"kind": "OVERRIDE", "name": null, "index": null})
    );
    // A fixed override needs its currency, like any FIXED pay.
    let bad = json!({"commissionOverride": {"type": "FIXED", "value": 5}});
    let r = call("PUT", &path, Some(&m.test_key), Some(bad)).await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert_eq!(
        r.body["error"]["details"][0]["path"],
        json!(["commissionOverride", "currency"])
    );
    let cleared = call(
        "PUT",
        &path,
        Some(&m.test_key),
        Some(json!({"commissionOverride": null})),
    )
    .await;
    assert_eq!(cleared.data()["commissionOverride"], Value::Null);
    let cnv = paid(
        &m,
        &code,
        &format!("cus_{}", ulid::Ulid::new()),
        200,
        json!({"planId": "price_yearly"}),
    )
    .await;
    assert_eq!(cnv["commissionSource"]["kind"], json!("RULE"));
}

#[tokio::test]
async fn bad_rules_are_refused_with_their_paths_and_nothing_is_stored() {
    let m = merchant().await;
    let c = campaign(&m.test_key, json!({"commissionRules": rules()})).await;
    let ok = json!({"name": "R", "pay": {"type": "PERCENTAGE", "value": 10}});
    let bad = json!([ok, ok, ok,
        {"name": "Fixed", "when": {"productIds": [], "monthsSinceFirstPayment": {"from": 6, "to": 2}},
         "pay": {"type": "FIXED", "value": 10}},
        {"name": "Too much", "pay": {"type": "PERCENTAGE", "value": 120}}]);
    let path = format!("/api/v1/campaigns/{}", id(&c));
    let r = call(
        "PUT",
        &path,
        Some(&m.test_key),
        Some(json!({"commissionRules": bad})),
    )
    .await;
    r.assert_error(400, "VALIDATION_FAILED");
    let paths: Vec<&Value> = r.body["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| &d["path"])
        .collect();
    for expected in [
        json!(["commissionRules", 3, "when", "productIds"]),
        json!([
            "commissionRules",
            3,
            "when",
            "monthsSinceFirstPayment",
            "to"
        ]),
        json!(["commissionRules", 3, "pay", "currency"]),
        json!(["commissionRules", 4, "pay", "value"]),
    ] {
        assert!(paths.contains(&&expected), "{expected} not in {paths:?}");
    }
    let many = json!(vec![ok; 21]);
    let r = call(
        "PUT",
        &path,
        Some(&m.test_key),
        Some(json!({"commissionRules": many})),
    )
    .await;
    r.assert_error(400, "VALIDATION_FAILED");
    let kept = call("GET", &path, Some(&m.test_key), None).await;
    assert_eq!(kept.data()["commissionRules"], rules());
}

#[tokio::test]
async fn the_preview_answers_what_the_postback_would_record() {
    let m = merchant().await;
    let extra = json!({"commissionRecurring": true, "recurringMonthsLimit": 24,
                       "commissionValue": 20, "commissionRules": rules()});
    let c = campaign(&m.test_key, extra).await;
    let path = format!("/api/v1/campaigns/{}/commission-preview", id(&c));
    let preview = |body: Value| call("POST", &path, Some(&m.test_key), Some(body));
    let r = preview(json!({"amount": 100, "currency": "USD", "monthsSinceFirstPayment": 3})).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        r.data(),
        &json!({"commission": 50, "commissionSource": {"kind": "RULE", "name": "First year", "index": 1},
                "recurringEarns": true, "reason": null})
    );
    let r = preview(json!({"amount": 100, "currency": "USD", "monthsSinceFirstPayment": 13})).await;
    assert_eq!(
        (
            &r.data()["commission"],
            &r.data()["commissionSource"]["kind"]
        ),
        (&json!(20), &json!("CAMPAIGN"))
    );
    let r = preview(json!({"amount": 100, "currency": "USD", "monthsSinceFirstPayment": 30})).await;
    assert_eq!(
        (
            &r.data()["commission"],
            &r.data()["recurringEarns"],
            &r.data()["reason"]
        ),
        (&json!(0), &json!(false), &json!("RECURRING_WINDOW_ENDED"))
    );
    let r = preview(json!({"amount": 100, "currency": "EUR", "planId": "price_yearly"})).await;
    assert_eq!(
        r.data()["commissionSource"]["name"],
        json!("First year"),
        "a FIXED USD rule holds for USD only"
    );
    let code = code();
    let a = affiliate_with_code(&m.test_key, id(&c), &code).await;
    let set = json!({"commissionOverride": {"type": "PERCENTAGE", "value": 5}});
    call(
        "PUT",
        &format!("/api/v1/affiliates/{}", id(&a)),
        Some(&m.test_key),
        Some(set),
    )
    .await;
    let r = preview(json!({"amount": 100, "currency": "USD", "affiliateId": id(&a)})).await;
    assert_eq!(
        (&r.data()["commission"], &r.data()["commissionSource"]),
        (
            &json!(5),
            &json!({"kind": "OVERRIDE", "name": null, "index": null})
        )
    );
    let cnv = paid(
        &m,
        &code,
        &format!("cus_{}", ulid::Ulid::new()),
        100,
        json!({}),
    )
    .await;
    assert_eq!(cnv["commission"], r.data()["commission"]);
    preview(json!({"amount": 0, "currency": "USD"}))
        .await
        .assert_error(400, "VALIDATION_FAILED");
    preview(
        json!({"amount": 1, "currency": "USD", "affiliateId": "aff_01JD9A7C2E4G6J8M0P2R4T6V8X"}),
    )
    .await
    .assert_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn a_stripe_invoice_and_a_paddle_transaction_pay_by_their_product() {
    use crate::connector_shapes::{current_invoice, event, fresh, outcome_of};
    use crate::integrations::{conversion, integration, paddle, PADDLE_SECRET, STRIPE_SECRET};
    let m = merchant().await;
    let rules = json!([{"name": "Pro", "when": {"productIds": ["prod_pro", "pro_01hv8prod"]},
                        "pay": {"type": "PERCENTAGE", "value": 40}}]);
    let c = campaign(
        &m.test_key,
        json!({"isPublic": true, "commissionRules": rules}),
    )
    .await;
    let code = code();
    affiliate_with_code(&m.test_key, id(&c), &code).await;
    let stripe = integration(&m, "STRIPE", STRIPE_SECRET, json!({})).await;
    // Current API version: the line's `pricing.price_details`; a zero line first.
    let inv = fresh("in_");
    let mut invoice = current_invoice(&inv, &fresh("cus_"), Some(&code));
    invoice["lines"] = json!({"object": "list", "has_more": false, "data": [
        {"id": "il_0", "amount": 0, "pricing": {"type": "price_details",
            "price_details": {"price": "price_free", "product": "prod_free"}}},
        {"id": "il_1", "amount": 12000, "pricing": {"type": "price_details",
            "price_details": {"price": "price_pro_m", "product": "prod_pro"}}}]});
    outcome_of(&stripe, &event("invoice.paid", invoice)).await;
    let cnv = conversion(&m, &api::domain::postback::conversion_id_of(&inv)).await;
    assert_eq!(
        (&cnv["productId"], &cnv["planId"], &cnv["commission"]),
        (&json!("prod_pro"), &json!("price_pro_m"), &json!(40))
    );
    assert_eq!(cnv["commissionSource"]["name"], json!("Pro"));
    // Before basil: the line's `price`, its product expanded or not.
    let inv = fresh("in_");
    let mut invoice = current_invoice(&inv, &fresh("cus_"), Some(&code));
    invoice["lines"] = json!({"object": "list", "has_more": false, "data": [
        {"id": "il_2", "amount": 12000, "price": {"id": "price_basic", "product": {"id": "prod_basic"}}}]});
    outcome_of(&stripe, &event("invoice.paid", invoice)).await;
    let cnv = conversion(&m, &api::domain::postback::conversion_id_of(&inv)).await;
    assert_eq!(
        (&cnv["productId"], &cnv["commission"]),
        (&json!("prod_basic"), &json!(10))
    );
    assert_eq!(cnv["commissionSource"]["kind"], json!("CAMPAIGN"));
    // Paddle: the first item's price.
    let paddle_int = integration(&m, "PADDLE", PADDLE_SECRET, json!({})).await;
    let txn = format!("txn_{}", ulid::Ulid::new().to_string().to_lowercase());
    let body = json!({"event_id": fresh("evt_"), "event_type": "transaction.completed",
        "occurred_at": "2026-11-20T10:00:00.000Z", "notification_id": "ntf_1",
        "data": {"id": txn, "status": "completed", "customer_id": "ctm_1", "currency_code": "USD",
                 "custom_data": {"referral": code}, "billed_at": "2026-11-20T09:59:00.000Z",
                 "items": [{"price": {"id": "pri_01hv8pro", "product_id": "pro_01hv8prod"}, "quantity": 1}],
                 "details": {"totals": {"subtotal": "5000", "discount": "0", "tax": "0", "total": "5000"}}}});
    let r = paddle(id(&paddle_int), &body).await;
    let cnv = conversion(&m, r.data()["conversionId"].as_str().unwrap()).await;
    assert_eq!(
        (&cnv["productId"], &cnv["planId"], &cnv["commission"]),
        (&json!("pro_01hv8prod"), &json!("pri_01hv8pro"), &json!(20))
    );
}
