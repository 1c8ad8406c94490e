//! A postback's transaction and a late attribution's: the conversion, its
//! claims, counters, referrals, the affiliate's credit, rollups and events.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};

use super::claims::{alias_item, claim_in, read_claim};
use super::item::{item, REVERSED_AMOUNT};
use crate::attrs::PAYOUT_ID;
use crate::keys::{self, RECORD_SK};
use crate::tx::{Tx, TxError};
use crate::update::UpdateExpr;
use crate::{affiliate_totals, affiliates, campaigns, counters, events, referrals, rollups, Store};
use domain::affiliate::AffiliateStatus;
use domain::campaign::Campaign;
use domain::commission_plan::Pay;
use domain::conversion::{Conversion, Earning};
use domain::error::Result;
use domain::postback::{
    CountScope, ExternalIdClaim, HourlyCount, LateAttribution, Plan, ReferredChange,
};
use domain::risk::OverLimit;
use domain::tenant::Tenant;

/// Quota counters outlive their month by this long, then TTL removes them.
const QUOTA_TTL_DAYS: i64 = 400;

/// The role of each action of a postback's transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostbackAction {
    /// A campaign taken from the cache was changed since.
    CachedCampaign,
    /// The conversion, at the key its externalId derives: refused when the
    /// externalId (or an alias) was claimed already.
    Conversion,
    Quota,
    /// An hourly conversion counter of the affiliate and customer.
    CustomerCount,
    /// An hourly conversion counter of the click's network.
    NetworkCount,
    Referral,
    AffiliateStatus,
    Earned,
    Rollup,
    Event,
}

/// True when the transaction failed on what the plan read (a referral, an
/// affiliate's status or total, a cached campaign): the plan is stale.
fn is_stale(e: &TxError<PostbackAction>) -> bool {
    use PostbackAction as A;
    [
        A::Referral,
        A::AffiliateStatus,
        A::Earned,
        A::CachedCampaign,
    ]
    .into_iter()
    .any(|r| e.failed(r))
}

/// What a plan took from the process's cache, which its commit checks is
/// unchanged: an affiliate's status, a campaign as it was.
#[derive(Debug, Default)]
pub struct Unchanged {
    /// Each cached affiliate's status and override, as the plan saw them.
    pub affiliates: HashMap<String, (AffiliateStatus, Option<Pay>)>,
    pub campaigns: HashMap<String, Campaign>,
}

impl Unchanged {
    /// The override a cached affiliate was seen with.
    fn override_of(&self, affiliate_id: &str) -> Option<&Pay> {
        self.affiliates
            .get(affiliate_id)
            .and_then(|(_, p)| p.as_ref())
    }

    /// The earning as committed (`Earning::to_commit`): whether its
    /// affiliate came from the cache.
    fn earning(&self, e: &Earning) -> Earning {
        e.to_commit(self.affiliates.contains_key(&e.affiliate_id))
    }
}

/// Checks that the parties the plan took from the cache are unchanged: the
/// campaign it applied, and the affiliate it credited (its status; an
/// earning checks that on its own).
fn check_cached<R: Copy>(
    tx: &mut Tx<R>,
    roles: (R, R),
    tenant_key: &str,
    (c, earning): (&Conversion, Option<&Earning>),
    cached: &Unchanged,
) {
    if let Some(seen) = c
        .campaign_id
        .as_ref()
        .and_then(|id| cached.campaigns.get(id))
    {
        campaigns::check_unchanged(tx, roles.0, tenant_key, seen);
    }
    let affiliate = c.affiliate_id.as_ref().filter(|_| earning.is_none());
    if let Some((id, (status, overrides))) =
        affiliate.and_then(|id| cached.affiliates.get_key_value(id))
    {
        let when = affiliates::terms_are(tenant_key, *status, overrides.as_ref());
        tx.check(roles.1, id, RECORD_SK, &when);
    }
}

