//! Payment-provider connectors (contract section 11): the port every
//! provider adapter fills. An adapter checks a delivery's signature on the
//! raw body, then maps the verified event into the product's own commands:
//! record a payment (the postback's path), bind a referral (identify's) or
//! reverse a payment's conversion in full or in part (reverse's). It never
//! decides attribution or commission itself. Pure: no I/O.

pub mod paddle;
pub mod paypal;
pub mod signature;
pub mod stripe;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde_json::Value;

use crate::enums::wire_enum;
use crate::money::Currency;
use crate::payout_rail::{AccountUpdate, PayoutResult};
use crate::tenant::Mode;

wire_enum! {
    /// The payment providers a connector exists for.
    pub enum Provider {
        /// Stripe (webhook endpoints, `Stripe-Signature`).
        Stripe = "STRIPE",
        /// Paddle Billing (notification destinations, `Paddle-Signature`).
        Paddle = "PADDLE",
        /// PayPal (Payouts: pays affiliates; its events are verified by PayPal's API).
        Paypal = "PAYPAL",
    }
}

/// A verified provider event, mapped.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapped {
    /// The provider's event id: a delivery is applied once per id.
    pub event_id: String,
    /// The provider's event type, as sent.
    pub event_type: String,
    /// Stripe's `livemode` (Paddle events carry none).
    pub livemode: Option<bool>,
    /// What to do, or why nothing is done.
    pub outcome: Outcome,
}

impl Mapped {
    /// Its commands for a tenant in `mode`, or why nothing is done: the
    /// mapping's own reason, or a Stripe mode that differs (test money never
    /// becomes live commission, nor the reverse).
    pub fn commands_for(&self, mode: Mode) -> Result<&[Command], String> {
        match (&self.outcome, self.livemode) {
            (Outcome::Ignored(reason), _) => Err(reason.clone()),
            (_, Some(live)) if live != (mode == Mode::Live) => Err("mode mismatch".into()),
            (Outcome::Apply(commands), _) => Ok(commands),
        }
    }
}

/// What a mapped event asks of the product.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Apply these, in order.
    Apply(Vec<Command>),
    /// Nothing to do (a type not mapped, a zero amount, a field the mapping
    /// needs is missing): answered 200 so the provider does not retry it.
    Ignored(String),
}

/// One of the product's own commands.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Record a payment as a conversion, as a postback would.
    Record(Payment),
    /// Bind the customer to the affiliate the hint names, as identify would.
    Bind(Binding),
    /// Reverse the conversion of a payment, in full or in part.
    Reverse(Refund),
    /// Name a recorded payment's other ids (a Stripe invoice's payment
    /// intent and charge, sent apart from the invoice since API version
    /// `2025-03-31.basil`).
    Link(Link),
    /// Give back what a reversal took: a refund that failed, a chargeback
    /// reversed because the merchant won its dispute.
    Restore(Restore),
    /// A connected account's new state (an affiliate's payout account).
    AccountUpdated(AccountUpdate),
    /// What the provider says became of a payout it was asked to pay.
    PayoutResult(PayoutResult),
}

/// A payment to record.
#[derive(Debug, Clone, PartialEq)]
pub struct Payment {
    /// The provider's payment id: the conversion's `externalId`.
    pub external_id: String,
    /// Tax excluded, converted exactly from minor units.
    pub amount: Decimal,
    pub currency: Currency,
    pub customer_id: Option<String>,
    /// Hashed on arrival, never stored plain.
    pub customer_email: Option<String>,
    /// A tracker session id, click id or affiliate code.
    pub referral: Option<String>,
    pub occurred_at: DateTime<Utc>,
    /// Other ids refunds and disputes may name this payment by (Stripe's
    /// payment intent and charge, Paddle's transaction).
    pub aliases: Vec<String>,
    /// Whether its other ids arrive apart, as a [`Link`] (a Stripe invoice
    /// of API version `2025-03-31.basil` or later names none).
    pub linked_later: bool,
    /// The provider's id of the promotion code (Stripe) or discount (Paddle)
    /// it was paid with, when it names one.
    pub promotion_code: Option<String>,
    /// The product and plan (price) of its first paid line, for
    /// `commissionRules` (Stripe: the invoice line's price; Paddle: the
    /// first item's price; a Checkout Session: its metadata's
    /// `productId`/`planId`).
    pub product: ProductAndPlan,
}

