//! Payout records, their transitions, and the chunked work on the records a
//! payout holds (claim, settle, release), each chunk one transaction that
//! commits exactly once.
//!
//! A payout lives under its id (`pk = po_<ULID>`, `sk = "R"`), in the tenant
//! lists (GSI1 every payout, GSI3 by status, GSI4 by affiliate; sort key
//! `<requestedAt>#<id>`) once it is assembled, and in a
//! GSI5 work partition while it has work left (`BUILD#`, `SETTLE#`,
//! `RELEASE#`, `PAYING#`). Its `progress` counters grow with `ADD` in the
//! same transaction as each chunk, so they always equal what was done.
//!
//! Conversions and adjustments sit in GSI5 by stage (see
//! `conversions::index_keys`): due for approval, in their affiliate's payable
//! pool, or in their payout's `PO#<id>` partition. Each chunk re-derives a
//! member's GSI5 entry from the record after the change.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::Serialize;

use crate::attrs;
use crate::conversions;
use crate::keys::{self, Index, ListKind, RECORD_SK};
use crate::page::{ListQuery, Page, PageRequest};
use crate::payout_items::{decode, item};
use crate::pools::{adjustment_item, touch_pool, touch_pools_joined};
use crate::tx::Tx;
use crate::update::UpdateExpr;
use crate::work::WorkRange;
use crate::{
    affiliate_totals, events, from_item, item_at, number_value, rollups, string_of, string_value,
    Store,
};
use domain::affiliate::PayoutMethod;
use domain::change::Event;
use domain::conversion::{Adjustment, Conversion};
use domain::error::{Error, Result};
use domain::ids::{self, IdKind};
use domain::money::Currency;
use domain::payout::{Payout, PayoutQueue, PayoutStatus, PayoutWork};
use domain::payout_totals;
use domain::payout_work::{AtOnce, Claiming, Releasing, TransitionPlan, WorkChunk};
use domain::tenant::Tenant;

/// Conversions claimed per transaction (one update each, plus the payout's counters).
pub const CLAIM_CHUNK: usize = 98;
/// Members released per transaction: one update each and, for a conversion
/// a provider refund clawed back while the payout held it, the adjustment
/// giving it back; the payout and the pool marker.
pub const RELEASE_CHUNK: usize = 49;
/// Conversions settled or approved per transaction: one update each, up to
/// four rollup updates each (the month items of the old and the new status,
/// the tenant's and the affiliate's), an event each, and a pool marker each
/// or the payout, within DynamoDB's 100 actions.
pub const STATUS_CHUNK: usize = 12;

/// The role of each action of a payout's transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    Payout,
    Member,
    Rollup,
    Totals,
    Lock,
    Marker,
    Event,
}

/// The tenant's payout as stored (also one being assembled), if any.
pub async fn read(store: &Store, tenant: &Tenant, id: &str) -> Result<Option<Payout>> {
    if !ids::is_valid(IdKind::Payout, id) {
        return Ok(None);
    }
    store
        .get_owned_item(id, &tenant.key())
        .await?
        .map(decode)
        .transpose()
}

/// The tenant's payout, or NOT_FOUND (also while it is being assembled).
pub async fn get(store: &Store, tenant: &Tenant, id: &str) -> Result<Payout> {
    match read(store, tenant, id).await? {
        Some(p) if p.is_visible() => Ok(p),
        _ => Err(Error::NotFound("payout")),
    }
}

/// The tenant's visible payouts among `ids` (invalid, unknown or
/// another tenant's left out), by id: one strongly consistent batch read.
pub async fn get_many(
    store: &Store,
    tenant: &Tenant,
    ids: &[String],
) -> Result<HashMap<String, Payout>> {
    let items = store
        .get_records_items(IdKind::Payout, ids, &tenant.key())
        .await?;
    let mut found = HashMap::new();
    for p in items.into_iter().map(decode) {
        let p = p?;
        if p.is_visible() {
            found.insert(p.id.clone(), p);
        }
    }
    Ok(found)
}

/// List filters; one picks the index partition, the rest filter that Query.
#[derive(Debug, Clone, Default)]
pub struct PayoutFilter {
    pub affiliate_id: Option<String>,
    pub status: Option<PayoutStatus>,
    pub method: Option<PayoutMethod>,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
}

