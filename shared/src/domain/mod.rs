//! Domain types and rules. Nothing here knows about HTTP.

pub mod account;
pub mod affiliate;
pub mod affiliate_code;
pub mod application;
pub mod asset;
pub mod attribution;
pub mod campaign;
pub mod commission;
pub mod connector;
pub mod conversion;
pub mod email;
pub mod event;
pub mod integration;
pub mod metadata;
pub mod payout;
pub mod payout_commands;
pub mod portal;
pub mod postback;
pub mod referral;
pub mod risk;
pub mod signup;
pub mod status;
pub mod summary;
pub mod tenant;
pub mod tracking;
pub mod webhook;
