//! Idempotency keys as kept: one item per account, mode and key
//! (`IDEM#<tenant>#<sha256 of the key>`, row 54 of `docs/data-model.md`),
//! claimed, answered or released by the claim that runs it, forgotten by
//! the table's TTL.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use crate::keys::RECORD_SK;
use crate::update::{UpdateExpr, Updated};
use crate::{from_item, item_at, number_value, string_value, Store};
use domain::error::Result;
use domain::idempotency::{IdempotencyKey, KeptAnswer, KeptRequest};
use domain::tenant::Tenant;

/// The attributes a claim writes (the answer is removed with them).
const CLAIM_FIELDS: [&str; 4] = ["fingerprint", "claim", "leaseUntil", "ttl"];
const CLAIM: &str = CLAIM_FIELDS[1];
const TTL: &str = CLAIM_FIELDS[3];
const ANSWER: &str = "answer";

fn key_of(tenant: &Tenant, key: &IdempotencyKey) -> String {
    let digest = hex::encode(Sha256::digest(key.as_str().as_bytes()));
    format!("IDEM#{}#{digest}", tenant.key())
}

/// What a claim found.
#[derive(Debug, Clone, PartialEq)]
pub enum Claimed {
    /// The key is this request's to run.
    Mine,
    /// The key is kept, as read.
    Kept(KeptRequest),
}

/// Claims a key for `request` unless it is kept (an expired one the TTL has
/// not removed yet counts as free).
pub async fn claim(
    store: &Store,
    tenant: &Tenant,
    key: &IdempotencyKey,
    request: &KeptRequest,
    now: DateTime<Utc>,
) -> Result<Claimed> {
    let pk = key_of(tenant, key);
    let item = item_at(&pk, RECORD_SK, request)?;
    let change = UpdateExpr::new()
        .copy_from(&item, &CLAIM_FIELDS)
        .remove(ANSWER)
        .when_absent_or_below(TTL, number_value(now.timestamp()));
    match store.update(&pk, RECORD_SK, &change).await? {
        Updated::Applied(_) => Ok(Claimed::Mine),
        Updated::Refused(Some(old)) => {
            let kept: KeptRequest = from_item(old)?;
            // The SDK retried a claim whose answer was lost: it is ours.
            Ok(match kept.claim == request.claim {
                true => Claimed::Mine,
                false => Claimed::Kept(kept),
            })
        }
        Updated::Refused(None) => Ok(Claimed::Mine),
    }
}

/// Takes a key over from the claim `from` whose lease ran out without an
/// answer; false when another took it first (or it was answered).
pub async fn take_over(
    store: &Store,
    tenant: &Tenant,
    key: &IdempotencyKey,
    from: &str,
    request: &KeptRequest,
) -> Result<bool> {
    let pk = key_of(tenant, key);
    let item = item_at(&pk, RECORD_SK, request)?;
    let change = UpdateExpr::new()
        .copy_from(&item, &CLAIM_FIELDS)
        .when_eq(CLAIM, string_value(from))
        .when_absent(ANSWER);
    Ok(matches!(
        store.update(&pk, RECORD_SK, &change).await?,
        Updated::Applied(_)
    ))
}

/// The key as kept, if it is (and has not expired).
pub async fn read(
    store: &Store,
    tenant: &Tenant,
    key: &IdempotencyKey,
    now: DateTime<Utc>,
) -> Result<Option<KeptRequest>> {
    let item = store.get_item(&key_of(tenant, key), RECORD_SK).await?;
    let kept: Option<KeptRequest> = item.map(from_item).transpose()?;
    Ok(kept.filter(|k| k.ttl >= now.timestamp()))
}

/// Keeps the answer of the claim `claim`.
pub async fn keep_answer(
    store: &Store,
    tenant: &Tenant,
    key: &IdempotencyKey,
    claim: &str,
    answer: &KeptAnswer,
) -> Result<()> {
    let pk = key_of(tenant, key);
    #[derive(serde::Serialize)]
    struct Answered<'a> {
        answer: &'a KeptAnswer,
    }
    let item = item_at(&pk, RECORD_SK, &Answered { answer })?;
    let change = UpdateExpr::new()
        .copy_from(&item, &[ANSWER])
        .when_eq(CLAIM, string_value(claim));
    store.update(&pk, RECORD_SK, &change).await?;
    Ok(())
}

/// The role of a release's one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Release;

/// Forgets a key the claim `claim` holds (its request failed), so the
/// request may be sent again, with that key or another body.
pub async fn release(
    store: &Store,
    tenant: &Tenant,
    key: &IdempotencyKey,
    claim: &str,
) -> Result<()> {
    let mut tx = store.tx();
    let held = UpdateExpr::new().when_eq(CLAIM, string_value(claim));
    tx.delete(Release, &key_of(tenant, key), RECORD_SK, &held);
    match store.transact(tx).await {
        Ok(()) => Ok(()),
        Err(e) if e.failed(Release) => Ok(()),
        Err(e) => Err(e.into_error()),
    }
}