/// Credits a conversion's affiliate: its earning (under the cached terms'
/// check while the affiliate came from the cache) and its count and tier,
/// in one Update of its TOTALS item, with `affiliate.tier_changed`.
fn credit(
    tx: &mut Tx<PostbackAction>,
    tenant: &Tenant,
    (earning, referred): (Option<&Earning>, Option<&ReferredChange>),
    cached: &Unchanged,
) -> Result<()> {
    use PostbackAction as A;
    let tenant_key = tenant.key();
    let earning = earning.map(|e| cached.earning(e));
    if let Some(e) = &earning {
        if let Some(st) = e.while_status {
            let overrides = cached.override_of(&e.affiliate_id);
            let when = affiliates::terms_are(&tenant_key, st, overrides);
            tx.check(A::AffiliateStatus, &e.affiliate_id, RECORD_SK, &when);
        }
    }
    let affiliate = earning
        .as_ref()
        .map(|e| e.affiliate_id.as_str())
        .or(referred.map(|r| r.affiliate_id.as_str()));
    if let Some(id) = affiliate {
        let earned = earning.as_ref().map(|e| (e.currency, e.amount));
        affiliate_totals::credit(tx, A::Earned, &tenant_key, id, earned, referred);
    }
    if let Some(tier) = referred.and_then(|r| r.event.as_ref()) {
        events::append(tx, A::Event, tenant, tier)?;
    }
    Ok(())
}

/// How a postback's transaction ended, read by role.
#[derive(Debug)]
pub enum Committed {
    /// Every action happened.
    Done,
    /// The externalId was claimed already: the claim (from the cancellation,
    /// or read when it did not return it), with its conversion when the
    /// claim is the conversion itself.
    Claimed(ExternalIdClaim, Option<Box<Conversion>>),
    /// The monthly quota counter is at its cap.
    QuotaReached,
    /// An hourly conversion counter is at its cap: plan again, flagged.
    OverLimit(OverLimit),
    /// Something the plan read changed since (a referral, the affiliate, a
    /// cached campaign): read and plan again.
    Stale,
}

/// Commits a plan in one transaction and reads a cancellation by role.
pub async fn commit(
    store: &Store,
    tenant: &Tenant,
    plan: &Plan,
    cached: &Unchanged,
    now: DateTime<Utc>,
) -> Result<Committed> {
    use PostbackAction as A;
    match transact(store, tenant, plan, cached, now).await {
        Ok(()) => Ok(Committed::Done),
        Err(e) if e.failed(A::Conversion) => {
            let (claim, conversion) = match e.old_item(A::Conversion) {
                Some(item) => claim_in(item)?,
                None => read_claim(store, plan).await?,
            };
            Ok(Committed::Claimed(claim, conversion.map(Box::new)))
        }
        Err(e) if e.failed(A::Quota) => Ok(Committed::QuotaReached),
        Err(e) if e.failed(A::CustomerCount) || e.failed(A::NetworkCount) => {
            Ok(Committed::OverLimit(OverLimit {
                customer: e.failed(A::CustomerCount),
                network: e.failed(A::NetworkCount),
            }))
        }
        Err(e) if is_stale(&e) => Ok(Committed::Stale),
        Err(e) => Err(e.into_error()),
    }
}

