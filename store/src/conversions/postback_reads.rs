//! A postback's two reads: every key it names ([`read_sightings`]), then
//! the parties its signals point to ([`read_parties`]).

use std::collections::HashMap;

use serde::de::DeserializeOwned;

use super::batch::{batch, key, Key};
use super::claims::{claim_keys, payment_claims};
use crate::attrs;
use crate::keys::{self, GUARD_SK, RECORD_SK, TOTALS_SK};
use crate::{affiliates, from_item, string_of, Item, Store};
use domain::affiliate::Affiliate;
use domain::affiliate_code::AffiliateCode;
use domain::campaign::Campaign;
use domain::conversion::Postback;
use domain::error::Result;
use domain::ids::{self, IdKind};
use domain::postback::{self, Sightings};
use domain::referral::Referral;
use domain::risk::OverLimit;
use domain::tenant::Tenant;
use domain::tracking::{self, Click};

/// The tenant's record at `k` among the items read, as `T`.
fn tenant_record<T: DeserializeOwned>(
    found: &HashMap<Key, Item>,
    k: Option<&Key>,
    tenant_key: &str,
) -> Result<Option<T>> {
    match k.and_then(|k| found.get(k)) {
        Some(item) if string_of(item, attrs::TENANT) == Some(tenant_key) => {
            Ok(Some(from_item(item.clone())?))
        }
        _ => Ok(None),
    }
}

/// The tenant's click at `k` among the items read (its id is its key).
fn tenant_click(
    found: &HashMap<Key, Item>,
    k: Option<&Key>,
    tenant_key: &str,
) -> Result<Option<Click>> {
    let click: Option<Click> = tenant_record(found, k, tenant_key)?;
    Ok(click.map(|mut c| {
        c.id = k.map(|k| k.0.clone()).unwrap_or_default();
        c
    }))
}

/// Read 1: everything the postback names, as typed facts.
pub async fn read_sightings(store: &Store, tenant: &Tenant, p: &Postback) -> Result<Sightings> {
    let keys = NamedKeys::of(tenant, p);
    let found = batch(store, keys.all()).await?;
    keys.sightings(&found, p, &tenant.key())
}

/// The keys of what a postback names: its ids' claims, the click (by id and
/// by session), the code's and the promotion code's guards, the customer's
/// referrals and the campaign. A malformed id names no key.
struct NamedKeys {
    claims: Vec<(Key, Key)>,
    click: Option<Key>,
    session: Option<Key>,
    code: Option<Key>,
    promotion: Option<Key>,
    referrals: Vec<Key>,
    campaign: Option<Key>,
}

impl NamedKeys {
    fn of(tenant: &Tenant, p: &Postback) -> Self {
        let record = |id: Option<&str>, kind: IdKind| {
            id.filter(|c| ids::is_valid(kind, c))
                .map(|c| key(c, RECORD_SK))
        };
        NamedKeys {
            claims: p.claimed_ids().into_iter().map(claim_keys).collect(),
            click: record(p.click_id.as_deref(), IdKind::Click),
            session: p
                .session_id
                .as_deref()
                .and_then(tracking::click_id_of_session)
                .map(|c| key(c, RECORD_SK)),
            code: p
                .affiliate_code
                .as_deref()
                .filter(|c| AffiliateCode::parse("affiliateCode", c).is_ok())
                .map(|c| key(keys::code_guard(tenant, c), GUARD_SK)),
            promotion: p
                .promotion_code
                .as_deref()
                .map(|c| key(keys::promotion_guard(tenant, c), GUARD_SK)),
            referrals: postback::identities(p)
                .iter()
                .map(|k| key(keys::referral(tenant, k), RECORD_SK))
                .collect(),
            campaign: record(p.campaign_id.as_deref(), IdKind::Campaign),
        }
    }

    /// Every key, in one list for one read.
    fn all(&self) -> Vec<Key> {
        let mut wanted: Vec<Key> = self
            .claims
            .iter()
            .flat_map(|(a, b)| [a.clone(), b.clone()])
            .collect();
        wanted.extend(self.click.iter().cloned());
        wanted.extend(self.session.iter().cloned());
        wanted.extend(self.code.iter().cloned());
        wanted.extend(self.promotion.iter().cloned());
        wanted.extend(self.referrals.iter().cloned());
        wanted.extend(self.campaign.iter().cloned());
        wanted
    }

    /// The tenant's records among the items read at these keys.
    fn sightings(
        &self,
        found: &HashMap<Key, Item>,
        p: &Postback,
        tenant_key: &str,
    ) -> Result<Sightings> {
        let (found_claim, foreign_aliases) = payment_claims(found, p, &self.claims, tenant_key)?;
        let (claim, claimed) = found_claim.map_or((None, None), |(c, v)| (Some(c), v));
        let mut referrals = Vec::new();
        for k in &self.referrals {
            referrals.extend(tenant_record::<Referral>(found, Some(k), tenant_key)?);
        }
        Ok(Sightings {
            claim,
            claimed,
            click: tenant_click(found, self.click.as_ref(), tenant_key)?,
            session_click: tenant_click(found, self.session.as_ref(), tenant_key)?,
            code_owner: tenant_record(found, self.code.as_ref(), tenant_key)?,
            promotion_owner: tenant_record(found, self.promotion.as_ref(), tenant_key)?,
            referrals,
            campaign: tenant_record(found, self.campaign.as_ref(), tenant_key)?,
            over: OverLimit::default(),
            foreign_aliases,
        })
    }
}

/// The parties of a postback's signals as read: each record with the
/// tenant that owns it (the caller keeps only its own tenant's).
#[derive(Debug, Default)]
pub struct PartyRecords {
    pub affiliates: Vec<(Affiliate, String)>,
    pub campaigns: Vec<(Campaign, String)>,
}

/// Read 2: affiliates and campaigns by id, in one BatchGetItem (none for none).
pub async fn read_parties(
    store: &Store,
    affiliate_ids: &[&str],
    campaign_ids: &[&str],
) -> Result<PartyRecords> {
    // An affiliate's totals item beside its record: its customers and tier.
    let wanted = affiliate_ids
        .iter()
        .chain(campaign_ids)
        .map(|id| key(*id, RECORD_SK))
        .chain(affiliate_ids.iter().map(|id| key(*id, TOTALS_SK)))
        .collect();
    let (mut totals, mut records) = (HashMap::new(), Vec::new());
    for (k, item) in batch(store, wanted).await? {
        match k.1.as_str() {
            TOTALS_SK => {
                totals.insert(k.0, item);
            }
            _ => records.push((k, item)),
        }
    }
    let mut read = PartyRecords::default();
    for (k, item) in records {
        let owner = string_of(&item, attrs::TENANT)
            .unwrap_or_default()
            .to_string();
        if ids::is_valid(IdKind::Affiliate, &k.0) {
            let totals = totals.remove(&k.0);
            read.affiliates.push((
                affiliates::from_parts(item, totals.as_ref(), &owner)?,
                owner,
            ));
        } else {
            read.campaigns.push((from_item(item)?, owner));
        }
    }
    Ok(read)
}
