//! Conversions: the stored record and its statuses; the requests and the
//! money they move are submodules. What changes a conversion (releases,
//! reversals) is `crate::conversion_changes`; its view is `wire::conversion`.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::affiliate::AffiliateStatus;
use crate::commission::CommissionReason;
use crate::commission_plan::{CommissionSource, SourceKind};
pub use crate::commission_terms::ConversionType;
use crate::enums::wire_enum;
use crate::error::Error;
use crate::field;
use crate::metadata::{self, Metadata};
use crate::money::Currency;
use crate::referral::CustomerKey;
use crate::risk::Risk;
use crate::timestamp::{self, serde_ts, serde_ts_opt};
use crate::validation::Issues;

wire_enum! {
    /// `PENDING`: attributed, inside the hold period (`payableAt` not reached or the payout job
    /// has not run). `APPROVED`: payable (set by the daily payout job once `payableAt` has
    /// passed). `PAID`: paid out in a payout. `REVERSED`: refunded or clawed back (`POST
    /// /conversions/{id}/reverse`). `UNATTRIBUTED`: no affiliate was found; kept with
    /// commission 0 so the `externalId` stays consumed. Transitions: PENDING -> APPROVED ->
    /// PAID by the payout flow; PENDING, APPROVED (in no payout) and UNATTRIBUTED -> REVERSED
    /// by reverse; REVERSED -> back (a provider's refund that failed, a won chargeback: see
    /// `conversion.restored`). `ON_HOLD`: attributed with a HIGH risk flag on a campaign that holds
    /// flagged conversions; the payout job never approves it; release (-> PENDING, or APPROVED
    /// once `payableAt` has passed) or reverse (-> REVERSED) ends the hold.
    #[derive(Hash, PartialOrd, Ord)]
    pub enum ConversionStatus {
        /// Attributed, inside the hold period.
        Pending = "PENDING",
        /// Payable (moved by the payout job once the hold period is over).
        Approved = "APPROVED",
        /// Paid out.
        Paid = "PAID",
        /// Refunded or clawed back.
        Reversed = "REVERSED",
        /// No affiliate was found; kept with commission 0 so the externalId stays consumed.
        Unattributed = "UNATTRIBUTED",
        /// Held for review: a HIGH risk flag (see `risk`); never approved or paid until released.
        OnHold = "ON_HOLD",
    }
}

crate::status::statuses!(ConversionStatus);

impl ConversionStatus {
    /// States a conversion may be reversed from (when it is in no payout).
    pub fn reversible(self) -> bool {
        matches!(
            self,
            ConversionStatus::Pending
                | ConversionStatus::Approved
                | ConversionStatus::Unattributed
                | ConversionStatus::OnHold
        )
    }
}

wire_enum! {
    /// How the affiliate was found: the postback's `clickId` (CLICK), `sessionId` (SESSION),
    /// `affiliateCode` (CODE), a provider payment's registered promotion code
    /// (PROMOTION_CODE, ext), the e-mail hash matched against a referral (EMAIL), the
    /// `customerId` matched against a referral (CUSTOMER, ext), or nothing (NONE). A referral
    /// keyed by the session or click a payment came through (a customer named by no id or
    /// e-mail) answers as SESSION or CLICK.
    pub enum AttributionMethod {
        /// The postback's `clickId`.
        Click = "CLICK",
        /// The postback's `sessionId` (the browser script's session of a click).
        Session = "SESSION",
        /// The postback's `affiliateCode`.
        Code = "CODE",
        /// (ext) The promotion code a provider's payment carried, registered for the affiliate.
        PromotionCode = "PROMOTION_CODE",
        /// `customerEmailHash` / `customerEmail` matched a referral.
        Email = "EMAIL",
        /// (ext) `customerId` matched a referral (a customer bound earlier).
        Customer = "CUSTOMER",
        /// No affiliate found.
        None = "NONE",
    }
}

