//! Click records (`pk = clk_<ULID>`, `sk = "R"`), TTL'd at `expiresAt`.
//!
//! A click is one PutItem with no index entries, so it stays one small write
//! at any volume; beside it (same round trip) its affiliate's click counts
//! grow by one, the month's and the day's, both in the month's item, for
//! the portal's stats. Its
//! session (`ses_<ULID>`) is not stored separately; it resolves to the
//! click with one GetItem.

use chrono::{DateTime, Datelike, NaiveDate, Utc};

use crate::attrs::{self, COUNT};
use crate::keys::{self, RECORD_SK};
use crate::update::UpdateExpr;
use crate::{
    counters, created, from_item, months, number_value, record_item, string_of, IndexKeys, Item,
    Store,
};
use domain::error::{Error, Result};
use domain::tracking::{self, Click};

/// The item of a click (`ttl` is a number attribute, as DynamoDB's TTL needs).
pub fn item(click: &Click) -> Result<Item> {
    record_item(&click.id, None, click, &IndexKeys::new())
}

/// Stores a new click, and counts it for its affiliate (two calls at once).
pub async fn insert(store: &Store, click: &Click) -> Result<()> {
    let tenant = domain::tenant::Tenant::from_key(&click.tenant)
        .ok_or_else(|| Error::internal("a click without a tenant"))?;
    let pk = keys::affiliate_clicks(&tenant, &click.affiliate_id);
    let at = click.created_at;
    let one = UpdateExpr::new()
        .add(COUNT, number_value(1))
        .add(&day_attribute(at.day()), number_value(1));
    let month = month_key(at.date_naive());
    let (put, counted) = tokio::join!(store.put_new(item(click)?), store.update(&pk, &month, &one));
    counted?;
    created(put?, "click")
}

/// Adds one to the clicks this hour for a campaign's code from one network
/// (CLICK_FLOOD) and returns the count, this click included.
pub async fn count_hourly(
    store: &Store,
    campaign_id: &str,
    code: &str,
    network: &str,
    at: DateTime<Utc>,
) -> Result<u64> {
    let (hour, expires_at) = counters::hour_window(at, at);
    let pk = keys::click_flood(campaign_id, &code.to_uppercase(), network, &hour);
    counters::hit(store, &pk, expires_at).await
}

/// The attribute of one day's click count in its month's item.
fn day_attribute(day: u32) -> String {
    format!("d{day:02}")
}

/// The sort key of a month's click counts: one item per month holds the
/// month's total and each day's count, so a click is one update.
fn month_key(day: NaiveDate) -> String {
    format!("M#{}", day.format("%Y-%m"))
}

/// An affiliate's clicks in a window (see [`daily`]).
pub async fn count(
    store: &Store,
    tenant: &domain::tenant::Tenant,
    affiliate_id: &str,
    window: &domain::summary::Window,
) -> Result<i64> {
    let days = daily(store, tenant, affiliate_id, window).await?;
    Ok(days.iter().map(|(_, n)| n).sum())
}

/// An affiliate's clicks in a window, per day with clicks (for `all`, per
/// month, dated by its first day): the month items of its months and the day
/// items written before the month items held each day's count
/// (`D#<yyyy-mm-dd>`, see `store::months`).
pub async fn daily(
    store: &Store,
    tenant: &domain::tenant::Tenant,
    affiliate_id: &str,
    window: &domain::summary::Window,
) -> Result<Vec<(NaiveDate, i64)>> {
    let pk = keys::affiliate_clicks(tenant, affiliate_id);
    let w = months::read(store, &pk, window, None).await?;
    let mut found = Vec::new();
    for item in &w.days {
        let day = string_of(item, attrs::SK)
            .and_then(|sk| NaiveDate::parse_from_str(sk.strip_prefix("D#")?, "%Y-%m-%d").ok());
        found.extend(day.map(|d| (d, number(item, COUNT))));
    }
    for item in &w.months {
        let Some(mut days) = w.days_of(item) else {
            continue;
        };
        if w.range.is_none() {
            found.extend(days.next().map(|first| (first, number(item, COUNT))));
            continue;
        }
        found.extend(days.map(|d| (d, number(item, &day_attribute(d.day())))));
    }
    found.retain(|(_, n)| *n != 0);
    Ok(found)
}

/// A number attribute, 0 when absent.
fn number(item: &Item, name: &str) -> i64 {
    item.get(name)
        .and_then(|v| v.as_n().ok()?.parse::<i64>().ok())
        .unwrap_or(0)
}

/// The attribute of `Click::customers_bound`.
const CUSTOMERS_BOUND: &str = "customersBound";

/// Takes one of a click's places for customers its session binds: refused
/// when they are all taken (or the click is gone).
pub fn take_customer_place() -> UpdateExpr {
    let cap = u64::from(tracking::MAX_CUSTOMERS_PER_SESSION);
    counters::add_one_to(CUSTOMERS_BOUND, Some(cap)).when_exists()
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
