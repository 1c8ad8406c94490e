//! Payable pools: per affiliate and currency, the APPROVED conversions in no
//! payout and the adjustments (clawbacks, bonuses) not netted yet, in the GSI5
//! partition `POOL#<tenant>#<affiliate>#<currency>`; and the pool markers
//! (`pk = <affiliate id>`, `sk = POOL#<currency>`) that put a pool on the
//! payout job's list (`CHECK#<shard>`) whenever something joins it.

use crate::attrs;
use crate::keys::{self, Index, ListKind};
use crate::tx::Tx;
use crate::update::UpdateExpr;
use crate::work::WorkRange;
use crate::{number_value, record_item, string_of, string_value, IndexKeys, Item, Store};
use domain::conversion::{Adjustment, Conversion, PayoutStage};
use domain::error::Result;
use domain::money::Currency;
use domain::tenant::Tenant;

/// The item of an adjustment: in its affiliate's pool until a payout nets
/// it; a manual one is also listed under its affiliate (GSI4), where no
/// claim or release moves it.
pub fn adjustment_item(tenant: &Tenant, a: &Adjustment) -> Result<Item> {
    let sk = keys::at(&a.created_at, &a.id);
    let partition = match &a.payout_id {
        Some(po) => keys::payout_members(po),
        None => keys::payable_pool(tenant, &a.affiliate_id, a.currency.code()),
    };
    let mut index = IndexKeys::new().with(Index::Gsi5, partition, sk.clone());
    if a.is_manual() {
        index = index.at(
            ListKind::Adjustment.of_affiliate(tenant, &a.affiliate_id),
            sk,
        );
    }
    record_item(&a.id, Some(&tenant.key()), a, &index)
}

/// A pool marker touch: the affiliate's pool in `currency` has new entries;
/// the payout job checks it.
pub fn touch_pool<R: Copy>(
    tx: &mut Tx<R>,
    role: R,
    tenant: &Tenant,
    affiliate_id: &str,
    currency: Currency,
) {
    let shard = keys::shard_of(affiliate_id);
    let u = UpdateExpr::new()
        .set(attrs::TENANT, string_value(tenant.key()))
        .set(Index::Gsi5.pk(), string_value(keys::pools_to_check(shard)))
        .set(
            Index::Gsi5.sk(),
            string_value(format!(
                "{}#{affiliate_id}#{}",
                tenant.key(),
                currency.code()
            )),
        )
        .add(attrs::TOUCHES, number_value(1))
        .when_absent_or_eq(attrs::TENANT, string_value(tenant.key()));
    tx.update(
        role,
        affiliate_id,
        &keys::pool_marker_sk(currency.code()),
        &u,
    );
}

/// Marks, once each, the pools the conversions `after` a change are in:
/// those payable (APPROVED, in no payout) with an affiliate.
pub fn touch_pools_joined<'a, R: Copy>(
    tx: &mut Tx<R>,
    role: R,
    tenant: &Tenant,
    after: impl IntoIterator<Item = &'a Conversion>,
) {
    let mut pools: Vec<(&str, Currency)> = after
        .into_iter()
        .filter(|c| c.payout_stage() == PayoutStage::Payable)
        .filter_map(|c| Some((c.affiliate_id.as_deref()?, c.currency)))
        .collect();
    pools.sort();
    pools.dedup();
    for (aff, cur) in pools {
        touch_pool(tx, role, tenant, aff, cur);
    }
}

/// Stores a new adjustment (a clawback, a manual one) and marks its pool
/// for a check.
pub fn add_adjustment<R: Copy>(
    tx: &mut Tx<R>,
    role: R,
    tenant: &Tenant,
    a: &Adjustment,
) -> Result<()> {
    tx.put_new(role, adjustment_item(tenant, a)?);
    touch_pool(tx, role, tenant, &a.affiliate_id, a.currency);
    Ok(())
}

/// A pool marker to check: the tenant, affiliate and currency it names, and
/// how often it was touched when read.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolMarker {
    pub tenant: Tenant,
    pub affiliate_id: String,
    pub currency: Currency,
    pub touches: String,
}

/// Reads pool markers of one shard.
pub async fn pool_markers(store: &Store, shard: u32, limit: usize) -> Result<Vec<PoolMarker>> {
    let items = store
        .query_work(&keys::pools_to_check(shard), WorkRange::All, limit)
        .await?;
    Ok(items
        .iter()
        .filter_map(|i| {
            let sk = string_of(i, Index::Gsi5.sk())?;
            let mut parts = sk.rsplitn(3, '#');
            let currency = Currency::parse("currency", parts.next()?).ok()?;
            let affiliate_id = parts.next()?.to_string();
            let tenant = Tenant::from_key(parts.next()?)?;
            let touches = i.get(attrs::TOUCHES)?.as_n().ok()?.clone();
            Some(PoolMarker {
                tenant,
                affiliate_id,
                currency,
                touches,
            })
        })
        .collect())
}

/// Takes a checked pool off the check list, unless it was touched since.
pub async fn clear_marker(store: &Store, m: &PoolMarker) -> Result<()> {
    let u = UpdateExpr::new()
        .remove(Index::Gsi5.pk())
        .remove(Index::Gsi5.sk())
        .when_eq(attrs::TOUCHES, number_value(&m.touches));
    store
        .update(
            &m.affiliate_id,
            &keys::pool_marker_sk(m.currency.code()),
            &u,
        )
        .await?;
    Ok(())
}
