//! Campaign routes: create, list, get and partial update.

use http::Method;
use shared::domain::campaign::{Campaign, CampaignPatch, CampaignView, NewCampaign};
use shared::http::{Reply, Router};
use shared::store::campaigns;
use shared::{handler, timestamp, Error};

/// Times an update is retried when another writer changed the campaign meanwhile.
const UPDATE_ATTEMPTS: usize = 5;

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
    let campaign = campaigns::get(&call.app.store, call.tenant(), call.param("id")).await?;
    Reply::ok(CampaignView::from(&campaign))
});

handler!(update, |call| {
    let patch: CampaignPatch = call.json()?;
    for _ in 0..UPDATE_ATTEMPTS {
        let current = campaigns::get(&call.app.store, call.tenant(), call.param("id")).await?;
        let updated = current.apply(patch.clone(), timestamp::now())?;
        if campaigns::replace(&call.app.store, call.tenant(), &updated, &current).await? {
            return Reply::ok(CampaignView::from(&updated));
        }
    }
    Err(Error::Unavailable(
        "the campaign is being changed by other requests; retry".into(),
    ))
});
