//! Campaign records.

use crate::domain::campaign::Campaign;
use crate::domain::tenant::Tenant;
use crate::error::{Error, Result};
use crate::ids::{self, IdKind};
use crate::store::attrs;
use crate::store::keys::{self, Index, ListKind, RECORD_SK};
use crate::store::page::{ListQuery, Page, PageRequest};
use crate::store::update::UpdateExpr;
use crate::store::{
    events, from_item, record_item, string_of, string_value, IndexKeys, Item, Store,
};
use crate::timestamp;

fn item(tenant: &Tenant, c: &Campaign) -> Result<Item> {
    let index = IndexKeys::new().with(
        Index::Gsi1,
        keys::tenant_list(tenant, ListKind::Campaign),
        &c.id,
    );
    record_item(&c.id, Some(&tenant.key()), c, &index)
}

/// Stores a new campaign with its `campaign.created` event.
pub async fn insert(store: &Store, tenant: &Tenant, c: &Campaign) -> Result<()> {
    let created = c.created_event()?;
    if events::put_new_with(store, tenant, item(tenant, c)?, &created).await? {
        Ok(())
    } else {
        Err(Error::internal("campaign id collision"))
    }
}

/// The tenant's campaign, or NOT_FOUND.
pub async fn get(store: &Store, tenant: &Tenant, id: &str) -> Result<Campaign> {
    if !ids::is_valid(IdKind::Campaign, id) {
        return Err(Error::NotFound("campaign"));
    }
    store
        .get_owned(id, &tenant.key())
        .await?
        .ok_or(Error::NotFound("campaign"))
}

/// Any tenant's campaign with its tenant key (public endpoints resolve by id alone).
pub async fn get_with_tenant(store: &Store, id: &str) -> Result<Option<(Campaign, String)>> {
    if !ids::is_valid(IdKind::Campaign, id) {
        return Ok(None);
    }
    match store.get_item(id, RECORD_SK).await? {
        Some(item) => {
            let tenant = string_of(&item, attrs::TENANT)
                .unwrap_or_default()
                .to_string();
            Ok(Some((from_item(item)?, tenant)))
        }
        None => Ok(None),
    }
}

/// The condition that a campaign is the tenant's and still as `seen` (every
/// change moves `updatedAt`).
pub fn unchanged(tenant_key: &str, seen: &Campaign) -> UpdateExpr {
    UpdateExpr::new().when_tenant(tenant_key).when_eq(
        attrs::UPDATED_AT,
        string_value(timestamp::format(&seen.updated_at)),
    )
}

/// Writes an updated campaign and its `campaign.updated` event if nobody
/// changed it since `previous` was read; false when somebody did.
pub async fn replace(
    store: &Store,
    tenant: &Tenant,
    c: &Campaign,
    previous: &Campaign,
) -> Result<bool> {
    let when = unchanged(&tenant.key(), previous);
    let updated = c.changed_event()?;
    events::put_with(store, tenant, item(tenant, c)?, &when, &updated).await
}

/// The tenant's campaigns, newest first.
pub async fn list(store: &Store, tenant: &Tenant, page: &PageRequest) -> Result<Page<Campaign>> {
    let q = ListQuery::new(Index::Gsi1, keys::tenant_list(tenant, ListKind::Campaign));
    store.query_page(&q, page).await?.try_map(from_item)
}
