//! The payout rails' provider APIs (contract section 14): Stripe Connect
//! today. One HTTP client per process, built on first use, with the SDK's
//! bounded waits (connect, whole call); the addresses are configuration
//! (`STRIPE_API_BASE`), so tests and `make run` reach local stand-ins.
//!
//! reqwest (already linked for webhook deliveries, on the same rustls and
//! ring) rather than a Stripe crate: the three calls made here are small
//! form posts, and a generated Stripe client adds minutes to a cold build.

pub mod stripe;

use std::sync::OnceLock;
use std::time::Duration;

use crate::config::{Config, ProviderBases};
use crate::error::{Error, Result};

/// The rails' HTTP client and addresses, shared by a process.
#[derive(Debug)]
pub struct Rails {
    client: OnceLock<reqwest::Client>,
    bases: ProviderBases,
    connect: Duration,
    timeout: Duration,
}

impl Rails {
    /// The rails of a configuration (nothing is built yet).
    pub fn new(config: &Config) -> Self {
        Rails {
            client: OnceLock::new(),
            bases: config.providers.clone(),
            connect: config.sdk_timeouts.connect,
            timeout: config.sdk_timeouts.operation,
        }
    }

    /// The providers' addresses.
    pub fn bases(&self) -> &ProviderBases {
        &self.bases
    }

    fn client(&self) -> Result<&reqwest::Client> {
        if let Some(c) = self.client.get() {
            return Ok(c);
        }
        let built = reqwest::Client::builder()
            // A provider never redirects an API call; a redirect is refused.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(self.connect)
            .timeout(self.timeout)
            .user_agent(concat!("referrals-api/", env!("CARGO_PKG_VERSION")))
            .use_preconfigured_tls(crate::tls::webhook_client_config())
            .build()
            .map_err(|e| Error::internal(format!("provider client: {e}")))?;
        Ok(self.client.get_or_init(|| built))
    }
}
