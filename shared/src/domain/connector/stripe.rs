//! Stripe events into the product's commands. Only the fields the mapping
//! needs are read (no SDK). Written against API version
//! [`API_VERSION`]; the fields that moved in later versions are read in both
//! places: an invoice's subscription metadata (`subscription_details` or
//! `parent.subscription_details`), its payment ids (`payment_intent` and
//! `charge`, or `payments.data[].payment`), and a charge's `invoice` (gone
//! in later versions: its `payment_intent` finds the payment then).

use crate::domain::payout_rail::AccountUpdate;
use chrono::{DateTime, TimeZone, Utc};
use rust_decimal::Decimal;
use serde_json::Value;

use super::{
    currency_at, id_at, ignored, minor_at, share, text_at, Binding, Command, Mapped, Outcome,
    Payment, Refund, RefundPart,
};

/// The Stripe API version the event shapes are taken from.
pub const API_VERSION: &str = "2024-06-20";

/// The metadata key (and `client_reference_id`) that carries the referral.
pub const REFERRAL_KEY: &str = "referral";

/// Maps a verified Stripe event body; `None` when it is no Stripe event.
pub fn map(body: &[u8]) -> Option<Mapped> {
    let event: Value = serde_json::from_slice(body).ok()?;
    let event_id = text_at(&event, "id")?;
    let event_type = text_at(&event, "type")?;
    let object = event.get("data")?.get("object")?;
    let created = event.get("created").and_then(Value::as_i64);
    let livemode = event.get("livemode").and_then(Value::as_bool);
    let outcome = match event_type.as_str() {
        // Every Stripe event says its mode: without it, test money could
        // become live commission.
        _ if livemode.is_none() => ignored("the event has no livemode"),
        "invoice.paid" => invoice_paid(object, created),
        "checkout.session.completed" => checkout_completed(object, created),
        "charge.refunded" => charge_refunded(object),
        "charge.dispute.closed" => dispute_closed(object),
        "account.updated" => account_updated(&event, object),
        other => ignored(format!("event type {other} is not mapped")),
    };
    Some(Mapped {
        event_id,
        event_type,
        livemode,
        outcome,
    })
}

