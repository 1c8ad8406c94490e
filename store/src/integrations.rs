//! Integration records (`pk = int_…`, `sk = R`, listed on GSI1 under the
//! tenant), their delivery log (`pk = dlv_…`, listed on GSI4 under
//! `INTDLV#<int_…>`, expiring after 30 days), and the guard that applies a
//! provider event was applied (`pk = PEV#<int_…>#<event id>`, `sk = GUARD`).

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::attrs;
use crate::keys::{self, Index, ListKind, GUARD_SK, RECORD_SK};
use crate::page::{ListQuery, Page, PageRequest};
use crate::update::{UpdateExpr, Updated};
use crate::{
    from_item, item_at, number_value, record_item, string_of, string_value, IndexKeys, Item, Store,
};
use domain::error::{Error, Result};
use domain::ids::{self, IdKind};
use domain::integration::{DeliveryOutcome, Integration};
use domain::tenant::Tenant;
use domain::timestamp;

const NOT_FOUND: &str = "integration";
/// Delivery log rows and event guards expire after this long.
pub const LOG_DAYS: i64 = 30;
/// The attributes a change rewrites (with the GSI1 keys, removed on delete).
const FIELDS: [&str; 13] = [
    attrs::STATUS,
    attrs::CAMPAIGN_ID,
    attrs::DESCRIPTION,
    "signingSecret",
    "connectSigningSecret",
    "apiKey",
    "clientId",
    "clientSecret",
    "webhookId",
    "deleted",
    attrs::VERSION,
    attrs::UPDATED_AT,
    attrs::LAST_EVENT_AT,
];

fn item(tenant: &Tenant, i: &Integration) -> Result<Item> {
    let index = if i.deleted {
        IndexKeys::new()
    } else {
        IndexKeys::new().at(ListKind::Integration.all(tenant), &i.id)
    };
    record_item(&i.id, Some(&tenant.key()), i, &index)
}

/// The claim of the tenant's one paying integration (`pk = PAYRAIL#<tenant>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PayingClaim {
    integration_id: String,
}

/// The role of each action of an integration's write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    Record,
    Claim,
    Release,
}

fn claim_item(tenant: &Tenant, i: &Integration) -> Result<Item> {
    let claim = PayingClaim {
        integration_id: i.id.clone(),
    };
    item_at(&keys::paying_integration(tenant), GUARD_SK, &claim)
}

fn already_paying() -> Error {
    Error::AlreadyExists(
        "another integration of this account and mode already pays (it has an apiKey); remove its key first"
            .into(),
    )
}

/// Writes a new integration, and its claim when it can pay: 409
/// ALREADY_EXISTS when another one of the tenant already does.
pub async fn insert(store: &Store, tenant: &Tenant, i: &Integration) -> Result<()> {
    if !i.can_pay() {
        return crate::created(store.put_new(item(tenant, i)?).await?, "integration");
    }
    let mut tx = store.tx();
    tx.put_new(Write::Record, item(tenant, i)?)
        .put_new(Write::Claim, claim_item(tenant, i)?);
    match store.transact(tx).await {
        Ok(()) => Ok(()),
        Err(e) if e.failed(Write::Claim) => Err(already_paying()),
        Err(e) => Err(e.into_error()),
    }
}

/// The tenant's paying integration, if any: its claim, then its record.
pub async fn paying(store: &Store, tenant: &Tenant) -> Result<Option<Integration>> {
    let Some(claim) = store
        .get_item(&keys::paying_integration(tenant), GUARD_SK)
        .await?
    else {
        return Ok(None);
    };
    let claim: PayingClaim = from_item(claim)?;
    Ok(store
        .get_owned::<Integration>(&claim.integration_id, &tenant.key())
        .await?
        .filter(Integration::can_pay))
}

/// The tenant's integration (not deleted), or NOT_FOUND.
pub async fn get(store: &Store, tenant: &Tenant, id: &str) -> Result<Integration> {
    let found: Integration = store
        .get_record(IdKind::Integration, NOT_FOUND, id, &tenant.key())
        .await?;
    match found.deleted {
        false => Ok(found),
        true => Err(Error::NotFound(NOT_FOUND)),
    }
}

