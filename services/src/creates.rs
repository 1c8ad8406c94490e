//! A merchant's creation of one record: the domain validates it (and gives
//! the event of a campaign or an asset), the campaign it names is read (404
//! when it is not the tenant's), and the store writes it with its event.

use crate::auth::sealing;
use crate::auth::signing::SigningKeys;
use domain::asset::{Asset, NewSwipeCopy};
use domain::campaign::{Campaign, NewCampaign};
use domain::error::Result;
use domain::integration::{Integration, NewIntegration};
use domain::tenant::Tenant;
use domain::timestamp;
use store::{assets, campaigns, integrations, Store};

/// A new campaign, with its `campaign.created` event.
pub async fn campaign(store: &Store, tenant: &Tenant, input: NewCampaign) -> Result<Campaign> {
    let campaign = Campaign::create(input, timestamp::now())?;
    campaigns::insert(store, tenant, &campaign).await?;
    Ok(campaign)
}

/// A new swipe-copy asset, with its `asset.created` event; its input is
/// judged before the campaign it names is read.
pub async fn swipe_copy(store: &Store, tenant: &Tenant, input: NewSwipeCopy) -> Result<Asset> {
    let asset = Asset::swipe_copy(input, timestamp::now())?;
    campaign_exists(store, tenant, asset.campaign_id.as_deref()).await?;
    assets::insert(store, tenant, &asset).await?;
    Ok(asset)
}

/// A new payment-provider integration; the campaign it names is read before
/// its input is judged, and its provider key is sealed before it is stored.
pub async fn integration(
    store: &Store,
    signing: &SigningKeys,
    tenant: &Tenant,
    input: NewIntegration,
) -> Result<Integration> {
    campaign_exists(store, tenant, input.campaign_id.as_deref()).await?;
    let mut integration = Integration::create(input, tenant.mode, timestamp::now())?;
    let signer = signing.current().await?;
    sealing::seal_credentials(&signer, &mut integration)?;
    integrations::insert(store, tenant, &integration).await?;
    Ok(integration)
}

/// NOT_FOUND unless `id`, when given, is one of the tenant's campaigns.
pub(crate) async fn campaign_exists(
    store: &Store,
    tenant: &Tenant,
    id: Option<&str>,
) -> Result<()> {
    if let Some(id) = id {
        campaigns::get(store, tenant, id).await?;
    }
    Ok(())
}
