//! Conversions: the postback body, its validation, the stored record and its view.

use chrono::{DateTime, Duration, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::affiliate::AffiliateStatus;
use crate::commission::CommissionReason;
use crate::commission_plan::{CommissionSource, SourceKind};
pub use crate::commission_terms::ConversionType;
use crate::enums::wire_enum;
use crate::error::Error;
use crate::event::{Event, EventType};
use crate::field;
use crate::metadata::{self, Metadata};
use crate::money::{json_number, json_number_opt, Currency};
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
    #[serde(default)]
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

    /// Ends a hold: ON_HOLD -> PENDING, or APPROVED when its hold period is
    /// over at `now` (409 from any other status). Its flags stay as history.
    /// The events: `conversion.released`, and `conversion.approved` when it
    /// is payable at once.
    pub fn release(&self, now: DateTime<Utc>) -> Result<Release, Error> {
        if self.status != ConversionStatus::OnHold || self.payout_id.is_some() {
            return Err(self.wrong_state("release"));
        }
        let after = match self.payable_at <= now {
            true => self.moved_to(ConversionStatus::Approved, now),
            false => self.moved_to(ConversionStatus::Pending, now),
        };
        let mut events = vec![Event::new(
            EventType::ConversionReleased,
            ConversionView::from(&after),
            now,
        )?];
        if after.status == ConversionStatus::Approved {
            events.push(Event::new(
                EventType::ConversionApproved,
                ConversionView::from(&after),
                now,
            )?);
        }
        Ok(Release {
            before: self.clone(),
            after,
            events,
        })
    }

    /// The conversion in `status` at `now`.
    fn moved_to(&self, status: ConversionStatus, now: DateTime<Utc>) -> Conversion {
        let mut c = self.clone();
        c.status = status;
        c.updated_at = now;
        c
    }

    fn wrong_state(&self, action: &'static str) -> Error {
        Error::InvalidState {
            resource: "conversion",
            current: self.status.as_str().to_string(),
            action,
        }
    }

    /// Reverses (refunds) a conversion at the merchant's request, all of it
    /// or `part` of its amount; `payout` says whether the payout holding it,
    /// when one does, is paid.
    ///
    /// - `part` must be above 0, at most what is left to reverse
    ///   (`amount - reversedAmount`) and exact to the currency's minor unit
    ///   (400 otherwise). Without it, everything left is reversed.
    /// - The commission is cut in proportion: the total given back is
    ///   `commission * reversedAmount / amount`, rounded half-even to the
    ///   minor unit, and all of it once the whole amount is reversed, so
    ///   partial cuts never add up to more (or less) than the commission.
    /// - Fully reversed: REVERSED. Partly: the status stays.
    /// - In no payout and PENDING, APPROVED or UNATTRIBUTED: the affiliate
    ///   gives the cut back (`earned` drops).
    /// - PAID in a PAID payout: `earned` drops, `paid` stays, and a negative
    ///   adjustment (clawback) of the cut is netted against the affiliate's
    ///   next payout in that currency.
    /// - In an open payout (or one still settling or releasing): 409 naming it.
    /// - Anything else (REVERSED, ...): 409.
    pub fn reverse(
        &self,
        payout: HoldingPayout,
        part: Option<Decimal>,
        reason: Option<String>,
        now: DateTime<Utc>,
    ) -> Result<Reversal, Error> {
        self.reverse_as(ReversedBy::Merchant, payout, part, reason, now)
    }

    /// Reverses a conversion for a payment provider's refund or lost
    /// dispute, which cannot be refused: as [`Conversion::reverse`], except
    /// that a conversion an unpaid payout holds keeps its place there (the
    /// payout pays what it claimed) and the cut becomes a clawback netted
    /// against the affiliate's next payout, as for a paid one. Should that
    /// payout be released instead, [`Conversion::released`] gives the
    /// clawback back.
    pub fn refund(
        &self,
        payout: HoldingPayout,
        part: Option<Decimal>,
        reason: Option<String>,
        now: DateTime<Utc>,
    ) -> Result<Reversal, Error> {
        self.reverse_as(ReversedBy::Provider, payout, part, reason, now)
    }

    fn reverse_as(
        &self,
        by: ReversedBy,
        payout: HoldingPayout,
        part: Option<Decimal>,
        reason: Option<String>,
        now: DateTime<Utc>,
    ) -> Result<Reversal, Error> {
        use ConversionStatus::{Approved, Paid};
        let clawback = match (&self.payout_id, payout, self.status, by) {
            (None, _, st, _) if st.reversible() => false,
            (Some(_), HoldingPayout::Paid, Paid, _) => true,
            (
                Some(_),
                HoldingPayout::Paid | HoldingPayout::Unpaid,
                Approved | Paid,
                ReversedBy::Provider,
            ) => true,
            (Some(po), _, Approved | Paid, _) => {
                return Err(Error::InPayout {
                    current: self.status.as_str().to_string(),
                    payout_id: po.clone(),
                })
            }
            _ => return Err(self.wrong_state("reverse")),
        };
        let mut reversed = self.reversed_part(part, now)?;
        let cut = reversed.commission_reversed - self.commission_reversed;
        let give_back = self
            .affiliate_id
            .as_ref()
            .filter(|_| cut > Decimal::ZERO)
            .map(|aff| Earning {
                affiliate_id: aff.clone(),
                currency: self.currency,
                amount: -cut,
                while_status: None,
            });
        let clawback = give_back
            .as_ref()
            .filter(|_| clawback)
            .map(|e| Adjustment::clawback(self, e.amount, now));
        if clawback.is_some() {
            reversed.commission_clawed_back += cut;
        }
        reversed.reversal_reason = reason;
        let event = Event::new(
            EventType::ConversionReversed,
            ConversionView::from(&reversed),
            now,
        )?;
        Ok(Reversal {
            event,
            from: self.status,
            before: self.clone(),
            reversed,
            give_back,
            clawback,
        })
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
    fn reversed_part(
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

/// A hold ended: the conversion before and after, and the events to record.
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    pub before: Conversion,
    pub after: Conversion,
    pub events: Vec<Event>,
}

/// Who asks for a reversal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReversedBy {
    /// The merchant's call: refused while an unpaid payout holds it.
    Merchant,
    /// A payment provider's refund or dispute: never refused for a payout.
    Provider,
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

/// An amount netted into an affiliate's next payout in its currency: the
/// clawback of a PAID conversion that was reversed (negative; positive when
/// given back), or a merchant's manual adjustment (`domain::adjustment`: a
/// bonus or a manual clawback, with its reason).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Adjustment {
    pub id: String,
    pub affiliate_id: String,
    pub campaign_id: Option<String>,
    pub currency: Currency,
    /// Negative to claw back, positive to pay more.
    pub amount: Decimal,
    /// The reversed conversion it claws back; none for a manual adjustment.
    #[serde(default)]
    pub conversion_id: Option<String>,
    /// A manual adjustment's reason, as the merchant gave it.
    #[serde(default)]
    pub reason: Option<String>,
    /// A manual adjustment's `externalId`, when the merchant gave one.
    #[serde(default)]
    pub external_id: Option<String>,
    /// The payout it was netted into, once it was.
    #[serde(default)]
    pub payout_id: Option<String>,
    #[serde(with = "serde_ts")]
    pub created_at: DateTime<Utc>,
}

impl Adjustment {
    /// The adjustment netted into payout `payout_id`.
    pub fn claimed(&self, payout_id: &str) -> Adjustment {
        Adjustment {
            payout_id: Some(payout_id.to_string()),
            ..self.clone()
        }
    }

    /// The adjustment back in its pool when its payout is released.
    pub fn released(&self) -> Adjustment {
        Adjustment {
            payout_id: None,
            ..self.clone()
        }
    }

    /// The clawback of a paid conversion's commission (`amount` negative),
    /// or its return (`amount` positive) when its payout is released.
    pub fn clawback(c: &Conversion, amount: Decimal, now: DateTime<Utc>) -> Adjustment {
        Adjustment {
            id: crate::ids::new_id(crate::ids::IdKind::Adjustment),
            affiliate_id: c.affiliate_id.clone().unwrap_or_default(),
            campaign_id: c.campaign_id.clone(),
            currency: c.currency,
            amount,
            conversion_id: Some(c.id.clone()),
            reason: None,
            external_id: None,
            payout_id: None,
            created_at: now,
        }
    }
}

/// A change of an affiliate's `earned` total in one currency.
#[derive(Debug, Clone, PartialEq)]
pub struct Earning {
    pub affiliate_id: String,
    pub currency: Currency,
    /// Negative to give commission back.
    pub amount: Decimal,
    /// Applies only while the affiliate is in this status, when set.
    pub while_status: Option<AffiliateStatus>,
}

impl Earning {
    /// The earning as committed: its affiliate-status condition is kept only
    /// for an affiliate known from an earlier request (a cache). One read in
    /// this request is as fresh as the condition: a status change committed
    /// between that read and the commit is ordered after the earning either
    /// way, and the condition costs a write.
    pub fn to_commit(&self, affiliate_cached: bool) -> Earning {
        Earning {
            while_status: self.while_status.filter(|_| affiliate_cached),
            ..self.clone()
        }
    }
}

/// A conversion's reversal: the conversion after it, the status it left
/// (its rollups move from there), the commission its affiliate gives back
/// and, for a paid conversion, the clawback netted into the next payout.
#[derive(Debug, Clone, PartialEq)]
pub struct Reversal {
    pub reversed: Conversion,
    /// The conversion as it was read.
    pub before: Conversion,
    pub from: ConversionStatus,
    pub give_back: Option<Earning>,
    pub clawback: Option<Adjustment>,
    /// `conversion.reversed`, recorded with the change.
    pub event: Event,
}

/// A cookieless server-to-server conversion. Unknown fields give 400 VALIDATION_FAILED.
/// Attribution signals that are unknown, expired, of another campaign or malformed are skipped
/// (never an error): the payment is still recorded, unattributed if nothing matches.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = PostbackRequest)]
pub struct PostbackBody {
    /// A SALE's amount (required): greater than 0, below 10^12, with at most as many decimals
    /// as the currency's minor unit (USD 2, JPY 0, KWD 3). A LEAD's: 0 or left out.
    #[serde(default, with = "json_number_opt")]
    #[schema(value_type = Option<field::AmountOrZero>)]
    pub amount: Option<Decimal>,
    /// ISO 4217, any letter case (see `CurrencyCode`); `amount` may have at most its minor
    /// unit's decimals.
    #[schema(value_type = crate::money::Currency)]
    pub currency: String,
    /// Idempotency key, unique across every account and mode: the same key again from this
    /// account and mode answers 200 with the original conversion (header `Idempotent-Replayed:
    /// true`) and writes nothing; from another account, or from the other mode of this one, 409
    /// ALREADY_EXISTS.
    #[schema(value_type = field::Key)]
    pub external_id: String,
    #[schema(value_type = ConversionType)]
    pub conversion_type: String,
    /// Explicit code attribution (any letter case).
    #[serde(default)]
    #[schema(value_type = Option<field::Key>)]
    pub affiliate_code: Option<String>,
    /// `ses_…` from the browser script (after consent). Counts when the payment's `occurredAt`
    /// falls inside its click's window: from 5 minutes before the click until `expiresAt`
    /// (`cookieDays` after the click).
    #[serde(default)]
    #[schema(value_type = Option<field::Key>)]
    pub session_id: Option<String>,
    /// `clk_…`, same window rule as `sessionId`.
    #[serde(default)]
    #[schema(value_type = Option<field::Key>)]
    pub click_id: Option<String>,
    /// Hex SHA-256 of the trimmed, lowercased e-mail (stored lowercase).
    #[serde(default)]
    #[schema(value_type = Option<field::EmailHash>)]
    pub customer_email_hash: Option<String>,
    /// Hashed on arrival; the address itself is never stored. With `customerEmailHash` too,
    /// both must denote the same address.
    #[serde(default)]
    #[schema(value_type = Option<field::Email>)]
    pub customer_email: Option<String>,
    /// Restricts attribution to this campaign (signals of other campaigns are skipped) and
    /// files an unattributed conversion under it. Unknown: 404 NOT_FOUND.
    #[serde(default)]
    #[schema(value_type = Option<field::Key>)]
    pub campaign_id: Option<String>,
    /// The merchant's customer id. Send it (or the e-mail) on every payment of a customer so
    /// later payments are recognised and the recurring rules apply.
    #[serde(default)]
    #[schema(value_type = Option<field::CustomerRef>)]
    pub customer_id: Option<String>,
    /// The product paid for (1-255 characters): `commissionRules` may pay by it.
    #[serde(default)]
    #[schema(value_type = Option<field::Key>)]
    pub product_id: Option<String>,
    /// The plan or price paid (1-255 characters): `commissionRules` may pay by it.
    #[serde(default)]
    #[schema(value_type = Option<field::Key>)]
    pub plan_id: Option<String>,
    /// When the payment happened; default now. At most 5 minutes in the future; may be
    /// back-dated. Stored at millisecond precision. Not before 1970-01-01T00:00:00Z.
    #[serde(default)]
    #[schema(format = DateTime)]
    pub occurred_at: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<crate::metadata::MetadataSchema>)]
    pub metadata: Option<Metadata>,
}