/// `account.updated` of an affiliate's connected account (sent to a Connect
/// endpoint, the event naming the account in its top-level `account`).
fn account_updated(event: &Value, object: &Value) -> Outcome {
    let Some(account_id) = text_at(object, "id") else {
        return ignored("the account has no id");
    };
    if text_at(event, "account").is_some_and(|a| a != account_id) {
        return ignored("the event names another account than its object");
    }
    let requirements = object.get("requirements");
    let disabled_reason = requirements.and_then(|r| text_at(r, "disabled_reason"));
    let currently_due = requirements
        .and_then(|r| r.get("currently_due"))
        .and_then(Value::as_array)
        .map(|due| {
            due.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Outcome::Apply(vec![Command::AccountUpdated(AccountUpdate {
        account_id,
        payouts_enabled: object.get("payouts_enabled").and_then(Value::as_bool) == Some(true),
        disabled_reason,
        currently_due,
    })])
}

/// A unix time a payment happened at; `None` outside chrono's range.
fn at(unix: i64) -> Option<DateTime<Utc>> {
    Utc.timestamp_opt(unix, 0).single()
}

/// The referral an object's metadata names.
fn metadata_referral(object: &Value) -> Option<String> {
    text_at(object.get("metadata")?, REFERRAL_KEY)
}

/// `invoice.paid`: the amount paid minus tax, attributed by the invoice's or
/// its subscription's `metadata.referral`, else by the customer.
fn invoice_paid(invoice: &Value, created: Option<i64>) -> Outcome {
    let (Some(id), Some(currency)) = (id_at(invoice, "id"), currency_at(invoice, "currency"))
    else {
        return ignored("invoice without id or currency");
    };
    let paid = match invoice
        .get("amount_paid")
        .map(|_| minor_at(invoice, "amount_paid"))
    {
        None => 0,
        Some(Some(paid)) if paid >= 0 => paid,
        // Negative, fractional or past an i64: no amount Stripe sends.
        Some(_) => return ignored("amount_paid is not a whole number of minor units"),
    };
    if paid == 0 {
        return ignored("zero amount");
    }
    let total = minor_at(invoice, "total").unwrap_or(paid);
    let before_tax = minor_at(invoice, "total_excluding_tax").unwrap_or(total);
    // Paid in part: the untaxed total scaled by the share paid.
    let minor = if total > 0 && paid < total {
        let scaled = share(Decimal::from(before_tax), paid, total);
        let scaled =
            scaled.round_dp_with_strategy(0, rust_decimal::RoundingStrategy::MidpointNearestEven);
        rust_decimal::prelude::ToPrimitive::to_i64(&scaled).unwrap_or(0)
    } else {
        before_tax
    };
    if minor <= 0 {
        return ignored("zero amount");
    }
    let subscription = invoice
        .get("subscription_details")
        .or_else(|| invoice.get("parent")?.get("subscription_details"));
    let referral = metadata_referral(invoice).or_else(|| subscription.and_then(metadata_referral));
    let paid_at = invoice
        .get("status_transitions")
        .and_then(|t| t.get("paid_at"))
        .and_then(Value::as_i64)
        .and_then(at);
    let Some(occurred_at) = paid_at.or_else(|| created.and_then(at)) else {
        return ignored("invoice without a time paid");
    };
    Outcome::Apply(vec![Command::Record(Payment {
        external_id: id,
        amount: major(currency, minor),
        currency,
        customer_id: id_at(invoice, "customer"),
        customer_email: text_at(invoice, "customer_email"),
        referral,
        occurred_at,
        aliases: invoice_payment_ids(invoice),
    })])
}

/// The payment intent and charge ids an invoice names, in either shape.
fn invoice_payment_ids(invoice: &Value) -> Vec<String> {
    let mut ids: Vec<String> = ["payment_intent", "charge"]
        .iter()
        .filter_map(|f| id_at(invoice, f))
        .collect();
    let payments = invoice
        .get("payments")
        .and_then(|p| p.get("data"))
        .and_then(Value::as_array);
    for p in payments.into_iter().flatten() {
        if let Some(payment) = p.get("payment") {
            ids.extend(
                ["payment_intent", "charge"]
                    .iter()
                    .filter_map(|f| id_at(payment, f)),
            );
        }
    }
    ids.dedup();
    ids
}

/// `checkout.session.completed`: `client_reference_id` or
/// `metadata.referral` binds the customer; a one-off payment is recorded too.
fn checkout_completed(session: &Value, created: Option<i64>) -> Outcome {
    let referral = text_at(session, "client_reference_id").or_else(|| metadata_referral(session));
    let Some(referral) = referral else {
        return ignored("no referral on the checkout session");
    };
    let customer_email = session
        .get("customer_details")
        .and_then(|d| text_at(d, "email"))
        .or_else(|| text_at(session, "customer_email"));
    let customer_id = id_at(session, "customer");
    let mode = text_at(session, "mode").unwrap_or_default();
    let mut commands = vec![Command::Bind(Binding {
        referral: referral.clone(),
        customer_id: customer_id.clone(),
        customer_email: customer_email.clone(),
        payment_id: id_at(session, "invoice"),
    })];
    let total = minor_at(session, "amount_total").unwrap_or(0);
    let tax = session
        .get("total_details")
        .and_then(|t| minor_at(t, "amount_tax"))
        .unwrap_or(0);
    let untaxed = total.checked_sub(tax).unwrap_or(0);
    let payment = id_at(session, "payment_intent");
    if let (true, Some(currency), Some(pi), Some(occurred_at)) = (
        mode == "payment" && untaxed > 0,
        currency_at(session, "currency"),
        payment,
        created.and_then(at),
    ) {
        commands.push(Command::Record(Payment {
            external_id: pi.clone(),
            amount: major(currency, untaxed),
            currency,
            customer_id,
            customer_email,
            referral: Some(referral),
            occurred_at,
            aliases: vec![pi],
        }));
    }
    Outcome::Apply(commands)
}

/// `charge.refunded`: the refunded share so far (`amount_refunded` of
/// `amount`) of the payment the charge belongs to.
fn charge_refunded(charge: &Value) -> Outcome {
    let ids = charge_payment_ids(charge);
    let (Some(refunded), Some(total)) = (
        minor_at(charge, "amount_refunded"),
        minor_at(charge, "amount"),
    ) else {
        return ignored("charge without amounts");
    };
    if ids.is_empty() || refunded <= 0 {
        return ignored("nothing refunded");
    }
    Outcome::Apply(vec![Command::Reverse(Refund {
        payment_ids: ids,
        part: RefundPart::SoFar { refunded, total },
        once_key: None,
        currency: currency_at(charge, "currency"),
    })])
}

/// `charge.dispute.closed`: a lost dispute reverses the whole payment.
fn dispute_closed(dispute: &Value) -> Outcome {
    if text_at(dispute, "status").as_deref() != Some("lost") {
        return ignored("dispute not lost");
    }
    let ids: Vec<String> = ["payment_intent", "charge"]
        .iter()
        .filter_map(|f| id_at(dispute, f))
        .collect();
    if ids.is_empty() {
        return ignored("dispute names no payment");
    }
    Outcome::Apply(vec![Command::Reverse(Refund {
        payment_ids: ids,
        part: RefundPart::Full,
        once_key: None,
        currency: currency_at(dispute, "currency"),
    })])
}

/// An amount Stripe sends in its minor units, in major units, rounded
/// (half-even) to the currency's ISO 4217 exponent. Stripe's minor unit is
/// ISO 4217's but for two currencies: ISK is sent in hundredths (a share of
/// a charge, or its tax, may leave a fraction of a króna) and MGA in whole
/// ariary.
fn major(currency: crate::money::Currency, minor: i64) -> Decimal {
    let exponent = match currency.code() {
        "ISK" => 2,
        "MGA" => 0,
        _ => currency.exponent(),
    };
    currency.round(Decimal::new(minor, exponent))
}

/// The ids a charge's payment may be recorded under: its invoice (older API
/// versions), its payment intent, itself.
fn charge_payment_ids(charge: &Value) -> Vec<String> {
    ["invoice", "payment_intent", "id"]
        .iter()
        .filter_map(|f| id_at(charge, f))
        .collect()
}

#[cfg(test)]
#[path = "stripe_tests.rs"]
mod tests;
