//! Webhook records, all under the endpoint's id:
//!
//! - the endpoint: `pk = whe_…`, `sk = R`, listed per tenant through GSI1
//!   (`<tenant>#WHE`, sort key the id); it holds its secrets (never shown);
//! - the tenant's endpoint count: `pk = <tenant>#WHE#COUNT`, `sk = R`,
//!   `count`, moved in the transaction of every create and delete (a
//!   create's only while below the cap, so the cap holds under concurrent
//!   creates); a tenant whose endpoints predate it has none until its next
//!   create or delete, which counts them from the list;
//! - a delivery task per (endpoint, event): `sk = TASK#<evt id>`, created
//!   with `attribute_not_exists` so a redelivered stream record never starts
//!   a second first attempt; while a retry is due (or an attempt holds its
//!   lease) it sits in GSI5 `RETRY#<shard>` sorted by
//!   `<nextAttemptAt>#<endpoint>#<event>`, and leaves it when SUCCEEDED or FAILED;
//! - an attempt record per attempt: `sk = DLV#<attemptedAt>#<dlv id>`,
//!   listed newest first through GSI1 (`<whe id>#DLV`) and, per event,
//!   GSI2 (`<whe id>#DLV#<evt id>`).
//!
//! Tasks and attempt records expire with the events (30 days). Every write
//! is conditional, through `Tx` or `UpdateExpr`, but one: the rewrite of an
//! attempt whose retry was dropped (`abandon_task`), in the transaction
//! conditioned on its task; an attempt expired meanwhile comes back with
//! its expiry past, and goes again.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::attrs;
use crate::counters;
use crate::events::RETENTION_DAYS;
use crate::keys::{self, Index, ListKind, RECORD_SK};
use crate::page::{ListQuery, Page, PageRequest};
use crate::tx::{Tx, TxError};
use crate::update::{UpdateExpr, Updated};
use crate::work::WorkRange;
use crate::{
    from_item, item_at, number_value, record_item, string_of, string_value, IndexKeys, Item, Store,
};
use domain::error::{Error, Result};
use domain::ids::IdKind;
use domain::tenant::Tenant;
use domain::timestamp;
use domain::webhook::{DeliveryAttempt, DeliveryStatus, Endpoint, EndpointChange, Outcome, Task};

/// The roles of the actions of a webhook transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Endpoint,
    Count,
    Task,
    Attempt,
}

/// The attributes of an endpoint a read-modify-write replaces (all but keys).
const ENDPOINT_FIELDS: [&str; 12] = [
    "url",
    "eventTypes",
    attrs::DESCRIPTION,
    attrs::STATUS,
    attrs::DISABLED_REASON,
    "secret",
    "previousSecret",
    "previousSecretUntil",
    attrs::FAILING_SINCE,
    attrs::VERSION,
    attrs::CREATED_AT,
    attrs::UPDATED_AT,
];

const NOT_FOUND: &str = "webhook endpoint";

fn endpoint_item(tenant: &Tenant, e: &Endpoint) -> Result<Item> {
    let index = IndexKeys::new().at(ListKind::WebhookEndpoint.all(tenant), &e.id);
    record_item(&e.id, Some(&tenant.key()), e, &index)
}

/// An item under the endpoint's id at `sk`, with its tenant, index entries
/// and expiry.
fn child_item<T: Serialize>(
    tenant: &Tenant,
    pk: &str,
    sk: &str,
    value: &T,
    index: &[(Index, String, String)],
    expires: DateTime<Utc>,
) -> Result<Item> {
    let mut item = item_at(pk, sk, value)?;
    item.insert(attrs::TENANT.into(), string_value(tenant.key()));
    for (idx, ipk, isk) in index {
        item.insert(idx.pk().into(), string_value(ipk));
        item.insert(idx.sk().into(), string_value(isk));
    }
    item.insert(attrs::TTL.into(), number_value(expires.timestamp()));
    Ok(item)
}

/// The item of a delivery task (`pk = whe_…`, `sk = TASK#<evt id>`).
pub fn task_item(tenant: &Tenant, t: &Task) -> Result<Item> {
    let mut index = Vec::new();
    if let Some(next) = t.sweep_at() {
        index.push((
            Index::Gsi5,
            keys::webhook_retries(keys::shard_of(&t.event_id)),
            keys::at(&next, &format!("{}#{}", t.endpoint_id, t.event_id)),
        ));
    }
    let expires = t.updated_at + Duration::days(RETENTION_DAYS);
    let sk = keys::webhook_task_sk(&t.event_id);
    child_item(tenant, &t.endpoint_id, &sk, t, &index, expires)
}

