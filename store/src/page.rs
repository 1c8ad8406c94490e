//! Query-based pages: newest first, offset or opaque cursor, optional filters.

use std::collections::HashMap;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Utc};

use crate::attrs;
use crate::keys::{self, Index};
use crate::{string_of, string_value, Item, Store};
use domain::error::{Error, Result};
use domain::risk::{Risk, RiskLevel};
use domain::status::Status;
use domain::timestamp;

/// Page size when the caller gives none.
pub const DEFAULT_LIMIT: usize = 20;
/// Largest page; larger requests are clamped.
pub const MAX_LIMIT: usize = 100;
/// Largest `offset`: an offset is paid for by reading every skipped record, so
/// deeper pages go through `cursor`.
pub const MAX_OFFSET: usize = 10_000;

/// What page the caller asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    pub limit: usize,
    pub offset: usize,
    pub cursor: Option<String>,
}

impl Default for PageRequest {
    fn default() -> Self {
        PageRequest {
            limit: DEFAULT_LIMIT,
            offset: 0,
            cursor: None,
        }
    }
}

/// One page of results.
#[derive(Debug, Clone)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub has_more: bool,
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    /// Converts every item, keeping the paging facts.
    pub fn try_map<U>(self, f: impl FnMut(T) -> Result<U>) -> Result<Page<U>> {
        Ok(Page {
            items: self.items.into_iter().map(f).collect::<Result<Vec<U>>>()?,
            has_more: self.has_more,
            next_cursor: self.next_cursor,
        })
    }
}

/// A flagged record's risk level beside its flags, for the `risk_level`
/// filter (absent: NONE).
const RISK_LEVEL: &str = "riskLevel";

/// Marks a flagged record's item with its risk level.
pub fn mark_risk(item: &mut Item, risk: &Risk) {
    if !risk.is_clear() {
        item.insert(RISK_LEVEL.into(), string_value(risk.level.as_str()));
    }
}

/// A filter applied after the key condition (still a Query, never a Scan).
#[derive(Debug, Clone, Default)]
pub struct Filter {
    clauses: Vec<String>,
    names: HashMap<String, String>,
    values: Item,
}

impl Filter {
    /// No clauses.
    pub fn new() -> Self {
        Self::default()
    }

    /// The filter as one text, the same for the same clauses and values
    /// (whatever the SDK's own formatting of a value).
    fn fingerprint(&self) -> String {
        use aws_sdk_dynamodb::types::AttributeValue as V;
        let mut names: Vec<_> = self.names.iter().collect();
        names.sort();
        let text = |v: &V| match v {
            V::S(s) => format!("S:{s}"),
            V::N(n) => format!("N:{n}"),
            V::Bool(b) => format!("B:{b}"),
            other => format!("{other:?}"),
        };
        let mut values: Vec<String> = self
            .values
            .iter()
            .map(|(k, v)| format!("{k}={}", text(v)))
            .collect();
        values.sort();
        format!("{:?}{names:?}{values:?}", self.clauses)
    }

    /// `attr = value`.
    pub fn eq(mut self, attr: &str, value: &str) -> Self {
        let i = self.values.len();
        self.clauses.push(format!("#f{i} = :f{i}"));
        self.names.insert(format!("#f{i}"), attr.to_string());
        self.values.insert(format!(":f{i}"), string_value(value));
        self
    }

    /// The records that stand in a list partition as well.
    pub fn in_list(self, (index, pk): crate::keys::Partition) -> Self {
        self.eq(index.pk(), &pk)
    }

    /// The records in `status` (a list's status filter).
    pub fn status<S: Status>(self, status: S) -> Self {
        self.eq(attrs::STATUS, status.name())
    }

    /// `attr op number` for numeric attributes (`>=`, `<=`).
    pub fn num(mut self, attr: &str, op: &str, value: &str) -> Self {
        let i = self.values.len();
        self.clauses.push(format!("#f{i} {op} :f{i}"));
        self.names.insert(format!("#f{i}"), attr.to_string());
        self.values
            .insert(format!(":f{i}"), super::number_value(value));
        self
    }

