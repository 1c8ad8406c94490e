//! The payout job (daily on AWS; `refctl payouts run` once): its cost
//! follows the work that is due, read from the sparse work index, never
//! from a scan, and every step is a chunk that commits exactly once, so a
//! run cut short (the item budget, Lambda's limit, a crash) is finished by
//! the next, and two runs at once create nothing twice.
//!
//! 1. Payouts left half-assembled are assembled.
//! 2. PENDING conversions whose hold is over become APPROVED (their pools
//!    are marked for a check).
//! 3. Each marked pool (affiliate, currency) whose net total (commissions
//!    plus adjustments: clawbacks, bonuses) reaches the campaign's
//!    `minimumPayout` becomes one PENDING payout, claimed in chunks under a
//!    per-pool lock; a pool below it stays, its balance carrying over.
//! 4. Paid and rejected/cancelled payouts with work left are completed.
//! 5. Payouts left PROCESSING are paid again through their provider, with
//!    the payout id as idempotency key, so never twice.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::app::App;
use crate::payout_rails;
use crate::payouts::drive;
use crate::retry::{retry, Attempt};
use domain::change::Event;
use domain::conversion::{Adjustment, Conversion, ConversionStatus};
use domain::error::Result;
use domain::payout::{Payout, PayoutQueue, PoolEntry};
use domain::tenant::Tenant;
use store::payouts::{self as store_payouts, ClaimChunk, CLAIM_CHUNK, STATUS_CHUNK};
use store::pools::{self, PoolMarker};
use store::work::WorkRange;
use store::{affiliates, campaigns, keys, Store};

/// Tries to make an assembled payout visible while other runs keep claiming.
const FINISH_ATTEMPTS: usize = 3;

/// How much one run may do before it stops and leaves the rest to the next.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Records (conversions approved or claimed, payouts visited) at most.
    pub items: usize,
    /// Wall-clock time at most (inside Lambda's 15 minutes, with room to spare).
    pub time: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            items: 50_000,
            time: Duration::from_secs(12 * 60),
        }
    }
}

/// What one run did.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub approved: usize,
    pub payouts_created: usize,
    pub claimed: usize,
    pub pools_below_minimum: usize,
    pub payouts_completed: usize,
    pub payments_retried: usize,
    /// True when the budget ran out before the work did.
    pub cut_short: bool,
}

struct Run<'a> {
    app: &'a App,
    now: DateTime<Utc>,
    left: usize,
    until: Instant,
    report: Report,
}

impl Run<'_> {
    fn spent(&mut self, n: usize) -> bool {
        self.left = self.left.saturating_sub(n);
        let out = self.left == 0 || Instant::now() >= self.until;
        self.report.cut_short |= out;
        out
    }
}

/// Runs the payout job once at `now`.
pub async fn run(app: &App, now: DateTime<Utc>, budget: Budget) -> Result<Report> {
    let mut run = Run {
        app,
        now,
        left: budget.items,
        until: Instant::now() + budget.time,
        report: Report::default(),
    };
    for shard in 0..keys::WORK_SHARDS {
        resume_claims(&mut run, shard).await?;
    }
    for shard in 0..keys::WORK_SHARDS {
        approve_due(&mut run, shard).await?;
    }
    for shard in 0..keys::WORK_SHARDS {
        check_pools(&mut run, shard).await?;
    }
    for shard in 0..keys::WORK_SHARDS {
        complete_work(&mut run, shard).await?;
    }
    Ok(run.report)
}

async fn resume_claims(run: &mut Run<'_>, shard: u32) -> Result<()> {
    if run.report.cut_short {
        return Ok(());
    }
    for (tenant, p) in
        store_payouts::with_work(&run.app.store, PayoutQueue::Build, shard, 100).await?
    {
        claim(run, &tenant, p).await?;
        if run.spent(1) {
            break;
        }
    }
    Ok(())
}

/// Approves due conversions of one shard, page by page, in chunks per tenant.
async fn approve_due(run: &mut Run<'_>, shard: u32) -> Result<()> {
    let store = &run.app.store;
    while !run.report.cut_short {
        let due = store_payouts::due_conversions(store, shard, run.now, 200).await?;
        let mut progressed = false;
        for (tenant, conversions) in store_payouts::by_tenant(due) {
            let approved: Vec<(Conversion, Conversion)> = conversions
                .into_iter()
                .filter_map(|c| c.approve(run.now).ok().map(|a| (c, a)))
                .collect();
            for chunk in approved.chunks(STATUS_CHUNK) {
                let recorded: Vec<Event> = chunk
                    .iter()
                    .map(|(_, a)| a.approved_event(run.now))
                    .collect();
                if store_payouts::approve_chunk(store, &tenant, chunk, &recorded).await? {
                    run.report.approved += chunk.len();
                    progressed = true;
                }
                if run.spent(chunk.len()) {
                    return Ok(());
                }
            }
        }
        if !progressed {
            return Ok(());
        }
    }
    Ok(())
}

async fn check_pools(run: &mut Run<'_>, shard: u32) -> Result<()> {
    if run.report.cut_short {
        return Ok(());
    }
    for marker in pools::pool_markers(&run.app.store, shard, 500).await? {
        check_pool(run, &marker).await?;
        if run.spent(1) {
            break;
        }
    }
    Ok(())
}

