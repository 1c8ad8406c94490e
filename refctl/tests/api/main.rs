//! Integration tests: the real HTTP surface of the local host, backed by
//! DynamoDB Local and the S3 emulator started by `scripts/stack.sh`.

mod support;

mod auth;
mod bodies;
mod campaigns;
mod contract;
mod rate_limits;