    /// Records of a risk level (see [`mark_risk`]).
    pub fn risk_level(self, level: RiskLevel) -> Self {
        match level {
            RiskLevel::None => self.absent(RISK_LEVEL),
            level => self.eq(RISK_LEVEL, level.as_str()),
        }
    }

    /// `attribute_not_exists(attr)`.
    pub fn absent(mut self, attr: &str) -> Self {
        let i = self.names.len();
        self.clauses.push(format!("attribute_not_exists(#a{i})"));
        self.names.insert(format!("#a{i}"), attr.to_string());
        self
    }

    /// `begins_with(attr, prefix)`.
    pub fn begins_with(mut self, attr: &str, prefix: &str) -> Self {
        let i = self.values.len();
        self.clauses.push(format!("begins_with(#f{i}, :f{i})"));
        self.names.insert(format!("#f{i}"), attr.to_string());
        self.values.insert(format!(":f{i}"), string_value(prefix));
        self
    }

    /// True when no clause was added.
    pub fn is_empty(&self) -> bool {
        self.clauses.is_empty()
    }
}

/// A list request against one partition: of an index, or of the table's
/// own keys.
#[derive(Debug, Clone)]
pub struct ListQuery {
    /// The index read; `None` reads the table's own `pk`/`sk`.
    pub index: Option<Index>,
    pub pk: String,
    /// Inclusive sort-key bounds (the index sort keys are time-ordered).
    pub sk_between: Option<(String, String)>,
    pub filter: Filter,
    /// The table `pk` the records of an index list share, when it is an
    /// internal key rather than the record's id (events by type): a cursor
    /// of such a record leaves it out and its decoding puts it back (a
    /// record of another layout names its own).
    pub table_pk: Option<String>,
}

/// The least and the greatest time-ordered sort key: an open window's ends.
const OPEN: (&str, &str) = ("0", "~");

impl ListQuery {
    /// Keeps the sort keys `<timestamp>#<id>` inside a time window, both
    /// ends inclusive; a window open at both ends leaves the query whole.
    pub fn within(mut self, from: Option<DateTime<Utc>>, to: Option<DateTime<Utc>>) -> Self {
        if from.is_some() || to.is_some() {
            self.sk_between = Some((
                from.map_or(OPEN.0.to_string(), |t| timestamp::format(&t)),
                to.map_or(OPEN.1.to_string(), |t| keys::up_to(&t)),
            ));
        }
        self
    }

    /// The sort-key range it reads: its window, else the whole order.
    fn range(&self) -> (String, String) {
        self.sk_between
            .clone()
            .unwrap_or((OPEN.0.to_string(), OPEN.1.to_string()))
    }

    /// Every record in an index partition.
    pub fn new(index: Index, pk: impl Into<String>) -> Self {
        ListQuery {
            index: Some(index),
            pk: pk.into(),
            sk_between: None,
            filter: Filter::new(),
            table_pk: None,
        }
    }

    /// Every record in a list partition.
    pub fn of((index, pk): crate::keys::Partition) -> Self {
        Self::new(index, pk)
    }

    /// The same list, of records that all share the table `pk` `shared`.
    pub fn sharing_table_pk(mut self, shared: impl Into<String>) -> Self {
        self.table_pk = Some(shared.into());
        self
    }

    /// Every item of a partition of the table itself.
    pub fn on_table(pk: impl Into<String>) -> Self {
        ListQuery {
            index: None,
            pk: pk.into(),
            sk_between: None,
            filter: Filter::new(),
            table_pk: None,
        }
    }

    /// The partition- and sort-key attributes this query reads.
    fn key_names(&self) -> (&'static str, &'static str) {
        match self.index {
            Some(i) => (i.pk(), i.sk()),
            None => (attrs::PK, attrs::SK),
        }
    }
}

/// The cursor of the page that starts after `item`, a record of `q`'s list
/// (for a reader that stops within a page).
pub fn cursor_after(q: &ListQuery, item: &Item) -> Option<String> {
    encode_cursor(q, item)
}

