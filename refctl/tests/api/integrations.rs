//! Payment-provider integrations over HTTP: events signed by Stripe's and
//! Paddle's official Python libraries (scripts/provider_sign.py, pinned in
//! the local venv) become conversions, referrals and reversals.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Value};

use crate::support::{affiliate_with_code, call, campaign, merchant, raw, server, Merchant, Resp};

pub(crate) const STRIPE_SECRET: &str = "whsec_5f1a2b3c4d5e6f708192a3b4c5d6e7f8";
pub(crate) const PADDLE_SECRET: &str = "pdl_ntfset_01jd3q5w6x7y8z9a0b1c2d3e4f_0123456789abcdefghij";

/// The signature header the provider's official library makes for `body`.
pub(crate) fn official_signature(provider: &str, secret: &str, body: &str, at: i64) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut child = Command::new(root.join(".local/venv/bin/python"))
        .arg(root.join("scripts/provider_sign.py"))
        .args(["sign", provider, secret, &at.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the venv's python (scripts/install.sh)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

pub(crate) fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// Posts an event to an integration's receiver with a given header.
async fn deliver(integration: &str, header: Option<(&str, String)>, body: &str) -> Resp {
    deliver_on(&server().base, integration, header, body).await
}

/// Posts an event to an integration's receiver on the server at `base`.
async fn deliver_on(
    base: &str,
    integration: &str,
    header: Option<(&str, String)>,
    body: &str,
) -> Resp {
    let headers: Vec<(&str, &str)> = match &header {
        Some((name, value)) => vec![(name, value.as_str()), ("content-type", "application/json")],
        None => vec![("content-type", "application/json")],
    };
    raw(
        base,
        "POST",
        &format!("/api/v1/integrations/{integration}/events"),
        None,
        &headers,
        Some(body.as_bytes().to_vec()),
    )
    .await
}

pub(crate) async fn stripe(integration: &str, body: &Value) -> Resp {
    stripe_on(&server().base, integration, body).await
}

async fn stripe_on(base: &str, integration: &str, body: &Value) -> Resp {
    let body = body.to_string();
    let sig = official_signature("stripe", STRIPE_SECRET, &body, now());
    deliver_on(base, integration, Some(("stripe-signature", sig)), &body).await
}

pub(crate) async fn paddle(integration: &str, body: &Value) -> Resp {
    let body = body.to_string();
    let sig = official_signature("paddle", PADDLE_SECRET, &body, now());
    deliver(integration, Some(("paddle-signature", sig)), &body).await
}

pub(crate) async fn integration(m: &Merchant, provider: &str, secret: &str, extra: Value) -> Value {
    let mut body = json!({"provider": provider, "signingSecret": secret, "description": "billing"});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let r = call(
        "POST",
        "/api/v1/integrations",
        Some(&m.test_key),
        Some(body),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert!(
        !r.body.to_string().contains(secret),
        "the secret is write-only"
    );
    r.data().clone()
}

pub(crate) fn id(v: &Value) -> &str {
    v["id"].as_str().unwrap()
}

pub(crate) fn stripe_event(kind: &str, object: Value) -> Value {
    json!({
        "id": format!("evt_{}", ulid::Ulid::new()),
        "object": "event",
        "api_version": "2024-06-20",
        "created": now(),
        "livemode": false,
        "type": kind,
        "data": {"object": object},
    })
}

/// A paid invoice of `untaxed` minor units plus 20% tax.
fn invoice(id: &str, customer: &str, untaxed: i64, metadata: Value) -> Value {
    let total = untaxed + untaxed / 5;
    json!({
        "id": id, "object": "invoice", "amount_paid": total, "total": total,
        "total_excluding_tax": untaxed, "currency": "usd", "customer": customer,
        "customer_email": null, "metadata": metadata,
        "payment_intent": format!("pi_{id}"), "charge": format!("ch_{id}"),
        "status_transitions": {"paid_at": now() - 60},
    })
}

/// The tracker's session of a fresh click on `code`: what a checkout carries
/// as `client_reference_id`.
pub(crate) async fn session_of_click(campaign: &Value, code: &str) -> String {
    let r = call(
        "POST",
        "/api/v1/track/click",
        None,
        Some(json!({"campaignId": id(campaign), "ref": code})),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    r.data()["sessionId"].as_str().unwrap().to_string()
}

/// A completed subscription Checkout of `customer` through `session`: 12.00
/// with 2.00 tax, naming its first invoice when it has one.
fn subscription_checkout(
    session: &str,
    customer: &str,
    email: Option<&str>,
    invoice: Option<&str>,
) -> Value {
    stripe_event(
        "checkout.session.completed",
        json!({
            "id": format!("cs_test_{}", ulid::Ulid::new()), "object": "checkout.session",
            "mode": "subscription", "client_reference_id": session, "customer": customer,
            "customer_details": {"email": email}, "amount_total": 1200, "currency": "usd",
            "invoice": invoice, "payment_intent": null, "metadata": {},
            "total_details": {"amount_tax": 200},
        }),
    )
}

/// What a GET of `path` answers the merchant's test key (200 expected).
pub(crate) async fn read(m: &Merchant, path: &str) -> Value {
    let r = call("GET", path, Some(&m.test_key), None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.data().clone()
}

pub(crate) async fn conversion(m: &Merchant, id: &str) -> Value {
    read(m, &format!("/api/v1/conversions/{id}")).await
}

#[tokio::test]
async fn integrations_are_managed_and_their_secret_is_never_shown() {
    let m = merchant().await;
    let k = Some(m.test_key.as_str());
    let i = integration(&m, "STRIPE", STRIPE_SECRET, json!({})).await;
    assert_eq!(
        (&i["provider"], &i["status"]),
        (&json!("STRIPE"), &json!("ENABLED"))
    );
    let url = i["webhookUrl"].as_str().unwrap();
    assert!(
        url.ends_with(&format!("/api/v1/integrations/{}/events", id(&i))),
        "{url}"
    );
    let path = format!("/api/v1/integrations/{}", id(&i));
    for r in [
        call("GET", &path, k, None).await,
        call("GET", "/api/v1/integrations", k, None).await,
        call("PATCH", &path, k, Some(json!({"description": "renamed"}))).await,
    ] {
        assert_eq!(r.status, 200, "{:?}", r.body);
        assert!(!r.body.to_string().contains(STRIPE_SECRET));
    }
    // Another mode or account never sees it; a bad secret is 400.
    call("GET", &path, Some(&m.live_key), None)
        .await
        .assert_error(404, "NOT_FOUND");
    let bad = json!({"provider": "STRIPE", "signingSecret": "has spaces in it"});
    call("POST", "/api/v1/integrations", k, Some(bad))
        .await
        .assert_error(400, "VALIDATION_FAILED");
    let unknown = json!({"provider": "STRIPE", "signingSecret": STRIPE_SECRET, "campaignId": "cmp_01JD3Q5W6X7Y8Z9A0B1C2D3E4F"});
    call("POST", "/api/v1/integrations", k, Some(unknown))
        .await
        .assert_error(404, "NOT_FOUND");

    // Disabled: 409, so the provider retries later. Deleted: gone, events 404.
    call("PATCH", &path, k, Some(json!({"status": "DISABLED"}))).await;
    let ev = stripe_event(
        "invoice.paid",
        invoice("in_disabled", "cus_1", 1000, json!({})),
    );
    stripe(id(&i), &ev).await.assert_error(409, "INVALID_STATE");
    assert_eq!(call("DELETE", &path, k, None).await.status, 200);
    call("GET", &path, k, None)
        .await
        .assert_error(404, "NOT_FOUND");
    stripe(id(&i), &ev).await.assert_error(404, "NOT_FOUND");
    let list = call("GET", "/api/v1/integrations", k, None).await;
    assert!(list
        .data()
        .as_array()
        .unwrap()
        .iter()
        .all(|x| x["id"] != i["id"]));
}

#[tokio::test]
async fn bad_signatures_are_400_and_only_logged() {
    let m = merchant().await;
    let i = integration(&m, "STRIPE", STRIPE_SECRET, json!({})).await;
    let ev = stripe_event(
        "invoice.paid",
        invoice("in_badsig", "cus_badsig", 1000, json!({})),
    );
    let body = ev.to_string();
    let good = official_signature("stripe", STRIPE_SECRET, &body, now());
    let cases = [
        Some((
            "stripe-signature",
            official_signature("stripe", "whsec_wrong_secret_0000", &body, now()),
        )),
        Some((
            "stripe-signature",
            official_signature("stripe", STRIPE_SECRET, &body, now() - 301),
        )),
        Some(("stripe-signature", "t=1,v1=zz".to_string())),
        None,
    ];
    for header in cases {
        let r = deliver(id(&i), header, &body).await;
        r.assert_error(400, "INVALID_REQUEST");
    }
    let changed = body.replace("1000", "1001");
    deliver(id(&i), Some(("stripe-signature", good)), &changed)
        .await
        .assert_error(400, "INVALID_REQUEST");
    // Nothing recorded; five REJECTED rows.
    let list = call("GET", "/api/v1/conversions", Some(&m.test_key), None).await;
    assert_eq!(list.data().as_array().unwrap().len(), 0);
    let log = call(
        "GET",
        &format!("/api/v1/integrations/{}/deliveries", id(&i)),
        Some(&m.test_key),
        None,
    )
    .await;
    let rows = log.data().as_array().unwrap();
    assert_eq!(rows.len(), 5, "{rows:?}");
    assert!(rows
        .iter()
        .all(|r| r["outcome"] == "REJECTED" && r["reason"].is_string()));
    // An unknown integration is 404.
    deliver("int_01JD3Q5W6X7Y8Z9A0B1C2D3E4F", None, &body)
        .await
        .assert_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn a_stripe_checkout_then_invoices_earn_by_the_campaign_rule() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(
        k,
        json!({"isPublic": true, "commissionRecurring": true, "recurringMonthsLimit": 1}),
    )
    .await;
    let code = format!("S{}", &ulid::Ulid::new().to_string()[18..]);
    let a = affiliate_with_code(k, id(&c), &code).await;
    let i = integration(&m, "STRIPE", STRIPE_SECRET, json!({})).await;
    // The tracker's session, passed to Checkout as client_reference_id.
    let session = session_of_click(&c, &code).await;
    let customer = format!("cus_{}", &ulid::Ulid::new().to_string()[12..]);
    let checkout = subscription_checkout(
        &session,
        &customer,
        Some("ann@example.com"),
        Some("in_first"),
    );
    let r = stripe(id(&i), &checkout).await;
    assert_eq!(
        (r.status, &r.data()["outcome"]),
        (200, &json!("APPLIED")),
        "{:?}",
        r.body
    );

    let first = format!("in_{}", ulid::Ulid::new());
    let r = stripe(
        id(&i),
        &stripe_event("invoice.paid", invoice(&first, &customer, 1000, json!({}))),
    )
    .await;
    assert_eq!(r.data()["outcome"], "APPLIED", "{:?}", r.body);
    let cnv = conversion(&m, r.data()["conversionId"].as_str().unwrap()).await;
    assert_eq!(
        (&cnv["externalId"], &cnv["amount"]),
        (&json!(first), &json!(10)),
        "tax excluded"
    );
    assert_eq!(cnv["affiliateId"], a["id"]);
    assert_eq!(cnv["commission"], json!(1), "10% of 10.00");
    assert_eq!(cnv["metadata"]["integrationId"], i["id"]);

    // A renewal inside the recurring window earns again.
    let renewal = format!("in_{}", ulid::Ulid::new());
    let r = stripe(
        id(&i),
        &stripe_event(
            "invoice.paid",
            invoice(&renewal, &customer, 1000, json!({})),
        ),
    )
    .await;
    let renewed = conversion(&m, r.data()["conversionId"].as_str().unwrap()).await;
    assert_eq!(
        (&renewed["affiliateId"], &renewed["isRecurring"]),
        (&a["id"], &json!(true))
    );

    // The same event again: DUPLICATE, nothing twice; a trial invoice: IGNORED.
    let again = stripe_event(
        "invoice.paid",
        invoice(&renewal, &customer, 1000, json!({})),
    );
    let mut same = again.clone();
    let r1 = stripe(id(&i), &again).await;
    same["id"] = again["id"].clone();
    let r2 = stripe(id(&i), &same).await;
    assert_eq!(
        (&r1.data()["conversionId"], &r2.data()["outcome"]),
        (&renewed["id"], &json!("DUPLICATE"))
    );
    let trial = stripe(
        id(&i),
        &stripe_event("invoice.paid", invoice("in_trial", &customer, 0, json!({}))),
    )
    .await;
    assert_eq!(
        (&trial.data()["outcome"], &trial.data()["reason"]),
        (&json!("IGNORED"), &json!("zero amount"))
    );
    // A live event to a test-mode integration is ignored.
    let mut live = stripe_event(
        "invoice.paid",
        invoice("in_live", &customer, 1000, json!({})),
    );
    live["livemode"] = json!(true);
    let r = stripe(id(&i), &live).await;
    assert_eq!(
        (&r.data()["outcome"], &r.data()["reason"]),
        (&json!("IGNORED"), &json!("mode mismatch"))
    );
}

#[tokio::test]
async fn stripe_refunds_cut_the_commission_by_their_running_total() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"isPublic": true})).await;
    let code = format!("R{}", &ulid::Ulid::new().to_string()[18..]);
    affiliate_with_code(k, id(&c), &code).await;
    let i = integration(&m, "STRIPE", STRIPE_SECRET, json!({})).await;
    let inv = format!("in_{}", ulid::Ulid::new());
    let r = stripe(
        id(&i),
        &stripe_event(
            "invoice.paid",
            invoice(&inv, "cus_r", 10000, json!({"referral": code})),
        ),
    )
    .await;
    let cnv = r.data()["conversionId"].as_str().unwrap().to_string();
    assert_eq!(conversion(&m, &cnv).await["commission"], json!(10));
    assert_eq!(cnv, api::domain::postback::conversion_id_of(&inv));
    // The payment intent is claimed for the conversion at the key it derives:
    // a postback naming it replays the conversion, and that key is no conversion.
    let pi = format!("pi_{inv}");
    let r = call(
        "POST",
        "/api/v1/conversions/postback",
        Some(k),
        Some(json!({
            "externalId": pi, "amount": 100, "currency": "USD", "affiliateCode": code,
            "conversionType": "SALE",
        })),
    )
    .await;
    assert_eq!(
        (r.status, &r.data()["id"]),
        (200, &json!(cnv)),
        "{:?}",
        r.body
    );
    let alias = api::domain::postback::conversion_id_of(&pi);
    call(
        "GET",
        &format!("/api/v1/conversions/{alias}"),
        Some(k),
        None,
    )
    .await
    .assert_error(404, "NOT_FOUND");
    // Two partial refunds of the charge (12000 with tax): a quarter, then half in all.
    let charge = |refunded: i64| {
        stripe_event(
            "charge.refunded",
            json!({
                "id": format!("ch_{inv}"), "object": "charge", "amount": 12000, "amount_refunded": refunded,
                "currency": "usd", "payment_intent": format!("pi_{inv}"), "refunded": refunded == 12000,
            }),
        )
    };
    let half = charge(6000);
    let r = stripe(id(&i), &charge(3000)).await;
    assert_eq!(
        (&r.data()["outcome"], &r.data()["conversionId"]),
        (&json!("APPLIED"), &json!(cnv)),
        "{:?}",
        r.body
    );
    let now = conversion(&m, &cnv).await;
    assert_eq!(
        (&now["reversedAmount"], &now["commissionReversed"]),
        (&json!(25), &json!(2.5))
    );
    stripe(id(&i), &half).await;
    // Arriving again, or late, changes nothing: the running total is already met.
    stripe(id(&i), &charge(3000)).await;
    let now = conversion(&m, &cnv).await;
    assert_eq!(
        (
            &now["reversedAmount"],
            &now["commissionReversed"],
            &now["status"]
        ),
        (&json!(50), &json!(5), &json!("PENDING"))
    );
    // Found by the payment intent alone (later API versions send no invoice).
    let lost = stripe_event(
        "charge.dispute.closed",
        json!({
            "id": "dp_1", "object": "dispute", "status": "lost", "charge": "ch_other", "payment_intent": format!("pi_{inv}"),
        }),
    );
    let r = stripe(id(&i), &lost).await;
    assert_eq!(r.data()["outcome"], "APPLIED", "{:?}", r.body);
    let now = conversion(&m, &cnv).await;
    assert_eq!(
        (&now["status"], &now["commissionReversed"]),
        (&json!("REVERSED"), &json!(10))
    );
    // A refund of a payment never recorded is ignored.
    let r = stripe(
        id(&i),
        &stripe_event(
            "charge.refunded",
            json!({
        "id": "ch_none", "amount": 100, "amount_refunded": 100, "payment_intent": "pi_none"}),
        ),
    )
    .await;
    assert_eq!(
        (&r.data()["outcome"], &r.data()["reason"]),
        (&json!("IGNORED"), &json!("unknown payment"))
    );
}

#[tokio::test]
async fn a_payment_posted_back_by_its_payment_intent_or_charge_counts_once() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"isPublic": true})).await;
    let code = format!("P{}", &ulid::Ulid::new().to_string()[18..]);
    let a = affiliate_with_code(k, id(&c), &code).await;
    let i = integration(&m, "STRIPE", STRIPE_SECRET, json!({})).await;
    for other in ["pi", "ch"] {
        let inv = format!("in_{}", ulid::Ulid::new());
        // The merchant's server posts the payment back first, by one of its ids.
        let posted = call(
            "POST",
            "/api/v1/conversions/postback",
            Some(k),
            Some(json!({
                "externalId": format!("{other}_{inv}"), "amount": 100, "currency": "USD",
                "affiliateCode": code, "conversionType": "SALE",
            })),
        )
        .await;
        assert_eq!(posted.status, 201, "{:?}", posted.body);
        let cnv = id(posted.data()).to_string();
        // Stripe's invoice of the same payment then replays that conversion.
        let r = stripe(
            id(&i),
            &stripe_event(
                "invoice.paid",
                invoice(
                    &inv,
                    &format!("cus_{inv}"),
                    10000,
                    json!({"referral": code}),
                ),
            ),
        )
        .await;
        assert_eq!(
            (&r.data()["outcome"], &r.data()["conversionId"]),
            (&json!("APPLIED"), &json!(cnv)),
            "{other}: {:?}",
            r.body
        );
        // A full refund naming only the invoice finds it: nothing is left earned.
        let refund = stripe_event(
            "charge.refunded",
            json!({
                "id": "ch_elsewhere", "object": "charge", "amount": 12000, "amount_refunded": 12000,
                "currency": "usd", "invoice": inv, "refunded": true,
            }),
        );
        let r = stripe(id(&i), &refund).await;
        assert_eq!(
            r.data()["conversionId"],
            json!(cnv),
            "{other}: {:?}",
            r.body
        );
        assert_eq!(conversion(&m, &cnv).await["status"], "REVERSED");
    }
    // Both at once: whichever commits first, the other replays it.
    for _ in 0..5 {
        let inv = format!("in_{}", ulid::Ulid::new());
        let body = json!({
            "externalId": format!("pi_{inv}"), "amount": 100, "currency": "USD",
            "affiliateCode": code, "conversionType": "SALE",
        });
        let event = stripe_event(
            "invoice.paid",
            // Its own customer: a first payment, whichever side records it.
            invoice(
                &inv,
                &format!("cus_{inv}"),
                10000,
                json!({"referral": code}),
            ),
        );
        let (posted, r) = tokio::join!(
            call("POST", "/api/v1/conversions/postback", Some(k), Some(body)),
            stripe(id(&i), &event)
        );
        assert_eq!(
            posted.data()["id"],
            r.data()["conversionId"],
            "{:?} {:?}",
            posted.body,
            r.body
        );
    }
    let listed = read(&m, &format!("/api/v1/conversions?affiliate_id={}", id(&a))).await;
    assert_eq!(listed.as_array().unwrap().len(), 7, "{listed}");
    let earned = read(&m, &format!("/api/v1/affiliates/{}", id(&a))).await;
    assert_eq!(earned["earned"], json!({"USD": 50}), "{earned}");
}

