//! A merchant's campaigns: created and edited through the domain's rules,
//! each change written with its event.

use crate::app::App;
use crate::edited::edit;
use domain::campaign::{Campaign, CampaignChanges, CampaignDraft};
use domain::error::Result;
use domain::tenant::Tenant;
use domain::timestamp;
use store::{campaigns, Store};

/// A new campaign, with its `campaign.created` event.
pub async fn create(app: &App, tenant: &Tenant, input: CampaignDraft) -> Result<Campaign> {
    let campaign = Campaign::create(input, timestamp::now())?;
    campaigns::insert(&app.store, tenant, &campaign).await?;
    Ok(campaign)
}

/// A merchant's PATCH of a campaign.
pub async fn update(
    app: &App,
    tenant: &Tenant,
    id: &str,
    patch: &CampaignChanges,
) -> Result<Campaign> {
    edit(&app.store, tenant, id, |c: &Campaign| {
        c.apply(patch.clone(), timestamp::now())
    })
    .await
}

/// NOT_FOUND unless `id`, when given, is one of the tenant's campaigns.
pub(crate) async fn exists(store: &Store, tenant: &Tenant, id: Option<&str>) -> Result<()> {
    if let Some(id) = id {
        campaigns::get(store, tenant, id).await?;
    }
    Ok(())
}
