//! A provider's reversal given back (contract section 16): a Stripe refund
//! that failed and a Paddle chargeback reversed by a won dispute restore
//! the commission their reversal took, once however often they arrive.

use rust_decimal::Decimal;
use serde_json::{json, Value};

use crate::connector_shapes::{
    current_invoice, event, fixture, fresh, invoice_payment, outcome_of, paddle_completed,
    paddle_event, paddle_txn, programme, refunded_charge,
};
use crate::integrations::{conversion, id, integration, paddle, PADDLE_SECRET};
use crate::support::{affiliate_with_code, call, campaign, merchant, Merchant};

/// The affiliate's `earned` total in `currency`, 0 when none.
async fn earned(m: &Merchant, affiliate: &str, currency: &str) -> Decimal {
    let path = format!("/api/v1/affiliates/{affiliate}");
    let r = call("GET", &path, Some(&m.test_key), None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    match &r.data()["earned"][currency] {
        Value::Null => Decimal::ZERO,
        v => v.to_string().trim_matches('"').parse().unwrap(),
    }
}

/// Stripe's `refund.failed` of refund `re` of charge `ch`.
fn failed_refund(re: &str, ch: &str, pi: &str, amount: i64) -> Value {
    event(
        "refund.failed",
        fixture(
            "refund",
            json!({"id": re, "charge": ch, "payment_intent": pi, "amount": amount,
                   "currency": "usd", "status": "failed", "failure_reason": "expired_or_canceled_card"}),
        ),
    )
}

#[tokio::test]
async fn a_failed_stripe_refund_gives_the_commission_back_once() {
    let (m, _, code, a, i) = programme().await;
    let aff = id(&a);
    let (inv, pi, ch) = (fresh("in_"), fresh("pi_"), fresh("ch_"));
    let invoice = current_invoice(&inv, &fresh("cus_"), Some(&code));
    outcome_of(&i, &event("invoice.paid", invoice)).await;
    outcome_of(&i, &invoice_payment(&inv, &pi)).await;
    let cnv_id = api::domain::postback::conversion_id_of(&inv);
    assert_eq!(earned(&m, aff, "USD").await, Decimal::from(10));
    let refunded = outcome_of(&i, &refunded_charge(&ch, &pi, 12000)).await;
    assert_eq!(refunded.0, "APPLIED");
    assert_eq!(conversion(&m, &cnv_id).await["status"], "REVERSED");
    assert_eq!(earned(&m, aff, "USD").await, Decimal::ZERO);

    let re = fresh("re_");
    let (outcome, reason) = outcome_of(&i, &failed_refund(&re, &ch, &pi, 12000)).await;
    assert_eq!((&outcome, &reason), (&json!("APPLIED"), &Value::Null));
    let cnv = conversion(&m, &cnv_id).await;
    assert_eq!(
        (
            &cnv["status"],
            &cnv["reversedAmount"],
            &cnv["commissionReversed"]
        ),
        (&json!("PENDING"), &json!(0), &json!(0)),
        "{cnv}"
    );
    assert_eq!(earned(&m, aff, "USD").await, Decimal::from(10));
    let events = call(
        "GET",
        "/api/v1/events?type=conversion.restored&limit=100",
        Some(&m.test_key),
        None,
    )
    .await;
    let restored: Vec<&Value> = events
        .data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["data"]["id"] == cnv_id.as_str())
        .collect();
    assert_eq!(restored.len(), 1, "{:?}", events.body);
    assert_eq!(restored[0]["data"]["status"], "PENDING");

    // The same failure under another event id gives nothing more back.
    let (outcome, reason) = outcome_of(&i, &failed_refund(&re, &ch, &pi, 12000)).await;
    assert_eq!(outcome, "IGNORED");
    assert_eq!(reason, "restoral applied before");
    assert_eq!(earned(&m, aff, "USD").await, Decimal::from(10));
    // A failure of a payment never recorded changes nothing.
    let unknown = failed_refund(&fresh("re_"), &fresh("ch_"), &fresh("pi_"), 500);
    assert_eq!(outcome_of(&i, &unknown).await.1, "unknown payment");
}