fn attempt_item(tenant: &Tenant, d: &DeliveryAttempt) -> Result<Item> {
    let sort = keys::at(&d.attempted_at, &d.id);
    let index = [
        (
            Index::Gsi1,
            keys::webhook_attempts(&d.endpoint_id),
            sort.clone(),
        ),
        (
            Index::Gsi2,
            keys::webhook_event_attempts(&d.endpoint_id, &d.event_id),
            sort,
        ),
    ];
    let expires = d.attempted_at + Duration::days(RETENTION_DAYS);
    let sk = keys::webhook_attempt_sk(&d.attempted_at, &d.id);
    child_item(tenant, &d.endpoint_id, &sk, d, &index, expires)
}

/// A tenant's endpoint count as a create or a delete read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointCount {
    /// The count item's value.
    Kept(u64),
    /// No count item yet: the endpoints its list holds.
    Listed(u64),
}

impl EndpointCount {
    /// The number of endpoints.
    pub fn value(self) -> u64 {
        match self {
            EndpointCount::Kept(n) | EndpointCount::Listed(n) => n,
        }
    }
}

/// The tenant's endpoint count: its count item, or its list counted when
/// it has none.
pub async fn endpoint_count(store: &Store, tenant: &Tenant) -> Result<EndpointCount> {
    let pk = keys::webhook_endpoint_count(tenant);
    Ok(match store.get_item(&pk, RECORD_SK).await? {
        Some(item) => EndpointCount::Kept(counters::value(&item).unwrap_or(0)),
        None => EndpointCount::Listed(all_endpoints(store, tenant).await?.len() as u64),
    })
}

/// Counts a created endpoint. A kept count is moved with `ADD` only while
/// it is below `cap` (`counters::add_one`), so creates sent at once never
/// pass the cap (those that meet in one instant conflict and `transact`
/// sends them again); a listed one becomes the count item's first value.
fn count_created(tx: &mut Tx<Role>, tenant: &Tenant, count: EndpointCount, cap: u64) {
    let u = match count {
        EndpointCount::Kept(_) => counters::add_one(Some(cap)),
        EndpointCount::Listed(n) => first_count(n + 1),
    };
    count_action(tx, tenant, &u);
}

/// Uncounts a deleted endpoint, never below zero: a kept count of zero
/// (one that an older version's create left low) stays as it is.
fn count_deleted(tx: &mut Tx<Role>, tenant: &Tenant, count: EndpointCount) {
    let u = match count {
        EndpointCount::Kept(0) => return,
        EndpointCount::Kept(_) => UpdateExpr::new()
            .add(attrs::COUNT, number_value(-1))
            .when_above(attrs::COUNT, number_value(0)),
        EndpointCount::Listed(n) => first_count(n.saturating_sub(1)),
    };
    count_action(tx, tenant, &u);
}

/// The count item's first value, written only while there is none.
fn first_count(n: u64) -> UpdateExpr {
    UpdateExpr::new()
        .set(attrs::COUNT, number_value(n))
        .when_new()
}

/// The count item's action in a create's or a delete's transaction.
fn count_action(tx: &mut Tx<Role>, tenant: &Tenant, u: &UpdateExpr) {
    let pk = keys::webhook_endpoint_count(tenant);
    tx.update(Role::Count, &pk, RECORD_SK, u);
}

/// Mends a kept count that the tenant's list contradicts (endpoints an
/// older version deleted without uncounting them), read when the count
/// meets the cap: sets it to the number listed when that is lower. False
/// when the list agrees; true when the count was mended or moved
/// meanwhile (read it again). The list is an index, so an endpoint created
/// in the same instant may be missing from it: the cap can then be passed
/// by that one create.
pub async fn mend_endpoint_count(store: &Store, tenant: &Tenant, kept: u64) -> Result<bool> {
    let listed = all_endpoints(store, tenant).await?.len() as u64;
    if listed >= kept {
        return Ok(false);
    }
    let u = UpdateExpr::new()
        .set(attrs::COUNT, number_value(listed))
        .when_count(attrs::COUNT, kept);
    store
        .update(&keys::webhook_endpoint_count(tenant), RECORD_SK, &u)
        .await?;
    Ok(true)
}

/// Stores a new endpoint and counts it while the count is below `cap`;
/// false when it reached the cap, or was first written, since `count` was
/// read.
pub async fn insert_endpoint(
    store: &Store,
    tenant: &Tenant,
    e: &Endpoint,
    count: EndpointCount,
    cap: u64,
) -> Result<bool> {
    let mut tx = store.tx();
    tx.put_new(Role::Endpoint, endpoint_item(tenant, e)?);
    count_created(&mut tx, tenant, count, cap);
    match store.transact(tx).await {
        Ok(()) => Ok(true),
        Err(e) if e.failed(Role::Count) => Ok(false),
        Err(e) if e.failed(Role::Endpoint) => Err(Error::internal("webhook endpoint id collision")),
        Err(e) => Err(e.into_error()),
    }
}

