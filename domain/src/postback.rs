//! A postback as a pure decision: from the facts the store read to a plan of
//! what must change.
//!
//! The store reads in two steps and commits once:
//!
//! 1. [`Sightings`]: everything the postback names (its externalId's claim:
//!    the conversion whose id is derived from it, or an alias or older claim,
//!    its click, its session's click, its affiliate code, the customer's
//!    referrals, the campaign it names). [`open`] decides from them alone:
//!    a replay, an error (another tenant's externalId, an unknown campaign, a
//!    quota of zero), or the attribution signals in the contract's order.
//! 2. [`Parties`]: the affiliates and campaigns those signals name. [`plan`]
//!    attributes the payment, applies the commission rules and returns the
//!    [`Plan`]: the new conversion (its id derived from its externalId, so
//!    that its write is the externalId's claim), the quota charge,
//!    the referral changes (bindings with their `firstPaymentAt`) and the
//!    affiliate's earning. The conversion's rollups follow from the conversion.
//!
//! The store turns the plan into one transaction; when a referral or the
//! affiliate changed between the reads and the commit, it reads and plans again.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::affiliate::AffiliateStatus;
use crate::affiliate_code::CodeOwner;
use crate::attribution::{self, AffiliateFacts, Attribution, Signal};
use crate::campaign::Campaign;
use crate::change::{Event, TierChange};
use crate::commission::{self, Earner};
use crate::commission_plan::Facts;
use crate::commission_tiers::{self as tiers, Counted, Referred};
use crate::conversion::{
    AttributionMethod, Conversion, ConversionStatus, ConversionType, Earning, Postback,
};
use crate::error::Error;
use crate::event::EventType;
use crate::ids::{derived_id, IdKind};
use crate::referral::{self, CustomerKey, Referral, ReferralSource};
use crate::risk::{self, OverLimit, Risk};
use crate::timestamp::serde_ts;
use crate::tracking::Click;

/// Who consumed an `externalId` (unique across every tenant), and as which
/// conversion: read from the conversion whose id it derives (or an alias
/// claimed there), or from a claim item written before conversions were
/// their own claims.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExternalIdClaim {
    /// The tenant key (`acct_…#live`) that sent it first.
    pub tenant: String,
    pub conversion_id: String,
    #[serde(with = "serde_ts")]
    pub created_at: DateTime<Utc>,
}

/// The live-mode monthly conversion quota of an account.
#[derive(Debug, Clone)]
pub struct Quota {
    pub account_id: String,
    pub plan: String,
    /// `None`: unlimited (still counted).
    pub cap: Option<u64>,
}

impl Quota {
    /// The 429 for a postback past the cap.
    pub fn reached(&self) -> Error {
        Error::LimitExceeded(format!(
            "the monthly conversion quota of the {} plan ({}) is reached",
            self.plan,
            self.cap.unwrap_or_default()
        ))
    }

    /// One more conversion, recorded at `now`, on its monthly counter.
    fn charge(&self, now: DateTime<Utc>) -> QuotaCharge {
        QuotaCharge {
            account_id: self.account_id.clone(),
            month: now.format("%Y-%m").to_string(),
            cap: self.cap,
        }
    }
}

/// One more conversion on an account's monthly counter, refused past `cap`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaCharge {
    pub account_id: String,
    /// `YYYY-MM` of the recording time (UTC).
    pub month: String,
    pub cap: Option<u64>,
}

/// What the first read found, the tenant's records only (but the claim,
/// which may be another tenant's).
#[derive(Debug, Clone, Default)]
pub struct Sightings {
    pub claim: Option<ExternalIdClaim>,
    /// The conversion the claim names, when the claim is the conversion
    /// itself (read with it; a replay answers with it).
    pub claimed: Option<Conversion>,
    /// The click `clickId` names.
    pub click: Option<Click>,
    /// The click `sessionId` stands for.
    pub session_click: Option<Click>,
    /// The owner of `affiliateCode`.
    pub code_owner: Option<CodeOwner>,
    /// The owner of the active promotion code the payment carried.
    pub promotion_owner: Option<CodeOwner>,
    /// The referrals of the payment's customer identities, in any order.
    pub referrals: Vec<Referral>,
    /// The campaign `campaignId` names.
    pub campaign: Option<Campaign>,
    /// The hourly conversion limits an earlier commit of this payment found
    /// passed (its counters refused): the conversion is planned flagged.
    pub over: OverLimit,
    /// The payment's aliases another tenant claimed: left to it.
    pub foreign_aliases: Vec<String>,
}

/// What the first read decides.
#[derive(Debug, Clone, PartialEq)]
pub enum Opening {
    /// The externalId was seen before in this tenant: answer with this conversion.
    Replay { conversion_id: String },
    /// Attribute with these signals, in the order tried.
    Attribute { signals: Vec<Signal> },
}

/// The affiliates and campaigns of the tenant that the signals name.
#[derive(Debug, Clone, Default)]
pub struct Parties {
    pub affiliates: HashMap<String, AffiliateFacts>,
    pub campaigns: HashMap<String, Campaign>,
}

impl Parties {
    /// The attribution of the first signal that names one of their
    /// affiliates in one of their campaigns (`only_campaign`, when the
    /// postback names one).
    fn attribute(&self, signals: &[Signal], only_campaign: Option<&str>) -> Option<Attribution> {
        attribution::attribute(
            signals,
            |id| self.affiliates.get(id),
            |c| self.campaigns.contains_key(c),
            only_campaign,
        )
    }
}

/// A change to a customer's referrals.
#[derive(Debug, Clone, PartialEq)]
pub enum ReferralChange {
    /// A new binding of an identity not bound yet.
    Bind(Referral),
    /// What a conversion records on an identity bound before (one write
    /// per item: a transaction takes no two on one).
    Update(ReferralUpdate),
}

/// What a conversion records on a bound identity.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferralUpdate {
    pub customer_key: CustomerKey,
    /// The first attributed payment's time, set once.
    pub first_payment_at: Option<DateTime<Utc>>,
    /// The customer's payment count: as the identity stored it, and now
    /// (the commit requires the stored one, so payments are numbered in
    /// the order they are recorded).
    pub payments: Option<(u32, u32)>,
    /// The customer's first lead's time, set once.
    pub lead_at: Option<DateTime<Utc>>,
    /// The e-mail identity the binding joins when it is the owner a link
    /// would name (`linkedFrom`, set once; see `referral::plan_bindings`).
    pub link: Option<String>,
}

impl ReferralUpdate {
    /// Whether it records anything.
    pub fn changes(&self) -> bool {
        self.first_payment_at.is_some()
            || self.payments.is_some()
            || self.lead_at.is_some()
            || self.link.is_some()
    }
}

/// The affiliate's referred-customer count and tier after a payment, and
/// the event of a tier change.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferredChange {
    pub affiliate_id: String,
    /// As read (the commit holds the tier it names).
    pub read: Referred,
    pub counted: Counted,
    /// `affiliate.tier_changed`, when the tier changes.
    pub event: Option<Event>,
}

