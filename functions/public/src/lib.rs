//! Unauthenticated routes: the public campaign profile and the API description.

use http::Method;
use shared::domain::campaign::PublicCampaignView;
use shared::http::{Reply, Router};
use shared::store::campaigns;
use shared::{handler, Error};

/// The OpenAPI description, kept in `docs/openapi.json`.
pub const OPENAPI_JSON: &str = include_str!("../../../docs/openapi.json");

/// The routes this function serves.
pub fn router() -> Router {
    Router::new(vec![
        (
            Method::GET,
            "/api/v1/campaigns/{id}/public",
            public_campaign,
        ),
        (Method::GET, "/api/v1/openapi.json", openapi),
    ])
}

handler!(public_campaign, |call| {
    match campaigns::get_with_tenant(&call.app.store, call.param("id")).await? {
        Some((c, _)) if c.is_public => Reply::ok(PublicCampaignView::from(&c)),
        _ => Err(Error::NotFound("campaign")),
    }
});

handler!(openapi, |_call| {
    Ok(Reply::raw(
        200,
        "application/json",
        OPENAPI_JSON.as_bytes().to_vec(),
    ))
});
