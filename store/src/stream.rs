//! The table's DynamoDB Stream, as the webhook consumer sees it: new event
//! items (`pk = evt_…`, INSERTs only), whether they arrive in a Lambda event
//! (on AWS, already filtered by the event source mapping) or are read here
//! from the stream itself (the local host, against DynamoDB Local).
//!
//! The local reader follows every shard from its start (TRIM_HORIZON), not
//! from LATEST: events written while `refctl serve` was down are still
//! delivered when it comes back. Reading an event twice is harmless: a
//! delivery task is created only once per (endpoint, event), and endpoints
//! created after an event never receive it. A child shard is read once its
//! parent has been read to its end, so an item's changes keep their order.

use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::task::{Context, Poll};

use aws_sdk_dynamodbstreams::config::interceptors::BeforeDeserializationInterceptorContextMut;
use aws_sdk_dynamodbstreams::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodbstreams::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodbstreams::types::{OperationType, Record, ShardIteratorType};
use aws_sdk_dynamodbstreams::Client;
use aws_smithy_types::body::SdkBody;
use bytes::Bytes;
use serde_json::Value;

use crate::config::Config;
use crate::{events, Item, Store};
use domain::error::{Error, Result};
use domain::event::Published;
use domain::tenant::Tenant;

/// Records asked for per read of a shard.
const READ_LIMIT: i32 = 1000;

/// A reader of the table's stream (local host only).
#[derive(Debug)]
pub struct TableStream {
    client: Client,
    arn: String,
    /// Shards being read, with the iterator of their next read.
    open: HashMap<String, String>,
    /// Shards read to their end.
    finished: HashSet<String>,
}

/// A client of the DynamoDB Streams API with the process's SDK settings
/// (`sdk::config`) and the configuration's endpoint.
async fn streams_client(config: &Config) -> Client {
    let sdk = crate::sdk::config(config).await;
    // Reads are bounded by the connect and whole-operation timeouts only.
    let mut streams = aws_sdk_dynamodbstreams::config::Builder::from(&sdk)
        .interceptor(RepairEmptyMaps)
        .retry_partition(crate::sdk::retry_partition("dynamodbstreams"))
        .timeout_config(
            aws_smithy_types::timeout::TimeoutConfig::builder()
                .connect_timeout(config.sdk_timeouts.connect)
                .operation_timeout(config.sdk_timeouts.operation)
                .disable_operation_attempt_timeout()
                .build(),
        );
    if let Some(ep) = &config.dynamodb_endpoint {
        streams = streams.endpoint_url(ep);
    }
    Client::from_conf(streams.build())
}

/// An error of the Streams API without its raw response: the response
/// carries item images (secrets among them), which must never reach a log.
fn stream_error<E: ProvideErrorMetadata, R>(operation: &str, e: SdkError<E, R>) -> Error {
    let kind = match &e {
        SdkError::ServiceError(_) => e.code().unwrap_or("unknown service error"),
        SdkError::TimeoutError(_) => "timeout",
        SdkError::DispatchFailure(_) => "dispatch failure",
        SdkError::ResponseError(_) => "unreadable response",
        _ => "request not built",
    };
    Error::internal(format!("DynamoDB Streams {operation} failed: {kind}"))
}

/// DynamoDB Local writes an empty map in a stream image as `{}` instead of
/// `{"M":{}}`, which the SDK refuses (and with it the whole batch). This
/// interceptor rewrites such values before the SDK reads the answer.
#[derive(Debug)]
struct RepairEmptyMaps;

impl Intercept for RepairEmptyMaps {
    fn name(&self) -> &'static str {
        "RepairEmptyMaps"
    }

    fn modify_before_deserialization(
        &self,
        context: &mut BeforeDeserializationInterceptorContextMut<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), aws_sdk_dynamodbstreams::error::BoxError> {
        let response = context.response_mut();
        let inner = std::mem::replace(response.body_mut(), SdkBody::taken());
        *response.body_mut() = SdkBody::from_body_1_x(Repaired {
            inner,
            read: Vec::new(),
            done: false,
        });
        // The body changes, so its length and checksum no longer hold.
        response.headers_mut().remove("content-length");
        response.headers_mut().remove("x-amz-crc32");
        Ok(())
    }
}

/// A body read to its end, then given out repaired.
struct Repaired {
    inner: SdkBody,
    read: Vec<u8>,
    done: bool,
}

impl http_body::Body for Repaired {
    type Data = Bytes;
    type Error = aws_smithy_types::body::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        loop {
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        this.read.extend_from_slice(&data);
                    }
                }
                Poll::Ready(None) => {
                    this.done = true;
                    let fixed = repair(std::mem::take(&mut this.read));
                    return Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from(fixed)))));
                }
            }
        }
    }
}