/// Everything one new conversion changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The new conversion; its id is derived from its externalId
    /// ([`conversion_id_of`]), so writing it claims the externalId.
    pub conversion: Conversion,
    pub quota: Option<QuotaCharge>,
    pub referrals: Vec<ReferralChange>,
    /// The commission added to the affiliate's `earned`, while it is ACTIVE.
    pub earning: Option<Earning>,
    /// The affiliate's customer count and tier, for an attributed payment.
    pub referred: Option<ReferredChange>,
    /// `conversion.created`, recorded with the conversion.
    pub event: Event,
    /// `conversion.flagged`, when risk checks flagged it.
    pub flagged: Option<Event>,
    /// The hourly conversion counters it adds to (RAPID_CONVERSIONS).
    pub counts: Vec<HourlyCount>,
    /// The payment's other ids, each claimed for the conversion in the same
    /// write (a claim found there fails it, and the postback replays).
    pub aliases: Vec<String>,
}

/// One more conversion on an hourly counter, refused (the commit fails on
/// it) when `cap` is set and reached: the conversion is then planned again,
/// flagged, and counted without a cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HourlyCount {
    pub scope: CountScope,
    /// The hour counted (UTC).
    pub hour: DateTime<Utc>,
    pub cap: Option<u32>,
}

/// What an hourly conversion counter counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CountScope {
    /// One affiliate's conversions for one customer identity, by `occurredAt`.
    Customer {
        affiliate_id: String,
        customer: String,
    },
    /// Conversions attributed through clicks from one network, by recording time.
    Network { network: String },
}

/// The customer identities a payment belongs to (and is matched by): the
/// ones it names, else the session or click it came through.
pub fn identities(p: &Postback) -> Vec<CustomerKey> {
    match p.customer_keys() {
        ks if ks.is_empty() => p.fallback_key().into_iter().collect(),
        ks => ks,
    }
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

fn click_signal(method: AttributionMethod, click: Option<&Click>, p: &Postback) -> Option<Signal> {
    click
        .filter(|c| c.attributes())
        .filter(|c| attribution::click_covers(c.created_at, c.expires_at, p.occurred_at))
        .map(|c| Signal {
            method,
            affiliate_id: c.affiliate_id.clone(),
            campaign_id: c.campaign_id.clone(),
        })
}

/// The referral of each identity that has one, in the identities' order.
fn bound<'a>(p: &Postback, s: &'a Sightings) -> Vec<(CustomerKey, &'a Referral)> {
    identities(p)
        .into_iter()
        .filter_map(|k| {
            let key = k.to_string();
            let r = s.referrals.iter().find(|r| r.customer_key == key)?;
            Some((k, r))
        })
        .collect()
}

/// The conversion a repeated postback answers with: the claim's, when the
/// claim is this tenant's; another tenant's externalId is ALREADY_EXISTS.
pub fn replay(tenant_key: &str, claim: &ExternalIdClaim) -> Result<String, Error> {
    if claim.tenant != tenant_key {
        return Err(Error::AlreadyExists(
            "this externalId was already submitted by another account (or in the other mode)"
                .into(),
        ));
    }
    Ok(claim.conversion_id.clone())
}

/// Decides what the first read allows: a repeated postback answers before
/// anything else is checked; then an unknown campaign and a zero quota refuse.
pub fn open(
    tenant_key: &str,
    p: &Postback,
    s: &Sightings,
    quota: Option<&Quota>,
) -> Result<Opening, Error> {
    if let Some(claim) = &s.claim {
        return replay(tenant_key, claim).map(|conversion_id| Opening::Replay { conversion_id });
    }
    if p.campaign_id.is_some() && s.campaign.is_none() {
        return Err(Error::NotFound("campaign"));
    }
    if let Some(q) = quota.filter(|q| q.cap == Some(0)) {
        return Err(q.reached());
    }
    let mut signals: Vec<Signal> = [
        click_signal(AttributionMethod::Click, s.click.as_ref(), p),
        click_signal(AttributionMethod::Session, s.session_click.as_ref(), p),
        s.code_owner.as_ref().map(|o| Signal {
            method: AttributionMethod::Code,
            affiliate_id: o.affiliate_id.clone(),
            campaign_id: o.campaign_id.clone(),
        }),
        s.promotion_owner.as_ref().map(|o| Signal {
            method: AttributionMethod::PromotionCode,
            affiliate_id: o.affiliate_id.clone(),
            campaign_id: o.campaign_id.clone(),
        }),
    ]
    .into_iter()
    .flatten()
    .collect();
    signals.extend(bound(p, s).into_iter().map(|(k, r)| Signal {
        method: referral_method(&k),
        affiliate_id: r.affiliate_id.clone(),
        campaign_id: r.campaign_id.clone(),
    }));
    Ok(Opening::Attribute { signals })
}

/// What the referrals of the payment's customer say about it.
#[derive(Debug, Clone, Copy, Default)]
struct Customer {
    /// The earliest first payment any of its identities recorded.
    first_payment_at: Option<DateTime<Utc>>,
    /// Its attributed payments recorded so far.
    payments: u32,
    /// Whether its lead was paid.
    lead_paid: bool,
}

impl Customer {
    fn of(bound: &[(CustomerKey, &Referral)]) -> Customer {
        Customer {
            first_payment_at: bound.iter().filter_map(|(_, r)| r.first_payment_at).min(),
            payments: bound
                .iter()
                .map(|(_, r)| r.payments_seen())
                .max()
                .unwrap_or(0),
            lead_paid: bound.iter().any(|(_, r)| r.lead_at.is_some()),
        }
    }
}

/// Attributes the payment, applies the commission rules and plans every change.
pub fn plan(
    p: &Postback,
    s: &Sightings,
    signals: &[Signal],
    parties: &Parties,
    quota: Option<&Quota>,
    now: DateTime<Utc>,
) -> Result<Plan, Error> {
    let chosen = parties.attribute(signals, p.campaign_id.as_deref());
    let bound = bound(p, s);
    let customer = Customer::of(&bound);
    let campaign = deciding_campaign(p, chosen.as_ref(), parties);
    let counted = count_customer(p, chosen.as_ref(), campaign, &customer, now);
    let decided = Decided {
        chosen: chosen.as_ref(),
        campaign,
        customer,
        counted: counted.as_ref(),
    };
    let mut conversion = new_conversion(p, &decided, now);
    let counts = match (&chosen, campaign) {
        (Some(a), Some(c)) => {
            let read = Read {
                p,
                s,
                parties,
                bound: &bound,
            };
            assess(&mut conversion, a, c, &read, now)
        }
        _ => Vec::new(),
    };
    let mut referrals = match &chosen {
        Some(a) => referral_changes(p, (&bound, &customer), a, &conversion, now),
        None => Vec::new(),
    };
    let counts = match customer.first_payment_at {
        None if p.conversion_type == ConversionType::Sale => {
            count_in_binding(counts, &mut referrals)
        }
        _ => counts,
    };
    let event = created_event(&conversion, now);
    Ok(Plan {
        flagged: flagged_event(&event, &conversion, now),
        event,
        counts,
        quota: quota.map(|q| q.charge(now)),
        referrals,
        earning: earning(chosen.as_ref(), &conversion),
        referred: referred_change(chosen.as_ref(), counted, &conversion, now),
        aliases: aliases_to_claim(p, s),
        conversion,
    })
}

