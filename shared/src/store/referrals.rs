//! Referral records (`pk = keys::referral(tenant, customerKey)`, `sk = "R"`):
//! one per customer identity in a tenant, written once and never overwritten
//! (first-touch).

use chrono::{DateTime, Utc};

use crate::domain::postback::ReferralChange;
use crate::domain::referral::{CustomerKey, Referral, ReferralSource};
use crate::domain::tenant::Tenant;
use crate::error::{Error, Result};
use crate::retry::{retry, Attempt};
use crate::store::keys::{self, RECORD_SK};
use crate::store::tx::Tx;
use crate::store::update::UpdateExpr;
use crate::store::{from_item, record_item, string_value, IndexKeys, Item, Store};
use crate::timestamp;

/// Times a multi-identity binding is re-planned after a concurrent writer won a race.
const BIND_ATTEMPTS: usize = 3;
/// The attribute of `Referral::first_payment_at`.
const FIRST_PAYMENT_AT: &str = "firstPaymentAt";

/// The role of a binding's actions: each binds one identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BindIdentity;

/// Adds a referral change to a transaction: a binding is a Put that fails
/// when the identity is bound meanwhile; a first payment is set only on a
/// bound identity that has none yet.
pub fn apply<R: Copy>(
    tx: &mut Tx<R>,
    role: R,
    tenant: &Tenant,
    change: &ReferralChange,
) -> Result<()> {
    match change {
        ReferralChange::Bind(r) => {
            tx.put_new(role, item(tenant, r)?);
        }
        ReferralChange::FirstPayment { customer_key, at } => {
            let set = UpdateExpr::new()
                .set(FIRST_PAYMENT_AT, string_value(timestamp::format(at)))
                .when_exists()
                .when_absent(FIRST_PAYMENT_AT);
            tx.update(role, &keys::referral(tenant, customer_key), RECORD_SK, &set);
        }
    }
    Ok(())
}

/// The item of a referral.
pub fn item(tenant: &Tenant, referral: &Referral) -> Result<Item> {
    let key = CustomerKey::parse(&referral.customer_key)
        .ok_or_else(|| Error::internal(format!("bad customer key {:?}", referral.customer_key)))?;
    record_item(
        &keys::referral(tenant, &key),
        Some(&tenant.key()),
        referral,
        &IndexKeys::new(),
    )
}

/// The referral of a customer identity in a tenant.
pub async fn get(store: &Store, tenant: &Tenant, key: &CustomerKey) -> Result<Option<Referral>> {
    match store
        .get_item(&keys::referral(tenant, key), RECORD_SK)
        .await?
    {
        Some(item) => Ok(Some(from_item(item)?)),
        None => Ok(None),
    }
}

/// The referrals of several identities of a tenant, in one BatchGetItem.
pub async fn get_many(
    store: &Store,
    tenant: &Tenant,
    keys: &[CustomerKey],
) -> Result<Vec<Referral>> {
    let wanted: Vec<(String, String)> = keys
        .iter()
        .map(|k| (keys::referral(tenant, k), RECORD_SK.to_string()))
        .collect();
    store.batch_get_owned(&wanted, &tenant.key()).await
}

/// Writes a referral unless its identity is already bound; true when written.
pub async fn bind_first(store: &Store, tenant: &Tenant, referral: &Referral) -> Result<bool> {
    store.put_new(item(tenant, referral)?).await
}

/// Who a binding names and where it came from.
#[derive(Debug, Clone)]
pub struct Binding<'a> {
    pub affiliate_id: &'a str,
    pub campaign_id: &'a str,
    pub source: ReferralSource,
    pub session_id: Option<&'a str>,
    pub at: DateTime<Utc>,
}

