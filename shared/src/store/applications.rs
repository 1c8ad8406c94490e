//! Application records and their decisions. Accepting or rejecting changes the
//! application and its affiliate in one transaction conditioned on the
//! application being PENDING, so of two racing decisions exactly one applies.

use std::collections::HashMap;

use crate::domain::affiliate::Affiliate;
use crate::domain::application::{Application, ApplicationStatus, Decision};
use crate::domain::event::EventType;
use crate::domain::risk::RiskLevel;
use crate::domain::tenant::Tenant;
use crate::error::{Error, Result};
use crate::ids::{self, IdKind};
use crate::store::attrs;
use crate::store::keys::{self, Index, ListKind, RECORD_SK};
use crate::store::page;
use crate::store::page::{ListQuery, Page, PageRequest};
use crate::store::tx::Tx;
use crate::store::update::UpdateExpr;
use crate::store::{affiliates, events, from_item, record_item, string_of, IndexKeys, Item, Store};
use crate::timestamp;

/// Applications accepted per transaction in a bulk accept: two updates and
/// two events each, within DynamoDB's 100 actions per transaction.
const BULK_CHUNK: usize = 25;

/// The role of each action of a decision's transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    Application,
    Affiliate,
    Event,
}

/// The item of an application: in the tenant's lists (every application,
/// by campaign, by status; no list reads by affiliate, so no entry is
/// written there: an index entry costs a write unit at every change).
pub(crate) fn item(tenant: &Tenant, a: &Application) -> Result<Item> {
    let index = IndexKeys::new()
        .with(
            Index::Gsi1,
            keys::tenant_list(tenant, ListKind::Application),
            &a.id,
        )
        .with(
            Index::Gsi2,
            keys::by_campaign(tenant, ListKind::Application, &a.campaign_id),
            &a.id,
        )
        .with(
            Index::Gsi3,
            keys::by_status(tenant, ListKind::Application, a.status),
            &a.id,
        );
    let mut item = record_item(&a.id, Some(&tenant.key()), a, &index)?;
    page::mark_risk(&mut item, &a.risk);
    Ok(item)
}

/// The tenant's application, or NOT_FOUND.
pub async fn get(store: &Store, tenant: &Tenant, id: &str) -> Result<Application> {
    if !ids::is_valid(IdKind::Application, id) {
        return Err(Error::NotFound("application"));
    }
    store
        .get_owned(id, &tenant.key())
        .await?
        .ok_or(Error::NotFound("application"))
}