/// A payment's product and plan ids, when it names them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProductAndPlan {
    pub product_id: Option<String>,
    pub plan_id: Option<String>,
}

/// The other ids of a payment, sent apart from it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    /// The id the payment is recorded under (a Stripe invoice's).
    pub payment_id: String,
    /// The ids refunds and disputes name it by.
    pub aliases: Vec<String>,
}

/// A referral to bind (a checkout that names the affiliate).
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    /// A tracker session id, click id or affiliate code; the provider's id
    /// of a promotion code when `by_promotion`.
    pub referral: String,
    /// The checkout names no referral but a promotion code: its affiliate.
    pub by_promotion: bool,
    pub customer_id: Option<String>,
    pub customer_email: Option<String>,
    /// A payment of this checkout that may already be recorded unattributed
    /// (a subscription's first invoice).
    pub payment_id: Option<String>,
}

/// A refund, chargeback or lost dispute of a recorded payment. One that
/// arrives before its payment is kept (as it is) and applied when the
/// payment is recorded.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Refund {
    /// The ids the payment may be known by, tried in order.
    pub payment_ids: Vec<String>,
    pub part: RefundPart,
    /// Counts once however often it arrives (Paddle's adjustment id).
    pub once_key: Option<String>,
    /// The currency the provider names for it: a refund in another currency
    /// than its payment's is not that payment's, and reverses nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<Currency>,
}

/// A provider's reversal given back (a refund that failed, a won
/// chargeback). One for a payment not recorded yet is IGNORED: a payment
/// recorded later applies only the refunds still kept for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Restore {
    /// The ids the payment may be known by, tried in order.
    pub payment_ids: Vec<String>,
    /// The amount given back in major units of `currency`; everything
    /// reversed when `None`.
    pub amount: Option<Decimal>,
    pub currency: Option<Currency>,
    /// Counts once however often it arrives (the refund's or the
    /// adjustment's id).
    pub once_key: String,
}

impl Restore {
    /// The part of a conversion in `currency` to restore: all that is
    /// reversed (`None`) or the amount; `Err` with the restoral's currency
    /// when it is an amount in another currency than the payment's.
    pub fn part(&self, currency: Currency) -> Result<Option<Decimal>, Currency> {
        match (self.amount, self.currency) {
            (Some(_), Some(own)) if own != currency => Err(own),
            (amount, _) => Ok(amount),
        }
    }
}

/// How much of a payment a refund takes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RefundPart {
    /// All of it (a lost dispute).
    Full,
    /// A running total: `refunded` of `total`, both in minor units (Stripe
    /// sends the charge's `amount_refunded` so far, not this refund's).
    SoFar { refunded: i64, total: i64 },
    /// This refund's own amount, in minor units, tax excluded.
    Minor(i64),
}

impl Refund {
    /// Whether it may be kept for a payment not recorded yet: applying it
    /// again must change nothing (a running total, all of it, or an amount
    /// counted once by its key), since a kept refund applies at every
    /// delivery of its payment. Every mapping today makes such refunds;
    /// this guards one that would not.
    pub fn keepable(&self) -> bool {
        !matches!(self.part, RefundPart::Minor(_)) || self.once_key.is_some()
    }

    /// The amount of a payment of `amount` in `currency` (`already` of it
    /// reversed) that is reversed in all once this refund is applied (see
    /// [`RefundPart::reversal`]); `Err` with the refund's currency when it
    /// is an amount in another currency than the payment's (a share of the
    /// payment, or all of it, applies whatever the currency: a merchant's
    /// postback may have recorded the payment in its own).
    pub fn reversal(
        &self,
        amount: Decimal,
        already: Decimal,
        currency: Currency,
    ) -> Result<Option<Decimal>, Currency> {
        match (self.currency, self.part) {
            (Some(own), RefundPart::Minor(_)) if own != currency => Err(own),
            _ => Ok(self.part.reversal(amount, already, currency)),
        }
    }

