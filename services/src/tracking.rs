//! The browser script's use cases: a click on an affiliate link, and the
//! binding of a session's affiliate to a customer (identify).

use std::future::Future;

use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{DateTime, Utc};

use crate::app::App;
use crate::retry::{retry, retry_at_once, Attempt};
use domain::campaign::Campaign;
use domain::error::{Error, Result};
use domain::referral::{plan_bindings, Binding, CustomerKey, Referral, ReferralSource};
use domain::risk;
use domain::tenant::Tenant;
use domain::tracking::{Click, ClickDraft, ClickIds};
use store::referrals::{self, Bound};
use store::{clicks, Store};

/// Times a multi-identity binding is planned again after a concurrent writer won a race.
const BIND_ATTEMPTS: usize = 3;
/// Commits of one read's bindings: each after the first is planned from
/// what the cancellation before it found.
const REPLANS: usize = 3;

/// A recorded click: its ids and when it stops counting.
#[derive(Debug, Clone)]
pub struct Clicked {
    pub ids: ClickIds,
    pub expires_at: DateTime<Utc>,
}

/// Records a click of a validated request: the campaign must be public and
/// the code one of its affiliates' (404 otherwise, the same answer for
/// each). `admit` (the request's rate-limit count) runs beside the lookups:
/// the campaign, then its code's owner and the click's hourly count for its
/// code and network at once (both lookups go through the process's cache,
/// at most 60 s stale); then one PutItem. A click beyond the campaign's
/// `maxClicksPerHour` is recorded flagged (CLICK_FLOOD) and never
/// attributes; it answers like any other. A click for a campaign that is
/// not found counts nothing. The client's network is a salted hash of its
/// address.
pub async fn click(
    app: &App,
    body: ClickDraft,
    network: Option<&str>,
    admit: impl Future<Output = Result<()>>,
    now: DateTime<Utc>,
) -> Result<Clicked> {
    if !body.code_is_well_formed() {
        admit.await?;
        return Err(not_found());
    }
    let (admitted, found) = tokio::join!(admit, found(app, &body, network, now));
    admitted?;
    let Found {
        campaign,
        tenant_key,
        affiliate_id,
        seen,
    } = found?;
    let ids = ClickIds::generate();
    let flooded = seen.is_some_and(|n| risk::click_flood(n, &campaign.risk));
    let network = network.map(str::to_string);
    let mut recorded = Click::record(
        body,
        &ids,
        tenant_key,
        &campaign,
        affiliate_id,
        network,
        now,
    );
    recorded.flooded = flooded;
    clicks::insert(&app.store, &recorded).await?;
    Ok(Clicked {
        ids,
        expires_at: recorded.expires_at,
    })
}

/// The one answer for an unknown, private or mismatched campaign or code.
fn not_found() -> Error {
    Error::NotFound("campaign or affiliate code")
}

/// What a click is recorded against, and its hourly count so far.
struct Found {
    campaign: Campaign,
    tenant_key: String,
    affiliate_id: String,
    seen: Option<u64>,
}

