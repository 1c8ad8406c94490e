//! The one common crate: configuration, authentication, errors, validation,
//! the domain rules and DynamoDB/S3 access shared by every function.

pub mod app;
pub mod auth;
pub mod client_ip;
pub mod http;
pub mod lambda;
pub mod lookups;
#[cfg(feature = "files")]
pub mod payouts;
pub mod rails;
pub mod rate_limit;
pub mod retry;
pub mod services;
pub mod webhooks;

// The domain crate, under the paths the rest of this crate has always used.
pub use ::domain::{described, limits, Error, ErrorCode};
pub use ::domain::{
    error, ids, issue, money, patch, schema, timestamp, validation, webhook_schedule,
    webhook_signature,
};
// The store crate, likewise.
pub use ::store::{config, sdk, storage_error, tls, webhook_settings};
/// DynamoDB and S3 over the domain's types (the `store` crate).
pub mod store {
    pub use ::store::*;
}
/// The domain's records and rules (the `domain` crate).
pub mod domain {
    pub use ::domain::*;
}
