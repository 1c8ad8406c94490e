//! Click records (`pk = clk_<ULID>`, `sk = "R"`), TTL'd at `expiresAt`.
//!
//! A click is one PutItem and nothing else: no index entries, no counters, so
//! it stays one small write at any volume. Its session (`ses_<ULID>`) is not
//! stored separately; it resolves to the click with one GetItem.

use chrono::{DateTime, Utc};

use crate::domain::tracking::{self, Click};
use crate::error::{Error, Result};
use crate::store::keys::RECORD_SK;
use crate::store::{from_item, record_item, IndexKeys, Item, Store};

/// The item of a click (`ttl` is a number attribute, as DynamoDB's TTL needs).
pub fn item(click: &Click) -> Result<Item> {
    record_item(&click.id, None, click, &IndexKeys::new())
}

/// Stores a new click.
pub async fn insert(store: &Store, click: &Click) -> Result<()> {
    if store.put_new(item(click)?).await? {
        Ok(())
    } else {
        Err(Error::internal("click id collision"))
    }
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
