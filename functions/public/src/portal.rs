//! The affiliate portal's page: one static HTML page, its script and its
//! style, built into the function. The page reads its portal token from
//! the URL's fragment (never sent to a server) and calls the portal routes
//! of the same origin; it makes no third-party request, which its Content
//! Security Policy enforces.

use axum::http::HeaderValue;
use axum::response::Response;
use shared::http::router::document;

const PAGE: &str = include_str!("../../../portal/src/index.html");
const SCRIPT: &str = include_str!("../../../portal/src/portal.js");
const STYLE: &str = include_str!("../../../portal/src/portal.css");

/// The page's policy: its own script, style and API only; framed by its own
/// origin alone (a merchant embedding it serves it from its API's domain).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'self'";

fn with_policy(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert("content-security-policy", HeaderValue::from_static(CSP));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    r
}

/// Affiliate portal page
///
/// The hosted page a portal session's `url` opens (`/portal#token=…`). No API key: the page is
/// static; its data comes from the portal routes with the token of the fragment.
#[utoipa::path(
    get,
    path = "/portal",
    operation_id = "getPortalPage",
    tag = "Portal", security(()),
    responses((status = 200, description = "The page.", content_type = "text/html"))
)]
pub async fn page() -> Response {
    with_policy(document("text/html; charset=utf-8", PAGE))
}

/// Affiliate portal script
#[utoipa::path(
    get,
    path = "/portal/portal.js",
    operation_id = "getPortalScript",
    tag = "Portal", security(()),
    responses((status = 200, description = "The page's script.", content_type = "text/javascript"))
)]
pub async fn script() -> Response {
    with_policy(document("text/javascript; charset=utf-8", SCRIPT))
}

/// Affiliate portal style
#[utoipa::path(
    get,
    path = "/portal/portal.css",
    operation_id = "getPortalStyle",
    tag = "Portal", security(()),
    responses((status = 200, description = "The page's style.", content_type = "text/css"))
)]
pub async fn style() -> Response {
    with_policy(document("text/css; charset=utf-8", STYLE))
}