/// The answer with every typeless `{}` attribute value of its images made an
/// empty map; any other answer unchanged.
fn repair(body: Vec<u8>) -> Vec<u8> {
    let Ok(mut json) = serde_json::from_slice::<Value>(&body) else {
        return body;
    };
    let mut changed = false;
    if let Some(records) = json.get_mut("Records").and_then(Value::as_array_mut) {
        for record in records {
            for image in ["NewImage", "OldImage", "Keys"] {
                if let Some(Value::Object(attrs)) =
                    record.pointer_mut(&format!("/dynamodb/{image}"))
                {
                    attrs.values_mut().for_each(|v| changed |= repair_value(v));
                }
            }
        }
    }
    if !changed {
        return body;
    }
    serde_json::to_vec(&json).unwrap_or(body)
}

/// Repairs one attribute value and the values inside it; true when it changed one.
fn repair_value(v: &mut Value) -> bool {
    let Value::Object(typed) = v else {
        return false;
    };
    if typed.is_empty() {
        *v = serde_json::json!({ "M": {} });
        return true;
    }
    let mut changed = false;
    if let Some(Value::Object(map)) = typed.get_mut("M") {
        map.values_mut().for_each(|x| changed |= repair_value(x));
    }
    if let Some(Value::Array(list)) = typed.get_mut("L") {
        list.iter_mut().for_each(|x| changed |= repair_value(x));
    }
    changed
}

impl TableStream {
    /// Opens the table's latest stream; fails when the table has none.
    pub async fn open(config: &Config, store: &Store) -> Result<TableStream> {
        let described = store
            .client()
            .describe_table()
            .table_name(store.table())
            .send()
            .await
            .map_err(|e| stream_error("DescribeTable", e))?;
        let arn = described
            .table()
            .and_then(|t| t.latest_stream_arn())
            .ok_or_else(|| Error::internal("the table has no stream; run `refctl tables create`"))?
            .to_string();
        Ok(TableStream {
            client: streams_client(config).await,
            arn,
            open: HashMap::new(),
            finished: HashSet::new(),
        })
    }

    /// Starts reading the shards not yet read whose parent is done.
    pub async fn discover(&mut self) -> Result<()> {
        let mut start = None;
        loop {
            let out = self
                .client
                .describe_stream()
                .stream_arn(&self.arn)
                .set_exclusive_start_shard_id(start.take())
                .send()
                .await
                .map_err(|e| stream_error("DescribeStream", e))?;
            let Some(desc) = out.stream_description else {
                return Ok(());
            };
            for shard in desc.shards() {
                let Some(id) = shard.shard_id() else { continue };
                let parent_open = shard
                    .parent_shard_id()
                    .is_some_and(|p| self.open.contains_key(p));
                if self.open.contains_key(id) || self.finished.contains(id) || parent_open {
                    continue;
                }
                let iterator = self
                    .client
                    .get_shard_iterator()
                    .stream_arn(&self.arn)
                    .shard_id(id)
                    .shard_iterator_type(ShardIteratorType::TrimHorizon)
                    .send()
                    .await
                    .map_err(|e| stream_error("GetShardIterator", e))?
                    .shard_iterator;
                match iterator {
                    Some(it) => {
                        self.open.insert(id.to_string(), it);
                    }
                    None => {
                        self.finished.insert(id.to_string());
                    }
                }
            }
            match desc.last_evaluated_shard_id {
                Some(last) => start = Some(last),
                None => return Ok(()),
            }
        }
    }

    /// Reads every open shard once and returns how many records it read and
    /// the new event items among them, oldest first per shard. A shard that ends is finished; one that fails is
    /// dropped and found again by the next `discover` (read again from its
    /// start: harmless, see the module docs).
    pub async fn poll(&mut self) -> Result<(usize, Vec<(Tenant, Published)>)> {
        let (records, failure) = self.read().await;
        let mut found = Vec::new();
        for record in &records {
            found.extend(event_of_record(record)?);
        }
        match failure {
            Some(e) if found.is_empty() => Err(e),
            _ => Ok((records.len(), found)),
        }
    }

    /// Reads every open shard once: its records, oldest first per shard, and
    /// the failure of a shard that could not be read (dropped, see `poll`).
    pub async fn read(&mut self) -> (Vec<Record>, Option<Error>) {
        let mut records = Vec::new();
        let shards: Vec<(String, String)> = self.open.drain().collect();
        let mut failure = None;
        for (id, iterator) in shards {
            match self
                .client
                .get_records()
                .shard_iterator(iterator)
                .limit(READ_LIMIT)
                .send()
                .await
            {
                Ok(out) => {
                    records.extend(out.records.unwrap_or_default());
                    match out.next_shard_iterator {
                        Some(next) => {
                            self.open.insert(id, next);
                        }
                        None => {
                            self.finished.insert(id);
                        }
                    }
                }
                Err(e) => failure = Some(stream_error("GetRecords", e)),
            }
        }
        (records, failure)
    }

    /// Whether no shard is being read (the stream must be discovered again).
    pub fn is_idle(&self) -> bool {
        self.open.is_empty()
    }
}

