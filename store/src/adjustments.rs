//! Manual adjustments: the record (`pk` = its id, as a clawback's) in its
//! affiliate's payable pool (GSI5, see `store::pools`) and listed under its
//! affiliate (GSI4 `<tenant>#ADJ#AFF#<affiliate id>`, newest first); the
//! guard of its `externalId` (`ADJXID#<tenant>#<externalId>`, `sk =
//! GUARD`) naming it, written in the same transaction.

use serde::{Deserialize, Serialize};

use crate::keys::{self, ListKind, GUARD_SK, RECORD_SK};
use crate::page::{ListQuery, Page, PageRequest};
use crate::{
    affiliate_totals, affiliates, attrs, events, from_item, item_at, pools, string_value, Store,
};
use domain::adjustment::Booking;
use domain::conversion::Adjustment;
use domain::error::{Error, Result};
use domain::ids::{self, IdKind};
use domain::tenant::Tenant;

/// The role of each action of a booking's transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    Adjustment,
    Affiliate,
    Earned,
    Event,
    Guard,
}

/// What an `externalId` guard holds: the adjustment it names.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Claim {
    adjustment_id: String,
}

/// How a booking's commit ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Committed {
    Done,
    /// Another request took the `externalId` first: read it and decide again.
    Claimed,
    /// The affiliate's status is no longer the one decided from.
    Stale,
}

/// The adjustment of the tenant that `external_id` names, if any: its
/// guard, then its record (strongly consistent reads).
pub async fn claimed(
    store: &Store,
    tenant: &Tenant,
    external_id: Option<&str>,
) -> Result<Option<Adjustment>> {
    let Some(x) = external_id else {
        return Ok(None);
    };
    let tenant_key = tenant.key();
    let guard = store
        .get_item(&keys::adjustment_guard(tenant, x), GUARD_SK)
        .await?
        .filter(|i| crate::string_of(i, attrs::TENANT) == Some(tenant_key.as_str()));
    let Some(guard) = guard else {
        return Ok(None);
    };
    let claim: Claim = from_item(guard)?;
    let found = store
        .get_owned(&claim.adjustment_id, &tenant_key)
        .await?
        .ok_or_else(|| Error::internal("an adjustment guard names no adjustment"))?;
    Ok(Some(found))
}

/// Commits a booking in one transaction: the adjustment in its pool (the
/// pool marked for the payout job), the affiliate's `earned` while its
/// status is the one decided from, `adjustment.created`, and the
/// `externalId` guard when there is one.
pub async fn commit(store: &Store, tenant: &Tenant, b: &Booking) -> Result<Committed> {
    let tenant_key = tenant.key();
    let a = &b.adjustment;
    let mut tx = store.tx();
    pools::add_adjustment(&mut tx, Write::Adjustment, tenant, a)?;
    if let Some(st) = b.earning.while_status {
        let when = affiliates::status_is(&tenant_key, st);
        tx.check(Write::Affiliate, &b.earning.affiliate_id, RECORD_SK, &when);
    }
    affiliate_totals::add(
        &mut tx,
        Write::Earned,
        &tenant_key,
        &b.earning.affiliate_id,
        affiliate_totals::EARNED,
        b.earning.currency,
        b.earning.amount,
    );
    events::append(&mut tx, Write::Event, tenant, &b.event)?;
    if let Some(x) = &a.external_id {
        let claim = Claim {
            adjustment_id: a.id.clone(),
        };
        let mut guard = item_at(&keys::adjustment_guard(tenant, x), GUARD_SK, &claim)?;
        guard.insert(attrs::TENANT.into(), string_value(&tenant_key));
        tx.put_new(Write::Guard, guard);
    }
    match store.transact(tx).await {
        Ok(()) => Ok(Committed::Done),
        Err(e) if e.failed(Write::Guard) => Ok(Committed::Claimed),
        Err(e) if e.failed(Write::Affiliate) => Ok(Committed::Stale),
        Err(e) => Err(e.into_error()),
    }
}

/// A page of an affiliate's manual adjustments, newest first (one Query).
pub async fn list(
    store: &Store,
    tenant: &Tenant,
    affiliate_id: &str,
    page: &PageRequest,
) -> Result<Page<Adjustment>> {
    if !ids::is_valid(IdKind::Affiliate, affiliate_id) {
        return Err(Error::NotFound("affiliate"));
    }
    let q = ListQuery::of(ListKind::Adjustment.of_affiliate(tenant, affiliate_id));
    store.query_page(&q, page).await?.try_map(from_item)
}