/// The tenant's endpoint, or NOT_FOUND.
pub async fn get_endpoint(store: &Store, tenant: &Tenant, id: &str) -> Result<Endpoint> {
    store
        .get_record(IdKind::WebhookEndpoint, NOT_FOUND, id, &tenant.key())
        .await
}

/// Writes `new` if the endpoint is unchanged since `old` was read.
pub async fn replace_endpoint(
    store: &Store,
    tenant: &Tenant,
    new: &Endpoint,
    old: &Endpoint,
) -> Result<bool> {
    let update = UpdateExpr::new()
        .copy_from(&endpoint_item(tenant, new)?, &ENDPOINT_FIELDS)
        .when_as_read(&tenant.key(), old.stamps.version);
    let done = store.update(&new.id, RECORD_SK, &update).await?;
    Ok(matches!(done, Updated::Applied(_)))
}

/// Deletes the endpoint for good if it is as `current` was read; false when
/// somebody changed it meanwhile. Its tasks and attempt records stay until
/// they expire, unreachable: a due retry finds no endpoint and ends.
pub async fn delete_endpoint(
    store: &Store,
    tenant: &Tenant,
    current: &Endpoint,
    count: EndpointCount,
) -> Result<bool> {
    let mut tx = store.tx();
    let when = UpdateExpr::new().when_as_read(&tenant.key(), current.stamps.version);
    tx.delete(Role::Endpoint, &current.id, RECORD_SK, &when);
    count_deleted(&mut tx, tenant, count);
    store
        .transact_unless(tx, &[Role::Endpoint, Role::Count])
        .await
}

/// The tenant's endpoints, newest first.
pub async fn list_endpoints(
    store: &Store,
    tenant: &Tenant,
    page: &PageRequest,
) -> Result<Page<Endpoint>> {
    let q = ListQuery::of(ListKind::WebhookEndpoint.all(tenant));
    store.query_page(&q, page).await?.try_map(from_item)
}

/// Every endpoint of the tenant (an event goes to each that receives it).
pub async fn all_endpoints(store: &Store, tenant: &Tenant) -> Result<Vec<Endpoint>> {
    let mut all = Vec::new();
    let mut page = PageRequest {
        limit: crate::page::MAX_LIMIT,
        ..PageRequest::default()
    };
    loop {
        let found = list_endpoints(store, tenant, &page).await?;
        all.extend(found.items);
        match found.next_cursor {
            Some(cursor) if found.has_more => page.cursor = Some(cursor),
            _ => return Ok(all),
        }
    }
}

/// Applies what an attempt changed on its endpoint. Each change is safe to
/// repeat and to race: a streak keeps its first start, disabling applies
/// once; each bumps `version` so a merchant's concurrent edit reads again.
pub async fn change_endpoint(
    store: &Store,
    tenant: &Tenant,
    id: &str,
    change: &EndpointChange,
    now: DateTime<Utc>,
) -> Result<()> {
    let base = UpdateExpr::new()
        .increment(attrs::VERSION)
        .when_tenant(&tenant.key());
    let update = match change {
        EndpointChange::Keep => return Ok(()),
        EndpointChange::StartFailing(since) => base
            .when_absent(attrs::FAILING_SINCE)
            .set(attrs::FAILING_SINCE, string_value(timestamp::format(since))),
        EndpointChange::Recovered => base.remove(attrs::FAILING_SINCE).when_exists(),
        EndpointChange::Disable(reason) => base
            .transition(EndpointChange::DISABLING)
            .set(attrs::DISABLED_REASON, string_value(*reason))
            .set(attrs::UPDATED_AT, string_value(timestamp::format(&now))),
    };
    // A refusal means the change was already made (or the endpoint is gone).
    store.update(id, RECORD_SK, &update).await?;
    Ok(())
}

/// The task of an event at an endpoint, if one was started.
pub async fn get_task(store: &Store, endpoint_id: &str, event_id: &str) -> Result<Option<Task>> {
    store
        .get_item(endpoint_id, &keys::webhook_task_sk(event_id))
        .await?
        .map(from_item)
        .transpose()
}

