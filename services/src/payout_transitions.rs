//! Payout transitions: read -> decide (`Payout::apply`) -> commit, then the
//! work a transition leaves on the payout's conversions, driven in chunks
//! until done (the payout job finishes whatever a crash interrupts). No
//! storage file is read here, so every function may move a payout (a
//! provider's event included).

use crate::app::App;
use chrono::{DateTime, Utc};

use crate::retry::{retry_on_conflict, Attempt};
use domain::conversion::Conversion;
use domain::error::{Error, Result};
use domain::payout::{Payout, PayoutWork};
use domain::payout_command::{Command, Moved};
use domain::payout_work::{AtOnce, TransitionPlan, WorkChunk};
use domain::tenant::Tenant;
use store::payouts::{self as store_payouts, AT_ONCE, RELEASE_CHUNK, STATUS_CHUNK};
use store::work::WorkRange;
use store::{keys, Store};
/// Times a transition is decided again after a concurrent change.
pub(crate) const TRANSITION_ATTEMPTS: usize = 3;
/// Chunks a request drives before leaving the rest to the payout job.
pub(crate) const REQUEST_CHUNKS: usize = 200;

/// Applies a command to the tenant's payout and drives the work it leaves.
/// `command` is built from the payout as read (it may need facts about it).
pub async fn transition(
    app: &App,
    tenant: &Tenant,
    id: &str,
    command: impl Fn(&Payout) -> Command,
    now: DateTime<Utc>,
) -> Result<Payout> {
    transition_from(app, tenant, id, None, |p| Ok(command(p)), now).await
}

/// [`transition`], deciding first on `read` (the payout as the caller just
/// read it, which saves a round trip); a retry after a concurrent change
/// reads it again and decides again: `command` may refuse the payout as it
/// has become (a provider's answer to an attempt that is no longer current).
pub async fn transition_from(
    app: &App,
    tenant: &Tenant,
    id: &str,
    read: Option<Payout>,
    command: impl Fn(&Payout) -> Result<Command>,
    now: DateTime<Utc>,
) -> Result<Payout> {
    let store = &app.store;
    let command = &command;
    let mut read = read;
    let committed = retry_on_conflict(TRANSITION_ATTEMPTS, "payout", || {
        let first = read.take();
        async move {
            let before = match first {
                Some(p) => p,
                None => store_payouts::get(store, tenant, id).await?,
            };
            let Some(moved) = before.apply(command(&before)?, now)?.moved(now)? else {
                return Ok(Attempt::Done((before, false)));
            };
            commit(store, tenant, moved, now).await
        }
    })
    .await?;
    finish(store, tenant, committed, now).await
}

/// Commits a decided transition with the members it moves at once: done
/// (the payout as written), or a conflict when the payout changed meanwhile
/// (the caller decides again on what it is now; a 409 names it).
pub(crate) async fn commit(
    store: &Store,
    tenant: &Tenant,
    moved: Moved,
    now: DateTime<Utc>,
) -> Result<Attempt<(Payout, bool)>> {
    let plan = planned(store, tenant, moved, now).await?;
    Ok(
        match store_payouts::commit_transition(store, tenant, &plan).await? {
            true => Attempt::Done((plan.payout, true)),
            false => Attempt::Conflict,
        },
    )
}

/// The plan of a decided transition, with the members it moves at once.
pub(crate) async fn planned(
    store: &Store,
    tenant: &Tenant,
    moved: Moved,
    now: DateTime<Utc>,
) -> Result<TransitionPlan> {
    let (after, moves) = at_once(store, tenant, moved.payout, now).await?;
    Ok(TransitionPlan::new(after, moved.from, moved.events, moves))
}

/// Drives the work a committed transition left; an unchanged payout is
/// answered as it is.
pub(crate) async fn finish(
    store: &Store,
    tenant: &Tenant,
    committed: (Payout, bool),
    now: DateTime<Utc>,
) -> Result<Payout> {
    match committed {
        (after, true) => drive(store, tenant, after, REQUEST_CHUNKS, now).await,
        (unchanged, false) => Ok(unchanged),
    }
}

/// A transition that leaves work one transaction holds does it itself: the
/// payout's members are read now and paid or released in its transaction,
/// so the payout is written once (`Payout::settled_at_once`,
/// `released_at_once`). Otherwise, or when the index does not list them all
/// yet, the work runs in chunks.
async fn at_once(
    store: &Store,
    tenant: &Tenant,
    after: Payout,
    now: DateTime<Utc>,
) -> Result<(Payout, AtOnce)> {
    // Its adjustments share the partition: the read passes them too, while
    // a settle's transaction moves its conversions only.
    let held = usize::try_from(after.conversion_count + after.progress.claimed_adjustments)
        .unwrap_or(usize::MAX);
    let moved = usize::try_from(after.conversion_count).unwrap_or(usize::MAX);
    let fits = match after.work {
        Some(PayoutWork::Settle) => moved <= STATUS_CHUNK && held <= AT_ONCE,
        Some(PayoutWork::Release) => held <= AT_ONCE,
        _ => false,
    };
    if !fits {
        return Ok((after, AtOnce::Nothing));
    }
    let (conversions, adjustments) = match held {
        0 => Default::default(),
        _ => {
            let partition = keys::payout_members(&after.id);
            store_payouts::members(store, tenant, &partition, WorkRange::All, held).await?
        }
    };
    if after.work == Some(PayoutWork::Release) {
        let released = after.releasing(conversions, adjustments, now);
        return Ok(match after.released_at_once(&released) {
            Some(done) => (done, AtOnce::Release(released)),
            None => (after, AtOnce::Nothing),
        });
    }
    let paid = after.paying(conversions, now);
    Ok(match after.settled_at_once(paid.len()) {
        Some(done) => (done, AtOnce::Settle(paid)),
        None => (after, AtOnce::Nothing),
    })
}

