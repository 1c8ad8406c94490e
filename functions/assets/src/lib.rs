//! Asset routes: swipe-copy create, list, get, partial update and soft delete.

use http::Method;
use shared::domain::asset::{Asset, AssetPatch, AssetStatus, AssetType, AssetView, NewSwipeCopy};
use shared::http::{Reply, Router};
use shared::store::assets::{self, AssetFilter};
use shared::store::campaigns;
use shared::{handler, timestamp};

/// The routes this function serves.
pub fn router() -> Router {
    Router::new(vec![
        (Method::POST, "/api/v1/assets/swipe-copy", create_swipe_copy),
        (Method::GET, "/api/v1/assets", list),
        (Method::GET, "/api/v1/assets/{id}", get),
        (Method::PATCH, "/api/v1/assets/{id}", update),
        (Method::DELETE, "/api/v1/assets/{id}", archive),
    ])
}

handler!(create_swipe_copy, |call| {
    let input: NewSwipeCopy = call.json()?;
    let asset = Asset::swipe_copy(input, timestamp::now())?;
    if let Some(c) = &asset.campaign_id {
        campaigns::get(&call.app.store, call.tenant(), c).await?;
    }
    assets::insert(&call.app.store, call.tenant(), &asset).await?;
    Reply::created(AssetView::from(&asset))
});

handler!(list, |call| {
    let mut q = call.query(&["limit", "offset", "cursor", "status", "campaign_id", "type"]);
    let page = q.page();
    let filter = AssetFilter {
        status: q
            .one_of("status", &AssetStatus::NAMES)
            .and_then(AssetStatus::parse),
        campaign_id: q.str("campaign_id").map(str::to_string),
        kind: q
            .one_of("type", &AssetType::NAMES)
            .and_then(AssetType::parse),
    };
    q.finish()?;
    let found = assets::list(&call.app.store, call.tenant(), &filter, &page).await?;
    Reply::list_with(&found, AssetView::from, &page)
});

handler!(get, |call| {
    let asset = assets::get(&call.app.store, call.tenant(), call.param("id")?).await?;
    Reply::ok(AssetView::from(&asset))
});

handler!(update, |call| {
    let patch: AssetPatch = call.json()?;
    let updated = assets::update(&call.app.store, call.tenant(), call.param("id")?, &patch).await?;
    Reply::ok(AssetView::from(&updated))
});

handler!(archive, |call| {
    let asset = assets::archive(&call.app.store, call.tenant(), call.param("id")?).await?;
    Reply::ok(AssetView::from(&asset))
});
