//! The connectors against what real Stripe and Paddle accounts send today
//! (contract section 16): current Stripe API versions, delayed payments,
//! trials, customer metadata, partial captures, shipping, connected
//! accounts, Paddle adjustments across integrations and the disabled start.
//! Stripe's objects are its own examples (`stripe/openapi`'s fixtures)
//! with ids and amounts filled in, signed by Stripe's official library.

use serde_json::{json, Value};

use crate::integrations::{
    conversion, deliveries, id, integration, paddle, session_of_click, stripe, PADDLE_SECRET,
    STRIPE_SECRET,
};
use crate::support::{affiliate_with_code, call, campaign, merchant, Merchant};

/// Stripe's example `resource` (current API version) with `fields` set.
pub(crate) fn fixture(resource: &str, fields: Value) -> Value {
    static ALL: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    let all = ALL.get_or_init(|| {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scripts/standin/providers/stripe-fixtures3.json"
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    });
    let mut object = all["resources"][resource].clone();
    assert!(object.is_object(), "no fixture {resource}");
    object["livemode"] = json!(false);
    for (k, v) in fields.as_object().unwrap() {
        object[k] = v.clone();
    }
    object
}

/// An event of the current API version around `object`.
pub(crate) fn event(kind: &str, object: Value) -> Value {
    json!({
        "id": format!("evt_{}", ulid::Ulid::new()),
        "object": "event",
        "api_version": "2025-03-31.basil",
        "created": chrono::Utc::now().timestamp(),
        "livemode": false,
        "pending_webhooks": 1,
        "request": {"id": null, "idempotency_key": null},
        "type": kind,
        "data": {"object": object},
    })
}

pub(crate) fn fresh(prefix: &str) -> String {
    format!("{prefix}{}", ulid::Ulid::new())
}

/// A Paddle notification of `kind` around `data`.
pub(crate) fn paddle_event(kind: &str, data: Value) -> Value {
    json!({"event_id": fresh("evt_"), "event_type": kind,
           "occurred_at": "2026-11-20T10:00:00.000Z", "notification_id": "ntf_1", "data": data})
}

/// A fresh Paddle transaction id.
pub(crate) fn paddle_txn() -> String {
    format!("txn_{}", ulid::Ulid::new().to_string().to_lowercase())
}

/// Paddle's `transaction.completed` of `txn`: 50.00 EUR, tax free,
/// referred by `code`.
pub(crate) fn paddle_completed(txn: &str, code: &str) -> Value {
    paddle_event(
        "transaction.completed",
        json!({"id": txn, "status": "completed", "customer_id": "ctm_1", "currency_code": "EUR",
               "custom_data": {"referral": code}, "billed_at": "2026-11-20T09:59:00.000Z",
               "details": {"totals": {"subtotal": "5000", "discount": "0", "tax": "0", "total": "5000"}}}),
    )
}

/// A merchant with a public campaign (10%), an affiliate with a fresh code,
/// and a Stripe integration.
pub(crate) async fn programme() -> (Merchant, Value, String, Value, Value) {
    let m = merchant().await;
    let c = campaign(
        &m.test_key,
        json!({"isPublic": true, "commissionRecurring": true}),
    )
    .await;
    let code = format!("K{}", &ulid::Ulid::new().to_string()[18..]);
    let a = affiliate_with_code(&m.test_key, id(&c), &code).await;
    let i = integration(&m, "STRIPE", STRIPE_SECRET, json!({})).await;
    (m, c, code, a, i)
}

/// A paid subscription invoice as the current API version sends it: 100.00
/// before 20.00 tax, no payment ids, the referral in the subscription's
/// metadata when given.
pub(crate) fn current_invoice(inv: &str, customer: &str, referral: Option<&str>) -> Value {
    let metadata = referral.map_or(json!({}), |r| json!({"referral": r}));
    fixture(
        "invoice",
        json!({"id": inv, "customer": customer, "customer_email": null, "currency": "usd",
               "amount_due": 12000, "amount_paid": 12000, "amount_remaining": 0,
               "total": 12000, "total_excluding_tax": 10000, "subtotal": 10000, "status": "paid",
               "billing_reason": "subscription_cycle", "metadata": {},
               "status_transitions": {"paid_at": chrono::Utc::now().timestamp() - 60},
               "parent": {"type": "subscription_details", "quote_details": null,
                          "subscription_details": {"metadata": metadata, "subscription": "sub_1"}}}),
    )
}

