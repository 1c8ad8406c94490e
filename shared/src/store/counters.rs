//! Counters: one number per item (`count`), started from zero by `ADD`, and
//! removed by DynamoDB's TTL after their window: rate-limit windows and the
//! monthly conversion quota.

use crate::error::Result;
use crate::store::keys::RECORD_SK;
use crate::store::table::TTL_ATTRIBUTE;
use crate::store::update::{UpdateExpr, Updated};
use crate::store::{number_value, Item, Store};

/// The attribute holding a counter's value.
const COUNT: &str = "count";

/// Adds one to a counter, setting its expiry (epoch seconds) on first use;
/// with `cap`, only while the count is below it.
pub fn increment(expires_at: i64, cap: Option<u64>) -> UpdateExpr {
    let u = UpdateExpr::new()
        .add(COUNT, number_value(1))
        .set_if_absent(TTL_ATTRIBUTE, number_value(expires_at));
    match cap {
        Some(cap) => u.when_absent_or_below(COUNT, number_value(cap)),
        None => u,
    }
}

/// Adds one to the counter at `pk` and returns its new value.
pub async fn hit(store: &Store, pk: &str, expires_at: i64) -> Result<u64> {
    let count = match store
        .update(pk, RECORD_SK, &increment(expires_at, None))
        .await?
    {
        Updated::Applied(item) => value(&item),
        Updated::Refused(_) => None,
    };
    Ok(count.unwrap_or(1))
}

fn value(item: &Item) -> Option<u64> {
    item.get(COUNT)?.as_n().ok()?.parse().ok()
}
