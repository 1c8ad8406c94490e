//! Payouts: what an affiliate is owed in one currency, moved through invoice,
//! approval and payment, or rejected or cancelled.
//!
//! One pure function, [`Payout::apply`], holds the contract's transition
//! table: for each command, the states it may start from, the record after
//! it, the follow-up its conversions need (paid, or back to the payable
//! pool) and the event it records. Any other from-state is 409
//! INVALID_STATE naming `currentState`.

use chrono::{DateTime, NaiveDate, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::affiliate::{Affiliate, PayoutMethod};
use crate::campaign::Campaign;
use crate::conversion::{Adjustment, Conversion, HoldingPayout};
use crate::enums::wire_enum;
use crate::error::Error;
use crate::ids::{new_id, IdKind};
use crate::money::Currency;
use crate::payout_account::PaymentError;
use crate::tenant::Tenant;
use crate::timestamp::{serde_ts, serde_ts_opt};

wire_enum! {
    /// PENDING (waiting for the invoice), INVOICE_UPLOADED, APPROVED, PROCESSING (handed to the
    /// provider), PAID, REJECTED, CANCELLED. See the transition table in the Payouts tag.
    #[derive(Hash)]
    pub enum PayoutStatus [ignore_case] {
        /// Created by the payout job; waiting for the affiliate's invoice.
        Pending = "PENDING",
        /// The invoice is in storage; waiting for the merchant's approval.
        InvoiceUploaded = "INVOICE_UPLOADED",
        /// Approved; waiting for payment.
        Approved = "APPROVED",
        /// Handed to the payment provider; waiting for its confirmation.
        Processing = "PROCESSING",
        /// Paid: its conversions are PAID and the affiliate's `paid` total grew.
        Paid = "PAID",
        /// Rejected by the merchant; its conversions returned to the payable pool.
        Rejected = "REJECTED",
        /// Cancelled by the merchant; its conversions returned to the payable pool.
        Cancelled = "CANCELLED",
    }
}

crate::status::statuses!(PayoutStatus);

/// What a reversal of a conversion needs to know of the payout holding it,
/// from that payout's status (`None`: in no payout).
impl From<Option<PayoutStatus>> for HoldingPayout {
    fn from(status: Option<PayoutStatus>) -> Self {
        match status {
            None => HoldingPayout::None,
            Some(PayoutStatus::Paid) => HoldingPayout::Paid,
            Some(_) => HoldingPayout::Unpaid,
        }
    }
}

impl PayoutStatus {
    /// Open: its conversions are held and may not be reversed.
    pub fn is_open(self) -> bool {
        matches!(
            self,
            PayoutStatus::Pending
                | PayoutStatus::InvoiceUploaded
                | PayoutStatus::Approved
                | PayoutStatus::Processing
        )
    }
}

/// A payout as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Payout {
    pub id: String,
    pub affiliate_id: String,
    pub campaign_id: String,
    /// The sum of its conversions' commissions plus `adjustment_total`.
    pub amount: Decimal,
    pub currency: Currency,
    pub status: PayoutStatus,
    pub method: PayoutMethod,
    #[serde(with = "serde_ts")]
    pub requested_at: DateTime<Utc>,
    pub conversion_count: u64,
    /// Adjustments netted into this payout (clawbacks negative, bonuses
    /// positive); zero when there were none.
    pub adjustment_total: Decimal,
    pub invoice: Option<Invoice>,
    /// Private: the invoice's storage key. It appears in no response.
    pub invoice_key: Option<String>,
    #[serde(with = "serde_ts_opt", default)]
    pub approved_at: Option<DateTime<Utc>>,
    #[serde(with = "serde_ts_opt", default)]
    pub paid_at: Option<DateTime<Utc>>,
    pub payment_date: Option<NaiveDate>,
    pub payment_method: Option<String>,
    pub payment_reference: Option<String>,
    pub note: Option<String>,
    pub rejection_reason: Option<String>,
    pub cancellation_reason: Option<String>,
    /// Why the provider's last attempt failed, when it did.
    pub payment_error: Option<String>,
    /// The provider's attempts so far (each PROCESSING starts one); its
    /// idempotency key is `{id}-{payment_attempt}`.
    #[serde(default)]
    pub payment_attempt: u32,
    /// The rail the current attempt was sent through (STRIPE, PAYPAL);
    /// none when no provider of the merchant's was asked (manual, sandbox),
    /// and then nothing here ever sends it to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rail: Option<crate::payout_account::Rail>,
    /// The last refusal, with the provider's code.
    pub last_payment_error: Option<PaymentError>,
    /// Work on its conversions still to be completed (resumable, by the job).
    pub work: Option<PayoutWork>,
    /// Counted as the multi-record steps commit (never shown).
    #[serde(flatten)]
    pub progress: Progress,
    #[serde(with = "serde_ts")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "serde_ts")]
    pub updated_at: DateTime<Utc>,
}

wire_enum! {
    /// Multi-record work a payout owes its conversions, completed in chunks
    /// that each commit exactly once, resumed after a crash.
    pub enum PayoutWork {
        /// Being assembled: conversions and adjustments are claimed from the pool.
        /// The payout is invisible to the API until the claim completes.
        Claim = "CLAIM",
        /// Paid: its conversions become PAID.
        Settle = "SETTLE",
        /// Rejected or cancelled: its conversions and adjustments return to the pool.
        Release = "RELEASE",
    }
}

