//! Write units as DynamoDB bills them, item by item and index entry by
//! index entry. DynamoDB Local's `ReturnConsumedCapacity` leaves out some
//! Updates of a `TransactWriteItems`, so the bench works the units out from
//! what was written instead: the table's stream (switched to the old and new
//! image of every change on the bench's own table) and the transactions'
//! requests (which items they wrote, which they only condition-checked).
//!
//! The rules, from DynamoDB's capacity documentation:
//! - a write costs 1 unit per KB (rounded up) of the larger of the item's
//!   old and new images;
//! - a write inside a `TransactWriteItems` costs twice that; a
//!   `ConditionCheck` is counted like a transactional write of the item it
//!   checks;
//! - each global secondary index entry written costs 1 unit per KB of its
//!   projection, inside a transaction or not (the index is updated after
//!   the commit; captures against DynamoDB report a transactional put of an
//!   indexed item as table 2, index 1): a new entry, a removed entry, and an
//!   entry whose projected attributes changed; a changed index key is a
//!   removal and a new entry; an entry left as it was costs nothing.
//!
//! Not counted: failed conditional writes (1 unit each on DynamoDB), which
//! the measured operations make only when they lose a race.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use api::services::app::App;
use api::store::stream::{images_of, TableStream};
use api::store::{Item, Store};
use aws_sdk_dynamodb::config::interceptors::BeforeSerializationInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsInput;
use aws_sdk_dynamodb::types::{
    AttributeValue, ProjectionType, StreamSpecification, StreamViewType,
};

/// A primary key: `pk` and `sk`.
type Key = (String, String);

/// What the transactions of one measured operation named (sets: a
/// transaction retried after a conflict names its items again).
#[derive(Debug, Default)]
struct TxLog {
    written: HashSet<Key>,
    checked: HashSet<Key>,
}

/// SDK interceptor that notes the items of every `TransactWriteItems`.
#[derive(Debug, Clone)]
struct NoteTransactions(Arc<Mutex<TxLog>>);

fn key_of(item: &std::collections::HashMap<String, AttributeValue>) -> Key {
    let s = |name: &str| {
        item.get(name)
            .and_then(|v| v.as_s().ok())
            .cloned()
            .unwrap_or_default()
    };
    (s("pk"), s("sk"))
}

impl Intercept for NoteTransactions {
    fn name(&self) -> &'static str {
        "NoteTransactions"
    }

    fn read_before_execution(
        &self,
        ctx: &BeforeSerializationInterceptorContextRef<'_>,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(input) = ctx.input().downcast_ref::<TransactWriteItemsInput>() else {
            return Ok(());
        };
        let mut log = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for action in input.transact_items() {
            if let Some(p) = action.put() {
                log.written.insert(key_of(p.item()));
            } else if let Some(u) = action.update() {
                log.written.insert(key_of(u.key()));
            } else if let Some(d) = action.delete() {
                log.written.insert(key_of(d.key()));
            } else if let Some(c) = action.condition_check() {
                log.checked.insert(key_of(c.key()));
            }
        }
        Ok(())
    }
}

/// Which attributes an index entry holds beside its keys.
#[derive(Debug)]
enum Projection {
    All,
    KeysOnly,
    Include(Vec<String>),
}

/// One global secondary index of the table.
#[derive(Debug)]
struct IndexDef {
    name: String,
    pk: String,
    sk: String,
    projection: Projection,
}

/// The units one operation wrote: in all, and by item kind and index.
#[derive(Debug, Clone, Default)]
pub struct Units {
    pub total: f64,
    pub parts: BTreeMap<String, f64>,
}

impl Units {
    fn add(&mut self, part: String, units: f64) {
        if units > 0.0 {
            self.total += units;
            *self.parts.entry(part).or_default() += units;
        }
    }