/// A validated postback.
#[derive(Debug, Clone, PartialEq)]
pub struct Postback {
    /// 0 for a LEAD.
    pub amount: Decimal,
    pub conversion_type: ConversionType,
    pub currency: Currency,
    pub external_id: String,
    pub affiliate_code: Option<String>,
    pub session_id: Option<String>,
    pub click_id: Option<String>,
    /// `cid:<customerId>`.
    pub customer_id: Option<CustomerKey>,
    /// `email:<sha256>`, from `customerEmail` or `customerEmailHash`.
    pub email: Option<CustomerKey>,
    pub campaign_id: Option<String>,
    pub occurred_at: DateTime<Utc>,
    pub metadata: Metadata,
    /// Other ids of the same payment (a provider's payment intent or
    /// charge), claimed with its `externalId`: a postback or event naming
    /// any of them replays the one conversion. None from the HTTP postback.
    pub aliases: Vec<String>,
    /// The provider's id of the promotion code a provider's payment carried
    /// (a Stripe `promo_…`, a Paddle `dsc_…`). None from the HTTP postback.
    pub promotion_code: Option<String>,
    pub product_id: Option<String>,
    pub plan_id: Option<String>,
}

/// How far in the future `occurredAt` may be (clock skew).
pub const FUTURE_TOLERANCE_MINUTES: i64 = 5;

