//! Conversion records and the postback flow.
//!
//! A conversion lives under its id (`pk = cnv_<ULID>`, `sk = "R"`) and in four
//! index partitions, all sorted by `<occurredAt>#<id>` (newest first, `from`/`to`
//! as key ranges): every conversion of the tenant (GSI1), by campaign (GSI2),
//! by status (GSI3) and by affiliate (GSI4). `amountValue` repeats the amount
//! as a number for the `min_amount`/`max_amount` filters.
//!
//! A postback costs two BatchGetItem calls (every key its signals name, then
//! the affiliates and campaigns they point to) and one TransactWriteItems:
//!
//! 0. the `externalId` guard (`attribute_not_exists`), unique across tenants;
//! 1. the conversion;
//! 2. the live-mode monthly quota counter (ADD with a cap condition);
//! 3. the customer's referrals (created, or `firstPaymentAt` set once);
//! 4. the affiliate's `earned` total in the payment's currency, in its TOTALS
//!    item (`ADD`; see `store::affiliate_totals`), with a ConditionCheck that
//!    the affiliate is still ACTIVE (neither rewrites the affiliate record);
//! 5. the day and month rollups.
//!
//! Either all of it happens or none; a repeated postback finds the guard
//! (before writing, or as the transaction's failed condition) and answers
//! with the conversion it names.

use std::collections::{HashMap, HashSet};

use aws_sdk_dynamodb::types::TransactWriteItem;
use chrono::{DateTime, Duration, Utc};
use rust_decimal::Decimal;

use crate::domain::affiliate_code::AffiliateCode;
use crate::domain::attribution::{self, AffiliateFacts, Signal};
use crate::domain::campaign::Campaign;
use crate::domain::commission::{self, Payment};
use crate::domain::conversion::{
    AttributionMethod, Conversion, ConversionStatus, ConversionType, Postback,
};
use crate::domain::referral::{CustomerKey, Referral};
use crate::domain::tenant::Tenant;
use crate::domain::tracking;
use crate::error::{Error, Result};
use crate::ids::{self, new_id, IdKind};
use crate::money::Currency;
use crate::store::keys::{self, Index, Kind, GUARD_SK, RECORD_SK};
use crate::store::page::{ListQuery, Page, PageRequest};
use crate::store::{
    affiliate_totals, from_item, get_s, n, referrals, rollups, s, IndexKeys, Item, Store,
};
use crate::timestamp;

/// `source` of a referral bound by an attributed payment.
pub const SOURCE_PAYMENT: &str = "PAYMENT";
/// Times a postback is re-planned after a concurrent write changed what it read
/// (the customer's referral or the affiliate).
const RECORD_ATTEMPTS: usize = 4;
/// Times a reversal is re-planned after a concurrent write to the conversion.
const REVERSE_ATTEMPTS: usize = 3;
/// Quota counters outlive their month by this long, then TTL removes them.
const QUOTA_TTL_DAYS: i64 = 400;

/// The index entries of a conversion.
pub fn index_keys(tenant: &Tenant, c: &Conversion) -> IndexKeys {
    let sk = c.sort_key();
    let mut index = IndexKeys::new()
        .with(
            Index::Gsi1,
            keys::tenant_list(tenant, Kind::Conversion),
            &sk,
        )
        .with(Index::Gsi3, status_partition(tenant, c.status), &sk);
    if let Some(cmp) = &c.campaign_id {
        index = index.with(
            Index::Gsi2,
            keys::by_campaign(tenant, Kind::Conversion, cmp),
            &sk,
        );
    }
    if let Some(aff) = &c.affiliate_id {
        index = index.with(
            Index::Gsi4,
            keys::by_affiliate(tenant, Kind::Conversion, aff),
            &sk,
        );
    }
    index
}

/// The GSI3 partition of conversions in a status. A status change must set
/// `gsi3pk` to this (the sort key stays).
pub fn status_partition(tenant: &Tenant, status: ConversionStatus) -> String {
    keys::by_status(tenant, Kind::Conversion, status.as_str())
}

/// The item of a conversion.
pub fn item(tenant: &Tenant, c: &Conversion) -> Result<Item> {
    let mut item =
        crate::store::record_item(&c.id, Some(&tenant.key()), c, &index_keys(tenant, c))?;
    item.insert("amountValue".into(), n(c.amount));
    Ok(item)
}