#[tokio::test]
async fn another_accounts_claim_on_a_payment_intent_leaves_the_invoice_its_own() {
    let m = merchant().await;
    let other = merchant().await;
    let i = integration(&m, "STRIPE", STRIPE_SECRET, json!({})).await;
    let inv = format!("in_{}", ulid::Ulid::new());
    // Another account posted its own payment back under this payment intent.
    let r = call(
        "POST",
        "/api/v1/conversions/postback",
        Some(&other.test_key),
        Some(
            json!({"externalId": format!("pi_{inv}"), "amount": 5, "currency": "USD",
            "conversionType": "SALE"}),
        ),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let theirs = id(r.data()).to_string();
    // The invoice is still recorded here, under its own id.
    let event = stripe_event("invoice.paid", invoice(&inv, "cus_f", 1000, json!({})));
    let r = stripe(id(&i), &event).await;
    assert_eq!(r.data()["outcome"], "APPLIED", "{:?}", r.body);
    let mine = r.data()["conversionId"].as_str().unwrap().to_string();
    assert_eq!(mine, api::domain::postback::conversion_id_of(&inv));
    assert_ne!(mine, theirs);
    assert_eq!(conversion(&m, &mine).await["amount"], json!(10));
}

#[tokio::test]
async fn paddle_transactions_and_an_approved_refund_counted_once() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"isPublic": true})).await;
    let code = format!("P{}", &ulid::Ulid::new().to_string()[18..]);
    let a = affiliate_with_code(k, id(&c), &code).await;
    let i = integration(&m, "PADDLE", PADDLE_SECRET, json!({})).await;
    let txn = format!("txn_{}", ulid::Ulid::new().to_string().to_lowercase());
    let event = |kind: &str, data: Value| {
        json!({"event_id": format!("evt_{}", ulid::Ulid::new()), "event_type": kind,
               "occurred_at": "2026-11-20T10:00:00.000Z", "notification_id": "ntf_1", "data": data})
    };
    let completed = event(
        "transaction.completed",
        json!({
            "id": txn, "status": "completed", "customer_id": "ctm_1", "currency_code": "EUR",
            "custom_data": {"referral": code}, "billed_at": "2026-11-20T09:59:00.000Z",
            "details": {"totals": {"subtotal": "5500", "discount": "500", "tax": "950", "total": "5950"}},
        }),
    );
    let r = paddle(id(&i), &completed).await;
    assert_eq!(r.data()["outcome"], "APPLIED", "{:?}", r.body);
    let cnv = conversion(&m, r.data()["conversionId"].as_str().unwrap()).await;
    assert_eq!(
        (&cnv["amount"], &cnv["currency"], &cnv["affiliateId"]),
        (&json!(50), &json!("EUR"), &a["id"])
    );
    let adj = |kind: &str| {
        event(
            kind,
            json!({"id": "adj_01hvgf2s84dr6reszzg29zbvcm", "action": "refund", "status": "approved",
            "transaction_id": txn, "currency_code": "EUR", "totals": {"subtotal": "1000", "tax": "190", "total": "1190"}}),
        )
    };
    // An adjustment in another currency than its transaction's is not its
    // refund: nothing is reversed, and the answer says why.
    let yen = event(
        "adjustment.created",
        json!({"id": "adj_01hvgf2s84dr6reszzg29zbvyy", "action": "refund", "status": "approved",
        "transaction_id": txn, "currency_code": "JPY", "totals": {"subtotal": "1000", "tax": "0", "total": "1000"}}),
    );
    let r = paddle(id(&i), &yen).await;
    assert_eq!(
        (&r.data()["outcome"], &r.data()["reason"]),
        (
            &json!("IGNORED"),
            &json!("the refund is in JPY, the payment in EUR")
        ),
        "{:?}",
        r.body
    );
    assert_eq!(conversion(&m, id(&cnv)).await["reversedAmount"], json!(0));
    for kind in ["adjustment.created", "adjustment.updated"] {
        let r = paddle(id(&i), &adj(kind)).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    let now = conversion(&m, id(&cnv)).await;
    assert_eq!(
        (&now["reversedAmount"], &now["commissionReversed"]),
        (&json!(10), &json!(1)),
        "once"
    );
    // A Stripe-signed body is no Paddle event.
    let body = completed.to_string();
    let sig = official_signature("stripe", PADDLE_SECRET, &body, self::now());
    deliver(id(&i), Some(("stripe-signature", sig)), &body)
        .await
        .assert_error(400, "INVALID_REQUEST");
}