/// A cursor holds what the query cannot derive: the last record's table
/// keys (through an index: its `sk`, and its `pk` unless the list names it)
/// and its sort position, with a fingerprint of the list: its index,
/// partition, window and filter. The partition itself (an internal key naming the
/// account and the layout) is the caller's own and is added back on decode,
/// so no cursor shows it; the fingerprint refuses a cursor of another list,
/// window or filter.
fn encode_cursor(q: &ListQuery, item: &Item) -> Option<String> {
    let (_, isk) = q.key_names();
    let mut values = vec![list_print(q)];
    // A record of the shared pk leaves it out; one of another layout (an
    // older event) names its own.
    let shared = q
        .table_pk
        .as_deref()
        .is_some_and(|pk| string_of(item, attrs::PK) == Some(pk));
    let names: &[&str] = match (q.index, shared) {
        (Some(_), false) => &[attrs::PK, attrs::SK, isk],
        (Some(_), true) => &[attrs::SK, isk],
        (None, _) => &[attrs::SK],
    };
    for name in names {
        values.push(string_of(item, name)?.to_string());
    }
    Some(cursor_of(&values))
}

/// The cursor text of its values: base64url of their JSON array.
fn cursor_of(values: &[String]) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::Value::from(values).to_string())
}

/// The first 16 hex digits of SHA-256 over the list's index, partition,
/// window and filter.
fn list_print(q: &ListQuery) -> String {
    use sha2::{Digest, Sha256};
    let (ipk, _) = q.key_names();
    let (lo, hi) = q.sk_between.clone().unwrap_or_default();
    let filter = q.filter.fingerprint();
    let digest = Sha256::digest(format!("{ipk}\n{}\n{lo}\n{hi}\n{filter}", q.pk).as_bytes());
    hex::encode(&digest[..8])
}

fn bad_cursor() -> Error {
    Error::invalid(
        &["cursor"],
        "invalid_cursor",
        "cursor is not one this list returned",
    )
}

/// Longest key value a cursor may carry (DynamoDB's sort key limit).
const MAX_KEY_BYTES: usize = 1024;

/// A cursor's values, checked: its fingerprint is this list's, and each key
/// is one the table could hold and, for the position, inside the window
/// (anything else would be DynamoDB's validation error, not the caller's).
fn cursor_values(q: &ListQuery, cursor: &str) -> Result<Vec<String>> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad_cursor())?;
    let mut values: Vec<String> = serde_json::from_slice(&bytes).map_err(|_| bad_cursor())?;
    if values.is_empty() || values.remove(0) != list_print(q) {
        return Err(bad_cursor());
    }
    let position = values.last().ok_or_else(bad_cursor)?;
    let inside = q
        .sk_between
        .as_ref()
        .is_none_or(|(lo, hi)| lo <= position && position <= hi);
    let usable = |v: &String| !v.is_empty() && v.len() <= MAX_KEY_BYTES;
    match inside && values.iter().all(usable) {
        true => Ok(values),
        false => Err(bad_cursor()),
    }
}

/// The position a merged list's cursor holds: one value, inside the range
/// its queries read (an empty or reversed range is DynamoDB's error).
fn merged_position(first: &ListQuery, cursor: &str) -> Result<String> {
    let (lo, hi) = first.range();
    match cursor_values(first, cursor)?.as_slice() {
        [position] if lo <= *position && *position <= hi => Ok(position.clone()),
        _ => Err(bad_cursor()),
    }
}

fn decode_cursor(q: &ListQuery, cursor: &str) -> Result<Item> {
    let (ipk, isk) = q.key_names();
    let values = cursor_values(q, cursor)?;
    let keys = match (q.index, &q.table_pk, values.as_slice()) {
        (Some(_), _, [pk, sk, position]) => vec![
            (attrs::PK, pk.clone()),
            (attrs::SK, sk.clone()),
            (ipk, q.pk.clone()),
            (isk, position.clone()),
        ],
        (Some(_), Some(shared), [sk, position]) => vec![
            (attrs::PK, shared.clone()),
            (attrs::SK, sk.clone()),
            (ipk, q.pk.clone()),
            (isk, position.clone()),
        ],
        (None, _, [sk]) => vec![(attrs::PK, q.pk.clone()), (attrs::SK, sk.clone())],
        _ => return Err(bad_cursor()),
    };
    Ok(keys
        .into_iter()
        .map(|(k, v)| (k.to_string(), string_value(v)))
        .collect())
}

