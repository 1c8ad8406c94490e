//! The store: DynamoDB (one table, typed items, conditional writes,
//! Query-based pages) and S3 over the domain's types, with the SDK clients'
//! configuration. It reads typed facts and commits plans; it decides nothing.

#[macro_use]
mod calls;

pub mod accounts;
pub mod adjustments;
pub mod affiliate_totals;
pub mod affiliates;
pub mod applications;
pub mod assets;
pub mod attrs;
pub mod campaigns;
pub mod clicks;
pub mod compact;
pub mod config;
pub mod conversions;
pub mod counters;
pub mod enrollments;
pub mod events;
#[cfg(feature = "files")]
pub mod files;
pub mod idempotency;
pub mod integrations;
pub mod keys;
pub mod metrics;
pub mod months;
pub mod page;
pub mod parked_links;
pub mod parked_refunds;
pub mod payout_accounts;
pub mod payout_items;
pub mod payouts;
pub mod pools;
pub mod promotion_codes;
pub mod referrals;
pub mod rollups;
pub mod sdk;
pub mod secrets;
pub mod storage_error;
pub mod stream;
pub mod table;
pub mod tls;
pub mod tx;
pub mod update;
pub mod webhook_settings;
pub mod webhooks;
pub mod work;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use aws_sdk_dynamodb::Client;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::keys::{Index, RECORD_SK};
use crate::metrics::CallMetrics;
use domain::error::{Error, Result};
use domain::ids::{self, IdKind};

/// A new record's write: its random id was free, or an internal error naming
/// `what` (a collision is never the caller's doing).
pub(crate) fn created(written: bool, what: &str) -> Result<()> {
    if written {
        Ok(())
    } else {
        Err(Error::internal(format!("{what} id collision")))
    }
}

/// A raw DynamoDB item.
pub type Item = HashMap<String, AttributeValue>;

/// The table and its client.
#[derive(Debug, Clone)]
pub struct Store {
    client: Client,
    table: String,
    metrics: Arc<CallMetrics>,
}

/// Index key attributes of one record: which lists it appears in.
#[derive(Debug, Clone, Default)]
pub struct IndexKeys(Vec<(Index, String, String)>);

impl IndexKeys {
    /// No index entries.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the record to an index partition at a sort position.
    pub fn with(mut self, index: Index, pk: impl Into<String>, sk: impl Into<String>) -> Self {
        self.0.push((index, pk.into(), sk.into()));
        self
    }

    /// Adds the record to a list partition at a sort position.
    pub fn at(self, (index, pk): keys::Partition, sk: impl Into<String>) -> Self {
        self.with(index, pk, sk)
    }
}

