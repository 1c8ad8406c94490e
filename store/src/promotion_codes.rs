//! Promotion codes: the record in its affiliate's partition (`pk =
//! <tenant>#PRC#<affiliate id>`, `sk` = its id), and while it is active
//! two guards: its provider id (`PROMO#<tenant>#<provider id>`, the lookup
//! a payment's first read makes) and its customer-facing code
//! (`PROMOCODE#<tenant>#<code, lower case>`), each unique in the tenant.

use crate::keys::{self, GUARD_SK};
use crate::page::{ListQuery, Page, PageRequest};
use crate::update::UpdateExpr;
use crate::{affiliates, attrs, from_item, item_at, string_value, Item, Store};
use domain::affiliate_code::CodeOwner;
use domain::error::{Error, Result};
use domain::promotion_code::PromotionCode;
use domain::tenant::Tenant;

/// The role of each action of a promotion code's transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    Record,
    ProviderGuard,
    CodeGuard,
}

fn record(tenant: &Tenant, p: &PromotionCode) -> Result<Item> {
    let mut item = item_at(&keys::promotion_codes(tenant, &p.affiliate_id), &p.id, p)?;
    item.insert(attrs::TENANT.into(), string_value(tenant.key()));
    Ok(item)
}

/// A guard naming the code's affiliate and campaign, as a code guard does.
fn guard(pk: String, tenant: &Tenant, p: &PromotionCode) -> Result<Item> {
    let owner = CodeOwner {
        affiliate_id: p.affiliate_id.clone(),
        campaign_id: p.campaign_id.clone(),
    };
    affiliates::owner_guard(pk, tenant, &owner)
}

/// Stores a new code and its guards in one transaction; 409 ALREADY_EXISTS
/// naming what another active code of the tenant holds already.
pub async fn create(store: &Store, tenant: &Tenant, p: &PromotionCode) -> Result<()> {
    let mut tx = store.tx();
    tx.put_new(Write::Record, record(tenant, p)?).put_new(
        Write::ProviderGuard,
        guard(keys::promotion_guard(tenant, &p.provider_id), tenant, p)?,
    );
    if let Some(code) = &p.code {
        tx.put_new(
            Write::CodeGuard,
            guard(keys::promotion_code_guard(tenant, code), tenant, p)?,
        );
    }
    match store.transact(tx).await {
        Ok(()) => Ok(()),
        Err(e) if e.failed(Write::ProviderGuard) => Err(Error::AlreadyExists(format!(
            "the promotion code {} is registered already",
            p.provider_id
        ))),
        Err(e) if e.failed(Write::CodeGuard) => Err(Error::AlreadyExists(format!(
            "an active promotion code {} exists already",
            p.code.as_deref().unwrap_or_default()
        ))),
        Err(e) => Err(e.into_error()),
    }
}

/// The affiliate and campaign of the active code known to the provider as
/// `provider_id` (one GetItem of its guard).
pub async fn owner(store: &Store, tenant: &Tenant, provider_id: &str) -> Result<Option<CodeOwner>> {
    affiliates::guard_owner(store, tenant, &keys::promotion_guard(tenant, provider_id)).await
}

/// A page of an affiliate's codes, newest first (one Query).
pub async fn list(
    store: &Store,
    tenant: &Tenant,
    affiliate_id: &str,
    page: &PageRequest,
) -> Result<Page<PromotionCode>> {
    let q = ListQuery::on_table(keys::promotion_codes(tenant, affiliate_id));
    store.query_page(&q, page).await?.try_map(from_item)
}

/// One of an affiliate's codes (one GetItem).
pub async fn get(
    store: &Store,
    tenant: &Tenant,
    affiliate_id: &str,
    id: &str,
) -> Result<Option<PromotionCode>> {
    let pk = keys::promotion_codes(tenant, affiliate_id);
    store.get_item(&pk, id).await?.map(from_item).transpose()
}

/// Stores a code deactivated and removes its guards (one transaction), so
/// payments carrying it stop attributing and its code may be given again.
pub async fn deactivate(store: &Store, tenant: &Tenant, after: &PromotionCode) -> Result<()> {
    let mut tx = store.tx();
    let always = UpdateExpr::new();
    tx.put(
        Write::Record,
        record(tenant, after)?,
        &UpdateExpr::new().when_exists(),
    )
    .delete(
        Write::ProviderGuard,
        &keys::promotion_guard(tenant, &after.provider_id),
        GUARD_SK,
        &always,
    );
    if let Some(code) = &after.code {
        tx.delete(
            Write::CodeGuard,
            &keys::promotion_code_guard(tenant, code),
            GUARD_SK,
            &always,
        );
    }
    store.transact(tx).await.map_err(|e| e.into_error())
}