/// Its `invoice_payment.paid`: the payment intent that paid it.
pub(crate) fn invoice_payment(inv: &str, pi: &str) -> Value {
    event(
        "invoice_payment.paid",
        fixture(
            "invoice_payment",
            json!({"id": fresh("inpay_"), "invoice": inv, "currency": "usd", "status": "paid",
                   "amount_paid": 12000, "amount_requested": 12000,
                   "payment": {"type": "payment_intent", "payment_intent": pi}}),
        ),
    )
}

/// A current charge of `pi` (no `invoice`), `refunded` of 12000 refunded.
pub(crate) fn refunded_charge(ch: &str, pi: &str, refunded: i64) -> Value {
    event(
        "charge.refunded",
        fixture(
            "charge",
            json!({"id": ch, "payment_intent": pi, "amount": 12000, "amount_captured": 12000,
                   "amount_refunded": refunded, "currency": "usd", "captured": true,
                   "refunded": refunded == 12000}),
        ),
    )
}

pub(crate) async fn outcome_of(i: &Value, body: &Value) -> (Value, Value) {
    let r = stripe(id(i), body).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    (r.data()["outcome"].clone(), r.data()["reason"].clone())
}

#[tokio::test]
async fn a_current_invoice_its_payment_and_its_refund_meet_in_any_order() {
    let (m, _, code, a, i) = programme().await;
    // (order of: invoice, link, refund)
    let orders: [[usize; 3]; 4] = [[0, 1, 2], [2, 0, 1], [1, 2, 0], [2, 1, 0]];
    for order in orders {
        let (inv, pi, ch) = (fresh("in_"), fresh("pi_"), fresh("ch_"));
        let events = [
            event(
                "invoice.paid",
                current_invoice(&inv, &fresh("cus_"), Some(&code)),
            ),
            invoice_payment(&inv, &pi),
            refunded_charge(&ch, &pi, 6000),
        ];
        for n in order {
            outcome_of(&i, &events[n]).await;
        }
        let cnv = conversion(&m, &api::domain::postback::conversion_id_of(&inv)).await;
        assert_eq!(
            (
                &cnv["affiliateId"],
                &cnv["amount"],
                &cnv["reversedAmount"],
                &cnv["commissionReversed"]
            ),
            (&a["id"], &json!(100), &json!(50), &json!(5)),
            "order {order:?}"
        );
        // A lost dispute naming only the payment intent finds it too.
        let lost = event(
            "charge.dispute.closed",
            fixture(
                "dispute",
                json!({"id": fresh("dp_"), "charge": ch, "payment_intent": pi,
                       "status": "lost", "amount": 12000, "currency": "usd"}),
            ),
        );
        assert_eq!(outcome_of(&i, &lost).await.0, "APPLIED", "order {order:?}");
        let cnv = conversion(&m, id(&cnv)).await;
        assert_eq!(cnv["status"], "REVERSED", "order {order:?}");
    }
}

/// A current `invoice.paid` of `inv` referred by `code`: the conversion
/// it records.
async fn invoice_paid(i: &Value, inv: &str, code: &str) -> String {
    let paid = current_invoice(inv, &fresh("cus_"), Some(code));
    let r = stripe(id(i), &event("invoice.paid", paid)).await;
    let recorded = r.data()["conversionId"].as_str();
    recorded
        .unwrap_or_else(|| panic!("{:?}", r.body))
        .to_string()
}