/// The tenant's conversion, or NOT_FOUND.
pub async fn get(store: &Store, tenant: &Tenant, id: &str) -> Result<Conversion> {
    if !ids::is_valid(IdKind::Conversion, id) {
        return Err(Error::NotFound("conversion"));
    }
    store
        .get_owned(id, &tenant.key())
        .await?
        .ok_or(Error::NotFound("conversion"))
}

/// List filters. One of them picks the index partition (affiliate, else
/// campaign, else status, else every conversion); `from`/`to` are key ranges;
/// the rest filter that one Query.
#[derive(Debug, Clone, Default)]
pub struct ConversionFilter {
    pub affiliate_id: Option<String>,
    pub campaign_id: Option<String>,
    pub status: Option<ConversionStatus>,
    pub currency: Option<Currency>,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub min_amount: Option<Decimal>,
    pub max_amount: Option<Decimal>,
}

/// The query a filter runs: the most selective partition, the rest as filters.
pub fn list_query(tenant: &Tenant, f: &ConversionFilter) -> ListQuery {
    let mut q = if let Some(a) = &f.affiliate_id {
        ListQuery::new(Index::Gsi4, keys::by_affiliate(tenant, Kind::Conversion, a))
    } else if let Some(c) = &f.campaign_id {
        ListQuery::new(Index::Gsi2, keys::by_campaign(tenant, Kind::Conversion, c))
    } else if let Some(st) = f.status {
        ListQuery::new(Index::Gsi3, status_partition(tenant, st))
    } else {
        ListQuery::new(Index::Gsi1, keys::tenant_list(tenant, Kind::Conversion))
    };
    if f.from.is_some() || f.to.is_some() {
        // Sort keys are `<occurredAt>#<id>`; "~" sorts after every id.
        q.sk_between = Some((
            f.from.map_or("0".to_string(), |t| timestamp::format(&t)),
            f.to.map_or("~".to_string(), |t| format!("{}#~", timestamp::format(&t))),
        ));
    }
    if let (Some(c), Index::Gsi4) = (&f.campaign_id, q.index) {
        q.filter = q.filter.eq("campaignId", c);
    }
    if let (Some(st), Index::Gsi4 | Index::Gsi2) = (f.status, q.index) {
        q.filter = q.filter.eq("status", st.as_str());
    }
    if let Some(cur) = f.currency {
        q.filter = q.filter.eq("currency", cur.code());
    }
    if let Some(min) = f.min_amount {
        q.filter = q.filter.num("amountValue", ">=", &min.to_string());
    }
    if let Some(max) = f.max_amount {
        q.filter = q.filter.num("amountValue", "<=", &max.to_string());
    }
    q
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
        .try_map(from_item)
}

/// The live-mode monthly conversion quota of an account.
#[derive(Debug, Clone)]
pub struct Quota {
    pub account_id: String,
    pub plan: String,
    /// `None`: unlimited (still counted).
    pub cap: Option<u64>,
}

/// What a postback did.
#[derive(Debug, Clone)]
pub enum Recorded {
    /// A new conversion (201).
    Created(Conversion),
    /// The externalId was seen before in this tenant: the conversion it names (200).
    Replayed(Conversion),
}

type Key = (String, String);

fn key(pk: impl Into<String>, sk: &str) -> Key {
    (pk.into(), sk.to_string())
}

fn owned<'a>(got: &'a HashMap<Key, Item>, k: &Key, tenant_key: &str) -> Option<&'a Item> {
    got.get(k)
        .filter(|item| get_s(item, "tenant") == Some(tenant_key))
}

fn time_attr(item: &Item, name: &str) -> Option<DateTime<Utc>> {
    get_s(item, name).and_then(timestamp::parse_datetime)
}

async fn batch(store: &Store, keys: Vec<Key>) -> Result<HashMap<Key, Item>> {
    let mut seen = HashSet::new();
    let keys: Vec<Key> = keys
        .into_iter()
        .filter(|k| seen.insert(k.clone()))
        .collect();
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    Ok(store
        .batch_get(&keys)
        .await?
        .into_iter()
        .filter_map(|item| {
            let k = key(get_s(&item, "pk")?, get_s(&item, "sk")?);
            Some((k, item))
        })
        .collect())
}

/// Records a postback: attribution, commission, referral, quota and rollups in
/// one transaction, exactly once per `externalId`.
pub async fn record(
    store: &Store,
    tenant: &Tenant,
    p: &Postback,
    quota: Option<&Quota>,
    now: DateTime<Utc>,
) -> Result<Recorded> {
    for _ in 0..RECORD_ATTEMPTS {
        if let Some(done) = attempt(store, tenant, p, quota, now).await? {
            return Ok(done);
        }
    }
    Err(Error::Unavailable(
        "the customer's referral or the affiliate is being changed by concurrent requests; retry"
            .into(),
    ))
}

