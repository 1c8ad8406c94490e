//! Domain types and rules. Nothing here knows about HTTP.

pub mod account;
pub mod campaign;
pub mod metadata;
pub mod tenant;
