//! The records as the API shows them: each record's view, the one shape a
//! response and an event's payload share, rendered from the domain's types.
//! The domain decides; this crate only says how a decision reads on the wire.

pub mod adjustment;
pub mod affiliate;
pub mod application;
pub mod asset;
pub mod campaign;
pub mod commission_plan;
pub mod commission_tiers;
pub mod conversion;
pub mod event;
pub mod integration;
pub mod payout;
pub mod payout_commands;
pub mod portal;
pub mod promotion_code;
pub mod referral;
pub mod risk;
pub mod signup;
pub mod tax_form;
pub mod webhook;
