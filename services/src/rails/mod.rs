//! The payout rails' provider APIs (contract section 14): Stripe Connect
//! and PayPal Payouts. One HTTP client per process, built on first use, with the SDK's
//! bounded waits (connect, whole call); the addresses are configuration
//! (`STRIPE_API_BASE`), so tests and `make run` reach local stand-ins.
//!
//! reqwest (already linked for webhook deliveries, on the same rustls and
//! ring) rather than a Stripe crate: the three calls made here are small
//! form posts, and a generated Stripe client adds minutes to a cold build.

pub mod paypal;
pub mod stripe;

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use store::config::{Config, ProviderBases};

/// The rails' HTTP client and addresses, shared by a process.
#[derive(Debug)]
pub struct Rails {
    client: OnceLock<reqwest::Client>,
    bases: ProviderBases,
    connect: Duration,
    timeout: Duration,
    /// PayPal tokens by address and client id, until they expire.
    tokens: Mutex<HashMap<String, (String, Instant)>>,
}

impl Rails {
    /// The rails of a configuration (nothing is built yet).
    pub fn new(config: &Config) -> Self {
        Rails {
            client: OnceLock::new(),
            bases: config.providers.clone(),
            connect: config.sdk_timeouts.connect,
            timeout: config.sdk_timeouts.operation,
            tokens: Mutex::default(),
        }
    }

    /// The providers' addresses.
    pub fn bases(&self) -> &ProviderBases {
        &self.bases
    }

    fn cached_token(&self, key: &str) -> Option<String> {
        let tokens = self.tokens.lock().ok()?;
        let (token, until) = tokens.get(key)?;
        (Instant::now() < *until).then(|| token.clone())
    }

    fn cache_token(&self, key: String, token: String, until: Instant) {
        if let Ok(mut tokens) = self.tokens.lock() {
            tokens.insert(key, (token, until));
        }
    }

    /// The one HTTP client of the rails; when it cannot be built, no call
    /// is sent: a provider's "no answer" in fixed words, the cause logged.
    fn client(&self) -> std::result::Result<&reqwest::Client, String> {
        if let Some(c) = self.client.get() {
            return Ok(c);
        }
        let built = reqwest::Client::builder()
            // A provider never redirects an API call; a redirect is refused.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(self.connect)
            .timeout(self.timeout)
            .user_agent(concat!("referrals-api/", env!("CARGO_PKG_VERSION")))
            .use_preconfigured_tls(store::tls::webhook_client_config())
            .build()
            .map_err(|e| {
                tracing::error!(cause = %e, "the provider client could not be built");
                "the provider client could not be built; nothing was sent".to_string()
            })?;
        Ok(self.client.get_or_init(|| built))
    }
}

/// What a transport failure was, without the URL.
fn cause(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else if e.is_body() || e.is_decode() {
        "answer cut short"
    } else {
        "request failed"
    }
}
