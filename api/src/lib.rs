//! The HTTP API: axum routes and extractors, the envelope, request ids and
//! the generated description, over the use cases (`services`), which sit on
//! the store (`store`), the views (`wire`) and the domain (`domain`). Those
//! crates are re-exported as `api::services`, `api::store`, `api::wire` and
//! `api::domain`, so a function depends on this crate alone.

pub mod client_ip;
pub mod http;
pub mod lambda;

// The domain's error and its description macros, the API's vocabulary.
pub use ::domain::{described, Error, ErrorCode};
/// DynamoDB and S3 over the domain's types (the `store` crate).
pub mod store {
    pub use ::store::*;
}
/// The use cases (the `services` crate).
pub mod services {
    pub use ::services::*;
}
/// The domain's records and rules (the `domain` crate).
pub mod domain {
    pub use ::domain::*;
}
/// The records as the API shows them (the `wire` crate).
pub mod wire {
    pub use ::wire::*;
}
