//! The words every commission module shares: how a commission is paid,
//! why a payment earns nothing, and the kind of payment. Their own home,
//! below the campaign, the conversion and the commission rules that use them.

use crate::enums::wire_enum;

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
    /// rates are applied).
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
    }
}

wire_enum! {
    /// The kind of payment; `SALE` is the only one.
    pub enum ConversionType {
        Sale = "SALE",
    }
}

/// A payment is a sale unless it says otherwise.
impl Default for ConversionType {
    fn default() -> Self {
        ConversionType::Sale
    }
}
