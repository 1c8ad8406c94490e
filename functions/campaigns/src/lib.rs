//! Campaign routes: create, list, get and partial update.

use http::Method;
use shared::domain::campaign::{Campaign, CampaignPatch, CampaignView, NewCampaign};
use shared::http::{Reply, Router};
use shared::store::campaigns;
use shared::{handler, timestamp};

/// The routes this function serves.
pub fn router() -> Router {
    Router::new(vec![
        (Method::GET, "/api/v1/campaigns", list),
        (Method::POST, "/api/v1/campaigns", create),
        (Method::GET, "/api/v1/campaigns/{id}", get),
        (Method::PUT, "/api/v1/campaigns/{id}", update),
    ])
}

handler!(list, |call| {
    let mut q = call.query(&["limit", "offset", "cursor"]);
    let page = q.page();
    q.finish()?;
    let found = campaigns::list(&call.app.store, call.tenant(), &page).await?;
    Reply::list_with(&found, CampaignView::from, &page)
});

handler!(create, |call| {
    let input: NewCampaign = call.json()?;
    let campaign = Campaign::create(input, timestamp::now())?;
    campaigns::insert(&call.app.store, call.tenant(), &campaign).await?;
    Reply::created(CampaignView::from(&campaign))
});

handler!(get, |call| {
    let campaign = campaigns::get(&call.app.store, call.tenant(), call.param("id")?).await?;
    Reply::ok(CampaignView::from(&campaign))
});

handler!(update, |call| {
    let patch: CampaignPatch = call.json()?;
    let updated =
        campaigns::update(&call.app.store, call.tenant(), call.param("id")?, &patch).await?;
    Reply::ok(CampaignView::from(&updated))
});