/// The campaign whose terms decide the payment: the attributed one's, else
/// the one the postback names.
fn deciding_campaign<'a>(
    p: &Postback,
    chosen: Option<&Attribution>,
    parties: &'a Parties,
) -> Option<&'a Campaign> {
    chosen
        .map(|a| &a.campaign_id)
        .or(p.campaign_id.as_ref())
        .and_then(|c| parties.campaigns.get(c))
}

/// The payment's other ids, claimed with its conversion: those another
/// tenant claimed are left to it.
fn aliases_to_claim(p: &Postback, s: &Sightings) -> Vec<String> {
    p.claimed_ids()[1..]
        .iter()
        .filter(|a| !s.foreign_aliases.iter().any(|f| f == *a))
        .map(|a| a.to_string())
        .collect()
}

/// An attributed SALE counts for its affiliate's tiers: a new customer
/// adds one.
fn count_customer(
    p: &Postback,
    chosen: Option<&Attribution>,
    campaign: Option<&Campaign>,
    customer: &Customer,
    now: DateTime<Utc>,
) -> Option<Counted> {
    let (a, c) = chosen.zip(campaign)?;
    let first = customer.first_payment_at.is_none();
    (p.conversion_type == ConversionType::Sale)
        .then(|| tiers::count(&c.tiers, &a.referred, first, now))
}

/// The commission a conversion adds to its affiliate's `earned`.
fn earning(chosen: Option<&Attribution>, c: &Conversion) -> Option<Earning> {
    chosen
        .filter(|_| c.commission > Decimal::ZERO)
        .map(|a| Earning {
            affiliate_id: a.affiliate_id.clone(),
            currency: c.currency,
            amount: c.commission,
            while_status: Some(AffiliateStatus::Active),
        })
}

/// The affiliate's count and tier after an attributed payment, with
/// `affiliate.tier_changed` when the tier changes.
fn referred_change(
    chosen: Option<&Attribution>,
    counted: Option<Counted>,
    c: &Conversion,
    now: DateTime<Utc>,
) -> Option<ReferredChange> {
    let (Some(a), Some(counted)) = (chosen, counted) else {
        return None;
    };
    let event = match &counted.change {
        Some(tier) => Some(Event::new(
            EventType::AffiliateTierChanged,
            TierChange {
                affiliate_id: a.affiliate_id.clone(),
                campaign_id: c
                    .campaign_id
                    .clone()
                    .unwrap_or_else(|| a.campaign_id.clone()),
                tier: tier.clone(),
                previous_tier: a.referred.tier.as_ref().map(|t| t.name.clone()),
                customers_referred: counted.customers,
                conversion_id: c.id.clone(),
            },
            now,
        )),
        None => None,
    };
    Some(ReferredChange {
        affiliate_id: a.affiliate_id.clone(),
        read: a.referred.clone(),
        counted,
        event,
    })
}

/// `conversion.created` for a new conversion.
fn created_event(c: &Conversion, now: DateTime<Utc>) -> Event {
    Event::new(EventType::ConversionCreated, c, now)
}

/// `conversion.flagged` for a conversion with risk flags, beside `event`
/// about the same conversion (its copy shared).
fn flagged_event(event: &Event, c: &Conversion, now: DateTime<Utc>) -> Option<Event> {
    match c.risk.is_clear() {
        true => None,
        false => Some(event.also(EventType::ConversionFlagged, now)),
    }
}

/// What the risk rules read of a postback: the payment, what was seen with
/// it, its parties, and the referral of each identity that has one.
struct Read<'a> {
    p: &'a Postback,
    s: &'a Sightings,
    parties: &'a Parties,
    bound: &'a [(CustomerKey, &'a Referral)],
}

/// Runs the risk rules on a new attributed conversion: sets its `risk`, and
/// ON_HOLD when its campaign holds what they found; returns the hourly
/// counters it adds to.
fn assess(
    c: &mut Conversion,
    chosen: &Attribution,
    campaign: &Campaign,
    read: &Read<'_>,
    now: DateTime<Utc>,
) -> Vec<HourlyCount> {
    let Read {
        p,
        s,
        parties,
        bound,
    } = *read;
    let affiliate = parties.affiliates.get(&chosen.affiliate_id);
    let network = attributing_click(chosen, s).and_then(|c| c.ip_hash.as_deref());
    let limit = HourLimit::of(c, chosen, read, campaign.risk.max_conversions_per_hour);
    let emails = customer_email_hashes(p, bound);
    let facts = risk::ConversionFacts {
        amount: c.amount,
        currency: Some(c.currency),
        customer_email_hashes: emails.iter().map(String::as_str).collect(),
        affiliate_email_hash: affiliate.map(|a| a.email_hash.as_str()),
        click_network: network,
        signup_network: affiliate.and_then(|a| a.signup_network.as_deref()),
        flooded_click: [&s.click, &s.session_click]
            .iter()
            .any(|c| c.as_ref().is_some_and(|c| c.flooded)),
        over: limit.over,
    };
    c.risk = Risk::of(risk::assess_conversion(&facts, &campaign.risk, now));
    if c.risk.holds(&campaign.risk) {
        c.status = ConversionStatus::OnHold;
    }
    hourly_counts(c, &chosen.affiliate_id, network, &limit, now)
}

/// The hourly conversion limit as a conversion meets it: the campaign's
/// `max`, the places of its hour its customer's binding holds, and the
/// limits it is past.
struct HourLimit {
    max: u32,
    held: u32,
    over: OverLimit,
}

impl HourLimit {
    /// The limit `max` as `c` meets it, by its customer's bindings and by
    /// the limits an earlier commit found passed.
    fn of(c: &Conversion, chosen: &Attribution, read: &Read<'_>, max: u32) -> HourLimit {
        let held = c.customer_ref.as_deref().map_or(0, |customer| {
            held_first_count(read.bound, customer, &chosen.affiliate_id, c.occurred_at)
        });
        // The binding holds the hour's only place: this one is beyond it.
        let over = OverLimit {
            customer: read.s.over.customer || (held > 0 && max <= held),
            ..read.s.over
        };
        HourLimit { max, held, over }
    }
}

/// The hourly counters a conversion adds to: its customer's with its
/// affiliate, in the hour it occurred (the places the binding holds
/// taken), and its click network's, in the hour it is recorded; a counter
/// it is past counts it without a cap.
fn hourly_counts(
    c: &Conversion,
    affiliate_id: &str,
    network: Option<&str>,
    limit: &HourLimit,
    now: DateTime<Utc>,
) -> Vec<HourlyCount> {
    let customer = c.customer_ref.clone().map(|customer| HourlyCount {
        scope: CountScope::Customer {
            affiliate_id: affiliate_id.to_string(),
            customer,
        },
        hour: c.occurred_at,
        cap: (!limit.over.customer).then_some(limit.max - limit.held),
    });
    let network = network.map(|n| HourlyCount {
        scope: CountScope::Network {
            network: n.to_string(),
        },
        hour: now,
        cap: (!limit.over.network).then_some(limit.max),
    });
    customer.into_iter().chain(network).collect()
}

