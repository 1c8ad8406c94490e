//! Payout operations: read -> decide (`Payout::apply`) -> commit, then the
//! work a transition leaves on the payout's conversions, driven in chunks
//! until done (the payout job finishes whatever a crash interrupts).

use chrono::{DateTime, Utc};
use futures::stream::{self, StreamExt};

use crate::app::App;
use crate::domain::conversion::Conversion;
use crate::domain::payout::{
    AtOnce, Command, Moved, Payout, PayoutStatus, PayoutWork, TransitionPlan, WorkChunk,
};
use crate::domain::tenant::Tenant;
use crate::error::{Error, Result};
use crate::payouts::provider::Payment;
use crate::retry::{retry_on_conflict, Attempt};
use crate::store::payouts::{self as store_payouts, AT_ONCE, RELEASE_CHUNK, STATUS_CHUNK};
use crate::store::tx::MAX_ACTIONS;
use crate::store::work::WorkRange;
use crate::store::{keys, Store};

/// Times a transition is decided again after a concurrent change.
const TRANSITION_ATTEMPTS: usize = 3;
/// Chunks a request drives before leaving the rest to the payout job.
const REQUEST_CHUNKS: usize = 200;

/// Applies a command to the tenant's payout and drives the work it leaves.
/// `command` is built from the payout as read (it may need facts about it).
pub async fn transition(
    store: &Store,
    tenant: &Tenant,
    id: &str,
    command: impl Fn(&Payout) -> Command,
    now: DateTime<Utc>,
) -> Result<Payout> {
    transition_from(store, tenant, id, None, command, now).await
}