/// Writes a task that replaces `read` (as read, by version), or creates it
/// when `read` is `None` (only if none exists). False when it lost the race.
pub async fn put_task(
    store: &Store,
    tenant: &Tenant,
    task: &Task,
    read: Option<&Task>,
) -> Result<bool> {
    let when = match read {
        Some(old) => UpdateExpr::new().when_as_read(&tenant.key(), old.version),
        None => UpdateExpr::new().when_new(),
    };
    let mut tx = store.tx();
    tx.put(Role::Task, task_item(tenant, task)?, &when);
    store.transact_unless(tx, &[Role::Task]).await
}

/// Records an attempt and the task after it, if the task is still as the
/// attempt's claim left it (`claimed`). False when another claimant took it.
pub async fn record_outcome(
    store: &Store,
    tenant: &Tenant,
    claimed: &Task,
    outcome: &Outcome,
) -> Result<bool> {
    let mut tx = store.tx();
    let when = UpdateExpr::new().when_as_read(&tenant.key(), claimed.version);
    tx.put(Role::Task, task_item(tenant, &outcome.task)?, &when);
    tx.put_new(Role::Attempt, attempt_item(tenant, &outcome.attempt)?);
    store.transact_unless(tx, &[Role::Task]).await
}

/// Records an attempt without a task (a `webhook.test` delivery).
pub async fn insert_attempt(store: &Store, tenant: &Tenant, d: &DeliveryAttempt) -> Result<()> {
    let mut tx = store.tx();
    tx.put_new(Role::Attempt, attempt_item(tenant, d)?);
    match store.transact(tx).await {
        Ok(()) => Ok(()),
        Err(TxError::Failed(e)) => Err(e),
        Err(e) => Err(e.into_error()),
    }
}

/// The latest attempt of an event at an endpoint (one Query, GSI2).
pub async fn last_attempt(
    store: &Store,
    endpoint_id: &str,
    event_id: &str,
) -> Result<Option<DeliveryAttempt>> {
    let q = ListQuery::new(
        Index::Gsi2,
        keys::webhook_event_attempts(endpoint_id, event_id),
    );
    let page = PageRequest {
        limit: 1,
        ..PageRequest::default()
    };
    let found = store.query_page(&q, &page).await?.try_map(from_item)?;
    Ok(found.items.into_iter().next())
}

/// Ends a claimed task without an attempt, and in the same transaction
/// rewrites its last attempt as announcing no retry (`dropped`); false when
/// another claimant (a redelivery) took the task meanwhile, and then
/// neither is written. The attempt keeps its expiry, so one past it is
/// removed again.
pub async fn abandon_task(
    store: &Store,
    tenant: &Tenant,
    abandoned: &Task,
    claimed: &Task,
    dropped: Option<&DeliveryAttempt>,
) -> Result<bool> {
    let mut tx = store.tx();
    let when = UpdateExpr::new().when_as_read(&tenant.key(), claimed.version);
    tx.put(Role::Task, task_item(tenant, abandoned)?, &when);
    if let Some(d) = dropped {
        tx.put(Role::Attempt, attempt_item(tenant, d)?, &UpdateExpr::new());
    }
    store.transact_unless(tx, &[Role::Task]).await
}

/// Attempt list filters.
#[derive(Debug, Clone, Default)]
pub struct AttemptFilter {
    pub event_id: Option<String>,
    pub status: Option<DeliveryStatus>,
}

/// The attempts of an endpoint (read for its tenant first), newest first.
pub async fn list_attempts(
    store: &Store,
    endpoint: &Endpoint,
    f: &AttemptFilter,
    page: &PageRequest,
) -> Result<Page<DeliveryAttempt>> {
    let mut q = match &f.event_id {
        Some(evt) => ListQuery::new(Index::Gsi2, keys::webhook_event_attempts(&endpoint.id, evt)),
        None => ListQuery::new(Index::Gsi1, keys::webhook_attempts(&endpoint.id)),
    };
    if let Some(s) = f.status {
        q.filter = q.filter.status(s);
    }
    store.query_page(&q, page).await?.try_map(from_item)
}

/// Up to `limit` tasks of a shard whose retry is due by `now`, oldest
/// first, with their tenants (read from an eventually consistent index: the
/// claim re-checks each).
pub async fn due_tasks(
    store: &Store,
    shard: u32,
    now: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<(Tenant, Task)>> {
    let upto = keys::up_to(&now);
    let items = store
        .query_work(&keys::webhook_retries(shard), WorkRange::UpTo(&upto), limit)
        .await?;
    items
        .into_iter()
        .map(|item| {
            let tenant = string_of(&item, attrs::TENANT)
                .and_then(Tenant::from_key)
                .ok_or_else(|| Error::internal("webhook task without tenant"))?;
            Ok((tenant, from_item(item)?))
        })
        .collect()
}
