//! The `Idempotency-Key` layer of the merchant's POSTs: a route layer on
//! every function, acting only on a POST that carries the header and an API
//! key (the portal's, the public and the provider routes ignore it). It
//! authenticates first (the handler's `Merchant` reuses it), fingerprints
//! the request, and runs it under `services::idempotency`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header::AUTHORIZATION;
use http::{HeaderValue, Method, StatusCode};

use crate::domain::idempotency::{self, IdempotencyKey};
use crate::http::access::Merchant;
use crate::http::reply::{Pending, Reply};
use crate::services::idempotency::{self as service, Begun};
use ::domain::error::{Error, Result};
use ::domain::timestamp;
use ::services::app::App;
use ::services::auth;

/// The request header.
pub const HEADER: &str = "idempotency-key";
/// The header of a replayed answer (`true`).
pub const REPLAYED: &str = "idempotent-replayed";
/// The largest body fingerprinted (an invoice upload's is the largest POST).
const MAX_FINGERPRINTED_BYTES: usize = 10 * 1024 * 1024;

/// The layer (`axum::middleware::from_fn_with_state`).
pub async fn idempotent(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let applies = req.method() == Method::POST
        && req.headers().contains_key(HEADER)
        && auth::claimed_ids(
            req.headers()
                .get(AUTHORIZATION)
                .and_then(|v| v.to_str().ok()),
        )
        .is_ok();
    if !applies {
        return next.run(req).await;
    }
    match under_key(&app, req, next).await {
        Ok(resp) => resp,
        Err(e) => crate::http::reply::Failure(e).into_response(),
    }
}

async fn under_key(app: &Arc<App>, req: Request, next: Next) -> Result<Response> {
    let (mut parts, body) = req.into_parts();
    let merchant = Merchant::from_request_parts(&mut parts, app)
        .await
        .map_err(|f| f.0)?;
    parts.extensions.insert(merchant.clone());
    let raw = parts.headers.get(HEADER).map(HeaderValue::as_bytes);
    let key = IdempotencyKey::parse(raw.unwrap_or_default())?;
    let bytes = crate::http::body::read(body, MAX_FINGERPRINTED_BYTES).await?;
    let fingerprint = idempotency::fingerprint(parts.method.as_str(), parts.uri.path(), &bytes);
    let tenant = merchant.tenant();
    let claim = match service::begin(app, tenant, key, &fingerprint, timestamp::now()).await? {
        Begun::Replay(answer) => return replayed(answer.status, &answer.data),
        Begun::Run(claim) => claim,
    };
    let resp = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    let data = match resp.extensions().get::<Pending>() {
        Some(Pending::Data(data)) if data.1.is_none() => serde_json::to_string(&data.0).ok(),
        _ => None,
    };
    let status = resp.status().as_u16();
    if let Err(e) = service::finish(app, tenant, &claim, status, data).await {
        // The answer stands; a copy sent later waits out the key's lease.
        tracing::warn!(error = %e, "idempotency key not settled");
    }
    Ok(resp)
}

/// The kept answer, again, marked as a replay.
fn replayed(status: u16, data: &str) -> Result<Response> {
    let data: serde_json::Value = serde_json::from_str(data).map_err(Error::internal)?;
    let status = StatusCode::from_u16(status).map_err(Error::internal)?;
    Ok(Reply::with_data(status, data)
        .header(REPLAYED, "true")
        .into_response())
}
