//! The payment port: how an approved payout's money moves.
//!
//! `manual` sends nothing (the merchant pays outside the platform and marks
//! the payout paid); `sandbox` pays at once without moving money, and can be
//! told to refuse the first attempts of each payout. Both take the payout id
//! as idempotency key: asking twice for one payout pays it once. Test mode
//! always uses the sandbox.
//!
//! Neither moves money through this process, so batch-process asks them
//! once the move to PROCESSING is decided and commits their answer with it
//! (one write). A rail that moves money (`services::payout_rails`) is
//! instead asked after PROCESSING is committed, so that a crash between the
//! two leaves a payout the payout job finds and asks again.

use std::collections::HashMap;
use std::sync::Mutex;

use domain::payout::Payout;
use domain::tenant::Mode;
use store::config::{Config, ProviderKind};

/// What a provider answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payment {
    /// Paid; the provider's reference.
    Paid { reference: String },
    /// Accepted, not confirmed yet (manual: until the merchant marks it paid).
    Pending,
    /// Refused or unreachable; nothing was paid.
    Failed { message: String },
}

/// A sandbox that remembers, per payout id, its attempts and its payment.
#[derive(Debug, Default)]
pub struct Sandbox {
    failures: u32,
    ledger: Mutex<HashMap<String, (u32, Option<String>)>>,
}

impl Sandbox {
    /// A sandbox refusing the first `failures` attempts of each payout.
    pub fn new(failures: u32) -> Self {
        Sandbox {
            failures,
            ledger: Mutex::default(),
        }
    }

    fn pay(&self, payout: &Payout) -> Payment {
        let Ok(mut ledger) = self.ledger.lock() else {
            return Payment::Failed {
                message: "sandbox ledger unavailable".into(),
            };
        };
        let (attempts, paid) = ledger.entry(payout.id.clone()).or_default();
        *attempts += 1;
        if let Some(reference) = paid {
            return Payment::Paid {
                reference: reference.clone(),
            };
        }
        if *attempts <= self.failures {
            return Payment::Failed {
                message: format!("sandbox refused attempt {attempts} (SANDBOX_PAYMENT_FAILURES)"),
            };
        }
        let reference = format!("sandbox_{}", payout.id);
        *paid = Some(reference.clone());
        Payment::Paid { reference }
    }

    /// How many payments the sandbox made for a payout (0 or 1).
    pub fn payments_of(&self, payout_id: &str) -> usize {
        self.ledger
            .lock()
            .ok()
            .and_then(|l| l.get(payout_id).map(|(_, p)| usize::from(p.is_some())))
            .unwrap_or(0)
    }
}

/// The providers of both modes, built once per process.
#[derive(Debug)]
pub struct Payments {
    live: ProviderKind,
    sandbox: Sandbox,
}

impl Payments {
    /// The providers a configuration names.
    pub fn new(config: &Config) -> Self {
        Payments {
            live: config.payment_provider,
            sandbox: Sandbox::new(config.sandbox_failures),
        }
    }

    /// The sandbox (test mode's provider, and live mode's when configured).
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Asks the mode's provider to pay a payout (idempotent per payout id).
    pub async fn pay(&self, mode: Mode, payout: &Payout) -> Payment {
        match (mode, self.live) {
            (Mode::Test, _) | (Mode::Live, ProviderKind::Sandbox) => self.sandbox.pay(payout),
            (Mode::Live, ProviderKind::Manual) => Payment::Pending,
        }
    }
}
