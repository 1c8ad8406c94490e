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
use crate::event::{Event, EventType};
use crate::ids::{new_id, IdKind};
use crate::money::{json_number, Currency};
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

/// The prefix every invoice's storage key starts with.
pub const INVOICE_PREFIX: &str = "invoices/";

/// The storage key of a payout's invoice:
/// `invoices/<account id>/<live|test>/<payout id>/<file name>`.
pub fn invoice_key(tenant: &Tenant, payout_id: &str, file_name: &str) -> String {
    format!(
        "{INVOICE_PREFIX}{}/{}/{payout_id}/{file_name}",
        tenant.account_id,
        tenant.mode.as_str()
    )
}

/// The storage key of one upload of a payout's invoice through the portal:
/// `invoices/<account id>/<live|test>/<payout id>/<upload id>/<file name>`.
/// Each upload is its own object, so a new file never overwrites one a
/// merchant may be approving.
pub fn upload_key(tenant: &Tenant, payout_id: &str, upload_id: &str, file_name: &str) -> String {
    invoice_key(tenant, payout_id, &format!("{upload_id}/{file_name}"))
}

/// Content types an invoice may have (PDF, PNG or JPEG).
pub const INVOICE_CONTENT_TYPES: [&str; 3] = ["application/pdf", "image/png", "image/jpeg"];

/// The description of an invoice's content type, from [`INVOICE_CONTENT_TYPES`].
pub struct InvoiceContentType;

crate::described!(
    InvoiceContentType,
    "InvoiceContentType",
    serde_json::json!({"type": "string", "enum": INVOICE_CONTENT_TYPES}),
);

/// What the API shows of an invoice (never its storage key).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Invoice {
    pub file_name: String,
    pub content_type: String,
    pub size: u64,
    #[serde(with = "serde_ts")]
    pub uploaded_at: DateTime<Utc>,
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
    #[serde(default)]
    pub invoice: Option<Invoice>,
    /// Private: the invoice's storage key. It appears in no response.
    #[serde(default)]
    pub invoice_key: Option<String>,
    #[serde(with = "serde_ts_opt", default)]
    pub approved_at: Option<DateTime<Utc>>,
    #[serde(with = "serde_ts_opt", default)]
    pub paid_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub payment_date: Option<NaiveDate>,
    #[serde(default)]
    pub payment_method: Option<String>,
    #[serde(default)]
    pub payment_reference: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub rejection_reason: Option<String>,
    #[serde(default)]
    pub cancellation_reason: Option<String>,
    /// Why the provider's last attempt failed, when it did.
    #[serde(default)]
    pub payment_error: Option<String>,
    /// The provider's attempts so far (each PROCESSING starts one); its
    /// idempotency key is `{id}-{payment_attempt}`.
    #[serde(default)]
    pub payment_attempt: u32,
    /// The last refusal, with the provider's code.
    #[serde(default)]
    pub last_payment_error: Option<PaymentError>,
    /// Work on its conversions still to be completed (resumable, by the job).
    #[serde(default)]
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

/// An invoice object that landed in storage for a payout.
#[derive(Debug, Clone, PartialEq)]
pub struct InvoiceUpload {
    pub key: String,
    pub file_name: String,
    pub content_type: String,
    pub size: u64,
}

/// What the merchant, the provider or the storage event asks of a payout.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// The invoice object landed (storage event): a PENDING payout's.
    AttachInvoice(InvoiceUpload),
    /// The affiliate sent an invoice through the portal: a PENDING payout's,
    /// or a new file for an INVOICE_UPLOADED one (a wrong file, or one
    /// missing from storage). Storage events never replace a file: one
    /// delivered late would bring an older file back.
    ReplaceInvoice(InvoiceUpload),
    /// `POST approve`; `checked_invoice`: the invoice's storage key, found in
    /// storage by the call (none when it was not there).
    Approve { checked_invoice: Option<String> },
    /// `POST mark-paid`: paid outside the platform on `payment_date`.
    MarkPaid {
        payment_date: NaiveDate,
        payment_method: String,
    },
    /// `PUT mark-paid`: settled outside the platform, from any open state.
    Settle {
        payment_reference: Option<String>,
        note: Option<String>,
    },
    /// `POST reject`.
    Reject { reason: String },
    /// `POST batch-process`: approve (when invoiced) and hand to the provider.
    Process { checked_invoice: Option<String> },
    /// The provider confirmed the payment.
    ConfirmPayment { reference: Option<String> },
    /// The provider refused or failed; the payout is approved again.
    PaymentFailed { code: String, message: String },
    /// The provider took the payment and will confirm it by an event
    /// (PayPal's batch id): it stays PROCESSING, never sent again.
    PaymentAccepted { reference: String },
    /// The provider could not deliver it yet (PayPal's UNCLAIMED): it stays
    /// PROCESSING with the reason noted.
    PaymentUnclaimed { code: String, message: String },
    /// `POST bulk-cancel`.
    Cancel { reason: String },
}

/// What a payout's conversions need after a transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowUp {
    Nothing,
    /// Paid side effects: its conversions become PAID, the affiliate's `paid` grows.
    PayConversions,
    /// Its conversions (and adjustments) return to the payable pool.
    ReleaseConversions,
}

/// A transition's result.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The payout changed from `from`.
    Changed {
        payout: Box<Payout>,
        from: PayoutStatus,
        follow_up: FollowUp,
        /// None for a change of no interest to a webhook (a provider's
        /// acknowledgement while the payout stays PROCESSING).
        event: Option<EventType>,
        /// The payout as approved in passing, when the command approved it
        /// on its way to another state (batch-process of an INVOICE_UPLOADED
        /// payout): its `payout.approved` comes before `event`.
        approval: Option<Box<Payout>>,
    },
    /// Nothing to do (PUT mark-paid, or a payment confirmation, on a PAID
    /// payout): 200 with the payout as it is.
    Unchanged,
}

/// A transition as one write: the payout as it becomes, the status it
/// leaves, and its events in the order they happened.
#[derive(Debug, Clone, PartialEq)]
pub struct Moved {
    pub payout: Payout,
    pub from: PayoutStatus,
    pub events: Vec<Event>,
}

impl Outcome {
    /// The write it makes at `now`, with its events (`payout.approved` of a
    /// payout approved in passing first); none when nothing changed.
    pub fn moved(self, now: DateTime<Utc>) -> Result<Option<Moved>, Error> {
        let Outcome::Changed {
            payout,
            from,
            event,
            approval,
            ..
        } = self
        else {
            return Ok(None);
        };
        let events = payout.transition_events(event, approval.as_deref(), now)?;
        Ok(Some(Moved {
            payout: *payout,
            from,
            events,
        }))
    }
}

impl Moved {
    /// This transition and `next`, decided on the payout this one leaves,
    /// as one write: from this one's status to what `next` leaves, with the
    /// events of both in turn (a provider's answer known before the commit
    /// is written with the move to PROCESSING that asked for it).
    pub fn then(mut self, next: Outcome, now: DateTime<Utc>) -> Result<Moved, Error> {
        if let Some(m) = next.moved(now)? {
            self.payout = m.payout;
            self.events.extend(m.events);
        }
        Ok(self)
    }
}

/// The states a payout takes an invoice through the portal in: while it
/// waits for one, and until it is approved (a new file replaces the one
/// sent, say a wrong one, or one missing from storage).
const INVOICE_STATES: &[PayoutStatus] = &[PayoutStatus::Pending, PayoutStatus::InvoiceUploaded];

