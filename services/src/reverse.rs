//! Reversing (refunding) a conversion, for the merchant or for a payment
//! provider, and giving a provider's reversal back: read the conversion and the payout holding it, decide in
//! `Conversion::reverse` (or `restore`), commit the change with its
//! rollups, totals, clawback and event; a concurrent change reads again.

use crate::app::App;
use chrono::{DateTime, Utc};

use crate::retry::{retry_on_conflict, Attempt};
use domain::connector::{Refund, Restore};
use domain::conversion::{Conversion, ReverseRequest};
use domain::conversion_changes::ReversedBy;
use domain::error::Result;
use domain::money::Currency;
use domain::tenant::Tenant;
use store::conversions;

/// Times a reversal is planned again after a concurrent write to the conversion.
const REVERSE_ATTEMPTS: usize = 4;

/// Reverses a conversion, in full or in part, as `Conversion::reverse`
/// decides; the conversion as reversed.
pub async fn reverse(
    app: &App,
    tenant: &Tenant,
    id: &str,
    request: &ReverseRequest,
    now: DateTime<Utc>,
) -> Result<Conversion> {
    let store = &app.store;
    retry_on_conflict(REVERSE_ATTEMPTS, "conversion", || {
        let reason = request.reason.clone();
        async move {
            let facts = conversions::read_reversal(store, tenant, id).await?;
            let r = facts.conversion.reverse(
                ReversedBy::Merchant,
                facts.payout_status.into(),
                request.amount,
                reason,
                now,
            )?;
            Ok(
                match conversions::commit_reversal(store, tenant, &facts.conversion, &r).await? {
                    true => Attempt::Done(r.reversed),
                    false => Attempt::Conflict,
                },
            )
        }
    })
    .await
}

/// What a provider's reversal came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refunded {
    Applied,
    /// Reversed as far as the refund asks already.
    NothingDue,
    /// The refund's currency, and the payment's: not this payment's refund.
    OtherCurrency(Currency, Currency),
}

/// Reverses a conversion for a provider's refund, lost dispute or second
/// record of one payment, by what the refund says is due now (a running
/// total is compared with what is reversed already), as
/// `Conversion::refund` decides (it cannot be refused); a concurrent change
/// reads again.
pub async fn refund(
    app: &App,
    tenant: &Tenant,
    id: &str,
    r: &Refund,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<Refunded> {
    let store = &app.store;
    retry_on_conflict(REVERSE_ATTEMPTS, "conversion", || async move {
        let facts = conversions::read_reversal(store, tenant, id).await?;
        let c = &facts.conversion;
        let part = match r.reversal(c.amount, c.reversed_amount, c.currency) {
            Ok(Some(part)) => part,
            Ok(None) => return Ok(Attempt::Done(Refunded::NothingDue)),
            Err(own) => return Ok(Attempt::Done(Refunded::OtherCurrency(own, c.currency))),
        };
        let payout = facts.payout_status.into();
        let reversal = c.reverse(
            ReversedBy::Provider,
            payout,
            Some(part),
            Some(reason.to_string()),
            now,
        )?;
        Ok(
            match conversions::commit_reversal(store, tenant, c, &reversal).await? {
                true => Attempt::Done(Refunded::Applied),
                false => Attempt::Conflict,
            },
        )
    })
    .await
}

/// What a provider's restoral came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restored {
    Applied,
    /// Nothing is reversed to give back.
    NothingDue,
    /// The restoral's currency, and the payment's: not this payment's.
    OtherCurrency(Currency, Currency),
}

/// Gives back what a provider's reversal took (a refund that failed, a
/// won chargeback), as `Conversion::restore` decides; a concurrent change
/// reads again.
pub async fn restore(
    app: &App,
    tenant: &Tenant,
    id: &str,
    r: &Restore,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<Restored> {
    let store = &app.store;
    retry_on_conflict(REVERSE_ATTEMPTS, "conversion", || async move {
        let facts = conversions::read_reversal(store, tenant, id).await?;
        let c = &facts.conversion;
        let part = match r.part(c.currency) {
            Ok(part) => part,
            Err(own) => return Ok(Attempt::Done(Restored::OtherCurrency(own, c.currency))),
        };
        let payout = facts.payout_status.into();
        let Some(restoral) = c.restore(payout, part, reason.to_string(), now)? else {
            return Ok(Attempt::Done(Restored::NothingDue));
        };
        Ok(
            match conversions::commit_reversal(store, tenant, c, &restoral).await? {
                true => Attempt::Done(Restored::Applied),
                false => Attempt::Conflict,
            },
        )
    })
    .await
}
