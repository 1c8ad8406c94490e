//! Payout operations that read the invoice in storage or ask the payment
//! provider without a rail: approve, process, batch-process, and the payout
//! job's retry of a payment. The transitions themselves are
//! `services::payout_transitions`.

use chrono::{DateTime, Utc};
use futures::stream::{self, StreamExt};

use crate::app::App;
use crate::paying::provider::Payment;
use crate::payout_transitions::{commit, finish, planned, REQUEST_CHUNKS, TRANSITION_ATTEMPTS};
pub use crate::payout_transitions::{drive, transition, transition_from};
use crate::retry::{retry_on_conflict, Attempt};
use crate::tax_forms;
use domain::error::{Error, Result};
use domain::payout::{Payout, PayoutStatus};
use domain::payout_command::{Command, Moved};
use domain::payout_work::TransitionPlan;
use domain::tenant::Tenant;
use store::payouts as store_payouts;
use store::tx::MAX_ACTIONS;
use store::Store;

/// Each payout id with its outcome.
pub type Outcomes = Vec<(String, Result<Payout>)>;

/// Approves a payout whose invoice is in storage.
pub async fn approve(app: &App, tenant: &Tenant, id: &str, now: DateTime<Utc>) -> Result<Payout> {
    let (payout, checked) = with_invoice_presence(app, tenant, id).await?;
    tax_forms::check_payable(app, tenant, &payout, now).await?;
    transition_from(
        app,
        tenant,
        id,
        Some(payout),
        |_| {
            Ok(Command::Approve {
                checked_invoice: checked.clone(),
            })
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
    tax_forms::check_payable(app, tenant, &payout, now).await?;
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
    let process = Command::Process {
        checked_invoice,
        rail: None,
    };
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
/// (the sandbox's payment of at most [`store_payouts::STATUS_CHUNK`] conversions, manual's
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
) -> Outcomes {
    let reads = batch_read(&app.store, tenant, &ids).await;
    let reads = tax_held(app, tenant, reads, now).await;
    let decided = decide_all(app, tenant, reads, now).await;
    let mut sorted = by_commit(decided);
    commit_together(&app.store, tenant, sorted.together, &mut sorted.results).await;
    for (i, plan) in sorted.apart {
        sorted.results[i] = commit_apart(&app.store, tenant, plan, now).await;
    }
    process_rest(
        app,
        tenant,
        ids.into_iter().zip(sorted.results).collect(),
        now,
    )
    .await
}

/// Each payout of `ids` from one batch read (NOT_FOUND when missing);
/// none when that read failed, so each is read alone.
async fn batch_read(store: &Store, tenant: &Tenant, ids: &[String]) -> Vec<Option<Result<Payout>>> {
    let mut found = match store_payouts::get_many(store, tenant, ids).await {
        Ok(found) => Some(found),
        Err(e) => {
            tracing::warn!(error = %e, "batch-process: the batch read failed; each payout is read alone");
            None
        }
    };
    ids.iter()
        .map(|id| {
            let read = found.as_mut()?.remove(id);
            Some(read.ok_or(Error::NotFound("payout")))
        })
        .collect()
}

/// Each read payout's plan (or why not), a few decided at once; none for a
/// payout not read, or with nothing to write.
async fn decide_all(
    app: &App,
    tenant: &Tenant,
    reads: Vec<Option<Result<Payout>>>,
    now: DateTime<Utc>,
) -> Vec<Option<Result<TransitionPlan>>> {
    stream::iter(reads)
        .map(|read| async move {
            let before = match read? {
                Ok(p) => p,
                Err(e) => return Some(Err(e)),
            };
            plan_process(app, tenant, &before, now).await.transpose()
        })
        .buffered(DECIDED_AT_ONCE)
        .collect()
        .await
}

/// A batch's plans by how they are committed, each with its index.
struct ByCommit {
    /// Each payout's answer so far: its refusal, or none until committed.
    results: Vec<Option<Result<Payout>>>,
    /// Plans that leave no work: several a transaction.
    together: Vec<(usize, TransitionPlan)>,
    /// Plans that leave work: each its own transaction, then its chunks.
    apart: Vec<(usize, TransitionPlan)>,
}

/// Sorts the batch's decisions by how they are committed.
fn by_commit(decided: Vec<Option<Result<TransitionPlan>>>) -> ByCommit {
    let mut sorted = ByCommit {
        results: Vec::with_capacity(decided.len()),
        together: Vec::new(),
        apart: Vec::new(),
    };
    for (i, d) in decided.into_iter().enumerate() {
        match d {
            Some(Ok(plan)) if plan.payout.work.is_none() => sorted.together.push((i, plan)),
            // Work left in chunks: its own transaction, then the chunks.
            Some(Ok(plan)) => sorted.apart.push((i, plan)),
            Some(Err(e)) => {
                sorted.results.push(Some(Err(e)));
                continue;
            }
            // Not read, or nothing to write: alone.
            None => {}
        }
        sorted.results.push(None);
    }
    sorted
}

/// The answers in the ids' order: a payout without one yet goes through
/// [`process`] (a few at once).
async fn process_rest(
    app: &App,
    tenant: &Tenant,
    results: Vec<(String, Option<Result<Payout>>)>,
    now: DateTime<Utc>,
) -> Outcomes {
    stream::iter(results)
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

/// The batch's reads with the payouts that wait for their affiliate's tax
/// form refused (decided together: `services::tax_forms::holds`); when that
/// cannot be read, every payout goes alone (through [`process`], which
/// checks its own).
async fn tax_held(
    app: &App,
    tenant: &Tenant,
    reads: Vec<Option<Result<Payout>>>,
    now: DateTime<Utc>,
) -> Vec<Option<Result<Payout>>> {
    let read: Vec<&Payout> = reads
        .iter()
        .filter_map(|r| r.as_ref()?.as_ref().ok())
        .collect();
    let mut held = match tax_forms::holds(app, tenant, &read, now).await {
        Ok(held) => held,
        Err(e) => {
            tracing::warn!(error = %e, "batch-process: the tax forms could not be read; each payout goes alone");
            return reads.into_iter().map(|_| None).collect();
        }
    };
    reads
        .into_iter()
        .map(|r| match r {
            Some(Ok(p)) => Some(held.remove(&p.id).map_or(Ok(p), Err)),
            other => other,
        })
        .collect()
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
    let (at, plans): (Vec<usize>, Vec<TransitionPlan>) = together.into_iter().unzip();
    for (payout, i) in commit_plans(store, tenant, plans).await.into_iter().zip(at) {
        if let Some(p) = payout {
            results[i] = Some(failed_payment(p));
        }
    }
}

/// Commits plans of transitions that leave no work, several a transaction
/// (as many as [`BATCH_ACTIONS`] allows, one after another: they share the
/// tenant's rollup items); each payout as written, or none when its chunk
/// was refused (it goes again alone).
pub(crate) async fn commit_plans(
    store: &Store,
    tenant: &Tenant,
    all: Vec<TransitionPlan>,
) -> Vec<Option<Payout>> {
    let mut committed = Vec::with_capacity(all.len());
    let mut plans = Vec::new();
    for plan in all {
        plans.push(plan);
        if plans.len() > 1 && !fits(store, tenant, &plans) {
            // The last one starts the next chunk.
            if let Some(plan) = plans.pop() {
                committed.extend(commit_chunk(store, tenant, std::mem::take(&mut plans)).await);
                plans.push(plan);
            }
        }
    }
    if !plans.is_empty() {
        committed.extend(commit_chunk(store, tenant, plans).await);
    }
    committed
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

/// Commits one chunk of plans: each payout as written, or none.
async fn commit_chunk(
    store: &Store,
    tenant: &Tenant,
    plans: Vec<TransitionPlan>,
) -> Vec<Option<Payout>> {
    match store_payouts::commit_transitions(store, tenant, &plans).await {
        Ok(true) => plans.into_iter().map(|p| Some(p.payout)).collect(),
        refused => {
            tracing::warn!(payouts = plans.len(), outcome = ?refused.map_err(|e| e.to_string()),
                "batch-process: a shared transaction was refused; its payouts go again alone");
            written_anyway(store, tenant, plans).await
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
