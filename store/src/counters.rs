//! Counters: one number per item (`count`), started from zero by `ADD`, and
//! removed by DynamoDB's TTL after their window: rate-limit windows and the
//! monthly conversion quota.

use chrono::{DateTime, Utc};

use crate::attrs::{self, COUNT};
use crate::keys::RECORD_SK;
use crate::update::{UpdateExpr, Updated};
use crate::{number_value, Item, Store};
use domain::error::Result;

/// Hourly counters (risk) outlive their clock hour by this long.
const HOUR_KEPT_SECONDS: i64 = 2 * 3600;

/// The clock hour (UTC) of `at` as a key part (`yyyy-mm-ddThh`), and when
/// an hourly counter of it expires: two hours after the hour ends, or after
/// `now` when that is later (a back-dated hour).
pub fn hour_window(at: DateTime<Utc>, now: DateTime<Utc>) -> (String, i64) {
    let hour_end = |t: DateTime<Utc>| t.timestamp() - t.timestamp().rem_euclid(3600) + 3600;
    let expires_at = hour_end(at).max(hour_end(now)) + HOUR_KEPT_SECONDS;
    (at.format("%Y-%m-%dT%H").to_string(), expires_at)
}

/// Adds one to a counter; with `cap`, only while the count is below it.
pub fn add_one(cap: Option<u64>) -> UpdateExpr {
    add_one_to(COUNT, cap)
}

/// Adds one to the count `attr` of an item; with `cap`, only while it is
/// below it (an absent count is 0).
pub fn add_one_to(attr: &str, cap: Option<u64>) -> UpdateExpr {
    let u = UpdateExpr::new().add(attr, number_value(1));
    match cap {
        Some(cap) => u.when_absent_or_below(attr, number_value(cap)),
        None => u,
    }
}

/// Adds one to a counter, setting its expiry (epoch seconds) on first use;
/// with `cap`, only while the count is below it.
pub fn increment(expires_at: i64, cap: Option<u64>) -> UpdateExpr {
    add_one(cap).set_if_absent(attrs::TTL, number_value(expires_at))
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

/// A counter item's `count` (absent while zero).
pub fn value(item: &Item) -> Option<u64> {
    item.get(COUNT)?.as_n().ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_hourly_counter_outlives_its_hour_or_a_later_recording() {
        let at = domain::timestamp::parse_datetime("2026-11-25T10:59:59Z").unwrap();
        let end = domain::timestamp::parse_datetime("2026-11-25T11:00:00Z").unwrap();
        let (hour, expires) = hour_window(at, at);
        assert_eq!(hour, "2026-11-25T10");
        assert_eq!(expires, end.timestamp() + 2 * 3600);
        let later = end + chrono::Duration::hours(5);
        let (hour, expires) = hour_window(at, later);
        assert_eq!(
            hour, "2026-11-25T10",
            "the hour counted is still the payment's"
        );
        assert_eq!(
            expires,
            (end + chrono::Duration::hours(6)).timestamp() + 2 * 3600
        );
    }
}