impl Command {
    /// The operation's name in error messages.
    pub fn action(&self) -> &'static str {
        match self {
            Command::AttachInvoice(_) | Command::ReplaceInvoice(_) => "attach an invoice to",
            Command::Approve { .. } => "approve",
            Command::MarkPaid { .. } | Command::Settle { .. } => "mark paid",
            Command::Reject { .. } => "reject",
            Command::Process { .. } => "process",
            Command::ConfirmPayment { .. } => "confirm the payment of",
            Command::PaymentFailed { .. } => "fail the payment of",
            Command::PaymentAccepted { .. } | Command::PaymentUnclaimed { .. } => {
                "note the provider's answer on"
            }
            Command::Cancel { .. } => "cancel",
        }
    }

    /// The states the command may start from.
    pub fn from_states(&self) -> &'static [PayoutStatus] {
        use PayoutStatus::*;
        match self {
            Command::AttachInvoice(_) => &[Pending],
            Command::ReplaceInvoice(_) => INVOICE_STATES,
            Command::Approve { .. } => &[InvoiceUploaded],
            Command::MarkPaid { .. } => &[Approved],
            Command::Settle { .. } => &[Pending, InvoiceUploaded, Approved, Processing],
            Command::Reject { .. } | Command::Cancel { .. } => {
                &[Pending, InvoiceUploaded, Approved]
            }
            Command::Process { .. } => &[InvoiceUploaded, Approved],
            Command::ConfirmPayment { .. }
            | Command::PaymentFailed { .. }
            | Command::PaymentAccepted { .. }
            | Command::PaymentUnclaimed { .. } => &[Processing],
        }
    }

    /// The state the command moves a payout to, with its event; `None` for
    /// a provider's answer that leaves it PROCESSING.
    fn moves_to(&self) -> Option<(PayoutStatus, EventType)> {
        use PayoutStatus::*;
        let to = match self {
            Command::AttachInvoice(_) | Command::ReplaceInvoice(_) => {
                (InvoiceUploaded, EventType::PayoutInvoiceUploaded)
            }
            Command::Approve { .. } => (Approved, EventType::PayoutApproved),
            Command::Process { .. } => (Processing, EventType::PayoutProcessing),
            Command::MarkPaid { .. } | Command::Settle { .. } | Command::ConfirmPayment { .. } => {
                (Paid, EventType::PayoutPaid)
            }
            Command::PaymentAccepted { .. } | Command::PaymentUnclaimed { .. } => return None,
            Command::PaymentFailed { .. } => (Approved, EventType::PayoutPaymentFailed),
            Command::Reject { .. } => (Rejected, EventType::PayoutRejected),
            Command::Cancel { .. } => (Cancelled, EventType::PayoutCancelled),
        };
        Some(to)
    }
}

/// What one claim chunk writes: each conversion as read and as it joins the
/// payout (the store conditions on the first), each adjustment as it joins,
/// and what the payout's claim counters grow by, in minor units.
#[derive(Debug, Clone, PartialEq)]
pub struct Claiming {
    pub conversions: Vec<(Conversion, Conversion)>,
    pub adjustments: Vec<Adjustment>,
    pub minor: i64,
    pub adjustment_minor: i64,
}

/// What one release writes: each conversion the payout still holds, as read
/// and as it returns to its pool; the adjustments giving back what refunds
/// clawed back while the payout held them; the payout's own adjustments as
/// they return.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Releasing {
    pub conversions: Vec<(Conversion, Conversion)>,
    pub given_back: Vec<Adjustment>,
    pub adjustments: Vec<Adjustment>,
}

impl Releasing {
    /// The members it moves (what a release counts).
    pub fn len(&self) -> usize {
        self.conversions.len() + self.adjustments.len()
    }

    /// Whether it moves nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A chunk of a payout's settle or release work, as [`Payout::chunk`]
/// plans it: the members it moves, the counter as read (the chunk applies
/// only while it still reads so), and the payout once the chunk is
/// committed, with its work over when the chunk ends it (the payout is then
/// written once less).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkChunk {
    work: PayoutWork,
    moved: usize,
    read: u64,
    after: Payout,
}

impl WorkChunk {
    /// The work it is a chunk of.
    pub fn work(&self) -> PayoutWork {
        self.work
    }

    /// How many members it moves.
    pub fn moved(&self) -> usize {
        self.moved
    }

    /// The work's counter as the chunk was planned on.
    pub fn read(&self) -> u64 {
        self.read
    }

    /// The payout with its work over, when this chunk ends it.
    pub fn ended(&self) -> Option<&Payout> {
        self.after.work.is_none().then_some(&self.after)
    }

    /// The payout once the chunk is committed: it is the payout's only
    /// writer while the counter reads as planned.
    pub fn into_after(self) -> Payout {
        self.after
    }
}

/// What a transition moves in its own transaction: nothing (any work left
/// follows in chunks), or every member of the payout.
#[derive(Debug, Default)]
pub enum AtOnce {
    /// Nothing: any work left follows in chunks.
    #[default]
    Nothing,
    /// Its conversions, `(before, after)`, paid.
    Settle(Vec<(Conversion, Conversion)>),
    /// Its members, back to the pool.
    Release(Releasing),
}

/// What a transition commits: the payout as it becomes, the status it
/// leaves, its event, and the members it moves with it.
#[derive(Debug)]
pub struct TransitionPlan {
    pub payout: Payout,
    pub from: PayoutStatus,
    /// Its events, in the order they happened.
    pub events: Vec<Event>,
    pub moves: AtOnce,
}

impl TransitionPlan {
    /// The plan of the transition from `from` to `payout`.
    pub fn new(payout: Payout, from: PayoutStatus, events: Vec<Event>, moves: AtOnce) -> Self {
        TransitionPlan {
            payout,
            from,
            events,
            moves,
        }
    }

    /// What it adds to the affiliate's `paid` total: a transition to PAID
    /// adds the amount.
    pub fn paid(&self) -> Option<Decimal> {
        (self.payout.status == PayoutStatus::Paid).then_some(self.payout.amount)
    }
}

impl Payout {
    /// Whether it takes an invoice through the portal now (PENDING, or
    /// INVOICE_UPLOADED until approved: a new file replaces the one sent).
    pub fn takes_invoice(&self) -> bool {
        INVOICE_STATES.contains(&self.status)
    }

    /// Whether an approval may go on with the invoice the call found in
    /// storage (`checked`: its key): an INVOICE_UPLOADED payout's file must
    /// be there, and be the one it holds now (a file replaced since the call
    /// looked is one the merchant has not seen).
    fn check_invoice(&self, checked: Option<&str>) -> Result<(), Error> {
        if self.status != PayoutStatus::InvoiceUploaded {
            return Ok(());
        }
        let current = self.status.as_str().to_string();
        match checked {
            None => Err(Error::InvoiceMissing { current }),
            Some(k) if self.invoice_key.as_deref().is_some_and(|held| held != k) => {
                Err(Error::InvoiceReplaced { current })
            }
            Some(_) => Ok(()),
        }
    }

