//! The postback: read the facts it names, decide in `domain::postback`,
//! commit the plan in one transaction (`store::conversions`), exactly once
//! per `externalId`.
//!
//! This module owns the policy around that walk: campaigns and affiliates
//! come from the process's cache (`lookups`) when it holds them, and the
//! commit then checks they are unchanged; a lost race (a referral, the
//! affiliate or a cached campaign changed) reads afresh, bypassing the
//! cache, and plans again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use chrono::{DateTime, Utc};

use crate::app::App;
use crate::lookups::Lookups;
use crate::retry::{retry_on_conflict, Attempt};
use domain::account::Account;
use domain::attribution::{AffiliateFacts, Signal};
use domain::campaign::Campaign;
use domain::conversion::{Conversion, Postback};
use domain::error::Result;
use domain::postback::{self, Opening, Parties, Quota};
use domain::risk::OverLimit;
use domain::tenant::{Mode, Tenant};
use store::conversions::{self, Attributed, Committed, Unchanged};
use store::Store;

/// Times a postback is planned again after a concurrent write changed what
/// it read (the customer's referral or the affiliate).
const RECORD_ATTEMPTS: usize = 4;

/// What a postback did.
#[derive(Debug, Clone)]
pub enum Recorded {
    /// A new conversion (201).
    Created(Conversion),
    /// The externalId was seen before in this tenant: the conversion it names (200).
    Replayed(Conversion),
}

/// Records a postback: attribution, commission, referral, quota and rollups
/// Records a payment of `account` in `tenant`, as [`record`] does, under the
/// account's plan quota: live conversions count against it, test-mode ones
/// never do. The quota rule's one home (the merchant's postback and the
/// payment providers' events both come through here).
pub async fn record_for(
    app: &App,
    tenant: &Tenant,
    account: &Account,
    p: &Postback,
    now: DateTime<Utc>,
) -> Result<Recorded> {
    let quota = (tenant.mode == Mode::Live).then(|| Quota {
        account_id: account.id.clone(),
        plan: account.plan.clone(),
        cap: app.config.conversion_quota(&account.plan),
    });
    record(&app.store, &app.lookups, tenant, p, quota.as_ref(), now).await
}

/// in one transaction, exactly once per `externalId`.
pub async fn record(
    store: &Store,
    lookups: &Lookups,
    tenant: &Tenant,
    p: &Postback,
    quota: Option<&Quota>,
    now: DateTime<Utc>,
) -> Result<Recorded> {
    let attempts = AtomicUsize::new(0);
    let attempts = &attempts;
    let over = &Mutex::new(OverLimit::default());
    retry_on_conflict(
        RECORD_ATTEMPTS,
        "customer's referral or affiliate",
        || async move {
            let cache = Cache {
                lookups,
                read: attempts.fetch_add(1, Ordering::Relaxed) == 0,
            };
            Ok(
                match attempt(store, cache, tenant, p, quota, over, now).await? {
                    Some(done) => Attempt::Done(done),
                    None => Attempt::Conflict,
                },
            )
        },
    )
    .await
}

/// The process's lookups, and whether this attempt may read from them (it
/// always refreshes them).
#[derive(Clone, Copy)]
struct Cache<'a> {
    lookups: &'a Lookups,
    read: bool,
}

/// One read -> plan -> commit; `None` when a concurrent write changed what
/// it read, or an hourly counter refused (`over` says which: the next plan
/// flags the conversion RAPID_CONVERSIONS).
async fn attempt(
    store: &Store,
    cache: Cache<'_>,
    tenant: &Tenant,
    p: &Postback,
    quota: Option<&Quota>,
    over: &Mutex<OverLimit>,
    now: DateTime<Utc>,
) -> Result<Option<Recorded>> {
    let tenant_key = tenant.key();
    let mut sightings = conversions::read_sightings(store, tenant, p).await?;
    sightings.over = over.lock().map(|o| *o).unwrap_or_default();
    let signals = match postback::open(&tenant_key, p, &sightings, quota)? {
        Opening::Replay { conversion_id } => {
            return replayed(store, &conversion_id, sightings.claimed).await
        }
        Opening::Attribute { signals } => signals,
    };
    let named = sightings.campaign.as_ref();
    let (parties, unchanged) = parties(store, cache, &tenant_key, &signals, named).await?;
    let plan = postback::plan(p, &sightings, &signals, &parties, quota, now)?;
    match conversions::commit(store, tenant, &plan, &unchanged, now).await? {
        Committed::Done => Ok(Some(Recorded::Created(plan.conversion))),
        Committed::Claimed(claim, conversion) => {
            let id = postback::replay(&tenant_key, &claim)?;
            replayed(store, &id, conversion.map(|c| *c)).await
        }
        Committed::QuotaReached => Err(match quota {
            Some(q) => q.reached(),
            None => domain::error::Error::internal("a quota failed where none was charged"),
        }),
        Committed::OverLimit(found) => {
            if let Ok(mut o) = over.lock() {
                o.customer |= found.customer;
                o.network |= found.network;
            }
            Ok(None)
        }
        Committed::Stale => Ok(None),
    }
}

