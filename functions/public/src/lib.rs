//! Unauthenticated routes: the public campaign profile, affiliate sign-up,
//! click tracking for the browser script and the API description. Every one
//! is browser-facing (CORS).

use api::http::router::document;
use api::http::Answer;
use api::http::{with_cors, ApiRouter, PathId, Public, Reply};
use api::routes;
use api::services::app::App;
use api::store::campaigns;
use api::wire::campaign::PublicCampaignView;
use api::Error;
use axum::extract::State;
use axum::response::Response;
use std::sync::Arc;

mod portal;
mod signup;
mod tracking;

use portal::{__path_page, __path_script, __path_style, page, script, style};
use signup::{__path_sign_up, sign_up};
use tracking::{__path_click, __path_identify, click, identify};

/// The OpenAPI description, kept in `docs/openapi.json`.
pub const OPENAPI_JSON: &str = include_str!("../../../docs/openapi.json");

/// The routes this function serves.
pub fn routes() -> ApiRouter {
    with_cors(
        ApiRouter::new()
            .routes(routes!(public_campaign))
            .routes(routes!(openapi))
            .routes(routes!(click))
            .routes(routes!(identify))
            .routes(routes!(sign_up)),
    )
    .routes(routes!(page))
    .routes(routes!(script))
    .routes(routes!(style))
}

/// Public campaign profile
///
/// The public profile of a campaign for landing pages and sign-up forms: commission terms,
/// `cookieDays` and whether sign-up is open. No API key; rate-limited per client IP. Campaigns
/// that are not public answer 404 like unknown ones. Browser-facing: the route answers CORS
/// preflight (`OPTIONS`, 204 with `Access-Control-Allow-Methods`) and allows any origin
/// (`Access-Control-Allow-Origin: *`, no credentials).
#[utoipa::path(
    get,
    path = "/api/v1/campaigns/{id}/public",
    operation_id = "getPublicCampaign",
    tag = "Public", security(),
    responses(
        (status = 200, description = "The public profile.", body = api::wire::campaign::PublicCampaignView)
    )
)]
async fn public_campaign(_: Public, State(app): State<Arc<App>>, PathId(id): PathId) -> Answer {
    match campaigns::get_with_tenant(&app.store, &id).await? {
        Some((c, _)) if c.is_public => Reply::ok(PublicCampaignView::from(&c)),
        _ => Err(Error::NotFound("campaign").into()),
    }
}

/// This API description
///
/// This OpenAPI 3.1 document, as is (not enveloped). No API key and no rate limit: the document
/// is built into the function and never touches the database, so it is served even while
/// storage is unavailable, with `Cache-Control: public, max-age=300`. Browser-facing: the route
/// answers CORS preflight (`OPTIONS`) and allows any origin (`Access-Control-Allow-Origin: *`,
/// no credentials).
#[utoipa::path(
    get,
    path = "/api/v1/openapi.json",
    operation_id = "getOpenApi",
    tag = "Meta", security(),
    responses(
        // Served outside the access layer: every answer is stated here.
        (status = 200, response = inline(api::http::openapi::OpenApiDocument)),
        (status = 500, response = api::http::openapi::ServerError)
    )
)]
async fn openapi() -> Response {
    document("application/json", OPENAPI_JSON)
}