    /// Whether `upload` is the invoice it holds: the same object, of the
    /// same size.
    fn holds_invoice(&self, upload: &InvoiceUpload) -> bool {
        self.status == PayoutStatus::InvoiceUploaded
            && self.invoice_key.as_deref() == Some(upload.key.as_str())
            && self.invoice.as_ref().is_some_and(|i| i.size == upload.size)
    }

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
        Some(Payout {
            id: new_id(IdKind::Payout),
            affiliate_id: affiliate.id.clone(),
            campaign_id: campaign.id.clone(),
            amount: currency.round(Decimal::ZERO),
            currency,
            status: PayoutStatus::Pending,
            method: affiliate.payout_method.unwrap_or(PayoutMethod::Manual),
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
            last_payment_error: None,
            work: Some(PayoutWork::Claim),
            progress: Progress::default(),
            created_at: now,
            updated_at: now,
        })
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

    /// Waiting on its provider's outcome (PROCESSING, no chunked work left):
    /// the payout job polls it.
    pub fn awaits_provider(&self) -> bool {
        self.work.is_none() && self.status == PayoutStatus::Processing
    }

    /// Shown by the API: every payout but one still being assembled.
    pub fn is_visible(&self) -> bool {
        self.work != Some(PayoutWork::Claim)
    }

    /// The payout once its claim is complete: its figures are what was claimed.
    pub fn claimed(&self, now: DateTime<Utc>) -> Payout {
        let mut p = self.clone();
        let c = p.currency;
        p.conversion_count = p.progress.claimed;
        p.adjustment_total = c.from_minor(p.progress.claimed_adjustment_minor);
        p.amount = c.from_minor(p.progress.claimed_minor + p.progress.claimed_adjustment_minor);
        p.work = None;
        p.updated_at = now;
        p
    }

    /// One chunk of this payout's claim: each member read in the pool joins
    /// it, and its counters grow by their number and their amounts.
    pub fn claiming(&self, conversions: &[Conversion], adjustments: &[Adjustment]) -> Claiming {
        let c = self.currency;
        Claiming {
            conversions: conversions
                .iter()
                .map(|cv| (cv.clone(), cv.claimed(&self.id)))
                .collect(),
            adjustments: adjustments.iter().map(|a| a.claimed(&self.id)).collect(),
            minor: conversions
                .iter()
                .map(|cv| c.to_minor(cv.net_commission()))
                .sum(),
            adjustment_minor: adjustments.iter().map(|a| c.to_minor(a.amount)).sum(),
        }
    }

    /// The conversions read that this payout pays, each with its PAID form
    /// (one it no longer holds, or no longer APPROVED, is left out).
    pub fn paying(
        &self,
        conversions: Vec<Conversion>,
        now: DateTime<Utc>,
    ) -> Vec<(Conversion, Conversion)> {
        conversions
            .into_iter()
            .filter_map(|c| c.pay(&self.id, now).ok().map(|paid| (c, paid)))
            .collect()
    }

    /// The release of the members read that this payout still holds (one
    /// taken out meanwhile is left out): each back in its pool, a conversion
    /// with what refunds clawed back while held given back as an adjustment.
    pub fn releasing(
        &self,
        conversions: Vec<Conversion>,
        adjustments: Vec<Adjustment>,
        now: DateTime<Utc>,
    ) -> Releasing {
        let mine = |held: &Option<String>| held.as_deref() == Some(self.id.as_str());
        let mut r = Releasing::default();
        for cv in conversions.into_iter().filter(|c| mine(&c.payout_id)) {
            let (after, given_back) = cv.released(now);
            r.given_back.extend(given_back);
            r.conversions.push((cv, after));
        }
        r.adjustments = adjustments
            .iter()
            .filter(|a| mine(&a.payout_id))
            .map(Adjustment::released)
            .collect();
        r
    }

    /// The payout with its settle work done by the transition that leaves
    /// it, when `paid` conversions (paid in that same transaction) are all
    /// it holds; `None` otherwise (the work then runs in chunks).
    pub fn settled_at_once(&self, paid: usize) -> Option<Payout> {
        self.done_at_once(PayoutWork::Settle, paid)
    }

    /// The payout with its release work done by the transition that leaves
    /// it, when the members `r` releases in that same transaction are all it
    /// holds, of each kind; `None` otherwise (chunks then).
    pub fn released_at_once(&self, r: &Releasing) -> Option<Payout> {
        // Each kind whole: the one counter alone would let one stand for the other.
        let whole = u64::try_from(r.adjustments.len()).ok()? == self.progress.claimed_adjustments;
        self.done_at_once(PayoutWork::Release, r.len())
            .filter(|_| whole)
    }

    /// The payout after a chunk of its `work` moved `n` more members: that
    /// work's counter grown (`None` for a claim, counted as it joins by
    /// [`Payout::claiming`]). [`Payout::work_done`] then judges whether that
    /// chunk ends the work.
    pub fn counted(&self, work: PayoutWork, n: usize) -> Option<Payout> {
        let grown = self.done_count(work)?.checked_add(u64::try_from(n).ok()?)?;
        let mut p = self.clone();
        match work {
            PayoutWork::Settle => p.progress.settled = grown,
            PayoutWork::Release => p.progress.released = grown,
            PayoutWork::Claim => return None,
        }
        Some(p)
    }

    /// A chunk of this payout's `work` that moves `moved` more members at
    /// `now`, and whether it ends the work (`None` for a claim, counted as it
    /// joins, or when the counter would overflow).
    pub fn chunk(&self, work: PayoutWork, moved: usize, now: DateTime<Utc>) -> Option<WorkChunk> {
        let counted = self.counted(work, moved)?;
        let after = match counted.work_done() {
            true => counted.work_ended(now),
            false => counted,
        };
        Some(WorkChunk {
            work,
            moved,
            read: self.done_count(work)?,
            after,
        })
    }

    /// The payout once its settle or release work is over, at `now`.
    pub fn work_ended(&self, now: DateTime<Utc>) -> Payout {
        let mut p = self.clone();
        p.work = None;
        p.updated_at = now;
        p
    }

    /// How many members `work` has moved so far (`None` for a claim).
    fn done_count(&self, work: PayoutWork) -> Option<u64> {
        match work {
            PayoutWork::Settle => Some(self.progress.settled),
            PayoutWork::Release => Some(self.progress.released),
            PayoutWork::Claim => None,
        }
    }

    /// How many members `work` moves in all (`None` for a claim).
    fn work_total(&self, work: PayoutWork) -> Option<u64> {
        match work {
            PayoutWork::Settle => Some(self.conversion_count),
            PayoutWork::Release => Some(self.conversion_count + self.progress.claimed_adjustments),
            PayoutWork::Claim => None,
        }
    }

    /// The payout with `work` done by one transaction that moves `n`
    /// members, when none of it was done before and they are exactly all
    /// of it (more than it holds means the counters drifted: chunks then).
    fn done_at_once(&self, work: PayoutWork, n: usize) -> Option<Payout> {
        let fresh = self.work == Some(work) && self.done_count(work)? == 0;
        if !fresh || u64::try_from(n).ok()? != self.work_total(work)? {
            return None;
        }
        let mut p = self.counted(work, n)?;
        p.work = None;
        Some(p)
    }

    /// Whether its outstanding work is done, by what the chunks counted.
    pub fn work_done(&self) -> bool {
        match self.work {
            None => true,
            Some(w) => match (self.done_count(w), self.work_total(w)) {
                (Some(done), Some(total)) => done >= total,
                _ => false,
            },
        }
    }

    /// The 409 for `command` on a payout that is `current`.
    pub fn wrong_state(current: PayoutStatus, command: &Command) -> Error {
        Error::InvalidState {
            resource: "payout",
            current: current.as_str().to_string(),
            action: command.action(),
        }
    }

