//! Ending a held conversion's hold: read the conversion, decide in
//! `Conversion::release`, commit the move with its rollups and events; a
//! concurrent change reads again.

use crate::app::App;
use chrono::{DateTime, Utc};

use crate::retry::{retry_on_conflict, Attempt};
use domain::conversion::Conversion;
use domain::error::Result;
use domain::tenant::Tenant;
use store::conversions;

/// Times a release is planned again after a concurrent write to the conversion.
const RELEASE_ATTEMPTS: usize = 3;

/// Ends a conversion's hold, as `Conversion::release` decides; the
/// conversion as released.
pub async fn release(
    app: &App,
    tenant: &Tenant,
    id: &str,
    now: DateTime<Utc>,
) -> Result<Conversion> {
    let store = &app.store;
    retry_on_conflict(RELEASE_ATTEMPTS, "conversion", || async move {
        let read = conversions::get(store, tenant, id).await?;
        let r = read.release(now)?;
        Ok(
            match conversions::commit_release(store, tenant, &r).await? {
                true => Attempt::Done(r.after),
                false => Attempt::Conflict,
            },
        )
    })
    .await
}
