//! Reads of the sparse work index (`GSI5`): oldest first, bounded, and
//! eventually consistent, so callers re-read the records they act on.

use std::collections::HashMap;

use crate::keys::Index;
use crate::{string_value, Item, Store};
use domain::error::Result;

/// Which sort keys of a work partition to read.
#[derive(Debug, Clone, Copy)]
pub enum WorkRange<'a> {
    All,
    /// At most this sort key (work due by a time).
    UpTo(&'a str),
    /// After this sort key (resuming a walk through a partition).
    After(&'a str),
}

impl Store {
    /// Up to `limit` items of a GSI5 partition, oldest first, whose sort key
    /// is in `range`.
    pub async fn query_work(
        &self,
        partition: &str,
        range: WorkRange<'_>,
        limit: usize,
    ) -> Result<Vec<Item>> {
        let idx = Index::Gsi5;
        let mut names = HashMap::from([("#pk".to_string(), idx.pk().to_string())]);
        let mut values: Item = HashMap::from([(":pk".to_string(), string_value(partition))]);
        let mut cond = "#pk = :pk".to_string();
        let bound = match range {
            WorkRange::All => None,
            WorkRange::UpTo(hi) => Some(("<=", hi)),
            WorkRange::After(lo) => Some((">", lo)),
        };
        if let Some((op, v)) = bound {
            cond.push_str(&format!(" AND #sk {op} :v"));
            names.insert("#sk".into(), idx.sk().into());
            values.insert(":v".into(), string_value(v));
        }
        let mut items = Vec::new();
        let mut start = None;
        while items.len() < limit {
            let page = i32::try_from((limit - items.len()).min(1000)).unwrap_or(1000);
            let q = self
                .client()
                .query()
                .table_name(self.table())
                .index_name(idx.name())
                .key_condition_expression(&cond)
                .set_expression_attribute_names(Some(names.clone()))
                .set_expression_attribute_values(Some(values.clone()))
                .limit(page);
            let (found, next) = self.query_step(q, start.take()).await?;
            items.extend(found);
            start = next;
            if start.is_none() {
                break;
            }
        }
        Ok(items)
    }
}