/// A conversion as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Conversion {
    pub id: String,
    pub external_id: String,
    pub campaign_id: Option<String>,
    pub affiliate_id: Option<String>,
    pub amount: Decimal,
    pub currency: Currency,
    #[serde(default)]
    pub conversion_type: ConversionType,
    pub commission: Decimal,
    pub commission_reason: Option<CommissionReason>,
    pub status: ConversionStatus,
    pub attribution: AttributionMethod,
    /// The referral (customer key) the payment belongs to.
    pub customer_ref: Option<String>,
    #[serde(default)]
    pub is_recurring: bool,
    pub click_id: Option<String>,
    pub session_id: Option<String>,
    pub customer_id: Option<String>,
    /// Days the commission stays PENDING (the campaign's, at postback time).
    pub hold_days: u32,
    /// `occurredAt + holdDays`: when the payout job may approve it.
    #[serde(with = "serde_ts")]
    pub payable_at: DateTime<Utc>,
    pub payout_id: Option<String>,
    #[serde(default)]
    pub metadata: Metadata,
    #[serde(with = "serde_ts")]
    pub occurred_at: DateTime<Utc>,
    #[serde(with = "serde_ts")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "serde_ts")]
    pub updated_at: DateTime<Utc>,
    #[serde(with = "serde_ts_opt", default)]
    pub reversed_at: Option<DateTime<Utc>>,
    pub reversal_reason: Option<String>,
    /// The part of `amount` reversed so far (partial refunds add up). Not
    /// stored while 0, so an item written before any reversal stays as small.
    #[serde(default, skip_serializing_if = "Decimal::is_zero")]
    pub reversed_amount: Decimal,
    /// The part of `commission` given back so far (not stored while 0).
    #[serde(default, skip_serializing_if = "Decimal::is_zero")]
    pub commission_reversed: Decimal,
    /// The part of `commissionReversed` owed back through clawback
    /// adjustments rather than cut from a payout: a refund while a payout
    /// held or had paid the conversion (not stored while 0).
    #[serde(default, skip_serializing_if = "Decimal::is_zero")]
    pub commission_clawed_back: Decimal,
    /// Risk flags found when it was recorded (not stored while there are none).
    #[serde(default, skip_serializing_if = "Risk::is_clear")]
    pub risk: Risk,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_id: Option<String>,
    /// What decided the commission (absent on conversions recorded before
    /// sources were kept: the view derives CAMPAIGN or NONE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commission_source: Option<CommissionSource>,
    /// The customer's n-th attributed payment in the campaign, when it is a
    /// payment of a known customer (not a lead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment_number: Option<u32>,
}

impl Conversion {
    /// What decided its commission (one recorded before sources were kept:
    /// CAMPAIGN, or NONE when it earned nothing by a rule).
    pub fn source(&self) -> CommissionSource {
        self.commission_source.clone().unwrap_or_else(|| {
            CommissionSource::of(match self.commission_reason {
                Some(_) => SourceKind::None,
                None => SourceKind::Campaign,
            })
        })
    }

    /// When a conversion that occurred at `occurred_at` leaves its hold of
    /// `hold_days` days, and the payout job may approve it.
    pub fn payable_after(occurred_at: DateTime<Utc>, hold_days: u32) -> DateTime<Utc> {
        occurred_at + chrono::Duration::days(i64::from(hold_days))
    }

    /// Whether a late attribution may still take it: UNATTRIBUTED, in no
    /// payout, and never reversed in part.
    pub fn awaits_attribution(&self) -> bool {
        self.status == ConversionStatus::Unattributed
            && self.payout_id.is_none()
            && self.reversed_amount.is_zero()
    }

    /// The commission still earned: `commission - commissionReversed`.
    pub fn net_commission(&self) -> Decimal {
        self.commission - self.commission_reversed
    }

    /// What the rollups count for it: a REVERSED conversion's recorded
    /// amount and commission (under REVERSED), any other's net of its
    /// partial reversals.
    pub fn rollup_figures(&self) -> (Decimal, Decimal) {
        match self.status {
            ConversionStatus::Reversed => (self.amount, self.commission),
            _ => (self.amount - self.reversed_amount, self.net_commission()),
        }
    }

    /// The index sort key of every conversion list: newest first by `occurredAt`.
    pub fn sort_key(&self) -> String {
        format!("{}#{}", timestamp::format(&self.occurred_at), self.id)
    }

    /// Where the conversion stands on its way to a payout.
    pub fn payout_stage(&self) -> PayoutStage {
        match (self.status, &self.payout_id) {
            (_, Some(po)) => PayoutStage::InPayout(po.clone()),
            (ConversionStatus::Pending, None) => PayoutStage::AwaitingHold(self.payable_at),
            (ConversionStatus::Approved, None) => PayoutStage::Payable,
            _ => PayoutStage::Outside,
        }
    }

    /// PENDING -> APPROVED once the hold period is over at `now`.
    pub fn approve(&self, now: DateTime<Utc>) -> Result<Conversion, Error> {
        if self.status != ConversionStatus::Pending || self.payable_at > now {
            return Err(self.wrong_state("approve"));
        }
        Ok(self.moved_to(ConversionStatus::Approved, now))
    }

