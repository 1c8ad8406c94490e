//! What the API shows of a campaign's risk settings, and the body that
//! changes them.

use crate::number::Number;
use domain::patch::Patch;
use domain::risk::RiskChanges;
use domain::risk::RiskSettings;
use serde::{Deserialize, Serialize};

/// A campaign's risk settings in its view.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = CampaignRisk)]
pub struct RiskSettingsView {
    pub hold_flagged: bool,
    /// null: LARGE_AMOUNT is off.
    pub review_above: Option<Number>,
    pub max_clicks_per_hour: u32,
    pub max_conversions_per_hour: u32,
}

impl From<&RiskSettings> for RiskSettingsView {
    fn from(s: &RiskSettings) -> Self {
        RiskSettingsView {
            hold_flagged: s.hold_flagged,
            review_above: s.review_above.map(Number),
            max_clicks_per_hour: s.max_clicks_per_hour,
            max_conversions_per_hour: s.max_conversions_per_hour,
        }
    }
}

/// A campaign's `risk` in a request: on create every field is optional (its
/// default applies); on update only the fields sent change. Unknown fields are rejected.
#[derive(utoipa::ToSchema, Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = CampaignRiskInput)]
pub struct RiskSettingsInput {
    /// Conversions with a HIGH flag become ON_HOLD (default true).
    #[serde(default)]
    #[schema(value_type = bool)]
    pub hold_flagged: Patch<bool>,
    /// Payments above this amount (in the payment's currency, major units, at most 28
    /// decimals) are flagged LARGE_AMOUNT; null turns the rule off (the default).
    #[serde(default)]
    #[schema(value_type = Option<domain::field::Amount>)]
    pub review_above: Patch<domain::money::JsonDecimal>,
    /// Clicks per hour for one code from one network before CLICK_FLOOD (default 30).
    #[serde(default)]
    #[schema(value_type = i64, minimum = 1, maximum = 100000)]
    pub max_clicks_per_hour: Patch<i64>,
    /// Conversions per hour per affiliate and customer, or per network, before
    /// RAPID_CONVERSIONS (default 10).
    #[serde(default)]
    #[schema(value_type = i64, minimum = 1, maximum = 100000)]
    pub max_conversions_per_hour: Patch<i64>,
}

impl From<RiskSettingsInput> for RiskChanges {
    fn from(b: RiskSettingsInput) -> Self {
        RiskChanges {
            hold_flagged: b.hold_flagged,
            review_above: b.review_above,
            max_clicks_per_hour: b
                .max_clicks_per_hour
                .map(|v| ranged!(RiskSettingsInput, "maxClicksPerHour", v, in "risk")),
            max_conversions_per_hour: b
                .max_conversions_per_hour
                .map(|v| ranged!(RiskSettingsInput, "maxConversionsPerHour", v, in "risk")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::risk::{RiskSettings, DEFAULT_MAX_CONVERSIONS_PER_HOUR};
    use domain::validation::Issues;
    use rust_decimal::Decimal;

    /// The changes a `risk` body asks for, as the route reads them.
    fn changes(json: serde_json::Value) -> RiskChanges {
        serde_json::from_value::<RiskSettingsInput>(json)
            .unwrap()
            .into()
    }

    #[test]
    fn settings_apply_what_is_sent_and_check_ranges() {
        let mut issues = Issues::new();
        let input = changes(serde_json::json!({"reviewAbove": 500, "maxClicksPerHour": 5}));
        let s = RiskSettings::default().apply(input, &mut issues);
        assert!(issues.finish().is_ok());
        assert_eq!(s.review_above, Some(Decimal::from(500)));
        assert_eq!(s.max_clicks_per_hour, 5);
        assert_eq!(s.max_conversions_per_hour, DEFAULT_MAX_CONVERSIONS_PER_HOUR);
        assert!(s.hold_flagged);
        for bad in [
            serde_json::json!({"maxClicksPerHour": 0}),
            serde_json::json!({"maxConversionsPerHour": 100001}),
            serde_json::json!({"reviewAbove": 0}),
            serde_json::json!({"reviewAbove": -1}),
            serde_json::json!({"holdFlagged": null}),
        ] {
            let mut issues = Issues::new();
            let input = changes(bad.clone());
            RiskSettings::default().apply(input, &mut issues);
            assert!(issues.finish().is_err(), "{bad}");
        }
        let mut issues = Issues::new();
        let off = changes(serde_json::json!({"reviewAbove": null}));
        assert_eq!(s.apply(off, &mut issues).review_above, None);
    }
}
