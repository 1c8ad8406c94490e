//! Manual adjustments (contract section 15): a bonus (positive) or a manual
//! clawback (negative) a merchant books on an affiliate's balance in one
//! currency. It is an [`Adjustment`] without a conversion, so it joins the
//! affiliate's payable pool beside the clawbacks of reversed paid
//! conversions and the payout job nets it into the next payout in that
//! currency as it nets them; the affiliate's `earned` moves by its amount.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::Deserialize;

use crate::affiliate::{Affiliate, AffiliateStatus};
use crate::commission_terms::check_money;
use crate::conversion::{Adjustment, Earning};
use crate::error::Error;
use crate::event::{Event, EventType};
use crate::field;
use crate::ids::{new_id, IdKind};
use crate::money::{json_number, Currency};
use crate::validation::Issues;

/// `POST /api/v1/affiliates/{id}/adjustments`: a bonus or a manual clawback.
#[derive(utoipa::ToSchema, Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = AdjustmentRequest)]
pub struct NewAdjustment {
    /// Positive: a bonus; negative: a manual clawback; never 0. Below 10^12 in magnitude, with at
    /// most as many decimals as the currency's minor unit (USD 2, JPY 0, KWD 3).
    #[serde(with = "json_number")]
    #[schema(value_type = field::SignedAmount)]
    pub amount: Decimal,
    /// ISO 4217, any letter case (see `CurrencyCode`): the pool, and so the payout, it joins.
    #[schema(value_type = crate::money::Currency)]
    pub currency: String,
    /// Why, as the affiliate sees it in the portal: 1-500 characters, not blank, one line.
    #[schema(value_type = field::AdjustmentReason)]
    pub reason: String,
    /// The merchant's idempotency key, unique in the account and mode: the same key with the
    /// same affiliate, amount, currency and reason answers 200 with the original adjustment
    /// (header `Idempotent-Replayed: true`) and writes nothing; with anything else, 409
    /// ALREADY_EXISTS.
    #[serde(default)]
    #[schema(value_type = Option<field::Key>)]
    pub external_id: Option<String>,
}

/// A validated request for a manual adjustment.
#[derive(Debug, Clone, PartialEq)]
pub struct AdjustmentRequest {
    /// Exact to the currency's minor unit, written with its exponent.
    pub amount: Decimal,
    pub currency: Currency,
    pub reason: String,
    pub external_id: Option<String>,
}

impl NewAdjustment {
    /// The request, every issue reported at once with its path: the amount
    /// not 0, below 10^12 in magnitude and exact to the currency; the reason
    /// and `externalId` within their lengths, without control characters.
    pub fn validate(self) -> Result<AdjustmentRequest, Error> {
        let mut issues = Issues::new();
        let currency = issues.check(Currency::parse("currency", &self.currency));
        check_amount(self.amount, currency, &mut issues);
        issues.check(field::AdjustmentReason::parse("reason", &self.reason));
        if let Some(x) = &self.external_id {
            issues.check(field::Key::parse("externalId", x));
        }
        issues.finish()?;
        let currency = currency.ok_or_else(|| Error::internal("a currency issue not recorded"))?;
        Ok(AdjustmentRequest {
            amount: currency.round(self.amount),
            currency,
            reason: self.reason,
            external_id: self.external_id,
        })
    }
}

/// An adjustment's amount: not 0, then any amount's rules.
fn check_amount(amount: Decimal, currency: Option<Currency>, issues: &mut Issues) {
    if amount.is_zero() {
        issues.add(
            &["amount"],
            "invalid_value",
            "amount must not be 0 (positive: a bonus; negative: a clawback)",
        );
    }
    check_money(amount, currency, issues);
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
            return Err(Error::InvalidState {
                resource: "affiliate",
                current: affiliate.status.as_str().into(),
                action: "an adjustment",
            });
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
