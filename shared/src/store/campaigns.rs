//! Campaign records.

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::ReturnConsumedCapacity;

use crate::domain::campaign::{Campaign, CampaignPatch};
use crate::domain::tenant::Tenant;
use crate::error::{Error, Result};
use crate::ids::{self, IdKind};
use crate::retry::{retry_on_conflict, Attempt, UPDATE_ATTEMPTS};
use crate::store::keys::{self, Index, ListKind, RECORD_SK};
use crate::store::page::{ListQuery, Page, PageRequest};
use crate::store::{from_item, record_item, string_of, string_value, IndexKeys, Item, Store};
use crate::timestamp;

fn item(tenant: &Tenant, c: &Campaign) -> Result<Item> {
    let index = IndexKeys::new().with(
        Index::Gsi1,
        keys::tenant_list(tenant, ListKind::Campaign),
        &c.id,
    );
    record_item(&c.id, Some(&tenant.key()), c, &index)
}

/// Stores a new campaign.
pub async fn insert(store: &Store, tenant: &Tenant, c: &Campaign) -> Result<()> {
    if store.put_new(item(tenant, c)?).await? {
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
            let tenant = string_of(&item, "tenant").unwrap_or_default().to_string();
            Ok(Some((from_item(item)?, tenant)))
        }
        None => Ok(None),
    }
}

/// Writes an updated campaign if nobody changed it since `previous` was read;
/// false when somebody did.
pub async fn replace(
    store: &Store,
    tenant: &Tenant,
    c: &Campaign,
    previous: &Campaign,
) -> Result<bool> {
    let res = store
        .client()
        .put_item()
        .table_name(store.table())
        .set_item(Some(item(tenant, c)?))
        .condition_expression("#t = :t AND #u = :u")
        .expression_attribute_names("#t", "tenant")
        .expression_attribute_names("#u", "updatedAt")
        .expression_attribute_values(":t", string_value(tenant.key()))
        .expression_attribute_values(":u", string_value(timestamp::format(&previous.updated_at)))
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
        .send()
        .await;
    match res {
        Ok(out) => {
            store.metrics().record_write_total(out.consumed_capacity());
            Ok(true)
        }
        Err(SdkError::ServiceError(e)) if e.err().is_conditional_check_failed_exception() => {
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}

/// Applies a merchant's edit to the current campaign, reading it again when
/// another writer changed it meanwhile.
pub async fn update(
    store: &Store,
    tenant: &Tenant,
    id: &str,
    patch: &CampaignPatch,
) -> Result<Campaign> {
    retry_on_conflict(UPDATE_ATTEMPTS, "campaign", move || async move {
        let current = get(store, tenant, id).await?;
        let updated = current.apply(patch.clone(), timestamp::now())?;
        Ok(if replace(store, tenant, &updated, &current).await? {
            Attempt::Done(updated)
        } else {
            Attempt::Conflict
        })
    })
    .await
}

/// The tenant's campaigns, newest first.
pub async fn list(store: &Store, tenant: &Tenant, page: &PageRequest) -> Result<Page<Campaign>> {
    let q = ListQuery::new(Index::Gsi1, keys::tenant_list(tenant, ListKind::Campaign));
    store.query_page(&q, page).await?.try_map(from_item)
}