    /// Applies `command` at `now`, as the contract's transition table says.
    pub fn apply(&self, command: Command, now: DateTime<Utc>) -> Result<Outcome, Error> {
        // PUT mark-paid again, or a second confirmation of the same payment
        // (a request and the job's retry racing; the provider pays once per
        // payout id), leaves a PAID payout as it is.
        if self.status == PayoutStatus::Paid
            && matches!(
                command,
                Command::Settle { .. } | Command::ConfirmPayment { .. }
            )
        {
            return Ok(Outcome::Unchanged);
        }
        // The same file again (a storage notification delivered twice, or
        // the one that follows a portal upload) is no new invoice.
        if let Command::AttachInvoice(upload) | Command::ReplaceInvoice(upload) = &command {
            if self.holds_invoice(upload) {
                return Ok(Outcome::Unchanged);
            }
        }
        if !command.from_states().contains(&self.status) {
            return Err(Self::wrong_state(self.status, &command));
        }
        if let Command::Approve { checked_invoice } | Command::Process { checked_invoice } =
            &command
        {
            self.check_invoice(checked_invoice.as_deref())?;
        }
        let mut p = self.clone();
        p.updated_at = now;
        let event = p.record(command, now);
        let approval = self.approved_in_passing(&p);
        let follow_up = match p.status {
            PayoutStatus::Paid => FollowUp::PayConversions,
            PayoutStatus::Rejected | PayoutStatus::Cancelled => FollowUp::ReleaseConversions,
            _ => FollowUp::Nothing,
        };
        p.work = match follow_up {
            FollowUp::Nothing => None,
            FollowUp::PayConversions => Some(PayoutWork::Settle),
            FollowUp::ReleaseConversions => Some(PayoutWork::Release),
        };
        Ok(Outcome::Changed {
            payout: Box::new(p),
            from: self.status,
            follow_up,
            event,
            approval,
        })
    }

    /// This payout as approved, when `after` (its next state) approved it
    /// in passing: `approvedAt` set by a move to another state than
    /// APPROVED, which records its own event.
    fn approved_in_passing(&self, after: &Payout) -> Option<Box<Payout>> {
        let passing = self.approved_at.is_none()
            && after.approved_at.is_some()
            && after.status != PayoutStatus::Approved;
        passing.then(|| {
            let mut a = self.clone();
            a.status = PayoutStatus::Approved;
            a.approved_at = after.approved_at;
            a.updated_at = after.updated_at;
            Box::new(a)
        })
    }

    /// Records what a (permitted) command says and moves to its state.
    fn record(&mut self, command: Command, now: DateTime<Utc>) -> Option<EventType> {
        let moves = command.moves_to();
        self.record_details(command, now);
        let (to, event) = moves?;
        if to == PayoutStatus::Paid {
            self.paid_at = Some(now);
        }
        self.status = to;
        Some(event)
    }

    /// Keeps what a command carries: the invoice, the payment's details and
    /// attempts, the provider's answer, the reason the payout ends.
    fn record_details(&mut self, command: Command, now: DateTime<Utc>) {
        match command {
            Command::AttachInvoice(upload) | Command::ReplaceInvoice(upload) => {
                self.invoice = Some(Invoice {
                    file_name: upload.file_name,
                    content_type: upload.content_type,
                    size: upload.size,
                    uploaded_at: now,
                });
                self.invoice_key = Some(upload.key);
            }
            Command::Approve { .. } => self.approved_at = Some(now),
            Command::Process { .. } => {
                self.approved_at.get_or_insert(now);
                self.payment_error = None;
                self.payment_attempt += 1;
            }
            Command::MarkPaid {
                payment_date,
                payment_method,
            } => {
                self.payment_date = Some(payment_date);
                self.payment_method = Some(payment_method);
            }
            Command::Settle {
                payment_reference,
                note,
            } => {
                self.payment_reference = payment_reference.or(self.payment_reference.take());
                self.note = note.or(self.note.take());
            }
            Command::ConfirmPayment { reference } => {
                self.payment_reference = reference.or(self.payment_reference.take());
            }
            Command::PaymentAccepted { reference } => self.payment_reference = Some(reference),
            Command::PaymentUnclaimed { code, message } => {
                self.last_payment_error = Some(PaymentError::new(code, message, now));
            }
            Command::PaymentFailed { code, message } => {
                self.payment_error = Some(message.clone());
                self.last_payment_error = Some(PaymentError::new(code, message, now));
            }
            Command::Reject { reason } => self.rejection_reason = Some(reason),
            Command::Cancel { reason } => self.cancellation_reason = Some(reason),
        }
    }
}

/// The invoice evidence. Its storage key is private and appears in no response; the file is
/// served by `GET /api/v1/payouts/{id}/invoice`.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PayoutInvoice)]
pub struct InvoiceView<'a> {
    pub uploaded: bool,
    pub file_name: Option<&'a str>,
    /// Null when no invoice was uploaded.
    #[schema(value_type = Option<crate::payout::InvoiceContentType>)]
    pub content_type: Option<&'a str>,
    /// Bytes.
    #[schema(minimum = 1, maximum = 4194304)]
    pub size: Option<u64>,
    #[serde(with = "serde_ts_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub uploaded_at: Option<DateTime<Utc>>,
}

impl<'a> From<Option<&'a Invoice>> for InvoiceView<'a> {
    fn from(i: Option<&'a Invoice>) -> Self {
        InvoiceView {
            uploaded: i.is_some(),
            file_name: i.map(|i| i.file_name.as_str()),
            content_type: i.map(|i| i.content_type.as_str()),
            size: i.map(|i| i.size),
            uploaded_at: i.map(|i| i.uploaded_at),
        }
    }
}

/// A payout: what one affiliate is owed in one currency.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Payout)]
pub struct PayoutView<'a> {
    #[schema(pattern = "^po_[0-9A-HJKMNP-TV-Z]{26}$", example = json!("po_01JD9A7C2E4G6J8M0P2R4T6V8Y"))]
    pub id: &'a str,
    pub object: &'static str,
    pub affiliate_id: &'a str,
    pub campaign_id: &'a str,
    /// The sum of its conversions' commissions plus `adjustmentTotal`, in major units of
    /// `currency`, exact to its minor unit.
    #[serde(with = "json_number")]
    #[schema(value_type = f64)]
    pub amount: Decimal,
    #[schema(value_type = crate::money::Currency)]
    pub currency: Currency,
    pub status: PayoutStatus,
    pub method: PayoutMethod,
    /// When the payout job created it. List order and `from`/`to` use it.
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime, example = json!("2026-11-22T10:00:00.000Z"))]
    pub requested_at: DateTime<Utc>,
    #[schema(minimum = 0)]
    pub conversion_count: u64,
    /// The adjustments netted into this payout: clawbacks of reversed, already paid
    /// conversions (negative) and the merchant's manual adjustments (a bonus positive, a manual
    /// clawback negative). Zero when there were none.
    #[serde(with = "json_number")]
    #[schema(value_type = f64)]
    pub adjustment_total: Decimal,
    #[schema(value_type = crate::payout::InvoiceView)]
    pub invoice: InvoiceView<'a>,
    #[serde(with = "serde_ts_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub approved_at: Option<DateTime<Utc>>,
    #[serde(with = "serde_ts_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub paid_at: Option<DateTime<Utc>>,
    /// From POST mark-paid.
    #[schema(format = Date)]
    pub payment_date: Option<NaiveDate>,
    /// From POST mark-paid.
    pub payment_method: Option<&'a str>,
    /// From PUT mark-paid, or the provider's reference.
    pub payment_reference: Option<&'a str>,
    /// From PUT mark-paid.
    pub note: Option<&'a str>,
    pub rejection_reason: Option<&'a str>,
    pub cancellation_reason: Option<&'a str>,
    /// Why the provider's last attempt failed, when it did (the payout is then APPROVED again).
    pub payment_error: Option<&'a str>,
    /// The provider's attempts so far: each batch-process that starts a payment counts one,
    /// and every call of an attempt carries the idempotency key `{id}-{paymentAttempt}`.
    #[schema(minimum = 0)]
    pub payment_attempt: u32,
    /// The last refusal: the provider's code and message (`no_destination` when the
    /// affiliate had no usable destination), and when.
    #[schema(value_type = Option<crate::payout_account::PaymentError>)]
    pub last_payment_error: Option<&'a PaymentError>,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime, example = json!("2026-11-22T10:00:00.000Z"))]
    pub created_at: DateTime<Utc>,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime, example = json!("2026-11-22T10:00:00.000Z"))]
    pub updated_at: DateTime<Utc>,
}

