//! Key builders: the one place that knows how records are laid out in the table.
//!
//! Every record lives under its own id (`pk = id`, `sk = "R"`), so a read by id is
//! one GetItem whatever the tenant. Tenant-scoped lists go through the four
//! overloaded indexes; `docs/data-model.md` lists each access pattern.

use chrono::{DateTime, Utc};

use domain::payout::PayoutQueue;
use domain::referral::CustomerKey;
use domain::status::Status;
use domain::tenant::Tenant;
use domain::timestamp;

/// The owner of a connected account (contract section 14).
pub fn payout_account(account_id: &str) -> String {
    format!("PAYACCT#{account_id}")
}

/// The claim of a tenant's one paying integration (contract section 14).
pub fn paying_integration(tenant: &Tenant) -> String {
    format!("PAYRAIL#{}", tenant.key())
}

/// Sort key of a primary record.
pub const RECORD_SK: &str = "R";
/// Sort key of a uniqueness guard.
pub const GUARD_SK: &str = "GUARD";
/// Sort key of an affiliate's money totals, next to its record
/// (`pk = aff_…`; see `store::affiliate_totals`).
pub const TOTALS_SK: &str = "TOTALS";
/// Sort key of a campaign's stamp: its tenant and `updatedAt` alone.
pub const STAMP_SK: &str = "STAMP";

/// A sort key in time order: `<timestamp>#<rest>` (an id, or ids joined
/// by `#`).
pub fn at(time: &DateTime<Utc>, rest: &str) -> String {
    format!("{}#{rest}", timestamp::format(time))
}

/// The greatest time-ordered sort key at `time`: "~" sorts after every id,
/// so a range up to it keeps all of that instant.
pub fn up_to(time: &DateTime<Utc>) -> String {
    at(time, "~")
}

/// The global secondary indexes: four overloaded tenant lists, and a sparse
/// one of work that comes due (`GSI5`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Index {
    /// Every record of a kind in a tenant.
    Gsi1,
    /// Records of a kind by campaign.
    Gsi2,
    /// Records of a kind by status.
    Gsi3,
    /// Records of a kind by affiliate (or affiliates by e-mail; keys by account).
    Gsi4,
    /// Sparse: payout work (conversions due for approval, payable pools,
    /// pools to check, a payout's conversions, payouts with work left).
    Gsi5,
}

impl Index {
    /// Every index, in table order.
    pub const ALL: [Index; 5] = [
        Index::Gsi1,
        Index::Gsi2,
        Index::Gsi3,
        Index::Gsi4,
        Index::Gsi5,
    ];

    /// Every index key attribute, for updates that re-derive a record's index entries.
    pub fn attributes() -> Vec<&'static str> {
        Self::ALL.iter().flat_map(|i| [i.pk(), i.sk()]).collect()
    }

    /// The index name.
    pub fn name(self) -> &'static str {
        match self {
            Index::Gsi1 => "GSI1",
            Index::Gsi2 => "GSI2",
            Index::Gsi3 => "GSI3",
            Index::Gsi4 => "GSI4",
            Index::Gsi5 => "GSI5",
        }
    }

    /// The partition-key attribute.
    pub fn pk(self) -> &'static str {
        match self {
            Index::Gsi1 => "gsi1pk",
            Index::Gsi2 => "gsi2pk",
            Index::Gsi3 => "gsi3pk",
            Index::Gsi4 => "gsi4pk",
            Index::Gsi5 => "gsi5pk",
        }
    }

    /// The sort-key attribute.
    pub fn sk(self) -> &'static str {
        match self {
            Index::Gsi1 => "gsi1sk",
            Index::Gsi2 => "gsi2sk",
            Index::Gsi3 => "gsi3sk",
            Index::Gsi4 => "gsi4sk",
            Index::Gsi5 => "gsi5sk",
        }
    }
}

