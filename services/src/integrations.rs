//! A merchant's payment-provider integrations: created, edited and deleted
//! through the domain's rules, their provider keys sealed before they are
//! stored. What a provider then sends is `provider_events`.

use crate::app::App;
use crate::auth::sealing;
use crate::campaigns;
use crate::edited::edit;
use domain::error::Result;
use domain::integration::{Integration, IntegrationChanges, IntegrationDraft};
use domain::patch::Patch;
use domain::tenant::Tenant;
use domain::timestamp;
use store::integrations;

/// A new payment-provider integration; the campaign it names is read before
/// its input is judged, and its provider key is sealed before it is stored.
pub async fn create(app: &App, tenant: &Tenant, input: IntegrationDraft) -> Result<Integration> {
    campaigns::exists(&app.store, tenant, input.campaign_id.as_deref()).await?;
    let mut integration = Integration::create(input, tenant.mode, timestamp::now())?;
    let signer = app.signing.current().await?;
    sealing::seal_credentials(&signer, &mut integration)?;
    integrations::insert(&app.store, tenant, &integration).await?;
    Ok(integration)
}

/// A merchant's PATCH of an integration; a campaign it names is read first
/// (NOT_FOUND unless it is the tenant's), and a new provider key is sealed
/// before it is written.
pub async fn update(
    app: &App,
    tenant: &Tenant,
    id: &str,
    patch: &IntegrationChanges,
) -> Result<Integration> {
    if let Patch::Value(c) = &patch.campaign_id {
        campaigns::exists(&app.store, tenant, Some(c)).await?;
    }
    let signer = app.signing.current().await?;
    edit(&app.store, tenant, id, |i: &Integration| {
        let mut next = i.apply(patch.clone(), tenant.mode, timestamp::now())?;
        sealing::seal_credentials(&signer, &mut next)?;
        Ok(next)
    })
    .await
}

/// Disables and hides an integration (`Integration::delete`).
pub async fn delete(app: &App, tenant: &Tenant, id: &str) -> Result<Integration> {
    edit(&app.store, tenant, id, |i: &Integration| {
        i.delete(timestamp::now())
    })
    .await
}
