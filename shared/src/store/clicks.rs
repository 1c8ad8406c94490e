//! Click records (`pk = clk_<ULID>`, `sk = "R"`), TTL'd at `expiresAt`.
//!
//! A click is one PutItem with no index entries, so it stays one small write
//! at any volume; beside it (same round trip) its affiliate's click count of
//! the day and of the month grows by one, for the portal's stats. Its
//! session (`ses_<ULID>`) is not stored separately; it resolves to the
//! click with one GetItem.

use chrono::{DateTime, Utc};

use crate::domain::tracking::{self, Click};
use crate::error::{Error, Result};
use crate::store::keys::{self, RECORD_SK};
use crate::store::update::UpdateExpr;
use crate::store::{counters, from_item, number_value, record_item, IndexKeys, Item, Store};

/// The item of a click (`ttl` is a number attribute, as DynamoDB's TTL needs).
pub fn item(click: &Click) -> Result<Item> {
    record_item(&click.id, None, click, &IndexKeys::new())
}

/// Stores a new click, and counts it for its affiliate (three calls at once).
pub async fn insert(store: &Store, click: &Click) -> Result<()> {
    let tenant = crate::domain::tenant::Tenant::from_key(&click.tenant)
        .ok_or_else(|| Error::internal("a click without a tenant"))?;
    let pk = keys::affiliate_clicks(&tenant, &click.affiliate_id);
    let one = UpdateExpr::new().add(COUNT, number_value(1));
    let (day, month) = count_keys(click.created_at);
    let (put, by_day, by_month) = tokio::join!(
        store.put_new(item(click)?),
        store.update(&pk, &day, &one),
        store.update(&pk, &month, &one)
    );
    by_day?;
    by_month?;
    if put? {
        Ok(())
    } else {
        Err(Error::internal("click id collision"))
    }
}

/// Clicks flood counters outlive their hour by this long.
const FLOOD_TTL_HOURS: i64 = 2;

/// Adds one to the clicks this hour for a campaign's code from one network
/// (CLICK_FLOOD) and returns the count, this click included.
pub async fn count_hourly(
    store: &Store,
    campaign_id: &str,
    code: &str,
    network: &str,
    at: DateTime<Utc>,
) -> Result<u64> {
    let hour = at.format("%Y-%m-%dT%H").to_string();
    let pk = keys::click_flood(campaign_id, &code.to_uppercase(), network, &hour);
    let expires_at =
        at.timestamp() - at.timestamp().rem_euclid(3600) + 3600 * (1 + FLOOD_TTL_HOURS);
    counters::hit(store, &pk, expires_at).await
}

/// The attribute of a click count.
const COUNT: &str = "count";

/// The sort keys of a time's day and month counts.
fn count_keys(at: DateTime<Utc>) -> (String, String) {
    (
        format!("D#{}", at.format("%Y-%m-%d")),
        format!("M#{}", at.format("%Y-%m")),
    )
}

/// An affiliate's clicks in a window (days, or months for `all`): one
/// strongly consistent Query.
pub async fn count(
    store: &Store,
    tenant: &crate::domain::tenant::Tenant,
    affiliate_id: &str,
    window: &crate::domain::summary::Window,
) -> Result<i64> {
    use crate::domain::summary::Granularity;
    let (lo, hi) = match (window.granularity, window.first_day) {
        (Granularity::Day, Some(first)) => (
            format!("D#{}", first.format("%Y-%m-%d")),
            format!("D#{}", window.last_day.format("%Y-%m-%d")),
        ),
        (_, first) => (
            format!(
                "M#{}",
                first
                    .map(|d| d.format("%Y-%m").to_string())
                    .unwrap_or_default()
            ),
            format!("M#{}", window.last_day.format("%Y-%m")),
        ),
    };
    let pk = keys::affiliate_clicks(tenant, affiliate_id);
    let items = store.query_range(&pk, &lo, &hi).await?;
    Ok(items
        .iter()
        .filter_map(|i| i.get(COUNT)?.as_n().ok()?.parse::<i64>().ok())
        .sum())
}

/// The click with this id if it exists and has not expired at `now`.
pub async fn get_live(store: &Store, click_id: &str, now: DateTime<Utc>) -> Result<Option<Click>> {
    if tracking::session_id_of_click(click_id).is_none() {
        return Ok(None);
    }
    let Some(item) = store.get_item(click_id, RECORD_SK).await? else {
        return Ok(None);
    };
    let mut click: Click = from_item(item)?;
    click.id = click_id.to_string();
    Ok(click.is_live(now).then_some(click))
}

/// The click a session id stands for, if it exists and has not expired at `now`.
pub async fn get_live_by_session(
    store: &Store,
    session_id: &str,
    now: DateTime<Utc>,
) -> Result<Option<Click>> {
    match tracking::click_id_of_session(session_id) {
        Some(click_id) => get_live(store, &click_id, now).await,
        None => Ok(None),
    }
}
