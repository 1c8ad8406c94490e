//! Accounts and API keys (operator operations; the API only reads them).

use chrono::{DateTime, Utc};

use crate::keys::{self, Index, RECORD_SK};
use crate::page::{ListQuery, PageRequest};
use crate::update::UpdateExpr;
use crate::{created, from_item, record_item, string_value, IndexKeys, Store};
use domain::account::{Account, ApiKey};
use domain::error::{Error, Result};
use domain::ids::{new_id, IdKind};
use domain::timestamp;

/// Creates an account.
pub async fn create_account(store: &Store, name: &str, plan: &str) -> Result<Account> {
    let account = Account {
        id: new_id(IdKind::Account),
        name: name.to_string(),
        plan: plan.to_string(),
        locked: false,
        subscription_expires_at: None,
        created_at: timestamp::now(),
        portal_frame_ancestors: Vec::new(),
    };
    store
        .put_new(record_item(&account.id, None, &account, &IndexKeys::new())?)
        .await?;
    Ok(account)
}

/// Reads an account.
pub async fn get_account(store: &Store, id: &str) -> Result<Account> {
    match store.get_item(id, RECORD_SK).await? {
        Some(item) => from_item(item),
        None => Err(Error::NotFound("account")),
    }
}

/// Writes back a changed account.
pub async fn save_account(store: &Store, account: &Account) -> Result<()> {
    store
        .put(record_item(&account.id, None, account, &IndexKeys::new())?)
        .await
}

/// Locks or unlocks an account.
pub async fn set_locked(store: &Store, id: &str, locked: bool) -> Result<Account> {
    let mut a = get_account(store, id).await?;
    a.locked = locked;
    save_account(store, &a).await?;
    Ok(a)
}

/// Sets when the subscription expires (`None`: never).
pub async fn set_subscription(
    store: &Store,
    id: &str,
    expires: Option<DateTime<Utc>>,
) -> Result<Account> {
    let mut a = get_account(store, id).await?;
    a.subscription_expires_at = expires;
    save_account(store, &a).await?;
    Ok(a)
}

/// Sets the origins that may frame the account's portal page.
pub async fn set_frame_ancestors(store: &Store, id: &str, origins: &[String]) -> Result<Account> {
    let a = get_account(store, id)
        .await?
        .with_frame_ancestors(origins)?;
    save_account(store, &a).await?;
    Ok(a)
}

/// Stores a new key record (its value is never stored, only its hash).
pub async fn insert_key(store: &Store, key: &ApiKey) -> Result<()> {
    let index = IndexKeys::new().with(Index::Gsi4, keys::account_keys(&key.account_id), &key.id);
    let written = store
        .put_new(record_item(&key.id, None, key, &index)?)
        .await?;
    created(written, "key")
}

/// Revokes a key for good.
pub async fn revoke_key(store: &Store, key_id: &str) -> Result<ApiKey> {
    let item = store
        .get_item(key_id, RECORD_SK)
        .await?
        .ok_or(Error::NotFound("key"))?;
    let mut key: ApiKey = from_item(item)?;
    if key.revoked_at.is_none() {
        let now = timestamp::now();
        let revoke = UpdateExpr::new()
            .set("revokedAt", string_value(timestamp::format(&now)))
            .when_exists();
        store.update(key_id, RECORD_SK, &revoke).await?;
        key.revoked_at = Some(now);
    }
    key.key_hash.clear();
    Ok(key)
}

/// Every key of an account, without hashes.
pub async fn list_keys(store: &Store, account_id: &str) -> Result<Vec<ApiKey>> {
    let q = ListQuery::new(Index::Gsi4, keys::account_keys(account_id));
    let mut out = Vec::new();
    let mut page = PageRequest {
        limit: 100,
        offset: 0,
        cursor: None,
    };
    loop {
        let p = store.query_page(&q, &page).await?;
        for item in p.items {
            let mut k: ApiKey = from_item(item)?;
            k.key_hash.clear();
            out.push(k);
        }
        match p.next_cursor {
            Some(c) => page.cursor = Some(c),
            None => return Ok(out),
        }
    }
}