#[tokio::test]
async fn the_same_event_twenty_times_at_once_makes_one_conversion() {
    let m = merchant().await;
    let i = integration(&m, "STRIPE", STRIPE_SECRET, json!({})).await;
    let inv = format!("in_{}", ulid::Ulid::new());
    let ev = stripe_event("invoice.paid", invoice(&inv, "cus_race", 1000, json!({})));
    let body = ev.to_string();
    let sig = official_signature("stripe", STRIPE_SECRET, &body, now());
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (iid, body, sig) = (id(&i).to_string(), body.clone(), sig.clone());
            tokio::spawn(async move { deliver(&iid, Some(("stripe-signature", sig)), &body).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for t in tasks {
        let r = t.await.unwrap();
        assert!(matches!(r.status, 200 | 503), "{:?}", r.body);
        if r.status == 200 {
            outcomes.push(r.data()["outcome"].as_str().unwrap().to_string());
        }
    }
    assert!(
        outcomes.iter().filter(|o| *o == "APPLIED").count() <= 1,
        "{outcomes:?}"
    );
    let list = call(
        "GET",
        "/api/v1/conversions?limit=100",
        Some(&m.test_key),
        None,
    )
    .await;
    let made: Vec<_> = list
        .data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["externalId"] == json!(inv))
        .collect();
    assert_eq!(made.len(), 1);
}

/// A paid invoice of `untaxed` minor units in `currency`, paid `days_ago`.
fn invoice_in(
    id: &str,
    customer: &str,
    untaxed: i64,
    currency: &str,
    days_ago: i64,
    metadata: Value,
) -> Value {
    let mut inv = invoice(id, customer, untaxed, metadata);
    inv["currency"] = json!(currency);
    inv["status_transitions"]["paid_at"] = json!(now() - days_ago * 86_400 - 60);
    inv
}

#[tokio::test]
async fn amounts_are_exact_per_currency_and_recurring_stops_at_its_limit() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(
        k,
        json!({"isPublic": true, "commissionRecurring": true, "recurringMonthsLimit": 1}),
    )
    .await;
    let code = format!("L{}", &ulid::Ulid::new().to_string()[18..]);
    let a = affiliate_with_code(k, id(&c), &code).await;
    let i = integration(&m, "STRIPE", STRIPE_SECRET, json!({})).await;
    let customer = format!("cus_{}", &ulid::Ulid::new().to_string()[12..]);
    // JPY has no minor unit, KWD three decimals.
    for (currency, minor, major) in [("jpy", 5000, json!(5000)), ("kwd", 12345, json!(12.345))] {
        let inv = invoice_in(
            &format!("in_{}", ulid::Ulid::new()),
            "cus_other",
            minor,
            currency,
            0,
            json!({"referral": code}),
        );
        let r = stripe(id(&i), &stripe_event("invoice.paid", inv)).await;
        let cnv = conversion(&m, r.data()["conversionId"].as_str().unwrap()).await;
        assert_eq!(
            (&cnv["amount"], &cnv["currency"]),
            (&major, &json!(currency.to_uppercase()))
        );
    }
    // The first payment 40 days ago binds the customer; a renewal now is past one month.
    let first = invoice_in(
        &format!("in_{}", ulid::Ulid::new()),
        &customer,
        1000,
        "usd",
        40,
        json!({"referral": code}),
    );
    let r = stripe(id(&i), &stripe_event("invoice.paid", first)).await;
    let first = conversion(&m, r.data()["conversionId"].as_str().unwrap()).await;
    assert_eq!(
        (&first["affiliateId"], &first["commission"]),
        (&a["id"], &json!(1))
    );
    let renewal = invoice_in(
        &format!("in_{}", ulid::Ulid::new()),
        &customer,
        1000,
        "usd",
        0,
        json!({}),
    );
    let r = stripe(id(&i), &stripe_event("invoice.paid", renewal)).await;
    let renewal = conversion(&m, r.data()["conversionId"].as_str().unwrap()).await;
    assert_eq!(
        (&renewal["affiliateId"], &renewal["isRecurring"]),
        (&a["id"], &json!(true))
    );
    assert_eq!(
        renewal["commission"],
        json!(0),
        "past recurringMonthsLimit: {renewal}"
    );

    // A one-off Checkout payment is recorded from the session, tax excluded.
    let session = stripe_event(
        "checkout.session.completed",
        json!({
            "id": "cs_test_oneoff", "object": "checkout.session", "mode": "payment", "client_reference_id": code,
            "customer": null, "customer_details": {"email": "bob@example.com"}, "amount_total": 2400, "currency": "usd",
            "payment_intent": format!("pi_{}", ulid::Ulid::new()), "invoice": null, "metadata": {},
            "total_details": {"amount_tax": 400},
        }),
    );
    let r = stripe(id(&i), &session).await;
    let one_off = conversion(&m, r.data()["conversionId"].as_str().unwrap()).await;
    assert_eq!(
        (&one_off["amount"], &one_off["affiliateId"]),
        (&json!(20), &a["id"])
    );
}

