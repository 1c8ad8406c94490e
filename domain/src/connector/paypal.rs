//! PayPal's payout item events (contract section 14), once PayPal's API has
//! verified them: `PAYMENT.PAYOUTS-ITEM.SUCCEEDED` pays the payout the
//! item's `sender_item_id` names; FAILED, RETURNED, BLOCKED, DENIED and
//! CANCELED refuse it (back to APPROVED); UNCLAIMED is noted. Other types
//! are ignored. Pure: no I/O.

use serde_json::Value;

use super::{ignored, text_at, Command, Mapped, Outcome};
use crate::payout_rail::{PayoutOutcome, PayoutResult};

/// Maps a verified PayPal event body; `None` when it is no PayPal event.
pub fn map(body: &[u8]) -> Option<Mapped> {
    let event: Value = serde_json::from_slice(body).ok()?;
    let event_id = text_at(&event, "id")?;
    let event_type = text_at(&event, "event_type")?;
    let resource = event.get("resource").unwrap_or(&Value::Null);
    let outcome = match event_type.strip_prefix("PAYMENT.PAYOUTS-ITEM.") {
        Some(kind) => item(kind, resource),
        None => ignored(format!("event type {event_type} is not mapped")),
    };
    Some(Mapped {
        event_id,
        event_type,
        livemode: None,
        outcome,
    })
}

/// A payout item event of `kind` (the part after `PAYMENT.PAYOUTS-ITEM.`).
fn item(kind: &str, resource: &Value) -> Outcome {
    let Some(payout_id) = resource
        .get("payout_item")
        .and_then(|i| text_at(i, "sender_item_id"))
    else {
        return ignored("the item names no sender_item_id");
    };
    let status = text_at(resource, "transaction_status").unwrap_or_else(|| kind.to_string());
    let errors = resource.get("errors");
    let code = errors
        .and_then(|e| text_at(e, "name"))
        .unwrap_or_else(|| status.clone());
    let message = errors
        .and_then(|e| text_at(e, "message"))
        .unwrap_or_else(|| format!("PayPal reports the item {status}"));
    let outcome = match kind {
        "SUCCEEDED" => match text_at(resource, "payout_item_id") {
            Some(reference) => PayoutOutcome::Paid { reference },
            None => return ignored("the item has no payout_item_id"),
        },
        "FAILED" | "RETURNED" | "BLOCKED" | "DENIED" | "CANCELED" => {
            PayoutOutcome::Failed { code, message }
        }
        "UNCLAIMED" => PayoutOutcome::Unclaimed { code, message },
        other => return ignored(format!("payout item {other} is not mapped")),
    };
    Outcome::Apply(vec![Command::PayoutResult(PayoutResult {
        payout_id,
        batch_id: text_at(resource, "payout_batch_id"),
        attempt_key: text_at(resource, "sender_batch_id"),
        outcome,
    })])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(kind: &str, errors: Value) -> Vec<u8> {
        json!({"id": "WH-1", "event_version": "1.0", "resource_type": "payouts_item",
            "event_type": format!("PAYMENT.PAYOUTS-ITEM.{kind}"),
            "resource": {"payout_item_id": "8AELMXH8UB2P8", "payout_batch_id": "5UXD2E8A7EBQJ",
                "sender_batch_id": "po_1-1",
                "transaction_status": kind, "errors": errors,
                "payout_item": {"sender_item_id": "po_1", "receiver": "a@example.com"}}})
        .to_string()
        .into_bytes()
    }

    fn result(body: &[u8]) -> Option<PayoutResult> {
        match map(body)?.outcome {
            Outcome::Apply(mut c) => match c.pop()? {
                Command::PayoutResult(r) => Some(r),
                _ => None,
            },
            Outcome::Ignored(_) => None,
        }
    }

    #[test]
    fn each_item_event_says_what_became_of_the_payout() {
        let paid = result(&event("SUCCEEDED", Value::Null)).unwrap();
        assert_eq!(
            (
                paid.payout_id.as_str(),
                paid.batch_id.as_deref(),
                paid.attempt_key.as_deref()
            ),
            ("po_1", Some("5UXD2E8A7EBQJ"), Some("po_1-1"))
        );
        assert_eq!(
            paid.outcome,
            PayoutOutcome::Paid {
                reference: "8AELMXH8UB2P8".into()
            }
        );
        let why = json!({"name": "RECEIVER_UNREGISTERED", "message": "Receiver is unregistered"});
        for kind in ["FAILED", "RETURNED", "BLOCKED", "DENIED", "CANCELED"] {
            let r = result(&event(kind, why.clone())).unwrap();
            assert!(
                matches!(&r.outcome, PayoutOutcome::Failed { code, .. } if code == "RECEIVER_UNREGISTERED"),
                "{kind}"
            );
        }
        let r = result(&event("DENIED", Value::Null)).unwrap();
        assert!(matches!(&r.outcome, PayoutOutcome::Failed { code, .. } if code == "DENIED"));
        let r = result(&event("UNCLAIMED", why)).unwrap();
        assert!(matches!(r.outcome, PayoutOutcome::Unclaimed { .. }));
        for kind in ["HELD", "REFUNDED"] {
            assert_eq!(result(&event(kind, Value::Null)), None, "{kind}");
        }
        assert!(map(b"not json").is_none());
    }
}
