//! Fixed-window rate limits with counters in DynamoDB, so they hold across
//! every Lambda instance.

use domain::error::{Error, Result};
use store::{counters, keys, Store};

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
    let count = counters::hit(
        store,
        &keys::rate_limit(scope, window),
        window + 2 * WINDOW_SECONDS,
    )
    .await?;
    Ok(RateState {
        limit,
        remaining: limit.saturating_sub(count),
        reset_seconds,
        exceeded: count > limit,
    })
}
