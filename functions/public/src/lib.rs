//! Unauthenticated routes: the public campaign profile, affiliate sign-up,
//! click tracking for the browser script and the API description.

use http::Method;
use shared::domain::campaign::PublicCampaignView;
use shared::http::{Reply, Router};
use shared::store::campaigns;
use shared::{public_handler, Error};

mod signup;
mod tracking;

/// The OpenAPI description, kept in `docs/openapi.json`.
pub const OPENAPI_JSON: &str = include_str!("../../../docs/openapi.json");

/// The routes this function serves.
pub fn router() -> Router {
    let mut routes: Vec<(Method, &'static str, shared::http::Handler)> = vec![
        (
            Method::GET,
            "/api/v1/campaigns/{id}/public",
            public_campaign,
        ),
        (Method::GET, "/api/v1/openapi.json", openapi),
    ];
    routes.extend(tracking::routes());
    routes.extend(signup::routes());
    Router::new(routes)
}

public_handler!(public_campaign, |call| {
    match campaigns::get_with_tenant(&call.app.store, call.param("id")?).await? {
        Some((c, _)) if c.is_public => Reply::ok(PublicCampaignView::from(&c)),
        _ => Err(Error::NotFound("campaign")),
    }
});

public_handler!(openapi, |_call| {
    Ok(Reply::raw(
        200,
        "application/json",
        OPENAPI_JSON.as_bytes().to_vec(),
    ))
});