/// The query a filter runs: by affiliate, else by status, else every payout.
pub fn list_query(tenant: &Tenant, f: &PayoutFilter) -> ListQuery {
    let mut q = if let Some(a) = &f.affiliate_id {
        ListQuery::of(ListKind::Payout.of_affiliate(tenant, a))
    } else if let Some(st) = f.status {
        ListQuery::of(ListKind::Payout.in_status(tenant, st))
    } else {
        ListQuery::of(ListKind::Payout.all(tenant))
    };
    q = q.within(f.from, f.to);
    if let (Some(st), Some(Index::Gsi4)) = (f.status, q.index) {
        q.filter = q.filter.status(st);
    }
    if let Some(m) = f.method {
        q.filter = q.filter.eq("method", m.as_str());
    }
    q
}

/// The tenant's payouts, newest first by `requestedAt`.
pub async fn list(
    store: &Store,
    tenant: &Tenant,
    f: &PayoutFilter,
    page: &PageRequest,
) -> Result<Page<Payout>> {
    store
        .query_page(&list_query(tenant, f), page)
        .await?
        .try_map(decode)
}

/// Every payout a filter finds, newest first, read page by page (one
/// Query, its pages of 100).
pub async fn all(store: &Store, tenant: &Tenant, f: &PayoutFilter) -> Result<Vec<Payout>> {
    let mut page = PageRequest {
        limit: crate::page::MAX_LIMIT,
        offset: 0,
        cursor: None,
    };
    let mut found = Vec::new();
    loop {
        let read = list(store, tenant, f, &page).await?;
        found.extend(read.items);
        match (read.has_more, read.next_cursor) {
            (true, Some(c)) => page.cursor = Some(c),
            _ => return Ok(found),
        }
    }
}

/// A conditional Put of the whole payout after a transition: it applies only
/// while the payout is the tenant's, in `from`, and without work left.
fn put_transition(
    tx: &mut Tx<Write>,
    tenant: &Tenant,
    after: &Payout,
    from: PayoutStatus,
) -> Result<()> {
    let when = UpdateExpr::new()
        .when_tenant(&tenant.key())
        .when_status(from)
        .when_absent(attrs::WORK);
    tx.put(Write::Payout, item(tenant, after)?, &when);
    Ok(())
}

/// Members at most one transaction moves, with the payout: one action each,
/// and for a released conversion a refund clawed back may add its
/// adjustment; beside them the payout, its event, and the pool marker or
/// the affiliate's totals.
pub const AT_ONCE: usize = RELEASE_CHUNK - 1;

/// Commits a transition planned from the status it leaves; false when the
/// payout, or one of the members it moves, changed meanwhile. The members
/// it moves (when it has them all) and the affiliate's `paid` total change
/// in the same transaction; otherwise the rest follows as work.
pub async fn commit_transition(
    store: &Store,
    tenant: &Tenant,
    plan: &TransitionPlan,
) -> Result<bool> {
    commit_transitions(store, tenant, std::slice::from_ref(plan)).await
}

/// Commits the transitions of several payouts in one transaction, each as
/// [`commit_transition`] would, with the rollups of the conversions they
/// pay and the affiliates' `paid` totals summed per item, so an item they
/// share (the tenant's rollups, an affiliate's totals) is written once.
/// False when any of them changed meanwhile: nothing is written. A plan
/// that releases members commits alone (each touches its pool's marker).
pub async fn commit_transitions(
    store: &Store,
    tenant: &Tenant,
    plans: &[TransitionPlan],
) -> Result<bool> {
    let tx = transitions_tx(store, tenant, plans)?;
    store
        .transact_unless(tx, &[Write::Payout, Write::Member])
        .await
}

/// How many actions [`commit_transitions`] sends for `plans`: one call
/// takes at most [`MAX_ACTIONS`](crate::tx::MAX_ACTIONS). Counted
/// without building the payouts and their events (one action each).
pub fn transitions_actions(
    store: &Store,
    tenant: &Tenant,
    plans: &[TransitionPlan],
) -> Result<usize> {
    let own: usize = plans.iter().map(|p| 1 + p.events.len()).sum();
    Ok(own + shared_moves(&mut store.tx(), tenant, plans)?.len())
}

