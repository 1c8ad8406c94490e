//! Conversion records and the postback flow.
//!
//! A conversion lives under its id (`pk = cnv_…`, derived from its
//! `externalId`: `domain::postback::conversion_id_of`; `sk = "R"`) and in four
//! index partitions, all sorted by `<occurredAt>#<id>` (newest first, `from`/`to`
//! as key ranges): every conversion of the tenant (GSI1), by campaign (GSI2),
//! by status (GSI3) and by affiliate (GSI4). `amountValue` repeats the amount
//! as a number for the `min_amount`/`max_amount` filters.
//!
//! A postback (`services::postback` runs it; `domain::postback` decides)
//! reads here with two BatchGetItem calls ([`read_sightings`]: every key the
//! postback names; [`read_parties`]: the affiliates and campaigns its signals
//! point to that the process's cache does not serve) and commits its plan
//! here with one TransactWriteItems ([`commit`]):
//!
//! - the conversion (`attribute_not_exists`): its key is its `externalId`'s
//!   claim, unique across tenants (a provider payment's other ids are claimed
//!   at the keys they derive, as alias items; ids claimed before conversions
//!   were their own claims keep their `XID#` items, read beside);
//! - the live-mode monthly quota counter (ADD with a cap condition);
//! - the customer's referrals (created, or `firstPaymentAt` set once);
//! - the affiliate's `earned` total in the payment's currency, in its TOTALS
//!   item (`ADD`; see `store::affiliate_totals`), with a ConditionCheck that
//!   the affiliate is still in the status the plan requires (neither rewrites
//!   the affiliate record);
//! - the day and month rollups.
//!
//! Either all of it happens or none; a repeated postback finds the claim
//! (before writing, or as the transaction's failed condition on the
//! conversion) and answers with the conversion it names.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use rust_decimal::Decimal;
use serde::de::DeserializeOwned;

use crate::attrs::{self, CREATED_AT, METADATA, PAYOUT_ID, STATUS, UPDATED_AT};
use crate::compact::Derived;
use crate::keys::{self, Index, ListKind, GUARD_SK, RECORD_SK, TOTALS_SK};
use crate::page::{self, ListQuery, Page, PageRequest};
use crate::tx::{Tx, TxError};
use crate::update::UpdateExpr;
use crate::{
    affiliate_totals, affiliates, campaigns, counters, events, from_item, item_at, number_value,
    payout_items, pools, referrals, rollups, string_of, string_value, IndexKeys, Item, Store,
};
use domain::affiliate::{Affiliate, AffiliateStatus};
use domain::affiliate_code::AffiliateCode;
use domain::campaign::Campaign;
use domain::commission_plan::Pay;
use domain::conversion::{
    Conversion, ConversionStatus, ConversionType, Earning, PayoutStage, Postback, Release, Reversal,
};
use domain::error::{Error, Result};
use domain::ids::{self, IdKind};
use domain::money::Currency;
use domain::payout::{Payout, PayoutStatus};
use domain::postback::{
    self, CountScope, ExternalIdClaim, HourlyCount, LateAttribution, Plan, ReferredChange,
    Sightings,
};
use domain::referral::Referral;
use domain::risk::{OverLimit, RiskLevel};
use domain::tenant::Tenant;
use domain::timestamp;
use domain::tracking::{self, Click};

/// Quota counters outlive their month by this long, then TTL removes them.
const QUOTA_TTL_DAYS: i64 = 400;
/// Conversion attributes a reversal rewrites (with the GSI3 partition).
const REVERSAL_FIELDS: [&str; 7] = [
    STATUS,
    "reversedAt",
    "reversalReason",
    attrs::UPDATED_AT,
    REVERSED_AMOUNT,
    COMMISSION_REVERSED,
    COMMISSION_CLAWED_BACK,
];
const REVERSED_AMOUNT: &str = "reversedAmount";
/// The attribute of `Conversion::commission_reversed` (stored as the decimal's string).
pub const COMMISSION_REVERSED: &str = "commissionReversed";
/// The attribute of `Conversion::commission_clawed_back`.
pub const COMMISSION_CLAWED_BACK: &str = "commissionClawedBack";

