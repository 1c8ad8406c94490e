//! Events rendered: each planned event's subject becomes the record's view,
//! where the event is written.

use domain::adjustment::AdjustmentView;
use domain::affiliate::AffiliateView;
use domain::application::ApplicationView;
use domain::asset::AssetView;
use domain::campaign::CampaignView;
use domain::commission_tiers::TierChangeView;
use domain::conversion::ConversionView;
use domain::event::{Event, Published, Subject};
use domain::payout::PayoutView;
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