/// How many records the page shows, offset included; refused beyond the
/// offset cap.
fn shown_of(page: &PageRequest) -> Result<usize> {
    // The query layer caps both; checked anyway, since a wrap here would
    // turn a request into a panic or a wrong page.
    page.offset
        .checked_add(page.limit)
        .filter(|n| *n <= MAX_OFFSET + MAX_LIMIT)
        .ok_or_else(|| {
            Error::invalid(
                &["offset"],
                "too_big",
                format!("offset must be at most {MAX_OFFSET}; page deeper with cursor"),
            )
        })
}

/// The page of `read` (newest first, one more than `shown` when there are
/// more), its cursor made from its last record.
fn page_of<T>(
    read: Vec<T>,
    page: &PageRequest,
    shown: usize,
    cursor_of: impl Fn(&T) -> Option<String>,
) -> Page<T> {
    let has_more = read.len() > shown;
    let items: Vec<T> = read
        .into_iter()
        .skip(page.offset)
        .take(page.limit)
        .collect();
    let next_cursor = if has_more {
        items.last().and_then(cursor_of)
    } else {
        None
    };
    Page {
        items,
        has_more,
        next_cursor,
    }
}

impl Store {
    /// Reads one page of an index partition, newest first.
    pub async fn query_page(&self, q: &ListQuery, page: &PageRequest) -> Result<Page<Item>> {
        let shown = shown_of(page)?;
        let start = match &page.cursor {
            Some(c) => Some(decode_cursor(q, c)?),
            None => None,
        };
        let read = self.read_newest(q, start, shown + 1).await?;
        Ok(page_of(read, page, shown, |last| encode_cursor(q, last)))
    }

    /// Reads one page of two partitions that hold one list between them
    /// (records written under an older layout, and the newer), merged
    /// newest first by sort key; both are read at once, one round trip.
    /// Their sort keys are positions of one order, unique across both.
    pub async fn query_page_merged(
        &self,
        queries: [&ListQuery; 2],
        page: &PageRequest,
    ) -> Result<Page<Item>> {
        let shown = shown_of(page)?;
        let first = queries[0];
        let before = match &page.cursor {
            Some(c) => merged_position(first, c)?,
            None => String::new(),
        };
        // A cursor narrows each range to end at its position (inclusive, so
        // one more is read and the record at the position dropped).
        let narrowed = queries.map(|q| {
            let mut q = q.clone();
            if !before.is_empty() {
                let (lo, hi) = q.range();
                q.sk_between = Some((lo, hi.min(before.clone())));
            }
            q
        });
        let (a, b) = tokio::try_join!(
            self.read_newest(&narrowed[0], None, shown + 2),
            self.read_newest(&narrowed[1], None, shown + 2),
        )?;
        let position =
            |q: &ListQuery, item: &Item| string_of(item, q.key_names().1).map(str::to_string);
        let mut read: Vec<(String, Item)> = a
            .into_iter()
            .filter_map(|i| Some((position(&narrowed[0], &i)?, i)))
            .chain(
                b.into_iter()
                    .filter_map(|i| Some((position(&narrowed[1], &i)?, i))),
            )
            .filter(|(p, _)| *p != before)
            .collect();
        read.sort_by(|x, y| y.0.cmp(&x.0));
        let page = page_of(read, page, shown, |(p, _)| {
            Some(cursor_of(&[list_print(first), p.clone()]))
        });
        Ok(Page {
            items: page.items.into_iter().map(|(_, i)| i).collect(),
            has_more: page.has_more,
            next_cursor: page.next_cursor,
        })
    }