/// The actions [`commit_transitions`] sends.
fn transitions_tx(store: &Store, tenant: &Tenant, plans: &[TransitionPlan]) -> Result<Tx<Write>> {
    let mut tx = store.tx();
    for plan in plans {
        put_transition(&mut tx, tenant, &plan.payout, plan.from)?;
        events::append_all(&mut tx, Write::Event, tenant, &plan.events)?;
    }
    shared_moves(&mut tx, tenant, plans)?;
    Ok(tx)
}

/// What the plans move besides their payouts and events: their members,
/// the rollups of the conversions they pay and the affiliates' `paid`
/// totals, summed per item by the domain (`payout_totals::paid_totals`,
/// and `summary::net` in `rollups`).
fn shared_moves<'t>(
    tx: &'t mut Tx<Write>,
    tenant: &Tenant,
    plans: &[TransitionPlan],
) -> Result<&'t mut Tx<Write>> {
    if plans.len() > 1 && plans.iter().any(|p| matches!(p.moves, AtOnce::Release(_))) {
        return Err(Error::internal("a release commits alone"));
    }
    let mut paid_members = Vec::new();
    for plan in plans {
        let after = &plan.payout;
        match &plan.moves {
            AtOnce::Nothing => {}
            AtOnce::Settle(paid) => {
                member_moves(tx, tenant, paid, Some(after))?;
                paid_members.extend(paid.iter().cloned());
            }
            AtOnce::Release(released) => release_members(tx, tenant, after, released)?,
        }
    }
    rollups::moved_many(tx, Write::Rollup, tenant, &paid_members);
    // Per affiliate (one TOTALS item), per currency (one attribute each).
    for (affiliate_id, sums) in payout_totals::paid_totals(plans) {
        let deltas: Vec<(Currency, Decimal)> = sums.into_iter().collect();
        affiliate_totals::add_each(
            tx,
            Write::Totals,
            &tenant.key(),
            affiliate_id,
            affiliate_totals::PAID,
            &deltas,
        );
    }
    Ok(tx)
}

/// How a claim chunk ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimChunk {
    /// Its members joined the payout.
    Claimed,
    /// A member changed meanwhile (taken, reversed); the payout is still
    /// being assembled.
    MemberChanged,
    /// The payout is no longer being assembled (abandoned or finished by
    /// another run).
    PayoutClosed,
}

/// Commits a claim chunk: each member gets the payout (only while it is in
/// no payout and, for a conversion, APPROVED as read), and the payout's
/// counters grow by what was claimed (only while it is being assembled).
/// The cancellation says which side changed, so no read is needed to know.
pub async fn claim_chunk(
    store: &Store,
    tenant: &Tenant,
    payout: &Payout,
    claiming: &Claiming,
) -> Result<ClaimChunk> {
    let mut tx = store.tx();
    let t = tenant.key();
    for (cv, after) in &claiming.conversions {
        let u = UpdateExpr::new()
            .copy_from(
                &conversions::item(tenant, after)?,
                &[attrs::PAYOUT_ID, Index::Gsi5.pk(), Index::Gsi5.sk()],
            )
            .when_tenant(&t)
            .when_status(cv.status)
            .when_absent(attrs::PAYOUT_ID)
            // A partial reversal meanwhile changes what the payout would owe.
            .when_absent_or_eq(
                conversions::COMMISSION_REVERSED,
                conversions::decimal_value(cv.commission_reversed),
            );
        tx.update(Write::Member, &cv.id, RECORD_SK, &u);
    }
    for after in &claiming.adjustments {
        let u = UpdateExpr::new()
            .copy_from(
                &adjustment_item(tenant, after)?,
                &[attrs::PAYOUT_ID, Index::Gsi5.pk(), Index::Gsi5.sk()],
            )
            .when_tenant(&t)
            .when_absent(attrs::PAYOUT_ID);
        tx.update(Write::Member, &after.id, RECORD_SK, &u);
    }
    let counters = UpdateExpr::new()
        .add(attrs::CLAIMED, number_value(claiming.conversions.len()))
        .add(attrs::CLAIMED_MINOR, number_value(claiming.minor))
        .add(
            attrs::CLAIMED_ADJUSTMENTS,
            number_value(claiming.adjustments.len()),
        )
        .add(
            attrs::CLAIMED_ADJUSTMENT_MINOR,
            number_value(claiming.adjustment_minor),
        )
        .when_tenant(&t)
        .when_work(PayoutWork::Claim);
    tx.update(Write::Payout, &payout.id, RECORD_SK, &counters);
    match store.transact(tx).await {
        Ok(()) => Ok(ClaimChunk::Claimed),
        Err(e) if e.failed(Write::Payout) => Ok(ClaimChunk::PayoutClosed),
        Err(e) if e.failed(Write::Member) => Ok(ClaimChunk::MemberChanged),
        Err(e) => Err(e.into_error()),
    }
}