/// The old and new images a stream record carries (as the stream's view
/// type gives them), as the store's items.
pub fn images_of(record: &Record) -> (Option<Item>, Option<Item>) {
    let image = |i: Option<&HashMap<String, aws_sdk_dynamodbstreams::types::AttributeValue>>| {
        i.map(|i| serde_dynamo::Item::from(i.clone()).into())
    };
    let d = record.dynamodb();
    (
        image(d.and_then(|d| d.old_image())),
        image(d.and_then(|d| d.new_image())),
    )
}

/// The event of a stream record read through the Streams API, if it is the
/// insert of an event item.
fn event_of_record(record: &Record) -> Result<Option<(Tenant, Published)>> {
    if record.event_name() != Some(&OperationType::Insert) {
        return Ok(None);
    }
    let (_, Some(item)) = images_of(record) else {
        return Ok(None);
    };
    event_of_image(item)
}

/// The event of one record of a Lambda DynamoDB Stream event (DynamoDB JSON),
/// if it is the insert of an event item.
pub fn event_of_lambda_record(record: &Value) -> Result<Option<(Tenant, Published)>> {
    if record.get("eventName").and_then(Value::as_str) != Some("INSERT") {
        return Ok(None);
    }
    let Some(image) = record.pointer("/dynamodb/NewImage") else {
        return Ok(None);
    };
    let item: serde_dynamo::Item =
        serde_json::from_value(image.clone()).map_err(Error::internal)?;
    event_of_image(item.into())
}

/// An event item's new image as the event, or `None` for any other item.
fn event_of_image(item: Item) -> Result<Option<(Tenant, Published)>> {
    if !events::is_event_item(&item) {
        return Ok(None);
    }
    events::from_stored(item).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typeless_empty_maps_of_dynamodb_local_are_repaired() {
        let body = serde_json::json!({"Records": [{"dynamodb": {"NewImage": {
            "metadata": {}, "nested": {"M": {"inner": {}}}, "list": {"L": [{}, {"S": "x"}]},
            "name": {"S": "kept"}
        }}}], "NextShardIterator": "it"});
        let fixed: Value =
            serde_json::from_slice(&repair(serde_json::to_vec(&body).unwrap())).unwrap();
        let image = &fixed["Records"][0]["dynamodb"]["NewImage"];
        assert_eq!(image["metadata"], serde_json::json!({"M": {}}));
        assert_eq!(image["nested"]["M"]["inner"], serde_json::json!({"M": {}}));
        assert_eq!(image["list"]["L"][0], serde_json::json!({"M": {}}));
        assert_eq!(image["name"], serde_json::json!({"S": "kept"}));
        let untouched = br#"{"Records":[]}"#.to_vec();
        assert_eq!(repair(untouched.clone()), untouched);
        assert_eq!(repair(b"not json".to_vec()), b"not json".to_vec());
    }

    #[test]
    fn lambda_records_give_inserted_events_only() {
        let image = serde_json::json!({
            "pk": {"S": "evt_01JD0000000000000000000000"}, "sk": {"S": "R"},
            "tenant": {"S": "acct_1#test"}, "id": {"S": "evt_01JD0000000000000000000000"},
            "type": {"S": "conversion.created"}, "createdAt": {"S": "2026-11-22T10:00:00.000Z"},
            "data": {"S": "{\"id\":\"cnv_1\"}"}, "ttl": {"N": "1800000000"}
        });
        let record = |name: &str, image: &Value| serde_json::json!({"eventName": name, "dynamodb": {"NewImage": image}});
        let (tenant, event) = event_of_lambda_record(&record("INSERT", &image))
            .unwrap()
            .unwrap();
        assert_eq!(tenant.key(), "acct_1#test");
        assert_eq!(event.data["id"], "cnv_1");
        assert!(event_of_lambda_record(&record("MODIFY", &image))
            .unwrap()
            .is_none());
        let mut other = image.clone();
        other["pk"] = serde_json::json!({"S": "cnv_1"});
        assert!(event_of_lambda_record(&record("INSERT", &other))
            .unwrap()
            .is_none());
        let mut broken = image.clone();
        broken["tenant"] = serde_json::json!({"S": ""});
        assert!(event_of_lambda_record(&record("INSERT", &broken)).is_err());
    }

    #[test]
    fn lambda_records_carry_the_deflated_data_as_base64() {
        let tenant = Tenant::from_key("acct_1#test").unwrap();
        let at = domain::timestamp::parse_datetime("2026-11-22T10:00:00.000Z").unwrap();
        let data = serde_json::json!({"id": "cnv_1", "payoutId": null, "amount": 49.99});
        let e = Published::unstored(domain::event::EventType::ConversionCreated, data, at);
        // The item as the stream's Lambda event carries it: DynamoDB JSON,
        // binary values in base64.
        let item: serde_dynamo::Item = events::item(&tenant, &e).unwrap().into();
        let image = serde_json::to_value(&item).unwrap();
        assert!(image["dataDeflated"]["B"].is_string(), "{image}");
        let record = serde_json::json!({"eventName": "INSERT", "dynamodb": {"NewImage": image}});
        let (t, back) = event_of_lambda_record(&record).unwrap().unwrap();
        assert_eq!(t, tenant);
        assert_eq!(back, e);
    }
}