    /// What tells this refund from another of the same payment (the same
    /// refund delivered again has the same).
    pub fn identity(&self) -> String {
        let part = match self.part {
            RefundPart::Full => "FULL".to_string(),
            RefundPart::SoFar { refunded, total } => format!("SOFAR#{refunded}#{total}"),
            RefundPart::Minor(minor) => format!("MINOR#{minor}"),
        };
        match &self.once_key {
            Some(key) => format!("{part}#{key}"),
            None => part,
        }
    }
}

impl Binding {
    /// A customer, named by its id or e-mail, bound to the affiliate a
    /// referral hint names (no payment to attribute with it); `None` when
    /// the customer is named by neither.
    pub fn customer(
        referral: String,
        customer_id: Option<String>,
        customer_email: Option<String>,
    ) -> Option<Command> {
        if customer_id.is_none() && customer_email.is_none() {
            return None;
        }
        Some(Command::Bind(Binding {
            referral,
            customer_id,
            customer_email,
            payment_id: None,
            by_promotion: false,
        }))
    }
}

impl Payment {
    /// Every id refunds may name it by: its own and its aliases.
    pub fn ids(&self) -> Vec<String> {
        let mut ids = vec![self.external_id.clone()];
        ids.extend(
            self.aliases
                .iter()
                .filter(|a| **a != self.external_id)
                .cloned(),
        );
        ids
    }
}

impl RefundPart {
    /// The amount of a conversion of `amount` (major units) that should be
    /// reversed in all once this refund is applied, given what already is:
    /// `None` when nothing more is to be reversed.
    pub fn reversal(
        &self,
        amount: Decimal,
        already: Decimal,
        currency: Currency,
    ) -> Option<Decimal> {
        let left = amount - already;
        let part = match *self {
            RefundPart::Full => left,
            RefundPart::SoFar { refunded, total } if total > 0 => {
                let target = if refunded >= total {
                    amount
                } else {
                    currency.round(share(amount, refunded, total))
                };
                target - already
            }
            RefundPart::SoFar { .. } => Decimal::ZERO,
            RefundPart::Minor(minor) => currency.from_minor(minor).min(left),
        };
        (part > Decimal::ZERO).then_some(part.min(left))
    }
}

/// `amount * part / whole` (`0 < part < whole`): exact when the product
/// fits a decimal, else through the share (28 significant digits, well
/// past any minor unit).
pub(crate) fn share(amount: Decimal, part: i64, whole: i64) -> Decimal {
    let (part, whole) = (Decimal::from(part), Decimal::from(whole));
    match amount.checked_mul(part) {
        Some(product) => product / whole,
        None => amount * (part / whole),
    }
}

/// Why a delivery's signature is refused (all are 400, nothing recorded
/// but a REJECTED delivery row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureError {
    /// No signature header.
    Missing,
    /// A header that is not the provider's format.
    Malformed,
    /// Signed more than [`signature::TOLERANCE_SECS`] away from now.
    Stale,
    /// No signature matches the body and the secret.
    Mismatch,
    /// The header was sent more than once.
    Repeated,
}

impl SignatureError {
    /// The reason kept on the REJECTED delivery row.
    pub fn reason(&self) -> &'static str {
        match self {
            SignatureError::Missing => "signature header missing",
            SignatureError::Malformed => "signature header malformed",
            SignatureError::Stale => "signature timestamp outside 300 seconds",
            SignatureError::Mismatch => "signature does not match",
            SignatureError::Repeated => "signature header sent more than once",
        }
    }
}