/// The postback's optional keys (attribution signals, product and plan),
/// each by [`field::Key`]'s rule.
struct Keys {
    affiliate_code: Option<String>,
    session_id: Option<String>,
    click_id: Option<String>,
    campaign_id: Option<String>,
    product_id: Option<String>,
    plan_id: Option<String>,
}

impl Keys {
    /// Checks every key given, recording each issue.
    fn checked(self, issues: &mut Issues) -> Keys {
        for (path, v) in [
            ("affiliateCode", &self.affiliate_code),
            ("sessionId", &self.session_id),
            ("clickId", &self.click_id),
            ("campaignId", &self.campaign_id),
            ("productId", &self.product_id),
            ("planId", &self.plan_id),
        ] {
            if let Some(v) = v {
                issues.check(field::Key::parse(path, v));
            }
        }
        self
    }
}

/// The issue of a `conversionType` that is none of the types.
fn unknown_type(issues: &mut Issues) {
    issues.add(
        &["conversionType"],
        "invalid_enum_value",
        format!(
            "conversionType must be one of {}",
            ConversionType::ALL.map(ConversionType::as_str).join(", ")
        ),
    );
}

/// A postback's amount: required for a SALE (an unknown type is checked
/// as one), 0 or left out for a LEAD.
fn amount_of(
    amount: Option<Decimal>,
    kind: Option<ConversionType>,
    currency: Option<Currency>,
    issues: &mut Issues,
) -> Decimal {
    match (amount, kind) {
        (None, Some(ConversionType::Lead)) => {}
        (None, _) => issues.add(&["amount"], "required", "amount is required for a SALE"),
        (Some(a), k) => {
            crate::commission_terms::check_amount(k.unwrap_or_default(), a, currency, issues)
        }
    }
    amount.unwrap_or_default()
}

/// The customer's e-mail identity from `customerEmail` and/or
/// `customerEmailHash` (both given: they must agree).
fn email_identity(
    email: Option<&str>,
    hash: Option<&str>,
    issues: &mut Issues,
) -> Option<CustomerKey> {
    let from_email = email.and_then(|e| issues.check(CustomerKey::from_email(e)));
    // Hex is case-blind: an upper-case hash is accepted and stored in lowercase.
    let from_hash = hash.and_then(|h| issues.check(CustomerKey::from_email_hash(h)));
    match (from_email, from_hash) {
        (Some(a), Some(b)) if a != b => {
            issues.add(
                &["customerEmailHash"],
                "invalid_combination",
                "customerEmailHash is not the hash of customerEmail; send one of them",
            );
            None
        }
        (Some(k), _) | (None, Some(k)) => Some(k),
        (None, None) => None,
    }
}