/// Attributes a conversion recorded UNATTRIBUTED, as a postback of its
/// payment `p` would attribute it now (a checkout that names the affiliate
/// arrived after its first invoice): the same reads, rules and plan, then
/// one transaction on the recorded conversion. The conversion as attributed,
/// or `None` when there is nothing to attribute.
pub async fn attribute_late(
    store: &Store,
    lookups: &Lookups,
    tenant: &Tenant,
    recorded: &Conversion,
    p: &Postback,
    now: DateTime<Utc>,
) -> Result<Option<Conversion>> {
    let attempts = AtomicUsize::new(0);
    let attempts = &attempts;
    retry_on_conflict(
        RECORD_ATTEMPTS,
        "customer's referral or affiliate",
        || async move {
            let first = attempts.fetch_add(1, Ordering::Relaxed) == 0;
            let recorded = match first {
                true => recorded.clone(),
                false => conversions::get(store, tenant, &recorded.id).await?,
            };
            let cache = Cache {
                lookups,
                read: first,
            };
            let tenant_key = tenant.key();
            let mut sightings = conversions::read_sightings(store, tenant, p).await?;
            // The payment's own claim: this is the conversion it names.
            sightings.claim = None;
            let Opening::Attribute { signals } = postback::open(&tenant_key, p, &sightings, None)?
            else {
                return Ok(Attempt::Done(None));
            };
            let named = sightings.campaign.as_ref();
            let (parties, unchanged) = parties(store, cache, &tenant_key, &signals, named).await?;
            let plan = postback::plan(p, &sightings, &signals, &parties, None, now)?;
            let Some(late) = postback::attribute_late(&recorded, plan, now)? else {
                return Ok(Attempt::Done(None));
            };
            Ok(
                match conversions::commit_late(store, tenant, &late, &unchanged).await? {
                    Attributed::Done => Attempt::Done(Some(late.after)),
                    Attributed::Moved => Attempt::Done(None),
                    Attributed::Stale => Attempt::Conflict,
                },
            )
        },
    )
    .await
}

/// The conversion a claim names: the one read with the claim, else read now.
async fn replayed(
    store: &Store,
    conversion_id: &str,
    read: Option<Conversion>,
) -> Result<Option<Recorded>> {
    let c = match read.filter(|c| c.id == conversion_id) {
        Some(c) => c,
        None => conversions::claimed(store, conversion_id).await?,
    };
    Ok(Some(Recorded::Replayed(c)))
}

/// The tenant's affiliates and campaigns the signals name (the postback's
/// own campaign was read already): from the cache when it may serve them,
/// else read in one batch; what was read goes into the cache.
async fn parties(
    store: &Store,
    cache: Cache<'_>,
    tenant_key: &str,
    signals: &[Signal],
    named: Option<&Campaign>,
) -> Result<(Parties, Unchanged)> {
    let mut gathered = Gathered::default();
    let (mut affiliates, mut campaigns) = (Vec::new(), Vec::new());
    for sig in signals {
        let aff = sig.affiliate_id.as_str();
        if !gathered.cached_affiliate(cache, tenant_key, aff) {
            affiliates.push(aff);
        }
        let cmp = sig.campaign_id.as_str();
        if named.is_some_and(|c| c.id == cmp) {
            continue;
        }
        if !gathered.cached_campaign(cache, tenant_key, cmp) {
            campaigns.push(cmp);
        }
    }
    let Gathered {
        mut parties,
        unchanged,
    } = gathered;
    let read = conversions::read_parties(store, &affiliates, &campaigns).await?;
    for (a, owner) in read.affiliates {
        let facts = AffiliateFacts::from(&a);
        let status = a.status;
        cache
            .lookups
            .keep_affiliate(&a.id, (facts.clone(), status, owner.clone()));
        if owner == tenant_key {
            parties.affiliates.insert(a.id, facts);
        }
    }
    for (c, owner) in read.campaigns {
        cache.lookups.keep_campaign(&c, &owner);
        if owner == tenant_key {
            parties.campaigns.insert(c.id.clone(), c);
        }
    }
    if let Some(c) = named {
        parties.campaigns.insert(c.id.clone(), c.clone());
    }
    Ok((parties, unchanged))
}

/// The parties gathered so far: what the plan reads, and what the commit
/// checks is still as it was.
#[derive(Default)]
struct Gathered {
    parties: Parties,
    unchanged: Unchanged,
}

impl Gathered {
    /// Takes an affiliate from the cache when it may serve it (another
    /// tenant's is as if unknown); false when it is to be read.
    fn cached_affiliate(&mut self, cache: Cache<'_>, tenant_key: &str, id: &str) -> bool {
        match cache
            .read
            .then(|| cache.lookups.cached_affiliate(id))
            .flatten()
        {
            Some((facts, status, t)) if t == tenant_key => {
                let overrides = facts.commission_override.clone();
                self.parties.affiliates.insert(id.to_string(), facts);
                self.unchanged
                    .affiliates
                    .insert(id.to_string(), (status, overrides));
                true
            }
            Some(_) => true,
            None => false,
        }
    }

    /// Takes a campaign from the cache when it may serve it (another
    /// tenant's is as if unknown); false when it is to be read.
    fn cached_campaign(&mut self, cache: Cache<'_>, tenant_key: &str, id: &str) -> bool {
        match cache
            .read
            .then(|| cache.lookups.cached_campaign(id))
            .flatten()
        {
            Some((c, t)) if t == tenant_key => {
                self.parties.campaigns.insert(id.to_string(), c.clone());
                self.unchanged.campaigns.insert(id.to_string(), c);
                true
            }
            Some(_) => true,
            None => false,
        }
    }
}
