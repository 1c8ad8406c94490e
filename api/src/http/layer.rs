//! The outer layer every answer passes, whoever produced it (a handler, an
//! extractor, the router's own 404 and 405): the request id, the envelope,
//! the contract's headers and the one log line of the request.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use http::header::{ALLOW, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE};
use http::response::Parts;
use http::{HeaderName, HeaderValue, StatusCode};
use tracing::Instrument;

use crate::http::envelope;
use crate::http::reply::{Pending, RawBody};
use crate::http::request::request_id;
use ::domain::error::Error;
use ::services::rate_limit::RateState;

/// What the handling of one request learnt that its answer and its log line
/// need; extractors write it, the outer layer reads it.
#[derive(Debug, Default, Clone)]
pub struct Facts {
    /// The rate-limit window the request was counted in.
    pub rate: Option<RateState>,
    /// The route pattern that matched.
    pub route: Option<String>,
    /// A route that takes an API key or a portal token (its answers are never cached).
    pub merchant: bool,
    /// The tenant, once authenticated.
    pub account: Option<String>,
}

/// The request's [`Facts`], shared between the extractors and the outer layer.
#[derive(Debug, Clone, Default)]
pub struct FactsSlot(Arc<Mutex<Facts>>);

impl FactsSlot {
    /// Records something about the request.
    pub fn update(&self, f: impl FnOnce(&mut Facts)) {
        if let Ok(mut facts) = self.0.lock() {
            f(&mut facts);
        }
    }

    fn read(&self) -> Facts {
        self.0.lock().map(|f| f.clone()).unwrap_or_default()
    }
}

/// The outer middleware: wraps the whole router.
pub async fn envelope(mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let request_id = request_id(req.headers());
    let method = req.method().clone();
    let sent_key = req.headers().contains_key(AUTHORIZATION);
    let slot = FactsSlot::default();
    req.extensions_mut().insert(slot.clone());
    let span = tracing::info_span!("request", request_id = %request_id);
    async move {
        let resp = next.run(req).await;
        let facts = slot.read();
        let resp = finish(resp, &request_id, sent_key, &facts);
        tracing::info!(
            method = %method,
            route = facts.route.as_deref().unwrap_or("unmatched"),
            status = resp.status().as_u16(),
            account = facts.account.as_deref().unwrap_or("-"),
            duration_ms = started.elapsed().as_millis() as u64,
            "request"
        );
        resp
    }
    .instrument(span)
    .await
}

/// Records the matched route pattern (a route layer: it runs only on a match).
pub async fn record_route(req: Request, next: Next) -> Response {
    if let (Some(path), Some(slot)) = (
        req.extensions().get::<MatchedPath>(),
        req.extensions().get::<FactsSlot>(),
    ) {
        let route = path.as_str().to_string();
        slot.update(|f| f.route = Some(route));
    }
    next.run(req).await
}

/// Puts the answer in the envelope and adds the contract's headers.
fn finish(resp: Response, request_id: &str, sent_key: bool, facts: &Facts) -> Response {
    let (mut parts, body) = resp.into_parts();
    let body = enveloped(&mut parts, body, request_id);
    if let Some(rate) = facts.rate {
        rate_headers(&mut parts, rate);
    }
    // Anything a key could unlock stays out of shared and browser caches.
    if facts.merchant || sent_key {
        set(&mut parts, CACHE_CONTROL, "no-store");
    }
    set(
        &mut parts,
        HeaderName::from_static("x-content-type-options"),
        "nosniff",
    );
    set(
        &mut parts,
        HeaderName::from_static("x-request-id"),
        request_id,
    );
    Response::from_parts(parts, body)
}

/// The answer's body in the envelope: a handler's pending data or failure,
/// or the error behind a failure the framework answered itself; a raw body
/// or another success as it is.
fn enveloped(parts: &mut Parts, body: Body, request_id: &str) -> Body {
    let raw = parts.extensions.get::<RawBody>().is_some();
    let failed = parts.status.is_client_error() || parts.status.is_server_error();
    let pending = parts
        .extensions
        .remove::<Pending>()
        .or_else(|| (failed && !raw).then(|| Pending::Failure(Arc::new(foreign(parts)))));
    match pending {
        Some(Pending::Data(data)) => {
            let (value, list) = Arc::unwrap_or_clone(data);
            json_body(parts, envelope::success(value, list.as_ref(), request_id))
        }
        Some(Pending::Failure(err)) => {
            let (status, value, headers) = envelope::failure(&err, request_id);
            parts.status =
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            parts.headers.remove(ALLOW);
            for (name, v) in headers {
                set(parts, HeaderName::from_static(name), &v);
            }
            json_body(parts, value)
        }
        None => body,
    }
}

/// The `RateLimit-*` headers of the window the request was counted in.
fn rate_headers(parts: &mut Parts, r: RateState) {
    set(
        parts,
        HeaderName::from_static("ratelimit-limit"),
        &r.limit.to_string(),
    );
    set(
        parts,
        HeaderName::from_static("ratelimit-remaining"),
        &r.remaining.to_string(),
    );
    set(
        parts,
        HeaderName::from_static("ratelimit-reset"),
        &r.reset_seconds.to_string(),
    );
}

fn json_body(parts: &mut Parts, value: serde_json::Value) -> Body {
    set(parts, CONTENT_TYPE, "application/json");
    parts.headers.remove(http::header::CONTENT_LENGTH);
    Body::from(value.to_string())
}

fn set(parts: &mut Parts, name: HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        parts.headers.insert(name, v);
    }
}

/// The error behind an answer the router made itself (no route for the
/// method, or anything else that did not come from our own code): no bare
/// status from the framework ever reaches a client.
fn foreign(parts: &Parts) -> Error {
    match parts.status {
        StatusCode::METHOD_NOT_ALLOWED => Error::MethodNotAllowed {
            allow: allow_list(parts.headers.get(ALLOW)),
        },
        StatusCode::NOT_FOUND => Error::RouteNotFound("this request".into()),
        StatusCode::PAYLOAD_TOO_LARGE => Error::InvalidRequest("request body is too large".into()),
        s if s.is_client_error() => Error::InvalidRequest("the request could not be read".into()),
        s => Error::internal(format!("unhandled {s} answer")),
    }
}

/// The router's `Allow` list, sorted, without the HEAD it adds for GET.
fn allow_list(header: Option<&HeaderValue>) -> Vec<String> {
    let mut allow: Vec<String> = header
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .split(',')
        .map(|m| m.trim().to_uppercase())
        .filter(|m| !m.is_empty() && m != "HEAD")
        .collect();
    allow.sort();
    allow.dedup();
    allow
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_lists_are_sorted_without_head() {
        let v = HeaderValue::from_static("POST,GET,HEAD");
        assert_eq!(allow_list(Some(&v)), vec!["GET", "POST"]);
        assert!(allow_list(None).is_empty());
    }
}