#[tokio::test]
async fn a_payment_intent_posted_back_and_its_current_invoice_count_once() {
    let (m, _, code, _, i) = programme().await;
    let postback = |pi: &str| {
        call(
            "POST",
            "/api/v1/conversions/postback",
            Some(&m.test_key),
            Some(json!({"externalId": pi, "amount": 100, "currency": "USD",
                        "affiliateCode": code, "conversionType": "SALE"})),
        )
    };
    // The merchant's postback first, then the link, then the invoice.
    let (inv, pi) = (fresh("in_"), fresh("pi_"));
    let first = postback(&pi).await;
    assert_eq!(first.status, 201, "{:?}", first.body);
    outcome_of(&i, &invoice_payment(&inv, &pi)).await;
    let r = stripe(
        id(&i),
        &event("invoice.paid", current_invoice(&inv, &fresh("cus_"), None)),
    )
    .await;
    assert_eq!(r.data()["conversionId"], first.data()["id"], "{:?}", r.body);
    // The invoice, then its link, then the merchant's postback: replayed.
    let (inv, pi) = (fresh("in_"), fresh("pi_"));
    let recorded = json!(invoice_paid(&i, &inv, &code).await);
    outcome_of(&i, &invoice_payment(&inv, &pi)).await;
    let again = postback(&pi).await;
    assert_eq!((again.status, &again.data()["id"]), (200, &recorded));
    // The invoice, then the merchant's postback, then the link (the seconds
    // between an invoice and its link): recorded twice until the link, which
    // keeps the postback's conversion (it holds the payment intent refunds
    // name) and reverses the invoice's, so the payment earns once.
    let (inv, pi, ch) = (fresh("in_"), fresh("pi_"), fresh("ch_"));
    let invoiced = invoice_paid(&i, &inv, &code).await;
    let posted = postback(&pi).await;
    assert_eq!(posted.status, 201, "{:?}", posted.body);
    let posted = id(posted.data()).to_string();
    assert_ne!(posted, invoiced);
    let linked = stripe(id(&i), &invoice_payment(&inv, &pi)).await;
    assert_eq!(
        (&linked.data()["outcome"], &linked.data()["conversionId"]),
        (&json!("APPLIED"), &json!(posted)),
        "{:?}",
        linked.body
    );
    let (second, first) = (
        conversion(&m, &invoiced).await,
        conversion(&m, &posted).await,
    );
    assert_eq!(
        (&second["status"], &first["status"]),
        (&json!("REVERSED"), &json!("PENDING"))
    );
    let earned =
        |c: &Value| c["commission"].as_f64().unwrap() - c["commissionReversed"].as_f64().unwrap();
    assert_eq!(earned(&second) + earned(&first), 10.0);
    // Delivered again, the link changes nothing; a refund of the charge
    // reverses the conversion that stays.
    outcome_of(&i, &invoice_payment(&inv, &pi)).await;
    outcome_of(&i, &refunded_charge(&ch, &pi, 12000)).await;
    let first = conversion(&m, &posted).await;
    assert_eq!(
        (&first["status"], &first["reversedAmount"]),
        (&json!("REVERSED"), &json!(100))
    );
}

#[tokio::test]
async fn a_delayed_checkout_payment_earns_only_once_it_succeeds() {
    let (m, c, code, a, i) = programme().await;
    let session = |pi: &str, status: &str| {
        fixture(
            "checkout.session",
            json!({"id": fresh("cs_test_"), "mode": "payment", "payment_status": status,
                   "status": "complete", "client_reference_id": code, "customer": fresh("cus_"),
                   "customer_details": {"email": null}, "currency": "eur", "amount_total": 2880,
                   "amount_subtotal": 2000, "payment_intent": pi, "invoice": null, "metadata": {},
                   "total_details": {"amount_discount": 0, "amount_shipping": 500, "amount_tax": 380}}),
        )
    };
    let _ = c;
    for succeeds in [true, false] {
        let pi = fresh("pi_");
        let completed = event("checkout.session.completed", session(&pi, "unpaid"));
        let r = stripe(id(&i), &completed).await;
        assert_eq!(
            (&r.data()["outcome"], &r.data()["conversionId"]),
            (&json!("APPLIED"), &Value::Null),
            "bound, nothing recorded: {:?}",
            r.body
        );
        let cnv_id = api::domain::postback::conversion_id_of(&pi);
        let path = format!("/api/v1/conversions/{cnv_id}");
        call("GET", &path, Some(&m.test_key), None)
            .await
            .assert_error(404, "NOT_FOUND");
        let (kind, status) = match succeeds {
            true => ("checkout.session.async_payment_succeeded", "paid"),
            false => ("checkout.session.async_payment_failed", "unpaid"),
        };
        let (outcome, reason) = outcome_of(&i, &event(kind, session(&pi, status))).await;
        if succeeds {
            assert_eq!(outcome, "APPLIED");
            let cnv = conversion(&m, &cnv_id).await;
            // 28.80 less 3.80 tax and 5.00 shipping.
            assert_eq!(
                (&cnv["amount"], &cnv["affiliateId"]),
                (&json!(20), &a["id"])
            );
        } else {
            assert_eq!(
                (outcome, reason),
                (
                    json!("IGNORED"),
                    json!("the checkout's delayed payment failed")
                )
            );
            call("GET", &path, Some(&m.test_key), None)
                .await
                .assert_error(404, "NOT_FOUND");
        }
    }
}

