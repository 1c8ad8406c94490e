//! What the API and the events show of a conversion.

use chrono::{DateTime, Utc};
use domain::commission_plan::CommissionSource;
use domain::commission_terms::CommissionReason;
use domain::metadata::Metadata;
use domain::money::{json_number, Currency};
use domain::risk::Risk;
use domain::timestamp::{serde_ts, serde_ts_opt};
use rust_decimal::Decimal;
use serde::Serialize;

use domain::conversion::{AttributionMethod, Conversion, ConversionStatus, ConversionType};

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
    #[schema(value_type = domain::money::Currency)]
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
    #[schema(value_type = domain::metadata::MetadataSchema)]
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
            .and_then(domain::referral::CustomerKey::parse)
            .is_some_and(|k| matches!(k, domain::referral::CustomerKey::EmailHash(_)));
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