/// The record kinds that live in tenant lists, with their key tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    Campaign,
    Affiliate,
    Application,
    Conversion,
    Payout,
    Asset,
    Event,
    WebhookEndpoint,
    Integration,
    Adjustment,
    Referral,
}

/// A list partition: the index that holds it and its partition key.
pub type Partition = (Index, String);

/// The lists a record of a kind stands in, each in its own index (the
/// table's convention, stated here once).
impl ListKind {
    /// GSI1: every record of the kind in the tenant.
    pub fn all(self, tenant: &Tenant) -> Partition {
        (Index::Gsi1, tenant_list(tenant, self))
    }

    /// GSI2: the records of the kind belonging to a campaign.
    pub fn of_campaign(self, tenant: &Tenant, campaign_id: &str) -> Partition {
        (Index::Gsi2, by_campaign(tenant, self, campaign_id))
    }

    /// GSI3: the records of the kind in a status.
    pub fn in_status<S: Status>(self, tenant: &Tenant, status: S) -> Partition {
        (Index::Gsi3, by_status(tenant, self, status))
    }

    /// GSI4: the records of the kind belonging to an affiliate.
    pub fn of_affiliate(self, tenant: &Tenant, affiliate_id: &str) -> Partition {
        (Index::Gsi4, by_affiliate(tenant, self, affiliate_id))
    }
}

impl ListKind {
    /// Short tag used in index keys.
    pub fn tag(self) -> &'static str {
        match self {
            ListKind::Campaign => "CMP",
            ListKind::Affiliate => "AFF",
            ListKind::Application => "APP",
            ListKind::Conversion => "CNV",
            ListKind::Payout => "PO",
            ListKind::Asset => "AST",
            ListKind::Event => "EVT",
            ListKind::WebhookEndpoint => "WHE",
            ListKind::Integration => "INT",
            ListKind::Adjustment => "ADJ",
            ListKind::Referral => "REF",
        }
    }
}

/// GSI1 partition: all records of a kind in a tenant.
pub fn tenant_list(tenant: &Tenant, kind: ListKind) -> String {
    format!("{}#{}", tenant.key(), kind.tag())
}

/// GSI2 partition: records of a kind belonging to a campaign.
pub fn by_campaign(tenant: &Tenant, kind: ListKind, campaign_id: &str) -> String {
    format!("{}#{}#CMP#{}", tenant.key(), kind.tag(), campaign_id)
}

/// GSI3 partition: records of a kind in a status.
pub fn by_status<S: Status>(tenant: &Tenant, kind: ListKind, status: S) -> String {
    format!("{}#{}#ST#{}", tenant.key(), kind.tag(), status.name())
}

/// GSI4 partition: records of a kind belonging to an affiliate.
pub fn by_affiliate(tenant: &Tenant, kind: ListKind, affiliate_id: &str) -> String {
    format!("{}#{}#AFF#{}", tenant.key(), kind.tag(), affiliate_id)
}

/// GSI4 partition for affiliates: by (lowercased) e-mail across campaigns.
pub fn affiliate_by_email(tenant: &Tenant, email_lower: &str) -> String {
    format!("{}#AFF#EMAIL#{}", tenant.key(), email_lower)
}

/// GSI4 partition for API keys: every key of an account.
pub fn account_keys(account_id: &str) -> String {
    format!("{account_id}#KEYS")
}

/// The partition of the refunds kept for a payment not recorded yet, by one
/// of the ids it may be known by.
pub fn parked_refunds(tenant: &Tenant, payment_id: &str) -> String {
    format!("REFUND#{}#{}", tenant.key(), payment_id)
}

/// The partition of the link kept for a payment not recorded yet (its other
/// ids, sent apart from it).
pub fn parked_link(tenant: &Tenant, payment_id: &str) -> String {
    format!("LINK#{}#{}", tenant.key(), payment_id)
}