#[tokio::test]
async fn a_trial_or_a_customers_metadata_binds_so_later_payments_attribute() {
    let (m, c, code, a, i) = programme().await;
    // Stripe: a trial's zero invoice names the referral; a customer names it
    // in its metadata. The paid invoice after names neither.
    let (trial_customer, meta_customer) = (fresh("cus_"), fresh("cus_"));
    let mut trial = current_invoice(&fresh("in_"), &trial_customer, Some(&code));
    for f in [
        "amount_due",
        "amount_paid",
        "total",
        "total_excluding_tax",
        "subtotal",
    ] {
        trial[f] = json!(0);
    }
    let (outcome, _) = outcome_of(&i, &event("invoice.paid", trial)).await;
    assert_eq!(outcome, "APPLIED");
    let customer = fixture(
        "customer",
        json!({"id": meta_customer, "email": null, "metadata": {"referral": code}}),
    );
    let (outcome, _) = outcome_of(&i, &event("customer.created", customer)).await;
    assert_eq!(outcome, "APPLIED");
    for customer in [&trial_customer, &meta_customer] {
        let inv = fresh("in_");
        let r = stripe(
            id(&i),
            &event("invoice.paid", current_invoice(&inv, customer, None)),
        )
        .await;
        let cnv = conversion(&m, r.data()["conversionId"].as_str().unwrap()).await;
        assert_eq!(cnv["affiliateId"], a["id"], "{customer}");
    }
    // Paddle: a trial transaction of nothing binds its customer too.
    let p = integration(&m, "PADDLE", PADDLE_SECRET, json!({})).await;
    let customer = format!("ctm_{}", ulid::Ulid::new().to_string().to_lowercase());
    let txn = |subtotal: &str, referral: Option<&str>| {
        json!({"event_id": fresh("evt_"), "event_type": "transaction.completed",
               "occurred_at": "2026-11-20T10:00:00.000Z", "notification_id": "ntf_1",
               "data": {"id": format!("txn_{}", ulid::Ulid::new().to_string().to_lowercase()),
                        "status": "completed", "customer_id": customer, "currency_code": "EUR",
                        "custom_data": referral.map(|r| json!({"referral": r})),
                        "billed_at": "2026-11-20T09:59:00.000Z",
                        "details": {"totals": {"subtotal": subtotal, "discount": "0",
                                               "tax": "0", "total": subtotal}}}})
    };
    let r = paddle(id(&p), &txn("0", Some(&code))).await;
    assert_eq!(r.data()["outcome"], "APPLIED", "{:?}", r.body);
    let r = paddle(id(&p), &txn("5000", None)).await;
    let cnv = conversion(&m, r.data()["conversionId"].as_str().unwrap()).await;
    assert_eq!(cnv["affiliateId"], a["id"]);
    let _ = c;
}

