//! Event records (the outbox), written in the transaction of the change
//! they record and kept 30 days (TTL). An event is stored in its tenant's
//! event partition in time order (`pk = <tenant>#EVT`, `sk =
//! <createdAt>#<id>`), which lists every event of the tenant; its id's ULID
//! time is its `createdAt`, so the id alone gives its key. It is listed by
//! type through GSI2 (`<tenant>#EVT#TYPE#<type>`, the same sort key). The
//! table's stream carries every new one to the webhook deliverer.
//!
//! Events written before were keyed by id (`pk = evt_<ULID>`, `sk = "R"`)
//! and listed through GSI1 (`<tenant>#EVT`): they are read beside the
//! others (by id in the same BatchGetItem, the list merged with that GSI1
//! partition in the same round trip) until their 30 days are over. Keyed
//! by time, an event writes one index entry where it wrote two.
//!
//! The event's data (the record's API view, JSON) is stored deflated in a
//! binary attribute: a conversion's view is about 730 bytes of JSON and
//! deflates to about half, which keeps the event item under 1 KB, so its put
//! and its index entry cost one write unit per KB fewer.
//! Events stored before as JSON text are read as they are.

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::attrs;
use crate::keys::{self, Index, ListKind};
use crate::page::{ListQuery, Page, PageRequest};
use crate::tx::Tx;
use crate::{
    from_item, number_value, record_item, string_of, string_value, IndexKeys, Item, Store,
};
use domain::change::Event;
use domain::error::{Error, Result};
use domain::event::{EventType, Published};
use domain::ids::{self, IdKind};
use domain::tenant::Tenant;
use domain::timestamp::serde_ts;

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
                    // Its status only: the error holds what was inflated so far.
                    .map_err(|e| Error::internal(format!("event data: {:?}", e.status)))?;
            String::from_utf8(bytes).map_err(Error::internal)
        }
        _ => legacy.ok_or_else(|| Error::internal("event without data")),
    }
}

/// The partition holding the tenant's events in time order (new layout);
/// also the GSI1 partition that listed those written before.
fn partition(tenant: &Tenant) -> String {
    keys::tenant_list(tenant, ListKind::Event)
}

/// The GSI2 partition of the tenant's events of one type.
fn type_partition(tenant: &Tenant, t: EventType) -> String {
    format!("{}#TYPE#{}", partition(tenant), t.as_str())
}

/// An event's place in time order: its sort key in every partition.
fn position(created_at: &DateTime<Utc>, id: &str) -> String {
    keys::at(created_at, id)
}

/// The item of an event of `tenant`.
pub fn item(tenant: &Tenant, e: &Published) -> Result<Item> {
    let head = (e.id.as_str(), e.event_type, e.created_at);
    item_of(tenant, head, deflate(&e.data.to_string()))
}

/// The item of an event of `tenant` (its id, type and time) whose data is
/// the deflated JSON text `deflated`.
fn item_of(
    tenant: &Tenant,
    (id, event_type, created_at): (&str, EventType, DateTime<Utc>),
    deflated: Vec<u8>,
) -> Result<Item> {
    let sk = position(&created_at, id);
    let index = IndexKeys::new().with(Index::Gsi2, type_partition(tenant, event_type), &sk);
    let stored = Stored {
        id: id.to_string(),
        event_type,
        created_at,
        data: None,
    };
    let mut item = record_item(&partition(tenant), Some(&tenant.key()), &stored, &index)?;
    item.insert(attrs::SK.into(), string_value(sk));
    item.insert(DATA_DEFLATED.into(), AttributeValue::B(Blob::new(deflated)));
    let expires = created_at + Duration::days(RETENTION_DAYS);
    item.insert(attrs::TTL.into(), number_value(expires.timestamp()));
    Ok(item)
}

/// True for an event's item, in either layout (a stream record's image).
pub fn is_event_item(item: &Item) -> bool {
    let is_event_id = |v: Option<&str>| v.is_some_and(|id| ids::is_valid(IdKind::Event, id));
    let tenant = string_of(item, attrs::TENANT).and_then(Tenant::from_key);
    match (string_of(item, attrs::PK), tenant) {
        (Some(pk), Some(t)) if pk == partition(&t) => is_event_id(string_of(item, attrs::ID)),
        (pk, _) => is_event_id(pk) && string_of(item, attrs::SK) == Some(keys::RECORD_SK),
    }
}

/// Reads an event item back (a stream record's new image, a query result).
pub fn from_stored(mut item: Item) -> Result<(Tenant, Published)> {
    let tenant = string_of(&item, attrs::TENANT)
        .and_then(Tenant::from_key)
        .ok_or_else(|| Error::internal("event without tenant"))?;
    let deflated = item.remove(DATA_DEFLATED);
    let s: Stored = from_item(item)?;
    let data = serde_json::from_str(&data_text(deflated, s.data)?).map_err(Error::internal)?;
    Ok((
        tenant,
        Published {
            id: s.id,
            event_type: s.event_type,
            created_at: s.created_at,
            data,
        },
    ))
}

/// Appends an event to a transaction (the outbox), its subject rendered to
/// the record's view: it exists exactly when the change does.
pub fn append<R: Copy>(tx: &mut Tx<R>, role: R, tenant: &Tenant, e: &Event) -> Result<()> {
    append_all(tx, role, tenant, [e])
}