/// [`transition`], deciding first on `read` (the payout as the caller just
/// read it, which saves a round trip); a retry after a concurrent change
/// reads it again.
pub async fn transition_from(
    store: &Store,
    tenant: &Tenant,
    id: &str,
    read: Option<Payout>,
    command: impl Fn(&Payout) -> Command,
    now: DateTime<Utc>,
) -> Result<Payout> {
    let command = &command;
    let mut read = read;
    let committed = retry_on_conflict(TRANSITION_ATTEMPTS, "payout", || {
        let first = read.take();
        async move {
            let before = match first {
                Some(p) => p,
                None => store_payouts::get(store, tenant, id).await?,
            };
            let Some(moved) = before.apply(command(&before), now)?.moved(now)? else {
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
async fn planned(
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

/// Approves a payout whose invoice is in storage.
pub async fn approve(app: &App, tenant: &Tenant, id: &str, now: DateTime<Utc>) -> Result<Payout> {
    let (payout, checked) = with_invoice_presence(app, tenant, id).await?;
    transition_from(
        &app.store,
        tenant,
        id,
        Some(payout),
        |_| Command::Approve {
            checked_invoice: checked.clone(),
        },
        now,
    )
    .await
}

/// The payout, and the key of the invoice it names when that is in storage.
async fn with_invoice_presence(
    app: &App,
    tenant: &Tenant,
    id: &str,
) -> Result<(Payout, Option<String>)> {
    let p = store_payouts::get(&app.store, tenant, id).await?;
    let checked = invoice_presence(app, &p).await?;
    Ok((p, checked))
}

/// The key of the invoice `p` names, when that is in storage.
pub(crate) async fn invoice_presence(app: &App, p: &Payout) -> Result<Option<String>> {
    Ok(match &p.invoice_key {
        Some(key) if app.files().head(key).await?.is_some() => Some(key.clone()),
        _ => None,
    })
}

/// Processes one payout (batch-process): approved (when invoiced), handed
/// to the mode's provider with its id as idempotency key, then PAID, or
/// APPROVED again with 503 when the provider fails; the manual provider
/// leaves it PROCESSING.
///
/// The shipped providers answer without moving money through this process
/// (the sandbox pays in its own ledger, manual sends nothing), so the
/// provider is asked once the move to PROCESSING is decided, and its answer
/// is committed with that move in one write: the payout is written once,
/// with the events of both steps. A retry after a lost race asks again,
/// which pays once (the payout id is the idempotency key).
pub async fn process(app: &App, tenant: &Tenant, id: &str, now: DateTime<Utc>) -> Result<Payout> {
    let (payout, checked) = with_invoice_presence(app, tenant, id).await?;
    let mut read = Some(payout);
    let (checked, read) = (&checked, &mut read);
    let committed = retry_on_conflict(TRANSITION_ATTEMPTS, "payout", || {
        let first = read.take();
        async move {
            let before = match first {
                Some(p) => p,
                None => store_payouts::get(&app.store, tenant, id).await?,
            };
            match processed(app, tenant, &before, checked.clone(), now).await? {
                Some(moved) => commit(&app.store, tenant, moved, now).await,
                None => Ok(Attempt::Done((before, false))),
            }
        }
    })
    .await?;
    let after = finish(&app.store, tenant, committed, now).await?;
    failed_payment(after)
}

/// The move of `before` to PROCESSING with the mode's provider's answer,
/// as one write (none when nothing changes).
async fn processed(
    app: &App,
    tenant: &Tenant,
    before: &Payout,
    checked_invoice: Option<String>,
    now: DateTime<Utc>,
) -> Result<Option<Moved>> {
    let process = Command::Process { checked_invoice };
    let Some(processing) = before.apply(process, now)?.moved(now)? else {
        return Ok(None);
    };
    Ok(Some(
        match answer(app.payments.pay(tenant.mode, &processing.payout).await) {
            Some(command) => {
                let next = processing.payout.apply(command, now)?;
                processing.then(next, now)?
            }
            None => processing,
        },
    ))
}

/// Payouts whose plans a batch-process decides at once.
const DECIDED_AT_ONCE: usize = 8;

/// batch-process: each payout decided as [`process`] decides it, from one
/// batch read of them all. Those whose transition completes in one write
/// (the sandbox's payment of at most [`STATUS_CHUNK`] conversions, manual's
/// PROCESSING, a failed payment) are committed several payouts a
/// transaction, so what they share (the tenant's rollups, an affiliate's
/// paid total) is written once per transaction; one that leaves work is
/// committed alone from its plan, then its work driven; a payout whose
/// transaction was refused (it or one of its conversions changed
/// meanwhile), or that was not read, goes through [`process`]. The answers
/// keep the ids' order.
pub async fn process_many(
    app: &App,
    tenant: &Tenant,
    ids: Vec<String>,
    now: DateTime<Utc>,
) -> Vec<(String, Result<Payout>)> {
    // A failed batch read leaves every payout to be read alone.
    let mut found = match store_payouts::get_many(&app.store, tenant, &ids).await {
        Ok(found) => Some(found),
        Err(e) => {
            tracing::warn!(error = %e, "batch-process: the batch read failed; each payout is read alone");
            None
        }
    };
    let reads: Vec<Option<Result<Payout>>> = ids
        .iter()
        .map(|id| {
            let read = found.as_mut()?.remove(id);
            Some(read.ok_or(Error::NotFound("payout")))
        })
        .collect();
    let decided: Vec<Option<Result<TransitionPlan>>> = stream::iter(reads)
        .map(|read| async move {
            let before = match read? {
                Ok(p) => p,
                Err(e) => return Some(Err(e)),
            };
            plan_process(app, tenant, &before, now).await.transpose()
        })
        .buffered(DECIDED_AT_ONCE)
        .collect()
        .await;
    let mut results: Vec<Option<Result<Payout>>> = Vec::with_capacity(ids.len());
    let (mut together, mut apart) = (Vec::new(), Vec::new());
    for (i, d) in decided.into_iter().enumerate() {
        match d {
            Some(Ok(plan)) if plan.payout.work.is_none() => together.push((i, plan)),
            // Work left in chunks: its own transaction, then the chunks.
            Some(Ok(plan)) => apart.push((i, plan)),
            Some(Err(e)) => {
                results.push(Some(Err(e)));
                continue;
            }
            // Not read, or nothing to write: alone.
            None => {}
        }
        results.push(None);
    }
    commit_together(&app.store, tenant, together, &mut results).await;
    for (i, plan) in apart {
        results[i] = commit_apart(&app.store, tenant, plan, now).await;
    }
    stream::iter(ids.into_iter().zip(results))
        .map(|(id, r)| async move {
            let r = match r {
                Some(r) => r,
                None => process(app, tenant, &id, now).await,
            };
            (id, r)
        })
        .buffered(DECIDED_AT_ONCE)
        .collect()
        .await
}

/// Commits a plan that leaves work and drives that work; none when the
/// payout changed meanwhile (it goes again alone, through [`process`]).
async fn commit_apart(
    store: &Store,
    tenant: &Tenant,
    plan: TransitionPlan,
    now: DateTime<Utc>,
) -> Option<Result<Payout>> {
    match store_payouts::commit_transition(store, tenant, &plan).await {
        Ok(true) => Some(
            drive(store, tenant, plan.payout, REQUEST_CHUNKS, now)
                .await
                .and_then(failed_payment),
        ),
        _ => None,
    }
}

/// The plan of processing `before`, with the members it pays at once.
async fn plan_process(
    app: &App,
    tenant: &Tenant,
    before: &Payout,
    now: DateTime<Utc>,
) -> Result<Option<TransitionPlan>> {
    let checked = invoice_presence(app, before).await?;
    match processed(app, tenant, before, checked, now).await? {
        Some(moved) => Ok(Some(planned(&app.store, tenant, moved, now).await?)),
        None => Ok(None),
    }
}

/// Commits the plans of `together` in as few transactions as DynamoDB's
/// limit on actions allows, one after another (they share the tenant's
/// rollup items); a chunk refused leaves its payouts' results empty, for
/// [`process`] to redo each alone.
async fn commit_together(
    store: &Store,
    tenant: &Tenant,
    together: Vec<(usize, TransitionPlan)>,
    results: &mut [Option<Result<Payout>>],
) {
    let (mut plans, mut at) = (Vec::new(), Vec::new());
    for (i, plan) in together {
        plans.push(plan);
        at.push(i);
        if plans.len() > 1 && !fits(store, tenant, &plans) {
            // The last one starts the next chunk.
            if let (Some(plan), Some(i)) = (plans.pop(), at.pop()) {
                commit_chunk(store, tenant, std::mem::take(&mut plans), &at, results).await;
                at.clear();
                plans.push(plan);
                at.push(i);
            }
        }
    }
    if !plans.is_empty() {
        commit_chunk(store, tenant, plans, &at, results).await;
    }
}

/// Actions in one of batch-process's transactions: half of DynamoDB's
/// limit (six payouts of one conversion). Each holds the tenant's rollup
/// items, which every postback's transaction writes too: a shorter one
/// keeps them less long, so both conflict less.
const BATCH_ACTIONS: usize = MAX_ACTIONS / 2;

/// Whether one of batch-process's transactions holds these plans.
fn fits(store: &Store, tenant: &Tenant, plans: &[TransitionPlan]) -> bool {
    store_payouts::transitions_actions(store, tenant, plans).is_ok_and(|n| n <= BATCH_ACTIONS)
}

/// Commits one chunk of plans; on success each payout's answer is set.
async fn commit_chunk(
    store: &Store,
    tenant: &Tenant,
    plans: Vec<TransitionPlan>,
    at: &[usize],
    results: &mut [Option<Result<Payout>>],
) {
    let committed = match store_payouts::commit_transitions(store, tenant, &plans).await {
        Ok(true) => plans.into_iter().map(|p| Some(p.payout)).collect(),
        refused => {
            tracing::warn!(payouts = plans.len(), outcome = ?refused.map_err(|e| e.to_string()),
                "batch-process: a shared transaction was refused; its payouts go again alone");
            written_anyway(store, tenant, plans).await
        }
    };
    for (payout, i) in committed.into_iter().zip(at) {
        if let Some(p) = payout {
            results[*i] = Some(failed_payment(p));
        }
    }
}

/// Of a refused chunk's plans, the payouts stored as planned (an SDK retry
/// of a transaction whose first attempt was applied is refused by the
/// conditions it met): those are answered as written, the others go again
/// alone. A failed read leaves them all to go again.
async fn written_anyway(
    store: &Store,
    tenant: &Tenant,
    plans: Vec<TransitionPlan>,
) -> Vec<Option<Payout>> {
    let ids: Vec<String> = plans.iter().map(|p| p.payout.id.clone()).collect();
    let mut stored = store_payouts::get_many(store, tenant, &ids)
        .await
        .unwrap_or_default();
    plans
        .into_iter()
        .map(|plan| {
            let now = stored.remove(&plan.payout.id)?;
            // Stored to the millisecond.
            let at = |p: &Payout| p.updated_at.timestamp_millis();
            let same = now.status == plan.payout.status && at(&now) == at(&plan.payout);
            same.then_some(now)
        })
        .collect()
}

/// The command a provider's answer makes: none while it is pending.
fn answer(payment: Payment) -> Option<Command> {
    match payment {
        Payment::Pending => None,
        Payment::Paid { reference } => Some(Command::ConfirmPayment {
            reference: Some(reference),
        }),
        Payment::Failed { message } => Some(Command::PaymentFailed {
            code: "sandbox_refused".into(),
            message,
        }),
    }
}

/// The payout, or the 503 that says its payment failed (it is APPROVED
/// again with `paymentError`).
fn failed_payment(after: Payout) -> Result<Payout> {
    match (&after.payment_error, after.status) {
        (Some(error), PayoutStatus::Approved) => Err(Error::Unavailable(format!(
            "the payment provider did not pay payout {}: {error}; it is APPROVED again, retry",
            after.id
        ))),
        _ => Ok(after),
    }
}

/// Asks the provider to pay a payout the payout job found PROCESSING (left
/// there by a crash, or by a provider that confirms later) and records its
/// answer, decided on the record read again: the work index's copy `p` may
/// lag behind it.
pub async fn pay(app: &App, tenant: &Tenant, p: Payout, now: DateTime<Utc>) -> Result<Payout> {
    let Some(command) = answer(app.payments.pay(tenant.mode, &p).await) else {
        return Ok(p);
    };
    let after = transition(&app.store, tenant, &p.id, |_| command.clone(), now).await?;
    failed_payment(after)
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
