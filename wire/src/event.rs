//! Events rendered: each planned event's subject becomes the record's view,
//! where the event is written.

use crate::adjustment::AdjustmentView;
use crate::affiliate::AffiliateView;
use crate::application::ApplicationView;
use crate::asset::AssetView;
use crate::campaign::CampaignView;
use crate::commission_tiers::TierChangeView;
use crate::conversion::ConversionView;
use crate::payout::PayoutView;
use domain::change::Subject;
use domain::Error;

/// The data of an event as it is stored and sent: its subject rendered to
/// the record's view after the change, as JSON text (rendered once, where
/// the event is written).
pub fn data_text(subject: &Subject) -> Result<String, Error> {
    let rendered = match subject {
        Subject::Campaign(r) => serde_json::to_string(&CampaignView::from(&**r)),
        Subject::Affiliate(r) => serde_json::to_string(&AffiliateView::from(&**r)),
        Subject::Application(r) => serde_json::to_string(&ApplicationView::from(&**r)),
        Subject::Conversion(r) => serde_json::to_string(&ConversionView::from(&**r)),
        Subject::Payout(r) => serde_json::to_string(&PayoutView::from(&**r)),
        Subject::Adjustment(r) => serde_json::to_string(&AdjustmentView::from(&**r)),
        Subject::Asset(r) => serde_json::to_string(&AssetView::from(&**r)),
        Subject::TierChange(r) => serde_json::to_string(&TierChangeView::from(&**r)),
    };
    rendered.map_err(Error::internal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::change::{Event, TierChange};
    use domain::event::EventType;
    use domain::timestamp::parse_datetime;

    #[test]
    fn an_event_s_data_is_its_subject_rendered_to_the_view() {
        let at = parse_datetime("2026-11-22T10:00:00.123Z").unwrap();
        let change = TierChange {
            affiliate_id: "aff_1".into(),
            campaign_id: "cmp_1".into(),
            tier: None,
            previous_tier: Some("Gold".into()),
            customers_referred: 3,
            conversion_id: "cnv_1".into(),
        };
        let e = Event::new(EventType::AffiliateTierChanged, &change, at);
        let data = data_text(&e.subject).unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&data).unwrap(),
            serde_json::json!({"affiliateId": "aff_1", "campaignId": "cmp_1", "tier": null,
                "previousTier": "Gold", "customersReferred": 3, "conversionId": "cnv_1"})
        );
        // The view's fields in their order, as the stored text keeps them.
        assert!(data.starts_with(r#"{"affiliateId":"aff_1","campaignId":"cmp_1","tier":null"#));
    }
}