fn quota_reached(q: &Quota) -> Error {
    Error::LimitExceeded(format!(
        "the monthly conversion quota of the {} plan ({}) is reached",
        q.plan,
        q.cap.unwrap_or_default()
    ))
}

/// The conversion a guard names, for a repeated postback.
async fn replay(store: &Store, tenant: &Tenant, guard: &Item) -> Result<Recorded> {
    if get_s(guard, "tenant") != Some(tenant.key().as_str()) {
        return Err(Error::AlreadyExists(
            "this externalId was already submitted by another account (or in the other mode)"
                .into(),
        ));
    }
    let id = get_s(guard, "conversionId")
        .ok_or_else(|| Error::internal("externalId guard without conversionId"))?;
    let item = store
        .get_item(id, RECORD_SK)
        .await?
        .ok_or_else(|| Error::internal(format!("guarded conversion {id} is missing")))?;
    Ok(Recorded::Replayed(from_item(item)?))
}

/// The referral method of a customer identity.
fn referral_method(k: &CustomerKey) -> AttributionMethod {
    match k {
        CustomerKey::CustomerId(_) => AttributionMethod::Customer,
        CustomerKey::EmailHash(_) => AttributionMethod::Email,
        CustomerKey::Session(_) => AttributionMethod::Session,
        CustomerKey::Click(_) => AttributionMethod::Click,
    }
}