/// One pool: resume its payout being assembled, or open one when the pool
/// reaches the minimum, or leave the balance to carry over.
async fn check_pool(run: &mut Run<'_>, m: &PoolMarker) -> Result<()> {
    let store = &run.app.store;
    let t = &m.tenant;
    if let Some(lock) = store_payouts::claim_lock(store, &m.affiliate_id, m.currency).await? {
        if let Some(p) = store_payouts::read(store, t, &lock.payout_id).await? {
            return claim(run, t, p).await;
        }
    }
    let pool = read_pool(store, t, &m.affiliate_id, m.currency.code()).await?;
    let affiliate = affiliates::get(store, t, &m.affiliate_id).await?;
    let campaign = campaigns::get(store, t, &affiliate.campaign_id).await?;
    match Payout::open(&affiliate, &campaign, m.currency, &pool, run.now) {
        Some(p) => {
            if store_payouts::start_claim(store, t, &p).await? {
                // Another run may have claimed the pool between our read and
                // our lock: judge it again under the lock, or the payout
                // would be assembled from what is left (nothing, say).
                let pool = read_pool(store, t, &m.affiliate_id, m.currency.code()).await?;
                if Payout::open(&affiliate, &campaign, m.currency, &pool, run.now).is_none() {
                    store_payouts::abandon_claim(store, t, &p).await?;
                } else {
                    run.report.payouts_created += 1;
                    claim(run, t, p).await?;
                }
            }
        }
        None => run.report.pools_below_minimum += 1,
    }
    pools::clear_marker(store, m).await
}

/// The claimable entries of a pool, re-read consistently.
async fn read_pool(
    store: &Store,
    t: &Tenant,
    affiliate_id: &str,
    currency: &str,
) -> Result<Vec<PoolEntry>> {
    let partition = keys::payable_pool(t, affiliate_id, currency);
    let (conversions, adjustments) =
        store_payouts::members(store, t, &partition, WorkRange::All, 100_000).await?;
    let (conversions, adjustments) = claimable(conversions, adjustments);
    Ok(conversions
        .into_iter()
        .map(|c| PoolEntry::Conversion(Box::new(c)))
        .chain(adjustments.into_iter().map(PoolEntry::Adjustment))
        .collect())
}

fn claimable(c: Vec<Conversion>, a: Vec<Adjustment>) -> (Vec<Conversion>, Vec<Adjustment>) {
    let c = c
        .into_iter()
        .filter(|c| c.status == ConversionStatus::Approved && c.payout_id.is_none())
        .collect();
    let a = a.into_iter().filter(|a| a.payout_id.is_none()).collect();
    (c, a)
}

/// Claims the pool into a payout being assembled, chunk by chunk, then
/// makes it visible with what was claimed.
async fn claim(run: &mut Run<'_>, t: &Tenant, p: Payout) -> Result<()> {
    let store = &run.app.store;
    let partition = keys::payable_pool(t, &p.affiliate_id, p.currency.code());
    loop {
        let (c, a) =
            store_payouts::members(store, t, &partition, WorkRange::All, CLAIM_CHUNK).await?;
        let (c, a) = claimable(c, a);
        if c.is_empty() && a.is_empty() {
            break;
        }
        match store_payouts::claim_chunk(store, t, &p, &p.claiming(&c, &a)).await? {
            ClaimChunk::Claimed => run.report.claimed += c.len(),
            // Taken meanwhile: the pool is read again.
            ClaimChunk::MemberChanged => {}
            // Abandoned or finished by another run: what is left in the pool
            // (approved meanwhile) waits for a payout of its own.
            ClaimChunk::PayoutClosed => return Ok(()),
        }
        if run.spent(c.len() + a.len()) {
            return Ok(());
        }
    }
    // A run claiming the same pool meanwhile moves the counters: read again.
    let (now, id) = (run.now, p.id.as_str());
    retry(FINISH_ATTEMPTS, || async move {
        // Gone: the run that opened it abandoned it, which only a payout that
        // claimed nothing allows (a chunk needs it there), so nothing is owed.
        let Some(before) = store_payouts::read(store, t, id).await? else {
            return Ok(Attempt::Done(()));
        };
        let done = before.is_visible()
            || store_payouts::finish_claim(store, t, &before, &before.claimed(now)).await?;
        Ok(if done {
            Attempt::Done(())
        } else {
            Attempt::Conflict
        })
    })
    .await?;
    Ok(())
}

/// Completes settle and release work, and asks providers again for payouts
/// left PROCESSING.
async fn complete_work(run: &mut Run<'_>, shard: u32) -> Result<()> {
    if run.report.cut_short {
        return Ok(());
    }
    let store = &run.app.store;
    for queue in [PayoutQueue::Settle, PayoutQueue::Release] {
        for (t, p) in store_payouts::with_work(store, queue, shard, 100).await? {
            let done = drive(store, &t, p, usize::MAX, run.now).await?;
            if done.work.is_none() {
                run.report.payouts_completed += 1;
            }
            if run.spent(1) {
                return Ok(());
            }
        }
    }
    for (t, p) in store_payouts::with_work(store, PayoutQueue::Paying, shard, 100).await? {
        // A failure is logged; the payout stays as the re-drive left it.
        if let Err(e) = payout_rails::redrive(run.app, &t, p, run.now).await {
            tracing::warn!(error = %e, "payout job: payment retry failed");
        }
        run.report.payments_retried += 1;
        if run.spent(1) {
            return Ok(());
        }
    }
    Ok(())
}