/// The click's public campaign, then its code's owner and its hourly count
/// at once (the count is kept for a campaign that exists only).
async fn found(
    app: &App,
    body: &ClickDraft,
    network: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Found> {
    let (store, lookups) = (&app.store, &app.lookups);
    let (campaign, tenant_key) = match lookups.campaign(store, &body.campaign_id).await? {
        Some((c, t)) if c.is_public => (c, t),
        _ => return Err(not_found()),
    };
    let tenant = Tenant::from_key(&tenant_key)
        .ok_or_else(|| Error::internal(format!("campaign {} has no tenant", campaign.id)))?;
    let seen = async {
        match network {
            Some(n) => clicks::count_hourly(store, &body.campaign_id, &body.code, n, now)
                .await
                .map(Some),
            None => Ok(None),
        }
    };
    let (seen, owner) = tokio::join!(seen, lookups.code_owner(store, &tenant, &body.code));
    let owner = owner?
        .filter(|o| o.campaign_id == campaign.id)
        .ok_or_else(not_found)?;
    Ok(Found {
        campaign,
        tenant_key,
        affiliate_id: owner.affiliate_id,
        seen: seen?,
    })
}

/// Binds the affiliate of a live session to every given identity of one
/// customer, first touch winning; true when at least one identity was newly
/// bound. 404 when the session is unknown or expired.
pub async fn identify(
    app: &App,
    session_id: &str,
    keys: &[CustomerKey],
    now: DateTime<Utc>,
) -> Result<bool> {
    let store = &app.store;
    let click = clicks::get_live_by_session(store, session_id, now)
        .await?
        .ok_or(Error::NotFound("session"))?;
    if !click.attributes() {
        // A flooded click never attributes, through its session neither.
        return Ok(false);
    }
    let tenant = Tenant::from_key(&click.tenant)
        .ok_or_else(|| Error::internal(format!("click {} has no tenant", click.id)))?;
    let binding = Binding {
        affiliate_id: &click.affiliate_id,
        campaign_id: &click.campaign_id,
        source: ReferralSource::Identify,
        session_id: Some(session_id),
        at: now,
        counted_click: Some(&click.id),
    };
    // A session that bound its share of customers binds no more (its
    // bindings may still learn the customer's e-mail).
    let full = !click.binds_another_customer();
    bind_in(store, &tenant, keys, &binding, full).await
}

/// Binds the identities as `plan_bindings` decides. The first plan assumes
/// none is bound (a customer's first identify) and reads nothing (but for a
/// full session, whose links need what is bound); a
/// cancelled transaction returns the bindings that exist, so the next plan
/// needs no read either. Only a lost race reads again.
pub async fn bind(
    app: &App,
    tenant: &Tenant,
    keys: &[CustomerKey],
    binding: &Binding<'_>,
) -> Result<bool> {
    let store = &app.store;
    bind_in(store, tenant, keys, binding, false).await
}

/// [`bind`] for a session that may be `full` (no place left for another
/// customer): then, or once a commit finds it so, only the links are written.
async fn bind_in(
    store: &Store,
    tenant: &Tenant,
    keys: &[CustomerKey],
    binding: &Binding<'_>,
    full: bool,
) -> Result<bool> {
    // A full session's plan has links only, which come from what is bound:
    // it reads first.
    let mut known = (!full).then(Vec::new);
    let full = &AtomicBool::new(full);
    let bound = retry(BIND_ATTEMPTS, || {
        let known = known.take();
        async move {
            let existing = match known {
                Some(known) => known,
                None => referrals::get_many(store, tenant, keys).await?,
            };
            commit_planned(store, tenant, keys, binding, existing, full).await
        }
    })
    .await?;
    Ok(bound.unwrap_or(false))
}

/// Plans the bindings on what is bound (`existing`) and commits the plan;
/// a cancellation that found bindings, or the session full, is planned
/// again at once from what it said. `Conflict` when another writer won a
/// race: the caller reads again.
async fn commit_planned(
    store: &Store,
    tenant: &Tenant,
    keys: &[CustomerKey],
    binding: &Binding<'_>,
    existing: Vec<Referral>,
    full: &AtomicBool,
) -> Result<Attempt<bool>> {
    let (_, committed) = retry_at_once(REPLANS, existing, |mut existing| async move {
        let plan = plan_bindings(keys, binding, &existing);
        let plan = match full.load(Ordering::Relaxed) {
            true => plan.links_only(),
            false => plan,
        };
        let outcome = match referrals::commit_bindings(store, tenant, &plan).await? {
            Bound::Done(bound) => Attempt::Done(Attempt::Done(bound)),
            Bound::Found(found) => {
                existing.extend(found);
                Attempt::Conflict
            }
            Bound::SessionFull => {
                full.store(true, Ordering::Relaxed);
                Attempt::Conflict
            }
            // One identity, bound already: first touch kept.
            Bound::Raced if keys.len() == 1 => Attempt::Done(Attempt::Done(false)),
            Bound::Raced => Attempt::Done(Attempt::Conflict),
        };
        Ok((existing, outcome))
    })
    .await?;
    Ok(committed.unwrap_or(Attempt::Conflict))
}
