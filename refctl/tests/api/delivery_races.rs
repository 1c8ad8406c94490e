//! The delivery log under races: twenty copies of one refund event at once
//! reverse once, and the event's row is the outcome of the copy that
//! applied it (APPLIED); every other copy's row is DUPLICATE.

use serde_json::json;

use crate::connector_shapes::{
    current_invoice, event, fresh, invoice_payment, outcome_of, paddle_completed, paddle_event,
    paddle_txn, programme, refunded_charge,
};
use crate::integrations::{conversion, deliveries, id, integration, paddle, stripe, PADDLE_SECRET};
use crate::support::{affiliate_with_code, campaign, merchant, Merchant, Resp};

/// Sends `body` `n` times at once through `send`; the answers.
async fn at_once<F, Fut>(n: usize, send: F) -> Vec<Resp>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Resp> + Send + 'static,
{
    let tasks: Vec<_> = (0..n).map(|_| tokio::spawn(send())).collect();
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    answers
}

/// The log rows of provider event `event_id`, and how many copies were
/// answered 200 (a 503 under load logs nothing; the provider retries it).
async fn rows_of(m: &Merchant, integration: &str, event_id: &str) -> Vec<String> {
    deliveries(m, integration)
        .await
        .iter()
        .filter(|r| r["providerEventId"] == event_id)
        .map(|r| r["outcome"].as_str().unwrap().to_string())
        .collect()
}

/// One row APPLIED, every other DUPLICATE, one per answered copy.
fn assert_one_applied(rows: &[String], answers: &[Resp]) {
    let answered = answers.iter().filter(|r| r.status == 200).count();
    for r in answers {
        assert!(matches!(r.status, 200 | 503), "{:?}", r.body);
    }
    assert!(answered >= 1, "no copy answered");
    assert_eq!(rows.len(), answered, "{rows:?}");
    let applied = rows.iter().filter(|o| *o == "APPLIED").count();
    let duplicate = rows.iter().filter(|o| *o == "DUPLICATE").count();
    assert_eq!((applied, duplicate), (1, answered - 1), "{rows:?}");
}

#[tokio::test]
async fn twenty_copies_of_a_stripe_refund_log_the_one_that_applied_it() {
    let (m, _, code, _, i) = programme().await;
    let (inv, pi, ch) = (fresh("in_"), fresh("pi_"), fresh("ch_"));
    let invoice = current_invoice(&inv, &fresh("cus_"), Some(&code));
    outcome_of(&i, &event("invoice.paid", invoice)).await;
    outcome_of(&i, &invoice_payment(&inv, &pi)).await;
    let refund = refunded_charge(&ch, &pi, 12000);
    let iid = id(&i).to_string();
    let answers = at_once(20, || {
        let (iid, refund) = (iid.clone(), refund.clone());
        async move { stripe(&iid, &refund).await }
    })
    .await;
    let cnv = conversion(&m, &api::domain::postback::conversion_id_of(&inv)).await;
    assert_eq!(
        (&cnv["status"], &cnv["reversedAmount"]),
        (&json!("REVERSED"), &json!(100))
    );
    let rows = rows_of(&m, &iid, refund["id"].as_str().unwrap()).await;
    assert_one_applied(&rows, &answers);
}

#[tokio::test]
async fn twenty_copies_of_a_paddle_refund_log_the_one_that_applied_it() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"isPublic": true})).await;
    let code = format!("R{}", &ulid::Ulid::new().to_string()[18..]);
    affiliate_with_code(k, id(&c), &code).await;
    let i = integration(&m, "PADDLE", PADDLE_SECRET, json!({})).await;
    let txn = paddle_txn();
    let completed = paddle_completed(&txn, &code);
    let cnv = paddle(id(&i), &completed).await.data()["conversionId"].clone();
    let adj = format!("adj_{}", ulid::Ulid::new().to_string().to_lowercase());
    let refund = paddle_event(
        "adjustment.created",
        json!({"id": adj, "action": "refund", "status": "approved", "transaction_id": txn,
               "currency_code": "EUR", "totals": {"subtotal": "2000", "tax": "0", "total": "2000"}}),
    );
    let iid = id(&i).to_string();
    let answers = at_once(20, || {
        let (iid, refund) = (iid.clone(), refund.clone());
        async move { paddle(&iid, &refund).await }
    })
    .await;
    let cnv = conversion(&m, cnv.as_str().unwrap()).await;
    assert_eq!(cnv["reversedAmount"], json!(20), "{cnv}");
    let rows = rows_of(&m, &iid, refund["event_id"].as_str().unwrap()).await;
    assert_one_applied(&rows, &answers);
}