/// Starts assembling a payout: the payout (invisible while its claim runs)
/// and the lock that keeps a second one of the same affiliate and currency
/// from being assembled at the same time. False when the lock is taken.
pub async fn start_claim(store: &Store, tenant: &Tenant, payout: &Payout) -> Result<bool> {
    let mut tx = store.tx();
    tx.put_new(Write::Payout, item(tenant, payout)?);
    let lock = ClaimLock {
        tenant: tenant.key(),
        payout_id: payout.id.clone(),
    };
    let lock_sk = keys::claim_lock_sk(payout.currency.code());
    tx.put_new(Write::Lock, item_at(&payout.affiliate_id, &lock_sk, &lock)?);
    store.transact_unless(tx, &[Write::Lock]).await
}

/// Drops a payout being assembled that has claimed nothing, and its lock
/// (the pool no longer justifies it); false when a chunk committed meanwhile.
pub async fn abandon_claim(store: &Store, tenant: &Tenant, payout: &Payout) -> Result<bool> {
    let mut tx = store.tx();
    let unclaimed = UpdateExpr::new()
        .when_tenant(&tenant.key())
        .when_work(PayoutWork::Claim)
        .when_count(attrs::CLAIMED, 0)
        .when_count(attrs::CLAIMED_ADJUSTMENTS, 0);
    tx.delete(Write::Payout, &payout.id, RECORD_SK, &unclaimed);
    let lock_sk = keys::claim_lock_sk(payout.currency.code());
    let ours =
        UpdateExpr::new().when_absent_or_eq(attrs::PAYOUT_ID, string_value(payout.id.clone()));
    tx.delete(Write::Lock, &payout.affiliate_id, &lock_sk, &ours);
    applied(store, tx).await
}

/// The lock of an affiliate's payout being assembled in a currency.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClaimLock {
    pub tenant: String,
    pub payout_id: String,
}

/// The claim lock of an affiliate and currency, if one is held.
pub async fn claim_lock(
    store: &Store,
    affiliate_id: &str,
    currency: Currency,
) -> Result<Option<ClaimLock>> {
    let lock_sk = keys::claim_lock_sk(currency.code());
    store
        .get_item(affiliate_id, &lock_sk)
        .await?
        .map(from_item)
        .transpose()
}

/// Completes a claim: the payout shows what was claimed (conditioned on the
/// counters it was computed from), the lock goes and its `payout.created`
/// event is recorded. False when a chunk committed meanwhile.
pub async fn finish_claim(
    store: &Store,
    tenant: &Tenant,
    before: &Payout,
    after: &Payout,
) -> Result<bool> {
    let mut tx = store.tx();
    let full = item(tenant, after)?;
    let mut fields = vec![
        "amount",
        "conversionCount",
        "adjustmentTotal",
        attrs::UPDATED_AT,
        attrs::WORK,
    ];
    fields.extend(Index::attributes());
    let u = UpdateExpr::new()
        .copy_from(&full, &fields)
        .when_tenant(&tenant.key())
        .when_work(PayoutWork::Claim)
        .when_count(attrs::CLAIMED, before.progress.claimed)
        .when_count(
            attrs::CLAIMED_ADJUSTMENTS,
            before.progress.claimed_adjustments,
        );
    tx.update(Write::Payout, &after.id, RECORD_SK, &u);
    let lock_sk = keys::claim_lock_sk(after.currency.code());
    let ours =
        UpdateExpr::new().when_absent_or_eq(attrs::PAYOUT_ID, string_value(after.id.clone()));
    tx.delete(Write::Lock, &after.affiliate_id, &lock_sk, &ours);
    events::append(&mut tx, Write::Event, tenant, &after.created_event())?;
    applied(store, tx).await
}

