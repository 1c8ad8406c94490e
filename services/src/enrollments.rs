//! Enrolling an affiliate (the merchant's create, the public sign-up):
//! read its campaign, plan it and its events, commit, and replace a
//! generated code that clashes.

use crate::app::App;
use crate::retry::{retry_at_once, Attempt};
use domain::affiliate::{Affiliate, AffiliateDraft, AffiliateStatus, Enrollment};
use domain::error::{Error, Result};
use domain::signup::{self, SignUpDraft};
use domain::tenant::Tenant;
use domain::timestamp;
use domain::validation::Issues;
use store::affiliates::{duplicate_code, duplicate_email};
use store::campaigns;
use store::enrollments::{self, Enrolled};

/// Attempts in all (the first code, then up to two fresh ones) when a
/// generated code clashes with an existing code.
const CODE_ATTEMPTS: usize = 3;

/// The merchant's new ACTIVE affiliate (no application) in one of its
/// campaigns; its input is judged before the campaign is read.
pub async fn add(app: &App, tenant: &Tenant, input: AffiliateDraft) -> Result<Affiliate> {
    let store = &app.store;
    let now = timestamp::now();
    let mut new = Affiliate::enroll(input, AffiliateStatus::Active, now, Issues::new())?;
    campaigns::get(store, tenant, &new.affiliate.campaign_id).await?;
    enroll(app, tenant, &mut new).await?;
    Ok(new.affiliate)
}

/// A visitor's sign-up to a public campaign (any tenant's, found by its
/// id): a campaign that is not public is NOT_FOUND whoever owns it, one with
/// sign-up closed refuses it before its input is judged. `network` is the
/// caller's salted network hash.
pub async fn sign_up(app: &App, input: SignUpDraft, network: Option<String>) -> Result<Enrollment> {
    let store = &app.store;
    let Some((campaign, tenant)) = campaigns::get_with_tenant(store, &input.campaign_id).await?
    else {
        return Err(Error::NotFound("campaign"));
    };
    campaign.open_to_signups()?;
    let tenant =
        Tenant::from_key(&tenant).ok_or_else(|| Error::internal("campaign without a tenant"))?;
    let mut new = signup::enroll(input, &campaign, network, timestamp::now())?;
    enroll(app, &tenant, &mut new).await?;
    Ok(new)
}

/// Stores a new affiliate with its application (if any) and their events.
/// A clashing generated code is replaced (`e` then carries the new one);
/// anything else that clashes is ALREADY_EXISTS.
pub async fn enroll(app: &App, tenant: &Tenant, e: &mut Enrollment) -> Result<()> {
    match enroll_once(app, tenant, e).await? {
        true => Ok(()),
        false => Err(Error::AlreadyExists(format!(
            "the affiliate {} exists",
            e.affiliate.id
        ))),
    }
}

/// As [`enroll`]; false when an affiliate with the enrollment's id exists
/// (an import row's, imported before), and nothing was written.
pub async fn enroll_once(app: &App, tenant: &Tenant, e: &mut Enrollment) -> Result<bool> {
    let store = &app.store;
    let ((e, _), stored) = retry_at_once(CODE_ATTEMPTS, (e, false), |(e, clashed)| async move {
        // The try after a clash takes a fresh code (a chosen one is kept: refused).
        if clashed && !e.retry_code() {
            return Err(duplicate_code(&e.affiliate.code));
        }
        let recorded = e.events();
        let stored = match enrollments::commit(store, tenant, e, &recorded).await? {
            Enrolled::Stored => true,
            Enrolled::Exists => false,
            Enrolled::EmailTaken => return Err(duplicate_email()),
            Enrolled::CodeTaken => return Ok(((e, true), Attempt::Conflict)),
        };
        Ok(((e, false), Attempt::Done(stored)))
    })
    .await?;
    stored.ok_or_else(|| duplicate_code(&e.affiliate.code))
}
