//! The domain: the product's records, their rules and the decisions every
//! write is planned from, with the values they are made of (money, ids,
//! times, errors). Pure: no AWS SDK, no HTTP server, no runtime.

pub mod account;
pub mod adjustment;
pub mod affiliate;
pub mod affiliate_code;
pub mod application;
pub mod asset;
pub mod attribution;
pub mod campaign;
pub mod change;
pub mod commission;
pub mod commission_plan;
pub mod commission_terms;
pub mod commission_tiers;
pub mod connector;
pub mod conversion;
pub mod conversion_changes;
pub mod decision;
pub mod edit;
pub mod email;
pub mod event;
pub mod idempotency;
pub mod import;
pub mod integration;
pub mod metadata;
pub mod payments_report;
pub mod payout;
pub mod payout_account;
pub mod payout_command;
mod payout_events;
pub mod payout_rail;
pub mod payout_totals;
pub mod payout_work;
pub mod portal;
pub mod postback;
pub mod promotion_code;
pub mod provider_format;
pub mod referral;
pub mod restoral;
pub mod risk;
pub mod signup;
pub mod status;
pub mod summary;
pub mod tax_form;
pub mod tax_hold;
pub mod tenant;
pub mod tracking;
pub mod webhook;

pub mod error;
pub mod field;
pub mod ids;
pub mod issue;
pub mod json_body;
pub mod json_schema;
pub mod money;
pub mod patch;
pub mod schema;
pub mod timestamp;
pub mod validation;
pub mod webhook_schedule;
pub mod webhook_signature;

pub mod enums;

pub use error::{Error, ErrorCode};
