//! Deciding applications: read the application and its affiliate, plan the
//! decision in the domain, commit it conditioned on the application still
//! being PENDING, so of two racing decisions exactly one applies.

use crate::app::App;
use domain::affiliate::Affiliate;
use domain::application::{Application, Decision};
use domain::decision::DecisionPlan;
use domain::error::{Error, Result};
use domain::ids::{self, IdKind};
use domain::tenant::Tenant;
use domain::timestamp;
use store::applications::{self, Decided, BULK_CHUNK};
use store::{affiliates, Store};

/// Decides one application by id: the application and its affiliate are read
/// at once (an application's id shares its affiliate's ULID; an older one
/// that does not costs one more read), then change in one transaction with
/// their events.
pub async fn decide(
    app: &App,
    tenant: &Tenant,
    id: &str,
    decision: &Decision,
) -> Result<Application> {
    let store = &app.store;
    let guess = ids::sibling(id, IdKind::Affiliate);
    let (app, guessed) = tokio::join!(applications::get(store, tenant, id), async {
        match &guess {
            Some(aff) => affiliates::get(store, tenant, aff).await.ok(),
            None => None,
        }
    });
    let app = app?;
    match guessed.filter(|a| a.id == app.affiliate_id) {
        Some(affiliate) => decide_with(store, tenant, &app, &affiliate, decision).await,
        None => decide_loaded(store, tenant, &app, decision).await,
    }
}

/// Decides an application already read, reading its affiliate.
async fn decide_loaded(
    store: &Store,
    tenant: &Tenant,
    app: &Application,
    decision: &Decision,
) -> Result<Application> {
    // A decided application fails here without spending a read or a write.
    app.decide(decision, timestamp::now())?;
    let affiliate = affiliates::get(store, tenant, &app.affiliate_id).await?;
    decide_with(store, tenant, app, &affiliate, decision).await
}

/// Decides an application whose affiliate was read: one transaction; a
/// decision that lost a race is refused with the status it met.
async fn decide_with(
    store: &Store,
    tenant: &Tenant,
    app: &Application,
    affiliate: &Affiliate,
    decision: &Decision,
) -> Result<Application> {
    let plan = DecisionPlan::new(app, affiliate, decision, timestamp::now())?;
    match applications::commit_decision(store, tenant, &plan).await? {
        Decided::Committed => Ok(plan.application),
        Decided::Changed(Some(now)) => Err(now.refusal(decision)),
        Decided::Changed(None) => Err(Error::NotFound("application")),
    }
}

/// Accepts each id on its own (they were de-duplicated by the caller) and
/// returns one result per id, in the order given. One strongly consistent
/// batch read of the applications and one of their affiliates, then the
/// pending applications are accepted in transactions of up to [`BULK_CHUNK`];
/// a chunk that does not apply as a whole (an application decided meanwhile,
/// a conflict) is retried one application per transaction, so each id still
/// succeeds or fails on its own.
pub async fn bulk_accept(
    app: &App,
    tenant: &Tenant,
    ids: Vec<String>,
) -> Result<Vec<(String, Result<Application>)>> {
    let store = &app.store;
    let mut found = applications::get_many(store, tenant, &ids).await?;
    let affiliate_ids: Vec<&str> = found.values().map(|a| a.affiliate_id.as_str()).collect();
    let people = affiliates::get_many(store, tenant, &affiliate_ids).await?;
    let now = timestamp::now();
    let mut results: Vec<Option<Result<Application>>> = Vec::with_capacity(ids.len());
    let mut pending: Vec<Pending> = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let Some(app) = found.remove(id) else {
            results.push(Some(Err(Error::NotFound("application"))));
            continue;
        };
        let Some(affiliate) = people.get(&app.affiliate_id) else {
            results.push(Some(Err(Error::internal(
                "application without its affiliate",
            ))));
            continue;
        };
        match DecisionPlan::new(&app, affiliate, &Decision::Accept, now) {
            Err(e) => results.push(Some(Err(e))),
            Ok(plan) => {
                results.push(None);
                pending.push((i, app, affiliate, plan));
            }
        }
    }
    commit_bulk(store, tenant, pending, &mut results).await;
    Ok(ids
        .into_iter()
        .zip(results)
        .map(|(id, r)| {
            let r = r.unwrap_or_else(|| Err(Error::internal("bulk accept lost a result")));
            (id, r)
        })
        .collect())
}

/// An application to accept: its position, as read, its affiliate as read,
/// and its plan.
type Pending<'a> = (usize, Application, &'a Affiliate, DecisionPlan);

/// Commits bulk-accept plans chunk by chunk, falling back to one
/// transaction per application (with the affiliate already read) for a
/// chunk that fails as a whole.
async fn commit_bulk(
    store: &Store,
    tenant: &Tenant,
    pending: Vec<Pending<'_>>,
    results: &mut [Option<Result<Application>>],
) {
    for chunk in pending.chunks(BULK_CHUNK) {
        let plans = chunk.iter().map(|(_, _, _, plan)| plan);
        if let Ok(true) = applications::commit_decisions(store, tenant, plans).await {
            for (i, _, _, plan) in chunk {
                results[*i] = Some(Ok(plan.application.clone()));
            }
            continue;
        }
        for (i, app, affiliate, _) in chunk {
            let decided = decide_with(store, tenant, app, affiliate, &Decision::Accept).await;
            results[*i] = Some(decided);
        }
    }
}
