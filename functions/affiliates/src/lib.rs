//! Affiliate routes: list, merchant create, get and partial update.

use http::Method;
use shared::domain::affiliate::{
    Affiliate, AffiliatePatch, AffiliateStatus, AffiliateView, NewAffiliate,
};
use shared::domain::email::Email;
use shared::http::{Reply, Router};
use shared::store::affiliates::{self, AffiliateFilter};
use shared::store::{campaigns, enrollments};
use shared::validation::Issues;
use shared::{handler, timestamp};

/// The routes this function serves.
pub fn router() -> Router {
    Router::new(vec![
        (Method::GET, "/api/v1/affiliates", list),
        (Method::POST, "/api/v1/affiliates", create),
        (Method::GET, "/api/v1/affiliates/{id}", get),
        (Method::PUT, "/api/v1/affiliates/{id}", update),
    ])
}

handler!(list, |call| {
    let mut q = call.query(&[
        "limit",
        "offset",
        "cursor",
        "campaign_id",
        "status",
        "email",
    ]);
    let page = q.page();
    let status = q
        .one_of("status", &AffiliateStatus::NAMES)
        .and_then(AffiliateStatus::parse);
    let email = match q.str("email").map(|e| Email::parse("email", e)) {
        Some(Ok(e)) => Some(e.lower()),
        Some(Err(issue)) => {
            q.issue(issue);
            None
        }
        None => None,
    };
    let filter = AffiliateFilter {
        campaign_id: q.str("campaign_id").map(str::to_string),
        status,
        email,
    };
    q.finish()?;
    let found = affiliates::list(&call.app.store, call.tenant(), &filter, &page).await?;
    Reply::list_with(&found, AffiliateView::from, &page)
});

handler!(create, |call| {
    let input: NewAffiliate = call.json()?;
    let mut new = Affiliate::enroll(
        input,
        AffiliateStatus::Active,
        timestamp::now(),
        Issues::new(),
    )?;
    campaigns::get(&call.app.store, call.tenant(), &new.affiliate.campaign_id).await?;
    enrollments::enroll(&call.app.store, call.tenant(), &mut new).await?;
    Reply::created(AffiliateView::from(&new.affiliate))
});

handler!(get, |call| {
    let affiliate = affiliates::get(&call.app.store, call.tenant(), call.param("id")?).await?;
    Reply::ok(AffiliateView::from(&affiliate))
});

handler!(update, |call| {
    let patch: AffiliatePatch = call.json()?;
    let updated =
        affiliates::update(&call.app.store, call.tenant(), call.param("id")?, &patch).await?;
    Reply::ok(AffiliateView::from(&updated))
});