/// The payout job's queue a payout waits in: its work left, or the
/// provider's answer it awaits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayoutQueue {
    /// Being assembled (its claim).
    Build,
    /// Paid, its conversions still to settle.
    Settle,
    /// Rejected or cancelled, its members still to release.
    Release,
    /// PROCESSING with no work left: the provider is asked again.
    Paying,
}

/// What the chunks of a payout's work have done so far.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// Conversions claimed, and the sum of their commissions in minor units.
    #[serde(default)]
    pub claimed: u64,
    #[serde(default)]
    pub claimed_minor: i64,
    /// Adjustments claimed, and the sum of their amounts in minor units.
    #[serde(default)]
    pub claimed_adjustments: u64,
    #[serde(default)]
    pub claimed_adjustment_minor: i64,
    /// Conversions made PAID.
    #[serde(default)]
    pub settled: u64,
    /// Conversions and adjustments returned to the pool.
    #[serde(default)]
    pub released: u64,
}

/// Something in an affiliate's payable pool in one currency.
#[derive(Debug, Clone, PartialEq)]
pub enum PoolEntry {
    Conversion(Box<Conversion>),
    Adjustment(Adjustment),
}

impl PoolEntry {
    /// What it adds to a payout: the commission still earned, or the
    /// adjustment (a clawback negative, a bonus positive).
    pub fn amount(&self) -> Decimal {
        match self {
            PoolEntry::Conversion(c) => c.net_commission(),
            PoolEntry::Adjustment(a) => a.amount,
        }
    }
}

impl Payout {
    /// The payout the job opens for an affiliate's pool in one currency, when
    /// the pool's net total (commissions plus adjustments, a bonus alone
    /// included) is positive and reaches the campaign's `minimumPayout`;
    /// none otherwise (the balance carries over). It starts with its claim
    /// to do.
    pub fn open(
        affiliate: &Affiliate,
        campaign: &Campaign,
        currency: Currency,
        pool: &[PoolEntry],
        now: DateTime<Utc>,
    ) -> Option<Payout> {
        let net: Decimal = pool.iter().map(PoolEntry::amount).sum();
        if net <= Decimal::ZERO || net < campaign.minimum_payout {
            return None;
        }
        let method = affiliate.payout_method.unwrap_or(PayoutMethod::Manual);
        Some(Payout {
            work: Some(PayoutWork::Claim),
            ..Payout::requested(&affiliate.id, &campaign.id, currency, method, now)
        })
    }

    /// A payout of nothing yet, requested `now`: PENDING, no conversion in
    /// it, not invoiced, decided or paid, no work to do.
    fn requested(
        affiliate_id: &str,
        campaign_id: &str,
        currency: Currency,
        method: PayoutMethod,
        now: DateTime<Utc>,
    ) -> Payout {
        Payout {
            id: new_id(IdKind::Payout),
            affiliate_id: affiliate_id.to_string(),
            campaign_id: campaign_id.to_string(),
            amount: currency.round(Decimal::ZERO),
            currency,
            status: PayoutStatus::Pending,
            method,
            requested_at: now,
            conversion_count: 0,
            adjustment_total: currency.round(Decimal::ZERO),
            invoice: None,
            invoice_key: None,
            approved_at: None,
            paid_at: None,
            payment_date: None,
            payment_method: None,
            payment_reference: None,
            note: None,
            rejection_reason: None,
            cancellation_reason: None,
            payment_error: None,
            payment_attempt: 0,
            rail: None,
            last_payment_error: None,
            work: None,
            progress: Progress::default(),
            created_at: now,
            updated_at: now,
        }
    }

    /// The payout job's queue it waits in, if any.
    pub fn queue(&self) -> Option<PayoutQueue> {
        match self.work {
            Some(PayoutWork::Claim) => Some(PayoutQueue::Build),
            Some(PayoutWork::Settle) => Some(PayoutQueue::Settle),
            Some(PayoutWork::Release) => Some(PayoutQueue::Release),
            None => self.awaits_provider().then_some(PayoutQueue::Paying),
        }
    }

    /// Waiting on its provider's outcome (PROCESSING, no chunked work left),
    /// sent through a rail that has not taken it yet: the payout job asks
    /// again. One paid by hand waits for mark-paid, one a provider took
    /// (PayPal's batch) for its event: the job has nothing to do for either.
    pub fn awaits_provider(&self) -> bool {
        self.work.is_none()
            && self.status == PayoutStatus::Processing
            && self.rail.is_some()
            && self.payment_reference.is_none()
    }

    /// Shown by the API: every payout but one still being assembled.
    pub fn is_visible(&self) -> bool {
        self.work != Some(PayoutWork::Claim)
    }
}

pub(crate) mod invoice;

pub use invoice::{
    invoice_key, upload_key, Invoice, InvoiceContentType, InvoiceUpload, INVOICE_CONTENT_TYPES,
    INVOICE_PREFIX,
};

#[cfg(test)]
pub(crate) mod tests;
