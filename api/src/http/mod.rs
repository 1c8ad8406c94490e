//! The HTTP surface shared by every function, on axum: extractors for who
//! may call (`access`), bodies, queries and path ids; replies; the router
//! and the outer layer that gives every answer its envelope and headers;
//! the OpenAPI description of it all (`openapi`). The domain modules never
//! import from here.

pub mod access;
pub mod body;
pub mod csv;
pub mod envelope;
pub mod filters;
pub mod idempotency;
pub mod import;
pub mod layer;
pub mod openapi;
pub mod query;
pub mod reply;
pub mod request;
pub mod router;

pub use access::{Admission, BaseUrl, Merchant, PathId, PathIds, Portal, Public, PublicCount};
pub use body::{EventBody, Json};
pub use query::{FromQuery, Listing, Params, Query};
pub use reply::{Answer, Failure, Reply};
pub use router::{service, with_cors, ApiRouter};