/// Commits a settle chunk: each conversion becomes PAID (only while it is
/// APPROVED in this payout), its rollups move, and the payout counts them.
pub async fn settle_chunk(
    store: &Store,
    tenant: &Tenant,
    payout: &Payout,
    paid: &[(Conversion, Conversion)],
    chunk: &WorkChunk,
) -> Result<bool> {
    let u = count_work(tenant, payout, chunk, (PayoutWork::Settle, paid.len()))?;
    status_chunk(store, tenant, paid, Some(payout), |tx| {
        tx.update(Write::Payout, &payout.id, RECORD_SK, &u);
        Ok(())
    })
    .await
}

/// The payout's update for a chunk of its `work` that moves `n` members:
/// its counter grows by them while it reads as the chunk was planned on (so
/// the payout after it is the one the domain planned), and the chunk the
/// domain planned as the last also ends the work, as [`finish_work`] would:
/// the payout is written once less.
fn count_work(
    tenant: &Tenant,
    p: &Payout,
    chunk: &WorkChunk,
    (work, n): (PayoutWork, usize),
) -> Result<UpdateExpr> {
    // The chunk must be the plan of what the caller writes.
    if (chunk.work(), chunk.moved()) != (work, n) {
        return Err(Error::internal("a work chunk planned for other members"));
    }
    let counter = match work {
        PayoutWork::Settle => attrs::SETTLED,
        PayoutWork::Release => attrs::RELEASED,
        PayoutWork::Claim => return Err(Error::internal("a claim is not counted here")),
    };
    let u = UpdateExpr::new()
        .add(counter, number_value(n))
        .when_tenant(&tenant.key())
        .when_work(work);
    match chunk.ended() {
        // Conditioned on both counters as read.
        Some(done) => end_work(u, tenant, p, done),
        None => Ok(u.when_count(counter, chunk.read())),
    }
}

/// Commits an approval chunk: each conversion becomes APPROVED (only while
/// PENDING), its rollups move, its event is recorded, and the pools it joins
/// are marked for a check.
pub async fn approve_chunk(
    store: &Store,
    tenant: &Tenant,
    approved: &[(Conversion, Conversion)],
    recorded: &[Event],
) -> Result<bool> {
    status_chunk(store, tenant, approved, None, |tx| {
        events::append_all(tx, Write::Event, tenant, recorded)?;
        let afters = approved.iter().map(|(_, after)| after);
        touch_pools_joined(tx, Write::Marker, tenant, afters);
        Ok(())
    })
    .await
}

/// A chunk of status changes `(before, after)` with their rollups; `finish`
/// adds the chunk's own bookkeeping.
async fn status_chunk(
    store: &Store,
    tenant: &Tenant,
    changes: &[(Conversion, Conversion)],
    payout: Option<&Payout>,
    finish: impl FnOnce(&mut Tx<Write>) -> Result<()>,
) -> Result<bool> {
    let mut tx = store.tx();
    move_statuses(&mut tx, tenant, changes, payout)?;
    finish(&mut tx)?;
    applied(store, tx).await
}

/// The status moves `(before, after)` of conversions in `payout` (in none
/// when `None`), with their rollups summed per item.
fn move_statuses(
    tx: &mut Tx<Write>,
    tenant: &Tenant,
    changes: &[(Conversion, Conversion)],
    payout: Option<&Payout>,
) -> Result<()> {
    member_moves(tx, tenant, changes, payout)?;
    rollups::moved_many(tx, Write::Rollup, tenant, changes);
    Ok(())
}

/// The status moves `(before, after)` of conversions in `payout` (in none
/// when `None`), without their rollups.
fn member_moves(
    tx: &mut Tx<Write>,
    tenant: &Tenant,
    changes: &[(Conversion, Conversion)],
    payout: Option<&Payout>,
) -> Result<()> {
    for (before, after) in changes {
        let mut u = conversions::status_move(tenant, before, after)?;
        u = match payout {
            Some(p) => u.when_eq(attrs::PAYOUT_ID, string_value(p.id.clone())),
            None => u.when_absent(attrs::PAYOUT_ID),
        };
        tx.update(Write::Member, &after.id, RECORD_SK, &u);
    }
    Ok(())
}