/// The click (or the session's click) that attributed the payment.
fn attributing_click<'a>(chosen: &Attribution, s: &'a Sightings) -> Option<&'a Click> {
    match chosen.method {
        AttributionMethod::Click => s.click.as_ref(),
        AttributionMethod::Session => s.session_click.as_ref(),
        _ => None,
    }
}

/// The e-mail hashes of the payment's identities, of those its referrals
/// were linked from, and of its bound identities.
fn customer_email_hashes(p: &Postback, bound: &[(CustomerKey, &Referral)]) -> Vec<String> {
    identities(p)
        .iter()
        .map(CustomerKey::to_string)
        .chain(bound.iter().filter_map(|(_, r)| r.linked_from.clone()))
        .chain(bound.iter().map(|(_, r)| r.customer_key.clone()))
        .filter_map(|k| k.strip_prefix("email:").map(str::to_string))
        .collect()
}

/// The customer's first attributed payment is counted by the binding it
/// makes (`first_payment_counted`), not on an hourly counter: a new
/// customer's postback writes one item fewer. It applies when the payment
/// binds the identity its customer counter counts, to the affiliate it
/// credits, under a cap (a replan past the limit counts on the counter).
fn count_in_binding(
    mut counts: Vec<HourlyCount>,
    referrals: &mut [ReferralChange],
) -> Vec<HourlyCount> {
    let held = counts.iter().enumerate().find_map(|(i, c)| {
        match &c.scope {
            CountScope::Customer {
                affiliate_id,
                customer,
            } if c.cap.is_some() => referrals.iter().position(|change| {
                matches!(change, ReferralChange::Bind(r)
                if r.customer_key == *customer && r.affiliate_id == *affiliate_id)
            }),
            _ => None,
        }
        .map(|binding| (i, binding))
    });
    if let Some((count, binding)) = held {
        if let ReferralChange::Bind(r) = &mut referrals[binding] {
            r.first_payment_counted = true;
        }
        counts.remove(count);
    }
    counts
}

/// The places a customer's binding holds on the hourly count of `customer`
/// and `affiliate_id` in the clock hour of `occurred_at`: 1 when its first
/// payment, counted by the binding, fell in that hour for that affiliate.
fn held_first_count(
    bound: &[(CustomerKey, &Referral)],
    customer: &str,
    affiliate_id: &str,
    occurred_at: DateTime<Utc>,
) -> u32 {
    let hour = |t: DateTime<Utc>| t.timestamp().div_euclid(3600);
    let held = bound.iter().any(|(_, r)| {
        r.first_payment_counted
            && r.customer_key == customer
            && r.affiliate_id == affiliate_id
            && r.first_payment_at.map(hour) == Some(hour(occurred_at))
    });
    u32::from(held)
}

/// A payment recorded UNATTRIBUTED and attributed afterwards: a provider's
/// checkout that names the affiliate arriving after the payment it led to.
#[derive(Debug, Clone, PartialEq)]
pub struct LateAttribution {
    /// The conversion as it was read (UNATTRIBUTED).
    pub before: Conversion,
    /// The same conversion (id, externalId, metadata, creation time),
    /// attributed and earning as if the affiliate had been known at once.
    pub after: Conversion,
    pub referrals: Vec<ReferralChange>,
    pub earning: Option<Earning>,
    /// The affiliate's count and tier after it.
    pub referred: Option<ReferredChange>,
    /// `conversion.attributed`, recorded with the change.
    pub event: Event,
    /// `conversion.flagged`, when risk checks flagged it.
    pub flagged: Option<Event>,
}

/// Attributes an UNATTRIBUTED conversion by a fresh plan of its payment:
/// `None` when it is no longer unattributed, was reversed in part, or the
/// plan finds no affiliate either. The plan's quota charge and claim are
/// dropped: the payment was counted and claimed when it was recorded.
pub fn attribute_late(
    recorded: &Conversion,
    plan: Plan,
    now: DateTime<Utc>,
) -> Result<Option<LateAttribution>, Error> {
    if !recorded.awaits_attribution() || plan.conversion.status == ConversionStatus::Unattributed {
        return Ok(None);
    }
    let mut after = plan.conversion;
    after.id = recorded.id.clone();
    after.external_id = recorded.external_id.clone();
    after.metadata = recorded.metadata.clone();
    after.created_at = recorded.created_at;
    after.updated_at = now;
    let event = Event::new(EventType::ConversionAttributed, &after, now);
    let flagged = flagged_event(&event, &after, now);
    // Its payment is not counted for RAPID_CONVERSIONS: no binding holds it.
    let mut referrals = plan.referrals;
    for change in &mut referrals {
        if let ReferralChange::Bind(r) = change {
            r.first_payment_counted = false;
        }
    }
    Ok(Some(LateAttribution {
        flagged,
        before: recorded.clone(),
        after,
        referrals,
        earning: plan.earning,
        referred: plan.referred,
        event,
    }))
}

/// The id of the conversion of an `externalId` (or of an alias of it): the
/// same for every postback naming it, in every tenant, so the conversion's
/// write is the claim a repeated or concurrent postback runs into.
pub fn conversion_id_of(external_id: &str) -> String {
    derived_id(IdKind::Conversion, external_id)
}

/// Who a payment was attributed to, and what decides its commission.
struct Decided<'a> {
    chosen: Option<&'a Attribution>,
    campaign: Option<&'a Campaign>,
    customer: Customer,
    /// The affiliate's count after it (an attributed SALE).
    counted: Option<&'a Counted>,
}

/// The conversion a payment makes: PENDING for its campaign's hold period
/// when attributed, UNATTRIBUTED (commission 0) when not. An attributed
/// SALE is its customer's next payment.
fn new_conversion(p: &Postback, d: &Decided<'_>, now: DateTime<Utc>) -> Conversion {
    let sale = p.conversion_type == ConversionType::Sale;
    let payment_number = (sale && d.chosen.is_some()).then_some(d.customer.payments + 1);
    let decision = decide_commission(p, d, payment_number);
    let hold_days = d.campaign.map_or(0, |c| c.hold_days);
    let chosen = d.chosen;
    Conversion {
        id: conversion_id_of(&p.external_id),
        external_id: p.external_id.clone(),
        campaign_id: d.campaign.map(|c| c.id.clone()),
        affiliate_id: chosen.map(|a| a.affiliate_id.clone()),
        amount: p.currency.round(p.amount),
        currency: p.currency,
        conversion_type: p.conversion_type,
        commission: decision.commission,
        commission_reason: decision.reason,
        status: if chosen.is_some() {
            ConversionStatus::Pending
        } else {
            ConversionStatus::Unattributed
        },
        attribution: chosen.map_or(AttributionMethod::None, |a| a.method),
        customer_ref: chosen
            .and(identities(p).first().cloned())
            .map(|k| k.to_string()),
        is_recurring: decision.is_recurring,
        click_id: p.click_id.clone(),
        session_id: p.session_id.clone(),
        customer_id: p.customer_id.as_ref().map(|k| match k {
            CustomerKey::CustomerId(id) => id.clone(),
            other => other.to_string(),
        }),
        hold_days,
        payable_at: Conversion::payable_after(p.occurred_at, hold_days),
        payout_id: None,
        metadata: p.metadata.clone(),
        occurred_at: p.occurred_at,
        created_at: now,
        updated_at: now,
        reversed_at: None,
        reversal_reason: None,
        reversed_amount: Decimal::ZERO,
        commission_reversed: Decimal::ZERO,
        commission_clawed_back: Decimal::ZERO,
        risk: Risk::default(),
        product_id: p.product_id.clone(),
        plan_id: p.plan_id.clone(),
        commission_source: Some(decision.source),
        payment_number,
    }
}

