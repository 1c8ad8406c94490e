//! Query-based pages: newest first, offset or opaque cursor, optional filters.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::ReturnConsumedCapacity;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use crate::domain::risk::{Risk, RiskLevel};
use crate::error::{Error, Result};
use crate::store::keys::Index;
use crate::store::{string_of, string_value, Item, Store};

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

    /// `attr = value`.
    pub fn eq(mut self, attr: &str, value: &str) -> Self {
        let i = self.values.len();
        self.clauses.push(format!("#f{i} = :f{i}"));
        self.names.insert(format!("#f{i}"), attr.to_string());
        self.values.insert(format!(":f{i}"), string_value(value));
        self
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
    fn absent(mut self, attr: &str) -> Self {
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

/// A list request against one index partition.
#[derive(Debug, Clone)]
pub struct ListQuery {
    pub index: Index,
    pub pk: String,
    /// Inclusive sort-key bounds (the index sort keys are time-ordered).
    pub sk_between: Option<(String, String)>,
    pub filter: Filter,
}

impl ListQuery {
    /// Every record in an index partition.
    pub fn new(index: Index, pk: impl Into<String>) -> Self {
        ListQuery {
            index,
            pk: pk.into(),
            sk_between: None,
            filter: Filter::new(),
        }
    }
}

fn encode_cursor(index: Index, item: &Item) -> Option<String> {
    let mut map = serde_json::Map::new();
    for name in ["pk", "sk", index.pk(), index.sk()] {
        map.insert(
            name.to_string(),
            serde_json::Value::String(string_of(item, name)?.to_string()),
        );
    }
    Some(URL_SAFE_NO_PAD.encode(serde_json::to_vec(&map).ok()?))
}

fn decode_cursor(index: Index, pk: &str, cursor: &str) -> Result<Item> {
    let bad = || {
        Error::invalid(
            &["cursor"],
            "invalid_cursor",
            "cursor is not one this list returned",
        )
    };
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    let map: HashMap<String, String> = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    let expected = ["pk", "sk", index.pk(), index.sk()];
    if map.len() != expected.len() || expected.iter().any(|k| !map.contains_key(*k)) {
        return Err(bad());
    }
    // A cursor only positions inside the caller's own partition.
    if map.get(index.pk()).map(String::as_str) != Some(pk) {
        return Err(bad());
    }
    Ok(map.into_iter().map(|(k, v)| (k, string_value(v))).collect())
}

impl Store {
    /// Reads one page of an index partition, newest first.
    pub async fn query_page(&self, q: &ListQuery, page: &PageRequest) -> Result<Page<Item>> {
        // The query layer caps both; checked anyway, since a wrap here would
        // turn a request into a panic or a wrong page.
        let shown = page
            .offset
            .checked_add(page.limit)
            .filter(|n| *n <= MAX_OFFSET + MAX_LIMIT)
            .ok_or_else(|| {
                Error::invalid(
                    &["offset"],
                    "too_big",
                    format!("offset must be at most {MAX_OFFSET}; page deeper with cursor"),
                )
            })?;
        let want = shown + 1;
        let mut start = match &page.cursor {
            Some(c) => Some(decode_cursor(q.index, &q.pk, c)?),
            None => None,
        };
        let mut names = HashMap::from([("#pk".to_string(), q.index.pk().to_string())]);
        let mut values: Item = HashMap::from([(":pk".to_string(), string_value(q.pk.clone()))]);
        let mut key_cond = "#pk = :pk".to_string();
        if let Some((lo, hi)) = &q.sk_between {
            key_cond.push_str(" AND #sk BETWEEN :lo AND :hi");
            names.insert("#sk".into(), q.index.sk().into());
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
            let out = self
                .client()
                .query()
                .table_name(self.table())
                .index_name(q.index.name())
                .key_condition_expression(&key_cond)
                .set_filter_expression(filter_expr.clone())
                .set_expression_attribute_names(Some(names.clone()))
                .set_expression_attribute_values(Some(values.clone()))
                .scan_index_forward(false)
                .limit(i32::try_from(batch).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start.take())
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await?;
            self.metrics().record_read_total(out.consumed_capacity());
            read.extend(out.items.unwrap_or_default());
            start = out.last_evaluated_key;
            if read.len() >= want || start.is_none() {
                break;
            }
        }
        let has_more = read.len() > shown;
        let items: Vec<Item> = read
            .into_iter()
            .skip(page.offset)
            .take(page.limit)
            .collect();
        let next_cursor = if has_more {
            items.last().and_then(|last| encode_cursor(q.index, last))
        } else {
            None
        };
        Ok(Page {
            items,
            has_more,
            next_cursor,
        })
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
        let c = encode_cursor(Index::Gsi1, &item).unwrap();
        let back = decode_cursor(Index::Gsi1, "acct_1#live#CMP", &c).unwrap();
        assert_eq!(back.get("gsi1sk"), Some(&string_value("cmp_1")));
        assert!(decode_cursor(Index::Gsi1, "acct_2#live#CMP", &c).is_err());
        assert!(decode_cursor(Index::Gsi2, "acct_1#live#CMP", &c).is_err());
        assert!(decode_cursor(Index::Gsi1, "acct_1#live#CMP", "not-a-cursor!").is_err());
    }
}
