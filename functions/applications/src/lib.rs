//! Application routes: list, get, accept, reject and bulk accept. No e-mail is
//! sent by any of them; notifying the applicant is the merchant's choice.

use std::sync::Arc;

use api::domain::application::Decision;
use api::http::Answer;
use api::http::{ApiRouter, Json, Listing, Merchant, Params, PathId, Reply};
use api::routes;
use api::services::app::App;
use api::services::applications as decisions;
use api::store::applications::{self, ApplicationFilter};
use api::store::page::PageRequest;
use api::wire::application::AcceptApplication;
use api::wire::application::ApplicationView;
use api::wire::application::BulkAccept;
use api::wire::application::BulkAcceptView;
use api::wire::application::BulkFailure;
use api::wire::application::RejectApplication;
use axum::extract::State;

/// The routes this function serves.
pub fn routes() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(get))
        .routes(routes!(accept))
        .routes(routes!(reject))
        .routes(routes!(bulk_accept))
}

/// List applications
///
/// The applications of the key's account and mode, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/applications",
    operation_id = "listApplications",
    tag = "Applications",
    params(
        PageRequest,
        ("campaign_id" = inline(Option<api::http::openapi::Line>), Query, description = "Only records of this campaign."),
        ("status" = Option<api::domain::application::ApplicationStatus>, Query, description = "Only applications in this status (any letter case)."),
        ("risk_level" = Option<api::domain::risk::RiskLevel>, Query, description = "Only applications of this risk level (any letter case; NONE: unflagged).")
    ),
    responses(
        (status = 200, description = "A page of applications.", body = [api::wire::application::ApplicationView])
    )
)]
async fn list(
    m: Merchant,
    State(app): State<Arc<App>>,
    Params(Listing { page, filter }): Params<Listing<ApplicationFilter>>,
) -> Answer {
    let found = applications::list(&app.store, m.tenant(), &filter, &page).await?;
    Reply::list_with(&found, ApplicationView::from, &page)
}

/// Retrieve an application
///
/// One application of the key's account and mode.
#[utoipa::path(
    get,
    path = "/api/v1/applications/{id}",
    operation_id = "getApplication",
    tag = "Applications",
    responses(
        (status = 200, description = "The application.", body = api::wire::application::ApplicationView)
    )
)]
async fn get(m: Merchant, State(app): State<Arc<App>>, PathId(id): PathId) -> Answer {
    let application = applications::get(&app.store, m.tenant(), &id).await?;
    Reply::ok(ApplicationView::from(&application))
}

/// Accept an application
///
/// PENDING -> ACCEPTED; the affiliate becomes ACTIVE in the same transaction, conditioned on
/// the application being PENDING. Not PENDING: 409 INVALID_STATE with `currentState`. Of an
/// accept and a reject racing, exactly one applies. No e-mail is sent.
#[utoipa::path(
    post,
    path = "/api/v1/applications/{id}/accept",
    operation_id = "acceptApplication",
    tag = "Applications",
    request_body = Option<api::wire::application::AcceptApplication>,
    responses(
        (status = 200, description = "The accepted application.", body = api::wire::application::ApplicationView),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn accept(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(AcceptApplication {}): Json<AcceptApplication>,
) -> Answer {
    let application = decisions::decide(&app, m.tenant(), &id, &Decision::Accept).await?;
    Reply::ok(ApplicationView::from(&application))
}

/// Reject an application
///
/// PENDING -> REJECTED with an optional reason; the affiliate becomes REJECTED in the same
/// transaction. Not PENDING: 409 INVALID_STATE. No e-mail is sent.
#[utoipa::path(
    post,
    path = "/api/v1/applications/{id}/reject",
    operation_id = "rejectApplication",
    tag = "Applications",
    request_body = Option<api::wire::application::RejectApplication>,
    responses(
        (status = 200, description = "The rejected application.", body = api::wire::application::ApplicationView),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn reject(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(body): Json<RejectApplication>,
) -> Answer {
    let decision = body.into_decision()?;
    let application = decisions::decide(&app, m.tenant(), &id, &decision).await?;
    Reply::ok(ApplicationView::from(&application))
}

/// Accept up to 100 applications
///
/// Each id is accepted on its own, as by the accept call; the answer is 200 even when some
/// fail, with each id in `accepted` or in `failed`.
#[utoipa::path(
    post,
    path = "/api/v1/applications/bulk-accept",
    operation_id = "bulkAcceptApplications",
    tag = "Applications",
    request_body = api::wire::application::BulkAccept,
    responses(
        (status = 200, description = "Per-id results.", body = api::wire::application::BulkAcceptView)
    )
)]
async fn bulk_accept(
    m: Merchant,
    State(app): State<Arc<App>>,
    Json(body): Json<BulkAccept>,
) -> Answer {
    let ids = body.ids()?;
    let results = decisions::bulk_accept(&app, m.tenant(), ids).await?;
    let mut view = BulkAcceptView {
        accepted: Vec::new(),
        failed: Vec::new(),
    };
    for (id, result) in &results {
        match result {
            Ok(application) => view.accepted.push(ApplicationView::from(application)),
            Err(e) => view.failed.push(BulkFailure::new(id.clone(), e)),
        }
    }
    Reply::ok(view)
}
