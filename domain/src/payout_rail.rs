//! Paying through a provider (contract section 14): which rail pays a
//! payout, where its money goes, the idempotency key of an attempt, and the
//! command a provider's answer makes. Pure: the calls themselves are in
//! `payouts::rails`, the order of commit and call in `services::payouts`.
//!
//! The guarantee rests on two rules: the move to PROCESSING with a new
//! `paymentAttempt` is committed before the provider is called, and every
//! call of an attempt carries the same key (`{payoutId}-{paymentAttempt}`),
//! which the provider answers once. Only a refusal (nothing was paid) starts
//! a new attempt; an unknown outcome keeps the attempt and its key.

use rust_decimal::Decimal;

use crate::affiliate::{Affiliate, PayoutMethod};
use crate::money::Currency;
use crate::payout::{Payout, PayoutStatus};
pub use crate::payout_account::{
    AccountUpdate, PaymentError, PayoutAccount, PayoutAccountStatus, Rail,
};
use crate::payout_command::Command;

impl Rail {
    /// The rail that pays an affiliate who chose `method`, when the paying
    /// integration is `paying`: the two must name the same provider. Other
    /// methods (MANUAL, WISE, BANK_TRANSFER) are paid as without a rail.
    pub fn for_method(method: Option<PayoutMethod>, paying: Rail) -> Option<Rail> {
        match (method?, paying) {
            (PayoutMethod::Stripe, Rail::Stripe) => Some(Rail::Stripe),
            (PayoutMethod::Paypal, Rail::Paypal) => Some(Rail::Paypal),
            _ => None,
        }
    }
}

impl Rail {
    /// Digits after the decimal point the provider counts `currency` in:
    /// ISO 4217's, but Stripe counts ISK in hundredths and MGA in whole
    /// ariary, and PayPal takes HUF, JPY and TWD in whole units.
    pub fn exponent(self, currency: Currency) -> u32 {
        match (self, currency.code()) {
            (Rail::Stripe, "ISK") => 2,
            (Rail::Stripe, "MGA") => 0,
            (Rail::Paypal, "HUF" | "JPY" | "TWD") => 0,
            _ => currency.exponent(),
        }
    }

    /// `amount` in the provider's unit: Stripe's minor units are its
    /// digits, PayPal's decimal string its text. An amount with a fraction
    /// the provider cannot take is refused (`(code, message)`): the rail
    /// never pays other than the payout's amount.
    pub fn amount(self, currency: Currency, amount: Decimal) -> Result<Decimal, (String, String)> {
        let exponent = self.exponent(currency);
        // Stripe takes three-decimal currencies (KWD, BHD, ...) in
        // thousandths whose last digit is 0.
        let precision = match self {
            Rail::Stripe => exponent.min(2),
            Rail::Paypal => exponent,
        };
        let mut exact = amount.normalize();
        if exact.scale() > precision {
            return Err((
                AMOUNT_NOT_PAYABLE.to_string(),
                format!(
                    "{} pays {} in units of {}; the payout's {amount} is not a whole number of them: adjust it",
                    self.as_str(),
                    currency.code(),
                    Decimal::new(1, precision),
                ),
            ));
        }
        exact.rescale(exponent);
        Ok(exact)
    }
}

/// The code of a refusal made before any call: the rail cannot pay the
/// amount exactly.
pub const AMOUNT_NOT_PAYABLE: &str = "amount_not_payable";

/// Where `p`'s money goes on `rail`, once the rail can pay its amount
/// exactly: the refusals made before any call.
pub fn ready(
    p: &Payout,
    affiliate: &Affiliate,
    rail: Rail,
) -> Result<Destination, (String, String)> {
    let to = destination(affiliate, rail)?;
    rail.amount(p.currency, p.amount)?;
    Ok(to)
}

/// Where a payout's money goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A Stripe connected account (`acct_…`), ACTIVE.
    StripeAccount(String),
    /// A PayPal receiver's e-mail.
    PaypalEmail(String),
}

/// The code of a refusal made before any call.
pub const NO_DESTINATION: &str = "no_destination";

