//! Names of the item attributes the store reads, writes or conditions on by
//! name. A record's other fields are named by its serde mapping alone.

/// The table's partition key.
pub const PK: &str = "pk";
/// The table's sort key.
pub const SK: &str = "sk";
/// The tenant that owns an item (`<account>#<mode>`).
pub const TENANT: &str = "tenant";
/// A record's id.
pub const ID: &str = "id";
/// A record's status, as its domain enum spells it.
pub const STATUS: &str = "status";
/// When a record was created.
pub const CREATED_AT: &str = "createdAt";
/// When a record last changed.
pub const UPDATED_AT: &str = "updatedAt";
/// A record's optimistic-concurrency version.
pub const VERSION: &str = "version";
/// The campaign a record belongs to.
pub const CAMPAIGN_ID: &str = "campaignId";
/// The affiliate a record belongs to.
pub const AFFILIATE_ID: &str = "affiliateId";
/// The integration a claim names.
pub const INTEGRATION_ID: &str = "integrationId";
/// The payout that holds a conversion.
pub const PAYOUT_ID: &str = "payoutId";
/// A record's merchant-set metadata.
pub const METADATA: &str = "metadata";
/// A record's name.
pub const NAME: &str = "name";
/// A record's description.
pub const DESCRIPTION: &str = "description";
/// A record's kind (assets, integrations).
pub const TYPE: &str = "type";
/// An amount's currency.
pub const CURRENCY: &str = "currency";
/// A conversion's amount as a number, for range filters.
pub const AMOUNT_VALUE: &str = "amountValue";
/// A counter's value.
pub const COUNT: &str = "count";
/// Expiry time (epoch seconds) the table's TTL reads.
pub const TTL: &str = "ttl";
/// A payout's outstanding work (claim, settle, release, or a payment to confirm).
pub const WORK: &str = "work";
/// The conversions a payout claimed.
pub const CLAIMED: &str = "claimed";
/// Their commissions, in minor units.
pub const CLAIMED_MINOR: &str = "claimedMinor";
/// The adjustments a payout claimed.
pub const CLAIMED_ADJUSTMENTS: &str = "claimedAdjustments";
/// Their amounts, in minor units.
pub const CLAIMED_ADJUSTMENT_MINOR: &str = "claimedAdjustmentMinor";
/// How many of a payout's conversions its work has settled.
pub const SETTLED: &str = "settled";
/// How many of a payout's members its work has released.
pub const RELEASED: &str = "released";
/// Since when a webhook endpoint's deliveries have failed.
pub const FAILING_SINCE: &str = "failingSince";
/// Why a webhook endpoint was disabled.
pub const DISABLED_REASON: &str = "disabledReason";
/// A pool marker's change count.
pub const TOUCHES: &str = "touches";
/// When an integration last received an event.
pub const LAST_EVENT_AT: &str = "lastEventAt";