/// Binds every given identity of one customer to an affiliate, first touch
/// winning; true when at least one identity was newly bound.
///
/// One identity: one conditional PutItem. Several identities (they name the
/// same customer): when none is bound yet, all are bound to `binding`'s
/// affiliate in one transaction; when some already are, the unbound ones join
/// the earliest existing binding (recorded in `linkedFrom`), so a customer
/// never ends up with different affiliates under different identities.
///
/// The first plan assumes none is bound (a customer's first identify) and
/// reads nothing: a cancelled transaction returns the bindings that exist,
/// so the next plan needs no read either. Only a lost race reads again.
pub async fn bind_identities(
    store: &Store,
    tenant: &Tenant,
    keys: &[CustomerKey],
    binding: &Binding<'_>,
) -> Result<bool> {
    let referral = |key: &CustomerKey, owner: Option<&Referral>| Referral {
        affiliate_id: owner
            .map_or(binding.affiliate_id, |r| &r.affiliate_id)
            .to_string(),
        campaign_id: owner
            .map_or(binding.campaign_id, |r| &r.campaign_id)
            .to_string(),
        customer_key: key.to_string(),
        bound_at: binding.at,
        source: binding.source,
        session_id: binding.session_id.map(str::to_string),
        linked_from: owner.map(|r| r.customer_key.clone()),
        first_payment_at: None,
    };
    match keys {
        [] => return Ok(false),
        [key] => return bind_first(store, tenant, &referral(key, None)).await,
        _ => {}
    }
    let mut first = true;
    let bound = retry(BIND_ATTEMPTS, || {
        let known = std::mem::take(&mut first).then(Vec::new);
        bind_missing(store, tenant, keys, &referral, known)
    })
    .await?;
    Ok(bound.unwrap_or(false))
}

/// One try of [`bind_identities`], from the bindings `known` to exist (read
/// when `None`): binds the others, re-planning once on the bindings a
/// cancellation returns; a conflict when a concurrent call won a race.
async fn bind_missing(
    store: &Store,
    tenant: &Tenant,
    keys: &[CustomerKey],
    referral: &impl Fn(&CustomerKey, Option<&Referral>) -> Referral,
    known: Option<Vec<Referral>>,
) -> Result<Attempt<bool>> {
    let mut existing = match known {
        Some(known) => known,
        None => get_many(store, tenant, keys).await?,
    };
    for _ in 0..2 {
        match commit_missing(store, tenant, keys, referral, &existing).await? {
            Commit::Done(bound) => return Ok(Attempt::Done(bound)),
            Commit::Found(found) => existing.extend(found),
            Commit::Raced => break,
        }
    }
    Ok(Attempt::Conflict)
}

/// What committing a plan of bindings came to.
enum Commit {
    /// Applied (true when something was bound), or nothing left to bind (false).
    Done(bool),
    /// Cancelled: these identities were bound already.
    Found(Vec<Referral>),
    /// A single binding lost its race; what won is not known.
    Raced,
}

/// Binds the identities not in `existing` to the earliest existing binding
/// (or to the new one).
async fn commit_missing(
    store: &Store,
    tenant: &Tenant,
    keys: &[CustomerKey],
    referral: &impl Fn(&CustomerKey, Option<&Referral>) -> Referral,
    existing: &[Referral],
) -> Result<Commit> {
    let owner = existing.iter().min_by_key(|r| r.bound_at);
    let missing: Vec<&CustomerKey> = keys
        .iter()
        .filter(|k| {
            let k = k.to_string();
            !existing.iter().any(|r| r.customer_key == k)
        })
        .collect();
    let mut tx = store.tx();
    for k in &missing {
        tx.put_new(BindIdentity, item(tenant, &referral(k, owner))?);
    }
    match tx.len() {
        0 => Ok(Commit::Done(false)),
        1 => Ok(
            match bind_first(store, tenant, &referral(missing[0], owner)).await? {
                true => Commit::Done(true),
                false => Commit::Raced,
            },
        ),
        _ => match store.transact(tx).await {
            Ok(()) => Ok(Commit::Done(true)),
            Err(e) if e.failed(BindIdentity) => Ok(Commit::Found(
                e.old_items(BindIdentity)
                    .into_iter()
                    .map(|item| from_item(item.clone()))
                    .collect::<Result<_>>()?,
            )),
            Err(e) => Err(e.into_error()),
        },
    }
}
