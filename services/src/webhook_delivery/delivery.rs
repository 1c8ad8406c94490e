//! One delivery attempt: a `POST` to an endpoint that passed the SSRF guard,
//! connecting only to the addresses the guard checked, and the verdict the
//! retry logic acts on.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::Host;

use super::ssrf::Target;
use domain::webhook::{AttemptResult, Verdict};

pub use store::webhook_settings::DEFAULT_TIMEOUT;
/// How much of a response body is kept (the contract's 1 KB).
pub const EXCERPT_LIMIT: usize = 1024;
/// Longest error text kept for an attempt.
const ERROR_LIMIT: usize = 500;
/// Names the sender to receivers and their logs.
const USER_AGENT: &str = concat!("referrals-webhooks/", env!("CARGO_PKG_VERSION"));

/// Sends deliveries. Holds one HTTP client for the life of the process.
///
/// Pinning: the client's DNS resolver is [`PinnedDns`], which never asks DNS
/// and answers a host name only with the addresses the SSRF guard checked for
/// it (stored by [`Deliverer::post`] just before the request). One client with
/// a pinning resolver keeps connection reuse and a single TLS set-up, where a
/// client per delivery (`resolve_to_addrs`) would rebuild both every time.
/// Whatever a lookup answers, or a reused connection points at, is an address
/// that passed the guard (the guard depends on the address alone).
#[derive(Debug, Clone)]
pub struct Deliverer {
    client: reqwest::Client,
    pins: Arc<PinnedDns>,
    timeout: Duration,
}

impl Deliverer {
    /// A deliverer with the contract's 15 s timeout.
    pub fn new() -> Result<Deliverer, reqwest::Error> {
        Deliverer::with_timeout(DEFAULT_TIMEOUT)
    }

    /// A deliverer whose attempts give up after `timeout` (the whole exchange).
    pub fn with_timeout(timeout: Duration) -> Result<Deliverer, reqwest::Error> {
        let pins = Arc::new(PinnedDns::default());
        let client = reqwest::Client::builder()
            // A redirect could lead past the SSRF guard; the contract follows none.
            .redirect(reqwest::redirect::Policy::none())
            // A proxy would resolve the host itself, around the pinned addresses.
            .no_proxy()
            .dns_resolver(Arc::clone(&pins))
            .timeout(timeout)
            .user_agent(USER_AGENT)
            .use_preconfigured_tls(store::tls::webhook_client_config())
            .build()?;
        Ok(Deliverer {
            client,
            pins,
            timeout,
        })
    }

    /// POSTs `body` with `headers` to the target, connecting only to its
    /// checked addresses, and never fails: every problem is in the result.
    pub async fn post(
        &self,
        target: &Target,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> AttemptResult {
        if let Some(Host::Domain(domain)) = target.url.host() {
            self.pins.pin(domain, &target.addrs);
        }
        let mut request = self.client.post(target.url.clone()).body(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let started = Instant::now();
        let outcome = match request.send().await {
            Ok(response) => {
                let status = response.status().as_u16();
                let excerpt = read_excerpt(response).await;
                (Some(status), None, excerpt, verdict(status))
            }
            Err(e) => (None, Some(self.describe(&e)), None, Verdict::Retry),
        };
        let (status, error, response_excerpt, verdict) = outcome;
        AttemptResult {
            status,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            error,
            response_excerpt,
            verdict,
        }
    }

    /// A short error text for the delivery record, without the URL (it may
    /// carry a token of the receiver's) and with the root cause.
    fn describe(&self, e: &reqwest::Error) -> String {
        if e.is_timeout() {
            return format!("timed out after {:?}", self.timeout);
        }
        let kind = if e.is_connect() {
            "connection failed"
        } else {
            "request failed"
        };
        let mut causes = Vec::new();
        let mut source = StdError::source(e);
        while let Some(cause) = source {
            causes.push(cause.to_string());
            source = cause.source();
        }
        let mut text = match causes.last() {
            Some(root) => format!("{kind}: {root}"),
            None => kind.to_string(),
        };
        truncate(&mut text, ERROR_LIMIT);
        text
    }
}

/// 2xx delivered, 410 gone, anything else retried.
fn verdict(status: u16) -> Verdict {
    match status {
        200..=299 => Verdict::Delivered,
        410 => Verdict::Gone,
        _ => Verdict::Retry,
    }
}

/// Reads at most [`EXCERPT_LIMIT`] bytes of the body (never the whole of a
/// large answer) as text; `None` for an empty or unreadable body.
async fn read_excerpt(mut response: reqwest::Response) -> Option<String> {
    let mut kept = Vec::new();
    while kept.len() < EXCERPT_LIMIT {
        match response.chunk().await {
            Ok(Some(chunk)) => kept.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    kept.truncate(EXCERPT_LIMIT);
    let mut text = String::from_utf8_lossy(&kept).into_owned();
    // Replacement characters can make the text longer than the bytes kept.
    truncate(&mut text, EXCERPT_LIMIT);
    (!text.is_empty()).then_some(text)
}

/// Cuts `text` to at most `limit` bytes, on a character boundary.
fn truncate(text: &mut String, limit: usize) {
    if text.len() > limit {
        let mut end = limit;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

/// A resolver that answers only with addresses pinned for a host, and fails
/// for any other host, so no connection goes to an unchecked address.
#[derive(Debug, Default)]
struct PinnedDns {
    pins: Mutex<HashMap<String, Vec<SocketAddr>>>,
}

impl PinnedDns {
    fn pin(&self, host: &str, addrs: &[SocketAddr]) {
        self.pins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(host.to_ascii_lowercase(), addrs.to_vec());
    }

    fn lookup(&self, host: &str) -> Option<Vec<SocketAddr>> {
        self.pins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&host.to_ascii_lowercase())
            .cloned()
    }
}

impl Resolve for PinnedDns {
    fn resolve(&self, name: Name) -> Resolving {
        let answer = self.lookup(name.as_str());
        let host = name.as_str().to_string();
        Box::pin(async move {
            match answer {
                Some(addrs) if !addrs.is_empty() => Ok(Box::new(addrs.into_iter()) as Addrs),
                _ => Err(format!("no checked address for host {host}").into()),
            }
        })
    }
}

#[cfg(test)]
#[path = "delivery_tests.rs"]
mod tests;
