//! The HTTP API: axum routes and extractors, the envelope, request ids and
//! the generated description, over the use cases (`services`), which sit on
//! the store (`store`) and the domain (`domain`). Those crates are
//! re-exported under the paths the functions use.

pub mod client_ip;
pub mod http;
pub mod lambda;

// The domain crate, under the paths the rest of this crate has always used.
pub use ::domain::{described, limits, Error, ErrorCode};
pub use ::domain::{
    error, field, ids, issue, money, patch, schema, timestamp, validation, webhook_schedule,
    webhook_signature,
};
// The store crate, likewise.
pub use ::store::{config, sdk, storage_error, tls, webhook_settings};
/// DynamoDB and S3 over the domain's types (the `store` crate).
pub mod store {
    pub use ::store::*;
}
// The services crate, likewise.
#[cfg(feature = "files")]
pub use ::services::paying as payouts;
pub use ::services::webhook_delivery as webhooks;
pub use ::services::{app, auth, lookups, rails, rate_limit, retry};
/// The use cases (the `services` crate).
pub mod services {
    pub use ::services::*;
}
/// The domain's records and rules (the `domain` crate).
pub mod domain {
    pub use ::domain::*;
}
