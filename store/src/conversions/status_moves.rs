//! A conversion's status moves after its postback: a reversal (with what it
//! reads first), a release from hold, and the status change they share.

use super::item::{
    decimal_value, item, COMMISSION_CLAWED_BACK, COMMISSION_REVERSED, REVERSED_AMOUNT,
};
use super::list::get;
use crate::attrs::{self, PAYOUT_ID, STATUS};
use crate::keys::{Index, RECORD_SK};
use crate::update::UpdateExpr;
use crate::{affiliates, events, payout_items, pools, rollups, string_value, Store};
use domain::conversion::Conversion;
use domain::conversion_changes::{Release, Reversal};
use domain::error::Result;
use domain::payout::{Payout, PayoutStatus};
use domain::tenant::Tenant;

/// Conversion attributes a reversal rewrites (with the GSI3 partition).
const REVERSAL_FIELDS: [&str; 7] = [
    STATUS,
    "reversedAt",
    "reversalReason",
    attrs::UPDATED_AT,
    REVERSED_AMOUNT,
    COMMISSION_REVERSED,
    COMMISSION_CLAWED_BACK,
];

/// The role of each action of a reversal's transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReverseAction {
    Conversion,
    Rollup,
    AffiliateStatus,
    Earned,
    Clawback,
    Event,
}

/// What a reversal decides from: the conversion and the status of the
/// payout holding it, if any.
#[derive(Debug, Clone)]
pub struct ReversalFacts {
    pub conversion: Conversion,
    /// The status of the payout holding it; what that means for the
    /// reversal is the domain's (`HoldingPayout::from`).
    pub payout_status: Option<PayoutStatus>,
}

/// Reads a reversal's facts: the conversion (404 when unknown), then the
/// payout that holds it.
pub async fn read_reversal(store: &Store, tenant: &Tenant, id: &str) -> Result<ReversalFacts> {
    let conversion = get(store, tenant, id).await?;
    let payout: Option<Payout> = match &conversion.payout_id {
        Some(po) => store
            .get_owned_item(po, &tenant.key())
            .await?
            .map(payout_items::decode)
            .transpose()?,
        None => None,
    };
    Ok(ReversalFacts {
        conversion,
        payout_status: payout.map(|p| p.status),
    })
}

/// Commits a reversal of `read` (the conversion as it was read): the status,
/// the rollups, the affiliate's `earned` total and, for a paid conversion,
/// the clawback, in one transaction conditioned on the conversion being
/// unchanged. False when it changed meanwhile (or the totals item refused
/// the tenant).
pub async fn commit_reversal(
    store: &Store,
    tenant: &Tenant,
    read: &Conversion,
    r: &Reversal,
) -> Result<bool> {
    use ReverseAction as A;
    let tenant_key = tenant.key();
    let mut tx = store.tx();
    let held = match &read.payout_id {
        Some(po) => UpdateExpr::new().when_eq(PAYOUT_ID, string_value(po.clone())),
        None => UpdateExpr::new().when_absent(PAYOUT_ID),
    };
    let after = item(tenant, &r.reversed)?;
    let change = held
        .copy_from(&after, &REVERSAL_FIELDS)
        .copy_from(&after, &Index::attributes())
        .when_tenant(&tenant_key)
        .when_status(r.before.status)
        .when_absent_or_eq(REVERSED_AMOUNT, decimal_value(read.reversed_amount));
    tx.update(A::Conversion, &read.id, RECORD_SK, &change);
    rollups::moved_many(
        &mut tx,
        A::Rollup,
        tenant,
        &[(r.before.clone(), r.reversed.clone())],
    );
    if let Some(e) = &r.give_back {
        affiliates::earn(
            &mut tx,
            (A::AffiliateStatus, A::Earned),
            &tenant_key,
            e,
            None,
        );
    }
    if let Some(a) = &r.clawback {
        pools::add_adjustment(&mut tx, A::Clawback, tenant, a)?;
    }
    events::append(&mut tx, A::Event, tenant, &r.event)?;
    store.transact_unless(tx, &[A::Conversion, A::Earned]).await
}

/// The update of a conversion's status change from `before` to `after`: the
/// status, `updatedAt` and the index keys, conditioned on the tenant, the
/// status and the reversed amount as read (a partial reversal meanwhile
/// moved its rollups, so the change must be planned again). The caller adds
/// the payout condition.
pub fn status_move(tenant: &Tenant, before: &Conversion, after: &Conversion) -> Result<UpdateExpr> {
    let mut fields = vec![STATUS, attrs::UPDATED_AT];
    fields.extend(Index::attributes());
    Ok(UpdateExpr::new()
        .copy_from(&item(tenant, after)?, &fields)
        .when_tenant(&tenant.key())
        .when_status(before.status)
        .when_absent_or_eq(REVERSED_AMOUNT, decimal_value(before.reversed_amount)))
}

/// The role of each action of a release's transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReleaseAction {
    Conversion,
    Rollup,
    Marker,
    Event,
}

/// Commits a release: the new status and index entries (while the
/// conversion is still ON_HOLD and in no payout), its rollups, its events
/// and, for an APPROVED one, its pool marked for the payout job. False when
/// it changed meanwhile (a partial reversal included: its rollups moved).
pub async fn commit_release(store: &Store, tenant: &Tenant, r: &Release) -> Result<bool> {
    use ReleaseAction as A;
    let mut tx = store.tx();
    let change = status_move(tenant, &r.before, &r.after)?.when_absent(PAYOUT_ID);
    tx.update(A::Conversion, &r.after.id, RECORD_SK, &change);
    rollups::moved_many(
        &mut tx,
        A::Rollup,
        tenant,
        &[(r.before.clone(), r.after.clone())],
    );
    pools::touch_pools_joined(&mut tx, A::Marker, tenant, [&r.after]);
    events::append_all(&mut tx, A::Event, tenant, &r.events)?;
    store.transact_unless(tx, &[A::Conversion]).await
}
