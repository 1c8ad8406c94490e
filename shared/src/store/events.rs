//! Event records (the outbox): `pk = evt_<ULID>`, `sk = "R"`, written in the
//! transaction of the change they record, kept 30 days (TTL). Listed per
//! tenant through GSI1 (`<tenant>#EVT`) and by type through GSI2
//! (`<tenant>#EVT#TYPE#<type>`), both sorted by `<createdAt>#<id>`. The
//! table's stream carries every new one to the webhook deliverer.
//!
//! The event's data (the record's API view, JSON) is stored deflated in a
//! binary attribute: a conversion's view is about 730 bytes of JSON and
//! deflates to about half, which keeps the event item under 1 KB, so its put
//! and each of its two index entries cost one write unit per KB fewer.
//! Events stored before as JSON text are read as they are.

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
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

/// The attribute holding the event's data, deflated (binary).
const DATA_DEFLATED: &str = "dataDeflated";
/// The largest data an event's deflated attribute may inflate to: a
/// DynamoDB item's limit.
const DATA_LIMIT: usize = 400 * 1024;

/// An event as stored, beside its data: JSON text in events written before
/// the data was deflated, else absent (the data is in [`DATA_DEFLATED`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    id: String,
    #[serde(rename = "type")]
    event_type: EventType,
    #[serde(with = "serde_ts")]
    created_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<String>,
}

/// The JSON text of the data, deflated (raw DEFLATE, best compression:
/// events are written once and read a few times).
fn deflate(text: &str) -> Vec<u8> {
    miniz_oxide::deflate::compress_to_vec(text.as_bytes(), 9)
}

/// The data's JSON text: the deflated attribute inflated, or the legacy text.
fn data_text(deflated: Option<AttributeValue>, legacy: Option<String>) -> Result<String> {
    match deflated {
        Some(AttributeValue::B(blob)) => {
            let bytes =
                miniz_oxide::inflate::decompress_to_vec_with_limit(blob.as_ref(), DATA_LIMIT)
                    .map_err(|e| Error::internal(format!("event data: {e:?}")))?;
            String::from_utf8(bytes).map_err(Error::internal)
        }
        _ => legacy.ok_or_else(|| Error::internal("event without data")),
    }
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
        data: None,
    };
    let mut item = record_item(&e.id, Some(&tenant.key()), &stored, &index)?;
    item.insert(
        DATA_DEFLATED.into(),
        AttributeValue::B(Blob::new(deflate(&e.data.to_string()))),
    );
    let expires = e.created_at + Duration::days(RETENTION_DAYS);
    item.insert(TTL_ATTRIBUTE.into(), number_value(expires.timestamp()));
    Ok(item)
}

/// Reads an event item back (a stream record's new image, a query result).
pub fn from_stored(mut item: Item) -> Result<(Tenant, Event)> {
    let tenant = crate::store::string_of(&item, "tenant")
        .and_then(Tenant::from_key)
        .ok_or_else(|| Error::internal("event without tenant"))?;
    let deflated = item.remove(DATA_DEFLATED);
    let s: Stored = from_item(item)?;
    let data = serde_json::from_str(&data_text(deflated, s.data)?).map_err(Error::internal)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> (Tenant, Event) {
        let tenant = Tenant::from_key("acct_01JD0000000000000000000000#test").unwrap();
        // A conversion's view, as the postback's event carries it.
        let view = serde_json::json!({"id": "cnv_01JD0000000000000000000001", "object": "conversion",
            "externalId": "in_1", "campaignId": "cmp_01JD0000000000000000000002",
            "affiliateId": "aff_01JD0000000000000000000003", "amount": 49.99, "currency": "USD",
            "conversionType": "SALE", "commission": 5, "commissionReason": null, "status": "PENDING",
            "attribution": "CLICK", "customerRef": "cus_1", "isRecurring": false,
            "clickId": "clk_01JD0000000000000000000004", "sessionId": "ses_01JD0000000000000000000004",
            "customerId": "cus_1", "holdDays": 30, "payableAt": "2026-12-25T23:18:17.000Z",
            "payoutId": null, "metadata": {"integrationId": "int_01JD0000000000000000000005"},
            "occurredAt": "2026-11-25T23:18:17.000Z", "createdAt": "2026-11-25T23:18:17.175Z",
            "updatedAt": "2026-11-25T23:18:17.175Z", "reversedAt": null, "reversalReason": null,
            "reversedAmount": 0, "commissionReversed": 0, "risk": {"level": "NONE", "flags": []}});
        let at = timestamp::parse_datetime("2026-11-25T23:18:17.175Z").unwrap();
        (
            tenant,
            Event::new(EventType::ConversionCreated, view, at).unwrap(),
        )
    }

    #[test]
    fn data_is_stored_deflated_and_read_back_exactly() {
        let (tenant, e) = event();
        let item = item(&tenant, &e).unwrap();
        assert!(!item.contains_key("data"));
        let Some(AttributeValue::B(blob)) = item.get(DATA_DEFLATED) else {
            panic!("no deflated data");
        };
        let text = e.data.to_string();
        assert!(
            blob.as_ref().len() * 10 < text.len() * 7,
            "{} of {}",
            blob.as_ref().len(),
            text.len()
        );
        let (t, back) = from_stored(item).unwrap();
        assert_eq!(t, tenant);
        assert_eq!(back, e);
        assert_eq!(back.data.to_string(), text, "the same text, key order kept");
    }

    #[test]
    fn events_stored_as_json_text_are_read_as_they_are() {
        let (tenant, e) = event();
        let mut item = item(&tenant, &e).unwrap();
        item.remove(DATA_DEFLATED);
        item.insert("data".into(), AttributeValue::S(e.data.to_string()));
        assert_eq!(from_stored(item).unwrap().1, e);
    }

    #[test]
    fn data_that_does_not_inflate_is_an_error_not_a_panic() {
        let (tenant, e) = event();
        let mut item = item(&tenant, &e).unwrap();
        item.insert(
            DATA_DEFLATED.into(),
            AttributeValue::B(Blob::new(vec![0xff, 0x00, 0x13])),
        );
        assert!(from_stored(item).is_err());
        let mut bare = super::item(&tenant, &e).unwrap();
        bare.remove(DATA_DEFLATED);
        assert!(from_stored(bare).is_err());
    }
}