#[tokio::test]
async fn a_partly_captured_charge_refunded_in_full_reverses_all_of_it() {
    let (m, c, code, _, i) = programme().await;
    let session = session_of_click(&c, &code).await;
    let pi = fresh("pi_");
    let checkout = fixture(
        "checkout.session",
        json!({"id": fresh("cs_test_"), "mode": "payment", "payment_status": "paid",
               "status": "complete", "client_reference_id": session, "customer": fresh("cus_"),
               "customer_details": {"email": null}, "currency": "usd", "amount_total": 6000,
               "payment_intent": pi, "invoice": null, "metadata": {},
               "total_details": {"amount_discount": 0, "amount_shipping": 0, "amount_tax": 0}}),
    );
    outcome_of(&i, &event("checkout.session.completed", checkout)).await;
    // Authorized 100.00, captured 60.00, and the 60.00 refunded.
    let charge = fixture(
        "charge",
        json!({"id": fresh("ch_"), "payment_intent": pi, "amount": 10000,
               "amount_captured": 6000, "amount_refunded": 6000, "currency": "usd",
               "captured": true, "refunded": true}),
    );
    outcome_of(&i, &event("charge.refunded", charge)).await;
    let cnv = conversion(&m, &api::domain::postback::conversion_id_of(&pi)).await;
    assert_eq!(
        (&cnv["status"], &cnv["reversedAmount"]),
        (&json!("REVERSED"), &json!(60))
    );
}

#[tokio::test]
async fn a_connected_accounts_payment_is_not_the_merchants() {
    let (m, _, code, _, i) = programme().await;
    let inv = fresh("in_");
    let mut ev = event(
        "invoice.paid",
        current_invoice(&inv, &fresh("cus_"), Some(&code)),
    );
    ev["account"] = json!("acct_1ConnectedAffiliate");
    let (outcome, reason) = outcome_of(&i, &ev).await;
    assert_eq!(
        (outcome, reason),
        (
            json!("IGNORED"),
            json!("the event is a connected account's")
        )
    );
    let path = format!(
        "/api/v1/conversions/{}",
        api::domain::postback::conversion_id_of(&inv)
    );
    call("GET", &path, Some(&m.test_key), None)
        .await
        .assert_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn a_paddle_adjustment_sent_to_two_integrations_reverses_once() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"isPublic": true})).await;
    let code = format!("D{}", &ulid::Ulid::new().to_string()[18..]);
    affiliate_with_code(k, id(&c), &code).await;
    let one = integration(&m, "PADDLE", PADDLE_SECRET, json!({})).await;
    let two = integration(&m, "PADDLE", PADDLE_SECRET, json!({})).await;
    let txn = paddle_txn();
    let adj = format!("adj_{}", ulid::Ulid::new().to_string().to_lowercase());
    let completed = paddle_completed(&txn, &code);
    let r = paddle(id(&one), &completed).await;
    let cnv = r.data()["conversionId"].as_str().unwrap().to_string();
    let refund = json!({"id": adj, "action": "refund", "status": "approved", "transaction_id": txn,
                        "currency_code": "EUR", "totals": {"subtotal": "1000", "tax": "0", "total": "1000"}});
    for i in [&one, &two] {
        let r = paddle(id(i), &paddle_event("adjustment.created", refund.clone())).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    assert_eq!(conversion(&m, &cnv).await["reversedAmount"], json!(10));
}