/// Appends the events of one change (see [`append`]); one that follows an
/// event about the same copy of a record ([`Event::also`]) shares its
/// rendered and deflated data.
pub fn append_all<'a, R: Copy>(
    tx: &mut Tx<R>,
    role: R,
    tenant: &Tenant,
    events: impl IntoIterator<Item = &'a Event>,
) -> Result<()> {
    let mut events = events.into_iter().peekable();
    let mut shared: Option<Vec<u8>> = None;
    while let Some(e) = events.next() {
        let data = match shared.take() {
            Some(data) => data,
            None => deflate(&wire::event::data_text(&e.subject)?),
        };
        // Copied only for a next event about the same copy.
        if events
            .peek()
            .is_some_and(|next| next.subject.is(&e.subject))
        {
            shared = Some(data.clone());
        }
        let head = (e.id.as_str(), e.event_type, e.created_at);
        tx.put_new(role, item_of(tenant, head, data)?);
    }
    Ok(())
}

/// The tenant's event, or NOT_FOUND: read at the key its id gives, and at
/// the older layout's key, in one BatchGetItem.
pub async fn get(store: &Store, tenant: &Tenant, id: &str) -> Result<Published> {
    let Some(at) = ids::time_of(id).filter(|_| ids::is_valid(IdKind::Event, id)) else {
        return Err(Error::NotFound("event"));
    };
    let keys = [
        (partition(tenant), position(&at, id)),
        (id.to_string(), keys::RECORD_SK.to_string()),
    ];
    let found = store.batch_get(&keys).await?.into_iter().find(|item| {
        string_of(item, attrs::TENANT) == Some(tenant.key().as_str())
            && string_of(item, attrs::ID) == Some(id)
    });
    match found {
        Some(item) => Ok(from_stored(item)?.1),
        None => Err(Error::NotFound("event")),
    }
}

/// List filters.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub event_type: Option<EventType>,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
}

/// The tenant's events, newest first: by type from GSI2; else the event
/// partition merged with the older layout's GSI1 partition.
pub async fn list(
    store: &Store,
    tenant: &Tenant,
    f: &EventFilter,
    page: &PageRequest,
) -> Result<Page<Published>> {
    let found = match f.event_type {
        Some(t) => {
            let q = ListQuery::new(Index::Gsi2, type_partition(tenant, t))
                .sharing_table_pk(partition(tenant))
                .within(f.from, f.to);
            store.query_page(&q, page).await?
        }
        None => {
            let stored = ListQuery::on_table(partition(tenant)).within(f.from, f.to);
            let older = ListQuery::new(Index::Gsi1, partition(tenant)).within(f.from, f.to);
            store.query_page_merged([&stored, &older], page).await?
        }
    };
    found.try_map(|item| from_stored(item).map(|(_, e)| e))
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
    update: &crate::update::UpdateExpr,
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
    when: &crate::update::UpdateExpr,
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
    use domain::timestamp;

    fn event() -> (Tenant, Published) {
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
            Published::unstored(EventType::ConversionCreated, view, at),
        )
    }

    #[test]
    fn events_about_one_copy_share_its_data_and_others_have_their_own() {
        use domain::change::TierChange;
        let (tenant, _) = event();
        let at = timestamp::parse_datetime("2026-11-25T23:18:17.175Z").unwrap();
        let change = |customers| TierChange {
            affiliate_id: "aff_01JD0000000000000000000003".into(),
            campaign_id: "cmp_01JD0000000000000000000002".into(),
            tier: None,
            previous_tier: Some("Gold".into()),
            customers_referred: customers,
            conversion_id: "cnv_01JD0000000000000000000001".into(),
        };
        let first = Event::new(EventType::AffiliateTierChanged, change(3), at);
        let also = first.also(EventType::AffiliateTierChanged, at);
        let other = Event::new(EventType::AffiliateTierChanged, change(4), at);
        let mut tx = Tx::<()>::on("t");
        append_all(&mut tx, (), &tenant, [&first, &also, &other]).unwrap();
        let stored: Vec<Published> = tx
            .actions()
            .iter()
            .map(|(_, a)| {
                let item = a.put().expect("a put").item().clone();
                from_stored(item).unwrap().1
            })
            .collect();
        let customers: Vec<_> = stored
            .iter()
            .map(|p| p.data["customersReferred"].clone())
            .collect();
        assert_eq!(customers, [3, 3, 4]);
        let ids: Vec<_> = stored.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, [&first.id, &also.id, &other.id]);
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
    fn an_event_is_kept_in_time_order_under_its_tenant_and_known_in_either_layout() {
        let (tenant, e) = event();
        let item = item(&tenant, &e).unwrap();
        assert_eq!(
            string_of(&item, "pk"),
            Some("acct_01JD0000000000000000000000#test#EVT")
        );
        let sk = format!("2026-11-25T23:18:17.175Z#{}", e.id);
        assert_eq!(string_of(&item, "sk"), Some(sk.as_str()));
        assert_eq!(string_of(&item, "gsi2sk"), Some(sk.as_str()));
        assert!(!item.contains_key("gsi1pk"), "no GSI1 entry");
        assert_eq!(
            ids::time_of(&e.id),
            Some(e.created_at),
            "the id gives the key"
        );
        assert!(is_event_item(&item));

        let mut older = item.clone();
        older.insert("pk".into(), string_value(e.id.clone()));
        older.insert("sk".into(), string_value(keys::RECORD_SK));
        assert!(is_event_item(&older));
        older.insert("sk".into(), string_value("TASK#1"));
        assert!(!is_event_item(&older));
        let mut other = item;
        other.insert("id".into(), string_value("cnv_1"));
        assert!(!is_event_item(&other));
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