/// One try; `None` when a concurrent write invalidated what it read.
async fn attempt(
    store: &Store,
    tenant: &Tenant,
    p: &Postback,
    quota: Option<&Quota>,
    now: DateTime<Utc>,
) -> Result<Option<Recorded>> {
    let tenant_key = tenant.key();
    let guard_key = key(keys::external_id_guard(&p.external_id), GUARD_SK);
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
    // The identities whose referrals this payment belongs to (and is matched by).
    let identities: Vec<CustomerKey> = match p.customer_keys() {
        ks if ks.is_empty() => p.fallback_key().into_iter().collect(),
        ks => ks,
    };
    let referral_keys: Vec<Key> = identities
        .iter()
        .map(|k| key(keys::referral(tenant, k), RECORD_SK))
        .collect();
    let campaign_key = p
        .campaign_id
        .as_deref()
        .filter(|c| ids::is_valid(IdKind::Campaign, c))
        .map(|c| key(c, RECORD_SK));

    // Read 1: everything the postback names.
    let mut wanted = vec![guard_key.clone()];
    wanted.extend(click_key.iter().cloned());
    wanted.extend(session_key.iter().cloned());
    wanted.extend(code_key.iter().cloned());
    wanted.extend(referral_keys.iter().cloned());
    wanted.extend(campaign_key.iter().cloned());
    let mut got = batch(store, wanted).await?;
    if let Some(guard) = got.get(&guard_key) {
        return replay(store, tenant, guard).await.map(Some);
    }
    // A repeated postback answers before anything else is checked.
    if p.campaign_id.is_some()
        && campaign_key
            .as_ref()
            .and_then(|k| owned(&got, k, &tenant_key))
            .is_none()
    {
        return Err(Error::NotFound("campaign"));
    }
    if let Some(q) = quota.filter(|q| q.cap == Some(0)) {
        return Err(quota_reached(q));
    }

    // The signals, in the contract's order.
    let mut signals = Vec::new();
    let from_item_attrs = |method, item: &Item| {
        Some(Signal {
            method,
            affiliate_id: get_s(item, "affiliateId")?.to_string(),
            campaign_id: get_s(item, "campaignId")?.to_string(),
        })
    };
    for (method, k) in [
        (AttributionMethod::Click, &click_key),
        (AttributionMethod::Session, &session_key),
    ] {
        let Some(item) = k.as_ref().and_then(|k| owned(&got, k, &tenant_key)) else {
            continue;
        };
        let covers = match (time_attr(item, "createdAt"), time_attr(item, "expiresAt")) {
            (Some(c), Some(e)) => attribution::click_covers(c, e, p.occurred_at),
            _ => false,
        };
        if covers {
            signals.extend(from_item_attrs(method, item));
        }
    }
    if let Some(item) = code_key.as_ref().and_then(|k| owned(&got, k, &tenant_key)) {
        signals.extend(from_item_attrs(AttributionMethod::Code, item));
    }
    let existing: Vec<(&CustomerKey, Item)> = identities
        .iter()
        .zip(&referral_keys)
        .filter_map(|(ck, k)| owned(&got, k, &tenant_key).map(|item| (ck, item.clone())))
        .collect();
    for (ck, item) in &existing {
        signals.extend(from_item_attrs(referral_method(ck), item));
    }

    // Read 2: the affiliates and campaigns the signals name.
    let mut more = Vec::new();
    for sig in &signals {
        more.push(key(sig.affiliate_id.as_str(), RECORD_SK));
        let ck = key(sig.campaign_id.as_str(), RECORD_SK);
        if !got.contains_key(&ck) {
            more.push(ck);
        }
    }
    got.extend(batch(store, more).await?);
    let mut facts: HashMap<String, AffiliateFacts> = HashMap::new();
    let mut campaigns: HashMap<String, Campaign> = HashMap::new();
    for sig in &signals {
        if let Some(item) = owned(
            &got,
            &key(sig.affiliate_id.as_str(), RECORD_SK),
            &tenant_key,
        ) {
            if let Some(cmp) = get_s(item, "campaignId") {
                facts.insert(
                    sig.affiliate_id.clone(),
                    AffiliateFacts {
                        campaign_id: cmp.to_string(),
                        active: get_s(item, "status") == Some("ACTIVE"),
                    },
                );
            }
        }
        if let Some(item) = owned(&got, &key(sig.campaign_id.as_str(), RECORD_SK), &tenant_key) {
            campaigns.insert(sig.campaign_id.clone(), from_item(item.clone())?);
        }
    }
    if let Some(k) = &campaign_key {
        if let Some(item) = owned(&got, k, &tenant_key) {
            campaigns.insert(k.0.clone(), from_item(item.clone())?);
        }
    }
    let chosen = attribution::attribute(
        &signals,
        |id| facts.get(id),
        |c| campaigns.contains_key(c),
        p.campaign_id.as_deref(),
    );

    // The commission rules, per customer: the earliest first payment any of the
    // customer's identities recorded.
    let payment = Payment {
        amount: p.amount,
        currency: p.currency,
        occurred_at: p.occurred_at,
    };
    let first_payment_at = existing
        .iter()
        .filter_map(|(_, item)| time_attr(item, "firstPaymentAt"))
        .min();
    let campaign = chosen
        .as_ref()
        .map(|a| &a.campaign_id)
        .or(p.campaign_id.as_ref())
        .and_then(|c| campaigns.get(c));
    let decision = match (&chosen, campaign) {
        (Some(a), Some(c)) => commission::decide(c, a.affiliate_active, &payment, first_payment_at),
        _ => commission::unattributed(&payment),
    };
    let hold_days = campaign.map_or(0, |c| c.hold_days);
    let conversion = Conversion {
        id: new_id(IdKind::Conversion),
        external_id: p.external_id.clone(),
        campaign_id: campaign.map(|c| c.id.clone()),
        affiliate_id: chosen.as_ref().map(|a| a.affiliate_id.clone()),
        amount: p.currency.round(p.amount),
        currency: p.currency,
        conversion_type: ConversionType::Sale,
        commission: decision.commission,
        commission_reason: decision.reason,
        status: if chosen.is_some() {
            ConversionStatus::Pending
        } else {
            ConversionStatus::Unattributed
        },
        attribution: chosen
            .as_ref()
            .map_or(AttributionMethod::None, |a| a.method),
        customer_ref: chosen
            .as_ref()
            .and(identities.first())
            .map(ToString::to_string),
        is_recurring: decision.is_recurring,
        click_id: p.click_id.clone(),
        session_id: p.session_id.clone(),
        customer_id: p.customer_id.as_ref().map(|k| match k {
            CustomerKey::CustomerId(id) => id.clone(),
            other => other.to_string(),
        }),
        hold_days,
        payable_at: p.occurred_at + Duration::days(i64::from(hold_days)),
        payout_id: None,
        metadata: p.metadata.clone(),
        occurred_at: p.occurred_at,
        created_at: now,
        updated_at: now,
        reversed_at: None,
        reversal_reason: None,
    };

    // The transaction.
    let guard = Item::from([
        ("pk".to_string(), s(guard_key.0.clone())),
        ("sk".to_string(), s(GUARD_SK)),
        ("tenant".to_string(), s(tenant_key.clone())),
        ("conversionId".to_string(), s(conversion.id.clone())),
        ("createdAt".to_string(), s(timestamp::format(&now))),
    ]);
    let mut actions = vec![
        store.tx_put_new(guard),
        store.tx_put_new(item(tenant, &conversion)?),
    ];
    let quota_at = quota.map(|q| {
        actions.push(quota_action(store, q, now));
        actions.len() - 1
    });
    let first_conditional = actions.len();
    if let Some(a) = &chosen {
        let fp = first_payment_at.unwrap_or(p.occurred_at);
        let owner = existing
            .iter()
            .min_by_key(|(_, item)| time_attr(item, "boundAt"))
            .map(|(ck, item)| (*ck, item));
        for (ck, k) in identities.iter().zip(&referral_keys) {
            match owned(&got, k, &tenant_key) {
                Some(item) if item.contains_key("firstPaymentAt") => {}
                Some(_) => actions.push(store.tx_update(
                    &k.0,
                    RECORD_SK,
                    "SET #f = :f",
                    Some("attribute_exists(pk) AND attribute_not_exists(#f)"),
                    HashMap::from([("#f".to_string(), "firstPaymentAt".to_string())]),
                    Item::from([(":f".to_string(), s(timestamp::format(&fp)))]),
                )),
                None => {
                    let (affiliate_id, campaign_id) = match owner {
                        Some((_, item)) => (
                            get_s(item, "affiliateId").unwrap_or(&a.affiliate_id),
                            get_s(item, "campaignId").unwrap_or(&a.campaign_id),
                        ),
                        None => (a.affiliate_id.as_str(), a.campaign_id.as_str()),
                    };
                    let referral = Referral {
                        affiliate_id: affiliate_id.to_string(),
                        campaign_id: campaign_id.to_string(),
                        customer_key: ck.to_string(),
                        bound_at: now,
                        source: SOURCE_PAYMENT.to_string(),
                        session_id: p.session_id.clone(),
                        linked_from: owner.map(|(ok, _)| ok.to_string()),
                    };
                    let mut ref_item = referrals::item(tenant, &referral)?;
                    ref_item.insert("firstPaymentAt".into(), s(timestamp::format(&fp)));
                    actions.push(store.tx_put_new(ref_item));
                }
            }
        }
        if decision.commission > Decimal::ZERO {
            owned(&got, &key(a.affiliate_id.as_str(), RECORD_SK), &tenant_key)
                .ok_or_else(|| Error::internal("attributed affiliate was not read"))?;
            actions.extend(affiliate_totals::earn_actions(
                store,
                &tenant_key,
                &a.affiliate_id,
                conversion.currency,
                conversion.commission,
                Some("ACTIVE"),
            ));
        }
    }
    let conditional = first_conditional..actions.len();
    actions.extend(rollups::record_actions(store, tenant, &conversion));

    match store.transact(actions).await {
        Ok(()) => Ok(Some(Recorded::Created(conversion))),
        Err(e) if e.failed_at(0) => match e.old_item(0) {
            Some(guard) => replay(store, tenant, guard).await.map(Some),
            None => {
                let guard = store
                    .get_item(&guard_key.0, GUARD_SK)
                    .await?
                    .ok_or_else(|| Error::internal("externalId guard vanished"))?;
                replay(store, tenant, &guard).await.map(Some)
            }
        },
        Err(e) if quota_at.is_some_and(|i| e.failed_at(i)) => {
            Err(quota_reached(quota.expect("quota action implies quota")))
        }
        Err(e) if conditional.clone().any(|i| e.failed_at(i)) => Ok(None),
        Err(e) => Err(e.into_error()),
    }
}