/// Commits a release chunk: each member leaves the payout for its pool
/// (only while it is in this payout), the payout counts them, and the pool
/// is marked for a check.
pub async fn release_chunk(
    store: &Store,
    tenant: &Tenant,
    payout: &Payout,
    released: &Releasing,
    chunk: &WorkChunk,
) -> Result<bool> {
    let mut tx = store.tx();
    release_members(&mut tx, tenant, payout, released)?;
    let u = count_work(tenant, payout, chunk, (PayoutWork::Release, released.len()))?;
    tx.update(Write::Payout, &payout.id, RECORD_SK, &u);
    applied(store, tx).await
}

/// The updates that return members to their pool (only while they are in
/// `payout`), the adjustments giving back what refunds clawed back
/// meanwhile, and the pool's marker.
fn release_members(
    tx: &mut Tx<Write>,
    tenant: &Tenant,
    payout: &Payout,
    released: &Releasing,
) -> Result<()> {
    let t = tenant.key();
    let fields = [attrs::PAYOUT_ID, Index::Gsi5.pk(), Index::Gsi5.sk()];
    let returned = [
        attrs::PAYOUT_ID,
        Index::Gsi5.pk(),
        Index::Gsi5.sk(),
        conversions::COMMISSION_CLAWED_BACK,
    ];
    for (cv, after) in &released.conversions {
        // A refund clawed back meanwhile is read again with the chunk.
        let u = UpdateExpr::new()
            .copy_from(&conversions::item(tenant, after)?, &returned)
            .when_tenant(&t)
            .when_eq(attrs::PAYOUT_ID, string_value(payout.id.clone()))
            .when_absent_or_eq(
                conversions::COMMISSION_CLAWED_BACK,
                conversions::decimal_value(cv.commission_clawed_back),
            );
        tx.update(Write::Member, &cv.id, RECORD_SK, &u);
    }
    for a in &released.given_back {
        tx.put_new(Write::Member, adjustment_item(tenant, a)?);
    }
    for a in &released.adjustments {
        let u = UpdateExpr::new()
            .copy_from(&adjustment_item(tenant, a)?, &fields)
            .when_tenant(&t)
            .when_eq(attrs::PAYOUT_ID, string_value(payout.id.clone()));
        tx.update(Write::Member, &a.id, RECORD_SK, &u);
    }
    touch_pool(
        tx,
        Write::Marker,
        tenant,
        &payout.affiliate_id,
        payout.currency,
    );
    Ok(())
}

/// Writes `done`, the payout `p` with its work over, conditioned on the work
/// and the counters `p` was judged by.
pub async fn finish_work(
    store: &Store,
    tenant: &Tenant,
    p: &Payout,
    done: &Payout,
) -> Result<bool> {
    let Some(work) = p.work else {
        return Ok(false);
    };
    let u = UpdateExpr::new().when_tenant(&tenant.key()).when_work(work);
    let u = end_work(u, tenant, p, done)?;
    let mut tx = store.tx();
    tx.update(Write::Payout, &p.id, RECORD_SK, &u);
    applied(store, tx).await
}

/// Adds to `u` the end of `p`'s work, as `done` (the domain's
/// `Payout::work_ended`) shows it: `work` removed with its GSI5 entry,
/// conditioned on the counters as read (a chunk committed meanwhile makes
/// the judgement stale).
fn end_work(u: UpdateExpr, tenant: &Tenant, p: &Payout, done: &Payout) -> Result<UpdateExpr> {
    let mut fields = vec![attrs::WORK, attrs::UPDATED_AT];
    fields.extend(Index::attributes());
    Ok(u.copy_from(&item(tenant, done)?, &fields)
        .when_count(attrs::SETTLED, p.progress.settled)
        .when_count(attrs::RELEASED, p.progress.released))
}

/// Runs a step of a payout's work: false when the payout, one of its
/// members or its lock changed since it was read.
async fn applied(store: &Store, tx: Tx<Write>) -> Result<bool> {
    store
        .transact_unless(tx, &[Write::Member, Write::Payout, Write::Lock])
        .await
}

