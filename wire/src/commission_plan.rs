//! What a commission preview answers.

use domain::commission_plan::CommissionSource;
use domain::commission_terms::CommissionReason;
use domain::money::json_number;
use rust_decimal::Decimal;
use serde::Serialize;

/// What a payment would earn now, and why.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = CommissionPreview)]
pub struct PreviewView {
    /// In the payment's currency, rounded half-even to its minor unit.
    #[serde(with = "json_number")]
    #[schema(value_type = f64)]
    pub commission: Decimal,
    pub commission_source: CommissionSource,
    /// Whether the campaign's recurring rules let such a payment earn (always true for a
    /// first payment).
    pub recurring_earns: bool,
    /// Why it earns 0, when a rule says so.
    pub reason: Option<CommissionReason>,
}
