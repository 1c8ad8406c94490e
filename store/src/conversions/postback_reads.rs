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
    let tenant_key = tenant.key();
    let claims: Vec<(Key, Key)> = p.claimed_ids().into_iter().map(claim_keys).collect();
    let click_key = p
        .click_id
        .as_deref()
        .filter(|c| ids::is_valid(IdKind::Click, c))
        .map(|c| key(c, RECORD_SK));
    let session_key = p
        .session_id
        .as_deref()
        .and_then(tracking::click_id_of_session)
        .map(|c| key(c, RECORD_SK));
    let code_key = p
        .affiliate_code
        .as_deref()
        .filter(|c| AffiliateCode::parse("affiliateCode", c).is_ok())
        .map(|c| key(keys::code_guard(tenant, c), GUARD_SK));
    let promotion_key = p
        .promotion_code
        .as_deref()
        .map(|c| key(keys::promotion_guard(tenant, c), GUARD_SK));
    let referral_keys: Vec<Key> = postback::identities(p)
        .iter()
        .map(|k| key(keys::referral(tenant, k), RECORD_SK))
        .collect();
    let campaign_key = p
        .campaign_id
        .as_deref()
        .filter(|c| ids::is_valid(IdKind::Campaign, c))
        .map(|c| key(c, RECORD_SK));
    let mut wanted: Vec<Key> = claims
        .iter()
        .flat_map(|(a, b)| [a.clone(), b.clone()])
        .collect();
    wanted.extend(click_key.iter().cloned());
    wanted.extend(session_key.iter().cloned());
    wanted.extend(code_key.iter().cloned());
    wanted.extend(promotion_key.iter().cloned());
    wanted.extend(referral_keys.iter().cloned());
    wanted.extend(campaign_key.iter().cloned());
    let found = batch(store, wanted).await?;
    let (found_claim, foreign_aliases) = payment_claims(&found, p, &claims, &tenant_key)?;
    let (claim, claimed) = found_claim.map_or((None, None), |(c, v)| (Some(c), v));
    let mut referrals = Vec::new();
    for k in &referral_keys {
        referrals.extend(tenant_record::<Referral>(&found, Some(k), &tenant_key)?);
    }
    Ok(Sightings {
        claim,
        claimed,
        click: tenant_click(&found, click_key.as_ref(), &tenant_key)?,
        session_click: tenant_click(&found, session_key.as_ref(), &tenant_key)?,
        code_owner: tenant_record(&found, code_key.as_ref(), &tenant_key)?,
        promotion_owner: tenant_record(&found, promotion_key.as_ref(), &tenant_key)?,
        referrals,
        campaign: tenant_record(&found, campaign_key.as_ref(), &tenant_key)?,
        over: OverLimit::default(),
        foreign_aliases,
    })
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
