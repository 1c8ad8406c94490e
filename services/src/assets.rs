//! A merchant's marketing assets: swipe copy created, assets edited and
//! archived through the domain's rules, each change written with its event.

use crate::app::App;
use crate::campaigns;
use crate::edited::edit;
use domain::asset::{Asset, AssetChanges, SwipeCopyDraft};
use domain::error::Result;
use domain::tenant::Tenant;
use domain::timestamp;
use store::assets;

/// A new swipe-copy asset, with its `asset.created` event; its input is
/// judged before the campaign it names is read.
pub async fn create_swipe_copy(app: &App, tenant: &Tenant, input: SwipeCopyDraft) -> Result<Asset> {
    let asset = Asset::swipe_copy(input, timestamp::now())?;
    campaigns::exists(&app.store, tenant, asset.campaign_id.as_deref()).await?;
    assets::insert(&app.store, tenant, &asset).await?;
    Ok(asset)
}

/// A merchant's PATCH of an asset.
pub async fn update(app: &App, tenant: &Tenant, id: &str, patch: &AssetChanges) -> Result<Asset> {
    edit(&app.store, tenant, id, |a: &Asset| {
        a.apply(patch.clone(), timestamp::now())
    })
    .await
}

/// Soft-deletes a FINALIZED asset (`Asset::archive`).
pub async fn archive(app: &App, tenant: &Tenant, id: &str) -> Result<Asset> {
    edit(&app.store, tenant, id, |a: &Asset| {
        a.archive(timestamp::now())
    })
    .await
}