/// An integration and its tenant, found by id alone (the public receiver);
/// `None` when unknown or deleted.
pub async fn get_with_tenant(store: &Store, id: &str) -> Result<Option<(Integration, Tenant)>> {
    if !ids::is_valid(IdKind::Integration, id) {
        return Ok(None);
    }
    let Some(item) = store.get_item(id, RECORD_SK).await? else {
        return Ok(None);
    };
    let tenant = string_of(&item, attrs::TENANT).and_then(Tenant::from_key);
    let integration: Integration = from_item(item)?;
    Ok(tenant
        .filter(|_| !integration.deleted)
        .map(|t| (integration, t)))
}

/// Writes `new` if the integration is as `old` was read; false otherwise.
pub async fn replace(
    store: &Store,
    tenant: &Tenant,
    new: &Integration,
    old: &Integration,
) -> Result<bool> {
    let mut fields = FIELDS.to_vec();
    fields.extend([Index::Gsi1.pk(), Index::Gsi1.sk()]);
    let update = UpdateExpr::new()
        .copy_from(&item(tenant, new)?, &fields)
        .when_as_read(&tenant.key(), old.stamps.version);
    if new.can_pay() == old.can_pay() {
        return Ok(matches!(
            store.update(&new.id, RECORD_SK, &update).await?,
            Updated::Applied(_)
        ));
    }
    // It starts or stops paying: its claim moves in the same transaction.
    let mut tx = store.tx();
    tx.update(Write::Record, &new.id, RECORD_SK, &update);
    let claim = keys::paying_integration(tenant);
    if new.can_pay() {
        tx.put_new(Write::Claim, claim_item(tenant, new)?);
    } else {
        let ours = UpdateExpr::new()
            .when_absent_or_eq(attrs::INTEGRATION_ID, string_value(new.id.clone()));
        tx.delete(Write::Release, &claim, GUARD_SK, &ours);
    }
    match store.transact(tx).await {
        Ok(()) => Ok(true),
        Err(e) if e.failed(Write::Record) => Ok(false),
        Err(e) if e.failed(Write::Claim) => Err(already_paying()),
        Err(e) => Err(e.into_error()),
    }
}

/// The tenant's integrations, newest first.
pub async fn list(store: &Store, tenant: &Tenant, page: &PageRequest) -> Result<Page<Integration>> {
    let q = ListQuery::of(ListKind::Integration.all(tenant));
    store.query_page(&q, page).await?.try_map(from_item)
}

/// The guard of a provider event (or a Paddle adjustment) of an integration;
/// `row`, the id of the delivery-log row of the delivery that marked it.
fn event_guard(scope: &str, event_id: &str, now: DateTime<Utc>, row: Option<&str>) -> Result<Item> {
    #[derive(Serialize)]
    struct Guard<'a> {
        ttl: i64,
        /// Unique per claim: `put_new` takes an identical item for its own
        /// retried write, and two claims must never look alike.
        claim: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        row: Option<&'a str>,
    }
    let guard = Guard {
        ttl: (now + Duration::days(LOG_DAYS)).timestamp(),
        claim: ulid::Ulid::new().to_string(),
        row,
    };
    item_at(&format!("PEV#{scope}#{event_id}"), GUARD_SK, &guard)
}

/// Claims a key once in a tenant (a Paddle adjustment id, whichever of the
/// tenant's integrations receives it): true the first time.
pub async fn claim_once(
    store: &Store,
    tenant: &Tenant,
    key: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    store
        .put_new(event_guard(&tenant.key(), key, now, None)?)
        .await
}

/// Gives a [`claim_once`] back (what it guarded could not be applied).
pub async fn release_once(store: &Store, tenant: &Tenant, key: &str) -> Result<()> {
    store
        .delete(&format!("PEV#{}#{key}", tenant.key()), GUARD_SK)
        .await
}

/// The role of each action of [`record_applied`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Applied {
    Guard,
    Log,
    Touch,
}

/// How a delivery's event came to be marked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marked {
    /// By this delivery: its row is the event's.
    First,
    /// Before, or by a concurrent delivery of the same event: the id of the
    /// row that delivery logged (none for a guard older than the field).
    Before(Option<String>),
}

