//! Paddle Billing events into the product's commands. Only the fields the
//! mapping needs are read (no SDK). Amounts are strings of minor units.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{
    currency_at, id_at, ignored, minor_at, text_at, Binding, Command, Mapped, Outcome, Payment,
    ProductAndPlan, Refund, RefundPart, Restore,
};
use crate::timestamp;

/// The `custom_data` key that carries the referral.
pub const REFERRAL_KEY: &str = "referral";

/// Maps a verified Paddle event body; `None` when it is no Paddle event.
pub fn map(body: &[u8]) -> Option<Mapped> {
    let event: Value = serde_json::from_slice(body).ok()?;
    let event_id = text_at(&event, "event_id")?;
    let event_type = text_at(&event, "event_type")?;
    let data = event.get("data")?;
    let occurred = text_at(&event, "occurred_at").and_then(|t| timestamp::parse_datetime(&t));
    let outcome = match event_type.as_str() {
        "transaction.completed" => transaction_completed(data, occurred),
        "adjustment.created" | "adjustment.updated" => adjustment(data),
        other => ignored(format!("event type {other} is not mapped")),
    };
    Some(Mapped {
        event_id,
        event_type,
        livemode: None,
        outcome,
    })
}

/// `transaction.completed`: subtotal minus discount (tax excluded). A
/// transaction of nothing (a trial's) records nothing but binds its
/// customer to the referral it carries.
fn transaction_completed(txn: &Value, occurred: Option<DateTime<Utc>>) -> Outcome {
    let (Some(id), Some(currency)) = (id_at(txn, "id"), currency_at(txn, "currency_code")) else {
        return ignored("transaction without id or currency");
    };
    let Some(totals) = txn.get("details").and_then(|d| d.get("totals")) else {
        return ignored("transaction without totals");
    };
    let subtotal = minor_at(totals, "subtotal").unwrap_or(0);
    let discount = minor_at(totals, "discount").unwrap_or(0);
    // Never more than was paid, never negative: a negative part or a net
    // above the total is no transaction Paddle bills.
    if subtotal < 0 || discount < 0 {
        return ignored("a negative subtotal or discount");
    }
    let net = subtotal.saturating_sub(discount);
    if minor_at(totals, "total").is_some_and(|total| net > total) {
        return ignored("the subtotal less discount is above the total");
    }
    let referral = txn
        .get("custom_data")
        .and_then(|c| text_at(c, REFERRAL_KEY));
    if net <= 0 {
        let trial = referral.filter(|_| subtotal == 0);
        return match trial.and_then(|r| Binding::customer(r, id_at(txn, "customer_id"), None)) {
            Some(bind) => Outcome::Apply(vec![bind]),
            None => ignored("zero amount"),
        };
    }
    let billed = text_at(txn, "billed_at").and_then(|t| timestamp::parse_datetime(&t));
    let Some(occurred_at) = billed.or(occurred) else {
        return ignored("transaction without a time billed");
    };
    Outcome::Apply(vec![Command::Record(Payment {
        external_id: id.clone(),
        amount: currency.from_minor(net),
        currency,
        customer_id: id_at(txn, "customer_id"),
        customer_email: None,
        referral,
        occurred_at,
        aliases: vec![id],
        linked_later: false,
        promotion_code: id_at(txn, "discount_id"),
        product: first_item(txn),
    })])
}

/// The product and price of a transaction's first item.
fn first_item(txn: &Value) -> ProductAndPlan {
    let price = txn
        .get("items")
        .and_then(Value::as_array)
        .and_then(|items| items.first())
        .and_then(|item| item.get("price"));
    ProductAndPlan {
        product_id: price.and_then(|p| id_at(p, "product_id")),
        plan_id: price.and_then(|p| id_at(p, "id")),
    }
}

