//! The words every commission module shares: how a commission is paid,
//! why a payment earns nothing, and the kind of payment. Their own home,
//! below the campaign, the conversion and the commission rules that use them.

use rust_decimal::Decimal;

use crate::enums::wire_enum;
use crate::money::{Currency, MAX_AMOUNT_DIGITS};
use crate::validation::Issues;

wire_enum! {
    /// `PERCENTAGE`: a percentage of each payment. `FIXED`: a fixed amount in the campaign's
    /// currency.
    pub enum CommissionType {
        /// A percentage of the payment.
        Percentage = "PERCENTAGE",
        /// A fixed amount in the campaign's currency.
        Fixed = "FIXED",
    }
}

wire_enum! {
    /// Why a recorded payment earns 0. `UNATTRIBUTED`: no affiliate. `AFFILIATE_NOT_ACTIVE`:
    /// the affiliate is PENDING, SUSPENDED or REJECTED. `NOT_RECURRING`: a later payment of the
    /// customer and the campaign pays the first one only. `RECURRING_WINDOW_ENDED`: a later
    /// payment at or after `firstPaymentAt + recurringMonthsLimit` calendar months.
    /// `CURRENCY_MISMATCH`: a FIXED commission whose currency is not the payment's (no exchange
    /// rates are applied). `NO_LEAD_COMMISSION`: a LEAD, and the campaign has no
    /// `leadCommission` and no rule for leads. `LEAD_ALREADY_REWARDED`: a LEAD of a customer
    /// whose lead was paid before.
    pub enum CommissionReason {
        /// No affiliate was found for the payment.
        Unattributed = "UNATTRIBUTED",
        /// The affiliate is not ACTIVE (pending, suspended or rejected).
        AffiliateNotActive = "AFFILIATE_NOT_ACTIVE",
        /// A later payment of the customer, and the campaign pays on the first only.
        NotRecurring = "NOT_RECURRING",
        /// A later payment after `firstPaymentAt + recurringMonthsLimit` months.
        RecurringWindowEnded = "RECURRING_WINDOW_ENDED",
        /// A FIXED commission whose currency is not the payment's currency.
        CurrencyMismatch = "CURRENCY_MISMATCH",
        /// A LEAD, and the campaign pays nothing for leads.
        NoLeadCommission = "NO_LEAD_COMMISSION",
        /// A LEAD of a customer whose lead was paid before (once per referral).
        LeadAlreadyRewarded = "LEAD_ALREADY_REWARDED",
    }
}

wire_enum! {
    /// The kind of conversion: `SALE`, a payment; `LEAD`, a sign-up (amount 0, paid once per
    /// customer from `leadCommission` or a rule for leads; not a payment).
    pub enum ConversionType {
        Sale = "SALE",
        Lead = "LEAD",
    }
}

/// A payment is a sale unless it says otherwise.
impl Default for ConversionType {
    fn default() -> Self {
        ConversionType::Sale
    }
}

/// A SALE's amount is above 0 (a LEAD's is 0), then [`check_money`].
pub fn check_amount(
    kind: ConversionType,
    amount: Decimal,
    currency: Option<Currency>,
    issues: &mut Issues,
) {
    match kind {
        ConversionType::Sale if amount <= Decimal::ZERO => {
            issues.add(&["amount"], "too_small", "amount must be greater than 0");
        }
        ConversionType::Lead if !amount.is_zero() => {
            issues.add(
                &["amount"],
                "invalid_value",
                "amount must be 0 or left out for a LEAD",
            );
        }
        _ => check_money(amount, currency, issues),
    }
}

/// Any amount of money at `amount`: below 10^12 in magnitude and exact to
/// the currency's minor unit (when the currency is known).
pub fn check_money(amount: Decimal, currency: Option<Currency>, issues: &mut Issues) {
    if amount.abs() >= Decimal::from(10_i64.pow(MAX_AMOUNT_DIGITS)) {
        let code = match amount.is_sign_negative() {
            true => "too_small",
            false => "too_big",
        };
        issues.add(
            &["amount"],
            code,
            format!("amount must be less than 10^{MAX_AMOUNT_DIGITS} in magnitude"),
        );
    }
    if let Some(c) = currency {
        issues.check(c.check_fits("amount", amount));
    }
}