#[tokio::test]
async fn a_live_integration_makes_live_data_only_and_other_tenants_never_see_it() {
    let m = merchant().await;
    let other = merchant().await;
    let body = json!({"provider": "STRIPE", "signingSecret": STRIPE_SECRET});
    let r = call(
        "POST",
        "/api/v1/integrations",
        Some(&m.live_key),
        Some(body),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let live = r.data().clone();
    let path = format!("/api/v1/integrations/{}", id(&live));
    for key in [&m.test_key, &other.live_key] {
        call("GET", &path, Some(key), None)
            .await
            .assert_error(404, "NOT_FOUND");
        call("GET", &format!("{path}/deliveries"), Some(key), None)
            .await
            .assert_error(404, "NOT_FOUND");
    }
    let mut ev = stripe_event(
        "invoice.paid",
        invoice(
            &format!("in_{}", ulid::Ulid::new()),
            "cus_live",
            1000,
            json!({}),
        ),
    );
    let r = stripe(id(&live), &ev).await;
    assert_eq!(
        r.data()["reason"],
        "mode mismatch",
        "a test-mode event to a live integration"
    );
    ev["id"] = json!(format!("evt_{}", ulid::Ulid::new()));
    ev["livemode"] = json!(true);
    let r = stripe(id(&live), &ev).await;
    let cnv = r.data()["conversionId"].as_str().unwrap().to_string();
    let got = call(
        "GET",
        &format!("/api/v1/conversions/{cnv}"),
        Some(&m.live_key),
        None,
    )
    .await;
    assert_eq!(got.status, 200);
    call(
        "GET",
        &format!("/api/v1/conversions/{cnv}"),
        Some(&m.test_key),
        None,
    )
    .await
    .assert_error(404, "NOT_FOUND");
    call(
        "GET",
        &format!("/api/v1/conversions/{cnv}"),
        Some(&other.live_key),
        None,
    )
    .await
    .assert_error(404, "NOT_FOUND");
    // The log never shows a payload or the secret.
    let log = call(
        "GET",
        &format!("{path}/deliveries"),
        Some(&m.live_key),
        None,
    )
    .await;
    assert_eq!(log.data().as_array().unwrap().len(), 2);
    assert!(!log.body.to_string().contains(STRIPE_SECRET));
    assert!(!log.body.to_string().contains("cus_live"));
}

/// The log lines of every server in this test binary, from the first call
/// on (a global JSON subscriber at INFO, as the functions log).
fn captured_logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_max_level(tracing::Level::INFO)
            .with_writer(move || LogSink(sink.clone()))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("no other global subscriber");
        buffer
    })
    .clone()
}

