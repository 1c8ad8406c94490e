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
//!
//! The module's files: `item` (a conversion's item, its index entries and
//! what it leaves out), `list` (the reads by id and by index), `batch` (the
//! BatchGetItem of keys), `postback_reads` (the postback's two reads),
//! `claims` (the externalId's claims and aliases), `commit` (a postback's
//! and a late attribution's transactions), `status_moves` (reversal,
//! release and the status change they share).

mod batch;
mod claims;
mod commit;
mod item;
mod list;
mod postback_reads;
mod status_moves;

pub use claims::{claim_alias, claimed, claimed_by, claimed_by_any};
pub use commit::{commit, commit_late, Attributed, Committed, PostbackAction, Unchanged};
pub use item::{
    decimal_value, decode, index_keys, item, COMMISSION_CLAWED_BACK, COMMISSION_REVERSED,
};
pub use list::{cursor_after, get, list, list_query, ConversionFilter};
pub use postback_reads::{read_parties, read_sightings, PartyRecords};
pub use status_moves::{
    commit_release, commit_reversal, read_reversal, status_move, ReversalFacts,
};
