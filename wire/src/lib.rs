//! The API's wire types: each record's view, the one shape a response and an
//! event's payload share, rendered from the domain's records; and every
//! request body, which converts into the domain's input at the edge (a
//! `*Draft` or `*Changes` through `From`, or a checked request such as a
//! `Postback` or a payout `Command` through `validate`). The domain decides;
//! this crate only says how a request and a decision read on the wire.

/// `$body`'s whole-number field `$field` judged against the range its
/// attribute states (the issue at `$parent.$field` when nested).
macro_rules! ranged {
    ($body:ty, $field:literal, $value:expr $(, in $parent:literal)?) => {
        domain::schema::Ranged::of(&[$($parent,)? $field], $value, domain::limits!($body, $field))
    };
}

/// `$to { $field: $from.$field, .., $name: $value, .. }`: a body's fields
/// moved by name into the domain's input of the same fields, the others as
/// given.
macro_rules! moved {
    ($from:ident => $to:ident { $($field:ident),+ $(,)? $(; $($name:ident: $value:expr),+ $(,)?)? }) => {
        $to { $($field: $from.$field,)+ $($($name: $value,)+)? }
    };
}

pub mod adjustment;
pub mod affiliate;
pub mod application;
pub mod asset;
pub mod campaign;
pub mod commission_plan;
pub mod commission_tiers;
pub mod conversion;
pub mod event;
pub mod import;
pub mod integration;
pub mod number;
pub mod payments_report;
pub mod payout;
pub mod payout_account;
pub mod payout_commands;
pub mod portal;
pub mod promotion_code;
pub mod referral;
pub mod risk;
pub mod signup;
pub mod summary;
pub mod tax_form;
pub mod tracking;
pub mod webhook;