    /// `kind part units, ...`, largest first.
    pub fn breakdown(&self) -> String {
        let mut parts: Vec<(&String, &f64)> = self.parts.iter().collect();
        parts.sort_by(|a, b| b.1.total_cmp(a.1).then(a.0.cmp(b.0)));
        parts
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Counts what each measured operation writes.
pub struct Meter {
    store: Store,
    stream: TableStream,
    log: Arc<Mutex<TxLog>>,
    indexes: Vec<IndexDef>,
}

impl Meter {
    /// Switches the bench table's stream to old and new images and returns
    /// the store to send requests through (its client notes transactions).
    pub async fn open(app: &App) -> (Meter, Store) {
        let client = app.store.client();
        let described = client
            .describe_table()
            .table_name(app.store.table())
            .send()
            .await
            .expect("the bench table");
        let indexes = described
            .table()
            .map(|t| t.global_secondary_indexes())
            .unwrap_or_default()
            .iter()
            .map(index_def)
            .collect();
        let log = Arc::new(Mutex::new(TxLog::default()));
        let noted = aws_sdk_dynamodb::Client::from_conf(
            client
                .config()
                .to_builder()
                .interceptor(NoteTransactions(log.clone()))
                .build(),
        );
        let store = app.store.with_client(noted);
        let meter = Meter {
            store: store.clone(),
            stream: fresh_stream(app).await,
            log,
            indexes,
        };
        (meter, store)
    }

    /// Starts again on a new stream: what was written before (a bulk seed,
    /// which DynamoDB Local's stream reads slowly) is never read.
    pub async fn skip_written(&mut self, app: &App) {
        self.stream = fresh_stream(app).await;
    }

    /// Reads the stream to its end: the changes before a measured operation.
    async fn drain(&mut self) -> Vec<(Option<Item>, Option<Item>)> {
        let mut changes = Vec::new();
        loop {
            self.stream.discover().await.expect("stream shards");
            let (records, failure) = self.stream.read().await;
            if let Some(e) = failure {
                panic!("stream read: {e}");
            }
            if records.is_empty() {
                return changes;
            }
            changes.extend(records.iter().map(images_of));
        }
    }

    /// Starts counting an operation.
    pub async fn start(&mut self) {
        self.drain().await;
        *self.log.lock().unwrap_or_else(|e| e.into_inner()) = TxLog::default();
    }

    /// What was written since `start`.
    pub async fn finish(&mut self) -> Units {
        let changes = self.drain().await;
        let log = std::mem::take(&mut *self.log.lock().unwrap_or_else(|e| e.into_inner()));
        let mut units = Units::default();
        for (old, new) in &changes {
            let Some(image) = new.as_ref().or(old.as_ref()) else {
                continue;
            };
            let key = key_of(image);
            let factor = if log.written.contains(&key) { 2.0 } else { 1.0 };
            let kind = kind_of(&key);
            let size = item_size(old).max(item_size(new));
            units.add(format!("{kind} item"), factor * kb(size));
            for idx in &self.indexes {
                units.add(format!("{kind} {}", idx.name), idx.units(old, new));
            }
        }
        for key in &log.checked {
            let item = self
                .store
                .get_item(&key.0, &key.1)
                .await
                .expect("a checked item");
            units.add(
                format!("{} check", kind_of(key)),
                2.0 * kb(item_size(&item)),
            );
        }
        units
    }
}

/// A new stream of old and new images on the bench table, and its reader.
async fn fresh_stream(app: &App) -> TableStream {
    for (enabled, view) in [(false, None), (true, Some(StreamViewType::NewAndOldImages))] {
        let spec = StreamSpecification::builder()
            .stream_enabled(enabled)
            .set_stream_view_type(view)
            .build()
            .expect("stream specification");
        app.store
            .client()
            .update_table()
            .table_name(app.store.table())
            .stream_specification(spec)
            .send()
            .await
            .expect("the bench table's stream switched");
    }
    TableStream::open(&app.config, &app.store)
        .await
        .expect("the bench table's stream")
}

fn index_def(g: &aws_sdk_dynamodb::types::GlobalSecondaryIndexDescription) -> IndexDef {
    let key = |n: usize| {
        g.key_schema()
            .get(n)
            .map(|k| k.attribute_name().to_string())
            .unwrap_or_default()
    };
    let p = g.projection();
    let projection = match p.and_then(|p| p.projection_type()) {
        Some(ProjectionType::KeysOnly) => Projection::KeysOnly,
        Some(ProjectionType::Include) => Projection::Include(
            p.map(|p| p.non_key_attributes().to_vec())
                .unwrap_or_default(),
        ),
        _ => Projection::All,
    };
    IndexDef {
        name: g.index_name().unwrap_or_default().to_string(),
        pk: key(0),
        sk: key(1),
        projection,
    }
}

impl IndexDef {
    /// The entry's key in an image, if the image is in the index.
    fn key(&self, image: &Option<Item>) -> Option<(AttributeValue, AttributeValue)> {
        let image = image.as_ref()?;
        Some((image.get(&self.pk)?.clone(), image.get(&self.sk)?.clone()))
    }

    /// The size of an image's entry.
    fn entry_size(&self, image: &Option<Item>) -> usize {
        let Some(image) = image else { return 0 };
        let keys = ["pk", "sk", self.pk.as_str(), self.sk.as_str()];
        image
            .iter()
            .filter(|(name, _)| match &self.projection {
                Projection::All => true,
                Projection::KeysOnly => keys.contains(&name.as_str()),
                Projection::Include(more) => {
                    keys.contains(&name.as_str()) || more.iter().any(|m| m == *name)
                }
            })
            .map(|(name, v)| name.len() + value_size(v))
            .sum()
    }

    /// Whether the entry's projected attributes differ between the images.
    fn changed(&self, old: &Option<Item>, new: &Option<Item>) -> bool {
        let (Some(old), Some(new)) = (old, new) else {
            return true;
        };
        let differs = |name: &str| old.get(name) != new.get(name);
        match &self.projection {
            Projection::All => old != new,
            Projection::KeysOnly => false,
            Projection::Include(more) => more.iter().any(|m| differs(m)),
        }
    }

    /// Units this index's entries cost for one change of an item.
    fn units(&self, old: &Option<Item>, new: &Option<Item>) -> f64 {
        match (self.key(old), self.key(new)) {
            (None, None) => 0.0,
            (Some(a), Some(b)) if a == b => {
                if self.changed(old, new) {
                    kb(self.entry_size(old).max(self.entry_size(new)))
                } else {
                    0.0
                }
            }
            (Some(_), Some(_)) => kb(self.entry_size(old)) + kb(self.entry_size(new)),
            (Some(_), None) => kb(self.entry_size(old)),
            (None, Some(_)) => kb(self.entry_size(new)),
        }
    }
}

/// Units for a size in bytes: 1 per KB, rounded up, at least 1.
fn kb(size: usize) -> f64 {
    size.div_ceil(1024).max(1) as f64
}

/// A record kind from its key: the id's prefix (`cnv`, `evt`) or the
/// key's first word (`CODE`, `RL`), and the sort key's when it is not `R`;
/// a tenant's partition of records (`<tenant>#EVT`) by its tag (`evt`).
fn kind_of((pk, sk): &Key) -> String {
    let word = |s: &str| s.split(['_', '#']).next().unwrap_or_default().to_string();
    let tenant_tag = pk
        .strip_prefix("acct_")
        .and_then(|rest| rest.rsplit_once('#'))
        .map(|(_, tag)| tag.to_lowercase());
    if let (Some(tag), false) = (tenant_tag, sk == "R") {
        return tag;
    }
    if sk == "R" {
        word(pk)
    } else {
        format!("{}/{}", word(pk), word(sk))
    }
}

/// An item's size as DynamoDB counts it: each attribute's name and value.
fn item_size(item: &Option<Item>) -> usize {
    item.as_ref()
        .map(|i| i.iter().map(|(k, v)| k.len() + value_size(v)).sum())
        .unwrap_or(0)
}

fn value_size(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => number_size(n),
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Ss(v) => v.iter().map(String::len).sum(),
        AttributeValue::Ns(v) => v.iter().map(|n| number_size(n)).sum(),
        AttributeValue::Bs(v) => v.iter().map(|b| b.as_ref().len()).sum(),
        AttributeValue::L(l) => 3 + l.iter().map(|x| 1 + value_size(x)).sum::<usize>(),
        AttributeValue::M(m) => {
            3 + m
                .iter()
                .map(|(k, x)| 1 + k.len() + value_size(x))
                .sum::<usize>()
        }
        _ => 1,
    }
}

/// A number's size: about one byte per two significant digits, plus one.
fn number_size(n: &str) -> usize {
    let digits: String = n.chars().filter(char::is_ascii_digit).collect();
    let significant = digits.trim_start_matches('0').trim_end_matches('0').len();
    significant.div_ceil(2) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(pairs: &[(&str, &str)]) -> Option<Item> {
        Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), AttributeValue::S(v.to_string())))
                .collect(),
        )
    }

    fn gsi(projection: Projection) -> IndexDef {
        IndexDef {
            name: "GSI3".into(),
            pk: "gsi3pk".into(),
            sk: "gsi3sk".into(),
            projection,
        }
    }

    #[test]
    fn index_entries_cost_what_changes_in_them() {
        let old = item(&[
            ("pk", "cnv_1"),
            ("sk", "R"),
            ("gsi3pk", "ST#PENDING"),
            ("gsi3sk", "1"),
            ("note", "a"),
        ]);
        let moved = item(&[
            ("pk", "cnv_1"),
            ("sk", "R"),
            ("gsi3pk", "ST#APPROVED"),
            ("gsi3sk", "1"),
            ("note", "a"),
        ]);
        let noted = item(&[
            ("pk", "cnv_1"),
            ("sk", "R"),
            ("gsi3pk", "ST#PENDING"),
            ("gsi3sk", "1"),
            ("note", "b"),
        ]);
        let out = item(&[("pk", "cnv_1"), ("sk", "R"), ("note", "a")]);
        // A moved key is a removal and an entry, whatever the projection.
        assert_eq!(gsi(Projection::All).units(&old, &moved), 2.0);
        assert_eq!(gsi(Projection::KeysOnly).units(&old, &moved), 2.0);
        // A changed attribute rewrites an ALL entry, not a KEYS_ONLY one.
        assert_eq!(gsi(Projection::All).units(&old, &noted), 1.0);
        assert_eq!(gsi(Projection::KeysOnly).units(&old, &noted), 0.0);
        assert_eq!(
            gsi(Projection::Include(vec!["note".into()])).units(&old, &noted),
            1.0
        );
        assert_eq!(
            gsi(Projection::Include(vec!["other".into()])).units(&old, &noted),
            0.0
        );
        // Leaving or joining the index is one entry; an item never in it, none.
        assert_eq!(gsi(Projection::All).units(&old, &out), 1.0);
        assert_eq!(gsi(Projection::All).units(&None, &old), 1.0);
        assert_eq!(gsi(Projection::All).units(&None, &out), 0.0);
    }

    #[test]
    fn sizes_round_up_per_kb() {
        assert_eq!(kb(0), 1.0);
        assert_eq!(kb(1024), 1.0);
        assert_eq!(kb(1025), 2.0);
        assert_eq!(number_size("49.99"), 3);
        assert_eq!(number_size("1000"), 2);
        assert_eq!(item_size(&item(&[("pk", "abc")])), 5);
        assert_eq!(kind_of(&("CODE#t#x".into(), "GUARD".into())), "CODE/GUARD");
        assert_eq!(kind_of(&("cnv_1".into(), "R".into())), "cnv");
        assert_eq!(
            kind_of(&(
                "acct_1#test#EVT".into(),
                "2026-11-26T10:00:00.000Z#evt_1".into()
            )),
            "evt"
        );
    }
}