struct LogSink(Arc<Mutex<Vec<u8>>>);

impl Write for LogSink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_signing_secret_is_in_no_log_line() {
    let logs = captured_logs();
    let m = merchant().await;
    let secret = format!("whsec_never_logged_{}", ulid::Ulid::new());
    let i = integration(&m, "STRIPE", &secret, json!({})).await;
    let ev = stripe_event(
        "invoice.paid",
        invoice(
            &format!("in_{}", ulid::Ulid::new()),
            "cus_log",
            1000,
            json!({}),
        ),
    );
    let body = ev.to_string();
    let good = official_signature("stripe", &secret, &body, now());
    assert_eq!(
        deliver(id(&i), Some(("stripe-signature", good)), &body)
            .await
            .status,
        200
    );
    let bad = official_signature("stripe", "whsec_other_secret_000", &body, now());
    deliver(id(&i), Some(("stripe-signature", bad)), &body)
        .await
        .assert_error(400, "INVALID_REQUEST");
    let rolled = format!("{secret}_rolled");
    let path = format!("/api/v1/integrations/{}", id(&i));
    let r = call(
        "PATCH",
        &path,
        Some(&m.test_key),
        Some(json!({"signingSecret": rolled})),
    )
    .await;
    assert_eq!(r.status, 200);
    let text = String::from_utf8_lossy(&logs.lock().unwrap()).to_string();
    let receiver_lines = text
        .lines()
        .filter(|l| l.contains("/api/v1/integrations/{id}/events"))
        .count();
    assert!(
        receiver_lines >= 2,
        "the request lines were captured: {receiver_lines}"
    );
    assert!(
        !text.contains("whsec_never_logged_"),
        "a signing secret in a log line"
    );
}

#[tokio::test]
async fn an_invoice_before_its_checkout_is_attributed_when_the_checkout_arrives() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"isPublic": true, "commissionRecurring": true})).await;
    let code = format!("L{}", &ulid::Ulid::new().to_string()[18..]);
    let a = affiliate_with_code(k, id(&c), &code).await;
    let i = integration(&m, "STRIPE", STRIPE_SECRET, json!({})).await;
    let click = |_: ()| session_of_click(&c, &code);
    let checkout = |session: &str, customer: &str, invoice: &str| {
        subscription_checkout(session, customer, None, Some(invoice))
    };
    // In order: the checkout, then its first invoice.
    let (cus1, in1) = (
        format!("cus_{}", ulid::Ulid::new()),
        format!("in_{}", ulid::Ulid::new()),
    );
    let session = click(()).await;
    stripe(id(&i), &checkout(&session, &cus1, &in1)).await;
    let r = stripe(
        id(&i),
        &stripe_event("invoice.paid", invoice(&in1, &cus1, 1000, json!({}))),
    )
    .await;
    let in_order = conversion(&m, r.data()["conversionId"].as_str().unwrap()).await;

    // Reversed: the invoice is recorded unattributed, then the checkout attributes it.
    let (cus2, in2) = (
        format!("cus_{}", ulid::Ulid::new()),
        format!("in_{}", ulid::Ulid::new()),
    );
    let session = click(()).await;
    let r = stripe(
        id(&i),
        &stripe_event("invoice.paid", invoice(&in2, &cus2, 1000, json!({}))),
    )
    .await;
    let waiting = r.data()["conversionId"].as_str().unwrap().to_string();
    assert_eq!(conversion(&m, &waiting).await["status"], "UNATTRIBUTED");
    let r = stripe(id(&i), &checkout(&session, &cus2, &in2)).await;
    assert_eq!(
        (&r.data()["outcome"], &r.data()["conversionId"]),
        (&json!("APPLIED"), &json!(waiting)),
        "{:?}",
        r.body
    );
    let late = conversion(&m, &waiting).await;
    for field in [
        "affiliateId",
        "campaignId",
        "status",
        "commission",
        "amount",
        "attribution",
        "isRecurring",
    ] {
        assert_eq!(
            late[field], in_order[field],
            "{field}: {late:?} vs {in_order:?}"
        );
    }
    assert_eq!(late["affiliateId"], a["id"]);
    assert_eq!(late["commission"], json!(1));
    assert_eq!(late["externalId"], json!(in2));
    // The affiliate earned both; the summary counts it PENDING, no longer UNATTRIBUTED.
    let aff = call(
        "GET",
        &format!("/api/v1/affiliates/{}", id(&a)),
        Some(k),
        None,
    )
    .await;
    assert_eq!(aff.data()["earned"]["USD"], json!(2), "{:?}", aff.body);
    let sum = call(
        "GET",
        "/api/v1/conversions/summary?group_by=status",
        Some(k),
        None,
    )
    .await;
    let groups = sum.data()["groups"].as_array().unwrap();
    assert!(
        groups.iter().all(|g| g["status"] != "UNATTRIBUTED"),
        "{groups:?}"
    );
    let events = call(
        "GET",
        "/api/v1/events?type=conversion.attributed",
        Some(k),
        None,
    )
    .await;
    let named: Vec<_> = events
        .data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["data"]["id"] == json!(waiting))
        .collect();
    assert_eq!(named.len(), 1, "{:?}", events.body);
    // The checkout again changes nothing (DUPLICATE for the same event, the
    // conversion is attributed already for a new one).
    let again = stripe(id(&i), &checkout(&session, &cus2, &in2)).await;
    assert_eq!(again.data()["outcome"], "APPLIED");
    let aff = call(
        "GET",
        &format!("/api/v1/affiliates/{}", id(&a)),
        Some(k),
        None,
    )
    .await;
    assert_eq!(aff.data()["earned"]["USD"], json!(2));
}

