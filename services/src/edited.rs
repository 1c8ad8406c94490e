//! The edit of one record, for each use case that edits one: read it,
//! decide its new state in the domain, write it conditioned on what was
//! read; when another writer changed it meanwhile, read again
//! (`retry::edit`). An edit the domain judges to change nothing
//! (`domain::edit::stamped`) is not written: no event, no new `updatedAt`.

use crate::retry;
use domain::affiliate::Affiliate;
use domain::asset::Asset;
use domain::campaign::Campaign;
use domain::error::Result;
use domain::integration::Integration;
use domain::tenant::Tenant;

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
