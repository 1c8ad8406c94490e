//! Referral records (`pk = keys::referral(tenant, customerKey)`, `sk = "R"`):
//! one per customer identity in a tenant, written once and never overwritten
//! (first-touch). The one binding of a customer that carries an `id` is
//! listed: in the tenant's list (GSI1), its campaign's (GSI2) and its
//! affiliate's (GSI4), by `<boundAt>#<id>`.

use crate::clicks;
use crate::keys::{self, ListKind, RECORD_SK};
use crate::page::{ListQuery, Page, PageRequest};
use crate::tx::Tx;
use crate::update::UpdateExpr;
use crate::{from_item, number_value, record_item, string_value, IndexKeys, Item, Store};
use domain::error::{Error, Result};
use domain::postback::ReferralChange;
use domain::referral::{BindingPlan, CustomerKey, Referral};
use domain::tenant::Tenant;
use domain::timestamp;

/// The attribute of `Referral::first_payment_at`.
const FIRST_PAYMENT_AT: &str = "firstPaymentAt";

/// The attribute of `Referral::linked_from`.
const LINKED_FROM: &str = "linkedFrom";

/// The attribute of `Referral::payments`.
const PAYMENTS: &str = "payments";

/// The attribute of `Referral::lead_at`.
const LEAD_AT: &str = "leadAt";

/// The roles of a binding's actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Binds one identity.
    BindIdentity,
    /// Links a bound identity to the customer's e-mail.
    Link,
    /// Takes a place of the identifying session's click.
    SessionPlace,
}

/// Adds a referral change to a transaction: a binding is a Put that fails
/// when the identity is bound meanwhile; an update of a bound identity sets
/// a first payment or a lead only where none is, and the payment count only
/// from the count the plan read (so payments are numbered in the order
/// they commit); a link never fails it.
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
        ReferralChange::Update(u) => {
            let mut set = UpdateExpr::new().when_exists();
            if let Some(at) = &u.first_payment_at {
                set = set
                    .set(FIRST_PAYMENT_AT, string_value(timestamp::format(at)))
                    .when_absent(FIRST_PAYMENT_AT);
            }
            if let Some((seen, now)) = u.payments {
                set = set
                    .set(PAYMENTS, number_value(now))
                    .when_count(PAYMENTS, u64::from(seen));
            }
            if let Some(at) = &u.lead_at {
                set = set
                    .set(LEAD_AT, string_value(timestamp::format(at)))
                    .when_absent(LEAD_AT);
            }
            if let Some(email) = &u.link {
                set = set.set_if_absent(LINKED_FROM, string_value(email));
            }
            tx.update(
                role,
                &keys::referral(tenant, &u.customer_key),
                RECORD_SK,
                &set,
            );
        }
    }
    Ok(())
}

/// Sets a bound identity's `linkedFrom` to `email` unless it has one (never
/// a reason to cancel: a link written meanwhile is kept).
fn link<R: Copy>(
    tx: &mut Tx<R>,
    role: R,
    tenant: &Tenant,
    customer_key: &CustomerKey,
    email: &str,
) {
    let set = UpdateExpr::new()
        .set_if_absent(LINKED_FROM, string_value(email))
        .when_exists();
    tx.update(role, &keys::referral(tenant, customer_key), RECORD_SK, &set);
}

/// The item of a referral, in the lists when it is the customer's listed binding.
pub fn item(tenant: &Tenant, referral: &Referral) -> Result<Item> {
    let key = CustomerKey::parse(&referral.customer_key)
        .ok_or_else(|| Error::internal(format!("bad customer key {:?}", referral.customer_key)))?;
    let mut index = IndexKeys::new();
    if let Some(id) = &referral.id {
        let sort = format!("{}#{id}", timestamp::format(&referral.bound_at));
        index = index
            .at(ListKind::Referral.all(tenant), &sort)
            .at(
                ListKind::Referral.of_campaign(tenant, &referral.campaign_id),
                &sort,
            )
            .at(
                ListKind::Referral.of_affiliate(tenant, &referral.affiliate_id),
                &sort,
            );
    }
    record_item(
        &keys::referral(tenant, &key),
        Some(&tenant.key()),
        referral,
        &index,
    )
}

/// How an imported referral's commit ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Imported {
    Created,
    /// Its `externalId` was imported before.
    Existing,
    /// The customer is bound to an affiliate already (first touch holds).
    CustomerBound,
}

/// The roles of an import's actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ImportRole {
    Referral,
    Guard,
}

