//! The one common crate: configuration, authentication, errors, validation,
//! the domain rules and DynamoDB/S3 access shared by every function.

pub mod app;
pub mod auth;
pub mod client_ip;
pub mod config;
pub mod domain;
mod enums;
pub mod error;
pub mod http;
pub mod ids;
pub mod issue;
pub mod lambda;
pub mod lookups;
pub mod money;
pub mod patch;
#[cfg(feature = "files")]
pub mod payouts;
pub mod rails;
pub mod rate_limit;
pub mod retry;
pub mod schema;
pub mod sdk;
pub mod services;
pub mod store;
pub mod timestamp;
pub mod tls;
pub mod validation;
pub mod webhook_schedule;
pub mod webhook_settings;
pub mod webhook_signature;
pub mod webhooks;

pub use error::{Error, ErrorCode};