/// The monthly counter update (the month of the recording time, UTC).
fn quota_action(store: &Store, q: &Quota, now: DateTime<Utc>) -> TransactWriteItem {
    let mut values = Item::from([
        (":one".to_string(), n(1)),
        (
            ":ttl".to_string(),
            n((now + Duration::days(QUOTA_TTL_DAYS)).timestamp()),
        ),
    ]);
    if let Some(cap) = q.cap {
        values.insert(":cap".into(), n(cap));
    }
    store.tx_update(
        &keys::quota(&q.account_id, &now.format("%Y-%m").to_string()),
        RECORD_SK,
        "ADD #n :one SET #ttl = if_not_exists(#ttl, :ttl)",
        q.cap.map(|_| "attribute_not_exists(#n) OR #n < :cap"),
        HashMap::from([
            ("#n".to_string(), "count".to_string()),
            ("#ttl".to_string(), "ttl".to_string()),
        ]),
        values,
    )
}

/// Reverses (refunds) a conversion that is in no payout and PENDING, APPROVED
/// or UNATTRIBUTED: the status becomes REVERSED, the rollups move with it and
/// the affiliate's `earned` total gives the commission back, in one
/// transaction. Anything else is INVALID_STATE.
pub async fn reverse(
    store: &Store,
    tenant: &Tenant,
    id: &str,
    reason: Option<String>,
    now: DateTime<Utc>,
) -> Result<Conversion> {
    let tenant_key = tenant.key();
    for _ in 0..REVERSE_ATTEMPTS {
        let c = get(store, tenant, id).await?;
        if !c.status.reversible() || c.payout_id.is_some() {
            return Err(Error::InvalidState {
                resource: "conversion",
                current: c.status.as_str().to_string(),
                action: if c.payout_id.is_some() {
                    "reverse (it is in a payout)"
                } else {
                    "reverse"
                },
            });
        }
        let mut names = HashMap::from([
            ("#st".to_string(), "status".to_string()),
            ("#t".to_string(), "tenant".to_string()),
            ("#g3".to_string(), Index::Gsi3.pk().to_string()),
            ("#p".to_string(), "payoutId".to_string()),
            ("#ra".to_string(), "reversedAt".to_string()),
            ("#ua".to_string(), "updatedAt".to_string()),
        ]);
        let mut values = Item::from([
            (":to".to_string(), s(ConversionStatus::Reversed.as_str())),
            (":from".to_string(), s(c.status.as_str())),
            (":t".to_string(), s(tenant_key.clone())),
            (
                ":g3".to_string(),
                s(status_partition(tenant, ConversionStatus::Reversed)),
            ),
            (":now".to_string(), s(timestamp::format(&now))),
        ]);
        let mut update = "SET #st = :to, #g3 = :g3, #ra = :now, #ua = :now".to_string();
        if let Some(r) = &reason {
            names.insert("#rr".into(), "reversalReason".into());
            values.insert(":rr".into(), s(r.clone()));
            update.push_str(", #rr = :rr");
        }
        let mut actions = vec![store.tx_update(
            &c.id,
            RECORD_SK,
            &update,
            Some("#t = :t AND #st = :from AND attribute_not_exists(#p)"),
            names,
            values,
        )];
        actions.extend(rollups::move_actions(
            store,
            tenant,
            &c,
            ConversionStatus::Reversed,
        ));
        let first_affiliate_action = actions.len();
        if let (Some(aff), true) = (&c.affiliate_id, c.commission > Decimal::ZERO) {
            if let Some(item) = store.get_item(aff, RECORD_SK).await? {
                if get_s(&item, "tenant") == Some(tenant_key.as_str()) {
                    actions.extend(affiliate_totals::earn_actions(
                        store,
                        &tenant_key,
                        aff,
                        c.currency,
                        -c.commission,
                        None,
                    ));
                }
            }
        }
        let affiliate_actions = first_affiliate_action..actions.len();
        match store.transact(actions).await {
            Ok(()) => {
                let mut done = c;
                done.status = ConversionStatus::Reversed;
                done.reversed_at = Some(now);
                done.reversal_reason = reason;
                done.updated_at = now;
                return Ok(done);
            }
            // The conversion changed meanwhile (or the totals item refused the tenant): look again.
            Err(e) if e.failed_at(0) || affiliate_actions.clone().any(|i| e.failed_at(i)) => {}
            Err(e) => return Err(e.into_error()),
        }
    }
    Err(Error::Unavailable(
        "the conversion is being changed by concurrent requests; retry".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::tenant::Mode;

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
        assert_eq!(q.index, Index::Gsi4);
        assert_eq!(q.pk, "acct_1#test#CNV#AFF#aff_1");
        assert!(q.sk_between.is_none());
        let q = list_query(
            &t,
            &ConversionFilter {
                campaign_id: Some("cmp_1".into()),
                status: Some(ConversionStatus::Pending),
                ..Default::default()
            },
        );
        assert_eq!(q.index, Index::Gsi2);
        let q = list_query(
            &t,
            &ConversionFilter {
                status: Some(ConversionStatus::Reversed),
                from: timestamp::parse_datetime("2026-01-01T00:00:00Z"),
                ..Default::default()
            },
        );
        assert_eq!(q.index, Index::Gsi3);
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
        assert_eq!(q.index, Index::Gsi1);
        assert_eq!(
            q.sk_between,
            Some(("0".to_string(), "2026-01-31T23:59:59.999Z#~".to_string()))
        );
    }
}
