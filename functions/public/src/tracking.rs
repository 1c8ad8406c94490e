//! Public tracking for the browser script: clicks and session identification.

use std::sync::Arc;

use api::domain::timestamp;
use api::domain::tracking::ClickDraft;
use api::http::Answer;
use api::http::{Json, Public, PublicCount, Reply};
use api::services::app::App;
use api::services::tracking;
use api::wire::tracking::ClickRequest;
use api::wire::tracking::IdentifyRequest;
use axum::extract::State;
use serde::Serialize;

#[derive(utoipa::ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = TrackClick)]
struct ClickView {
    /// Send as `clickId` in a postback when the merchant's server knows it.
    #[schema(value_type = api::domain::ids::ClickId)]
    click_id: String,
    /// The session of this click (same ULID as `clickId`). The browser script keeps it only
    /// after consent; send it to `identify` and as `sessionId` in a postback.
    #[schema(value_type = api::domain::ids::SessionId)]
    session_id: String,
    /// When the click and its session stop counting (`cookieDays` of the campaign after the
    /// click).
    #[schema(format = DateTime, example = json!("2026-12-22T10:00:00.000Z"))]
    expires_at: String,
}

#[derive(utoipa::ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = TrackIdentify)]
struct IdentifyView {
    #[schema(value_type = api::domain::ids::SessionId)]
    session_id: String,
    /// true when at least one identity was newly bound; false when every identity was already
    /// bound (first touch kept).
    bound: bool,
}

/// Record a click on an affiliate link
///
/// Records that a visitor arrived through an affiliate link (`?ref=CODE`) of a public campaign
/// and returns a click id and a session id. The click counts for the campaign's `cookieDays`
/// (`expiresAt`); after that the click and its session are unknown (404) and the record is
/// removed by TTL. A new click always starts a new session; a `sessionId` the browser already
/// held is kept on the click for reference only.
///
/// The campaign must exist and be public, and `ref` must be the code (any letter case) of an
/// affiliate of that campaign; otherwise 404 NOT_FOUND, the same answer for each case. The
/// affiliate's status is not checked here: only ACTIVE affiliates earn, which is decided when a
/// conversion is recorded.
///
/// The client address is never stored: the click keeps an HMAC-SHA256 of it under a salt
/// derived from the server secret and the UTC date, so it rotates daily. Browser-facing: the
/// route answers CORS preflight (`OPTIONS`, 204 with `Access-Control-Allow-Methods`) and allows
/// any origin (`Access-Control-Allow-Origin: *`, no credentials). No API key; rate-limited per
/// client IP.
#[utoipa::path(
    post,
    path = "/api/v1/track/click",
    operation_id = "trackClick",
    tags = ["Tracking", "Public"], security(),
    request_body = api::wire::tracking::ClickRequest,
    responses(
        (status = 201, description = "The click recorded.", body = ClickView)
    )
)]
pub(crate) async fn click(
    caller: PublicCount,
    State(app): State<Arc<App>>,
    body: Answer<Json<ClickRequest>>,
) -> Answer {
    let (network, admission) = caller.split();
    // A refused body counts against the limit too.
    let body = match body
        .map_err(|f| f.0)
        .map(|Json(b)| ClickDraft::from(b))
        .and_then(|d| d.validate().map(|()| d))
    {
        Ok(body) => body,
        Err(e) => {
            admission.admit().await?;
            return Err(e.into());
        }
    };
    let now = timestamp::now();
    let clicked = tracking::click(&app, body, network.as_deref(), admission.admit(), now).await?;
    Reply::created(ClickView {
        click_id: clicked.ids.click_id,
        session_id: clicked.ids.session_id,
        expires_at: timestamp::format(&clicked.expires_at),
    })
}

/// Bind a session's affiliate to a customer
///
/// Binds the affiliate of a live session (from `POST /api/v1/track/click`) to the customer as a
/// referral, so later postbacks carrying the customer's id or e-mail are attributed to that
/// affiliate. At least one of `customerId`, `customerEmail`, `customerEmailHash` is required
/// (400 VALIDATION_FAILED otherwise); each identity given becomes its own referral.
///
/// First touch wins: an identity already bound keeps its affiliate and is not overwritten. When
/// several identities are sent and some are already bound, the others join the earliest
/// existing binding, so one customer never has two affiliates. `bound` is false when nothing
/// new was bound.
///
/// A plain `customerEmail` is validated and hashed (lowercase hex SHA-256 of the trimmed,
/// lowercased address); the address itself is never stored. The answer never reveals which
/// affiliate a customer is bound to. An unknown, malformed or expired session gives 404
/// NOT_FOUND. Browser-facing: the route answers CORS preflight (`OPTIONS`, 204 with
/// `Access-Control-Allow-Methods`) and allows any origin (`Access-Control-Allow-Origin: *`, no
/// credentials). No API key; rate-limited per client IP.
#[utoipa::path(
    post,
    path = "/api/v1/track/identify",
    operation_id = "trackIdentify",
    tags = ["Tracking", "Public"], security(),
    request_body = api::wire::tracking::IdentifyRequest,
    responses(
        (status = 200, description = "The session identified.", body = IdentifyView)
    )
)]
pub(crate) async fn identify(
    _: Public,
    State(app): State<Arc<App>>,
    Json(body): Json<IdentifyRequest>,
) -> Answer {
    let customer_keys = body.customer_keys()?;
    let bound =
        tracking::identify(&app, &body.session_id, &customer_keys, timestamp::now()).await?;
    Reply::ok(IdentifyView {
        session_id: body.session_id,
        bound,
    })
}