/// The stored form of a decimal attribute (serde's: its string), for conditions.
pub fn decimal_value(d: Decimal) -> aws_sdk_dynamodb::types::AttributeValue {
    string_value(d.to_string())
}

/// The index entries of a conversion.
pub fn index_keys(tenant: &Tenant, c: &Conversion) -> IndexKeys {
    let sk = c.sort_key();
    let mut index = IndexKeys::new()
        .with(
            Index::Gsi1,
            keys::tenant_list(tenant, ListKind::Conversion),
            &sk,
        )
        .with(Index::Gsi3, status_partition(tenant, c.status), &sk);
    if let Some(cmp) = &c.campaign_id {
        index = index.with(
            Index::Gsi2,
            keys::by_campaign(tenant, ListKind::Conversion, cmp),
            &sk,
        );
    }
    if let Some(aff) = &c.affiliate_id {
        index = index.with(
            Index::Gsi4,
            keys::by_affiliate(tenant, ListKind::Conversion, aff),
            &sk,
        );
    }
    match (c.payout_stage(), &c.affiliate_id) {
        (PayoutStage::AwaitingHold(at), _) => index.with(
            Index::Gsi5,
            keys::due_approval(keys::shard_of(&c.id)),
            keys::at(&at, &c.id),
        ),
        (PayoutStage::Payable, Some(aff)) => index.with(
            Index::Gsi5,
            keys::payable_pool(tenant, aff, c.currency.code()),
            &sk,
        ),
        (PayoutStage::InPayout(po), _) => index.with(Index::Gsi5, keys::payout_members(&po), &sk),
        _ => index,
    }
}

/// The GSI3 partition of conversions in a status. A status change must set
/// `gsi3pk` to this (the sort key stays).
pub fn status_partition(tenant: &Tenant, status: ConversionStatus) -> String {
    keys::by_status(tenant, ListKind::Conversion, status)
}

/// The item of a conversion, without what [`decode`] derives again.
pub fn item(tenant: &Tenant, c: &Conversion) -> Result<Item> {
    let mut item = crate::record_item(&c.id, Some(&tenant.key()), c, &index_keys(tenant, c))?;
    item.insert(attrs::AMOUNT_VALUE.into(), number_value(c.amount));
    page::mark_risk(&mut item, &c.risk);
    leave_out_derived(&mut item);
    Ok(item)
}

/// Attributes an item leaves out while they hold only what the rest says,
/// about 250 bytes, so that a conversion stays under 1 KB through its
/// status moves (`store::compact`): `id`, `campaignId`, `affiliateId`,
/// `createdAt` equal to `occurredAt`, `updatedAt` equal to `createdAt`; and
/// here an empty `metadata`, `isRecurring: false`, `conversionType: SALE`,
/// `payableAt` equal to `occurredAt + holdDays` (`Conversion::payable_after`).
const IS_RECURRING: &str = "isRecurring";
const OCCURRED_AT: &str = "occurredAt";
const PAYABLE_AT: &str = "payableAt";
const HOLD_DAYS: &str = "holdDays";
const CONVERSION_TYPE: &str = "conversionType";
/// What `store::compact` leaves out of a conversion.
const DERIVED: Derived = Derived {
    kind: ListKind::Conversion,
    same_as: &[(UPDATED_AT, CREATED_AT), (CREATED_AT, OCCURRED_AT)],
    zero: &[],
};

