//! Issuing API keys: the value is signed here and shown once; the store
//! keeps the record with the value's hash only.

use crate::auth::api_key;
use crate::auth::signing::SigningKeys;
use domain::account::ApiKey;
use domain::error::Result;
use domain::ids::{new_id, IdKind};
use domain::tenant::Mode;
use domain::timestamp;
use store::{accounts, Store};

/// Creates a key for an existing account and returns its record and its value.
pub async fn create_key(
    store: &Store,
    signing: &SigningKeys,
    account_id: &str,
    name: &str,
    mode: Mode,
) -> Result<(ApiKey, String)> {
    accounts::get_account(store, account_id).await?;
    let signer = signing.current().await?;
    let id = new_id(IdKind::Key);
    let value = api_key::issue_signed(
        &signer.secret,
        signer.version.as_deref(),
        &id,
        account_id,
        mode,
    );
    let key = ApiKey {
        id,
        account_id: account_id.to_string(),
        name: name.to_string(),
        mode,
        key_hash: api_key::hash(&value),
        last4: value[value.len().saturating_sub(4)..].to_string(),
        created_at: timestamp::now(),
        revoked_at: None,
    };
    accounts::insert_key(store, &key).await?;
    Ok((key, value))
}