#[tokio::test]
async fn an_integration_stays_disabled_until_its_secret_has_the_providers_shape() {
    let m = merchant().await;
    let k = Some(m.test_key.as_str());
    // (provider, secret, status at creation)
    let cases = [
        ("STRIPE", "placeholder-secret", "DISABLED"),
        ("STRIPE", "whsec_short0123456789", "DISABLED"),
        ("STRIPE", STRIPE_SECRET, "ENABLED"),
        ("PADDLE", "pdl_ntfset_short", "DISABLED"),
        ("PADDLE", PADDLE_SECRET, "ENABLED"),
    ];
    for (provider, secret, status) in cases {
        let body = json!({"provider": provider, "signingSecret": secret});
        let r = call("POST", "/api/v1/integrations", k, Some(body)).await;
        assert_eq!(
            (r.status, &r.data()["status"]),
            (201, &json!(status)),
            "{provider} {secret}: {:?}",
            r.body
        );
    }
    let body = json!({"provider": "STRIPE", "signingSecret": "placeholder-secret"});
    let held = call("POST", "/api/v1/integrations", k, Some(body)).await;
    let path = format!("/api/v1/integrations/{}", id(held.data()));
    // Events signed with the placeholder are refused (the provider retries).
    let inv = fresh("in_");
    let ev = event("invoice.paid", current_invoice(&inv, &fresh("cus_"), None)).to_string();
    let sig = crate::integrations::official_signature(
        "stripe",
        "placeholder-secret",
        &ev,
        chrono::Utc::now().timestamp(),
    );
    let r = crate::support::raw(
        &crate::support::server().base,
        "POST",
        &format!("{path}/events"),
        None,
        &[
            ("stripe-signature", &sig),
            ("content-type", "application/json"),
        ],
        Some(ev.into_bytes()),
    )
    .await;
    r.assert_error(409, "INVALID_STATE");
    let r = call("PATCH", &path, k, Some(json!({"status": "ENABLED"}))).await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert_eq!(r.body["error"]["details"][0]["path"], json!(["status"]));
    let r = call(
        "PATCH",
        &path,
        k,
        Some(json!({"signingSecret": STRIPE_SECRET})),
    )
    .await;
    assert_eq!((r.status, &r.data()["status"]), (200, &json!("ENABLED")));
    assert!(deliveries(&m, id(held.data())).await.is_empty());
}

/// A one-off Checkout Session paid with `promo` (and `reference`, when given).
fn promoted_checkout(pi: &str, customer: &str, promo: &str, reference: Option<&str>) -> Value {
    event(
        "checkout.session.completed",
        fixture(
            "checkout.session",
            json!({"id": fresh("cs_test_"), "mode": "payment", "payment_status": "paid",
                   "status": "complete", "client_reference_id": reference, "customer": customer,
                   "customer_details": {"email": null}, "currency": "usd", "amount_total": 5000,
                   "payment_intent": pi, "invoice": null, "metadata": {},
                   "discounts": [{"coupon": null, "promotion_code": promo}],
                   "total_details": {"amount_discount": 500, "amount_shipping": 0, "amount_tax": 0}}),
        ),
    )
}