/// The transaction of a plan.
async fn transact(
    store: &Store,
    tenant: &Tenant,
    plan: &Plan,
    cached: &Unchanged,
    now: DateTime<Utc>,
) -> std::result::Result<(), TxError<PostbackAction>> {
    use PostbackAction as A;
    let tenant_key = tenant.key();
    let mut tx = store.tx();
    // The conversion's id derives from its externalId: its put is the claim,
    // and the payment's other ids are claimed beside it.
    tx.put_new(A::Conversion, item(tenant, &plan.conversion)?);
    for alias in &plan.aliases {
        let c = &plan.conversion;
        tx.put_new(
            A::Conversion,
            alias_item(tenant, alias, &c.id, c.created_at)?,
        );
    }
    if let Some(q) = &plan.quota {
        let expires_at = (now + Duration::days(QUOTA_TTL_DAYS)).timestamp();
        let count = counters::increment(expires_at, q.cap);
        tx.update(
            A::Quota,
            &keys::quota(&q.account_id, &q.month),
            RECORD_SK,
            &count,
        );
    }
    for change in &plan.referrals {
        referrals::apply(&mut tx, A::Referral, tenant, change)?;
    }
    let credited = (plan.earning.as_ref(), plan.referred.as_ref());
    credit(&mut tx, tenant, credited, cached)?;
    for count in &plan.counts {
        hourly_count(&mut tx, tenant, count, now);
    }
    rollups::record(&mut tx, A::Rollup, tenant, &plan.conversion);
    let made = std::iter::once(&plan.event).chain(&plan.flagged);
    events::append_all(&mut tx, A::Event, tenant, made)?;
    let roles = (A::CachedCampaign, A::AffiliateStatus);
    let credited = (&plan.conversion, plan.earning.as_ref());
    check_cached(&mut tx, roles, &tenant_key, credited, cached);
    store.transact(tx).await
}

/// Adds one to an hourly conversion counter, refused at its cap. It lives
/// until two hours after its hour, or after `now` for a back-dated hour.
fn hourly_count(tx: &mut Tx<PostbackAction>, tenant: &Tenant, c: &HourlyCount, now: DateTime<Utc>) {
    let (hour, expires_at) = counters::hour_window(c.hour, now);
    let (role, pk) = match &c.scope {
        CountScope::Customer {
            affiliate_id,
            customer,
        } => (
            PostbackAction::CustomerCount,
            keys::customer_hour_count(tenant, affiliate_id, customer, &hour),
        ),
        CountScope::Network { network } => (
            PostbackAction::NetworkCount,
            keys::network_hour_count(tenant, network, &hour),
        ),
    };
    let count = counters::increment(expires_at, c.cap.map(u64::from));
    tx.update(role, &pk, RECORD_SK, &count);
}

/// How a late attribution's transaction ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Attributed {
    Done,
    /// The conversion is no longer as read (attributed, reversed, claimed
    /// by a payout meanwhile): nothing to do.
    Moved,
    /// A referral, the affiliate or a cached campaign changed: plan again.
    Stale,
}

/// Commits a late attribution in one transaction: the conversion (while
/// still UNATTRIBUTED, unreversed and in no payout), its rollups moved, the
/// referral changes, the affiliate's earning and the event.
pub async fn commit_late(
    store: &Store,
    tenant: &Tenant,
    late: &LateAttribution,
    cached: &Unchanged,
) -> Result<Attributed> {
    use PostbackAction as A;
    let tenant_key = tenant.key();
    let mut tx = store.tx();
    let unmoved = UpdateExpr::new()
        .when_tenant(&tenant_key)
        .when_status(late.before.status)
        .when_absent(PAYOUT_ID)
        .when_absent(REVERSED_AMOUNT);
    tx.put(A::Conversion, item(tenant, &late.after)?, &unmoved);
    rollups::moved_many(
        &mut tx,
        A::Rollup,
        tenant,
        &[(late.before.clone(), late.after.clone())],
    );
    for change in &late.referrals {
        referrals::apply(&mut tx, A::Referral, tenant, change)?;
    }
    let credited = (late.earning.as_ref(), late.referred.as_ref());
    credit(&mut tx, tenant, credited, cached)?;
    let made = std::iter::once(&late.event).chain(&late.flagged);
    events::append_all(&mut tx, A::Event, tenant, made)?;
    let roles = (A::CachedCampaign, A::AffiliateStatus);
    let credited = (&late.after, late.earning.as_ref());
    check_cached(&mut tx, roles, &tenant_key, credited, cached);
    match store.transact(tx).await {
        Ok(()) => Ok(Attributed::Done),
        Err(e) if e.failed(A::Conversion) => Ok(Attributed::Moved),
        Err(e) if is_stale(&e) => Ok(Attributed::Stale),
        Err(e) => Err(e.into_error()),
    }
}
