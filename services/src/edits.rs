//! A merchant's edit of one record: read it, decide its new state in the
//! domain, write it conditioned on what was read; when another writer
//! changed it meanwhile, read again (`retry::edit`). An edit the domain
//! judges to change nothing (`domain::edit::stamped`) is not written: no
//! event, no new `updatedAt`.

use crate::auth::sealing;
use crate::auth::signing::SigningKeys;
use crate::creates::campaign_exists;
use crate::retry::{self, retry_on_conflict, Attempt, UPDATE_ATTEMPTS};
use domain::affiliate::{Affiliate, AffiliatePatch};
use domain::asset::{Asset, AssetPatch};
use domain::campaign::{Campaign, CampaignPatch};
use domain::error::Result;
use domain::integration::{Integration, IntegrationPatch};
use domain::patch::Patch;
use domain::tenant::Tenant;
use domain::timestamp;
use domain::webhook::Endpoint;
use store::{affiliates, assets, campaigns, integrations, webhooks, Store};

/// A record edited in place: read by id, replaced only as it was read.
pub trait Edited: Sized + Send + Sync + PartialEq {
    /// Its name in a conflict's message.
    const WHAT: &'static str;
    /// The tenant's record, or NOT_FOUND.
    fn read(
        store: &Store,
        tenant: &Tenant,
        id: &str,
    ) -> impl std::future::Future<Output = Result<Self>> + Send;
    /// Writes `new` (with the domain's event of its change, for a record
    /// that has one) if the record is as `old` was read; false otherwise.
    fn replace(
        store: &Store,
        tenant: &Tenant,
        new: &Self,
        old: &Self,
    ) -> impl std::future::Future<Output = Result<bool>> + Send;
}

/// Applies `decide` (a domain rule; its error ends the edit) to the current record.
pub async fn edit<T: Edited>(
    store: &Store,
    tenant: &Tenant,
    id: &str,
    decide: impl Fn(&T) -> Result<T>,
) -> Result<T> {
    retry::edit(
        T::WHAT,
        || T::read(store, tenant, id),
        decide,
        |next, current| async move {
            // The read is strongly consistent, so the record is as read.
            if next == current {
                return Ok(Some(current));
            }
            let written = T::replace(store, tenant, &next, &current).await?;
            Ok(written.then_some(next))
        },
    )
    .await
}

/// A merchant's PATCH of a campaign.
pub async fn campaign(
    store: &Store,
    tenant: &Tenant,
    id: &str,
    patch: &CampaignPatch,
) -> Result<Campaign> {
    edit(store, tenant, id, |c: &Campaign| {
        c.apply(patch.clone(), timestamp::now())
    })
    .await
}

/// A merchant's PATCH of an affiliate.
pub async fn affiliate(
    store: &Store,
    tenant: &Tenant,
    id: &str,
    patch: &AffiliatePatch,
) -> Result<Affiliate> {
    edit(store, tenant, id, |a: &Affiliate| {
        a.apply(patch.clone(), timestamp::now())
    })
    .await
}

/// A merchant's PATCH of an asset.
pub async fn asset(store: &Store, tenant: &Tenant, id: &str, patch: &AssetPatch) -> Result<Asset> {
    edit(store, tenant, id, |a: &Asset| {
        a.apply(patch.clone(), timestamp::now())
    })
    .await
}

/// Soft-deletes a FINALIZED asset (`Asset::archive`).
pub async fn archive_asset(store: &Store, tenant: &Tenant, id: &str) -> Result<Asset> {
    edit(store, tenant, id, |a: &Asset| a.archive(timestamp::now())).await
}

/// A merchant's PATCH of an integration; a campaign it names is read first
/// (NOT_FOUND unless it is the tenant's), and a new provider key is sealed
/// before it is written.
pub async fn integration(
    store: &Store,
    signing: &SigningKeys,
    tenant: &Tenant,
    id: &str,
    patch: &IntegrationPatch,
) -> Result<Integration> {
    if let Patch::Value(c) = &patch.campaign_id {
        campaign_exists(store, tenant, Some(c)).await?;
    }
    let signer = signing.current().await?;
    edit(store, tenant, id, |i: &Integration| {
        let mut next = i.apply(patch.clone(), tenant.mode, timestamp::now())?;
        sealing::seal_credentials(&signer, &mut next)?;
        Ok(next)
    })
    .await
}

/// Disables and hides an integration (`Integration::delete`).
pub async fn delete_integration(store: &Store, tenant: &Tenant, id: &str) -> Result<Integration> {
    edit(store, tenant, id, |i: &Integration| {
        i.delete(timestamp::now())
    })
    .await
}

/// Deletes a webhook endpoint for good; the endpoint as it was.
pub async fn delete_endpoint(store: &Store, tenant: &Tenant, id: &str) -> Result<Endpoint> {
    retry_on_conflict(UPDATE_ATTEMPTS, Endpoint::WHAT, || async move {
        let (current, count) = tokio::join!(
            webhooks::get_endpoint(store, tenant, id),
            webhooks::endpoint_count(store, tenant)
        );
        let current = current?;
        Ok(
            match webhooks::delete_endpoint(store, tenant, &current, count?).await? {
                true => Attempt::Done(current),
                false => Attempt::Conflict,
            },
        )
    })
    .await
}

/// `Edited` for a record by the store functions that read and replace it.
macro_rules! edited {
    ($($record:ty: $what:literal, $read:path, $replace:path;)+) => {$(
        impl Edited for $record {
            const WHAT: &'static str = $what;
            fn read(
                store: &Store,
                tenant: &Tenant,
                id: &str,
            ) -> impl std::future::Future<Output = Result<Self>> + Send {
                $read(store, tenant, id)
            }
            fn replace(
                store: &Store,
                tenant: &Tenant,
                new: &Self,
                old: &Self,
            ) -> impl std::future::Future<Output = Result<bool>> + Send {
                $replace(store, tenant, new, old)
            }
        }
    )+};
}

edited! {
    Campaign: "campaign", campaigns::get, campaigns::replace;
    Affiliate: "affiliate", affiliates::get, affiliates::replace;
    Asset: "asset", assets::get, assets::replace;
    Endpoint: "webhook endpoint", webhooks::get_endpoint, webhooks::replace_endpoint;
    Integration: "integration", integrations::get, integrations::replace;
}