fn leave_out_derived(item: &mut Item) {
    use aws_sdk_dynamodb::types::AttributeValue as V;
    // `payableAt` first: it is compared with `occurredAt`, never left out.
    if item.get(PAYABLE_AT).is_some() && item.get(PAYABLE_AT) == derived_payable_at(item).as_ref() {
        item.remove(PAYABLE_AT);
    }
    DERIVED.leave_out(item);
    if string_of(item, CONVERSION_TYPE) == Some(ConversionType::default().as_str()) {
        item.remove(CONVERSION_TYPE);
    }
    if matches!(item.get(METADATA), Some(V::M(m)) if m.is_empty()) {
        item.remove(METADATA);
    }
    if matches!(item.get(IS_RECURRING), Some(V::Bool(false))) {
        item.remove(IS_RECURRING);
    }
}

/// `occurredAt + holdDays` in the item's own form.
fn derived_payable_at(item: &Item) -> Option<aws_sdk_dynamodb::types::AttributeValue> {
    let occurred = timestamp::read_stored(string_of(item, OCCURRED_AT)?)?;
    let days = match item.get(HOLD_DAYS)? {
        aws_sdk_dynamodb::types::AttributeValue::N(n) => n.parse().ok()?,
        _ => return None,
    };
    Some(string_value(timestamp::format(&Conversion::payable_after(
        occurred, days,
    ))))
}

/// A conversion from its item: what [`item`] left out is derived again (an
/// item written before it left anything out holds it all).
pub fn decode(mut item: Item) -> Result<Conversion> {
    if item.contains_key(ALIAS_OF) {
        return Err(Error::NotFound("conversion"));
    }
    DERIVED.restore(&mut item);
    if !item.contains_key(PAYABLE_AT) {
        if let Some(v) = derived_payable_at(&item) {
            item.insert(PAYABLE_AT.into(), v);
        }
    }
    from_item(item)
}

/// The tenant's conversion, or NOT_FOUND.
pub async fn get(store: &Store, tenant: &Tenant, id: &str) -> Result<Conversion> {
    if !ids::is_valid(IdKind::Conversion, id) {
        return Err(Error::NotFound("conversion"));
    }
    store
        .get_owned_item(id, &tenant.key())
        .await?
        .map(decode)
        .unwrap_or(Err(Error::NotFound("conversion")))
}

/// List filters. One of them picks the index partition (payout, else
/// affiliate, else campaign, else status, else every conversion); `from`/`to`
/// are key ranges; the rest filter that one Query.
#[derive(Debug, Clone, Default)]
pub struct ConversionFilter {
    /// The conversions a payout holds (or held, once paid).
    pub payout_id: Option<String>,
    pub affiliate_id: Option<String>,
    pub campaign_id: Option<String>,
    pub status: Option<ConversionStatus>,
    pub currency: Option<Currency>,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub min_amount: Option<Decimal>,
    pub max_amount: Option<Decimal>,
    pub risk_level: Option<RiskLevel>,
}

