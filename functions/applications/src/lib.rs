//! Application routes: list, get, accept, reject and bulk accept. No e-mail is
//! sent by any of them; notifying the applicant is the merchant's choice.

use http::Method;
use shared::domain::application::{
    AcceptApplication, ApplicationStatus, ApplicationView, BulkAccept, BulkAcceptView, BulkFailure,
    Decision, RejectApplication,
};
use shared::handler;
use shared::http::{Reply, Router};
use shared::store::applications::{self, ApplicationFilter};

/// The routes this function serves.
pub fn router() -> Router {
    Router::new(vec![
        (Method::GET, "/api/v1/applications", list),
        (Method::GET, "/api/v1/applications/{id}", get),
        (Method::POST, "/api/v1/applications/{id}/accept", accept),
        (Method::POST, "/api/v1/applications/{id}/reject", reject),
        (
            Method::POST,
            "/api/v1/applications/bulk-accept",
            bulk_accept,
        ),
    ])
}

handler!(list, |call| {
    let mut q = call.query(&["limit", "offset", "cursor", "campaign_id", "status"]);
    let page = q.page();
    let filter = ApplicationFilter {
        status: q
            .one_of("status", &ApplicationStatus::NAMES)
            .and_then(ApplicationStatus::parse),
        campaign_id: q.str("campaign_id").map(str::to_string),
    };
    q.finish()?;
    let found = applications::list(&call.app.store, call.tenant(), &filter, &page).await?;
    Reply::list_with(&found, ApplicationView::from, &page)
});

handler!(get, |call| {
    let app = applications::get(&call.app.store, call.tenant(), call.param("id")?).await?;
    Reply::ok(ApplicationView::from(&app))
});

handler!(accept, |call| {
    let AcceptApplication {} = call.json()?;
    let app = applications::decide(
        &call.app.store,
        call.tenant(),
        call.param("id")?,
        &Decision::Accept,
    )
    .await?;
    Reply::ok(ApplicationView::from(&app))
});

handler!(reject, |call| {
    let decision = call.json::<RejectApplication>()?.into_decision()?;
    let app =
        applications::decide(&call.app.store, call.tenant(), call.param("id")?, &decision).await?;
    Reply::ok(ApplicationView::from(&app))
});

handler!(bulk_accept, |call| {
    let ids = call.json::<BulkAccept>()?.ids()?;
    let results = applications::bulk_accept(&call.app.store, call.tenant(), ids).await?;
    let mut view = BulkAcceptView {
        accepted: Vec::new(),
        failed: Vec::new(),
    };
    for (id, result) in &results {
        match result {
            Ok(app) => view.accepted.push(ApplicationView::from(app)),
            Err(e) => view.failed.push(BulkFailure::new(id.clone(), e)),
        }
    }
    Reply::ok(view)
});