/// The item counting a tenant's webhook endpoints (`count`).
pub fn webhook_endpoint_count(tenant: &Tenant) -> String {
    format!("{}#WHE#COUNT", tenant.key())
}

/// Guard that makes an affiliate e-mail unique within a campaign.
pub fn email_guard(tenant: &Tenant, campaign_id: &str, email_lower: &str) -> String {
    format!("EMAIL#{}#{}#{}", tenant.key(), campaign_id, email_lower)
}

/// Guard (and lookup) that makes an affiliate code unique within a tenant.
pub fn code_guard(tenant: &Tenant, code: &str) -> String {
    format!("CODE#{}#{}", tenant.key(), code.to_ascii_lowercase())
}

/// Guard (and lookup) of an active promotion code by its provider id: what
/// a payment carrying it is attributed to, read beside the postback's other
/// sightings.
pub fn promotion_guard(tenant: &Tenant, provider_id: &str) -> String {
    format!("PROMO#{}#{}", tenant.key(), provider_id)
}

/// Guard that makes an active promotion code's customer-facing code unique
/// within a tenant (in any letter case, as Stripe compares them).
pub fn promotion_code_guard(tenant: &Tenant, code: &str) -> String {
    format!("PROMOCODE#{}#{}", tenant.key(), code.to_ascii_lowercase())
}

/// Guard of an imported referral's `externalId`, unique in a tenant
/// (`sk = GUARD`): it names the referral's customer identity.
pub fn referral_import_guard(tenant: &Tenant, external_id: &str) -> String {
    format!("REFXID#{}#{external_id}", tenant.key())
}

/// Guard of a manual adjustment's `externalId`, unique in a tenant: it
/// names the adjustment, so the same request again answers it.
pub fn adjustment_guard(tenant: &Tenant, external_id: &str) -> String {
    format!("ADJXID#{}#{external_id}", tenant.key())
}

/// The partition of an affiliate's promotion codes.
pub fn promotion_codes(tenant: &Tenant, affiliate_id: &str) -> String {
    format!("{}#PRC#{}", tenant.key(), affiliate_id)
}

/// The claim item of an `externalId` claimed before a conversion's id was
/// derived from it (read beside the conversion's key; none is written now).
pub fn external_id_guard(external_id: &str) -> String {
    format!("XID#{external_id}")
}

/// Referral of a customer in a tenant: which affiliate brought them (first touch).
pub fn referral(tenant: &Tenant, customer_key: &CustomerKey) -> String {
    format!("REF#{}#{}", tenant.key(), customer_key)
}

/// Rate-limit counter for a scope and a window.
pub fn rate_limit(scope: &str, window_start: i64) -> String {
    format!("RL#{scope}#{window_start}")
}

/// Hourly conversion counter of one affiliate and customer identity
/// (RAPID_CONVERSIONS), the hour as `YYYY-MM-DDTHH`; the identity appears
/// only as its SHA-256 (a customer id may be an e-mail address).
pub fn customer_hour_count(
    tenant: &Tenant,
    affiliate_id: &str,
    customer: &str,
    hour: &str,
) -> String {
    let customer = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(customer.as_bytes()));
    format!("RISKC#{}#{affiliate_id}#{customer}#{hour}", tenant.key())
}

/// Hourly conversion counter of one network (a salted address hash).
pub fn network_hour_count(tenant: &Tenant, network: &str, hour: &str) -> String {
    format!("RISKN#{}#{network}#{hour}", tenant.key())
}

/// Hourly click counter of one code of a campaign from one network (CLICK_FLOOD).
pub fn click_flood(campaign_id: &str, code: &str, network: &str, hour: &str) -> String {
    format!("FLOOD#{campaign_id}#{code}#{network}#{hour}")
}

/// Monthly conversion counter of an account (live mode only).
pub fn quota(account_id: &str, month: &str) -> String {
    format!("QUOTA#{account_id}#{month}")
}

