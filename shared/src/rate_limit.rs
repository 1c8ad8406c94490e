//! Fixed-window rate limits with counters in DynamoDB, so they hold across
//! every Lambda instance.

use aws_sdk_dynamodb::types::{ReturnConsumedCapacity, ReturnValue};

use crate::error::{Error, Result};
use crate::store::keys::{self, RECORD_SK};
use crate::store::{n, s, Store};

/// Length of a window in seconds.
pub const WINDOW_SECONDS: i64 = 60;

/// The limit state reported in `RateLimit-*` headers.
#[derive(Debug, Clone, Copy)]
pub struct RateState {
    pub limit: u64,
    pub remaining: u64,
    pub reset_seconds: u64,
    /// This request went past the limit.
    pub exceeded: bool,
}

impl RateState {
    /// RATE_LIMIT_EXCEEDED when this request went past the limit.
    pub fn check(&self) -> Result<()> {
        if self.exceeded {
            return Err(Error::RateLimited {
                retry_after: self.reset_seconds,
            });
        }
        Ok(())
    }
}

/// Counts one request in `scope`'s current window and reports the state,
/// including whether the request went past `limit`.
pub async fn hit(store: &Store, scope: &str, limit: u64) -> Result<RateState> {
    let now = chrono::Utc::now().timestamp();
    let window = now - now.rem_euclid(WINDOW_SECONDS);
    let reset_seconds = (window + WINDOW_SECONDS - now).max(1) as u64;
    let out = store
        .client()
        .update_item()
        .table_name(store.table())
        .key("pk", s(keys::rate_limit(scope, window)))
        .key("sk", s(RECORD_SK))
        .update_expression("ADD #c :one SET #ttl = if_not_exists(#ttl, :ttl)")
        .expression_attribute_names("#c", "count")
        .expression_attribute_names("#ttl", crate::store::table::TTL_ATTRIBUTE)
        .expression_attribute_values(":one", n(1))
        .expression_attribute_values(":ttl", n(window + 2 * WINDOW_SECONDS))
        .return_values(ReturnValue::UpdatedNew)
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
        .send()
        .await?;
    store.metrics().record_write_total(out.consumed_capacity());
    let count: u64 = out
        .attributes()
        .and_then(|a| a.get("count"))
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    Ok(RateState {
        limit,
        remaining: limit.saturating_sub(count),
        reset_seconds,
        exceeded: count > limit,
    })
}