    /// Up to `want` items of a query's partition, newest first, after
    /// `start` (a page's last key).
    async fn read_newest(
        &self,
        q: &ListQuery,
        mut start: Option<Item>,
        want: usize,
    ) -> Result<Vec<Item>> {
        let (ipk, isk) = q.key_names();
        let mut names = HashMap::from([("#pk".to_string(), ipk.to_string())]);
        let mut values: Item = HashMap::from([(":pk".to_string(), string_value(q.pk.clone()))]);
        let mut key_cond = "#pk = :pk".to_string();
        if let Some((lo, hi)) = &q.sk_between {
            key_cond.push_str(" AND #sk BETWEEN :lo AND :hi");
            names.insert("#sk".into(), isk.into());
            values.insert(":lo".into(), string_value(lo.clone()));
            values.insert(":hi".into(), string_value(hi.clone()));
        }
        let filter_expr = (!q.filter.is_empty()).then(|| q.filter.clauses.join(" AND "));
        names.extend(q.filter.names.clone());
        values.extend(q.filter.values.clone());

        let mut read: Vec<Item> = Vec::new();
        loop {
            let remaining = want.saturating_sub(read.len());
            // With a filter, DynamoDB's Limit counts items before filtering: read wider.
            let batch = if filter_expr.is_some() {
                remaining.clamp(50, 1000)
            } else {
                remaining
            };
            let q = self
                .client()
                .query()
                .table_name(self.table())
                .set_index_name(q.index.map(|i| i.name().to_string()))
                .key_condition_expression(&key_cond)
                .set_filter_expression(filter_expr.clone())
                .set_expression_attribute_names(Some(names.clone()))
                .set_expression_attribute_values(Some(values.clone()))
                .scan_index_forward(false)
                .limit(i32::try_from(batch).unwrap_or(i32::MAX));
            let (found, next) = self.query_step(q, start.take()).await?;
            read.extend(found);
            start = next;
            if read.len() >= want || start.is_none() {
                break;
            }
        }
        Ok(read)
    }
}

/// The paging parameters' names in a query.
pub const PAGE_NAMES: [&str; 3] = ["limit", "offset", "cursor"];

