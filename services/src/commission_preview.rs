//! What a payment with given facts would earn now, and why: the campaign
//! (and the affiliate, when named) read at once, then `commission::decide`,
//! the postback's own function. Nothing is written.

use crate::app::App;
use chrono::{DateTime, Utc};

use domain::commission::{self, Decision, Earner};
use domain::commission_plan::PreviewRequest;
use domain::error::{Error, Result};
use domain::tenant::Tenant;
use store::{affiliates, campaigns};

/// What `request` would earn on campaign `campaign_id` now (404 when
/// unknown; an affiliate of another campaign is 404 too).
pub async fn preview(
    app: &App,
    tenant: &Tenant,
    campaign_id: &str,
    request: &PreviewRequest,
    now: DateTime<Utc>,
) -> Result<Decision> {
    let store = &app.store;
    let affiliate = async {
        match &request.affiliate_id {
            Some(id) => affiliates::get(store, tenant, id).await.map(Some),
            None => Ok(None),
        }
    };
    let (campaign, affiliate) = tokio::join!(campaigns::get(store, tenant, campaign_id), affiliate);
    let (campaign, affiliate) = (campaign?, affiliate?);
    if affiliate
        .as_ref()
        .is_some_and(|a| a.campaign_id != campaign.id)
    {
        return Err(Error::NotFound("affiliate"));
    }
    let earner = Earner {
        active: affiliate
            .as_ref()
            .is_none_or(|a| a.status == domain::affiliate::AffiliateStatus::Active),
        commission_override: affiliate
            .as_ref()
            .and_then(|a| a.commission_override.as_ref()),
        // The affiliate's count, a first payment's customer added to it.
        customers: request.customers.unwrap_or_else(|| {
            affiliate.as_ref().map_or(0, |a| {
                let first = u32::from(request.payment_number == 1);
                a.referred.customers.saturating_add(first)
            })
        }),
        lead_paid: false,
    };
    Ok(commission::decide(&campaign, &earner, &request.facts(now)))
}