/// The query a filter runs: the most selective partition, the rest as filters.
pub fn list_query(tenant: &Tenant, f: &ConversionFilter) -> ListQuery {
    let mut q = if let Some(po) = &f.payout_id {
        payout_members_query(tenant, po)
    } else if let Some(a) = &f.affiliate_id {
        ListQuery::new(
            Index::Gsi4,
            keys::by_affiliate(tenant, ListKind::Conversion, a),
        )
    } else if let Some(c) = &f.campaign_id {
        ListQuery::new(
            Index::Gsi2,
            keys::by_campaign(tenant, ListKind::Conversion, c),
        )
    } else if let Some(st) = f.status {
        ListQuery::new(Index::Gsi3, status_partition(tenant, st))
    } else {
        ListQuery::new(Index::Gsi1, keys::tenant_list(tenant, ListKind::Conversion))
    };
    // Sort keys are `<occurredAt>#<id>`.
    q = q.within(f.from, f.to);
    if let (Some(a), Some(Index::Gsi5)) = (&f.affiliate_id, q.index) {
        // The item's GSI4 partition names it (`affiliateId` is left out).
        q.filter = q.filter.eq(
            Index::Gsi4.pk(),
            &keys::by_affiliate(tenant, ListKind::Conversion, a),
        );
    }
    if let (Some(c), Some(Index::Gsi4 | Index::Gsi5)) = (&f.campaign_id, q.index) {
        q.filter = q.filter.eq(
            Index::Gsi2.pk(),
            &keys::by_campaign(tenant, ListKind::Conversion, c),
        );
    }
    if let (Some(st), Some(Index::Gsi4 | Index::Gsi2 | Index::Gsi5)) = (f.status, q.index) {
        q.filter = q.filter.status(st);
    }
    if let Some(cur) = f.currency {
        q.filter = q.filter.eq(attrs::CURRENCY, cur.code());
    }
    if let Some(min) = f.min_amount {
        q.filter = q.filter.num(attrs::AMOUNT_VALUE, ">=", &min.to_string());
    }
    if let Some(max) = f.max_amount {
        q.filter = q.filter.num(attrs::AMOUNT_VALUE, "<=", &max.to_string());
    }
    if let Some(level) = f.risk_level {
        q.filter = q.filter.risk_level(level);
    }
    q
}

/// A payout's partition of the work index (sort key `<occurredAt>#<id>`).
/// Payout ids are global, so the tenant is a filter, and the payout's
/// adjustments, which share the partition, are left out.
fn payout_members_query(tenant: &Tenant, payout_id: &str) -> ListQuery {
    let mut q = ListQuery::new(Index::Gsi5, keys::payout_members(payout_id));
    q.filter = q
        .filter
        .eq(attrs::TENANT, &tenant.key())
        .begins_with(attrs::PK, &format!("{}_", IdKind::Conversion.prefix()));
    q
}

/// The cursor of the list's page that starts after `c`.
pub fn cursor_after(
    tenant: &Tenant,
    f: &ConversionFilter,
    c: &Conversion,
) -> Result<Option<String>> {
    Ok(crate::page::cursor_after(
        &list_query(tenant, f),
        &item(tenant, c)?,
    ))
}

/// The tenant's conversions, newest first by `occurredAt`.
pub async fn list(
    store: &Store,
    tenant: &Tenant,
    f: &ConversionFilter,
    page: &PageRequest,
) -> Result<Page<Conversion>> {
    store
        .query_page(&list_query(tenant, f), page)
        .await?
        .try_map(decode)
}

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

/// The role of each action of a reversal's transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReverseAction {
    Conversion,
    Rollup,
    AffiliateStatus,
    Earned,
    Clawback,
    Event,
}

type Key = (String, String);

fn key(pk: impl Into<String>, sk: &str) -> Key {
    (pk.into(), sk.to_string())
}

/// The items read by key, de-duplicated, in one BatchGetItem per 100 keys
/// at once (none for no key; a payment may name many ids).
async fn batch(store: &Store, keys: Vec<Key>) -> Result<HashMap<Key, Item>> {
    let mut seen = HashSet::new();
    let keys: Vec<Key> = keys
        .into_iter()
        .filter(|k| seen.insert(k.clone()))
        .collect();
    let reads = keys.chunks(100).map(|chunk| store.batch_get(chunk));
    let read = futures::future::try_join_all(reads).await?;
    Ok(read
        .into_iter()
        .flatten()
        .filter_map(|item| {
            let k = key(string_of(&item, attrs::PK)?, string_of(&item, attrs::SK)?);
            Some((k, item))
        })
        .collect())
}

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

/// The attribute that makes an item at a conversion's key an alias claim
/// (an [`ExternalIdClaim`] naming another conversion), not a conversion.
const ALIAS_OF: &str = "conversionId";