#[tokio::test]
async fn a_registered_promotion_code_attributes_the_payments_that_carry_it() {
    let (m, c, _, a, i) = programme().await;
    let k = Some(m.test_key.as_str());
    let codes = format!("/api/v1/affiliates/{}/promotion-codes", id(&a));
    let promo = format!("promo_{}", ulid::Ulid::new());
    let word = format!("ANNA{}", &ulid::Ulid::new().to_string()[20..]);
    let body = json!({"integrationId": id(&i), "providerId": promo, "code": word});
    let r = call("POST", &codes, k, Some(body.clone())).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let created = r.data().clone();
    assert_eq!(
        (
            &created["object"],
            &created["providerId"],
            &created["code"],
            &created["active"],
            &created["provider"]
        ),
        (
            &json!("promotion_code"),
            &json!(promo),
            &json!(word),
            &json!(true),
            &json!("STRIPE")
        )
    );
    // Held by another code already: the provider id, or the code in any case.
    call("POST", &codes, k, Some(body))
        .await
        .assert_error(409, "ALREADY_EXISTS");
    let same_word = json!({"integrationId": id(&i), "providerId": fresh("promo_"),
                           "code": word.to_lowercase()});
    call("POST", &codes, k, Some(same_word))
        .await
        .assert_error(409, "ALREADY_EXISTS");
    // Creating one at Stripe needs the integration's key.
    let at_stripe = json!({"integrationId": id(&i), "code": "NEWCODE1", "couponId": "C1"});
    call("POST", &codes, k, Some(at_stripe))
        .await
        .assert_error(409, "INVALID_STATE");

    // A checkout carrying the code, with no referral: the affiliate's, and
    // its customer bound, so the next invoice earns too.
    let (pi, customer) = (fresh("pi_"), fresh("cus_"));
    let r = stripe(id(&i), &promoted_checkout(&pi, &customer, &promo, None)).await;
    assert_eq!(r.data()["outcome"], "APPLIED", "{:?}", r.body);
    let cnv = conversion(&m, &api::domain::postback::conversion_id_of(&pi)).await;
    assert_eq!(
        (&cnv["affiliateId"], &cnv["attribution"], &cnv["amount"]),
        (&a["id"], &json!("PROMOTION_CODE"), &json!(50))
    );
    let r = stripe(
        id(&i),
        &event(
            "invoice.paid",
            current_invoice(&fresh("in_"), &customer, None),
        ),
    )
    .await;
    let next = conversion(&m, r.data()["conversionId"].as_str().unwrap()).await;
    assert_eq!(next["affiliateId"], a["id"]);
    // A stronger hint wins: another affiliate's session.
    let other_code = format!("B{}", &ulid::Ulid::new().to_string()[18..]);
    let b = affiliate_with_code(&m.test_key, id(&c), &other_code).await;
    let session = session_of_click(&c, &other_code).await;
    let pi = fresh("pi_");
    stripe(
        id(&i),
        &promoted_checkout(&pi, &fresh("cus_"), &promo, Some(&session)),
    )
    .await;
    let cnv = conversion(&m, &api::domain::postback::conversion_id_of(&pi)).await;
    assert_eq!(
        (&cnv["affiliateId"], &cnv["attribution"]),
        (&b["id"], &json!("SESSION"))
    );

    // Listed; deactivated, it attributes nothing more.
    let listed = call("GET", &codes, k, None).await;
    assert_eq!(listed.each("providerId"), vec![json!(promo)]);
    let r = call("DELETE", &format!("{codes}/{}", id(&created)), k, None).await;
    assert_eq!(
        (r.status, &r.data()["active"]),
        (200, &json!(false)),
        "{:?}",
        r.body
    );
    let pi = fresh("pi_");
    stripe(
        id(&i),
        &promoted_checkout(&pi, &fresh("cus_"), &promo, None),
    )
    .await;
    let cnv = conversion(&m, &api::domain::postback::conversion_id_of(&pi)).await;
    assert_eq!(
        (&cnv["affiliateId"], &cnv["attribution"]),
        (&Value::Null, &json!("NONE"))
    );
    // The word is free again once its code is inactive.
    let again = json!({"integrationId": id(&i), "providerId": fresh("promo_"), "code": word});
    assert_eq!(call("POST", &codes, k, Some(again)).await.status, 201);
    // The affiliate's portal lists its codes, newest first, no provider ids.
    let sessions = format!("/api/v1/affiliates/{}/portal-sessions", id(&a));
    let token = call("POST", &sessions, k, Some(json!({}))).await;
    let token = token.data()["token"].as_str().unwrap().to_string();
    let mine = call("GET", "/api/v1/portal/promotion-codes", Some(&token), None).await;
    assert_eq!(mine.status, 200, "{:?}", mine.body);
    let at = |i: usize| mine.data()[i]["createdAt"].clone();
    assert_eq!(
        mine.data(),
        &json!([{"code": word, "provider": "STRIPE", "active": true, "createdAt": at(0)},
                {"code": word, "provider": "STRIPE", "active": false, "createdAt": at(1)}])
    );

    // A Paddle discount is registered and attributes the same way.
    let p = integration(&m, "PADDLE", PADDLE_SECRET, json!({})).await;
    let discount = format!("dsc_{}", ulid::Ulid::new().to_string().to_lowercase());
    let body = json!({"integrationId": id(&p), "providerId": discount});
    assert_eq!(call("POST", &codes, k, Some(body)).await.status, 201);
    let txn = json!({"event_id": fresh("evt_"), "event_type": "transaction.completed",
        "occurred_at": "2026-11-20T10:00:00.000Z", "notification_id": "ntf_1",
        "data": {"id": format!("txn_{}", ulid::Ulid::new().to_string().to_lowercase()),
                 "status": "completed", "customer_id": "ctm_promo", "currency_code": "EUR",
                 "discount_id": discount, "custom_data": null, "billed_at": "2026-11-20T09:59:00.000Z",
                 "details": {"totals": {"subtotal": "5000", "discount": "500", "tax": "0", "total": "4500"}}}});
    let r = paddle(id(&p), &txn).await;
    let cnv = conversion(&m, r.data()["conversionId"].as_str().unwrap()).await;
    assert_eq!(
        (&cnv["affiliateId"], &cnv["attribution"]),
        (&a["id"], &json!("PROMOTION_CODE"))
    );
}