/// A text a provider sends that the product may key on: 1 to as many
/// characters as the postback's `externalId` takes (what a DynamoDB key
/// built from it holds), no control character. Any other is read as
/// absent, so a forged or broken body is ignored instead of failing a write.
fn usable(s: &str) -> Option<String> {
    crate::field::Key::parse("", s).ok().map(|()| s.to_string())
}

/// A string field of a JSON object, or the `id` of an expanded object there.
pub(crate) fn id_at(object: &Value, field: &str) -> Option<String> {
    match object.get(field)? {
        Value::String(s) => usable(s),
        Value::Object(o) => usable(o.get("id")?.as_str()?),
        _ => None,
    }
}

/// A non-empty string field.
pub(crate) fn text_at(object: &Value, field: &str) -> Option<String> {
    usable(object.get(field)?.as_str()?.trim())
}

/// An integer field (Paddle sends amounts as strings of digits).
pub(crate) fn minor_at(object: &Value, field: &str) -> Option<i64> {
    match object.get(field)? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// The currency a provider names (any letter case).
pub(crate) fn currency_at(object: &Value, field: &str) -> Option<Currency> {
    Currency::parse(field, &text_at(object, field)?).ok()
}

/// An ignored event's outcome.
pub(crate) fn ignored(reason: impl Into<String>) -> Outcome {
    Outcome::Ignored(reason.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refund_is_told_apart_by_its_part_and_once_key() {
        let r = |part, once_key: Option<&str>| Refund {
            payment_ids: vec!["pi_1".into(), "ch_1".into()],
            part,
            once_key: once_key.map(str::to_string),
            currency: None,
        };
        let cases = [
            (r(RefundPart::Full, None), "FULL"),
            (
                r(
                    RefundPart::SoFar {
                        refunded: 600,
                        total: 1200,
                    },
                    None,
                ),
                "SOFAR#600#1200",
            ),
            (r(RefundPart::Minor(500), Some("adj_1")), "MINOR#500#adj_1"),
        ];
        for (refund, identity) in cases {
            assert_eq!(refund.identity(), identity);
            assert!(refund.keepable());
        }
        assert!(
            !r(RefundPart::Minor(500), None).keepable(),
            "it would count twice"
        );
    }

    #[test]
    fn refunds_reverse_what_is_due_and_never_more() {
        let usd = Currency::parse("c", "USD").unwrap();
        let jpy = Currency::parse("c", "JPY").unwrap();
        let d = |s: &str| s.parse::<Decimal>().unwrap();
        let so_far = |refunded, total| RefundPart::SoFar { refunded, total };
        // (part, conversion amount, already reversed, currency, to reverse now)
        let cases = [
            (RefundPart::Full, "100", "0", usd, Some("100")),
            (RefundPart::Full, "100", "40", usd, Some("60")),
            (RefundPart::Full, "100", "100", usd, None),
            (so_far(2500, 10000), "80.00", "0", usd, Some("20.00")),
            (so_far(5000, 10000), "80.00", "20.00", usd, Some("20.00")),
            (so_far(5000, 10000), "80.00", "40.00", usd, None),
            (so_far(10000, 10000), "80.00", "40.00", usd, Some("40.00")),
            (so_far(12000, 10000), "80.00", "0", usd, Some("80.00")),
            (so_far(1, 3), "1000", "0", jpy, Some("333")),
            (so_far(1, 0), "10", "0", usd, None),
            (RefundPart::Minor(1999), "100.00", "0", usd, Some("19.99")),
            (
                RefundPart::Minor(1999),
                "100.00",
                "90.00",
                usd,
                Some("10.00"),
            ),
            (RefundPart::Minor(0), "100.00", "0", usd, None),
            // A product past a decimal's range goes through the share.
            (
                so_far(i64::MAX - 1, i64::MAX),
                "999999999999.99",
                "0",
                usd,
                Some("999999999999.99"),
            ),
        ];
        for (i, (part, amount, already, cur, want)) in cases.into_iter().enumerate() {
            let got = part.reversal(d(amount), d(already), cur);
            assert_eq!(got, want.map(d), "case {i}");
        }
    }
}
