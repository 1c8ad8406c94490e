//! Manual adjustments (contract section 15): read the affiliate and what
//! the `externalId` names, decide in `domain::adjustment`, commit in
//! `store::adjustments`; a lost race (the `externalId` taken meanwhile, the
//! affiliate's status changed) reads and decides again.

use crate::app::App;
use crate::retry::{retry_on_conflict, Attempt, UPDATE_ATTEMPTS};
use domain::adjustment::{AdjustmentRequest, Decision};
use domain::affiliate::Affiliate;
use domain::conversion::Adjustment;
use domain::error::Result;
use domain::tenant::Tenant;
use domain::timestamp;
use store::adjustments::{self, Committed};
use store::affiliates;
use store::page::{Page, PageRequest};

/// What a request for an adjustment did.
#[derive(Debug, Clone, PartialEq)]
pub enum Booked {
    Created(Adjustment),
    /// Its `externalId` named this adjustment, booked from the same request.
    Replayed(Adjustment),
}

/// Books a manual adjustment on the tenant's affiliate `affiliate_id` (404
/// for any other), or answers the one its `externalId` names.
pub async fn create(
    app: &App,
    tenant: &Tenant,
    affiliate_id: &str,
    request: &AdjustmentRequest,
) -> Result<Booked> {
    let store = &app.store;
    retry_on_conflict(UPDATE_ATTEMPTS, "affiliate", || async move {
        let (affiliate, claimed) = tokio::join!(
            affiliates::get(store, tenant, affiliate_id),
            adjustments::claimed(store, tenant, request.external_id.as_deref())
        );
        let (affiliate, claimed) = (affiliate?, claimed?);
        let booking = match request.decide(&affiliate, claimed.as_ref(), timestamp::now())? {
            Decision::Replay(a) => return Ok(Attempt::Done(Booked::Replayed(a))),
            Decision::Book(b) => b,
        };
        Ok(match adjustments::commit(store, tenant, &booking).await? {
            Committed::Done => Attempt::Done(Booked::Created(booking.adjustment)),
            Committed::Claimed | Committed::Stale => Attempt::Conflict,
        })
    })
    .await
}

/// A page of the affiliate's manual adjustments, newest first (404 for an
/// affiliate not the tenant's).
pub async fn list(
    app: &App,
    tenant: &Tenant,
    affiliate_id: &str,
    page: &PageRequest,
) -> Result<Page<Adjustment>> {
    let store = &app.store;
    let (affiliate, found) = tokio::join!(
        affiliates::get(store, tenant, affiliate_id),
        adjustments::list(store, tenant, affiliate_id, page)
    );
    affiliate?;
    found
}

/// A page of the manual adjustments of an affiliate already read (the
/// portal's own affiliate), newest first.
pub async fn of(
    app: &App,
    tenant: &Tenant,
    affiliate: &Affiliate,
    page: &PageRequest,
) -> Result<Page<Adjustment>> {
    let store = &app.store;
    adjustments::list(store, tenant, &affiliate.id, page).await
}
