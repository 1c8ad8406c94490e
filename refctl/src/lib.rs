//! `refctl`: the operator CLI and the local host, as a library so the
//! integration tests and the benchmark drive the very same code.

pub mod demo;
pub mod openapi;
pub mod payouts;
pub mod runtime_api;
pub mod serve;
pub mod setup;