/// The members of a GSI5 partition (a pool or a payout's), re-read
/// consistently from their records, at most `limit` of them.
pub async fn members(
    store: &Store,
    tenant: &Tenant,
    partition: &str,
    range: WorkRange<'_>,
    limit: usize,
) -> Result<(Vec<Conversion>, Vec<Adjustment>)> {
    let (conversions, adjustments, _) =
        members_page(store, tenant, partition, range, limit).await?;
    Ok((conversions, adjustments))
}

/// [`members`], with the index sort key of the last item read (where the
/// next page starts), so a walk through a large partition reads each item once.
pub async fn members_page(
    store: &Store,
    tenant: &Tenant,
    partition: &str,
    range: WorkRange<'_>,
    limit: usize,
) -> Result<(Vec<Conversion>, Vec<Adjustment>, Option<String>)> {
    let found = store.query_work(partition, range, limit).await?;
    let last = found
        .last()
        .and_then(|i| string_of(i, Index::Gsi5.sk()))
        .map(str::to_string);
    let keys: Vec<(String, String)> = found
        .iter()
        .filter_map(|i| Some((string_of(i, attrs::PK)?.to_string(), RECORD_SK.to_string())))
        .collect();
    let mut conversions = Vec::new();
    let mut adjustments = Vec::new();
    for chunk in keys.chunks(100) {
        for item in store.batch_get(chunk).await? {
            if string_of(&item, attrs::TENANT) != Some(tenant.key().as_str()) {
                continue;
            }
            match string_of(&item, attrs::PK) {
                Some(id) if ids::is_valid(IdKind::Adjustment, id) => {
                    adjustments.push(from_item(item)?)
                }
                _ => conversions.push(conversions::decode(item)?),
            }
        }
    }
    Ok((conversions, adjustments, last))
}

/// Payouts of every tenant in the payout job's `queue`, from one shard.
pub async fn with_work(
    store: &Store,
    queue: PayoutQueue,
    shard: u32,
    limit: usize,
) -> Result<Vec<(Tenant, Payout)>> {
    let items = store
        .query_work(&keys::payout_work(queue, shard), WorkRange::All, limit)
        .await?;
    let mut out = Vec::new();
    for item in items {
        let Some(tenant) = string_of(&item, attrs::TENANT).and_then(Tenant::from_key) else {
            continue;
        };
        out.push((tenant, decode(item)?));
    }
    Ok(out)
}

/// Conversions of every tenant whose hold ended by `now`, from one shard:
/// the due partition read up to `now`, then the records re-read consistently.
pub async fn due_conversions(
    store: &Store,
    shard: u32,
    now: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<(Tenant, Conversion)>> {
    let upto = keys::up_to(&now);
    let keys: Vec<(String, String)> = store
        .query_work(&keys::due_approval(shard), WorkRange::UpTo(&upto), limit)
        .await?
        .iter()
        .filter_map(|i| Some((string_of(i, attrs::PK)?.to_string(), RECORD_SK.to_string())))
        .collect();
    let mut out = Vec::new();
    for chunk in keys.chunks(100) {
        for item in store.batch_get(chunk).await? {
            let Some(tenant) = string_of(&item, attrs::TENANT).and_then(Tenant::from_key) else {
                continue;
            };
            out.push((tenant, conversions::decode(item)?));
        }
    }
    Ok(out)
}

/// Group `(tenant, conversion)` pairs by tenant, keeping their order.
pub fn by_tenant<T>(pairs: Vec<(Tenant, T)>) -> Vec<(Tenant, Vec<T>)> {
    let mut groups: HashMap<Tenant, Vec<T>> = HashMap::new();
    let mut order = Vec::new();
    for (t, v) in pairs {
        if !groups.contains_key(&t) {
            order.push(t.clone());
        }
        groups.entry(t).or_default().push(v);
    }
    order
        .into_iter()
        .filter_map(|t| groups.remove(&t).map(|v| (t, v)))
        .collect()
}

/// The tenant a payout belongs to, whoever asks (operator tools only).
pub async fn tenant_of(store: &Store, id: &str) -> Result<Option<Tenant>> {
    if !ids::is_valid(IdKind::Payout, id) {
        return Ok(None);
    }
    Ok(store
        .get_item(id, RECORD_SK)
        .await?
        .and_then(|item| string_of(&item, attrs::TENANT).and_then(Tenant::from_key)))
}
