//! The HTTP surface shared by every function: requests, bodies, queries,
//! routing and the envelope. The domain modules never import from here.

pub mod body;
pub mod envelope;
pub mod query;
pub mod request;
pub mod router;

pub use request::ApiRequest;
pub use router::{Call, Handler, Reply, Router};