/// Writes an imported referral with the guard of its `externalId`, in one
/// transaction (both Puts only where nothing is).
pub async fn import(
    store: &Store,
    tenant: &Tenant,
    referral: &Referral,
    external_id: &str,
) -> Result<Imported> {
    let mut guard = crate::item_at(
        &keys::referral_import_guard(tenant, external_id),
        keys::GUARD_SK,
        &serde_json::json!({"customerKey": referral.customer_key}),
    )?;
    guard.insert(crate::attrs::TENANT.into(), string_value(tenant.key()));
    let mut tx = store.tx();
    tx.put_new(ImportRole::Referral, item(tenant, referral)?)
        .put_new(ImportRole::Guard, guard);
    match store.transact(tx).await {
        Ok(()) => Ok(Imported::Created),
        Err(e) if e.failed(ImportRole::Guard) => Ok(Imported::Existing),
        Err(e) if e.failed(ImportRole::Referral) => Ok(Imported::CustomerBound),
        Err(e) => Err(e.into_error()),
    }
}

/// The `externalId`s among `external_ids` imported before (BatchGetItem of
/// their guards, each once, 100 at a time).
pub async fn imported(
    store: &Store,
    tenant: &Tenant,
    external_ids: &[&str],
) -> Result<std::collections::HashSet<String>> {
    let distinct: Vec<&str> = external_ids
        .iter()
        .copied()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut found = std::collections::HashSet::new();
    for chunk in distinct.chunks(100) {
        let wanted: Vec<(String, String)> = chunk
            .iter()
            .map(|x| {
                (
                    keys::referral_import_guard(tenant, x),
                    keys::GUARD_SK.to_string(),
                )
            })
            .collect();
        for item in store.batch_get(&wanted).await? {
            let pk = crate::string_of(&item, crate::attrs::PK).unwrap_or_default();
            if let Some(x) = chunk
                .iter()
                .find(|x| keys::referral_import_guard(tenant, x) == pk)
            {
                found.insert(x.to_string());
            }
        }
    }
    Ok(found)
}

/// The referrals list's filters.
#[derive(Debug, Clone, Default)]
pub struct ReferralFilter {
    pub affiliate_id: Option<String>,
    pub campaign_id: Option<String>,
}

/// A page of the tenant's listed referrals, newest first (one Query: the
/// affiliate's partition, else the campaign's, else the tenant's).
pub async fn list(
    store: &Store,
    tenant: &Tenant,
    f: &ReferralFilter,
    page: &PageRequest,
) -> Result<Page<Referral>> {
    let q = match (&f.affiliate_id, &f.campaign_id) {
        (Some(a), campaign) => {
            let mut q = ListQuery::of(ListKind::Referral.of_affiliate(tenant, a));
            if let Some(c) = campaign {
                q.filter = q.filter.in_list(ListKind::Referral.of_campaign(tenant, c));
            }
            q
        }
        (None, Some(c)) => ListQuery::of(ListKind::Referral.of_campaign(tenant, c)),
        (None, None) => ListQuery::of(ListKind::Referral.all(tenant)),
    };
    store.query_page(&q, page).await?.try_map(from_item)
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

/// What committing a customer's new bindings came to.
#[derive(Debug)]
pub enum Bound {
    /// Written (or nothing to write: false).
    Done(bool),
    /// Cancelled: these identities were bound already.
    Found(Vec<Referral>),
    /// A single binding lost its race; what won is not known.
    Raced,
    /// The identifying session bound its share of customers: nothing bound.
    SessionFull,
}

/// Writes a plan's new referrals of one customer, all or none, with its
/// links and the identifying session's place: one conditional PutItem for a
/// lone binding that takes no place, else one transaction; a binding fails
/// when its identity is bound meanwhile, the place when the session has
/// none left (nothing is written then).
pub async fn commit_bindings(store: &Store, tenant: &Tenant, plan: &BindingPlan) -> Result<Bound> {
    let mut tx = store.tx();
    for r in &plan.new {
        tx.put_new(Role::BindIdentity, item(tenant, r)?);
    }
    for (key, email) in &plan.links {
        link(&mut tx, Role::Link, tenant, key, email);
    }
    if let Some(click) = &plan.counted_click {
        let place = clicks::take_customer_place();
        tx.update(Role::SessionPlace, click, RECORD_SK, &place);
    }
    let alone = plan.links.is_empty() && plan.counted_click.is_none();
    match (plan.new.as_slice(), alone) {
        ([], true) => Ok(Bound::Done(false)),
        ([one], true) => Ok(match bind_first(store, tenant, one).await? {
            true => Bound::Done(true),
            false => Bound::Raced,
        }),
        (new, _) => match store.transact(tx).await {
            Ok(()) => Ok(Bound::Done(!new.is_empty())),
            // Bound meanwhile comes first: planned again, it may bind nothing.
            Err(e) if e.failed(Role::BindIdentity) => Ok(Bound::Found(
                e.old_items(Role::BindIdentity)
                    .into_iter()
                    .map(|item| from_item(item.clone()))
                    .collect::<Result<_>>()?,
            )),
            Err(e) if e.failed(Role::SessionPlace) => Ok(Bound::SessionFull),
            // A binding to link is gone (never deleted today): read again.
            Err(e) if e.failed(Role::Link) => Ok(Bound::Raced),
            Err(e) => Err(e.into_error()),
        },
    }
}
