//! Asset records. Archived assets leave the tenant list (GSI1) and the
//! campaign list (GSI2), so the default lists hide them without a filter;
//! they stay reachable by id and through the status index (GSI3).

use crate::attrs;
use crate::keys::{Index, ListKind};
use crate::page::{ListQuery, Page, PageRequest};
use crate::update::UpdateExpr;
use crate::{events, from_item, record_item, IndexKeys, Item, Store};
use domain::asset::{Asset, AssetStatus, AssetType};
use domain::error::Result;
use domain::ids::IdKind;
use domain::tenant::Tenant;

/// Attributes a PATCH owns.
const EDITABLE: [&str; 7] = [
    attrs::NAME,
    "body",
    attrs::METADATA,
    attrs::STATUS,
    "archivedAt",
    attrs::VERSION,
    attrs::UPDATED_AT,
];

fn item(tenant: &Tenant, a: &Asset) -> Result<Item> {
    let mut index = IndexKeys::new();
    if a.in_default_lists() {
        index = index.at(ListKind::Asset.all(tenant), &a.id);
        if let Some(c) = &a.campaign_id {
            index = index.at(ListKind::Asset.of_campaign(tenant, c), &a.id);
        }
    }
    index = index.at(ListKind::Asset.in_status(tenant, a.status), &a.id);
    record_item(&a.id, Some(&tenant.key()), a, &index)
}

/// Stores a new asset with its `asset.created` event.
pub async fn insert(store: &Store, tenant: &Tenant, a: &Asset) -> Result<()> {
    let created = a.created_event();
    let written = events::put_new_with(store, tenant, item(tenant, a)?, &created).await?;
    crate::created(written, "asset")
}

/// The tenant's asset (archived ones included), or NOT_FOUND.
pub async fn get(store: &Store, tenant: &Tenant, id: &str) -> Result<Asset> {
    store
        .get_record(IdKind::Asset, "asset", id, &tenant.key())
        .await
}

/// Writes a changed asset (an edit or its archiving) and its event if the
/// asset is as `old` was read; false when somebody changed it meanwhile.
pub async fn replace(store: &Store, tenant: &Tenant, new: &Asset, old: &Asset) -> Result<bool> {
    let mut fields = EDITABLE.to_vec();
    fields.extend(Index::attributes());
    let update = UpdateExpr::new()
        .copy_from(&item(tenant, new)?, &fields)
        .when_as_read(&tenant.key(), old.stamps.version)
        .when_status(old.status);
    let event = new.changed_event();
    Ok(events::update_with(store, tenant, &new.id, &update, &event)
        .await?
        .is_ok())
}

/// List filters. Without a status, archived assets are left out.
#[derive(Debug, Clone, Default)]
pub struct AssetFilter {
    pub status: Option<AssetStatus>,
    pub campaign_id: Option<String>,
    pub kind: Option<AssetType>,
}

/// The tenant's assets, newest first.
pub async fn list(
    store: &Store,
    tenant: &Tenant,
    f: &AssetFilter,
    page: &PageRequest,
) -> Result<Page<Asset>> {
    let mut q = match (f.status, &f.campaign_id) {
        (Some(st), c) => {
            let mut q = ListQuery::of(ListKind::Asset.in_status(tenant, st));
            if let Some(c) = c {
                q.filter = q.filter.eq(attrs::CAMPAIGN_ID, c);
            }
            q
        }
        (None, Some(c)) => ListQuery::of(ListKind::Asset.of_campaign(tenant, c)),
        (None, None) => ListQuery::of(ListKind::Asset.all(tenant)),
    };
    if let Some(k) = f.kind {
        q.filter = q.filter.eq(attrs::TYPE, k.as_str());
    }
    store.query_page(&q, page).await?.try_map(from_item)
}
