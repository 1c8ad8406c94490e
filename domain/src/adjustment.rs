//! Manual adjustments (contract section 15): a bonus (positive) or a manual
//! clawback (negative) a merchant books on an affiliate's balance in one
//! currency. It is an [`Adjustment`] without a conversion, so it joins the
//! affiliate's payable pool beside the clawbacks of reversed paid
//! conversions and the payout job nets it into the next payout in that
//! currency as it nets them; the affiliate's `earned` moves by its amount.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

use crate::affiliate::{Affiliate, AffiliateStatus};
use crate::change::Event;
use crate::conversion::{Adjustment, Earning};
use crate::error::Error;
use crate::event::EventType;
use crate::ids::{new_id, IdKind};
use crate::money::Currency;

/// A validated request for a manual adjustment.
#[derive(Debug, Clone, PartialEq)]
pub struct AdjustmentRequest {
    /// Exact to the currency's minor unit, written with its exponent.
    pub amount: Decimal,
    pub currency: Currency,
    pub reason: String,
    pub external_id: Option<String>,
}

/// What a request comes to, given the affiliate and the adjustment its
/// `externalId` already names.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// The same request again: the original, nothing written.
    Replay(Adjustment),
    /// A new adjustment to commit.
    Book(Booking),
}

/// A new manual adjustment and what moves with it in its transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Booking {
    pub adjustment: Adjustment,
    /// The affiliate's `earned` moves by the amount, while its status is the
    /// one decided from.
    pub earning: Earning,
    /// `adjustment.created`.
    pub event: Event,
}

impl AdjustmentRequest {
    /// Decides on `affiliate` (the tenant's, read for this request), with
    /// the adjustment `claimed` the request's `externalId` names, if any. A
    /// replay is answered whatever the affiliate's status now; a new one is
    /// booked only for an affiliate who was accepted into the programme
    /// (ACTIVE, or SUSPENDED: its balance is still settled), 409
    /// INVALID_STATE for PENDING and REJECTED.
    pub fn decide(
        &self,
        affiliate: &Affiliate,
        claimed: Option<&Adjustment>,
        now: DateTime<Utc>,
    ) -> Result<Decision, Error> {
        if let Some(original) = claimed {
            return match original.replays(self, &affiliate.id) {
                true => Ok(Decision::Replay(original.clone())),
                false => Err(Error::AlreadyExists(format!(
                    "the externalId {} names another adjustment ({}); send the same body to get it again",
                    self.external_id.as_deref().unwrap_or_default(),
                    original.id
                ))),
            };
        }
        if !matches!(
            affiliate.status,
            AffiliateStatus::Active | AffiliateStatus::Suspended
        ) {
            return Err(Error::state(
                "affiliate",
                affiliate.status.as_str(),
                "an adjustment",
            ));
        }
        let adjustment = Adjustment {
            id: new_id(IdKind::Adjustment),
            affiliate_id: affiliate.id.clone(),
            campaign_id: Some(affiliate.campaign_id.clone()),
            currency: self.currency,
            amount: self.amount,
            conversion_id: None,
            reason: Some(self.reason.clone()),
            external_id: self.external_id.clone(),
            payout_id: None,
            created_at: now,
        };
        let event = Event::new(EventType::AdjustmentCreated, &adjustment, now);
        let earning = Earning {
            affiliate_id: affiliate.id.clone(),
            currency: self.currency,
            amount: self.amount,
            while_status: Some(affiliate.status),
        };
        Ok(Decision::Book(Booking {
            adjustment,
            earning,
            event,
        }))
    }
}

impl Adjustment {
    /// A merchant's adjustment (a bonus or a manual clawback), not the
    /// clawback of a conversion.
    pub fn is_manual(&self) -> bool {
        self.conversion_id.is_none()
    }

    /// Whether `request` for `affiliate_id` is the one this adjustment was
    /// booked from: the same affiliate, amount, currency and reason.
    fn replays(&self, request: &AdjustmentRequest, affiliate_id: &str) -> bool {
        self.affiliate_id == affiliate_id
            && self.amount == request.amount
            && self.currency == request.currency
            && self.reason.as_deref() == Some(request.reason.as_str())
    }
}

#[cfg(test)]
#[path = "adjustment_tests.rs"]
mod tests;
