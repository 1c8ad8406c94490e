//! Asset routes: swipe-copy create, list, get, partial update and soft delete.

use std::sync::Arc;

use api::http::Answer;
use api::http::{ApiRouter, Json, Listing, Merchant, Params, PathId, Reply};
use api::routes;
use api::services;
use api::services::app::App;
use api::store::assets::{self, AssetFilter};
use api::store::page::PageRequest;
use api::wire::asset::AssetView;
use api::wire::asset::{AssetPatch, NewSwipeCopy};
use axum::extract::State;

/// The routes this function serves.
pub fn routes() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(create_swipe_copy))
        .routes(routes!(list))
        .routes(routes!(get, update, archive))
}

/// Create a swipe-copy asset
///
/// Creates a text-only SWIPE_COPY asset, FINALIZED at once.
#[utoipa::path(
    post,
    path = "/api/v1/assets/swipe-copy",
    operation_id = "createSwipeCopy",
    tag = "Assets",
    request_body = api::wire::asset::NewSwipeCopy,
    responses(
        (status = 201, description = "The asset created.", body = api::wire::asset::AssetView),
        (status = 404, response = api::http::openapi::NotFound)
    )
)]
async fn create_swipe_copy(
    m: Merchant,
    State(app): State<Arc<App>>,
    Json(input): Json<NewSwipeCopy>,
) -> Answer {
    let asset = services::assets::create_swipe_copy(&app, m.tenant(), input.into()).await?;
    Reply::created(AssetView::from(&asset))
}

/// List assets
///
/// The assets of the key's account and mode, newest first. Archived assets are left out unless
/// `status=archived`.
#[utoipa::path(
    get,
    path = "/api/v1/assets",
    operation_id = "listAssets",
    tag = "Assets",
    params(
        PageRequest,
        ("campaign_id" = inline(Option<api::http::openapi::Line>), Query, description = "Only records of this campaign."),
        ("status" = Option<api::domain::asset::AssetStatus>, Query, description = "Only assets in this status (any letter case); `archived` is the only way to list archived assets."),
        ("type" = Option<api::domain::asset::AssetType>, Query, description = "Only assets of this type (any letter case).")
    ),
    responses(
        (status = 200, description = "A page of assets.", body = [api::wire::asset::AssetView])
    )
)]
async fn list(
    m: Merchant,
    State(app): State<Arc<App>>,
    Params(Listing { page, filter }): Params<Listing<AssetFilter>>,
) -> Answer {
    let found = assets::list(&app.store, m.tenant(), &filter, &page).await?;
    Reply::list_with(&found, AssetView::from, &page)
}

/// Retrieve an asset
///
/// One asset of the key's account and mode, archived ones included.
#[utoipa::path(
    get,
    path = "/api/v1/assets/{id}",
    operation_id = "getAsset",
    tag = "Assets",
    responses(
        (status = 200, description = "The asset.", body = api::wire::asset::AssetView)
    )
)]
async fn get(m: Merchant, State(app): State<Arc<App>>, PathId(id): PathId) -> Answer {
    let asset = assets::get(&app.store, m.tenant(), &id).await?;
    Reply::ok(AssetView::from(&asset))
}

/// Update an asset
///
/// Partial update of a FINALIZED asset (see `AssetUpdate`). A DRAFT or ARCHIVED asset: 409
/// INVALID_STATE. A body that changes nothing answers the asset as it is: `updatedAt` stays and
/// no event is sent.
#[utoipa::path(
    patch,
    path = "/api/v1/assets/{id}",
    operation_id = "updateAsset",
    tag = "Assets",
    request_body = Option<api::wire::asset::AssetPatch>,
    responses(
        (status = 200, description = "The updated asset.", body = api::wire::asset::AssetView),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn update(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(patch): Json<AssetPatch>,
) -> Answer {
    let updated = services::assets::update(&app, m.tenant(), &id, &patch.into()).await?;
    Reply::ok(AssetView::from(&updated))
}

/// Archive an asset
///
/// Soft delete: FINALIZED -> ARCHIVED in one conditional write. The asset is kept, readable by
/// id, and hidden from lists; it answers 200 with the archived asset. Archiving again (or a
/// DRAFT): 409 INVALID_STATE.
#[utoipa::path(
    delete,
    path = "/api/v1/assets/{id}",
    operation_id = "archiveAsset",
    tag = "Assets",
    responses(
        (status = 200, description = "The archived asset.", body = api::wire::asset::AssetView),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn archive(m: Merchant, State(app): State<Arc<App>>, PathId(id): PathId) -> Answer {
    let asset = services::assets::archive(&app, m.tenant(), &id).await?;
    Reply::ok(AssetView::from(&asset))
}
