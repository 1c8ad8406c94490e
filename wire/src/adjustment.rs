//! What the API, the events and the portal show of an adjustment.

use chrono::{DateTime, Utc};
use domain::conversion::Adjustment;
use domain::money::{json_number, Currency};
use domain::timestamp::serde_ts;
use rust_decimal::Decimal;
use serde::Serialize;

/// A manual adjustment as the API shows it.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Adjustment)]
pub struct AdjustmentView<'a> {
    #[schema(pattern = "^adj_[0-9A-HJKMNP-TV-Z]{26}$", example = json!("adj_01JD3Q5W6X7Y8Z9A0B1C2D3E4F"))]
    pub id: &'a str,
    pub object: &'static str,
    pub affiliate_id: &'a str,
    /// Positive: a bonus; negative: a manual clawback. Major units of `currency`, exact to its
    /// minor unit.
    #[serde(with = "json_number")]
    #[schema(value_type = f64)]
    pub amount: Decimal,
    #[schema(value_type = domain::money::Currency)]
    pub currency: Currency,
    pub reason: &'a str,
    /// The merchant's idempotency key, when one was given.
    pub external_id: Option<&'a str>,
    /// The payout it was netted into; null while it waits in the affiliate's pool (and again
    /// when that payout is rejected or cancelled).
    #[schema(pattern = "^po_[0-9A-HJKMNP-TV-Z]{26}$")]
    pub payout_id: Option<&'a str>,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
}

impl<'a> From<&'a Adjustment> for AdjustmentView<'a> {
    fn from(a: &'a Adjustment) -> Self {
        AdjustmentView {
            id: &a.id,
            object: "adjustment",
            affiliate_id: &a.affiliate_id,
            amount: a.amount,
            currency: a.currency,
            reason: a.reason.as_deref().unwrap_or_default(),
            external_id: a.external_id.as_deref(),
            payout_id: a.payout_id.as_deref(),
            created_at: a.created_at,
        }
    }
}

/// A manual adjustment as the affiliate's portal shows it (no `externalId`:
/// the merchant's own key).
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PortalAdjustment)]
pub struct PortalAdjustment<'a> {
    pub id: &'a str,
    /// Positive: a bonus; negative: taken back.
    #[serde(with = "json_number")]
    #[schema(value_type = f64)]
    pub amount: Decimal,
    #[schema(value_type = domain::money::Currency)]
    pub currency: Currency,
    pub reason: &'a str,
    /// The payout it was netted into; null while it waits for your next payout.
    pub payout_id: Option<&'a str>,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
}

impl<'a> From<&'a Adjustment> for PortalAdjustment<'a> {
    fn from(a: &'a Adjustment) -> Self {
        PortalAdjustment {
            id: &a.id,
            amount: a.amount,
            currency: a.currency,
            reason: a.reason.as_deref().unwrap_or_default(),
            payout_id: a.payout_id.as_deref(),
            created_at: a.created_at,
        }
    }
}