/// The commission rules' decision on the payment: the campaign's terms for
/// its affiliate, nothing when it is unattributed.
fn decide_commission(
    p: &Postback,
    d: &Decided<'_>,
    payment_number: Option<u32>,
) -> commission::Decision {
    let sale = p.conversion_type == ConversionType::Sale;
    let facts = Facts {
        amount: p.amount,
        currency: p.currency,
        occurred_at: p.occurred_at,
        conversion_type: p.conversion_type,
        product_id: p.product_id.as_deref(),
        plan_id: p.plan_id.as_deref(),
        first_payment_at: d.customer.first_payment_at.filter(|_| sale),
        payment_number: payment_number.unwrap_or(0),
    };
    match (d.chosen, d.campaign) {
        (Some(a), Some(c)) => {
            let earner = Earner {
                active: a.affiliate_active,
                commission_override: a.commission_override.as_ref(),
                customers: d.counted.map_or(a.referred.customers, |n| n.customers),
                lead_paid: d.customer.lead_paid,
            };
            commission::decide(c, &earner, &facts)
        }
        _ => commission::unattributed(&facts),
    }
}

/// What an attributed conversion records on its customer's identities: a
/// SALE its first payment's time (on those without one) and the payment
/// count; a LEAD its time, once per customer.
fn stamp(
    c: &Conversion,
    customer_key: CustomerKey,
    r: Option<&Referral>,
    first_payment_at: DateTime<Utc>,
    lead_paid: bool,
) -> ReferralUpdate {
    let sale = c.conversion_type == ConversionType::Sale;
    ReferralUpdate {
        customer_key,
        first_payment_at: (sale && r.is_none_or(|r| r.first_payment_at.is_none()))
            .then_some(first_payment_at),
        payments: c.payment_number.map(|n| (r.map_or(0, |r| r.payments), n)),
        lead_at: (!sale && !lead_paid && r.is_none_or(|r| r.lead_at.is_none()))
            .then_some(c.occurred_at),
        link: None,
    }
}

/// An attributed payment binds the customer's unbound identities (to the
/// customer's earliest binding when there is one, first touch) and records
/// on each what [`stamp`] says.
fn referral_changes(
    p: &Postback,
    (bound, customer): (&[(CustomerKey, &Referral)], &Customer),
    chosen: &Attribution,
    c: &Conversion,
    now: DateTime<Utc>,
) -> Vec<ReferralChange> {
    let keys = identities(p);
    let first_payment_at = customer.first_payment_at.unwrap_or(p.occurred_at);
    let existing: Vec<Referral> = bound.iter().map(|(_, r)| (*r).clone()).collect();
    let binding = referral::Binding {
        affiliate_id: &chosen.affiliate_id,
        campaign_id: &chosen.campaign_id,
        source: ReferralSource::Payment,
        session_id: p.session_id.as_deref(),
        at: now,
        counted_click: None,
    };
    let plan = referral::plan_bindings(&keys, &binding, &existing);
    // The identities in the postback's order: a bound one records the
    // conversion, an unbound one is bound (by the plan's binding) with it.
    let mut changes: Vec<ReferralChange> = keys
        .iter()
        .filter_map(|k| match bound.iter().find(|(bk, _)| bk == k) {
            Some((_, r)) => {
                let u = stamp(c, k.clone(), Some(r), first_payment_at, customer.lead_paid);
                u.changes().then_some(ReferralChange::Update(u))
            }
            None => plan
                .new
                .iter()
                .find(|r| r.customer_key == k.to_string())
                .map(|r| {
                    let s = stamp(c, k.clone(), None, first_payment_at, customer.lead_paid);
                    ReferralChange::Bind(Referral {
                        first_payment_at: s.first_payment_at,
                        payments: s.payments.map_or(0, |(_, n)| n),
                        lead_at: s.lead_at,
                        ..r.clone()
                    })
                }),
        })
        .collect();
    add_links(&mut changes, plan.links);
    changes
}