/// `occurredAt`: now when absent; at most a few minutes in the future, not before 1970.
fn occurred_at(raw: Option<&str>, now: DateTime<Utc>, issues: &mut Issues) -> DateTime<Utc> {
    match raw {
        None => now,
        Some(raw) => match timestamp::parse_datetime(raw) {
            Some(t) if t > now + Duration::minutes(FUTURE_TOLERANCE_MINUTES) => {
                issues.add(
                    &["occurredAt"],
                    "too_big",
                    format!(
                        "occurredAt must be at most {FUTURE_TOLERANCE_MINUTES} minutes in the future"
                    ),
                );
                now
            }
            Some(t) if t.timestamp() < 0 => {
                issues.add(
                    &["occurredAt"],
                    "too_small",
                    "occurredAt must not be before 1970",
                );
                now
            }
            Some(t) => t,
            None => {
                issues.add(
                    &["occurredAt"],
                    "invalid_date",
                    "occurredAt must be an ISO-8601 date-time with an offset",
                );
                now
            }
        },
    }
}

impl PostbackBody {
    /// Checks every field and reports every problem at once.
    pub fn validate(self, now: DateTime<Utc>) -> Result<Postback, Error> {
        let mut issues = Issues::new();
        let currency = issues.check(Currency::parse("currency", &self.currency));
        let kind = ConversionType::parse(&self.conversion_type);
        let amount = amount_of(self.amount, kind, currency, &mut issues);
        issues.check(field::Key::parse("externalId", &self.external_id));
        if kind.is_none() {
            unknown_type(&mut issues);
        }
        let keys = Keys {
            affiliate_code: self.affiliate_code,
            session_id: self.session_id,
            click_id: self.click_id,
            campaign_id: self.campaign_id,
            product_id: self.product_id,
            plan_id: self.plan_id,
        }
        .checked(&mut issues);
        let customer_id = self
            .customer_id
            .as_deref()
            .and_then(|id| issues.check(CustomerKey::from_id(id)));
        let email = email_identity(
            self.customer_email.as_deref(),
            self.customer_email_hash.as_deref(),
            &mut issues,
        );
        let occurred_at = occurred_at(self.occurred_at.as_deref(), now, &mut issues);
        let metadata = self.metadata.unwrap_or_default();
        metadata::validate(&metadata, &mut issues);
        issues.finish()?;
        Ok(Postback {
            amount,
            conversion_type: kind.unwrap_or_default(),
            currency: currency.expect("checked above"),
            external_id: self.external_id,
            affiliate_code: keys.affiliate_code,
            session_id: keys.session_id,
            click_id: keys.click_id,
            customer_id,
            email,
            campaign_id: keys.campaign_id,
            // Stored and compared at the API's millisecond precision.
            occurred_at: truncate_millis(occurred_at),
            metadata,
            aliases: Vec::new(),
            promotion_code: None,
            product_id: keys.product_id,
            plan_id: keys.plan_id,
        })
    }
}

impl Postback {
    /// Every id the payment is claimed by: its `externalId` first, then its
    /// aliases (each once).
    pub fn claimed_ids(&self) -> Vec<&str> {
        let mut ids = vec![self.external_id.as_str()];
        for a in &self.aliases {
            if !ids.contains(&a.as_str()) {
                ids.push(a);
            }
        }
        ids
    }

    /// The customer identities the payment names, strongest first: the
    /// `customerId`, then the e-mail hash. The conversion's referral
    /// (`customerRef`) is the first of them.
    pub fn customer_keys(&self) -> Vec<CustomerKey> {
        self.customer_id
            .iter()
            .chain(self.email.iter())
            .cloned()
            .collect()
    }

    /// The identity of a customer the postback names only through the browser
    /// session or click it came from (when it names no customer id or e-mail).
    pub fn fallback_key(&self) -> Option<CustomerKey> {
        if self.customer_id.is_some() || self.email.is_some() {
            return None;
        }
        self.session_id
            .as_deref()
            .map(CustomerKey::from_session)
            .or_else(|| self.click_id.as_deref().map(CustomerKey::from_click))
    }
}

/// Drops sub-millisecond digits, so stored and compared times agree.
pub fn truncate_millis(t: DateTime<Utc>) -> DateTime<Utc> {
    timestamp::parse_datetime(&timestamp::format(&t)).unwrap_or(t)
}

/// Body of release: an empty object (or no body). Any field is rejected.
#[derive(utoipa::ToSchema, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[schema(as = ReleaseRequest)]
pub struct ReleaseBody {}

/// Optional; an empty body reverses the whole conversion.
#[derive(utoipa::ToSchema, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = ReverseRequest)]
pub struct ReverseBody {
    /// The part of the payment to reverse (a partial refund), in major units of the
    /// conversion's currency: above 0, at most what is left to reverse (`amount -
    /// reversedAmount`), exact to the currency's minor unit. Absent: everything left.
    #[serde(default, with = "json_number_opt")]
    #[schema(value_type = Option<field::Amount>)]
    pub amount: Option<Decimal>,
    #[serde(default)]
    #[schema(value_type = Option<field::Reason>)]
    pub reason: Option<String>,
}

/// A validated reversal request.
#[derive(Debug, Clone, Default)]
pub struct ReverseRequest {
    /// The part to reverse; `None`: everything left.
    pub amount: Option<Decimal>,
    pub reason: Option<String>,
}