#[tokio::test]
async fn a_promotion_code_is_created_and_deactivated_at_stripe() {
    use crate::payout_rails::standin_call;
    let (m, _, _, a, i) = programme().await;
    let k = Some(m.test_key.as_str());
    let key = format!("sk_test_{}", ulid::Ulid::new());
    let path = format!("/api/v1/integrations/{}", id(&i));
    let r = call("PATCH", &path, k, Some(json!({"apiKey": key}))).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let codes = format!("/api/v1/affiliates/{}/promotion-codes", id(&a));
    let word = format!("BOB{}", &ulid::Ulid::new().to_string()[20..]);
    // Stripe refuses a coupon it does not have: nothing stored.
    let unknown = json!({"integrationId": id(&i), "code": word, "couponId": fresh("NOPE")});
    let r = call("POST", &codes, k, Some(unknown)).await;
    assert_eq!(
        (r.status, &r.body["error"]["details"]["providerCode"]),
        (409, &json!("resource_missing")),
        "{:?}",
        r.body
    );
    let coupon = fresh("SUMMER");
    standin_call("POST", &format!("/_standin/stripe/coupons/{coupon}"), None).await;
    let body = json!({"integrationId": id(&i), "code": word, "couponId": coupon});
    let r = call("POST", &codes, k, Some(body)).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let created = r.data().clone();
    let promo = created["providerId"].as_str().unwrap().to_string();
    let at_stripe = standin_call(
        "GET",
        &format!("/_standin/stripe/promotion_codes/{promo}"),
        None,
    )
    .await;
    assert_eq!(
        (
            &at_stripe["code"],
            &at_stripe["active"],
            &at_stripe["promotion"]["coupon"],
            &at_stripe["metadata"]["affiliateId"]
        ),
        (&json!(word), &json!(true), &json!(coupon), &a["id"])
    );
    assert_eq!(
        call("GET", &codes, k, None).await.each("id"),
        vec![created["id"].clone()]
    );
    let r = call("DELETE", &format!("{codes}/{}", id(&created)), k, None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let at_stripe = standin_call(
        "GET",
        &format!("/_standin/stripe/promotion_codes/{promo}"),
        None,
    )
    .await;
    assert_eq!(at_stripe["active"], json!(false));
    // A suspended affiliate's codes stop: here, and at Stripe when made there.
    let again = json!({"integrationId": id(&i), "code": format!("{word}X"), "couponId": coupon});
    let made = call("POST", &codes, k, Some(again)).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    let promo = made.data()["providerId"].as_str().unwrap().to_string();
    let registered = json!({"integrationId": id(&i), "providerId": fresh("promo_")});
    assert_eq!(call("POST", &codes, k, Some(registered)).await.status, 201);
    let path = format!("/api/v1/affiliates/{}", id(&a));
    let r = call("PUT", &path, k, Some(json!({"status": "SUSPENDED"}))).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let listed = call("GET", &codes, k, None).await;
    assert_eq!(listed.each("active"), vec![json!(false); 3]);
    let path = format!("/_standin/stripe/promotion_codes/{promo}");
    assert_eq!(
        standin_call("GET", &path, None).await["active"],
        json!(false)
    );
    // Unknown ids are 404.
    call(
        "DELETE",
        &format!("{codes}/prc_01JD3Q5W6X7Y8Z9A0B1C2D3E4F"),
        k,
        None,
    )
    .await
    .assert_error(404, "NOT_FOUND");
}