/// The affiliate's destination on `rail`, or why it has none usable
/// (`(code, message)`): STRIPE needs an ACTIVE connected account, PAYPAL a
/// `payoutEmail`.
pub fn destination(affiliate: &Affiliate, rail: Rail) -> Result<Destination, (String, String)> {
    let refused = |message: &str| Err((NO_DESTINATION.to_string(), message.to_string()));
    match rail {
        Rail::Stripe => match &affiliate.payout_account {
            Some(a) if a.status == PayoutAccountStatus::Active => {
                Ok(Destination::StripeAccount(a.account_id.clone()))
            }
            Some(a) => refused(&format!(
                "the affiliate's Stripe account is {}, not ACTIVE: it must finish onboarding",
                a.status.as_str()
            )),
            None => refused("the affiliate has no Stripe account: create its onboarding link"),
        },
        Rail::Paypal => match &affiliate.payout_email {
            Some(email) => Ok(Destination::PaypalEmail(email.as_str().to_string())),
            None => refused("the affiliate has no payoutEmail for PayPal"),
        },
    }
}

/// Where an attempt already started is asked again: the affiliate's account
/// whatever its status now (the provider answers a key it has answered
/// before the same way, and refuses a new one to an account it cannot pay).
pub fn redrive_destination(affiliate: &Affiliate, rail: Rail) -> Option<Destination> {
    match rail {
        Rail::Stripe => affiliate
            .payout_account
            .as_ref()
            .map(|a| Destination::StripeAccount(a.account_id.clone())),
        Rail::Paypal => affiliate
            .payout_email
            .as_ref()
            .map(|e| Destination::PaypalEmail(e.as_str().to_string())),
    }
}

/// The idempotency key of a payout's current attempt, sent on every call of it.
pub fn attempt_key(payout: &Payout) -> String {
    format!("{}-{}", payout.id, payout.payment_attempt)
}

/// What a provider's call came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderAnswer {
    /// Paid: the provider's reference (Stripe's `tr_…`).
    Paid { reference: String },
    /// Taken, to be confirmed by the provider's event (PayPal's batch id).
    Accepted { reference: String },
    /// Refused: nothing was paid (the provider's code and message).
    Refused { code: String, message: String },
    /// No answer (timeout, connection lost, 5xx, 429): the outcome is
    /// unknown, so the attempt and its key are kept.
    NoAnswer { cause: String },
}

impl ProviderAnswer {
    /// The command it makes of a PROCESSING payout; none when the outcome is unknown.
    pub fn command(&self) -> Option<Command> {
        match self {
            ProviderAnswer::Paid { reference } => Some(Command::ConfirmPayment {
                reference: Some(reference.clone()),
            }),
            ProviderAnswer::Accepted { reference } => Some(Command::PaymentAccepted {
                reference: reference.clone(),
            }),
            ProviderAnswer::Refused { code, message } => Some(Command::PaymentFailed {
                code: code.clone(),
                message: message.clone(),
            }),
            ProviderAnswer::NoAnswer { .. } => None,
        }
    }
}

/// What a provider's event says became of a payout it was asked to pay
/// (PayPal's payout item events).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayoutResult {
    /// Our payout id (PayPal's `sender_item_id`).
    pub payout_id: String,
    /// The provider's batch the item was paid in (the payout's reference
    /// while it waits): an event of an earlier attempt's batch is stale.
    pub batch_id: Option<String>,
    /// The batch's `sender_batch_id`: the attempt's key it was sent with,
    /// which names the attempt even when the answer that gave the batch id
    /// was lost.
    pub attempt_key: Option<String>,
    pub outcome: PayoutOutcome,
}

/// A payout item's outcome at the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayoutOutcome {
    /// Paid: the provider's item id.
    Paid { reference: String },
    /// Not paid, and final (FAILED, RETURNED, BLOCKED, DENIED, CANCELED).
    Failed { code: String, message: String },
    /// Not claimed by the receiver yet (PayPal returns it after 30 days).
    Unclaimed { code: String, message: String },
}

impl PayoutResult {
    /// The command it makes of the payout as it is now, or why none: a PAID
    /// payout is never moved, an event of another attempt's batch is stale.
    pub fn command(&self, p: &Payout) -> Result<Command, String> {
        if p.status == PayoutStatus::Paid {
            return match self.outcome {
                PayoutOutcome::Paid { .. } => Err("the payout is PAID already".into()),
                _ => Err("the payout is PAID: a later failure does not move it".into()),
            };
        }
        if p.status != PayoutStatus::Processing {
            return Err(format!(
                "the payout is {}, not waiting on the provider",
                p.status.as_str()
            ));
        }
        if !self.is_of_current_attempt(p) {
            return Err("an event of an earlier attempt".into());
        }
        Ok(match &self.outcome {
            PayoutOutcome::Paid { reference } => Command::ConfirmPayment {
                reference: Some(reference.clone()),
            },
            PayoutOutcome::Failed { code, message } => Command::PaymentFailed {
                code: code.clone(),
                message: message.clone(),
            },
            PayoutOutcome::Unclaimed { code, message } => Command::PaymentUnclaimed {
                code: code.clone(),
                message: message.clone(),
            },
        })
    }