impl ReverseBody {
    /// The optional reason, at most 1000 characters, not blank; the amount is
    /// checked against the conversion when it is reversed.
    pub fn validate(self) -> Result<ReverseRequest, Error> {
        let mut issues = Issues::new();
        if let Some(r) = &self.reason {
            issues.check(field::Reason::parse("reason", r));
        }
        issues.finish()?;
        Ok(ReverseRequest {
            amount: self.amount,
            reason: self.reason,
        })
    }
}

/// A conversion (a sale reported by the merchant's server through the postback).
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Conversion)]
pub struct ConversionView<'a> {
    #[schema(pattern = "^cnv_[0-9A-HJKMNP-TV-Z]{26}$", example = json!("cnv_01JD3Q5W6X7Y8Z9A0B1C2D3E4F"))]
    pub id: &'a str,
    pub object: &'static str,
    /// The merchant's idempotency key (unique across all accounts and modes).
    pub external_id: &'a str,
    /// The attributed affiliate's campaign; for an unattributed conversion the postback's
    /// `campaignId`, else null.
    pub campaign_id: Option<&'a str>,
    /// Null when unattributed.
    pub affiliate_id: Option<&'a str>,
    /// The payment in major units of `currency`, exact to its minor unit.
    #[serde(with = "json_number")]
    #[schema(value_type = f64)]
    pub amount: Decimal,
    /// ISO 4217 code.
    #[schema(value_type = crate::money::Currency)]
    pub currency: Currency,
    pub conversion_type: ConversionType,
    /// In `currency`, rounded half-even to its minor unit. 0 when the payment earns nothing
    /// (see `commissionReason`).
    #[serde(with = "json_number")]
    #[schema(value_type = f64)]
    pub commission: Decimal,
    /// Null when the commission rules applied normally, even if the rounded commission is 0.
    pub commission_reason: Option<CommissionReason>,
    /// What decided the commission: the affiliate's override, a campaign rule (its name and
    /// 0-based index), a tier, the campaign's own rate, or NONE (see `commissionReason`).
    pub commission_source: CommissionSource,
    /// As the postback (or the provider's payment) named it.
    pub product_id: Option<&'a str>,
    /// As the postback (or the provider's payment) named it.
    pub plan_id: Option<&'a str>,
    /// The customer's n-th attributed payment in the campaign (1 = the first); null for a lead,
    /// an unattributed payment, or one recorded before payments were counted.
    pub payment_number: Option<u32>,
    pub status: ConversionStatus,
    pub attribution: AttributionMethod,
    /// The referral (customer identity) the payment belongs to: `cid:<customerId>`,
    /// `email:<sha256 hex>`, `ses:<ses_…>` or `clk:<clk_…>`. Null when unattributed or when the
    /// postback named no customer, session or click.
    pub customer_ref: Option<&'a str>,
    /// True when the customer had an attributed payment recorded before this one.
    pub is_recurring: bool,
    pub click_id: Option<&'a str>,
    pub session_id: Option<&'a str>,
    /// As the postback sent it. A plain e-mail is never stored.
    pub customer_id: Option<&'a str>,
    /// The campaign's hold period at postback time (0 without a campaign).
    #[schema(minimum = 0)]
    pub hold_days: u32,
    /// `occurredAt + holdDays` days: from then on the payout job approves the commission.
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime, example = json!("2026-11-22T10:00:00.000Z"))]
    pub payable_at: DateTime<Utc>,
    /// The payout holding this conversion, once one does.
    pub payout_id: Option<&'a str>,
    #[schema(value_type = crate::metadata::MetadataSchema)]
    pub metadata: &'a Metadata,
    /// When the payment happened (the postback's `occurredAt`, default the time of the
    /// postback). List order, `from`/`to`, summary periods and the hold period all use it.
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime, example = json!("2026-11-22T10:00:00.000Z"))]
    pub occurred_at: DateTime<Utc>,
    /// ISO-8601 UTC with milliseconds and `Z`.
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime, example = json!("2026-11-22T10:00:00.000Z"))]
    pub created_at: DateTime<Utc>,
    /// ISO-8601 UTC with milliseconds and `Z`.
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime, example = json!("2026-11-22T10:00:00.000Z"))]
    pub updated_at: DateTime<Utc>,
    /// When the conversion was last reversed (in full or in part).
    #[serde(with = "serde_ts_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub reversed_at: Option<DateTime<Utc>>,
    /// The reason given with the last reversal.
    pub reversal_reason: Option<&'a str>,
    /// The part of `amount` reversed so far (0 until a reversal; `amount` once REVERSED).
    #[serde(with = "json_number")]
    #[schema(value_type = f64, minimum = 0)]
    pub reversed_amount: Decimal,
    /// The part of `commission` given back so far: `commission * reversedAmount / amount`,
    /// rounded half-even to the minor unit. The commission still earned is `commission -
    /// commissionReversed`.
    #[serde(with = "json_number")]
    #[schema(value_type = f64, minimum = 0)]
    pub commission_reversed: Decimal,
    /// Risk flags found when it was recorded, and their level (see `docs/risk.md`).
    pub risk: &'a Risk,
}

impl ConversionView<'_> {
    /// The view with no trace of the customer's e-mail: a `customerRef`
    /// that is the e-mail's hash left out (an export leaves the API).
    pub fn without_email_hash(mut self) -> Self {
        let hashed = self
            .customer_ref
            .and_then(crate::referral::CustomerKey::parse)
            .is_some_and(|k| matches!(k, crate::referral::CustomerKey::EmailHash(_)));
        if hashed {
            self.customer_ref = None;
        }
        self
    }
}

