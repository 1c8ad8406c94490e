//! What the API shows of a campaign's risk settings.

use domain::money::json_number_opt;
use domain::risk::RiskSettings;
use rust_decimal::Decimal;
use serde::Serialize;

/// A campaign's risk settings in its view.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = CampaignRisk)]
pub struct RiskSettingsView {
    pub hold_flagged: bool,
    /// null: LARGE_AMOUNT is off.
    #[serde(with = "json_number_opt")]
    #[schema(value_type = Option<f64>)]
    pub review_above: Option<Decimal>,
    pub max_clicks_per_hour: u32,
    pub max_conversions_per_hour: u32,
}

impl From<&RiskSettings> for RiskSettingsView {
    fn from(s: &RiskSettings) -> Self {
        RiskSettingsView {
            hold_flagged: s.hold_flagged,
            review_above: s.review_above,
            max_clicks_per_hour: s.max_clicks_per_hour,
            max_conversions_per_hour: s.max_conversions_per_hour,
        }
    }
}
