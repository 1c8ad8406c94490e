//! API-key authentication: format, signature, revocation and account state.

pub mod api_key;
pub mod keys;
pub mod signing;

use crate::domain::account::{Account, ApiKey};
use crate::domain::tenant::Tenant;
use crate::error::{Error, Result};
use crate::store::keys::RECORD_SK;
use crate::store::{from_item, string_of, Store};
use signing::SigningKeys;

/// The caller behind a valid key.
#[derive(Debug, Clone)]
pub struct Principal {
    pub tenant: Tenant,
    pub account: Account,
    pub key_id: String,
}

/// Checks `Authorization: Bearer <key>`. Every bad key gets the same 401; a
/// good key of a locked or expired account gets 403. The key and its account
/// are read in one strongly consistent batch on every call, so revocation is
/// immediate.
pub async fn authenticate(
    signing: &SigningKeys,
    store: &Store,
    header: Option<&str>,
) -> Result<Principal> {
    let token = verify(signing, header).await?;
    principal(store, &token).await
}

/// A bearer token whose signature and claims are valid (checked without I/O).
#[derive(Debug, Clone)]
pub struct SignedToken {
    raw: String,
    claims: api_key::Claims,
}

impl SignedToken {
    /// The account the token names (not yet checked against the store).
    pub fn account_id(&self) -> &str {
        &self.claims.acct
    }
}

/// The signature and claims check of `Authorization: Bearer <key>`: no
/// store I/O (only a first look-up of the secret version the key names), so
/// the caller can read the key record and count the request at once.
pub async fn verify(signing: &SigningKeys, header: Option<&str>) -> Result<SignedToken> {
    let raw = header
        .and_then(|h| {
            h.strip_prefix("Bearer ")
                .or_else(|| h.strip_prefix("bearer "))
        })
        .map(str::trim)
        .ok_or(Error::Unauthorized)?;
    // Taken apart once: the version picks the secret that checks it.
    let token = api_key::KeyToken::parse(raw).ok_or(Error::Unauthorized)?;
    let secret = signing
        .verifier(token.secret_version())
        .await?
        .ok_or(Error::Unauthorized)?;
    let claims = token.verify(&secret).ok_or(Error::Unauthorized)?;
    Ok(SignedToken {
        raw: raw.to_string(),
        claims,
    })
}

/// The principal behind a signed token: its key and account read in one
/// strongly consistent batch, so revocation is immediate.
pub async fn principal(store: &Store, token: &SignedToken) -> Result<Principal> {
    let claims = &token.claims;
    let items = store
        .batch_get(&[
            (claims.kid.clone(), RECORD_SK.to_string()),
            (claims.acct.clone(), RECORD_SK.to_string()),
        ])
        .await?;
    let mut key: Option<ApiKey> = None;
    let mut account: Option<Account> = None;
    for item in items {
        match string_of(&item, "pk") {
            Some(pk) if pk == claims.kid => key = Some(from_item(item)?),
            Some(pk) if pk == claims.acct => account = Some(from_item(item)?),
            _ => {}
        }
    }
    let key = key.ok_or(Error::Unauthorized)?;
    let account = account.ok_or(Error::Unauthorized)?;
    let hash_ok = api_key::hash(&token.raw) == key.key_hash;
    if !hash_ok
        || key.revoked_at.is_some()
        || key.mode != claims.mode
        || key.account_id != account.id
    {
        return Err(Error::Unauthorized);
    }
    account.check_usable(chrono::Utc::now())?;
    Ok(Principal {
        tenant: Tenant::new(account.id.clone(), key.mode),
        account,
        key_id: key.id,
    })
}
