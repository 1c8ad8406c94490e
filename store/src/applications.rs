//! Application records and their decisions. Accepting or rejecting changes the
//! application and its affiliate in one transaction conditioned on the
//! application being PENDING, so of two racing decisions exactly one applies.

use std::collections::HashMap;

use crate::attrs;
use crate::keys::{Index, ListKind, RECORD_SK};
use crate::page;
use crate::page::{ListQuery, Page, PageRequest};
use crate::tx::Tx;
use crate::update::UpdateExpr;
use crate::{affiliates, events, from_item, record_item, string_of, IndexKeys, Item, Store};
use domain::application::{Application, ApplicationStatus};
use domain::decision::DecisionPlan;
use domain::error::Result;
use domain::ids::IdKind;
use domain::risk::RiskLevel;
use domain::tenant::Tenant;

/// Applications accepted per transaction in a bulk accept: two updates and
/// two events each, within DynamoDB's 100 actions per transaction.
pub const BULK_CHUNK: usize = 25;

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
        .at(ListKind::Application.all(tenant), &a.id)
        .at(
            ListKind::Application.of_campaign(tenant, &a.campaign_id),
            &a.id,
        )
        .at(ListKind::Application.in_status(tenant, a.status), &a.id);
    let mut item = record_item(&a.id, Some(&tenant.key()), a, &index)?;
    page::mark_risk(&mut item, &a.risk);
    Ok(item)
}

/// The tenant's application, or NOT_FOUND.
pub async fn get(store: &Store, tenant: &Tenant, id: &str) -> Result<Application> {
    store
        .get_record(IdKind::Application, "application", id, &tenant.key())
        .await
}

/// The tenant's applications among `ids` (invalid or unknown ones left
/// out), by id: one strongly consistent batch read.
pub async fn get_many(
    store: &Store,
    tenant: &Tenant,
    ids: &[String],
) -> Result<HashMap<String, Application>> {
    let found: Vec<Application> = store
        .get_records(IdKind::Application, ids, &tenant.key())
        .await?;
    Ok(found.into_iter().map(|a| (a.id.clone(), a)).collect())
}

/// How a decision's transaction ended.
#[derive(Debug)]
pub enum Decided {
    /// The application, its affiliate and the events are written.
    Committed,
    /// The application was no longer in the status planned from: as it is
    /// now (`None` when it is gone or not the tenant's).
    Changed(Option<Application>),
}

/// Commits a decision: the application (only while still in the status
/// it was planned from), its affiliate and both events, in one transaction.
pub async fn commit_decision(
    store: &Store,
    tenant: &Tenant,
    plan: &DecisionPlan,
) -> Result<Decided> {
    let mut tx = store.tx();
    decision_actions(&mut tx, tenant, plan)?;
    let t = tenant.key();
    match store.transact(tx).await {
        Ok(()) => Ok(Decided::Committed),
        Err(e) if e.failed(Write::Application) => {
            Ok(Decided::Changed(match e.old_item(Write::Application) {
                Some(old) if string_of(old, attrs::TENANT) == Some(t.as_str()) => {
                    Some(from_item::<Application>(old.clone())?)
                }
                _ => None,
            }))
        }
        Err(e) => Err(e.into_error()),
    }
}

/// Commits decisions all or nothing (a bulk accept's chunk of at most
/// [`BULK_CHUNK`]); false when any of them changed meanwhile.
pub async fn commit_decisions<'a>(
    store: &Store,
    tenant: &Tenant,
    plans: impl IntoIterator<Item = &'a DecisionPlan>,
) -> Result<bool> {
    let mut tx = store.tx();
    for plan in plans {
        decision_actions(&mut tx, tenant, plan)?;
    }
    store
        .transact_unless(tx, &[Write::Application, Write::Affiliate])
        .await
}

/// The actions of a decision: the application (conditioned on the status
/// it was planned from), its affiliate, and its events.
fn decision_actions(tx: &mut Tx<Write>, tenant: &Tenant, plan: &DecisionPlan) -> Result<()> {
    let t = tenant.key();
    let app_update = UpdateExpr::new()
        .copy_from(
            &item(tenant, &plan.application)?,
            &[
                attrs::STATUS,
                attrs::UPDATED_AT,
                "decidedAt",
                "reason",
                Index::Gsi3.pk(),
            ],
        )
        .when_tenant(&t)
        .when_status(plan.from);
    let aff_update = UpdateExpr::new()
        .copy_from(
            &affiliates::item(tenant, &plan.affiliate)?,
            &[attrs::STATUS, attrs::UPDATED_AT, Index::Gsi3.pk()],
        )
        .increment(attrs::VERSION)
        .when_tenant(&t);
    tx.update(
        Write::Application,
        &plan.application.id,
        RECORD_SK,
        &app_update,
    )
    .update(Write::Affiliate, &plan.affiliate.id, RECORD_SK, &aff_update);
    events::append_all(tx, Write::Event, tenant, &plan.events)?;
    Ok(())
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
            let mut q = ListQuery::of(ListKind::Application.of_campaign(tenant, c));
            if let Some(st) = st {
                q.filter = q.filter.status(st);
            }
            q
        }
        (None, Some(st)) => ListQuery::of(ListKind::Application.in_status(tenant, st)),
        (None, None) => ListQuery::of(ListKind::Application.all(tenant)),
    };
    let mut q = q;
    if let Some(level) = f.risk_level {
        q.filter = q.filter.risk_level(level);
    }
    store.query_page(&q, page).await?.try_map(from_item)
}
