//! Items read by key in BatchGetItem calls, for the postback's reads and
//! the claims.

use std::collections::{HashMap, HashSet};

use crate::{attrs, string_of, Item, Store};
use domain::error::Result;

/// An item's key: partition and sort key.
pub(super) type Key = (String, String);

pub(super) fn key(pk: impl Into<String>, sk: &str) -> Key {
    (pk.into(), sk.to_string())
}

/// The items read by key, de-duplicated, in one BatchGetItem per 100 keys
/// at once (none for no key; a payment may name many ids).
pub(super) async fn batch(store: &Store, keys: Vec<Key>) -> Result<HashMap<Key, Item>> {
    let mut seen = HashSet::new();
    let keys: Vec<Key> = keys
        .into_iter()
        .filter(|k| seen.insert(k.clone()))
        .collect();
    let reads = keys.chunks(100).map(|chunk| store.batch_get(chunk));
    let read = futures::future::try_join_all(reads).await?;
    Ok(read
        .into_iter()
        .flatten()
        .filter_map(|item| {
            let k = key(string_of(&item, attrs::PK)?, string_of(&item, attrs::SK)?);
            Some((k, item))
        })
        .collect())
}