#[tokio::test]
async fn provider_refunds_in_a_payout_are_clawed_back_never_refused() {
    use crate::payouts::Fx;
    use api::domain::payout_command::Command as PayoutCommand;
    use api::domain::tenant::Mode;
    let fx = Fx::new().await;
    let base = fx.server.base.as_str();
    let body = json!({"provider": "STRIPE", "signingSecret": STRIPE_SECRET});
    let r = fx.call("POST", "/api/v1/integrations", Some(body)).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let i = r.data()["id"].as_str().unwrap().to_string();
    // Two affiliates, a paid invoice of 100.00 (commission 10.00) each.
    let mut sold = Vec::new();
    for _ in 0..2 {
        let code = format!("K{}", &ulid::Ulid::new().to_string()[16..]);
        let body = json!({"campaignId": fx.test_campaign, "name": "Payee", "code": code,
            "email": format!("{}@pay.example.com", code.to_lowercase()), "payoutMethod": "PAYPAL"});
        let r = fx.call("POST", "/api/v1/affiliates", Some(body)).await;
        assert_eq!(r.status, 201, "{:?}", r.body);
        let aff = r.data()["id"].as_str().unwrap().to_string();
        let inv = format!("in_{}", ulid::Ulid::new());
        let customer = format!("cus_{}", ulid::Ulid::new());
        let ev = stripe_event(
            "invoice.paid",
            invoice(&inv, &customer, 10000, json!({"referral": code})),
        );
        let r = stripe_on(base, &i, &ev).await;
        let cnv = r.data()["conversionId"].as_str().unwrap().to_string();
        sold.push((aff, inv, cnv, code));
    }
    fx.run_job().await;
    let refund = |inv: &str, refunded: i64| {
        stripe_event(
            "charge.refunded",
            json!({"id": format!("ch_{inv}"), "object": "charge", "amount": 12000,
                "amount_refunded": refunded, "currency": "usd", "payment_intent": format!("pi_{inv}")}),
        )
    };
    let mut open = Vec::new();
    for (aff, inv, cnv, _) in &sold {
        let c = fx
            .call("GET", &format!("/api/v1/conversions/{cnv}"), None)
            .await;
        assert_eq!(c.data()["status"], "APPROVED", "{:?}", c.body);
        let payout = fx.payouts_of(Mode::Test, aff).await.remove(0);
        assert_eq!(
            (&payout["status"], &payout["amount"]),
            (&json!("PENDING"), &json!(10))
        );
        // Half refunded while the open payout holds it: applied, not refused.
        let r = stripe_on(base, &i, &refund(inv, 6000)).await;
        assert_eq!(r.data()["outcome"], "APPLIED", "{:?}", r.body);
        let c = fx
            .call("GET", &format!("/api/v1/conversions/{cnv}"), None)
            .await;
        assert_eq!(
            (
                &c.data()["commissionReversed"],
                &c.data()["payoutId"],
                &c.data()["status"]
            ),
            (&json!(5), &payout["id"], &json!("APPROVED"))
        );
        // The merchant's own reversal is still refused there.
        let r = fx
            .call(
                "POST",
                &format!("/api/v1/conversions/{cnv}/reverse"),
                Some(json!({})),
            )
            .await;
        r.assert_error(409, "INVALID_STATE");
        open.push(payout["id"].as_str().unwrap().to_string());
    }
    // The first payout is paid as claimed (10.00); the cut is netted next time.
    let t = fx.tenant(Mode::Test);
    let now = api::domain::timestamp::now();
    let settle = |_: &api::domain::payout::Payout| PayoutCommand::Settle {
        payment_reference: None,
        note: None,
    };
    api::services::payouts::transition(&fx.app, &t, &open[0], settle, now)
        .await
        .unwrap();
    assert_eq!(fx.status_of(Mode::Test, &open[0]).await, "PAID");
    // After the payout was paid, the rest is refunded: all 10.00 clawed back in all.
    let (aff, inv, cnv, code) = &sold[0];
    let r = stripe_on(base, &i, &refund(inv, 12000)).await;
    assert_eq!(r.data()["outcome"], "APPLIED", "{:?}", r.body);
    let c = fx
        .call("GET", &format!("/api/v1/conversions/{cnv}"), None)
        .await;
    assert_eq!(
        (&c.data()["status"], &c.data()["commissionReversed"]),
        (&json!("REVERSED"), &json!(10))
    );
    let ev = stripe_event(
        "invoice.paid",
        invoice(
            &format!("in_{}", ulid::Ulid::new()),
            &format!("cus_{}", ulid::Ulid::new()),
            30000,
            json!({"referral": code}),
        ),
    );
    stripe_on(base, &i, &ev).await;
    fx.run_job().await;
    let next = fx.payouts_of(Mode::Test, aff).await;
    let next = next
        .iter()
        .find(|p| p["status"] == "PENDING")
        .expect("a new payout");
    assert_eq!(
        (&next["amount"], &next["adjustmentTotal"]),
        (&json!(20), &json!(-10)),
        "30.00 earned, 10.00 clawed back: {next:?}"
    );

    // The second payout is cancelled instead: its conversion returns at its
    // net 5.00, and the clawback taken meanwhile is given back.
    let body = json!({"payoutIds": [open[1]], "reason": "refunded"});
    let r = fx
        .call("POST", "/api/v1/payouts/bulk-cancel", Some(body))
        .await;
    assert_eq!(
        r.data()["cancelled"][0]["status"],
        "CANCELLED",
        "{:?}",
        r.body
    );
    fx.run_job().await;
    let again = fx.payouts_of(Mode::Test, &sold[1].0).await;
    let again = again
        .iter()
        .find(|p| p["status"] == "PENDING")
        .expect("a new payout");
    assert_eq!(
        (&again["amount"], &again["adjustmentTotal"]),
        (&json!(5), &json!(0)),
        "{again:?}"
    );
}

/// A merchant with a public recurring campaign, an affiliate of a fresh
/// code starting with `prefix`, and a Stripe integration.
async fn recurring_with_stripe(prefix: &str) -> (Merchant, Value, String, Value, Value) {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"isPublic": true, "commissionRecurring": true})).await;
    let code = format!("{prefix}{}", &ulid::Ulid::new().to_string()[18..]);
    let a = affiliate_with_code(k, id(&c), &code).await;
    let i = integration(&m, "STRIPE", STRIPE_SECRET, json!({})).await;
    (m, c, code, a, i)
}