/// Records, in one transaction, that a provider event was applied: its
/// guard (so a repeat answers DUPLICATE, and naming its log row), its log
/// row and the integration's `lastEventAt`. Nothing is written when the
/// guard existed.
pub async fn record_applied(
    store: &Store,
    tenant: &Tenant,
    integration_id: &str,
    event_id: &str,
    row: &DeliveryRow,
) -> Result<Marked> {
    let mut tx = store.tx();
    let id = ids::new_id(IdKind::Delivery);
    tx.put_new(
        Applied::Guard,
        event_guard(integration_id, event_id, row.received_at, Some(&id))?,
    );
    tx.put_new(Applied::Log, log_item(tenant, integration_id, &id, row)?);
    let touch = UpdateExpr::new()
        .set(
            attrs::LAST_EVENT_AT,
            string_value(timestamp::format(&row.received_at)),
        )
        .when_exists();
    tx.update(Applied::Touch, integration_id, RECORD_SK, &touch);
    match store.transact(tx).await {
        Ok(()) => Ok(Marked::First),
        Err(e) if e.failed(Applied::Guard) => {
            let row = e
                .old_item(Applied::Guard)
                .and_then(|g| g.get(GUARD_ROW))
                .and_then(|v| v.as_s().ok())
                .cloned();
            Ok(Marked::Before(row))
        }
        Err(e) => Err(e.into_error()),
    }
}

/// The guard's attribute naming the event's log row.
const GUARD_ROW: &str = "row";
/// What the event's row takes from the delivery that applied it.
const OUTCOME_FIELDS: [&str; 3] = ["outcome", "reason", "conversionId"];

/// The role of each action of [`log_repeat`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repeat {
    EventRow,
    Log,
}

/// Logs a repeated delivery (`repeat`, DUPLICATE). When it is the one that
/// applied the event (`applied`: two copies ran at once, and the one that
/// marked it first found nothing left to do), the event's row `row_id`
/// takes its outcome, unless that row already says APPLIED.
pub async fn log_repeat(
    store: &Store,
    tenant: &Tenant,
    integration_id: &str,
    row_id: Option<&str>,
    applied: Option<&DeliveryRow>,
    repeat: &DeliveryRow,
) -> Result<()> {
    let (Some(row_id), Some(applied)) = (row_id, applied) else {
        return log_delivery(store, tenant, integration_id, repeat).await;
    };
    let own = ids::new_id(IdKind::Delivery);
    let outcome = log_item(tenant, integration_id, row_id, applied)?;
    let ignored = string_value(DeliveryOutcome::Ignored.as_str());
    let take = UpdateExpr::new()
        .copy_from(&outcome, &OUTCOME_FIELDS)
        .when_eq(OUTCOME_FIELDS[0], ignored);
    let mut tx = store.tx();
    tx.update(Repeat::EventRow, row_id, RECORD_SK, &take);
    tx.put_new(Repeat::Log, log_item(tenant, integration_id, &own, repeat)?);
    match store.transact(tx).await {
        Ok(()) => Ok(()),
        Err(e) if e.failed(Repeat::EventRow) => {
            log_delivery(store, tenant, integration_id, repeat).await
        }
        Err(e) => Err(e.into_error()),
    }
}

fn log_partition(integration_id: &str) -> String {
    format!("INTDLV#{integration_id}")
}

/// One received event, as the delivery log keeps it (ids and amounts only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryRow {
    pub provider_event_id: Option<String>,
    #[serde(rename = "type")]
    pub event_type: Option<String>,
    #[serde(with = "timestamp::serde_ts")]
    pub received_at: DateTime<Utc>,
    pub outcome: DeliveryOutcome,
    pub reason: Option<String>,
    pub conversion_id: Option<String>,
}

/// Appends a row to the integration's delivery log.
pub async fn log_delivery(
    store: &Store,
    tenant: &Tenant,
    integration_id: &str,
    row: &DeliveryRow,
) -> Result<()> {
    let id = ids::new_id(IdKind::Delivery);
    store
        .put_new(log_item(tenant, integration_id, &id, row)?)
        .await?;
    Ok(())
}

/// A delivery-log row `id` as stored.
fn log_item(tenant: &Tenant, integration_id: &str, id: &str, row: &DeliveryRow) -> Result<Item> {
    let sort = keys::at(&row.received_at, id);
    let index = IndexKeys::new().with(Index::Gsi4, log_partition(integration_id), sort);
    let mut item = record_item(id, Some(&tenant.key()), row, &index)?;
    let ttl = (row.received_at + Duration::days(LOG_DAYS)).timestamp();
    item.insert(attrs::TTL.into(), number_value(ttl));
    Ok(item)
}

/// The integration's delivery log, newest first.
pub async fn deliveries(
    store: &Store,
    integration_id: &str,
    page: &PageRequest,
) -> Result<Page<DeliveryRow>> {
    let q = ListQuery::new(Index::Gsi4, log_partition(integration_id));
    store.query_page(&q, page).await?.try_map(from_item)
}