impl Payout {
    /// An event of `event_type` carrying this payout's API view.
    pub fn event(&self, event_type: EventType, now: DateTime<Utc>) -> Result<Event, Error> {
        Event::new(event_type, PayoutView::from(self), now)
    }

    /// The events of a transition to this payout: `payout.approved` of the
    /// payout as approved in passing, when it was, then `event`, made in
    /// that order (so their ids list them in it).
    pub fn transition_events(
        &self,
        event: Option<EventType>,
        approval: Option<&Payout>,
        now: DateTime<Utc>,
    ) -> Result<Vec<Event>, Error> {
        let mut events = Vec::new();
        if let Some(a) = approval {
            events.push(a.event(EventType::PayoutApproved, now)?);
        }
        if let Some(event) = event {
            events.push(self.event(event, now)?);
        }
        Ok(events)
    }

    /// Its `payout.created` event, once its claim is complete.
    pub fn created_event(&self) -> Result<Event, Error> {
        self.event(EventType::PayoutCreated, self.updated_at)
    }
}

impl<'a> From<&'a Payout> for PayoutView<'a> {
    fn from(p: &'a Payout) -> Self {
        PayoutView {
            id: &p.id,
            object: "payout",
            affiliate_id: &p.affiliate_id,
            campaign_id: &p.campaign_id,
            amount: p.amount,
            currency: p.currency,
            status: p.status,
            method: p.method,
            requested_at: p.requested_at,
            conversion_count: p.conversion_count,
            adjustment_total: p.adjustment_total,
            invoice: InvoiceView::from(p.invoice.as_ref()),
            approved_at: p.approved_at,
            paid_at: p.paid_at,
            payment_date: p.payment_date,
            payment_method: p.payment_method.as_deref(),
            payment_reference: p.payment_reference.as_deref(),
            note: p.note.as_deref(),
            rejection_reason: p.rejection_reason.as_deref(),
            cancellation_reason: p.cancellation_reason.as_deref(),
            payment_error: p.payment_error.as_deref(),
            payment_attempt: p.payment_attempt,
            last_payment_error: p.last_payment_error.as_ref(),
            created_at: p.created_at,
            updated_at: p.updated_at,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::conversion::ConversionStatus;
    use crate::timestamp::parse_datetime;
    use PayoutStatus::*;

    /// The invoice key an approval found in storage.
    const CHECKED: &str = "invoices/k";

    /// A payout of 123.45 USD to `aff_1` by PayPal (for other modules' tests too).
    pub(crate) fn payout(status: PayoutStatus) -> Payout {
        let t = parse_datetime("2026-01-01T00:00:00Z").unwrap();
        Payout {
            id: "po_1".into(),
            affiliate_id: "aff_1".into(),
            campaign_id: "cmp_1".into(),
            amount: Decimal::new(12_345, 2),
            currency: Currency::parse("currency", "USD").unwrap(),
            status,
            method: PayoutMethod::Paypal,
            requested_at: t,
            conversion_count: 3,
            adjustment_total: Decimal::ZERO,
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
            last_payment_error: None,
            work: None,
            progress: Progress::default(),
            created_at: t,
            updated_at: t,
        }
    }

    /// `n` APPROVED conversions held by `payout` (`clawed_back` of each
    /// taken by refunds meanwhile) and `m` adjustments it holds.
    fn held(
        payout: &str,
        n: usize,
        m: usize,
        clawed_back: &str,
    ) -> (Vec<Conversion>, Vec<Adjustment>) {
        let at = "2026-01-01T00:00:00Z";
        let conversions = (0..n)
            .map(|i| {
                serde_json::from_value(serde_json::json!({
                    "id": format!("cnv_{i}"), "externalId": format!("order-{i}"),
                    "campaignId": "cmp_1", "affiliateId": "aff_1", "amount": "50.00",
                    "currency": "USD", "conversionType": "SALE", "commission": "5.00",
                    "commissionClawedBack": clawed_back, "status": "APPROVED",
                    "attribution": "CODE", "payoutId": payout, "holdDays": 0,
                    "payableAt": at, "occurredAt": at, "createdAt": at, "updatedAt": at,
                }))
                .unwrap()
            })
            .collect();
        let adjustments = (0..m)
            .map(|i| Adjustment {
                id: format!("adj_{i}"),
                affiliate_id: "aff_1".into(),
                campaign_id: None,
                currency: Currency::parse("currency", "USD").unwrap(),
                amount: Decimal::new(-100, 2),
                conversion_id: Some(format!("cnv_{i}")),
                reason: None,
                external_id: None,
                payout_id: Some(payout.into()),
                created_at: parse_datetime(at).unwrap(),
            })
            .collect();
        (conversions, adjustments)
    }

    /// The release of `n` conversions and `m` adjustments `p` holds.
    fn releasing(p: &Payout, n: usize, m: usize) -> Releasing {
        let (c, a) = held(&p.id, n, m, "0");
        p.releasing(c, a, p.updated_at)
    }

    #[test]
    fn a_release_moves_only_what_the_payout_still_holds_and_gives_back_clawbacks() {
        let p = payout(Rejected);
        let now = parse_datetime("2026-02-01T00:00:00Z").unwrap();
        let (mut c, mut a) = held(&p.id, 3, 2, "1.50");
        // Taken out meanwhile: one conversion in another payout, one adjustment in none.
        c[1].payout_id = Some("po_2".into());
        a[0].payout_id = None;
        c[2].commission_clawed_back = Decimal::ZERO;
        let r = p.releasing(c, a, now);
        let ids: Vec<&str> = r.conversions.iter().map(|(b, _)| b.id.as_str()).collect();
        assert_eq!(ids, ["cnv_0", "cnv_2"]);
        assert!(r
            .conversions
            .iter()
            .all(|(_, after)| after.payout_id.is_none()));
        let adj: Vec<(&str, Option<&str>)> = r
            .adjustments
            .iter()
            .map(|a| (a.id.as_str(), a.payout_id.as_deref()))
            .collect();
        assert_eq!(adj, [("adj_1", None)]);
        assert_eq!(r.len(), 3);
        // Only the conversion refunds cut while held gets its clawback back.
        let back: Vec<(Option<&str>, Decimal)> = r
            .given_back
            .iter()
            .map(|g| (g.conversion_id.as_deref(), g.amount))
            .collect();
        assert_eq!(back, [(Some("cnv_0"), Decimal::new(150, 2))]);
        assert_eq!(r.given_back[0].created_at, now);
        assert_eq!(r.conversions[0].1.commission_clawed_back, Decimal::ZERO);
        assert!(p.releasing(vec![], vec![], now).is_empty());
    }

    #[test]
    fn a_payout_approved_in_passing_records_its_approval_first() {
        let now = parse_datetime("2026-02-01T00:00:00Z").unwrap();
        let process = Command::Process {
            checked_invoice: Some(CHECKED.into()),
        };
        // (from, approved before?, approval recorded?)
        let cases = [
            (PayoutStatus::InvoiceUploaded, false, true),
            (PayoutStatus::Approved, true, false),
        ];
        for (from, approved_before, recorded) in cases {
            let mut before = payout(from);
            before.approved_at = approved_before.then_some(now - chrono::Duration::days(1));
            let Ok(Outcome::Changed {
                payout: after,
                event,
                approval,
                ..
            }) = before.apply(process.clone(), now)
            else {
                panic!("{from:?}: no change");
            };
            assert_eq!(approval.is_some(), recorded, "{from:?}");
            let events = after
                .transition_events(event, approval.as_deref(), now)
                .unwrap();
            let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
            let statuses: Vec<&serde_json::Value> =
                events.iter().map(|e| &e.data["status"]).collect();
            if recorded {
                assert_eq!(types, ["payout.approved", "payout.processing"]);
                assert_eq!(statuses, ["APPROVED", "PROCESSING"]);
                assert!(events[0].id < events[1].id, "listed in that order");
                assert_eq!(events[0].data["approvedAt"], events[1].data["approvedAt"]);
            } else {
                assert_eq!(types, ["payout.processing"]);
            }
        }
        // A payout marked paid from INVOICE_UPLOADED was never approved.
        let Ok(Outcome::Changed { approval, .. }) = payout(PayoutStatus::InvoiceUploaded).apply(
            Command::Settle {
                payment_reference: None,
                note: None,
            },
            now,
        ) else {
            panic!("settle: no change");
        };
        assert!(approval.is_none());
    }

    #[test]
    fn a_provider_answer_joins_the_move_to_processing_in_one_write() {
        let now = parse_datetime("2026-02-01T00:00:00Z").unwrap();
        let process = Command::Process {
            checked_invoice: Some(CHECKED.into()),
        };
        let paid = Command::ConfirmPayment {
            reference: Some("sandbox_po".into()),
        };
        let failed = Command::PaymentFailed {
            code: "card_declined".into(),
            message: "refused".into(),
        };
        // (from, answer, where it ends, its events with the status each shows)
        let cases = [
            (
                PayoutStatus::InvoiceUploaded,
                paid.clone(),
                PayoutStatus::Paid,
                vec![
                    ("payout.approved", "APPROVED"),
                    ("payout.processing", "PROCESSING"),
                    ("payout.paid", "PAID"),
                ],
            ),
            (
                PayoutStatus::Approved,
                failed,
                PayoutStatus::Approved,
                vec![
                    ("payout.processing", "PROCESSING"),
                    ("payout.payment_failed", "APPROVED"),
                ],
            ),
        ];
        for (from, answer, to, want) in cases {
            let mut before = payout(from);
            if from == PayoutStatus::Approved {
                before.approved_at = Some(now - chrono::Duration::days(1));
            }
            let processing = before.apply(process.clone(), now).unwrap();
            let first = processing.moved(now).unwrap().expect("a change");
            assert_eq!(first.payout.status, PayoutStatus::Processing);
            let next = first.payout.apply(answer, now).unwrap();
            let joined = first.then(next, now).unwrap();
            assert_eq!((joined.from, joined.payout.status), (from, to), "{from:?}");
            let got: Vec<(&str, &str)> = joined
                .events
                .iter()
                .map(|e| (e.event_type.as_str(), e.data["status"].as_str().unwrap()))
                .collect();
            assert_eq!(got, want, "{from:?}");
            assert!(
                joined.events.windows(2).all(|w| w[0].id < w[1].id),
                "listed in the order they happened"
            );
            // Paid: its conversions follow in the same write or in chunks.
            let work = (to == PayoutStatus::Paid).then_some(PayoutWork::Settle);
            assert_eq!(joined.payout.work, work);
        }
        // An unchanged answer (paid already) adds nothing to the first step.
        let first = payout(PayoutStatus::Approved)
            .apply(process, now)
            .unwrap()
            .moved(now)
            .unwrap()
            .unwrap();
        let joined = first.clone().then(Outcome::Unchanged, now).unwrap();
        assert_eq!(joined, first);
    }

    #[test]
    fn only_a_transition_to_paid_adds_to_the_paid_total() {
        let now = parse_datetime("2026-02-01T00:00:00Z").unwrap();
        let mut paying = 0;
        for (i, command) in commands().into_iter().enumerate() {
            for from in PayoutStatus::ALL {
                let Ok(Outcome::Changed {
                    payout,
                    from,
                    event,
                    ..
                }) = payout(from).apply(command.clone(), now)
                else {
                    continue;
                };
                let Some(event) = event else {
                    continue;
                };
                let recorded = payout.event(event, now).unwrap();
                let plan = TransitionPlan::new(*payout, from, vec![recorded], AtOnce::Nothing);
                let pays = matches!(
                    command,
                    Command::MarkPaid { .. }
                        | Command::Settle { .. }
                        | Command::ConfirmPayment { .. }
                );
                let want = pays.then_some(Decimal::new(12_345, 2));
                assert_eq!(plan.paid(), want, "command {i} from {from:?}");
                paying += usize::from(pays);
            }
        }
        assert!(paying > 0, "some transitions pay");
    }

    #[test]
    fn a_payout_pays_only_the_approved_conversions_it_still_holds() {
        let p = payout(Paid);
        let now = parse_datetime("2026-02-01T00:00:00Z").unwrap();
        let (mut c, _) = held(&p.id, 3, 0, "0");
        c[1].payout_id = Some("po_2".into());
        c[2].status = ConversionStatus::Paid;
        let paid = p.paying(c, now);
        let got: Vec<(&str, ConversionStatus)> = paid
            .iter()
            .map(|(before, after)| (before.id.as_str(), after.status))
            .collect();
        assert_eq!(got, [("cnv_0", ConversionStatus::Paid)]);
    }

    #[test]
    fn a_payout_waits_in_the_queue_of_its_work_or_of_its_provider() {
        let with = |status, work| {
            let mut p = payout(status);
            p.work = work;
            p.queue()
        };
        assert_eq!(
            with(Pending, Some(PayoutWork::Claim)),
            Some(PayoutQueue::Build)
        );
        assert_eq!(
            with(Paid, Some(PayoutWork::Settle)),
            Some(PayoutQueue::Settle)
        );
        assert_eq!(
            with(Rejected, Some(PayoutWork::Release)),
            Some(PayoutQueue::Release)
        );
        assert_eq!(with(Processing, None), Some(PayoutQueue::Paying));
        for status in [
            Pending,
            InvoiceUploaded,
            Approved,
            Paid,
            Rejected,
            Cancelled,
        ] {
            assert_eq!(with(status, None), None, "{status:?}");
        }
    }

    #[test]
    fn a_claim_keeps_each_conversion_as_read_beside_it_joined() {
        let mut p = payout(Pending);
        p.work = Some(PayoutWork::Claim);
        let (mut c, mut a) = held(&p.id, 2, 1, "0");
        c.iter_mut().for_each(|c| c.payout_id = None);
        a.iter_mut().for_each(|a| a.payout_id = None);
        let claim = p.claiming(&c, &a);
        assert_eq!((claim.conversions.len(), claim.adjustments.len()), (2, 1));
        for ((before, after), read) in claim.conversions.iter().zip(&c) {
            assert_eq!((before, after.payout_id.as_deref()), (read, Some("po_1")));
        }
        assert_eq!(claim.adjustments[0].payout_id.as_deref(), Some("po_1"));
        assert_eq!((claim.minor, claim.adjustment_minor), (1_000, -100));
    }

    fn commands() -> Vec<Command> {
        vec![
            Command::AttachInvoice(InvoiceUpload {
                key: "invoices/k".into(),
                file_name: "inv.pdf".into(),
                content_type: "application/pdf".into(),
                size: 10,
            }),
            Command::Approve {
                checked_invoice: Some(CHECKED.into()),
            },
            Command::MarkPaid {
                payment_date: NaiveDate::from_ymd_opt(2026, 1, 2).unwrap(),
                payment_method: "wire".into(),
            },
            Command::Settle {
                payment_reference: Some("ref".into()),
                note: None,
            },
            Command::Reject {
                reason: "no".into(),
            },
            Command::Process {
                checked_invoice: Some(CHECKED.into()),
            },
            Command::ConfirmPayment { reference: None },
            Command::PaymentFailed {
                code: "sandbox".into(),
                message: "down".into(),
            },
            Command::Cancel {
                reason: "dup".into(),
            },
            Command::ReplaceInvoice(InvoiceUpload {
                key: "invoices/other".into(),
                file_name: "other.pdf".into(),
                content_type: "application/pdf".into(),
                size: 20,
            }),
        ]
    }

    /// The contract's table: (command index, from, to, follow-up).
    fn table() -> Vec<(usize, PayoutStatus, PayoutStatus, FollowUp)> {
        use FollowUp::*;
        let mut t = vec![
            (0, Pending, InvoiceUploaded, Nothing),
            (1, InvoiceUploaded, Approved, Nothing),
            (2, Approved, Paid, PayConversions),
            (5, InvoiceUploaded, Processing, Nothing),
            (5, Approved, Processing, Nothing),
            (6, Processing, Paid, PayConversions),
            (7, Processing, Approved, Nothing),
            (9, Pending, InvoiceUploaded, Nothing),
            (9, InvoiceUploaded, InvoiceUploaded, Nothing),
        ];
        for from in [Pending, InvoiceUploaded, Approved, Processing] {
            t.push((3, from, Paid, PayConversions));
        }
        for from in [Pending, InvoiceUploaded, Approved] {
            t.push((4, from, Rejected, ReleaseConversions));
            t.push((8, from, Cancelled, ReleaseConversions));
        }
        t
    }

    #[test]
    fn the_same_invoice_again_is_no_change_and_storage_never_replaces_one() {
        let now = parse_datetime("2026-02-01T00:00:00Z").unwrap();
        let upload = |key: &str, size| InvoiceUpload {
            key: key.into(),
            file_name: "inv.pdf".into(),
            content_type: "application/pdf".into(),
            size,
        };
        let Ok(Outcome::Changed { payout: held, .. }) =
            payout(Pending).apply(Command::AttachInvoice(upload("invoices/a", 10)), now)
        else {
            panic!("attached");
        };
        // (command, changed?)
        let cases = [
            (
                Command::AttachInvoice(upload("invoices/a", 10)),
                Some(false),
            ),
            (
                Command::ReplaceInvoice(upload("invoices/a", 10)),
                Some(false),
            ),
            (Command::AttachInvoice(upload("invoices/b", 10)), None),
            (
                Command::ReplaceInvoice(upload("invoices/a", 11)),
                Some(true),
            ),
            (
                Command::ReplaceInvoice(upload("invoices/b", 10)),
                Some(true),
            ),
        ];
        for (command, changed) in cases {
            let got = held.apply(command.clone(), now);
            let seen = match got {
                Ok(Outcome::Unchanged) => Some(false),
                Ok(Outcome::Changed { .. }) => Some(true),
                Err(_) => None,
            };
            assert_eq!(seen, changed, "{command:?}");
        }
    }

    #[test]
    fn a_reversal_knows_the_holding_payout_by_its_status() {
        assert_eq!(HoldingPayout::from(None), HoldingPayout::None);
        assert_eq!(HoldingPayout::from(Some(Paid)), HoldingPayout::Paid);
        for open in [
            Pending,
            InvoiceUploaded,
            Approved,
            Processing,
            Rejected,
            Cancelled,
        ] {
            assert_eq!(HoldingPayout::from(Some(open)), HoldingPayout::Unpaid);
        }
    }

    #[test]
    fn work_is_done_at_once_only_when_every_member_moves_with_the_transition() {
        let now = parse_datetime("2026-02-01T00:00:00Z").unwrap();
        let Outcome::Changed { payout: paid, .. } = payout(Approved)
            .apply(
                Command::MarkPaid {
                    payment_date: NaiveDate::from_ymd_opt(2026, 1, 2).unwrap(),
                    payment_method: "wire".into(),
                },
                now,
            )
            .unwrap()
        else {
            panic!("unchanged");
        };
        assert_eq!(paid.work, Some(PayoutWork::Settle));
        let done = paid.settled_at_once(3).unwrap();
        assert_eq!((done.work, done.progress.settled), (None, 3));
        assert!(done.work_done());
        assert_eq!(done.status, Paid);
        // Fewer found than it holds, or work already under way: in chunks.
        assert!(paid.settled_at_once(2).is_none());
        assert!(paid.settled_at_once(4).is_none(), "more than it holds");
        let mut begun = (*paid).clone();
        begun.progress.settled = 1;
        assert!(begun.settled_at_once(3).is_none());
        // Nothing to settle at all: no work to end.
        assert!(payout(Approved).settled_at_once(3).is_none());
        // In chunks: the chunk that brings the counter to the count ends it.
        let part = paid.counted(PayoutWork::Settle, 2).unwrap();
        assert_eq!((part.progress.settled, part.work_done()), (2, false));
        assert!(part.counted(PayoutWork::Settle, 1).unwrap().work_done());
        assert!(paid.counted(PayoutWork::Claim, 1).is_none());
        let later = now + chrono::Duration::minutes(1);
        let chunk = |p: &Payout, work, n| {
            p.chunk(work, n, later).map(|c| {
                let ended = c.ended().map(|e| (e.work, e.updated_at));
                let (moved, read, after) = (c.moved(), c.read(), c.into_after());
                let counters = (after.progress.settled, after.progress.released);
                (moved, read, ended, counters, after.work, after.updated_at)
            })
        };
        // A chunk short of the total only counts; the last one ends the work
        // at its time.
        let (settle, paid_at) = (Some(PayoutWork::Settle), paid.updated_at);
        let first = Some((2, 0, None, (2, 0), settle, paid_at));
        assert_eq!(chunk(&paid, PayoutWork::Settle, 2), first);
        let last = Some((1, 2, Some((None, later)), (3, 0), None, later));
        assert_eq!(chunk(&part, PayoutWork::Settle, 1), last);
        assert!(paid.chunk(PayoutWork::Claim, 1, now).is_none());

        // Released: its conversions and its claimed adjustments, all of them.
        let Outcome::Changed {
            payout: rejected, ..
        } = payout(Approved)
            .apply(
                Command::Reject {
                    reason: "no".into(),
                },
                now,
            )
            .unwrap()
        else {
            panic!("unchanged");
        };
        let mut rejected = *rejected;
        rejected.progress.claimed_adjustments = 1;
        // Released in chunks: its conversions and its adjustment count.
        let release = Some(PayoutWork::Release);
        let first = (3, 0, None, (0, 3), release, rejected.updated_at);
        assert_eq!(chunk(&rejected, PayoutWork::Release, 3), Some(first));
        let mut begun = rejected.clone();
        begun.progress.released = 3;
        let last = (1, 3, Some((None, later)), (0, 4), None, later);
        assert_eq!(chunk(&begun, PayoutWork::Release, 1), Some(last));
        assert!(rejected.settled_at_once(3).is_none(), "release, not settle");
        let done = rejected
            .released_at_once(&releasing(&rejected, 3, 1))
            .unwrap();
        assert_eq!((done.work, done.progress.released), (None, 4));
        assert!(done.work_done());
        assert!(rejected
            .released_at_once(&releasing(&rejected, 3, 0))
            .is_none());
        assert!(rejected
            .released_at_once(&releasing(&rejected, 2, 1))
            .is_none());
        assert!(
            rejected
                .released_at_once(&releasing(&rejected, 4, 1))
                .is_none(),
            "more than it holds"
        );
        assert!(
            rejected
                .released_at_once(&releasing(&rejected, 2, 2))
                .is_none(),
            "an adjustment does not stand for a conversion"
        );
        assert!(
            paid.released_at_once(&releasing(&paid, 3, 0)).is_none(),
            "settle, not release"
        );
    }

    #[test]
    fn every_command_from_every_state_follows_the_table() {
        let now = parse_datetime("2026-02-01T00:00:00Z").unwrap();
        let table = table();
        for (i, command) in commands().into_iter().enumerate() {
            for from in PayoutStatus::ALL {
                let got = payout(from).apply(command.clone(), now);
                let want = table.iter().find(|(c, f, _, _)| *c == i && *f == from);
                match (got, want) {
                    (
                        Ok(Outcome::Changed {
                            payout,
                            from: f,
                            follow_up,
                            ..
                        }),
                        Some((_, _, to, fu)),
                    ) => {
                        assert_eq!(
                            (payout.status, f, follow_up),
                            (*to, from, *fu),
                            "{command:?} from {from:?}"
                        );
                        assert_eq!(payout.updated_at, now);
                    }
                    (Ok(Outcome::Unchanged), None) => {
                        assert!(
                            [(3, Paid), (6, Paid)].contains(&(i, from)),
                            "only PUT mark-paid and a payment confirmation on PAID are no-ops"
                        );
                    }
                    (Err(Error::InvalidState { current, .. }), None) => {
                        assert_eq!(current, from.as_str());
                    }
                    (got, want) => panic!("{command:?} from {from:?}: got {got:?}, want {want:?}"),
                }
            }
        }
    }

    #[test]
    fn approving_needs_the_invoice_in_storage() {
        let now = Utc::now();
        for command in [
            Command::Approve {
                checked_invoice: None,
            },
            Command::Process {
                checked_invoice: None,
            },
        ] {
            let err = payout(InvoiceUploaded).apply(command, now).unwrap_err();
            assert!(matches!(err, Error::InvoiceMissing { .. }));
            assert_eq!(err.code().as_str(), "INVALID_STATE");
        }
        // A file replaced since the call looked is not the one approved.
        let mut replaced = payout(InvoiceUploaded);
        replaced.invoice_key = Some("invoices/new".into());
        for command in [
            Command::Approve {
                checked_invoice: Some("invoices/old".into()),
            },
            Command::Process {
                checked_invoice: Some("invoices/old".into()),
            },
        ] {
            let err = replaced.apply(command, now).unwrap_err();
            assert!(matches!(err, Error::InvoiceReplaced { .. }), "{err:?}");
        }
        let same = Command::Approve {
            checked_invoice: Some("invoices/new".into()),
        };
        assert!(replaced.apply(same, now).is_ok());
        // An approved payout's invoice was checked at approval.
        assert!(payout(Approved)
            .apply(
                Command::Process {
                    checked_invoice: None
                },
                now
            )
            .is_ok());
    }

    #[test]
    fn transitions_record_what_happened() {
        let now = Utc::now();
        let Outcome::Changed {
            payout: p, event, ..
        } = payout(Pending).apply(commands().remove(0), now).unwrap()
        else {
            panic!("changed");
        };
        assert_eq!(event, Some(EventType::PayoutInvoiceUploaded));
        assert_eq!(p.invoice_key.as_deref(), Some("invoices/k"));
        assert_eq!(p.invoice.as_ref().map(|i| i.size), Some(10));
        let Outcome::Changed {
            payout: p, event, ..
        } = payout(Processing)
            .apply(
                Command::PaymentFailed {
                    code: "sandbox".into(),
                    message: "down".into(),
                },
                now,
            )
            .unwrap()
        else {
            panic!("changed");
        };
        assert_eq!(
            (p.status, event),
            (Approved, Some(EventType::PayoutPaymentFailed))
        );
        assert_eq!(p.payment_error.as_deref(), Some("down"));
        let last = p.last_payment_error.as_ref().expect("the refusal is kept");
        assert_eq!((last.code.as_str(), last.at), ("sandbox", now));
        // Each move to PROCESSING starts a new attempt (a new idempotency key).
        let approved = payout(Approved);
        let attempt = |p: &Payout| match p.apply(
            Command::Process {
                checked_invoice: None,
            },
            now,
        ) {
            Ok(Outcome::Changed { payout, .. }) => payout.payment_attempt,
            other => panic!("{other:?}"),
        };
        assert_eq!(attempt(&approved), approved.payment_attempt + 1);
        assert_eq!(
            PayoutStatus::parse("invoice_uploaded"),
            Some(InvoiceUploaded)
        );
        assert!(Processing.is_open() && !Paid.is_open() && !Rejected.is_open());
    }

    #[test]
    fn the_view_hides_the_storage_key_and_the_work() {
        let now = Utc::now();
        let Outcome::Changed { payout: p, .. } =
            payout(Pending).apply(commands().remove(0), now).unwrap()
        else {
            panic!("changed");
        };
        let v = serde_json::to_value(PayoutView::from(&*p)).unwrap();
        let text = v.to_string();
        assert!(
            !text.contains("invoices/") && !text.contains("invoiceKey"),
            "{text}"
        );
        for private in ["work", "progress", "claimed", "settled", "released"] {
            assert!(v.get(private).is_none(), "{private}");
        }
        assert_eq!(v["invoice"]["uploaded"], true);
        assert_eq!(v["invoice"]["fileName"], "inv.pdf");
        assert_eq!(v["amount"], serde_json::json!(123.45));
        let none = serde_json::to_value(PayoutView::from(&payout(Pending))).unwrap();
        assert_eq!(
            none["invoice"],
            serde_json::json!({"uploaded": false, "fileName": null, "contentType": null, "size": null, "uploadedAt": null})
        );
    }
}