#[tokio::test]
async fn a_self_referral_through_stripe_is_flagged_and_held() {
    let (m, c, code, a, i) = recurring_with_stripe("SR").await;
    let own_email = a["email"].as_str().unwrap().to_string();
    let mut got = Vec::new();
    for email in [own_email.clone(), format!("other.{own_email}")] {
        let session = session_of_click(&c, &code).await;
        let customer = format!("cus_{}", &ulid::Ulid::new().to_string()[12..]);
        let checkout = subscription_checkout(&session, &customer, Some(&email), None);
        assert_eq!(stripe(id(&i), &checkout).await.data()["outcome"], "APPLIED");
        let mut paid = invoice(
            &format!("in_{}", ulid::Ulid::new()),
            &customer,
            1000,
            json!({}),
        );
        paid["customer_email"] = json!(email);
        let r = stripe(id(&i), &stripe_event("invoice.paid", paid)).await;
        assert_eq!(r.data()["outcome"], "APPLIED", "{:?}", r.body);
        let cnv = conversion(&m, r.data()["conversionId"].as_str().unwrap()).await;
        assert_eq!(cnv["affiliateId"], a["id"]);
        got.push((cnv["status"].clone(), cnv["risk"]["flags"].clone()));
        let flags = cnv["risk"]["flags"].to_string();
        assert!(!flags.contains('@'), "{flags}");
    }
    assert_eq!(got[0].0, "ON_HOLD");
    assert_eq!(got[0].1[0]["code"], "SELF_REFERRAL");
    assert_eq!(got[1], (json!("PENDING"), json!([])), "near miss");
}

/// A fresh customer id and invoice id.
fn fresh_customer() -> (String, String) {
    let u = ulid::Ulid::new().to_string();
    (format!("cus_{u}"), format!("in_{u}"))
}

pub(crate) async fn deliveries(m: &Merchant, integration: &str) -> Vec<Value> {
    deliveries_on(&server().base, m, integration).await
}

/// An integration's delivery log on the server at `base`.
async fn deliveries_on(base: &str, m: &Merchant, integration: &str) -> Vec<Value> {
    let r = crate::support::call_on(
        base,
        "GET",
        &format!("/api/v1/integrations/{integration}/deliveries?limit=100"),
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.data().as_array().unwrap().clone()
}

#[tokio::test]
async fn a_checkout_binds_only_its_own_tenants_clicks_and_never_a_flooded_one() {
    let (m, other) = (merchant().await, merchant().await);
    let k = m.test_key.as_str();
    let c = campaign(
        k,
        json!({"isPublic": true, "commissionRecurring": true, "risk": {"maxClicksPerHour": 1}}),
    )
    .await;
    let code = format!("T{}", &ulid::Ulid::new().to_string()[18..]);
    let a = affiliate_with_code(k, id(&c), &code).await;
    let theirs = campaign(&other.test_key, json!({"isPublic": true})).await;
    let their_code = format!("O{}", &ulid::Ulid::new().to_string()[18..]);
    affiliate_with_code(&other.test_key, id(&theirs), &their_code).await;
    let i = integration(&m, "STRIPE", STRIPE_SECRET, json!({})).await;

    // Another account's session is as if unknown: the customer stays free,
    // and its own affiliate's checkout then takes it.
    let foreign = session_of_click(&theirs, &their_code).await;
    let (cus, inv) = fresh_customer();
    let r = stripe(id(&i), &subscription_checkout(&foreign, &cus, None, None)).await;
    assert_eq!(r.data()["outcome"], "IGNORED", "{:?}", r.body);
    let own = session_of_click(&c, &code).await;
    let r = stripe(id(&i), &subscription_checkout(&own, &cus, None, None)).await;
    assert_eq!(r.data()["outcome"], "APPLIED", "{:?}", r.body);
    let paid = stripe(
        id(&i),
        &stripe_event("invoice.paid", invoice(&inv, &cus, 1000, json!({}))),
    )
    .await;
    let cnv = conversion(&m, paid.data()["conversionId"].as_str().unwrap()).await;
    assert_eq!(
        (&cnv["status"], &cnv["affiliateId"]),
        (&json!("PENDING"), &a["id"]),
        "{cnv:?}"
    );

    // The second click of the hour is flooded: its checkout binds nothing.
    let flooded = session_of_click(&c, &code).await;
    let (cus, inv) = fresh_customer();
    let r = stripe(id(&i), &subscription_checkout(&flooded, &cus, None, None)).await;
    assert_eq!(r.data()["outcome"], "IGNORED", "{:?}", r.body);
    assert!(r.data()["reason"].as_str().unwrap().contains("CLICK_FLOOD"));
    let paid = stripe(
        id(&i),
        &stripe_event("invoice.paid", invoice(&inv, &cus, 1000, json!({}))),
    )
    .await;
    let cnv = conversion(&m, paid.data()["conversionId"].as_str().unwrap()).await;
    assert_eq!(cnv["status"], "UNATTRIBUTED", "{cnv:?}");
}

#[tokio::test]
async fn a_self_referral_through_stripe_is_held_in_either_order() {
    let (m, c, code, a, i) = recurring_with_stripe("S").await;
    let own = a["email"].as_str().unwrap().to_string();
    // (the invoice first, the invoice's e-mail, the checkout's e-mail)
    let cases = [
        (true, Some(own.as_str()), Some(own.as_str())),
        (true, None, Some(own.as_str())),
        (false, None, Some(own.as_str())),
    ];
    for (i_first, invoice_email, checkout_email) in cases {
        let session = session_of_click(&c, &code).await;
        let (cus, inv) = fresh_customer();
        let mut paid = invoice(&inv, &cus, 1000, json!({}));
        paid["customer_email"] = json!(invoice_email);
        let checkout = subscription_checkout(&session, &cus, checkout_email, Some(&inv));
        let paid = stripe_event("invoice.paid", paid);
        let (first, second) = match i_first {
            true => (&paid, &checkout),
            false => (&checkout, &paid),
        };
        stripe(id(&i), first).await;
        stripe(id(&i), second).await;
        let r = stripe(id(&i), &paid).await;
        let cnv = conversion(&m, r.data()["conversionId"].as_str().unwrap()).await;
        let case = (i_first, invoice_email.is_some());
        assert_eq!(cnv["affiliateId"], a["id"], "{case:?}");
        assert_eq!(cnv["status"], "ON_HOLD", "{case:?}: {cnv:?}");
        assert_eq!(cnv["risk"]["flags"][0]["code"], "SELF_REFERRAL", "{case:?}");
    }
}

#[tokio::test]
async fn a_locked_accounts_events_are_refused_until_it_is_unlocked() {
    use api::store::accounts;
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({})).await;
    let code = format!("K{}", &ulid::Ulid::new().to_string()[18..]);
    affiliate_with_code(k, id(&c), &code).await;
    let i = integration(&m, "STRIPE", STRIPE_SECRET, json!({})).await;
    let (cus, inv) = fresh_customer();
    let ev = stripe_event(
        "invoice.paid",
        invoice(&inv, &cus, 1000, json!({"referral": code})),
    );
    let app = crate::support::app_for(server()).await;
    accounts::set_locked(&app.store, &m.account_id, true)
        .await
        .unwrap();
    stripe(id(&i), &ev)
        .await
        .assert_error(403, "PERMISSION_DENIED");
    accounts::set_locked(&app.store, &m.account_id, false)
        .await
        .unwrap();
    let rows = deliveries(&m, id(&i)).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["outcome"], "REJECTED");
    // The provider's retry after the unlock applies it.
    let r = stripe(id(&i), &ev).await;
    assert_eq!(r.data()["outcome"], "APPLIED", "{:?}", r.body);
    let cnv = conversion(&m, r.data()["conversionId"].as_str().unwrap()).await;
    assert_eq!(cnv["status"], "PENDING");
}