/// The paging parameters in a route's description (`params(PageRequest,
/// ...)`): the description refers them to its shared `Limit`, `Offset` and
/// `Cursor` parameters.
impl utoipa::IntoParams for PageRequest {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        PAGE_NAMES
            .iter()
            .map(|name| {
                utoipa::openapi::path::ParameterBuilder::new()
                    .name(*name)
                    .parameter_in(utoipa::openapi::path::ParameterIn::Query)
                    .build()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_stay_in_their_partition() {
        let item: Item = HashMap::from([
            ("pk".to_string(), string_value("cmp_1")),
            ("sk".to_string(), string_value("R")),
            ("gsi1pk".to_string(), string_value("acct_1#live#CMP")),
            ("gsi1sk".to_string(), string_value("cmp_1")),
        ]);
        let q = |index, pk: &str| ListQuery::new(index, pk);
        let c = encode_cursor(&q(Index::Gsi1, "acct_1#live#CMP"), &item).unwrap();
        let back = decode_cursor(&q(Index::Gsi1, "acct_1#live#CMP"), &c).unwrap();
        assert_eq!(back.get("gsi1sk"), Some(&string_value("cmp_1")));
        assert!(decode_cursor(&q(Index::Gsi1, "acct_2#live#CMP"), &c).is_err());
        assert!(decode_cursor(&q(Index::Gsi2, "acct_1#live#CMP"), &c).is_err());
        assert!(decode_cursor(&q(Index::Gsi1, "acct_1#live#CMP"), "not-a-cursor!").is_err());
        // The partition is no part of what the caller sees.
        let shown = String::from_utf8(URL_SAFE_NO_PAD.decode(&c).unwrap()).unwrap();
        assert!(!shown.contains("acct_1"), "{shown}");
        // A list of the table itself keeps only the sort key.
        let table = ListQuery::on_table("acct_1#live#EVT");
        let c = encode_cursor(&table, &item).unwrap();
        assert_eq!(
            decode_cursor(&table, &c).unwrap().get("pk"),
            Some(&string_value("acct_1#live#EVT"))
        );
        let other = ListQuery::on_table("acct_2#live#EVT");
        assert!(decode_cursor(&other, &c).is_err());

        // Records that share an internal table pk: it stays out too.
        let event: Item = HashMap::from([
            ("pk".to_string(), string_value("acct_1#live#EVT")),
            (
                "sk".to_string(),
                string_value("2026-01-01T00:00:00.000Z#evt_1"),
            ),
            ("gsi2pk".to_string(), string_value("acct_1#live#EVT#TYPE#x")),
            (
                "gsi2sk".to_string(),
                string_value("2026-01-01T00:00:00.000Z#evt_1"),
            ),
        ]);
        let by_type = ListQuery::new(Index::Gsi2, "acct_1#live#EVT#TYPE#x")
            .sharing_table_pk("acct_1#live#EVT");
        let c = encode_cursor(&by_type, &event).unwrap();
        let shown = String::from_utf8(URL_SAFE_NO_PAD.decode(&c).unwrap()).unwrap();
        assert!(!shown.contains("acct_1"), "{shown}");
        assert_eq!(
            decode_cursor(&by_type, &c).unwrap().get("pk"),
            event.get("pk")
        );
        // An event of the older layout (pk evt_…) keeps its own pk.
        let mut older = event.clone();
        older.insert("pk".into(), string_value("evt_1"));
        older.insert("sk".into(), string_value("R"));
        let c = encode_cursor(&by_type, &older).unwrap();
        let back = decode_cursor(&by_type, &c).unwrap();
        assert_eq!(
            (back.get("pk"), back.get("sk")),
            (older.get("pk"), older.get("sk"))
        );
    }

    #[test]
    fn a_merged_lists_cursor_holds_one_position_inside_its_range() {
        let q = ListQuery::on_table("acct_1#live#EVT");
        let forge = |values: Vec<String>| cursor_of(&values);
        let print = list_print(&q);
        let ok = "2026-01-01T00:00:00.000Z#evt_1".to_string();
        assert_eq!(
            merged_position(&q, &forge(vec![print.clone(), ok.clone()])).unwrap(),
            ok
        );
        for bad in [
            vec![print.clone(), "!".into()],
            vec![print.clone(), "a".into(), ok.clone()],
            vec![print.clone(), "\u{7f}".into()],
        ] {
            assert!(merged_position(&q, &forge(bad.clone())).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_cursor_the_table_could_not_take_is_400_never_a_store_error() {
        let q = ListQuery::on_table("acct_1#live#EVT");
        let forge = |values: Vec<String>| cursor_of(&values);
        let print = list_print(&q);
        assert!(decode_cursor(&q, &forge(vec![print.clone(), "2026".into()])).is_ok());
        for bad in [
            vec![print.clone(), String::new()],
            vec![print.clone(), "x".repeat(MAX_KEY_BYTES + 1)],
            vec![print.clone()],
            vec![],
        ] {
            assert!(decode_cursor(&q, &forge(bad.clone())).is_err(), "{bad:?}");
        }
        // Another window is another list; a position outside the window is refused.
        let from = DateTime::parse_from_rfc3339("2026-02-01T00:00:00Z")
            .unwrap()
            .to_utc();
        let windowed = q.clone().within(Some(from), None);
        let c = forge(vec![print, "2026-03-01".into()]);
        assert!(decode_cursor(&windowed, &c).is_err());
        let inside = forge(vec![list_print(&windowed), "2026-03-01".into()]);
        assert!(decode_cursor(&windowed, &inside).is_ok());
        let outside = forge(vec![list_print(&windowed), "2026-01-01".into()]);
        assert!(decode_cursor(&windowed, &outside).is_err());
        // Another filter is another list too.
        let mut filtered = q.clone();
        filtered.filter = Filter::new().eq("currency", "EUR");
        assert!(decode_cursor(&filtered, &forge(vec![list_print(&q), "2026".into()])).is_err());
    }
}