/// Completes a payout's settle or release work, at most `chunks` chunks;
/// returns the payout as it then is.
pub async fn drive(
    store: &Store,
    tenant: &Tenant,
    mut p: Payout,
    chunks: usize,
    now: DateTime<Utc>,
) -> Result<Payout> {
    // Settled conversions stay in the payout's partition: walk past them.
    let mut after: Option<String> = None;
    for _ in 0..chunks {
        let step = match p.work {
            None | Some(PayoutWork::Claim) => return Ok(p),
            _ if p.work_done() => {
                let done = p.work_ended(now);
                match store_payouts::finish_work(store, tenant, &p, &done).await? {
                    true => Step::Moved(Box::new(done)),
                    false => Step::Lost,
                }
            }
            Some(PayoutWork::Settle) => settle_step(store, tenant, &p, &mut after, now).await?,
            Some(PayoutWork::Release) => release_step(store, tenant, &p, now).await?,
        };
        // A committed chunk leaves the payout as the domain planned it: the
        // chunk was conditioned on the counter it was planned on.
        if let Step::Moved(next) = step {
            p = *next;
            continue;
        }
        p = store_payouts::read(store, tenant, &p.id)
            .await?
            .ok_or_else(|| Error::internal("payout vanished"))?;
        if step == Step::Nothing && p.work.is_some() && !p.work_done() {
            // Nothing left to take although the counters say otherwise: the
            // index has not caught up yet; the payout job completes it.
            return Ok(p);
        }
    }
    Ok(p)
}

/// What one step of a payout's work did.
#[derive(Debug, PartialEq)]
enum Step {
    /// A chunk was committed: the payout is now this.
    Moved(Box<Payout>),
    /// Another writer changed a member or the payout meanwhile.
    Lost,
    /// The index lists nothing left to move.
    Nothing,
}

/// One settle chunk: the next APPROVED conversions of the payout become
/// PAID. The walk through the payout's partition goes on from `after`, past
/// conversions already paid, so each is read once.
async fn settle_step(
    store: &Store,
    tenant: &Tenant,
    p: &Payout,
    after: &mut Option<String>,
    now: DateTime<Utc>,
) -> Result<Step> {
    let partition = keys::payout_members(&p.id);
    loop {
        let range = after.as_deref().map_or(WorkRange::All, WorkRange::After);
        let (mut conversions, _, last) =
            store_payouts::members_page(store, tenant, &partition, range, STATUS_CHUNK).await?;
        let Some(last) = last else {
            return Ok(Step::Nothing);
        };
        conversions.sort_by_key(Conversion::sort_key);
        let paid = p.paying(conversions, now);
        if paid.is_empty() {
            *after = Some(last);
            continue;
        }
        let chunk = work_chunk(p, PayoutWork::Settle, paid.len(), now)?;
        // A chunk that lost a race is read again from the same place.
        if !store_payouts::settle_chunk(store, tenant, p, &paid, &chunk).await? {
            return Ok(Step::Lost);
        }
        *after = Some(last);
        return Ok(Step::Moved(Box::new(chunk.into_after())));
    }
}

/// One release chunk: the payout's members return to the pool (with what
/// refunds clawed back while it held them given back).
async fn release_step(
    store: &Store,
    tenant: &Tenant,
    p: &Payout,
    now: DateTime<Utc>,
) -> Result<Step> {
    let partition = keys::payout_members(&p.id);
    let (conversions, adjustments) =
        store_payouts::members(store, tenant, &partition, WorkRange::All, RELEASE_CHUNK).await?;
    let released = p.releasing(conversions, adjustments, now);
    if released.is_empty() {
        return Ok(Step::Nothing);
    }
    let chunk = work_chunk(p, PayoutWork::Release, released.len(), now)?;
    Ok(
        match store_payouts::release_chunk(store, tenant, p, &released, &chunk).await? {
            true => Step::Moved(Box::new(chunk.into_after())),
            false => Step::Lost,
        },
    )
}

/// The chunk of `p`'s `work` that moves `moved` members at `now`.
fn work_chunk(p: &Payout, work: PayoutWork, moved: usize, now: DateTime<Utc>) -> Result<WorkChunk> {
    p.chunk(work, moved, now)
        .ok_or_else(|| Error::internal("a payout's work counter is out of range"))
}
