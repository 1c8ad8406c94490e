//! Event records (the outbox): `pk = evt_<ULID>`, `sk = "R"`, written in the
//! transaction of the change they record, kept 30 days (TTL). Listed per
//! tenant through GSI1 (`<tenant>#EVT`) and by type through GSI2
//! (`<tenant>#EVT#TYPE#<type>`), both sorted by `<createdAt>#<id>`. The
//! table's stream carries every new one to the webhook deliverer.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::event::{Event, EventType};
use crate::domain::tenant::Tenant;
use crate::error::{Error, Result};
use crate::ids::{self, IdKind};
use crate::store::keys::{self, Index, ListKind};
use crate::store::page::{ListQuery, Page, PageRequest};
use crate::store::table::TTL_ATTRIBUTE;
use crate::store::tx::Tx;
use crate::store::{from_item, number_value, record_item, IndexKeys, Item, Store};
use crate::timestamp::{self, serde_ts};

/// How long events are kept.
pub const RETENTION_DAYS: i64 = 30;

/// An event as stored: its data as JSON text, exactly as it will be sent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    id: String,
    #[serde(rename = "type")]
    event_type: EventType,
    #[serde(with = "serde_ts")]
    created_at: DateTime<Utc>,
    data: String,
}

/// The item of an event of `tenant`.
pub fn item(tenant: &Tenant, e: &Event) -> Result<Item> {
    let sk = format!("{}#{}", timestamp::format(&e.created_at), e.id);
    let index = IndexKeys::new()
        .with(Index::Gsi1, keys::tenant_list(tenant, ListKind::Event), &sk)
        .with(
            Index::Gsi2,
            format!(
                "{}#TYPE#{}",
                keys::tenant_list(tenant, ListKind::Event),
                e.event_type.as_str()
            ),
            &sk,
        );
    let stored = Stored {
        id: e.id.clone(),
        event_type: e.event_type,
        created_at: e.created_at,
        data: e.data.to_string(),
    };
    let mut item = record_item(&e.id, Some(&tenant.key()), &stored, &index)?;
    let expires = e.created_at + Duration::days(RETENTION_DAYS);
    item.insert(TTL_ATTRIBUTE.into(), number_value(expires.timestamp()));
    Ok(item)
}

/// Reads an event item back (a stream record's new image, a query result).
pub fn from_stored(item: Item) -> Result<(Tenant, Event)> {
    let tenant = crate::store::string_of(&item, "tenant")
        .and_then(Tenant::from_key)
        .ok_or_else(|| Error::internal("event without tenant"))?;
    let s: Stored = from_item(item)?;
    let data = serde_json::from_str(&s.data).map_err(Error::internal)?;
    Ok((
        tenant,
        Event {
            id: s.id,
            event_type: s.event_type,
            created_at: s.created_at,
            data,
        },
    ))
}

/// Appends an event to a transaction (the outbox): it exists exactly when the change does.
pub fn append<R: Copy>(tx: &mut Tx<R>, role: R, tenant: &Tenant, e: &Event) -> Result<()> {
    tx.put_new(role, item(tenant, e)?);
    Ok(())
}

/// The tenant's event, or NOT_FOUND.
pub async fn get(store: &Store, tenant: &Tenant, id: &str) -> Result<Event> {
    if !ids::is_valid(IdKind::Event, id) {
        return Err(Error::NotFound("event"));
    }
    match store.get_item(id, keys::RECORD_SK).await? {
        Some(item) if crate::store::string_of(&item, "tenant") == Some(tenant.key().as_str()) => {
            Ok(from_stored(item)?.1)
        }
        _ => Err(Error::NotFound("event")),
    }
}

/// List filters.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub event_type: Option<EventType>,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
}

/// The tenant's events, newest first.
pub async fn list(
    store: &Store,
    tenant: &Tenant,
    f: &EventFilter,
    page: &PageRequest,
) -> Result<Page<Event>> {
    let mut q = match f.event_type {
        Some(t) => ListQuery::new(
            Index::Gsi2,
            format!(
                "{}#TYPE#{}",
                keys::tenant_list(tenant, ListKind::Event),
                t.as_str()
            ),
        ),
        None => ListQuery::new(Index::Gsi1, keys::tenant_list(tenant, ListKind::Event)),
    };
    if f.from.is_some() || f.to.is_some() {
        q.sk_between = Some((
            f.from.map_or("0".to_string(), |t| timestamp::format(&t)),
            f.to.map_or("~".to_string(), |t| format!("{}#~", timestamp::format(&t))),
        ));
    }
    store
        .query_page(&q, page)
        .await?
        .try_map(|item| from_stored(item).map(|(_, e)| e))
}

/// The role of each action of a one-record change and its event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Record,
    Event,
}

/// Stores a new record and its event in one transaction; false when an item
/// with the record's key exists.
pub async fn put_new_with(store: &Store, tenant: &Tenant, record: Item, e: &Event) -> Result<bool> {
    let mut tx = store.tx();
    tx.put_new(Change::Record, record);
    append(&mut tx, Change::Event, tenant, e)?;
    match store.transact(tx).await {
        Ok(()) => Ok(true),
        Err(err) if err.failed(Change::Record) => Ok(false),
        Err(err) => Err(err.into_error()),
    }
}

/// Applies a conditional update of one record and its event in one
/// transaction; the record as it was when the condition failed, if it did.
pub async fn update_with(
    store: &Store,
    tenant: &Tenant,
    pk: &str,
    update: &crate::store::update::UpdateExpr,
    e: &Event,
) -> Result<Result<(), Option<Item>>> {
    let mut tx = store.tx();
    tx.update(Change::Record, pk, keys::RECORD_SK, update);
    append(&mut tx, Change::Event, tenant, e)?;
    match store.transact(tx).await {
        Ok(()) => Ok(Ok(())),
        Err(err) if err.failed(Change::Record) => Ok(Err(err.old_item(Change::Record).cloned())),
        Err(err) => Err(err.into_error()),
    }
}

/// Puts a whole record under a condition, with its event, in one
/// transaction; false when the condition failed.
pub async fn put_with(
    store: &Store,
    tenant: &Tenant,
    record: Item,
    when: &crate::store::update::UpdateExpr,
    e: &Event,
) -> Result<bool> {
    let mut tx = store.tx();
    tx.put(Change::Record, record, when);
    append(&mut tx, Change::Event, tenant, e)?;
    match store.transact(tx).await {
        Ok(()) => Ok(true),
        Err(err) if err.failed(Change::Record) => Ok(false),
        Err(err) => Err(err.into_error()),
    }
}