/// String attribute.
pub fn string_value(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// The key of the item at `pk`, `sk`.
pub fn item_key(pk: &str, sk: &str) -> Item {
    HashMap::from([
        (attrs::PK.to_string(), string_value(pk)),
        (attrs::SK.to_string(), string_value(sk)),
    ])
}

/// Number attribute.
pub fn number_value(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// Reads a string attribute.
pub fn string_of<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
}

/// Serialises a value into the item at `pk`, `sk`.
pub fn item_at<T: Serialize>(pk: &str, sk: &str, value: &T) -> Result<Item> {
    let mut item: Item = serde_dynamo::to_item(value).map_err(crate::storage_error::item)?;
    // Absent optional fields are stored as missing attributes, not NULLs.
    item.retain(|_, v| !matches!(v, AttributeValue::Null(_)));
    item.extend(item_key(pk, sk));
    Ok(item)
}

/// Serialises a record and adds its keys, tenant and index entries.
pub fn record_item<T: Serialize>(
    pk: &str,
    tenant: Option<&str>,
    record: &T,
    index: &IndexKeys,
) -> Result<Item> {
    let mut item = item_at(pk, RECORD_SK, record)?;
    if let Some(t) = tenant {
        item.insert(attrs::TENANT.into(), string_value(t));
    }
    for (idx, ipk, isk) in &index.0 {
        item.insert(idx.pk().into(), string_value(ipk.clone()));
        item.insert(idx.sk().into(), string_value(isk.clone()));
    }
    Ok(item)
}

/// Deserialises a record, ignoring the key attributes.
pub fn from_item<T: DeserializeOwned>(item: Item) -> Result<T> {
    serde_dynamo::from_item(item).map_err(crate::storage_error::item)
}

impl Store {
    /// Wraps a client and a table name.
    pub fn new(client: Client, table: String, metrics: Arc<CallMetrics>) -> Self {
        Store {
            client,
            table,
            metrics,
        }
    }

    /// The same table and counters through another client (a benchmark's
    /// client with an interceptor of its own).
    pub fn with_client(&self, client: Client) -> Store {
        Store {
            client,
            table: self.table.clone(),
            metrics: self.metrics.clone(),
        }
    }

    /// The SDK client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The table name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Call and capacity counters.
    pub fn metrics(&self) -> &CallMetrics {
        &self.metrics
    }

    /// Reads one item with a strongly consistent GetItem.
    pub async fn get_item(&self, pk: &str, sk: &str) -> Result<Option<Item>> {
        let call = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(item_key(pk, sk)))
            .consistent_read(true);
        Ok(metered!(self, record_read_total, call).item)
    }

    /// Reads a record by id if it belongs to `tenant` (anything else is "not there").
    pub async fn get_owned<T: DeserializeOwned>(
        &self,
        id: &str,
        tenant: &str,
    ) -> Result<Option<T>> {
        self.get_owned_item(id, tenant)
            .await?
            .map(from_item)
            .transpose()
    }

    /// The record `id` of `kind` that `tenant` owns, or NOT_FOUND (`what`):
    /// an id not of the kind's shape is not looked up, and another tenant's
    /// record is "not there".
    pub async fn get_record<T: DeserializeOwned>(
        &self,
        kind: IdKind,
        what: &'static str,
        id: &str,
        tenant: &str,
    ) -> Result<T> {
        from_item(self.get_record_item(kind, what, id, tenant).await?)
    }

    /// As [`Store::get_record`], the item as stored (for a record read
    /// through its own decoding).
    pub async fn get_record_item(
        &self,
        kind: IdKind,
        what: &'static str,
        id: &str,
        tenant: &str,
    ) -> Result<Item> {
        if !ids::is_valid(kind, id) {
            return Err(Error::NotFound(what));
        }
        self.get_owned_item(id, tenant)
            .await?
            .ok_or(Error::NotFound(what))
    }

    /// The records of `kind` among `ids` that `tenant` owns, in one
    /// strongly consistent BatchGetItem (at most 100 distinct ids, each read
    /// once however often named): ids not
    /// of the kind's shape, unknown ones and another tenant's are left out.
    pub async fn get_records<T: DeserializeOwned>(
        &self,
        kind: IdKind,
        ids: &[impl AsRef<str>],
        tenant: &str,
    ) -> Result<Vec<T>> {
        let items = self.get_records_items(kind, ids, tenant).await?;
        items.into_iter().map(from_item).collect()
    }

    /// As [`Store::get_records`], the items as stored (for records read
    /// through their own decoding).
    pub async fn get_records_items(
        &self,
        kind: IdKind,
        ids: &[impl AsRef<str>],
        tenant: &str,
    ) -> Result<Vec<Item>> {
        let keys: Vec<(String, String)> = ids
            .iter()
            .map(AsRef::as_ref)
            .filter(|id| ids::is_valid(kind, id))
            .map(|id| (id.to_string(), RECORD_SK.to_string()))
            .collect();
        self.batch_get_owned_items(&keys, tenant).await
    }

    /// The item of the record `id` when `tenant` owns it (absent otherwise).
    pub async fn get_owned_item(&self, id: &str, tenant: &str) -> Result<Option<Item>> {
        Ok(self
            .get_item(id, RECORD_SK)
            .await?
            .filter(|item| string_of(item, attrs::TENANT) == Some(tenant)))
    }

    /// Reads the items of one partition whose sort keys lie in `lo..=hi`, with
    /// one strongly consistent Query (another only past 1 MB).
    pub async fn query_range(&self, pk: &str, lo: &str, hi: &str) -> Result<Vec<Item>> {
        self.query_range_where(pk, lo, hi, None).await
    }

    /// As [`Store::query_range`], keeping only the items whose attribute
    /// `filter.0` equals `filter.1` (a FilterExpression) when given.
    pub async fn query_range_where(
        &self,
        pk: &str,
        lo: &str,
        hi: &str,
        filter: Option<(&str, AttributeValue)>,
    ) -> Result<Vec<Item>> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let mut q = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :lo AND :hi")
                .expression_attribute_values(":pk", string_value(pk))
                .expression_attribute_values(":lo", string_value(lo))
                .expression_attribute_values(":hi", string_value(hi))
                .consistent_read(true);
            if let Some((name, value)) = &filter {
                q = q
                    .filter_expression("#f = :f")
                    .expression_attribute_names("#f", *name)
                    .expression_attribute_values(":f", value.clone());
            }
            let (page, next) = self.query_step(q, start).await?;
            items.extend(page);
            start = next;
            if start.is_none() {
                return Ok(items);
            }
        }
    }

    /// One page of query `q` from `start`, its capacity counted: the items,
    /// and where the next page starts (none after the last).
    pub(crate) async fn query_step(
        &self,
        q: QueryFluentBuilder,
        start: Option<Item>,
    ) -> Result<(Vec<Item>, Option<Item>)> {
        let out = metered!(self, record_read_total, q.set_exclusive_start_key(start));
        Ok((out.items.unwrap_or_default(), out.last_evaluated_key))
    }

    /// Reads several records in one batch and keeps those of `tenant` as `T`
    /// (another tenant's records are "not there", as with `get_owned`).
    pub async fn batch_get_owned<T: DeserializeOwned>(
        &self,
        keys: &[(String, String)],
        tenant: &str,
    ) -> Result<Vec<T>> {
        let items = self.batch_get_owned_items(keys, tenant).await?;
        items.into_iter().map(from_item).collect()
    }

    /// As [`Store::batch_get_owned`], the items as stored (no keys, no call).
    async fn batch_get_owned_items(
        &self,
        keys: &[(String, String)],
        tenant: &str,
    ) -> Result<Vec<Item>> {
        let mut items = self.batch_get(keys).await?;
        items.retain(|item| string_of(item, attrs::TENANT) == Some(tenant));
        Ok(items)
    }

    /// Reads several items in one BatchGetItem (at most 100 keys), strongly consistent.
    pub async fn batch_get(&self, keys: &[(String, String)]) -> Result<Vec<Item>> {
        self.batch_get_with(keys, true).await
    }

    /// Reads several items in one BatchGetItem (at most 100 distinct keys).
    /// A key named twice is read once: DynamoDB refuses a batch that names
    /// one twice, and callers read by what their records name (two payouts
    /// of one affiliate).
    pub async fn batch_get_with(
        &self,
        keys: &[(String, String)],
        consistent: bool,
    ) -> Result<Vec<Item>> {
        use aws_sdk_dynamodb::types::KeysAndAttributes;
        let mut out_items = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut pending: Vec<Item> = keys
            .iter()
            .filter(|key| seen.insert(*key))
            .map(|(pk, sk)| item_key(pk, sk))
            .collect();
        let mut rounds = 0;
        while !pending.is_empty() {
            let ka = KeysAndAttributes::builder()
                .set_keys(Some(pending))
                .consistent_read(consistent)
                .build()
                .map_err(Error::internal)?;
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, ka)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await
                .map_err(crate::storage_error::sdk)?;
            for cc in out.consumed_capacity() {
                self.metrics.record_read_total(Some(cc));
            }
            if let Some(mut r) = out.responses {
                out_items.extend(r.remove(&self.table).unwrap_or_default());
            }
            pending = out
                .unprocessed_keys
                .and_then(|mut u| u.remove(&self.table))
                .map(|k| k.keys)
                .unwrap_or_default();
            rounds += 1;
            if !pending.is_empty() {
                tokio::time::sleep(Duration::from_millis(20 * rounds)).await;
            }
        }
        Ok(out_items)
    }

    /// Writes an item only when no item with its key exists; false when one does.
    /// When the SDK retried a put whose first answer was lost, the item found is
    /// the one this call wrote: that counts as written, not as taken.
    pub async fn put_new(&self, item: Item) -> Result<bool> {
        let call = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item.clone()))
            .condition_expression("attribute_not_exists(pk)");
        Ok(match conditional!(self, call, PutItemError) {
            Ok(_) => true,
            Err(found) => found.as_ref() == Some(&item),
        })
    }

    /// Writes an item unconditionally.
    pub async fn put(&self, item: Item) -> Result<()> {
        let call = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item));
        metered!(self, record_write_total, call);
        Ok(())
    }

    /// Deletes an item (nothing when it does not exist).
    pub async fn delete(&self, pk: &str, sk: &str) -> Result<()> {
        let call = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(item_key(pk, sk)));
        metered!(self, record_write_total, call);
        Ok(())
    }
}
