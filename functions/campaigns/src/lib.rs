//! Campaign routes: create, list, get and partial update.

use api::domain::timestamp;
use api::http::Answer;
use api::http::{ApiRouter, Json, Merchant, Params, PathId, Reply};
use api::routes;
use api::services::app::App;
use api::services::{self, commission_preview};
use api::store::campaigns;
use api::store::page::PageRequest;
use api::wire::campaign::CampaignPatch;
use api::wire::campaign::CampaignView;
use api::wire::campaign::NewCampaign;
use api::wire::commission_plan::PreviewBody;
use api::wire::commission_plan::PreviewView;
use axum::extract::State;
use std::sync::Arc;

/// The routes this function serves.
pub fn routes() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get, update))
        .routes(routes!(preview))
}

/// List campaigns
///
/// The campaigns of the key's account and mode, newest first (by `createdAt`). Unknown or
/// repeated query parameters give 400 VALIDATION_FAILED.
#[utoipa::path(
    get,
    path = "/api/v1/campaigns",
    operation_id = "listCampaigns",
    tag = "Campaigns",
    params(
        PageRequest
    ),
    responses(
        (status = 200, description = "A page of campaigns.", body = [api::wire::campaign::CampaignView])
    )
)]
async fn list(
    m: Merchant,
    State(app): State<Arc<App>>,
    Params(page): Params<PageRequest>,
) -> Answer {
    let found = campaigns::list(&app.store, m.tenant(), &page).await?;
    Reply::list_with(&found, CampaignView::from, &page)
}

/// Create a campaign
///
/// Creates a campaign in the key's account and mode.
#[utoipa::path(
    post,
    path = "/api/v1/campaigns",
    operation_id = "createCampaign",
    tag = "Campaigns",
    request_body = api::wire::campaign::NewCampaign,
    responses(
        (status = 201, description = "The campaign created.", body = api::wire::campaign::CampaignView)
    )
)]
async fn create(
    m: Merchant,
    State(app): State<Arc<App>>,
    Json(input): Json<NewCampaign>,
) -> Answer {
    let campaign = services::campaigns::create(&app, m.tenant(), input.into()).await?;
    Reply::created(CampaignView::from(&campaign))
}

/// Retrieve a campaign
///
/// One campaign of the key's account and mode. A campaign of another account or of the other
/// mode is 404.
#[utoipa::path(
    get,
    path = "/api/v1/campaigns/{id}",
    operation_id = "getCampaign",
    tag = "Campaigns",
    responses(
        (status = 200, description = "The campaign.", body = api::wire::campaign::CampaignView)
    )
)]
async fn get(m: Merchant, State(app): State<Arc<App>>, PathId(id): PathId) -> Answer {
    let campaign = campaigns::get(&app.store, m.tenant(), &id).await?;
    Reply::ok(CampaignView::from(&campaign))
}

/// Update a campaign
///
/// Partial update: only the fields sent change; the merged campaign is then validated as a
/// whole. Concurrent updates do not overwrite each other (conditional write with retry); under
/// persistent contention the call answers 503 and nothing changes. A body that changes nothing
/// answers the campaign as it is: `updatedAt` stays and no event is sent.
#[utoipa::path(
    put,
    path = "/api/v1/campaigns/{id}",
    operation_id = "updateCampaign",
    tag = "Campaigns",
    request_body = Option<api::wire::campaign::CampaignPatch>,
    responses(
        (status = 200, description = "The updated campaign.", body = api::wire::campaign::CampaignView)
    )
)]
async fn update(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(patch): Json<CampaignPatch>,
) -> Answer {
    let updated = services::campaigns::update(&app, m.tenant(), &id, &patch.into()).await?;
    Reply::ok(CampaignView::from(&updated))
}

/// Preview a commission
///
/// What a payment with these facts would earn now on this campaign, and why: the same
/// function the postback uses (the affiliate's `commissionOverride`, the campaign's
/// `commissionRules` in order, its own rate; the recurring rules decide whether a later
/// payment earns). With `affiliateId`, that affiliate's status and override count (an
/// affiliate of another campaign is 404). Nothing is written.
#[utoipa::path(
    post,
    path = "/api/v1/campaigns/{id}/commission-preview",
    operation_id = "previewCommission",
    tag = "Campaigns",
    request_body = api::wire::commission_plan::PreviewBody,
    responses(
        (status = 200, description = "What the payment would earn.", body = PreviewView)
    )
)]
async fn preview(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(body): Json<PreviewBody>,
) -> Answer {
    let request = body.validate()?;
    let now = timestamp::now();
    let decision = commission_preview::preview(&app, m.tenant(), &id, &request, now).await?;
    Reply::ok(PreviewView::from(decision))
}