    /// Whether the event is about `p`'s current attempt: by the key the
    /// attempt was sent with when the event names it, else by the batch the
    /// payout holds (a batch the payout does not hold is an earlier one's).
    fn is_of_current_attempt(&self, p: &Payout) -> bool {
        match (&self.attempt_key, &self.batch_id) {
            (Some(key), _) => *key == attempt_key(p),
            (None, Some(_)) => self.batch_id == p.payment_reference,
            (None, None) => true,
        }
    }
}

/// What a batch-process does with a payout on a rail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RailStep {
    /// Start a new attempt: commit PROCESSING, then call.
    Begin,
    /// Call again with the current attempt's key (PROCESSING, no answer yet).
    Redrive,
    /// Nothing to send: PAID, or taken by the provider and awaiting its event.
    Wait,
}

/// The step for `payout` as it is now, when `rail` pays. A PROCESSING
/// payout is only ever asked again through the rail its attempt was sent
/// to: one no rail was asked for (paid by hand: the merchant may be paying
/// it) or sent through another rail is never sent to this one.
pub fn step(payout: &Payout, rail: Rail) -> RailStep {
    match payout.status {
        // What the payout job waits for (`Payout::awaits_provider`), on this rail.
        PayoutStatus::Processing if payout.rail == Some(rail) && payout.awaits_provider() => {
            RailStep::Redrive
        }
        PayoutStatus::Processing | PayoutStatus::Paid => RailStep::Wait,
        _ => RailStep::Begin,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_attempt_sent_through_a_rail_and_not_taken_is_sent_again() {
        use PayoutStatus::*;
        let at = |status, rail, reference: Option<&str>| {
            let mut p = crate::payout::tests::payout(status);
            p.payment_attempt = 1;
            p.rail = rail;
            p.payment_reference = reference.map(str::to_string);
            step(&p, Rail::Stripe)
        };
        let cases = [
            (Approved, None, None, RailStep::Begin),
            (InvoiceUploaded, None, None, RailStep::Begin),
            (Approved, Some(Rail::Paypal), Some("B1"), RailStep::Begin),
            // Paid by hand: the merchant may be paying it now.
            (Processing, None, None, RailStep::Wait),
            (Processing, Some(Rail::Stripe), None, RailStep::Redrive),
            // Sent through PayPal: never asked again through Stripe.
            (Processing, Some(Rail::Paypal), None, RailStep::Wait),
            // Taken by the provider: its event says the rest.
            (Processing, Some(Rail::Paypal), Some("B1"), RailStep::Wait),
            (Paid, Some(Rail::Stripe), Some("tr_1"), RailStep::Wait),
        ];
        for (status, rail, reference, want) in cases {
            assert_eq!(
                at(status, rail, reference),
                want,
                "{status:?} {rail:?} {reference:?}"
            );
        }
    }

    #[test]
    fn a_rail_is_sent_the_payouts_amount_in_its_own_unit_or_nothing() {
        let cur = |c: &str| Currency::parse("currency", c).unwrap();
        let dec = |s: &str| s.parse::<Decimal>().unwrap();
        // (rail, currency, amount, what is sent: Stripe's minor units as
        // digits, PayPal's decimal string as text), None: refused.
        let cases = [
            (Rail::Stripe, "USD", "35", Some("3500")),
            (Rail::Stripe, "USD", "12.5", Some("1250")),
            (Rail::Stripe, "JPY", "500", Some("500")),
            (Rail::Stripe, "KWD", "1.23", Some("1230")),
            (Rail::Stripe, "KWD", "1.234", None),
            // Stripe counts ISK in hundredths, MGA in whole ariary.
            (Rail::Stripe, "ISK", "5000", Some("500000")),
            (Rail::Stripe, "MGA", "1200", Some("1200")),
            (Rail::Stripe, "MGA", "1200.5", None),
            (Rail::Paypal, "USD", "12.5", Some("12.50")),
            (Rail::Paypal, "EUR", "100", Some("100.00")),
            // PayPal takes HUF, JPY and TWD in whole units.
            (Rail::Paypal, "HUF", "1000", Some("1000")),
            (Rail::Paypal, "HUF", "1000.00", Some("1000")),
            (Rail::Paypal, "TWD", "99.5", None),
            (Rail::Paypal, "JPY", "500", Some("500")),
        ];
        for (rail, c, amount, want) in cases {
            let got = rail.amount(cur(c), dec(amount));
            let shown = got.as_ref().ok().map(|a| match rail {
                Rail::Stripe => a.mantissa().to_string(),
                Rail::Paypal => a.to_string(),
            });
            assert_eq!(shown.as_deref(), want, "{rail:?} {c} {amount}");
            if let Err((code, message)) = got {
                assert_eq!(code, AMOUNT_NOT_PAYABLE);
                assert!(message.contains(c), "{message}");
            }
        }
    }

    #[test]
    fn a_rail_pays_only_the_method_of_its_provider() {
        use PayoutMethod as M;
        let cases = [
            (Some(M::Stripe), Rail::Stripe, Some(Rail::Stripe)),
            (Some(M::Paypal), Rail::Paypal, Some(Rail::Paypal)),
            (Some(M::Paypal), Rail::Stripe, None),
            (Some(M::Stripe), Rail::Paypal, None),
            (Some(M::Manual), Rail::Stripe, None),
            (Some(M::Wise), Rail::Paypal, None),
            (None, Rail::Stripe, None),
        ];
        for (method, paying, want) in cases {
            assert_eq!(
                Rail::for_method(method, paying),
                want,
                "{method:?} {paying:?}"
            );
        }
    }

    #[test]
    fn a_provider_event_moves_only_the_attempt_it_is_about() {
        let mut p: Payout = serde_json::from_value(serde_json::json!({
            "id": "po_1", "affiliateId": "aff_1", "campaignId": "cmp_1", "amount": 10,
            "currency": "USD", "status": "PROCESSING", "method": "PAYPAL",
            "requestedAt": "2026-11-01T00:00:00.000Z", "conversionCount": 1,
            "adjustmentTotal": 0, "paymentAttempt": 2, "paymentReference": "B2",
            "createdAt": "2026-11-01T00:00:00.000Z", "updatedAt": "2026-11-01T00:00:00.000Z"
        }))
        .unwrap();
        let result = |batch: &str, outcome| PayoutResult {
            payout_id: "po_1".into(),
            batch_id: Some(batch.into()),
            attempt_key: None,
            outcome,
        };
        let paid = PayoutOutcome::Paid {
            reference: "ITEM".into(),
        };
        let failed = PayoutOutcome::Failed {
            code: "RETURNED".into(),
            message: "m".into(),
        };
        assert!(matches!(
            result("B2", paid.clone()).command(&p),
            Ok(Command::ConfirmPayment { .. })
        ));
        assert!(matches!(
            result("B2", failed.clone()).command(&p),
            Ok(Command::PaymentFailed { .. })
        ));
        assert!(
            result("B1", paid.clone()).command(&p).is_err(),
            "an earlier attempt's batch"
        );
        // The answer that named the batch was lost: the attempt's key says it.
        let keyed = |key: &str| PayoutResult {
            attempt_key: Some(key.into()),
            ..result("B2", paid.clone())
        };
        p.payment_reference = None;
        assert!(
            result("B2", paid.clone()).command(&p).is_err(),
            "no key: a batch the payout does not hold"
        );
        assert!(matches!(
            keyed("po_1-2").command(&p),
            Ok(Command::ConfirmPayment { .. })
        ));
        assert!(
            keyed("po_1-1").command(&p).is_err(),
            "an earlier attempt's key"
        );
        p.status = PayoutStatus::Paid;
        assert!(
            result("B2", failed).command(&p).is_err(),
            "a PAID payout never moves"
        );
        p.status = PayoutStatus::Approved;
        assert!(
            result("B2", paid).command(&p).is_err(),
            "not waiting on the provider"
        );
    }

    #[test]
    fn only_an_unknown_outcome_keeps_the_attempt_open() {
        let refused = ProviderAnswer::Refused {
            code: "balance_insufficient".into(),
            message: "m".into(),
        };
        assert!(matches!(
            refused.command(),
            Some(Command::PaymentFailed { code, .. }) if code == "balance_insufficient"
        ));
        let paid = ProviderAnswer::Paid {
            reference: "tr_1".into(),
        };
        assert!(matches!(
            paid.command(),
            Some(Command::ConfirmPayment { reference: Some(r) }) if r == "tr_1"
        ));
        let lost = ProviderAnswer::NoAnswer {
            cause: "timeout".into(),
        };
        assert_eq!(lost.command(), None);
    }
}
