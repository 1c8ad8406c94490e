//! Paying affiliates: the payment provider port and its adapters, and the
//! storage keys of payout invoices. The payout use cases that drive them live
//! in `services::payouts`.

pub mod invoice;
pub mod provider;