    /// The conversion claimed into payout `payout_id` (its status unchanged).
    pub fn claimed(&self, payout_id: &str) -> Conversion {
        Conversion {
            payout_id: Some(payout_id.to_string()),
            ..self.clone()
        }
    }

    /// APPROVED -> PAID with its payout `payout_id`.
    pub fn pay(&self, payout_id: &str, now: DateTime<Utc>) -> Result<Conversion, Error> {
        if self.status != ConversionStatus::Approved || self.payout_id.as_deref() != Some(payout_id)
        {
            return Err(self.wrong_state("pay"));
        }
        Ok(self.moved_to(ConversionStatus::Paid, now))
    }

    /// The conversion in `status` at `now`.
    pub(crate) fn moved_to(&self, status: ConversionStatus, now: DateTime<Utc>) -> Conversion {
        let mut c = self.clone();
        c.status = status;
        c.updated_at = now;
        c
    }

    pub(crate) fn wrong_state(&self, action: &'static str) -> Error {
        Error::state("conversion", self.status.as_str(), action)
    }

    /// The conversion as a released payout returns it to the pool, and the
    /// adjustment that gives back what refunds clawed back while the payout
    /// held it: the pool pays its net commission, so those clawbacks would
    /// otherwise be taken twice.
    pub fn released(&self, now: DateTime<Utc>) -> (Conversion, Option<Adjustment>) {
        let mut c = self.clone();
        c.payout_id = None;
        let refund = (self.commission_clawed_back > Decimal::ZERO).then(|| {
            c.commission_clawed_back = Decimal::ZERO;
            Adjustment::clawback(self, self.commission_clawed_back, now)
        });
        (c, refund)
    }

    /// The conversion after reversing `part` of what is left (all of it
    /// when `None`), its commission cut in proportion.
    pub(crate) fn reversed_part(
        &self,
        part: Option<Decimal>,
        now: DateTime<Utc>,
    ) -> Result<Conversion, Error> {
        let left = self.amount - self.reversed_amount;
        let lead = self.conversion_type == ConversionType::Lead;
        let mut issues = Issues::new();
        if lead && part.is_some() {
            // A lead has no amount: it is reversed whole, its commission with it.
            issues.add(
                &["amount"],
                "invalid_value",
                "a LEAD has no amount to reverse in part: reverse it whole (no amount)",
            );
        }
        let part = part.unwrap_or(left);
        if part <= Decimal::ZERO && !lead {
            issues.add(&["amount"], "too_small", "amount must be greater than 0");
        } else if part > left {
            issues.add(
                &["amount"],
                "too_big",
                format!(
                    "amount must be at most what is left to reverse ({left} {})",
                    self.currency.code()
                ),
            );
        }
        issues.check(self.currency.check_fits("amount", part));
        issues.finish()?;
        let mut c = self.clone();
        c.reversed_amount = self.reversed_amount + part;
        c.commission_reversed = if c.reversed_amount == self.amount {
            self.commission
        } else {
            let share = self.commission * c.reversed_amount / self.amount;
            self.currency.round(share).min(self.commission)
        };
        if c.reversed_amount == self.amount {
            c.status = ConversionStatus::Reversed;
        }
        c.reversed_at = Some(now);
        c.updated_at = now;
        Ok(c)
    }
}

/// What a reversal needs to know of the payout holding a conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldingPayout {
    /// No payout holds it (or none was found).
    None,
    /// A payout that is still open, settling or releasing holds it.
    Unpaid,
    /// A PAID payout holds it.
    Paid,
}

/// Where a conversion stands on its way to a payout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayoutStage {
    /// PENDING: the payout job approves it once `payable_at` has passed.
    AwaitingHold(DateTime<Utc>),
    /// APPROVED and in no payout: in the affiliate's payable pool.
    Payable,
    /// Held by (or paid with) this payout.
    InPayout(String),
    /// Never paid out (unattributed, or reversed before any payout).
    Outside,
}

mod ledger;
mod requests;

pub use ledger::{Adjustment, Earning};
pub use requests::{
    amount_of, since_epoch, truncate_millis, Keys, Postback, ReverseRequest, Sale,
    FUTURE_TOLERANCE_MINUTES,
};

#[cfg(any(test, feature = "testing"))]
pub mod sample;
#[cfg(test)]
mod tests;