#[tokio::test]
async fn signed_bodies_the_postback_would_refuse_are_ignored_never_a_failure() {
    let (m, other) = (merchant().await, merchant().await);
    let k = m.test_key.as_str();
    let c = campaign(k, json!({})).await;
    let code = format!("B{}", &ulid::Ulid::new().to_string()[18..]);
    affiliate_with_code(k, id(&c), &code).await;
    let i = integration(&m, "STRIPE", STRIPE_SECRET, json!({})).await;
    let paid = |inv: &str, fields: Value| {
        let mut o = invoice(inv, "cus_refused", 1000, json!({"referral": code}));
        for (f, v) in fields.as_object().unwrap() {
            o[f] = v.clone();
        }
        stripe_event("invoice.paid", o)
    };
    // A timestamp at the end of the range is stale, in the envelope.
    let body = paid("in_edge", json!({})).to_string();
    let header = ("stripe-signature", format!("t={},v1=00", i64::MIN));
    let r = deliver(id(&i), Some(header), &body).await;
    r.assert_error(400, "INVALID_REQUEST");
    assert!(r.header("x-request-id").is_some());

    let max = i64::MAX;
    let mut no_mode = paid("in_nomode", json!({}));
    no_mode.as_object_mut().unwrap().remove("livemode");
    let mut undated = paid("in_undated", json!({"status_transitions": {}}));
    undated.as_object_mut().unwrap().remove("created");
    let mut long_event = paid("in_longevent", json!({}));
    long_event["id"] = json!(format!("evt_{}", "a".repeat(3000)));
    let cases = [
        (
            paid(
                "in_huge",
                json!({"amount_paid": max, "total": max, "total_excluding_tax": max}),
            ),
            "10^12",
        ),
        (
            paid(
                "in_part",
                json!({"amount_paid": max - 1, "total": max, "total_excluding_tax": max}),
            ),
            "10^12",
        ),
        (
            paid(&format!("in_{}", "x".repeat(300)), json!({})),
            "without id",
        ),
        (no_mode, "livemode"),
        (undated, "time"),
        (long_event, "no event"),
    ];
    for (ev, reason) in cases {
        let r = stripe(id(&i), &ev).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        assert_eq!(r.data()["outcome"], "IGNORED", "{:?}", r.body);
        let said = r.data()["reason"].as_str().unwrap_or_default();
        assert!(said.contains(reason), "{said} should say {reason}");
    }
    let list = call("GET", "/api/v1/conversions", Some(k), None).await;
    assert_eq!(list.data().as_array().unwrap().len(), 0, "nothing recorded");

    // A payment of this account, refunded twice: the repeat reverses nothing.
    let r = stripe(id(&i), &paid("in_refunded", json!({}))).await;
    let cnv = r.data()["conversionId"].as_str().unwrap().to_string();
    let charge = json!({"id": "ch_in_refunded", "object": "charge", "amount": 1200,
        "amount_refunded": 600, "payment_intent": "pi_in_refunded", "currency": "usd"});
    let refund = || stripe_event("charge.refunded", charge.clone());
    assert_eq!(stripe(id(&i), &refund()).await.data()["outcome"], "APPLIED");
    let again = stripe(id(&i), &refund()).await;
    assert_eq!(
        (&again.data()["outcome"], &again.data()["conversionId"]),
        (&json!("IGNORED"), &json!(cnv)),
        "{:?}",
        again.body
    );

    // Another account's integration sent the same payment: not its to
    // retry, and logged.
    let theirs = integration(&other, "STRIPE", STRIPE_SECRET, json!({})).await;
    let r = stripe(id(&theirs), &paid("in_refunded", json!({}))).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["outcome"], "IGNORED");
    let rows = deliveries(&other, id(&theirs)).await;
    assert_eq!(rows[0]["outcome"], "IGNORED", "{rows:?}");
}

#[tokio::test]
async fn unsigned_deliveries_never_take_the_providers_place() {
    use crate::support::{call_on, limited_server, merchant_on};
    // Four calls a minute per scope on this server.
    let base = &limited_server().base;
    let m = merchant_on(limited_server()).await;
    let r = call_on(
        base,
        "POST",
        "/api/v1/integrations",
        Some(&m.test_key),
        Some(json!({"provider": "STRIPE", "signingSecret": STRIPE_SECRET})),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let i = r.data()["id"].as_str().unwrap().to_string();
    let ev = stripe_event(
        "invoice.paid",
        invoice("in_unsigned", "cus_unsigned", 1000, json!({})),
    );
    // Nine within one clock minute, or two: at most eight logged either way.
    for _ in 0..9 {
        let junk = Some(("stripe-signature", "t=1,v1=00".to_string()));
        deliver_on(base, &i, junk, &ev.to_string())
            .await
            .assert_error(400, "INVALID_REQUEST");
    }
    let r = stripe_on(base, &i, &ev).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let rows = deliveries_on(base, &m, &i).await;
    let rejected = rows.iter().filter(|r| r["outcome"] == "REJECTED").count();
    assert!((4..=8).contains(&rejected), "{rows:?}");
    assert_eq!(rows.len(), rejected + 1);
}

#[tokio::test]
async fn a_refund_before_its_payment_applies_when_the_payment_arrives() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"isPublic": true})).await;
    let code = format!("O{}", &ulid::Ulid::new().to_string()[18..]);
    affiliate_with_code(k, id(&c), &code).await;
    let i = integration(&m, "STRIPE", STRIPE_SECRET, json!({})).await;
    // Half of the charge (12000 with tax) refunded; the refund names the
    // payment intent and the charge only, as later API versions send it.
    let refund = |inv: &str| {
        stripe_event(
            "charge.refunded",
            json!({
                "id": format!("ch_{inv}"), "object": "charge", "amount": 12000, "amount_refunded": 6000,
                "currency": "usd", "payment_intent": format!("pi_{inv}"), "refunded": false,
            }),
        )
    };
    let paid = |inv: &str| {
        stripe_event(
            "invoice.paid",
            invoice(inv, &format!("cus_{inv}"), 10000, json!({"referral": code})),
        )
    };
    // (refund first?) -> the conversion's figures.
    let mut figures = Vec::new();
    for refund_first in [true, false] {
        let inv = format!("in_{}", ulid::Ulid::new());
        let (first, second) = match refund_first {
            true => (refund(&inv), paid(&inv)),
            false => (paid(&inv), refund(&inv)),
        };
        let r = stripe(id(&i), &first).await;
        if refund_first {
            assert_eq!(
                (&r.data()["outcome"], &r.data()["reason"]),
                (&json!("IGNORED"), &json!("unknown payment")),
                "{:?}",
                r.body
            );
        }
        let r = stripe(id(&i), &second).await;
        assert_eq!(r.data()["outcome"], "APPLIED", "{:?}", r.body);
        // Applied, the kept refund is gone under every id it was kept for.
        let tenant =
            api::domain::tenant::Tenant::new(m.account_id.clone(), api::domain::tenant::Mode::Test);
        let ids = [format!("pi_{inv}"), format!("ch_{inv}")];
        let store = &crate::support::app_for(server()).await.store;
        let kept = api::store::parked_refunds::of_payment(store, &tenant, &ids)
            .await
            .unwrap();
        assert!(kept.is_empty(), "{kept:?}");
        let cnv = api::domain::postback::conversion_id_of(&inv);
        let now = conversion(&m, &cnv).await;
        figures.push((
            now["amount"].clone(),
            now["reversedAmount"].clone(),
            now["commissionReversed"].clone(),
            now["status"].clone(),
        ));
        // The refund delivered again changes nothing.
        stripe(id(&i), &refund(&inv)).await;
        let again = conversion(&m, &cnv).await;
        assert_eq!(again["reversedAmount"], now["reversedAmount"]);
    }
    assert_eq!(figures[0], figures[1], "the same whatever the order");
    assert_eq!(
        figures[0],
        (json!(100), json!(50), json!(5), json!("PENDING"))
    );
}