impl<'a> From<&'a Conversion> for ConversionView<'a> {
    fn from(c: &'a Conversion) -> Self {
        ConversionView {
            id: &c.id,
            object: "conversion",
            external_id: &c.external_id,
            campaign_id: c.campaign_id.as_deref(),
            affiliate_id: c.affiliate_id.as_deref(),
            amount: c.amount,
            currency: c.currency,
            conversion_type: c.conversion_type,
            commission: c.commission,
            commission_reason: c.commission_reason,
            commission_source: c.source(),
            product_id: c.product_id.as_deref(),
            plan_id: c.plan_id.as_deref(),
            payment_number: c.payment_number,
            status: c.status,
            attribution: c.attribution,
            customer_ref: c.customer_ref.as_deref(),
            is_recurring: c.is_recurring,
            click_id: c.click_id.as_deref(),
            session_id: c.session_id.as_deref(),
            customer_id: c.customer_id.as_deref(),
            hold_days: c.hold_days,
            payable_at: c.payable_at,
            payout_id: c.payout_id.as_deref(),
            metadata: &c.metadata,
            occurred_at: c.occurred_at,
            created_at: c.created_at,
            updated_at: c.updated_at,
            reversed_at: c.reversed_at,
            reversal_reason: c.reversal_reason.as_deref(),
            reversed_amount: c.reversed_amount,
            commission_reversed: c.commission_reversed,
            risk: &c.risk,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::referral::email_hash;
    use serde_json::json;

    fn body(v: serde_json::Value) -> Result<Postback, Error> {
        crate::json_body::from_value::<PostbackBody>(v)?.validate(Utc::now())
    }

    fn issue_paths(r: Result<Postback, Error>) -> Vec<String> {
        match r {
            Err(Error::Validation(issues)) => issues
                .iter()
                .map(|i| {
                    i.path
                        .iter()
                        .map(|p| p.as_str().unwrap_or("").to_string())
                        .collect::<Vec<_>>()
                        .join(".")
                })
                .collect(),
            other => panic!("expected validation failure, got {other:?}"),
        }
    }

    fn base() -> serde_json::Value {
        json!({"amount": 19.99, "currency": "usd", "externalId": "ord_1", "conversionType": "SALE"})
    }

    fn with(extra: serde_json::Value) -> serde_json::Value {
        let mut b = base();
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    }

    #[test]
    fn an_earning_keeps_its_status_condition_only_for_a_cached_affiliate() {
        let e = Earning {
            affiliate_id: "aff_1".into(),
            currency: Currency::parse("currency", "USD").unwrap(),
            amount: Decimal::new(500, 2),
            while_status: Some(AffiliateStatus::Active),
        };
        assert_eq!(e.to_commit(true), e);
        let fresh = e.to_commit(false);
        assert_eq!(fresh.while_status, None);
        assert_eq!(
            (fresh.amount, &fresh.affiliate_id),
            (e.amount, &e.affiliate_id)
        );
        let unconditioned = Earning {
            while_status: None,
            ..e
        };
        assert_eq!(unconditioned.to_commit(true).while_status, None);
    }

    #[test]
    fn a_minimal_postback_is_valid_and_normalised() {
        let p = body(base()).unwrap();
        assert_eq!(p.amount.to_string(), "19.99");
        assert_eq!(p.currency.code(), "USD");
        assert!(p.email.is_none());
        assert!(p.customer_keys().is_empty());
        assert_eq!(p.fallback_key(), None);
        assert!(p.occurred_at <= Utc::now());
    }

    #[test]
    fn amounts_must_be_positive_and_fit_the_currency() {
        assert_eq!(issue_paths(body(with(json!({"amount": 0})))), ["amount"]);
        assert_eq!(issue_paths(body(with(json!({"amount": -1})))), ["amount"]);
        assert_eq!(
            issue_paths(body(with(json!({"amount": 19.999})))),
            ["amount"]
        );
        assert_eq!(
            issue_paths(body(with(json!({"amount": 10.5, "currency": "JPY"})))),
            ["amount"]
        );
        assert!(body(with(json!({"amount": 10.125, "currency": "KWD"}))).is_ok());
        assert_eq!(issue_paths(body(with(json!({"amount": 1e12})))), ["amount"]);
        assert!(matches!(
            body(with(json!({"amount": "19.99"}))),
            Err(Error::Validation(_))
        ));
    }

    #[test]
    fn currency_type_and_external_id_are_checked() {
        assert_eq!(
            issue_paths(body(with(json!({"currency": "ABC"})))),
            ["currency"]
        );
        assert_eq!(
            issue_paths(body(with(json!({"currency": "XAU"})))),
            ["currency"]
        );
        assert_eq!(
            issue_paths(body(with(json!({"conversionType": "REFUND"})))),
            ["conversionType"]
        );
        // A LEAD has no amount: 0 or left out.
        assert_eq!(
            issue_paths(body(with(json!({"conversionType": "LEAD"})))),
            ["amount"]
        );
        let mut lead = with(json!({"conversionType": "LEAD"}));
        lead.as_object_mut().unwrap().remove("amount");
        assert_eq!(body(lead).unwrap().amount, Decimal::ZERO);
        assert!(body(with(json!({"conversionType": "LEAD", "amount": 0}))).is_ok());
        let mut sale = with(json!({}));
        sale.as_object_mut().unwrap().remove("amount");
        assert_eq!(issue_paths(body(sale)), ["amount"]);
        assert_eq!(
            issue_paths(body(with(json!({"externalId": ""})))),
            ["externalId"]
        );
        assert_eq!(
            issue_paths(body(with(json!({"externalId": "x".repeat(256)})))),
            ["externalId"]
        );
        assert!(body(with(json!({"externalId": "x".repeat(255)}))).is_ok());
        assert_eq!(issue_paths(body(with(json!({"extra": 1})))), ["extra"]);
    }

    #[test]
    fn customer_identities_are_hashed_checked_and_ordered() {
        let h = email_hash("jane@example.com");
        let p = body(with(json!({"customerEmail": " Jane@Example.com "}))).unwrap();
        assert_eq!(p.email, Some(CustomerKey::EmailHash(h.clone())));
        let p = body(with(
            json!({"customerEmailHash": h.to_uppercase(), "customerId": "u1"}),
        ))
        .unwrap();
        assert_eq!(
            p.customer_keys()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            vec!["cid:u1".to_string(), format!("email:{h}")]
        );
        let p = body(with(json!({"sessionId": "ses_x", "clickId": "clk_y"}))).unwrap();
        assert_eq!(p.fallback_key(), Some(CustomerKey::from_session("ses_x")));
        let p = body(with(json!({"clickId": "clk_y"}))).unwrap();
        assert_eq!(p.fallback_key(), Some(CustomerKey::from_click("clk_y")));
        let p = body(with(json!({"clickId": "clk_y", "customerId": "u1"}))).unwrap();
        assert_eq!(p.fallback_key(), None);
        assert_eq!(
            issue_paths(body(with(json!({"customerEmailHash": "abc"})))),
            ["customerEmailHash"]
        );
        assert_eq!(
            issue_paths(body(with(json!({"customerEmail": "not-an-email"})))),
            ["customerEmail"]
        );
        assert_eq!(
            issue_paths(body(with(json!({"customerId": "  "})))),
            ["customerId"]
        );
        assert_eq!(
            issue_paths(body(with(json!({
                "customerEmail": "a@b.co", "customerEmailHash": h
            })))),
            ["customerEmailHash"]
        );
    }

    #[test]
    fn occurred_at_may_be_back_dated_but_not_far_in_the_future() {
        let p = body(with(json!({"occurredAt": "2020-02-29T12:00:00.123456Z"}))).unwrap();
        assert_eq!(
            timestamp::format(&p.occurred_at),
            "2020-02-29T12:00:00.123Z"
        );
        let soon = timestamp::format(&(Utc::now() + Duration::minutes(4)));
        assert!(body(with(json!({ "occurredAt": soon }))).is_ok());
        let late = timestamp::format(&(Utc::now() + Duration::minutes(6)));
        assert_eq!(
            issue_paths(body(with(json!({ "occurredAt": late })))),
            ["occurredAt"]
        );
        assert_eq!(
            issue_paths(body(with(json!({"occurredAt": "yesterday"})))),
            ["occurredAt"]
        );
    }

    #[test]
    fn every_bad_field_is_reported_at_once() {
        let paths = issue_paths(body(json!({
            "amount": 0, "currency": "US", "externalId": "", "conversionType": "sale",
            "metadata": {"k": "v".repeat(501)},
        })));
        assert_eq!(
            paths,
            [
                "currency",
                "amount",
                "externalId",
                "conversionType",
                "metadata.k"
            ]
        );
    }

    #[test]
    fn statuses_parse_and_reverse_rules() {
        for name in ConversionStatus::NAMES {
            assert_eq!(ConversionStatus::parse(name).unwrap().as_str(), name);
        }
        assert!(ConversionStatus::Pending.reversible());
        assert!(ConversionStatus::Unattributed.reversible());
        assert!(!ConversionStatus::Paid.reversible());
        assert!(!ConversionStatus::Reversed.reversible());
    }

    fn recorded(status: ConversionStatus, payout: Option<&str>) -> Conversion {
        let p = body(base()).unwrap();
        Conversion {
            id: "cnv_1".into(),
            external_id: p.external_id,
            campaign_id: Some("cmp_1".into()),
            affiliate_id: Some("aff_1".into()),
            amount: p.amount,
            currency: p.currency,
            conversion_type: ConversionType::Sale,
            commission: Decimal::new(250, 2),
            commission_reason: None,
            status,
            attribution: AttributionMethod::Code,
            customer_ref: None,
            is_recurring: false,
            click_id: None,
            session_id: None,
            customer_id: None,
            hold_days: 30,
            payable_at: p.occurred_at,
            payout_id: payout.map(str::to_string),
            metadata: Metadata::default(),
            occurred_at: p.occurred_at,
            created_at: p.occurred_at,
            updated_at: p.occurred_at,
            reversed_at: None,
            reversal_reason: None,
            reversed_amount: Decimal::ZERO,
            commission_reversed: Decimal::ZERO,
            commission_clawed_back: Decimal::ZERO,
            risk: Risk::default(),
            product_id: None,
            plan_id: None,
            commission_source: None,
            payment_number: None,
        }
    }

    #[test]
    fn reversal_transitions() {
        use ConversionStatus::*;
        let now = Utc::now();
        for (from, in_payout, ok) in [
            (Pending, false, true),
            (Approved, false, true),
            (Unattributed, false, true),
            (Approved, true, false),
            (Paid, true, false),
            (Reversed, false, false),
        ] {
            let c = recorded(from, in_payout.then_some("po_1"));
            let payout = if in_payout {
                HoldingPayout::Unpaid
            } else {
                HoldingPayout::None
            };
            match c.reverse(payout, None, Some("refund".into()), now) {
                Ok(r) => {
                    assert!(ok, "{from:?} must not reverse");
                    assert_eq!(r.from, from);
                    assert_eq!(r.reversed.status, Reversed);
                    assert_eq!(r.reversed.reversed_at, Some(now));
                    assert_eq!(r.reversed.reversal_reason.as_deref(), Some("refund"));
                    let back = r.give_back.expect("commission goes back");
                    assert_eq!(
                        (back.affiliate_id.as_str(), back.amount),
                        ("aff_1", -c.commission)
                    );
                    assert_eq!(back.while_status, None);
                    assert_eq!(r.clawback, None);
                }
                Err(Error::InvalidState { current, .. }) => {
                    assert!(!ok && !in_payout, "{from:?} must reverse");
                    assert_eq!(current, from.as_str());
                }
                Err(Error::InPayout { current, payout_id }) => {
                    assert!(!ok && in_payout, "{from:?} in a payout");
                    assert_eq!(
                        (current.as_str(), payout_id.as_str()),
                        (from.as_str(), "po_1")
                    );
                }
                Err(e) => panic!("unexpected {e:?}"),
            }
        }
        let mut free = recorded(Pending, None);
        free.commission = Decimal::ZERO;
        assert_eq!(
            free.reverse(HoldingPayout::None, None, None, now)
                .unwrap()
                .give_back,
            None
        );
        // A paid conversion of a paid payout is clawed back.
        let paid = recorded(Paid, Some("po_1"));
        let r = paid.reverse(HoldingPayout::Paid, None, None, now).unwrap();
        let claw = r.clawback.expect("clawback");
        assert_eq!(
            (claw.amount, claw.conversion_id.as_deref()),
            (-paid.commission, Some("cnv_1"))
        );
        assert_eq!(claw.payout_id, None);
        assert_eq!(r.give_back.map(|e| e.amount), Some(-paid.commission));
        // Still settling (APPROVED in a PAID payout), or in a rejected payout not yet released.
        for (st, po) in [
            (Approved, HoldingPayout::Paid),
            (Approved, HoldingPayout::Unpaid),
        ] {
            let err = recorded(st, Some("po_1"))
                .reverse(po, None, None, now)
                .unwrap_err();
            assert!(matches!(err, Error::InPayout { .. }));
        }
    }

    #[test]
    fn partial_reversals_cut_the_commission_in_proportion_and_add_up_to_it() {
        let now = Utc::now();
        let dec = |s: &str| s.parse::<Decimal>().unwrap();
        let mut c = recorded(ConversionStatus::Pending, None);
        c.amount = dec("10.00");
        c.commission = dec("3.33");
        // (part, reversedAmount, commissionReversed, cut given back, status)
        let steps = [
            (
                Some("3.33"),
                "3.33",
                "1.11",
                "1.11",
                ConversionStatus::Pending,
            ),
            (Some("0.01"), "3.34", "1.11", "0", ConversionStatus::Pending),
            (
                Some("6.65"),
                "9.99",
                "3.33",
                "2.22",
                ConversionStatus::Pending,
            ),
            (None, "10.00", "3.33", "0", ConversionStatus::Reversed),
        ];
        for (i, (part, total, commission, cut, status)) in steps.into_iter().enumerate() {
            let r = c
                .reverse(HoldingPayout::None, part.map(dec), None, now)
                .unwrap_or_else(|e| panic!("step {i}: {e:?}"));
            assert_eq!(r.reversed.reversed_amount, dec(total), "step {i}");
            assert_eq!(r.reversed.commission_reversed, dec(commission), "step {i}");
            let back = r.give_back.map_or(Decimal::ZERO, |e| -e.amount);
            assert_eq!(back, dec(cut), "step {i}");
            assert_eq!(r.reversed.status, status, "step {i}");
            assert_eq!(
                (r.from, r.before.clone()),
                (c.status, c.clone()),
                "step {i}"
            );
            assert!(r.reversed.net_commission() >= Decimal::ZERO, "step {i}");
            c = r.reversed;
        }
        // Nothing is left: another reversal is 409.
        let err = c.reverse(HoldingPayout::None, None, None, now).unwrap_err();
        assert!(matches!(err, Error::InvalidState { .. }));

        // Refused parts: above what is left, zero, more decimals than USD has.
        let mut c = recorded(ConversionStatus::Approved, None);
        c.amount = dec("10.00");
        for (part, code) in [
            ("10.01", "too_big"),
            ("0", "too_small"),
            ("1.005", "invalid_value"),
        ] {
            match c.reverse(HoldingPayout::None, Some(dec(part)), None, now) {
                Err(Error::Validation(issues)) => assert_eq!(issues[0].code, code, "{part}"),
                other => panic!("{part}: {other:?}"),
            }
        }
        // A part of a paid conversion is clawed back by the cut alone.
        let mut paid = recorded(ConversionStatus::Paid, Some("po_1"));
        paid.amount = dec("100");
        paid.commission = dec("20.00");
        let r = paid
            .reverse(HoldingPayout::Paid, Some(dec("25")), None, now)
            .unwrap();
        assert_eq!(r.reversed.status, ConversionStatus::Paid);
        assert_eq!(r.clawback.map(|a| a.amount), Some(dec("-5.00")));
        assert_eq!(r.reversed.rollup_figures(), (dec("75"), dec("15.00")));
    }

    #[test]
    fn approval_and_payment_and_stages() {
        let now = Utc::now();
        let mut c = recorded(ConversionStatus::Pending, None);
        c.payable_at = now + chrono::Duration::days(1);
        assert_eq!(c.payout_stage(), PayoutStage::AwaitingHold(c.payable_at));
        assert!(c.approve(now).is_err(), "inside its hold");
        c.payable_at = now;
        let approved = c.approve(now).unwrap();
        assert_eq!(approved.status, ConversionStatus::Approved);
        assert_eq!(approved.payout_stage(), PayoutStage::Payable);
        assert!(approved.approve(now).is_err());
        assert!(approved.pay("po_1", now).is_err(), "not in that payout");
        let mut held = approved.clone();
        held.payout_id = Some("po_1".into());
        assert_eq!(held.payout_stage(), PayoutStage::InPayout("po_1".into()));
        assert_eq!(
            held.pay("po_1", now).unwrap().status,
            ConversionStatus::Paid
        );
        assert!(held.pay("po_2", now).is_err());
        let unattributed = recorded(ConversionStatus::Unattributed, None);
        assert_eq!(unattributed.payout_stage(), PayoutStage::Outside);
    }
}
