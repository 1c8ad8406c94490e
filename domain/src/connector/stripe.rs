//! Stripe events into the product's commands. Only the fields the mapping
//! needs are read (no SDK). Both the shapes of API version [`API_VERSION`]
//! and those of the versions before `2025-03-31.basil` are read: an
//! invoice's subscription metadata (`parent.subscription_details`, or
//! `subscription_details`), its payment ids (gone from the invoice since
//! basil, whose webhooks never expand its `payments`: `invoice_payment.paid`
//! links them to it; before, `payment_intent` and `charge` on the invoice),
//! and a charge's `invoice` (gone since basil: its payment intent finds the
//! payment once linked).

use crate::payout_rail::AccountUpdate;
use chrono::{DateTime, TimeZone, Utc};
use rust_decimal::Decimal;
use serde_json::Value;

use super::{
    currency_at, id_at, ignored, minor_at, share, text_at, Binding, Command, Link, Mapped, Outcome,
    Payment, ProductAndPlan, Refund, RefundPart, Restore,
};

/// The Stripe API version the current event shapes are taken from (the
/// fixtures of `stripe/openapi`); the shapes before basil are read too.
pub const API_VERSION: &str = "2025-03-31.basil";

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
    let connected = text_at(&event, "account").is_some();
    let outcome = match event_type.as_str() {
        // Every Stripe event says its mode: without it, test money could
        // become live commission.
        _ if livemode.is_none() => ignored("the event has no livemode"),
        "account.updated" => account_updated(&event, object),
        // A connected account's payments are not the merchant's.
        _ if connected => ignored("the event is a connected account's"),
        "invoice.paid" => invoice_paid(object, created),
        "invoice_payment.paid" => invoice_payment_paid(object),
        "checkout.session.completed" => checkout_completed(object, created, false),
        "checkout.session.async_payment_succeeded" => checkout_completed(object, created, true),
        "checkout.session.async_payment_failed" => ignored("the checkout's delayed payment failed"),
        "customer.created" | "customer.updated" => customer_referral(object),
        "charge.refunded" => charge_refunded(object),
        "charge.dispute.closed" => dispute_closed(object),
        "refund.failed" => refund_failed(object),
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
    Outcome::Apply(vec![Command::AccountUpdated(AccountUpdate {
        account_id,
        payouts_enabled: object.get("payouts_enabled").and_then(Value::as_bool) == Some(true),
        disabled_reason,
        currently_due: currently_due(object),
    })])
}