/// Partition of a tenant's conversion rollups (summary figures per day and
/// per month; sort keys in `store::rollups`).
pub fn rollups(tenant: &Tenant) -> String {
    format!("ROLLUP#{}", tenant.key())
}

/// The partition of one affiliate's conversion rollups (the portal's stats).
pub fn affiliate_rollups(tenant: &Tenant, affiliate_id: &str) -> String {
    format!("ROLLUP#{}#AFF#{affiliate_id}", tenant.key())
}

/// The partition of one affiliate's click counts per day and month.
pub fn affiliate_clicks(tenant: &Tenant, affiliate_id: &str) -> String {
    format!("CLICKS#{}#AFF#{affiliate_id}", tenant.key())
}

/// Shards of the global work partitions of `GSI5`, so no one partition takes
/// every tenant's writes.
pub const WORK_SHARDS: u32 = 4;

/// The shard of a record id (its last ULID character spreads evenly).
pub fn shard_of(id: &str) -> u32 {
    id.bytes().last().map_or(0, |b| u32::from(b) % WORK_SHARDS)
}

/// GSI5 partition of conversions waiting for their hold to end (all tenants).
pub fn due_approval(shard: u32) -> String {
    format!("DUE#{shard}")
}

/// GSI5 partition of an affiliate's payable pool in one currency.
pub fn payable_pool(tenant: &Tenant, affiliate_id: &str, currency: &str) -> String {
    format!("POOL#{}#{affiliate_id}#{currency}", tenant.key())
}

/// GSI5 partition of pool markers to check (all tenants).
pub fn pools_to_check(shard: u32) -> String {
    format!("CHECK#{shard}")
}

/// GSI5 partition of the conversions and adjustments a payout holds.
pub fn payout_members(payout_id: &str) -> String {
    format!("PO#{payout_id}")
}

/// GSI5 partition of the payouts of every tenant in one of the payout
/// job's queues (`BUILD`, `SETTLE`, `RELEASE`, `PAYING`).
pub fn payout_work(queue: PayoutQueue, shard: u32) -> String {
    let name = match queue {
        PayoutQueue::Build => "BUILD",
        PayoutQueue::Settle => "SETTLE",
        PayoutQueue::Release => "RELEASE",
        PayoutQueue::Paying => "PAYING",
    };
    format!("{name}#{shard}")
}

/// Sort key of a pool marker (`pk = <affiliate id>`).
pub fn pool_marker_sk(currency: &str) -> String {
    format!("POOL#{currency}")
}

/// Sort key of the lock held while a payout of an affiliate and currency is
/// being assembled (`pk = <affiliate id>`).
pub fn claim_lock_sk(currency: &str) -> String {
    format!("CLAIM#{currency}")
}

/// Marker that the demo data was seeded.
pub const DEMO_MARKER: &str = "DEMO#seeded";

/// Sort key of the delivery task of an event (`pk = <endpoint id>`).
pub fn webhook_task_sk(event_id: &str) -> String {
    format!("TASK#{event_id}")
}

/// Sort key of a delivery attempt record (`pk = <endpoint id>`), in time order.
pub fn webhook_attempt_sk(attempted_at: &DateTime<Utc>, delivery_id: &str) -> String {
    format!("DLV#{}", at(attempted_at, delivery_id))
}

/// GSI1 partition of an endpoint's delivery attempts (newest first).
pub fn webhook_attempts(endpoint_id: &str) -> String {
    format!("{endpoint_id}#DLV")
}

/// GSI2 partition of an endpoint's delivery attempts of one event.
pub fn webhook_event_attempts(endpoint_id: &str, event_id: &str) -> String {
    format!("{endpoint_id}#DLV#{event_id}")
}

/// GSI5 partition of webhook deliveries with a retry due (all tenants).
pub fn webhook_retries(shard: u32) -> String {
    format!("RETRY#{shard}")
}