/// Adds the e-mail each binding learns (`linkedFrom`): on the binding's
/// update when it has one (one action per item), else as an update of its own.
fn add_links(changes: &mut Vec<ReferralChange>, links: Vec<(CustomerKey, String)>) {
    for (key, email) in links {
        let update = changes.iter_mut().find_map(|c| match c {
            ReferralChange::Update(u) if u.customer_key == key => Some(u),
            _ => None,
        });
        match update {
            Some(u) => u.link = Some(email),
            None => changes.push(ReferralChange::Update(ReferralUpdate {
                customer_key: key,
                first_payment_at: None,
                payments: None,
                lead_at: None,
                link: Some(email),
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commission::CommissionReason;
    use crate::conversion::{Keys, Sale};
    use crate::money::Currency;
    use crate::timestamp::parse_datetime;

    const TENANT: &str = "acct_1#test";
    const CLICK: &str = "clk_01JD3Q5W6X7Y8Z9A0B1C2D3E4F";
    const SESSION: &str = "ses_01JD3Q5W6X7Y8Z9A0B1C2D3E4F";

    fn at(s: &str) -> DateTime<Utc> {
        parse_datetime(s).unwrap()
    }

    fn campaign(id: &str, extra: serde_json::Value) -> Campaign {
        let mut body = serde_json::json!({
            "name": "C", "commissionType": "PERCENTAGE", "commissionValue": 10, "holdDays": 30,
        });
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let mut c =
            Campaign::create(crate::campaign::CampaignDraft::from_json(&body), Utc::now()).unwrap();
        c.id = id.to_string();
        c
    }

    /// A SALE of 100 USD, `ord_1`, on 2026-03-01, with the fields `extra`
    /// names (by their postback names) in place of those.
    fn postback(extra: serde_json::Value) -> Postback {
        let text = |k: &str| extra.get(k).and_then(|v| v.as_str()).map(String::from);
        let sale = Sale {
            amount: Decimal::new(100, 0),
            currency: Currency::parse("currency", "USD").unwrap(),
            external_id: text("externalId").unwrap_or_else(|| "ord_1".into()),
            keys: Keys {
                affiliate_code: text("affiliateCode"),
                session_id: text("sessionId"),
                click_id: text("clickId"),
                campaign_id: text("campaignId"),
                ..Keys::default()
            },
            customer_id: text("customerId").map(|c| CustomerKey::from_id(&c).unwrap()),
            email: text("customerEmail").map(|e| CustomerKey::from_email(&e).unwrap()),
            occurred_at: at(&text("occurredAt").unwrap_or_else(|| "2026-03-01T00:00:00Z".into())),
            metadata: Default::default(),
            promotion_code: None,
        };
        Postback::sale(sale).unwrap()
    }

    fn click(affiliate: &str, created: &str, days: i64) -> Click {
        Click {
            id: CLICK.into(),
            tenant: TENANT.into(),
            campaign_id: "cmp_1".into(),
            affiliate_id: affiliate.into(),
            code: "CODE".into(),
            created_at: at(created),
            expires_at: at(created) + chrono::Duration::days(days),
            ttl: 0,
            landing_url: None,
            referrer: None,
            ip_hash: None,
            previous_session_id: None,
            flooded: false,
            customers_bound: 0,
        }
    }

    fn referral(key: &str, affiliate: &str, bound: &str, first: Option<&str>) -> Referral {
        Referral {
            id: None,
            affiliate_id: affiliate.into(),
            campaign_id: "cmp_1".into(),
            customer_key: key.into(),
            bound_at: at(bound),
            source: ReferralSource::Identify,
            session_id: None,
            linked_from: None,
            first_payment_at: first.map(at),
            first_payment_counted: false,
            payments: 0,
            lead_at: None,
        }
    }

    /// What a postback of `cus_1` sees when that id was bound before, with
    /// its first payment's time when it had one.
    fn bound_id(first: Option<&str>) -> Sightings {
        Sightings {
            referrals: vec![referral(
                "cid:cus_1",
                "aff_ref",
                "2025-01-01T00:00:00Z",
                first,
            )],
            ..Default::default()
        }
    }

    fn owner(affiliate: &str) -> CodeOwner {
        CodeOwner {
            affiliate_id: affiliate.into(),
            campaign_id: "cmp_1".into(),
        }
    }

    fn parties(recurring: serde_json::Value) -> Parties {
        let facts = |active| AffiliateFacts {
            referred: Referred::default(),
            campaign_id: "cmp_1".into(),
            active,
            email_hash: String::new(),
            signup_network: None,
            commission_override: None,
        };
        Parties {
            affiliates: HashMap::from([
                ("aff_click".into(), facts(true)),
                ("aff_code".into(), facts(true)),
                ("aff_ref".into(), facts(true)),
                ("aff_off".into(), facts(false)),
            ]),
            campaigns: HashMap::from([("cmp_1".into(), campaign("cmp_1", recurring))]),
        }
    }

    fn signals_of(p: &Postback, s: &Sightings) -> Vec<Signal> {
        match open(TENANT, p, s, None).unwrap() {
            Opening::Attribute { signals } => signals,
            other => panic!("expected signals, got {other:?}"),
        }
    }

    fn run(p: &Postback, s: &Sightings, terms: serde_json::Value) -> Plan {
        let signals = signals_of(p, s);
        let now = at("2026-06-01T00:00:00Z");
        plan(p, s, &signals, &parties(terms), None, now).unwrap()
    }

    #[test]
    fn signals_follow_the_contracts_order_and_windows() {
        use AttributionMethod as M;
        let cid = serde_json::json!({"clickId": CLICK, "sessionId": SESSION,
            "affiliateCode": "CODE", "customerId": "cus_1"});
        let all = Sightings {
            click: Some(click("aff_click", "2026-02-20T00:00:00Z", 30)),
            session_click: Some(click("aff_click", "2026-02-20T00:00:00Z", 30)),
            code_owner: Some(owner("aff_code")),
            referrals: vec![referral(
                "cid:cus_1",
                "aff_ref",
                "2026-01-01T00:00:00Z",
                None,
            )],
            ..Default::default()
        };
        let expired = Sightings {
            click: Some(click("aff_click", "2026-01-01T00:00:00Z", 30)),
            session_click: Some(click("aff_click", "2026-01-01T00:00:00Z", 30)),
            ..all.clone()
        };
        let too_late_click = Sightings {
            // A click made after the payment (beyond the clock-skew allowance).
            click: Some(click("aff_click", "2026-03-02T00:00:00Z", 30)),
            session_click: None,
            ..all.clone()
        };
        let cases: [(&str, &Sightings, Vec<AttributionMethod>); 3] = [
            (
                "every signal",
                &all,
                vec![M::Click, M::Session, M::Code, M::Customer],
            ),
            (
                "clicks outside their window",
                &expired,
                vec![M::Code, M::Customer],
            ),
            (
                "click after the payment",
                &too_late_click,
                vec![M::Code, M::Customer],
            ),
        ];
        for (name, s, want) in cases {
            let got: Vec<_> = signals_of(&postback(cid.clone()), s)
                .iter()
                .map(|s| s.method)
                .collect();
            assert_eq!(got, want, "{name}");
        }
        // Without customer id or e-mail, the session then the click stand for the customer.
        let p = postback(serde_json::json!({"sessionId": SESSION}));
        let s = Sightings {
            referrals: vec![referral(
                &format!("session:{SESSION}"),
                "aff_ref",
                "2026-01-01T00:00:00Z",
                None,
            )],
            ..Default::default()
        };
        assert_eq!(signals_of(&p, &s)[0].method, M::Session);
        assert_eq!(signals_of(&p, &s)[0].affiliate_id, "aff_ref");
    }

    #[test]
    fn a_claim_replays_or_refuses_and_checks_come_before_attribution() {
        let p = postback(serde_json::json!({}));
        let claim = |tenant: &str| Sightings {
            claim: Some(ExternalIdClaim {
                tenant: tenant.into(),
                conversion_id: "cnv_1".into(),
                created_at: at("2026-01-01T00:00:00Z"),
            }),
            ..Default::default()
        };
        assert_eq!(
            open(TENANT, &p, &claim(TENANT), None).unwrap(),
            Opening::Replay {
                conversion_id: "cnv_1".into()
            }
        );
        let other = open(TENANT, &p, &claim("acct_1#live"), None).unwrap_err();
        assert!(matches!(other, Error::AlreadyExists(_)));
        let named = postback(serde_json::json!({"campaignId": "cmp_9"}));
        let err = open(TENANT, &named, &Sightings::default(), None).unwrap_err();
        assert!(matches!(err, Error::NotFound("campaign")));
        let zero = Quota {
            account_id: "acct_1".into(),
            plan: "free".into(),
            cap: Some(0),
        };
        let err = open(TENANT, &p, &Sightings::default(), Some(&zero)).unwrap_err();
        assert!(matches!(err, Error::LimitExceeded(_)));
        // A replay answers even when the quota is used up.
        assert!(open(TENANT, &p, &claim(TENANT), Some(&zero)).is_ok());
    }

    /// (case, campaign terms, earlier first payment, payment time, commission, reason, recurring)
    type RuleCase<'a> = (
        &'a str,
        serde_json::Value,
        Option<&'a str>,
        &'a str,
        &'a str,
        Option<CommissionReason>,
        bool,
    );

    #[test]
    fn commission_rules_per_customer_first_payment() {
        use CommissionReason::*;
        let once = serde_json::json!({});
        let year = serde_json::json!({"commissionRecurring": true, "recurringMonthsLimit": 12});
        let life = serde_json::json!({"commissionRecurring": true});
        let first = Some("2025-06-01T00:00:00Z");
        let cases: [RuleCase; 6] = [
            (
                "first payment",
                once.clone(),
                None,
                "2026-03-01T00:00:00Z",
                "10.00",
                None,
                false,
            ),
            (
                "later, not recurring",
                once,
                first,
                "2026-03-01T00:00:00Z",
                "0.00",
                Some(NotRecurring),
                true,
            ),
            (
                "later, inside 12 months",
                year.clone(),
                first,
                "2026-05-31T23:59:59Z",
                "10.00",
                None,
                true,
            ),
            (
                "later, at 12 months",
                year.clone(),
                first,
                "2026-06-01T00:00:00Z",
                "0.00",
                Some(RecurringWindowEnded),
                true,
            ),
            (
                "later, lifetime",
                life,
                first,
                "2026-03-01T00:00:00Z",
                "10.00",
                None,
                true,
            ),
            (
                "first payment, limited",
                year,
                None,
                "2026-03-01T00:00:00Z",
                "10.00",
                None,
                false,
            ),
        ];
        for (name, terms, first, when, commission, reason, recurring) in cases {
            let p = postback(serde_json::json!({"customerId": "cus_1", "occurredAt": when}));
            let plan = run(&p, &bound_id(first), terms);
            let c = &plan.conversion;
            assert_eq!(c.commission.to_string(), commission, "{name}");
            assert_eq!(c.commission_reason, reason, "{name}");
            assert_eq!(c.is_recurring, recurring, "{name}");
            assert_eq!(c.status, ConversionStatus::Pending, "{name}");
            assert_eq!(plan.earning.is_some(), commission != "0.00", "{name}");
            // The window starts at the first payment, recorded once.
            // ... and the payment counted: the id's second, or its first.
            let want = vec![ReferralChange::Update(ReferralUpdate {
                customer_key: CustomerKey::CustomerId("cus_1".into()),
                first_payment_at: first.is_none().then_some(p.occurred_at),
                payments: Some((0, if first.is_some() { 2 } else { 1 })),
                lead_at: None,
                link: None,
            })];
            assert_eq!(plan.referrals, want, "{name}");
        }
    }

    #[test]
    fn an_e_mail_joining_a_customer_id_is_learnt_by_the_ids_binding() {
        let p = postback(serde_json::json!({
            "customerId": "cus_1", "customerEmail": "ann@example.com",
        }));
        let email = CustomerKey::from_email("ann@example.com")
            .unwrap()
            .to_string();
        // (the id's first payment before, the change the id's binding gets)
        for first in [None, Some("2025-02-01T00:00:00Z")] {
            let plan = run(&p, &bound_id(first), serde_json::json!({}));
            let learnt = plan.referrals.iter().find_map(|c| match c {
                ReferralChange::Update(u) if u.customer_key.to_string() == "cid:cus_1" => {
                    u.link.clone()
                }
                _ => None,
            });
            assert_eq!(learnt.as_deref(), Some(email.as_str()), "{first:?}");
            // One change per item: a transaction takes no two on one.
            let on_id = plan
                .referrals
                .iter()
                .filter(|c| match c {
                    ReferralChange::Update(u) => u.customer_key.to_string() == "cid:cus_1",
                    ReferralChange::Bind(r) => r.customer_key == "cid:cus_1",
                })
                .count();
            assert_eq!(on_id, 1, "{:?}", plan.referrals);
        }
    }

    #[test]
    fn an_attributed_payment_binds_new_identities_to_the_customers_first_affiliate() {
        let p = postback(serde_json::json!({
            "customerId": "cus_1", "customerEmail": "ann@example.com", "affiliateCode": "CODE",
        }));
        let email_key = CustomerKey::from_email("ann@example.com")
            .unwrap()
            .to_string();
        let s = Sightings {
            code_owner: Some(owner("aff_code")),
            referrals: vec![referral(
                &email_key,
                "aff_ref",
                "2025-01-01T00:00:00Z",
                None,
            )],
            ..Default::default()
        };
        let plan = run(&p, &s, serde_json::json!({}));
        // The code is tried before the referral, so the code's affiliate earns ...
        assert_eq!(plan.conversion.attribution, AttributionMethod::Code);
        assert_eq!(plan.conversion.affiliate_id.as_deref(), Some("aff_code"));
        assert_eq!(plan.conversion.customer_ref.as_deref(), Some("cid:cus_1"));
        let earning = plan.earning.unwrap();
        assert_eq!(earning.affiliate_id, "aff_code");
        assert_eq!(earning.while_status, Some(AffiliateStatus::Active));
        // ... while the customer id joins the customer's existing binding (first touch).
        let [ReferralChange::Bind(bound), ReferralChange::Update(_)] = &plan.referrals[..] else {
            panic!("unexpected changes {:?}", plan.referrals);
        };
        assert_eq!(bound.customer_key, "cid:cus_1");
        assert_eq!(bound.affiliate_id, "aff_ref");
        assert_eq!(bound.linked_from.as_deref(), Some(email_key.as_str()));
        assert_eq!(bound.source, ReferralSource::Payment);
        assert_eq!(bound.first_payment_at, Some(p.occurred_at));
    }

    #[test]
    fn a_new_customers_first_payment_is_counted_by_its_binding() {
        use crate::risk::{RiskCode, DEFAULT_MAX_CONVERSIONS_PER_HOUR as MAX};
        use serde_json::json;
        let customer_cap = |plan: &Plan| {
            plan.counts.iter().find_map(|c| match &c.scope {
                CountScope::Customer { .. } => Some(c.cap),
                CountScope::Network { .. } => None,
            })
        };
        let pay = |id: &str, at: &str| {
            postback(json!({"affiliateCode": "CODE", "customerId": "cus_1",
                "externalId": id, "occurredAt": at}))
        };
        let p = pay("ord_1", "2026-03-01T00:10:00Z");
        let s = Sightings {
            code_owner: Some(owner("aff_code")),
            ..Default::default()
        };
        let first = run(&p, &s, json!({}));
        assert_eq!(customer_cap(&first), None, "no hourly counter");
        let [ReferralChange::Bind(binding)] = first.referrals.as_slice() else {
            panic!("one binding: {:?}", first.referrals);
        };
        assert!(binding.first_payment_counted);
        assert_eq!(binding.first_payment_at, Some(p.occurred_at));

        // Later payments: one place of the first payment's hour is taken.
        let bound = Sightings {
            referrals: vec![binding.clone()],
            ..s.clone()
        };
        let same_hour = run(&pay("ord_2", "2026-03-01T00:59:59Z"), &bound, json!({}));
        assert_eq!(customer_cap(&same_hour), Some(Some(MAX - 1)));
        // ... and the customer's second payment is counted on its binding.
        let [ReferralChange::Update(counted)] = &same_hour.referrals[..] else {
            panic!("{:?}", same_hour.referrals);
        };
        assert_eq!(
            (counted.payments, counted.first_payment_at),
            (Some((1, 2)), None)
        );
        assert_eq!(same_hour.conversion.payment_number, Some(2));
        let next_hour = run(&pay("ord_3", "2026-03-01T01:00:00Z"), &bound, json!({}));
        assert_eq!(customer_cap(&next_hour), Some(Some(MAX)));
        // With a cap of one, the binding holds the hour's only place.
        let one = json!({"risk": {"maxConversionsPerHour": 1}});
        let beyond = run(&pay("ord_4", "2026-03-01T00:30:00Z"), &bound, one.clone());
        assert_eq!(customer_cap(&beyond), Some(None), "counted without a cap");
        assert!(beyond
            .conversion
            .risk
            .flags
            .iter()
            .any(|f| f.code == RiskCode::RapidConversions));
        assert!(run(&pay("ord_5", "2026-03-01T01:30:00Z"), &bound, one)
            .conversion
            .risk
            .flags
            .is_empty());

        // A binding made before any payment (identify): its first payment
        // sets `firstPaymentAt` and counts on the counter.
        let identified = Sightings {
            referrals: vec![referral(
                "cid:cus_1",
                "aff_code",
                "2026-01-01T00:00:00Z",
                None,
            )],
            ..s.clone()
        };
        let plan = run(&p, &identified, json!({}));
        assert_eq!(customer_cap(&plan), Some(Some(MAX)));
        assert!(matches!(
            plan.referrals.as_slice(),
            [ReferralChange::Update(_)]
        ));
        // Past the limit already (a replan): counted on the counter, uncapped.
        let over = Sightings {
            over: OverLimit {
                customer: true,
                network: false,
            },
            ..s
        };
        let plan = run(&p, &over, json!({}));
        assert_eq!(customer_cap(&plan), Some(None));
        let [ReferralChange::Bind(binding)] = plan.referrals.as_slice() else {
            panic!("one binding");
        };
        assert!(!binding.first_payment_counted);
        // A late attribution's payment is counted nowhere (docs/risk.md).
        let recorded = run(&p, &Sightings::default(), json!({})).conversion;
        let late = attribute_late(&recorded, first, at("2026-06-01T00:00:00Z"))
            .unwrap()
            .unwrap();
        let [ReferralChange::Bind(binding)] = late.referrals.as_slice() else {
            panic!("one binding");
        };
        assert!(!binding.first_payment_counted);
    }

    #[test]
    fn unattributed_inactive_and_quota_plans() {
        let p = postback(serde_json::json!({"affiliateCode": "NONE"}));
        let plan = run(&p, &Sightings::default(), serde_json::json!({}));
        let c = &plan.conversion;
        assert_eq!(c.status, ConversionStatus::Unattributed);
        assert_eq!(c.attribution, AttributionMethod::None);
        assert_eq!(
            (c.affiliate_id.as_ref(), c.campaign_id.as_ref()),
            (None, None)
        );
        assert_eq!(c.commission_reason, Some(CommissionReason::Unattributed));
        assert_eq!(c.payable_at, p.occurred_at);
        assert!(plan.referrals.is_empty() && plan.earning.is_none());
        assert_eq!(c.id, conversion_id_of(&p.external_id));

        let p = postback(serde_json::json!({"affiliateCode": "CODE", "customerId": "cus_1"}));
        let s = Sightings {
            code_owner: Some(owner("aff_off")),
            ..Default::default()
        };
        let plan = run(&p, &s, serde_json::json!({}));
        let c = &plan.conversion;
        assert_eq!(c.status, ConversionStatus::Pending);
        assert_eq!(
            c.commission_reason,
            Some(CommissionReason::AffiliateNotActive)
        );
        assert_eq!(c.payable_at, p.occurred_at + chrono::Duration::days(30));
        assert!(plan.earning.is_none());
        assert_eq!(plan.referrals.len(), 1, "the customer is still bound");

        let quota = Quota {
            account_id: "acct_1".into(),
            plan: "starter".into(),
            cap: Some(5),
        };
        let now = at("2026-06-01T00:00:00Z");
        let plan = plan_with_quota(&p, &s, &quota, now);
        assert_eq!(
            plan.quota,
            Some(QuotaCharge {
                account_id: "acct_1".into(),
                month: "2026-06".into(),
                cap: Some(5),
            })
        );
    }

    #[test]
    fn a_late_attribution_keeps_the_recorded_payment_and_earns_as_if_known_at_once() {
        let p = postback(serde_json::json!({"customerId": "cus_1"}));
        let recorded = run(&p, &Sightings::default(), serde_json::json!({})).conversion;
        assert_eq!(recorded.status, ConversionStatus::Unattributed);
        // The customer was bound since (a checkout that names the affiliate).
        let s = Sightings {
            referrals: vec![referral(
                "cid:cus_1",
                "aff_ref",
                "2026-03-02T00:00:00Z",
                None,
            )],
            ..Default::default()
        };
        let now = at("2026-06-02T00:00:00Z");
        let fresh = run(&p, &s, serde_json::json!({}));
        let late = attribute_late(&recorded, fresh.clone(), now)
            .unwrap()
            .expect("attributed");
        let after = &late.after;
        assert_eq!(
            (after.id.as_str(), after.created_at, after.updated_at),
            (recorded.id.as_str(), recorded.created_at, now)
        );
        assert_eq!(
            (
                after.affiliate_id.as_deref(),
                after.status,
                after.attribution
            ),
            (
                Some("aff_ref"),
                ConversionStatus::Pending,
                AttributionMethod::Customer
            )
        );
        assert_eq!(after.commission, fresh.conversion.commission);
        assert_eq!(after.commission, Decimal::from(10));
        assert_eq!(late.earning.map(|e| e.amount), Some(Decimal::from(10)));
        assert_eq!(late.event.event_type, EventType::ConversionAttributed);
        assert!(matches!(&late.referrals[..], [ReferralChange::Update(_)]));
        // Nothing to do: still nobody, already attributed, reversed in part, in a payout.
        let nobody = run(&p, &Sightings::default(), serde_json::json!({}));
        assert_eq!(attribute_late(&recorded, nobody, now).unwrap(), None);
        let mut moved = recorded.clone();
        moved.status = ConversionStatus::Pending;
        assert_eq!(attribute_late(&moved, fresh.clone(), now).unwrap(), None);
        let mut cut = recorded.clone();
        cut.reversed_amount = Decimal::ONE;
        assert_eq!(attribute_late(&cut, fresh.clone(), now).unwrap(), None);
        let mut held = recorded.clone();
        held.payout_id = Some("po_1".into());
        assert_eq!(attribute_late(&held, fresh, now).unwrap(), None);
    }

    fn plan_with_quota(p: &Postback, s: &Sightings, q: &Quota, now: DateTime<Utc>) -> Plan {
        let signals = signals_of(p, s);
        plan(
            p,
            s,
            &signals,
            &parties(serde_json::json!({})),
            Some(q),
            now,
        )
        .unwrap()
    }
}