/// `requirements.currently_due` of an account object (an event's, or
/// Stripe's answer to a read of the account).
pub fn currently_due(account: &Value) -> Vec<String> {
    account
        .pointer("/requirements/currently_due")
        .and_then(Value::as_array)
        .map(|due| {
            due.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
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
/// its subscription's `metadata.referral`, else by the customer. A zero
/// amount (a trial's first invoice) records nothing but binds its customer
/// to the referral it carries.
fn invoice_paid(invoice: &Value, created: Option<i64>) -> Outcome {
    let (Some(id), Some(currency)) = (id_at(invoice, "id"), currency_at(invoice, "currency"))
    else {
        return ignored("invoice without id or currency");
    };
    let subscription = invoice
        .get("parent")
        .and_then(|p| p.get("subscription_details"))
        .or_else(|| invoice.get("subscription_details"));
    let referral = metadata_referral(invoice).or_else(|| subscription.and_then(metadata_referral));
    let customer_id = id_at(invoice, "customer");
    let customer_email = text_at(invoice, "customer_email");
    let minor = match invoice_untaxed(invoice) {
        Ok(minor) if minor > 0 => minor,
        Ok(_) => return trial(referral, customer_id, customer_email),
        Err(reason) => return ignored(reason),
    };
    let paid_at = invoice
        .get("status_transitions")
        .and_then(|t| t.get("paid_at"))
        .and_then(Value::as_i64)
        .and_then(at);
    let Some(occurred_at) = paid_at.or_else(|| created.and_then(at)) else {
        return ignored("invoice without a time paid");
    };
    let aliases = payment_ids(invoice);
    Outcome::Apply(vec![Command::Record(Payment {
        external_id: id,
        amount: major(currency, minor),
        currency,
        customer_id,
        customer_email,
        referral,
        occurred_at,
        linked_later: aliases.is_empty(),
        aliases,
        promotion_code: promotion_code(invoice),
        product: first_paid_line(invoice),
    })])
}

/// What an invoice's payment earns on, in minor units: the amount paid
/// minus tax (the untaxed total scaled by the share paid when paid in part).
fn invoice_untaxed(invoice: &Value) -> Result<i64, &'static str> {
    let paid = match invoice
        .get("amount_paid")
        .map(|_| minor_at(invoice, "amount_paid"))
    {
        None => 0,
        Some(Some(paid)) if paid >= 0 => paid,
        // Negative, fractional or past an i64: no amount Stripe sends.
        Some(_) => return Err("amount_paid is not a whole number of minor units"),
    };
    if paid == 0 {
        return Ok(0);
    }
    let total = minor_at(invoice, "total").unwrap_or(paid);
    let before_tax = minor_at(invoice, "total_excluding_tax").unwrap_or(total);
    // Never more than was paid, never negative: a payload that says
    // otherwise is no payment Stripe makes.
    if before_tax < 0 || total < 0 {
        return Err("a negative total");
    }
    if before_tax > total.max(paid) {
        return Err("total_excluding_tax is above what was paid");
    }
    if total > 0 && paid < total {
        let scaled = share(Decimal::from(before_tax), paid, total);
        let scaled =
            scaled.round_dp_with_strategy(0, rust_decimal::RoundingStrategy::MidpointNearestEven);
        return Ok(rust_decimal::prelude::ToPrimitive::to_i64(&scaled).unwrap_or(0));
    }
    Ok(before_tax)
}

/// A payment of nothing (a trial's): its customer bound to the referral it
/// carries, so the first paid invoice attributes whenever it comes.
fn trial(
    referral: Option<String>,
    customer_id: Option<String>,
    customer_email: Option<String>,
) -> Outcome {
    match referral.and_then(|r| Binding::customer(r, customer_id, customer_email)) {
        Some(bind) => Outcome::Apply(vec![bind]),
        None => ignored("zero amount"),
    }
}

/// `invoice_payment.paid` (API version basil and later): the invoice's
/// payment intent or charge, linked to the invoice's conversion.
fn invoice_payment_paid(payment: &Value) -> Outcome {
    let Some(invoice) = id_at(payment, "invoice") else {
        return ignored("the invoice payment names no invoice");
    };
    if text_at(payment, "status").is_some_and(|s| s != "paid") {
        return ignored("the invoice payment is not paid");
    }
    let aliases = payment.get("payment").map(payment_ids).unwrap_or_default();
    if aliases.is_empty() {
        return ignored("the invoice payment names no payment intent or charge");
    }
    Outcome::Apply(vec![Command::Link(Link {
        payment_id: invoice,
        aliases,
    })])
}

/// `customer.created` and `customer.updated`: `metadata.referral` binds the
/// customer, as a checkout's referral does.
fn customer_referral(customer: &Value) -> Outcome {
    let Some(referral) = metadata_referral(customer) else {
        return ignored("no referral on the customer");
    };
    match Binding::customer(referral, id_at(customer, "id"), text_at(customer, "email")) {
        Some(bind) => Outcome::Apply(vec![bind]),
        None => ignored("the customer has no id"),
    }
}

/// The payment intent and charge ids an object names (an invoice before
/// basil, an invoice payment's `payment`, a dispute).
fn payment_ids(object: &Value) -> Vec<String> {
    ["payment_intent", "charge"]
        .iter()
        .filter_map(|f| id_at(object, f))
        .collect()
}

/// `checkout.session.completed` and `…async_payment_succeeded`:
/// `client_reference_id` or `metadata.referral` binds the customer; a
/// one-off payment is recorded once paid (a delayed method, such as SEPA or
/// ACH, completes unpaid and succeeds later), tax and shipping excluded.
fn checkout_completed(session: &Value, created: Option<i64>, succeeded: bool) -> Outcome {
    let referral = text_at(session, "client_reference_id").or_else(|| metadata_referral(session));
    let promotion = promotion_code(session);
    // A promotion code names the affiliate when no referral does.
    let (hint, by_promotion) = match (&referral, &promotion) {
        (Some(r), _) => (r.clone(), false),
        (None, Some(p)) => (p.clone(), true),
        (None, None) => return ignored("no referral or promotion code on the checkout session"),
    };
    let customer_email = session
        .get("customer_details")
        .and_then(|d| text_at(d, "email"))
        .or_else(|| text_at(session, "customer_email"));
    let customer_id = id_at(session, "customer");
    let bind = Command::Bind(Binding {
        referral: hint,
        by_promotion,
        customer_id: customer_id.clone(),
        customer_email: customer_email.clone(),
        payment_id: id_at(session, "invoice"),
    });
    // Sessions before the field was sent were paid when completed.
    let paid = succeeded || text_at(session, "payment_status").is_none_or(|s| s == "paid");
    let one_off = text_at(session, "mode").as_deref() == Some("payment");
    let untaxed = match checkout_untaxed(session) {
        Ok(untaxed) => untaxed,
        Err(reason) => return ignored(reason),
    };
    let mut commands = Vec::new();
    if let (true, Some(currency), Some(pi), Some(occurred_at)) = (
        paid && one_off && untaxed > 0,
        currency_at(session, "currency"),
        id_at(session, "payment_intent"),
        created.and_then(at),
    ) {
        commands.push(Command::Record(Payment {
            external_id: pi.clone(),
            amount: major(currency, untaxed),
            currency,
            customer_id,
            customer_email,
            referral,
            occurred_at,
            aliases: vec![pi],
            linked_later: false,
            promotion_code: promotion,
            product: metadata_product(session),
        }));
    }
    // The binding comes after the payment: a payment recorded and
    // attributed binds its customer itself, and the binding is then left.
    commands.push(bind);
    Outcome::Apply(commands)
}

/// The product and price of an invoice's first line with a positive
/// amount: `pricing.price_details` (API version basil and later) or its
/// `price` (before; `product` an id or the expanded product).
fn first_paid_line(invoice: &Value) -> ProductAndPlan {
    let lines = invoice
        .get("lines")
        .and_then(|l| l.get("data"))
        .and_then(Value::as_array);
    let paid = lines.and_then(|ls| {
        ls.iter()
            .find(|l| minor_at(l, "amount").is_some_and(|a| a > 0))
    });
    let Some(line) = paid else {
        return ProductAndPlan::default();
    };
    if let Some(details) = line.get("pricing").and_then(|p| p.get("price_details")) {
        return ProductAndPlan {
            product_id: id_at(details, "product"),
            plan_id: id_at(details, "price"),
        };
    }
    let price = line.get("price");
    ProductAndPlan {
        product_id: price.and_then(|p| id_at(p, "product")),
        plan_id: price.and_then(|p| id_at(p, "id")),
    }
}

/// A Checkout Session names no line in its event: its metadata's
/// `productId` and `planId`, when the merchant put them there.
fn metadata_product(session: &Value) -> ProductAndPlan {
    let metadata = session.get("metadata");
    ProductAndPlan {
        product_id: metadata.and_then(|m| text_at(m, "productId")),
        plan_id: metadata.and_then(|m| text_at(m, "planId")),
    }
}

/// The promotion code an invoice or Checkout Session was paid with: the
/// first of `discounts[].promotion_code` (objects; an invoice's unexpanded
/// discount ids name none), else `discount.promotion_code` (older versions).
fn promotion_code(object: &Value) -> Option<String> {
    let listed = object
        .get("discounts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find_map(|d| id_at(d, "promotion_code"));
    listed.or_else(|| id_at(object.get("discount")?, "promotion_code"))
}

/// A Checkout Session's total less its tax and its shipping, in minor
/// units; `Err` when a part is negative (it would earn on more than was
/// paid).
fn checkout_untaxed(session: &Value) -> Result<i64, &'static str> {
    let total = minor_at(session, "amount_total").unwrap_or(0);
    let details = session.get("total_details");
    let part = |field| details.and_then(|t| minor_at(t, field)).unwrap_or(0);
    let (tax, shipping) = (part("amount_tax"), part("amount_shipping"));
    if total < 0 || tax < 0 || shipping < 0 {
        return Err("a negative total, tax or shipping amount");
    }
    Ok(total.saturating_sub(tax).saturating_sub(shipping).max(0))
}

/// `charge.refunded`: the refunded share so far (`amount_refunded` of what
/// was captured: `amount_captured`, else `amount`) of the payment the
/// charge belongs to.
fn charge_refunded(charge: &Value) -> Outcome {
    let ids = charge_payment_ids(charge);
    let captured = minor_at(charge, "amount_captured").filter(|c| *c > 0);
    let (Some(refunded), Some(total)) = (
        minor_at(charge, "amount_refunded"),
        captured.or_else(|| minor_at(charge, "amount")),
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
    let ids = payment_ids(dispute);
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

/// `refund.failed`: the refund's amount given back to the payment its
/// charge or payment intent names, once per refund. A refund's amount
/// counts tax in; the restoral never passes what was reversed.
fn refund_failed(refund: &Value) -> Outcome {
    if text_at(refund, "status").as_deref() != Some("failed") {
        return ignored("refund not failed");
    }
    let ids: Vec<String> = ["payment_intent", "charge"]
        .iter()
        .filter_map(|f| id_at(refund, f))
        .collect();
    let (Some(id), Some(currency), Some(minor)) = (
        id_at(refund, "id"),
        currency_at(refund, "currency"),
        minor_at(refund, "amount"),
    ) else {
        return ignored("refund without id, currency or amount");
    };
    if ids.is_empty() || minor <= 0 {
        return ignored("refund names no payment or amount");
    }
    Outcome::Apply(vec![Command::Restore(Restore {
        payment_ids: ids,
        amount: Some(major(currency, minor)),
        currency: Some(currency),
        once_key: id,
    })])
}

/// An amount Stripe sends in its minor units (`Rail::exponent`: ISK in
/// hundredths, MGA in whole ariary), in major units, rounded (half-even) to
/// the currency's ISO 4217 exponent (a share of an ISK charge, or its tax,
/// may leave a fraction of a króna).
fn major(currency: crate::money::Currency, minor: i64) -> Decimal {
    let exponent = crate::payout_rail::Rail::Stripe.exponent(currency);
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
