//! API-key authentication: format, signature, revocation and account state.

pub mod api_key;
pub mod keys;
pub mod portal;
pub mod sealing;
pub mod signing;

use domain::account::{Account, ApiKey};
use domain::error::{Error, Result};
use domain::tenant::Tenant;
use signing::SigningKeys;
use store::attrs;
use store::keys::{RECORD_SK, TOTALS_SK};
use store::{affiliates, from_item, string_of, Store};

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

/// The bearer key of `Authorization: Bearer <key>`, unchecked.
fn bearer(header: Option<&str>) -> Result<&str> {
    // The scheme's name is case-insensitive (RFC 9110, section 11.1).
    header
        .and_then(|h| h.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .ok_or(Error::Unauthorized)
}

/// The key and account ids a bearer key claims, before anything is checked:
/// only to start reading its records while the secret is read; 401 for a
/// value that is no key.
pub fn claimed_ids(header: Option<&str>) -> Result<KeyRecordIds> {
    let token = api_key::KeyToken::parse(bearer(header)?).ok_or(Error::Unauthorized)?;
    let (key_id, account_id) = token.claimed_ids().ok_or(Error::Unauthorized)?;
    Ok(KeyRecordIds { key_id, account_id })
}

/// The ids of the records behind a key: the key and its account.
#[derive(Debug, Clone)]
pub struct KeyRecordIds {
    pub key_id: String,
    pub account_id: String,
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

    /// The records the token names.
    pub fn ids(&self) -> KeyRecordIds {
        KeyRecordIds {
            key_id: self.claims.kid.clone(),
            account_id: self.claims.acct.clone(),
        }
    }
}

/// The signature and claims check of `Authorization: Bearer <key>`: no
/// store I/O (only a first look-up of the secret version the key names), so
/// the caller can read the key record and count the request at once.
pub async fn verify(signing: &SigningKeys, header: Option<&str>) -> Result<SignedToken> {
    let raw = bearer(header)?;
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
    check(token, read_records(store, &token.ids()).await?)
}

/// A key's record and its account's, as stored (either may be missing).
#[derive(Debug, Clone, Default)]
pub struct KeyRecords {
    key: Option<ApiKey>,
    account: Option<Account>,
}

/// Reads a key's record and its account's in one strongly consistent batch.
pub async fn read_records(store: &Store, ids: &KeyRecordIds) -> Result<KeyRecords> {
    let items = store
        .batch_get(&[
            (ids.key_id.clone(), RECORD_SK.to_string()),
            (ids.account_id.clone(), RECORD_SK.to_string()),
        ])
        .await?;
    let mut records = KeyRecords::default();
    for item in items {
        match string_of(&item, attrs::PK) {
            Some(pk) if pk == ids.key_id => records.key = Some(from_item(item)?),
            Some(pk) if pk == ids.account_id => records.account = Some(from_item(item)?),
            _ => {}
        }
    }
    Ok(records)
}

/// The principal of a verified token, from the records it names: 401
/// unless they exist, match the token and the key is not revoked; 403 for
/// an account that cannot be used.
pub fn check(token: &SignedToken, records: KeyRecords) -> Result<Principal> {
    let claims = &token.claims;
    let key = records.key.ok_or(Error::Unauthorized)?;
    let account = records.account.ok_or(Error::Unauthorized)?;
    let hash_ok = api_key::hash(&token.raw) == key.key_hash;
    if !hash_ok
        || key.id != claims.kid
        || account.id != claims.acct
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

/// The affiliate behind a valid portal token.
#[derive(Debug, Clone)]
pub struct PortalPrincipal {
    pub tenant: Tenant,
    pub affiliate: domain::affiliate::Affiliate,
    /// The page's "Back" link, as the merchant set it in the signed token.
    pub return_url: Option<String>,
}

/// The claims of `Authorization: Bearer pt_…`, signature and expiry checked
/// (no store I/O): 401 for anything else, an API key included.
pub async fn verify_portal(
    signing: &SigningKeys,
    header: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<portal::PortalClaims> {
    let raw = bearer(header)?;
    if !portal::is_portal_token(raw) {
        return Err(Error::Unauthorized);
    }
    let secret = signing.current().await?.secret;
    portal::verify(&secret, raw, now).ok_or(Error::Unauthorized)
}

/// What a portal token claims, before its signature is checked (the first
/// request of a process reads its records meanwhile): 401 when the bearer
/// is no portal token.
pub fn claimed_portal(header: Option<&str>) -> Result<portal::PortalClaims> {
    portal::claimed(bearer(header)?).ok_or(Error::Unauthorized)
}

/// The affiliate a portal token names, read with its account in one
/// strongly consistent batch: 401 unless the affiliate is the tenant's and
/// ACTIVE (a suspended one's token stops at once, and stays stopped once it
/// is ACTIVE again) and its account can be used (a locked one's tokens stop
/// at once too).
pub async fn portal_principal(
    store: &Store,
    claims: &portal::PortalClaims,
) -> Result<PortalPrincipal> {
    let tenant = claims.tenant();
    let tenant_key = tenant.key();
    // Its totals item beside it: the portal shows its tier and customers.
    let items = store
        .batch_get(&[
            (claims.aff.clone(), RECORD_SK.to_string()),
            (claims.aff.clone(), TOTALS_SK.to_string()),
            (claims.acct.clone(), RECORD_SK.to_string()),
        ])
        .await?;
    let (mut record, mut totals, mut account) = (None, None, None);
    for item in items {
        let pk = string_of(&item, attrs::PK);
        match string_of(&item, attrs::SK) {
            Some(TOTALS_SK) if pk == Some(claims.aff.as_str()) => totals = Some(item),
            _ if pk == Some(claims.aff.as_str())
                && string_of(&item, attrs::TENANT) == Some(&tenant_key) =>
            {
                record = Some(item)
            }
            _ if pk == Some(claims.acct.as_str()) => account = Some(from_item::<Account>(item)?),
            _ => {}
        }
    }
    let affiliate = match record {
        Some(r) => Some(affiliates::from_parts(r, totals.as_ref(), &tenant_key)?),
        None => None,
    };
    let affiliate = affiliate
        .filter(|a| a.opens_portal_to(claims.issued_at()))
        .ok_or(Error::Unauthorized)?;
    // The affiliate learns only that the token no longer works, never the
    // merchant's account state.
    account
        .ok_or(Error::Unauthorized)?
        .check_usable(chrono::Utc::now())
        .map_err(|_| Error::Unauthorized)?;
    Ok(PortalPrincipal {
        tenant,
        affiliate,
        return_url: claims.ret.clone(),
    })
}