/// Decides one application by id: the application and its affiliate are read
/// at once (an application's id shares its affiliate's ULID; an older one
/// that does not costs one more read), then change in one transaction with
/// their events, conditioned on the application still being PENDING.
pub async fn decide(
    store: &Store,
    tenant: &Tenant,
    id: &str,
    decision: &Decision,
) -> Result<Application> {
    let guess = ids::sibling(id, IdKind::Affiliate);
    let (app, guessed) = tokio::join!(get(store, tenant, id), async {
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
pub async fn decide_loaded(
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

/// Decides an application whose affiliate was read: one transaction.
async fn decide_with(
    store: &Store,
    tenant: &Tenant,
    app: &Application,
    affiliate: &Affiliate,
    decision: &Decision,
) -> Result<Application> {
    let (decided, tx) = decision_tx(store, tenant, app, affiliate, decision, timestamp::now())?;
    let t = tenant.key();
    match store.transact(tx).await {
        Ok(()) => Ok(decided),
        Err(e) if e.failed(Write::Application) => match e.old_item(Write::Application) {
            Some(old) if string_of(old, attrs::TENANT) == Some(t.as_str()) => {
                Err(from_item::<Application>(old.clone())?.refusal(decision))
            }
            _ => Err(Error::NotFound("application")),
        },
        Err(e) => Err(e.into_error()),
    }
}

/// The decided application and what makes it so: the application
/// (conditioned on still being PENDING), its affiliate, and both events.
fn decision_tx(
    store: &Store,
    tenant: &Tenant,
    app: &Application,
    affiliate: &Affiliate,
    decision: &Decision,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(Application, Tx<Write>)> {
    let decided = app.decide(decision, now)?;
    let after = affiliate.decided(decision, now);
    let t = tenant.key();
    let app_update = UpdateExpr::new()
        .copy_from(
            &item(tenant, &decided)?,
            &[
                attrs::STATUS,
                attrs::UPDATED_AT,
                "decidedAt",
                "reason",
                Index::Gsi3.pk(),
            ],
        )
        .when_tenant(&t)
        .when_status(app.status);
    let aff_update = UpdateExpr::new()
        .copy_from(
            &affiliates::item(tenant, &after)?,
            &[attrs::STATUS, attrs::UPDATED_AT, Index::Gsi3.pk()],
        )
        .increment(attrs::VERSION)
        .when_tenant(&t);
    let mut tx = store.tx();
    tx.update(Write::Application, &app.id, RECORD_SK, &app_update)
        .update(Write::Affiliate, &app.affiliate_id, RECORD_SK, &aff_update);
    events::append(
        &mut tx,
        Write::Event,
        tenant,
        &decided.event(decision.event_type(), now)?,
    )?;
    events::append(
        &mut tx,
        Write::Event,
        tenant,
        &after.event(EventType::AffiliateUpdated, now)?,
    )?;
    Ok((decided, tx))
}

/// Accepts each id on its own (they were de-duplicated by the caller) and
/// returns one result per id, in the order given. One strongly consistent
/// batch read of the applications and one of their affiliates, then the
/// pending applications are accepted in transactions of up to [`BULK_CHUNK`];
/// a chunk that does not apply as a whole (an application decided meanwhile,
/// a conflict) is retried one application per transaction, so each id still
/// succeeds or fails on its own.
pub async fn bulk_accept(
    store: &Store,
    tenant: &Tenant,
    ids: Vec<String>,
) -> Result<Vec<(String, Result<Application>)>> {
    let keys: Vec<(String, String)> = ids
        .iter()
        .filter(|id| ids::is_valid(IdKind::Application, id))
        .map(|id| (id.clone(), RECORD_SK.to_string()))
        .collect();
    let mut found: HashMap<String, Application> = store
        .batch_get_owned::<Application>(&keys, &tenant.key())
        .await?
        .into_iter()
        .map(|app| (app.id.clone(), app))
        .collect();
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
        match decision_tx(store, tenant, &app, affiliate, &Decision::Accept, now) {
            Err(e) => results.push(Some(Err(e))),
            Ok((decided, tx)) => {
                results.push(None);
                pending.push((i, app, decided, tx));
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

/// An application to accept: its position, as read, as decided, its actions.
type Pending = (usize, Application, Application, Tx<Write>);

/// Commits bulk-accept decisions chunk by chunk, falling back to one
/// transaction per application for a chunk that fails as a whole.
async fn commit_bulk(
    store: &Store,
    tenant: &Tenant,
    pending: Vec<Pending>,
    results: &mut [Option<Result<Application>>],
) {
    for chunk in pending.chunks(BULK_CHUNK) {
        let mut tx = store.tx();
        for (_, _, _, one) in chunk {
            tx.append(one.clone());
        }
        if store.transact(tx).await.is_ok() {
            for (i, _, decided, _) in chunk {
                results[*i] = Some(Ok(decided.clone()));
            }
            continue;
        }
        for (i, app, _, _) in chunk {
            results[*i] = Some(decide_loaded(store, tenant, app, &Decision::Accept).await);
        }
    }
}

/// List filters; each is served by an index, the rest by a filter on that Query.
#[derive(Debug, Clone, Default)]
pub struct ApplicationFilter {
    pub campaign_id: Option<String>,
    pub status: Option<ApplicationStatus>,
    pub risk_level: Option<RiskLevel>,
}

/// The tenant's applications, newest first.
pub async fn list(
    store: &Store,
    tenant: &Tenant,
    f: &ApplicationFilter,
    page: &PageRequest,
) -> Result<Page<Application>> {
    let q = match (&f.campaign_id, f.status) {
        (Some(c), st) => {
            let mut q = ListQuery::new(
                Index::Gsi2,
                keys::by_campaign(tenant, ListKind::Application, c),
            );
            if let Some(st) = st {
                q.filter = q.filter.status(st);
            }
            q
        }
        (None, Some(st)) => ListQuery::new(
            Index::Gsi3,
            keys::by_status(tenant, ListKind::Application, st),
        ),
        (None, None) => ListQuery::new(
            Index::Gsi1,
            keys::tenant_list(tenant, ListKind::Application),
        ),
    };
    let mut q = q;
    if let Some(level) = f.risk_level {
        q.filter = q.filter.risk_level(level);
    }
    store.query_page(&q, page).await?.try_map(from_item)
}
