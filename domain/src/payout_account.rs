//! An affiliate's account at a payment provider and what a provider says
//! of a payment (contract section 14): the leaf types the affiliate and
//! payout records hold, apart from the paying rules (`payout_rail`), so
//! neither record imports the rules that read it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::enums::wire_enum;
use crate::timestamp::serde_ts;

wire_enum! {
    /// A provider that moves a payout's money.
    pub enum Rail {
        /// Stripe Connect: a transfer to the affiliate's connected account.
        Stripe = "STRIPE",
        /// PayPal Payouts: a payout to the affiliate's `payoutEmail`.
        Paypal = "PAYPAL",
    }
}

/// Why a provider did not pay (the provider's own code and message, or
/// the product's for a refusal made before any call).
#[derive(utoipa::ToSchema, Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentError {
    /// The provider's error code (`balance_insufficient`, `RECEIVER_UNREGISTERED`), or
    /// `no_destination` when the affiliate has no usable payout destination.
    #[schema(example = json!("balance_insufficient"))]
    pub code: String,
    pub message: String,
    #[serde(with = "serde_ts")]
    #[schema(value_type = crate::timestamp::Timestamp)]
    pub at: DateTime<Utc>,
}

impl PaymentError {
    /// The provider's code and message, at `at`.
    pub fn new(code: String, message: String, at: DateTime<Utc>) -> Self {
        PaymentError { code, message, at }
    }
}

wire_enum! {
    /// Whether a connected account can receive payouts.
    pub enum PayoutAccountStatus {
        /// Onboarding not finished.
        Pending = "PENDING",
        /// Payouts enabled: transfers to it are made.
        Active = "ACTIVE",
        /// Disabled by the provider until its requirements are met.
        Restricted = "RESTRICTED",
    }
}

/// An affiliate's account at a provider, where STRIPE payouts go.
#[derive(utoipa::ToSchema, Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PayoutAccount {
    /// Always STRIPE (a Stripe Connect Express account).
    pub provider: Rail,
    /// The connected account's id.
    #[schema(example = json!("acct_1Nv0FGQ9RKHgCVdK"))]
    pub account_id: String,
    pub status: PayoutAccountStatus,
    /// What Stripe still needs (`requirements.currently_due`).
    pub requirements_due: Vec<String>,
    #[serde(with = "serde_ts")]
    #[schema(value_type = crate::timestamp::Timestamp)]
    pub updated_at: DateTime<Utc>,
}

impl PayoutAccount {
    /// A connected account just created: PENDING until Stripe says otherwise.
    pub fn created(account_id: String, requirements_due: Vec<String>, now: DateTime<Utc>) -> Self {
        PayoutAccount {
            provider: Rail::Stripe,
            account_id,
            status: PayoutAccountStatus::Pending,
            requirements_due,
            updated_at: now,
        }
    }
}

/// What Stripe's `account.updated` says of a connected account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountUpdate {
    pub account_id: String,
    pub payouts_enabled: bool,
    pub disabled_reason: Option<String>,
    pub currently_due: Vec<String>,
}

impl AccountUpdate {
    /// Its status: payouts enabled -> ACTIVE, a disabled reason ->
    /// RESTRICTED, else PENDING.
    pub fn status(&self) -> PayoutAccountStatus {
        match (self.payouts_enabled, &self.disabled_reason) {
            (true, _) => PayoutAccountStatus::Active,
            (false, Some(_)) => PayoutAccountStatus::Restricted,
            (false, None) => PayoutAccountStatus::Pending,
        }
    }

    /// The account as it now is; none when nothing shown changed.
    pub fn applied(&self, before: &PayoutAccount, now: DateTime<Utc>) -> Option<PayoutAccount> {
        let mut after = before.clone();
        after.status = self.status();
        after.requirements_due = self.currently_due.clone();
        after.updated_at = now;
        (after.status != before.status || after.requirements_due != before.requirements_due)
            .then_some(after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_update_reads_as_stripe_describes_it() {
        let u = |enabled: bool, reason: Option<&str>| AccountUpdate {
            account_id: "acct_1".into(),
            payouts_enabled: enabled,
            disabled_reason: reason.map(str::to_string),
            currently_due: vec![],
        };
        let cases = [
            (u(true, None), PayoutAccountStatus::Active),
            (u(true, Some("x")), PayoutAccountStatus::Active),
            (
                u(false, Some("requirements.past_due")),
                PayoutAccountStatus::Restricted,
            ),
            (u(false, None), PayoutAccountStatus::Pending),
        ];
        for (update, want) in cases {
            assert_eq!(update.status(), want, "{update:?}");
        }
        let now = Utc::now();
        let before = PayoutAccount::created("acct_1".into(), vec!["tos".into()], now);
        let after = u(true, None).applied(&before, now).expect("changed");
        assert_eq!(after.status, PayoutAccountStatus::Active);
        assert!(after.requirements_due.is_empty());
        assert_eq!(u(true, None).applied(&after, now), None, "nothing new");
    }
}
