//! The building blocks of webhook delivery (contract section 10, Standard
//! Webhooks), free of storage (the event types live in `domain::event`):
//!
//! - [`signature`]: endpoint secrets (`whsec_...`), the `v1` signature and
//!   the headers of a delivery;
//! - [`ssrf`]: the guard that endpoint URLs pass at creation and before every
//!   delivery, returning the checked addresses;
//! - [`delivery`]: one HTTP attempt to those addresses and its verdict;
//! - [`schedule`]: the retry delays and when an endpoint is disabled.
//!
//! [`Webhooks`] holds what they build from the settings
//! (`webhook_settings`), once per process. Above the application context,
//! `services::webhooks` runs deliveries.

pub mod delivery;
pub mod ssrf;

pub use delivery::Deliverer;
pub use domain::webhook::{AttemptResult, Verdict};
pub use domain::webhook_schedule::{RetrySchedule, DISABLE_AFTER};
pub use domain::webhook_signature::Secret;
pub use ssrf::{check_url, Reach, Target};

use std::time::Duration;

pub use store::webhook_settings::{SettingsError, WebhookSettings};

/// What deliveries need, built once per process from the settings and
/// shared by every invocation (the HTTP client keeps its connections).
#[derive(Debug, Clone)]
pub struct Webhooks {
    /// Sends the attempts; built on the first delivery, so the functions that
    /// never deliver never build an HTTP client and its TLS set-up.
    deliverer: std::sync::OnceLock<Deliverer>,
    /// How long one attempt may take.
    timeout: Duration,
    /// When failed deliveries are tried again.
    pub retry_schedule: RetrySchedule,
    /// Whether `http` and loopback endpoint URLs are allowed (local only).
    pub allow_local: bool,
    /// Whether only loopback endpoint URLs are allowed (local test runs).
    pub loopback_only: bool,
}

impl Webhooks {
    /// Holds the settings; the deliverer is built on first use.
    pub fn new(settings: &WebhookSettings) -> Webhooks {
        Webhooks {
            deliverer: std::sync::OnceLock::new(),
            timeout: settings.timeout,
            retry_schedule: settings.retry_schedule.clone(),
            allow_local: settings.allow_local,
            loopback_only: settings.loopback_only,
        }
    }

    /// The deliverer, built the first time one is needed.
    pub fn deliverer(&self) -> Result<&Deliverer, reqwest::Error> {
        if let Some(deliverer) = self.deliverer.get() {
            return Ok(deliverer);
        }
        let built = Deliverer::with_timeout(self.timeout)?;
        Ok(self.deliverer.get_or_init(|| built))
    }

    /// Which addresses endpoint URLs may point at under these settings.
    pub fn reach(&self) -> Reach {
        match (self.allow_local, self.loopback_only) {
            (_, true) => Reach::LoopbackOnly,
            (true, false) => Reach::PublicAndLoopback,
            (false, false) => Reach::Public,
        }
    }
}