#[tokio::test]
async fn a_failed_partial_refund_restores_what_it_reversed_and_no_more() {
    let (m, _, code, a, i) = programme().await;
    let (inv, pi, ch) = (fresh("in_"), fresh("pi_"), fresh("ch_"));
    let invoice = current_invoice(&inv, &fresh("cus_"), Some(&code));
    outcome_of(&i, &event("invoice.paid", invoice)).await;
    outcome_of(&i, &invoice_payment(&inv, &pi)).await;
    // Two refunds of 30.00 each, the charge's running total 60.00 of 120.00.
    outcome_of(&i, &refunded_charge(&ch, &pi, 3000)).await;
    outcome_of(&i, &refunded_charge(&ch, &pi, 6000)).await;
    let cnv_id = api::domain::postback::conversion_id_of(&inv);
    assert_eq!(conversion(&m, &cnv_id).await["reversedAmount"], json!(50));
    // One of them fails: 30.00 comes back, tax included in Stripe's amount.
    outcome_of(&i, &failed_refund(&fresh("re_"), &ch, &pi, 3000)).await;
    let cnv = conversion(&m, &cnv_id).await;
    assert_eq!(
        (
            &cnv["status"],
            &cnv["reversedAmount"],
            &cnv["commissionReversed"]
        ),
        (&json!("PENDING"), &json!(20), &json!(2)),
        "{cnv}"
    );
    assert_eq!(earned(&m, id(&a), "USD").await, Decimal::from(8));
    // A failure larger than what is left reversed restores only that.
    outcome_of(&i, &failed_refund(&fresh("re_"), &ch, &pi, 9000)).await;
    let cnv = conversion(&m, &cnv_id).await;
    assert_eq!(cnv["reversedAmount"], json!(0), "{cnv}");
    assert_eq!(earned(&m, id(&a), "USD").await, Decimal::from(10));
    let (outcome, reason) = outcome_of(&i, &failed_refund(&fresh("re_"), &ch, &pi, 100)).await;
    assert_eq!(
        (outcome, reason),
        (json!("IGNORED"), json!("nothing reversed to give back"))
    );
}

#[tokio::test]
async fn a_paddle_chargeback_reversed_restores_the_commission() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"isPublic": true})).await;
    let code = format!("W{}", &ulid::Ulid::new().to_string()[18..]);
    let a = affiliate_with_code(k, id(&c), &code).await;
    let i = integration(&m, "PADDLE", PADDLE_SECRET, json!({})).await;
    let txn = paddle_txn();
    let completed = paddle_completed(&txn, &code);
    let r = paddle(id(&i), &completed).await;
    let cnv = r.data()["conversionId"].as_str().unwrap().to_string();
    let adjustment = |action: &str, status: &str| {
        let adj = format!("adj_{}", ulid::Ulid::new().to_string().to_lowercase());
        json!({"id": adj, "action": action, "status": status, "transaction_id": txn,
               "currency_code": "EUR", "totals": {"subtotal": "5000", "tax": "0", "total": "5000"}})
    };
    let chargeback = paddle_event("adjustment.created", adjustment("chargeback", "approved"));
    assert_eq!(paddle(id(&i), &chargeback).await.status, 200);
    assert_eq!(conversion(&m, &cnv).await["status"], "REVERSED");
    assert_eq!(earned(&m, id(&a), "EUR").await, Decimal::ZERO);
    // Still pending review: nothing comes back yet.
    let reverse = adjustment("chargeback_reverse", "pending_approval");
    let r = paddle(id(&i), &paddle_event("adjustment.created", reverse.clone())).await;
    assert_eq!(
        r.data()["reason"],
        "adjustment not approved",
        "{:?}",
        r.body
    );
    let mut approved = reverse;
    approved["status"] = json!("approved");
    for _ in 0..2 {
        let r = paddle(
            id(&i),
            &paddle_event("adjustment.updated", approved.clone()),
        )
        .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    let after = conversion(&m, &cnv).await;
    assert_eq!(
        (&after["status"], &after["reversedAmount"]),
        (&json!("PENDING"), &json!(0)),
        "{after}"
    );
    assert_eq!(earned(&m, id(&a), "EUR").await, Decimal::from(5));
}
