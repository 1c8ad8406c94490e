//! Signed but impossible amounts (issue: trust at the edges): a connector
//! never records more than was paid, nor a negative part; such a payload is
//! IGNORED with the reason and nothing is recorded.

use serde_json::{json, Value};

use crate::connector_shapes::{current_invoice, event, fixture, fresh, outcome_of, programme};
use crate::integrations::{id, integration, paddle, PADDLE_SECRET};
use crate::support::{call, Merchant};

/// How many conversions of the tenant have `external_id`.
async fn recorded(m: &Merchant, external_id: &str) -> usize {
    let r = call(
        "GET",
        "/api/v1/conversions?limit=100",
        Some(&m.test_key),
        None,
    )
    .await;
    let all = r.data().as_array().unwrap().clone();
    all.iter()
        .filter(|c| c["externalId"] == external_id)
        .count()
}

#[tokio::test]
async fn a_stripe_invoice_or_checkout_claiming_more_than_was_paid_is_ignored() {
    let (m, _, code, _, i) = programme().await;
    // 120.00 paid, but 150.00 "before tax".
    let inv = fresh("in_");
    let mut invoice = current_invoice(&inv, &fresh("cus_"), Some(&code));
    invoice["total_excluding_tax"] = json!(15000);
    let (outcome, reason) = outcome_of(&i, &event("invoice.paid", invoice)).await;
    assert_eq!(outcome, "IGNORED");
    assert_eq!(reason, "total_excluding_tax is above what was paid");
    assert_eq!(recorded(&m, &inv).await, 0);
    // A negative tax would lift 50.00 to 70.00.
    let pi = fresh("pi_");
    let session = fixture(
        "checkout.session",
        json!({"id": fresh("cs_test_"), "mode": "payment", "payment_status": "paid",
               "status": "complete", "client_reference_id": code, "customer": fresh("cus_"),
               "customer_details": {"email": null}, "currency": "usd", "amount_total": 5000,
               "payment_intent": pi, "invoice": null, "metadata": {},
               "total_details": {"amount_discount": 0, "amount_shipping": 0, "amount_tax": -2000}}),
    );
    let (outcome, reason) = outcome_of(&i, &event("checkout.session.completed", session)).await;
    assert_eq!(
        (outcome, reason),
        (
            json!("IGNORED"),
            json!("a negative total, tax or shipping amount")
        )
    );
    assert_eq!(recorded(&m, &pi).await, 0);
    // The same invoice with honest figures records the 100.00 before tax.
    let inv = fresh("in_");
    let invoice = current_invoice(&inv, &fresh("cus_"), Some(&code));
    assert_eq!(
        outcome_of(&i, &event("invoice.paid", invoice)).await.0,
        "APPLIED"
    );
    assert_eq!(recorded(&m, &inv).await, 1);
}

#[tokio::test]
async fn a_paddle_transaction_with_a_negative_discount_is_ignored() {
    let (m, _, code, _, _) = programme().await;
    let i = integration(&m, "PADDLE", PADDLE_SECRET, json!({})).await;
    let transaction = |totals: Value| {
        let txn = format!("txn_{}", ulid::Ulid::new().to_string().to_lowercase());
        let body = json!({"event_id": fresh("evt_"), "event_type": "transaction.completed",
               "occurred_at": "2026-11-20T10:00:00.000Z", "notification_id": "ntf_1",
               "data": {"id": txn, "status": "completed", "customer_id": "ctm_1", "currency_code": "EUR",
                        "custom_data": {"referral": code}, "billed_at": "2026-11-20T09:59:00.000Z",
                        "details": {"totals": totals}}});
        (txn, body)
    };
    let cases = [
        (
            json!({"subtotal": "5000", "discount": "-3000", "tax": "0", "total": "8000"}),
            "a negative subtotal or discount",
        ),
        (
            json!({"subtotal": "5000", "discount": "0", "tax": "-1000", "total": "4000"}),
            "the subtotal less discount is above the total",
        ),
    ];
    for (totals, why) in cases {
        let (txn, body) = transaction(totals);
        let r = paddle(id(&i), &body).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        assert_eq!(
            (&r.data()["outcome"], &r.data()["reason"]),
            (&json!("IGNORED"), &json!(why))
        );
        assert_eq!(recorded(&m, &txn).await, 0);
    }
    let (txn, body) =
        transaction(json!({"subtotal": "5000", "discount": "1000", "tax": "0", "total": "4000"}));
    assert_eq!(paddle(id(&i), &body).await.data()["outcome"], "APPLIED");
    assert_eq!(recorded(&m, &txn).await, 1);
}
