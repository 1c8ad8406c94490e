//! A merchant's edit of an affiliate, through the domain's rules, written
//! with its event. Affiliates join through `enrollments`.

use crate::app::App;
use crate::edited::edit;
use domain::affiliate::{Affiliate, AffiliateChanges};
use domain::error::Result;
use domain::tenant::Tenant;
use domain::timestamp;

/// A merchant's PATCH of an affiliate.
pub async fn update(
    app: &App,
    tenant: &Tenant,
    id: &str,
    patch: &AffiliateChanges,
) -> Result<Affiliate> {
    edit(&app.store, tenant, id, |a: &Affiliate| {
        a.apply(patch.clone(), timestamp::now())
    })
    .await
}
