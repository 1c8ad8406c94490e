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
use domain::change::{Event, Subject};
use domain::event::Published;
use domain::Error;
use serde_json::Value;

/// The event as it is stored and sent: its subject rendered to its view.
pub fn publish(e: &Event) -> Result<Published, Error> {
    Ok(Published {
        id: e.id.clone(),
        event_type: e.event_type,
        created_at: e.created_at,
        data: view(&e.subject)?,
    })
}

/// The record's API view after the change.
fn view(subject: &Subject) -> Result<Value, Error> {
    let rendered = match subject {
        Subject::Campaign(r) => serde_json::to_value(CampaignView::from(&**r)),
        Subject::Affiliate(r) => serde_json::to_value(AffiliateView::from(&**r)),
        Subject::Application(r) => serde_json::to_value(ApplicationView::from(&**r)),
        Subject::Conversion(r) => serde_json::to_value(ConversionView::from(&**r)),
        Subject::Payout(r) => serde_json::to_value(PayoutView::from(&**r)),
        Subject::Adjustment(r) => serde_json::to_value(AdjustmentView::from(&**r)),
        Subject::Asset(r) => serde_json::to_value(AssetView::from(&**r)),
        Subject::TierChange(r) => serde_json::to_value(TierChangeView::from(&**r)),
    };
    rendered.map_err(Error::internal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::change::TierChange;
    use domain::event::EventType;
    use domain::timestamp::parse_datetime;

    #[test]
    fn an_event_is_published_with_its_subject_rendered_to_the_view() {
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
        let p = publish(&e).unwrap();
        assert_eq!(
            (p.id.as_str(), p.event_type, p.created_at),
            (e.id.as_str(), e.event_type, at)
        );
        assert_eq!(
            p.data,
            serde_json::json!({"affiliateId": "aff_1", "campaignId": "cmp_1", "tier": null,
                "previousTier": "Gold", "customersReferred": 3, "conversionId": "cnv_1"})
        );
    }
}
