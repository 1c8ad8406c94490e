//! Use cases: each runs read -> decide (`domain`) -> commit (`store`), owns
//! its retries and its cache policy, and maps what the commit's conditions
//! report. They sit above the application context (`App`) and below the
//! HTTP layer and the functions.

// The layers below, for the functions that depend on this crate alone.
pub use domain;
pub use store;

pub mod app;
pub mod auth;
pub mod lookups;
#[cfg(feature = "files")]
pub mod paying;
pub mod rails;
pub mod rate_limit;
pub mod retry;
pub mod webhook_delivery;

pub mod adjustments;
pub mod affiliates;
pub mod applications;
pub mod assets;
pub mod campaigns;
pub mod commission_preview;
pub mod conversion_export;
pub mod edited;
pub mod enrollments;
pub mod holds;
pub mod idempotency;
pub mod imports;
pub mod integrations;
#[cfg(feature = "files")]
pub mod invoices;
pub mod local_webhooks;
pub mod payments_report;
pub mod payout_accounts;
#[cfg(feature = "files")]
pub mod payout_job;
#[cfg(feature = "files")]
pub mod payout_rails;
pub mod payout_transitions;
#[cfg(feature = "files")]
pub mod payouts;
#[cfg(feature = "files")]
pub mod portal;
pub mod portal_sessions;
pub mod postback;
pub mod promotion_codes;
pub mod provider_events;
pub mod reverse;
#[cfg(feature = "files")]
pub mod tax_forms;
pub mod tracking;
pub mod webhooks;