/// An approved refund or chargeback: its subtotal (tax excluded) is reversed
/// from the transaction's conversion, once per adjustment id; an approved
/// `chargeback_reverse` (a dispute won) restores its subtotal.
fn adjustment(adj: &Value) -> Outcome {
    let action = text_at(adj, "action").unwrap_or_default();
    if !matches!(
        action.as_str(),
        "refund" | "chargeback" | "chargeback_reverse"
    ) {
        return ignored(format!("adjustment action {action} is not mapped"));
    }
    if text_at(adj, "status").as_deref() != Some("approved") {
        return ignored("adjustment not approved");
    }
    let (Some(id), Some(txn)) = (id_at(adj, "id"), id_at(adj, "transaction_id")) else {
        return ignored("adjustment without id or transaction");
    };
    let subtotal = adj
        .get("totals")
        .and_then(|t| minor_at(t, "subtotal"))
        .unwrap_or(0);
    if subtotal <= 0 {
        return ignored("zero amount");
    }
    let currency = currency_at(adj, "currency_code");
    if action == "chargeback_reverse" {
        // A dispute won: what its chargeback reversed comes back.
        return Outcome::Apply(vec![Command::Restore(Restore {
            payment_ids: vec![txn],
            amount: currency.map(|c| c.from_minor(subtotal)),
            currency,
            once_key: id,
        })]);
    }
    Outcome::Apply(vec![Command::Reverse(Refund {
        payment_ids: vec![txn],
        part: RefundPart::Minor(subtotal),
        once_key: Some(id),
        currency,
    })])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(kind: &str, data: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "event_id": "evt_01hv8x2acma6jbbk6bz8x9wwh0",
            "event_type": kind,
            "occurred_at": "2026-11-20T10:00:00.123456Z",
            "notification_id": "ntf_01hv8x2af1gbg4x1r0e9d8m5rj",
            "data": data,
        }))
        .unwrap()
    }

    fn transaction(subtotal: &str, discount: &str, currency: &str) -> Value {
        json!({
            "id": "txn_01hv8wptq8987qeep44cyrewp9",
            "status": "completed",
            "customer_id": "ctm_01hv6y1jedq4p1n0yqn5ba3ky4",
            "currency_code": currency,
            "origin": "web",
            "custom_data": {"referral": "ses_01JD3Q5W6X7Y8Z9A0B1C2D3E4F"},
            "billed_at": "2026-11-20T09:59:58.021Z",
            "details": {"totals": {
                "subtotal": subtotal, "discount": discount, "tax": "1000",
                "total": "6000", "grand_total": "6000", "currency_code": currency
            }}
        })
    }

    #[test]
    fn completed_transactions_record_subtotal_minus_discount() {
        let m = map(&event(
            "transaction.completed",
            transaction("5500", "500", "USD"),
        ))
        .unwrap();
        assert_eq!(m.event_id, "evt_01hv8x2acma6jbbk6bz8x9wwh0");
        let Outcome::Apply(cmds) = m.outcome else {
            panic!("{m:?}")
        };
        let [Command::Record(p)] = cmds.as_slice() else {
            panic!("{cmds:?}")
        };
        assert_eq!(p.external_id, "txn_01hv8wptq8987qeep44cyrewp9");
        assert_eq!(p.amount.to_string(), "50.00");
        assert_eq!(p.currency.code(), "USD");
        assert_eq!(
            p.customer_id.as_deref(),
            Some("ctm_01hv6y1jedq4p1n0yqn5ba3ky4")
        );
        assert_eq!(
            p.referral.as_deref(),
            Some("ses_01JD3Q5W6X7Y8Z9A0B1C2D3E4F")
        );
        assert_eq!(
            timestamp::format(&p.occurred_at),
            "2026-11-20T09:59:58.021Z"
        );
        // JPY has no minor unit; a free transaction is ignored.
        let m = map(&event(
            "transaction.completed",
            transaction("1200", "0", "JPY"),
        ))
        .unwrap();
        let Outcome::Apply(cmds) = m.outcome else {
            panic!()
        };
        let [Command::Record(p)] = cmds.as_slice() else {
            panic!()
        };
        assert_eq!(p.amount.to_string(), "1200");
        let m = map(&event(
            "transaction.completed",
            transaction("500", "500", "EUR"),
        ))
        .unwrap();
        assert_eq!(m.outcome, Outcome::Ignored("zero amount".into()));
    }

    #[test]
    fn approved_refunds_and_chargebacks_reverse_their_subtotal_once() {
        let adj = |action: &str, status: &str| {
            json!({
                "id": "adj_01hvgf2s84dr6reszzg29zbvcm",
                "action": action,
                "status": status,
                "transaction_id": "txn_01hv8wptq8987qeep44cyrewp9",
                "currency_code": "USD",
                "totals": {"subtotal": "1999", "tax": "200", "total": "2199", "fee": "0", "earnings": "0", "currency_code": "USD"}
            })
        };
        for (kind, action, status, want) in [
            ("adjustment.created", "refund", "approved", true),
            ("adjustment.updated", "chargeback", "approved", true),
            ("adjustment.created", "refund", "pending_approval", false),
            ("adjustment.created", "credit", "approved", false),
        ] {
            let m = map(&event(kind, adj(action, status))).unwrap();
            match m.outcome {
                Outcome::Apply(cmds) => {
                    assert!(want, "{kind} {action} {status}");
                    assert_eq!(
                        cmds,
                        vec![Command::Reverse(Refund {
                            payment_ids: vec!["txn_01hv8wptq8987qeep44cyrewp9".into()],
                            part: RefundPart::Minor(1999),
                            once_key: Some("adj_01hvgf2s84dr6reszzg29zbvcm".into()),
                            currency: crate::money::Currency::parse("c", "USD").ok(),
                        })]
                    );
                }
                Outcome::Ignored(_) => assert!(!want, "{kind} {action} {status}"),
            }
        }
        let m = map(&event("subscription.created", json!({"id": "sub_1"}))).unwrap();
        assert!(matches!(m.outcome, Outcome::Ignored(_)));
        assert!(map(b"not json").is_none());
    }
}
