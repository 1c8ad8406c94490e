//! An externalId's claim: the conversion at the key it derives, an alias
//! claim there naming another conversion, or an older claim item.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::batch::{batch, key, Key};
use super::item::{decode, ALIAS_OF};
use crate::attrs;
use crate::keys::{self, GUARD_SK, RECORD_SK};
use crate::{from_item, item_at, string_of, Item, Store};
use domain::conversion::{Conversion, Postback};
use domain::error::{Error, Result};
use domain::postback::{self, ExternalIdClaim, Plan};
use domain::tenant::Tenant;

/// The keys an externalId's claim may sit at: the conversion whose id it
/// derives (or an alias claim there), and the claim item of an id claimed
/// before conversions were their own claims (read first; none is written now).
pub(super) fn claim_keys(external_id: &str) -> (Key, Key) {
    (
        key(postback::conversion_id_of(external_id), RECORD_SK),
        key(keys::external_id_guard(external_id), GUARD_SK),
    )
}

/// The claim an item at a derived conversion key holds: the conversion
/// itself, or an alias claim naming its conversion.
pub(super) fn claim_in(item: &Item) -> Result<Claim> {
    if item.contains_key(ALIAS_OF) {
        return Ok((from_item(item.clone())?, None));
    }
    let tenant = string_of(item, attrs::TENANT)
        .ok_or_else(|| Error::internal("a conversion item without its tenant"))?
        .to_string();
    let c = decode(item.clone())?;
    let claim = ExternalIdClaim {
        tenant,
        conversion_id: c.id.clone(),
        created_at: c.created_at,
    };
    Ok((claim, Some(c)))
}

/// An externalId's claim, with the conversion when the claim is the
/// conversion itself (read in the same call: a replay answers with it).
pub(super) type Claim = (ExternalIdClaim, Option<Conversion>);

/// The claim among the items read at an externalId's [`claim_keys`].
fn claim_among(found: &HashMap<Key, Item>, (derived, older): &(Key, Key)) -> Result<Option<Claim>> {
    match (found.get(older), found.get(derived)) {
        (Some(item), _) => Ok(Some((from_item(item.clone())?, None))),
        (None, Some(item)) => claim_in(item).map(Some),
        (None, None) => Ok(None),
    }
}

/// What the items read at each of a payment's ids' [`claim_keys`] (its
/// `externalId`'s first, then its aliases') say: the claim it runs into
/// (its `externalId`'s, of any tenant: another's is ALREADY_EXISTS; else
/// the first of an alias that is `tenant`'s), and the aliases another
/// tenant claimed, which are left to it.
pub(super) fn payment_claims(
    found: &HashMap<Key, Item>,
    p: &Postback,
    claims: &[(Key, Key)],
    tenant: &str,
) -> Result<(Option<Claim>, Vec<String>)> {
    let own = match claims.first() {
        Some(k) => claim_among(found, k)?,
        None => None,
    };
    let mut first = None;
    let mut foreign = Vec::new();
    for (id, k) in p.claimed_ids().into_iter().zip(claims).skip(1) {
        match claim_among(found, k)? {
            Some(c) if c.0.tenant != tenant => foreign.push(id.to_string()),
            Some(c) => first = first.or(Some(c)),
            None => {}
        }
    }
    Ok((own.or(first), foreign))
}

/// The claim that made a postback's transaction fail: at the conversion key
/// of its externalId or of one of its aliases.
pub(super) async fn read_claim(store: &Store, p: &Plan) -> Result<Claim> {
    let ids = std::iter::once(&p.conversion.external_id).chain(&p.aliases);
    let derived: Vec<Key> = ids.map(|id| claim_keys(id).0).collect();
    let found = batch(store, derived.clone()).await?;
    match derived.iter().find_map(|k| found.get(k)) {
        Some(item) => claim_in(item),
        None => Err(Error::internal("externalId claim vanished")),
    }
}

/// The conversion an externalId (or an alias of it) names in this tenant:
/// both keys a claim may sit at, read in one BatchGetItem.
pub async fn claimed_by(
    store: &Store,
    tenant: &Tenant,
    external_id: &str,
) -> Result<Option<String>> {
    claimed_by_any(
        store,
        tenant,
        std::slice::from_ref(&external_id.to_string()),
    )
    .await
}

/// The conversion the first of `ids` that names one in this tenant names:
/// every key a claim of each may sit at, read in one BatchGetItem.
pub async fn claimed_by_any(
    store: &Store,
    tenant: &Tenant,
    ids: &[String],
) -> Result<Option<String>> {
    let keys: Vec<(Key, Key)> = ids.iter().map(|id| claim_keys(id)).collect();
    let all = keys
        .iter()
        .flat_map(|(a, b)| [a.clone(), b.clone()])
        .collect();
    let found = batch(store, all).await?;
    for k in &keys {
        let claim = claim_among(&found, k)?.map(|(claim, _)| claim);
        if let Some(c) = claim.filter(|c| c.tenant == tenant.key()) {
            return Ok(Some(c.conversion_id));
        }
    }
    Ok(None)
}

/// Claims another id of a recorded payment (a provider's payment intent or
/// charge) for its conversion, as its externalId is claimed: a refund that
/// names only that id finds the conversion, and a postback sending it as
/// `externalId` replays the conversion instead of counting the payment
/// twice. An id claimed already is left as it is.
pub async fn claim_alias(
    store: &Store,
    tenant: &Tenant,
    alias: &str,
    conversion_id: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    store
        .put_new(alias_item(tenant, alias, conversion_id, now)?)
        .await?;
    Ok(())
}

/// The claim of `alias` for `conversion_id`, at the conversion key the
/// alias derives.
pub(super) fn alias_item(
    tenant: &Tenant,
    alias: &str,
    conversion_id: &str,
    at: DateTime<Utc>,
) -> Result<Item> {
    let claim = ExternalIdClaim {
        tenant: tenant.key(),
        conversion_id: conversion_id.to_string(),
        created_at: at,
    };
    let (key, _) = claim_keys(alias);
    item_at(&key.0, &key.1, &claim)
}

/// The conversion a claim names, for a repeated postback.
pub async fn claimed(store: &Store, conversion_id: &str) -> Result<Conversion> {
    let item = store
        .get_item(conversion_id, RECORD_SK)
        .await?
        .ok_or_else(|| Error::internal(format!("claimed conversion {conversion_id} is missing")))?;
    decode(item)
}