/// The keys an externalId's claim may sit at: the conversion whose id it
/// derives (or an alias claim there), and the claim item of an id claimed
/// before conversions were their own claims (read first; none is written now).
fn claim_keys(external_id: &str) -> (Key, Key) {
    (
        key(postback::conversion_id_of(external_id), RECORD_SK),
        key(keys::external_id_guard(external_id), GUARD_SK),
    )
}

/// The claim an item at a derived conversion key holds: the conversion
/// itself, or an alias claim naming its conversion.
fn claim_in(item: &Item) -> Result<Claim> {
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
type Claim = (ExternalIdClaim, Option<Conversion>);

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
fn payment_claims(
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
async fn read_claim(store: &Store, p: &Plan) -> Result<Claim> {
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
fn alias_item(
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
        Err(e)
            if [
                A::Referral,
                A::AffiliateStatus,
                A::Earned,
                A::CachedCampaign,
            ]
            .iter()
            .any(|r| e.failed(*r)) =>
        {
            Ok(Committed::Stale)
        }
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
    events::append(&mut tx, A::Event, tenant, &plan.event)?;
    if let Some(flagged) = &plan.flagged {
        events::append(&mut tx, A::Event, tenant, flagged)?;
    }
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
    events::append(&mut tx, A::Event, tenant, &late.event)?;
    if let Some(flagged) = &late.flagged {
        events::append(&mut tx, A::Event, tenant, flagged)?;
    }
    let roles = (A::CachedCampaign, A::AffiliateStatus);
    let credited = (&late.after, late.earning.as_ref());
    check_cached(&mut tx, roles, &tenant_key, credited, cached);
    match store.transact(tx).await {
        Ok(()) => Ok(Attributed::Done),
        Err(e) if e.failed(A::Conversion) => Ok(Attributed::Moved),
        Err(e)
            if [
                A::Referral,
                A::AffiliateStatus,
                A::Earned,
                A::CachedCampaign,
            ]
            .iter()
            .any(|r| e.failed(*r)) =>
        {
            Ok(Attributed::Stale)
        }
        Err(e) => Err(e.into_error()),
    }
}

/// What a reversal decides from: the conversion and the status of the
/// payout holding it, if any.
#[derive(Debug, Clone)]
pub struct ReversalFacts {
    pub conversion: Conversion,
    /// The status of the payout holding it; what that means for the
    /// reversal is the domain's (`HoldingPayout::from`).
    pub payout_status: Option<PayoutStatus>,
}

/// Reads a reversal's facts: the conversion (404 when unknown), then the
/// payout that holds it.
pub async fn read_reversal(store: &Store, tenant: &Tenant, id: &str) -> Result<ReversalFacts> {
    let conversion = get(store, tenant, id).await?;
    let payout: Option<Payout> = match &conversion.payout_id {
        Some(po) => store
            .get_owned_item(po, &tenant.key())
            .await?
            .map(payout_items::decode)
            .transpose()?,
        None => None,
    };
    Ok(ReversalFacts {
        conversion,
        payout_status: payout.map(|p| p.status),
    })
}

/// Commits a reversal of `read` (the conversion as it was read): the status,
/// the rollups, the affiliate's `earned` total and, for a paid conversion,
/// the clawback, in one transaction conditioned on the conversion being
/// unchanged. False when it changed meanwhile (or the totals item refused
/// the tenant).
pub async fn commit_reversal(
    store: &Store,
    tenant: &Tenant,
    read: &Conversion,
    r: &Reversal,
) -> Result<bool> {
    use ReverseAction as A;
    let tenant_key = tenant.key();
    let mut tx = store.tx();
    let held = match &read.payout_id {
        Some(po) => UpdateExpr::new().when_eq(PAYOUT_ID, string_value(po.clone())),
        None => UpdateExpr::new().when_absent(PAYOUT_ID),
    };
    let after = item(tenant, &r.reversed)?;
    let change = held
        .copy_from(&after, &REVERSAL_FIELDS)
        .copy_from(&after, &Index::attributes())
        .when_tenant(&tenant_key)
        .when_status(r.from)
        .when_absent_or_eq(REVERSED_AMOUNT, decimal_value(read.reversed_amount));
    tx.update(A::Conversion, &read.id, RECORD_SK, &change);
    rollups::moved_many(
        &mut tx,
        A::Rollup,
        tenant,
        &[(r.before.clone(), r.reversed.clone())],
    );
    if let Some(e) = &r.give_back {
        affiliates::earn(
            &mut tx,
            (A::AffiliateStatus, A::Earned),
            &tenant_key,
            e,
            None,
        );
    }
    if let Some(a) = &r.clawback {
        pools::add_adjustment(&mut tx, A::Clawback, tenant, a)?;
    }
    events::append(&mut tx, A::Event, tenant, &r.event)?;
    match store.transact(tx).await {
        Ok(()) => Ok(true),
        Err(e) if e.failed(A::Conversion) || e.failed(A::Earned) => Ok(false),
        Err(e) => Err(e.into_error()),
    }
}

/// The update of a conversion's status change from `before` to `after`: the
/// status, `updatedAt` and the index keys, conditioned on the tenant, the
/// status and the reversed amount as read (a partial reversal meanwhile
/// moved its rollups, so the change must be planned again). The caller adds
/// the payout condition.
pub fn status_move(tenant: &Tenant, before: &Conversion, after: &Conversion) -> Result<UpdateExpr> {
    let mut fields = vec![STATUS, attrs::UPDATED_AT];
    fields.extend(Index::attributes());
    Ok(UpdateExpr::new()
        .copy_from(&item(tenant, after)?, &fields)
        .when_tenant(&tenant.key())
        .when_status(before.status)
        .when_absent_or_eq(REVERSED_AMOUNT, decimal_value(before.reversed_amount)))
}

/// The role of each action of a release's transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReleaseAction {
    Conversion,
    Rollup,
    Marker,
    Event,
}

/// Commits a release: the new status and index entries (while the
/// conversion is still ON_HOLD and in no payout), its rollups, its events
/// and, for an APPROVED one, its pool marked for the payout job. False when
/// it changed meanwhile (a partial reversal included: its rollups moved).
pub async fn commit_release(store: &Store, tenant: &Tenant, r: &Release) -> Result<bool> {
    use ReleaseAction as A;
    let mut tx = store.tx();
    let change = status_move(tenant, &r.before, &r.after)?.when_absent(PAYOUT_ID);
    tx.update(A::Conversion, &r.after.id, RECORD_SK, &change);
    rollups::moved_many(
        &mut tx,
        A::Rollup,
        tenant,
        &[(r.before.clone(), r.after.clone())],
    );
    pools::touch_pools_joined(&mut tx, A::Marker, tenant, [&r.after]);
    for e in &r.events {
        events::append(&mut tx, A::Event, tenant, e)?;
    }
    match store.transact(tx).await {
        Ok(()) => Ok(true),
        Err(e) if e.failed(A::Conversion) => Ok(false),
        Err(e) => Err(e.into_error()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::tenant::Mode;

    /// A stored conversion with the given times, metadata and recurrence.
    fn recorded(times: [&str; 4], recurring: bool, metadata: serde_json::Value) -> Conversion {
        let [occurred, created, updated, payable] = times;
        serde_json::from_value(serde_json::json!({
            "id": "cnv_01JD0000000000000000000001", "externalId": "order-1",
            "campaignId": "cmp_1", "affiliateId": "aff_1", "amount": "49.99",
            "currency": "USD", "conversionType": "SALE", "commission": "5.00",
            "status": "PENDING", "attribution": "CODE", "isRecurring": recurring,
            "holdDays": 30, "payableAt": payable, "metadata": metadata,
            "occurredAt": occurred, "createdAt": created, "updatedAt": updated,
        }))
        .unwrap()
    }

    #[test]
    fn an_item_leaves_out_what_decode_derives() {
        let t = Tenant::new("acct_1", Mode::Test);
        let at = "2026-11-26T10:00:00.123Z";
        let fresh = recorded(
            [at, at, at, "2026-12-26T10:00:00.123Z"],
            false,
            serde_json::json!({}),
        );
        let it = item(&t, &fresh).unwrap();
        for gone in [
            "id",
            "campaignId",
            "affiliateId",
            CONVERSION_TYPE,
            METADATA,
            IS_RECURRING,
            CREATED_AT,
            UPDATED_AT,
            PAYABLE_AT,
        ] {
            assert!(!it.contains_key(gone), "{gone} is stored");
        }
        assert_eq!(string_of(&it, "pk"), Some(fresh.id.as_str()));
        assert_eq!(decode(it).unwrap(), fresh);

        // Values that differ from what they would be derived from are kept.
        let moved = recorded(
            [
                at,
                "2026-11-26T10:00:01.000Z",
                "2026-11-27T08:00:00.000Z",
                at,
            ],
            true,
            serde_json::json!({"plan": "pro"}),
        );
        let it = item(&t, &moved).unwrap();
        for kept in [METADATA, IS_RECURRING, CREATED_AT, UPDATED_AT, PAYABLE_AT] {
            assert!(it.contains_key(kept), "{kept} is left out");
        }
        assert_eq!(decode(it).unwrap(), moved);

        // An item written before anything was left out reads the same.
        let old = crate::record_item(&fresh.id, Some(&t.key()), &fresh, &IndexKeys::new());
        let old = old.unwrap();
        assert!(old.contains_key(PAYABLE_AT) && old.contains_key("id"));
        assert_eq!(decode(old).unwrap(), fresh);
    }

    #[test]
    fn the_most_selective_partition_serves_a_list() {
        let t = Tenant::new("acct_1", Mode::Test);
        let f = ConversionFilter {
            affiliate_id: Some("aff_1".into()),
            campaign_id: Some("cmp_1".into()),
            status: Some(ConversionStatus::Pending),
            min_amount: Some(Decimal::from(5)),
            ..Default::default()
        };
        let q = list_query(&t, &f);
        assert_eq!(q.index, Some(Index::Gsi4));
        assert_eq!(q.pk, "acct_1#test#CNV#AFF#aff_1");
        assert!(q.sk_between.is_none());
        let q = list_query(
            &t,
            &ConversionFilter {
                payout_id: Some("po_1".into()),
                ..f.clone()
            },
        );
        assert_eq!((q.index, q.pk.as_str()), (Some(Index::Gsi5), "PO#po_1"));
        let q = list_query(
            &t,
            &ConversionFilter {
                campaign_id: Some("cmp_1".into()),
                status: Some(ConversionStatus::Pending),
                ..Default::default()
            },
        );
        assert_eq!(q.index, Some(Index::Gsi2));
        let q = list_query(
            &t,
            &ConversionFilter {
                status: Some(ConversionStatus::Reversed),
                from: timestamp::parse_datetime("2026-01-01T00:00:00Z"),
                ..Default::default()
            },
        );
        assert_eq!(q.index, Some(Index::Gsi3));
        assert_eq!(q.pk, "acct_1#test#CNV#ST#REVERSED");
        assert_eq!(
            q.sk_between,
            Some(("2026-01-01T00:00:00.000Z".to_string(), "~".to_string()))
        );
        let q = list_query(
            &t,
            &ConversionFilter {
                to: timestamp::parse_datetime("2026-01-31T23:59:59.999Z"),
                ..Default::default()
            },
        );
        assert_eq!(q.index, Some(Index::Gsi1));
        assert_eq!(
            q.sk_between,
            Some(("0".to_string(), "2026-01-31T23:59:59.999Z#~".to_string()))
        );
    }
}
