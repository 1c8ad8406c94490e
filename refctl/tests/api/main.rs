//! Integration tests: the real HTTP surface of the local host, backed by
//! DynamoDB Local and the S3 emulator started by `scripts/stack.sh`.

mod support;

mod adjustments;
mod affiliates;
mod applications;
mod assets;
mod auth;
mod bodies;
mod campaigns;
mod commission_plans;
mod commission_tiers;
mod connector_restorals;
mod connector_shapes;
mod contract;
mod conversions;
mod delivery_races;
mod edges;
mod events;
mod hardening;
mod idempotency;
mod integrations;
mod outages;
mod payout_job;
mod payout_rails;
mod payouts;
mod portal;
mod probe;
mod provider_amounts;
mod rate_limits;
mod reports;
mod risk;
mod secrets;
mod signup;
mod tracking;
mod webhooks;
