//! The affiliate portal's page: one static HTML page, its script and its
//! style, built into the function. The page reads its portal token from
//! the URL's fragment (never sent to a server) and calls the portal routes
//! of the same origin; it makes no third-party request, which its Content
//! Security Policy enforces.

use std::sync::Arc;

use api::domain::error::Error;
use api::domain::ids::{self, IdKind};
use api::http::router::{document, varying_document};
use api::http::Answer;
use api::http::{FromQuery, Params, PublicCount, Query};
use api::services::app::App;
use api::store::accounts;
use axum::extract::State;
use axum::http::header::IF_NONE_MATCH;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;

const PAGE: &str = include_str!("../../../portal/src/index.html");
const SCRIPT: &str = include_str!("../../../portal/src/portal.js");
const STYLE: &str = include_str!("../../../portal/src/portal.css");

/// The page's policy: its own script, style and API only; framed by the
/// origins the account allows besides its own (appended).
macro_rules! policy {
    () => {
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors"
    };
}
const CSP: &str = policy!();
/// [`CSP`] framed by the page's own origin alone.
const SELF_ONLY: &str = concat!(policy!(), " 'self'");

fn with_policy(mut r: Response, frame_ancestors: &str) -> Response {
    let h = r.headers_mut();
    // Stored origins are checked ASCII; should one ever not make a header,
    // the page falls back to its own origin rather than to no policy.
    let policy = HeaderValue::from_str(&format!("{CSP} {frame_ancestors}"))
        .unwrap_or_else(|_| HeaderValue::from_static(SELF_ONLY));
    h.insert("content-security-policy", policy);
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    r
}

/// The page's query: the account whose framing origins apply, and where
/// Stripe's onboarding sent the affiliate back (the page reads it itself).
pub struct PageQuery {
    account: Option<String>,
}

impl FromQuery for PageQuery {
    fn read(q: &mut Query<'_>) -> Self {
        // `payouts` is the page's own to read: any value serves the page.
        q.accept("payouts");
        PageQuery {
            account: q.str("account").map(str::to_string),
        }
    }
}

/// Affiliate portal page
///
/// The hosted page a portal session's `url` opens (`/portal?account=…#token=…`). No API key:
/// the page is built in; its data comes from the portal routes with the token of the fragment.
/// Naming an account, it is counted per client address (429 past the limit).
/// `account` picks the origins that may frame it (`Content-Security-Policy: frame-ancestors`,
/// the account's setting besides the page's own origin); without it, or for an unknown
/// account, only its own origin may. Naming an account, the page is `Cache-Control: private,
/// no-cache` with an `ETag` (304 to a matching `If-None-Match`); without one, a public
/// document cached 300 seconds.
#[utoipa::path(
    get,
    path = "/portal",
    operation_id = "getPortalPage",
    tag = "Portal", security(),
    params(
        ("account" = inline(Option<api::http::openapi::Line>), Query, description = "The account whose framing origins apply."),
        ("If-None-Match" = Option<String>, Header, description = "The `ETag` of a copy the browser keeps (a page naming an account)."),
        ("payouts" = inline(Option<api::http::openapi::Line>), Query, description = "`done` or `refresh`: Stripe's onboarding sent the affiliate back (the page reads it and says so; the server serves the page whatever it is).")
    ),
    responses(
        (status = 200, description = "The page.", content_type = "text/html"),
        (status = 304, description = "Not modified (`If-None-Match` names its `ETag`)."),
        (status = 429, response = api::http::openapi::TooManyRequests),
        (status = 503, response = api::http::openapi::ServiceUnavailable)
    )
)]
pub async fn page(
    caller: PublicCount,
    State(app): State<Arc<App>>,
    Params(q): Params<PageQuery>,
    headers: HeaderMap,
) -> Answer<Response> {
    let known = q.account.filter(|a| ids::is_valid(IdKind::Account, a));
    // A page that reads an account is counted per client address, at once
    // with its read; one that names none reads nothing and is a document.
    let ancestors = match &known {
        Some(id) => {
            let (_, admission) = caller.split();
            let read = async {
                accounts::get_account(&app.store, id)
                    .await
                    .map(|a| a.frame_ancestors())
                    .unwrap_or_else(|_| "'self'".to_string())
            };
            let (admitted, ancestors) = tokio::join!(admission.admit(), read);
            // Only a used-up limit refuses it: while the store is down the
            // page still opens, framed by its own origin alone (as its read).
            if let Err(e @ Error::RateLimited { .. }) = admitted {
                return Err(e.into());
            }
            ancestors
        }
        None => "'self'".to_string(),
    };
    let html = "text/html; charset=utf-8";
    // Framed as one account allows: no shared cache may serve it to
    // another's page, and a browser asks again (the account may change it).
    let served = match known {
        Some(_) => {
            let given = headers.get(IF_NONE_MATCH).and_then(|v| v.to_str().ok());
            varying_document(html, PAGE, &ancestors, given)
        }
        None => document(html, PAGE),
    };
    Ok(with_policy(served, &ancestors))
}

/// Affiliate portal script
#[utoipa::path(
    get,
    path = "/portal/portal.js",
    operation_id = "getPortalScript",
    tag = "Portal", security(),
    responses((status = 200, description = "The page's script.", content_type = "text/javascript"))
)]
pub async fn script() -> Response {
    with_policy(document("text/javascript; charset=utf-8", SCRIPT), "'self'")
}

/// Affiliate portal style
#[utoipa::path(
    get,
    path = "/portal/portal.css",
    operation_id = "getPortalStyle",
    tag = "Portal", security(),
    responses((status = 200, description = "The page's style.", content_type = "text/css"))
)]
pub async fn style() -> Response {
    with_policy(document("text/css; charset=utf-8", STYLE), "'self'")
}
