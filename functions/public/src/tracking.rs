//! Public tracking for the browser script: clicks and session identification.

use http::Method;
use serde::Serialize;
use shared::domain::referral::ReferralSource;
use shared::domain::tenant::Tenant;
use shared::domain::tracking::{Click, ClickIds, ClickRequest, IdentifyRequest};
use shared::http::{Handler, Reply};
use shared::store::clicks;
use shared::store::referrals::{self, Binding};
use shared::{public_handler, timestamp, Error};

/// The tracking routes.
pub fn routes() -> Vec<(Method, &'static str, Handler)> {
    vec![
        (Method::POST, "/api/v1/track/click", click),
        (Method::POST, "/api/v1/track/identify", identify),
    ]
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClickView {
    click_id: String,
    session_id: String,
    expires_at: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IdentifyView {
    session_id: String,
    bound: bool,
}

// `POST /api/v1/track/click`: the campaign must be public and `ref` a code of
// one of its affiliates; then one PutItem. Reads: the campaign (it names the
// tenant), then the code guard under that tenant, both through the process's
// lookup cache (`shared::lookups`: at most 60 s stale).
public_handler!(click, |call| {
    let body: ClickRequest = call.json()?;
    body.validate()?;
    let store = &call.app.store;
    let not_found = || Error::NotFound("campaign or affiliate code");
    if !body.code_is_well_formed() {
        return Err(not_found());
    }
    let lookups = &call.app.lookups;
    let (campaign, tenant_key) = match lookups.campaign(store, &body.campaign_id).await? {
        Some((c, t)) if c.is_public => (c, t),
        _ => return Err(not_found()),
    };
    let tenant = Tenant::from_key(&tenant_key)
        .ok_or_else(|| Error::internal(format!("campaign {} has no tenant", campaign.id)))?;
    let owner = lookups
        .code_owner(store, &tenant, &body.code)
        .await?
        .filter(|o| o.campaign_id == campaign.id)
        .ok_or_else(not_found)?;

    let now = timestamp::now();
    let ids = ClickIds::generate();
    let secret = call.app.signing.current().await?.secret;
    let ip_hash = call
        .req
        .source_ip
        .as_deref()
        .map(|ip| shared::client_ip::hash_ip(&secret, ip, now));
    let recorded = Click::record(
        body,
        &ids,
        tenant_key,
        &campaign,
        owner.affiliate_id,
        ip_hash,
        now,
    );
    clicks::insert(store, &recorded).await?;
    Reply::created(ClickView {
        click_id: ids.click_id,
        session_id: ids.session_id,
        expires_at: timestamp::format(&recorded.expires_at),
    })
});

// `POST /api/v1/track/identify`: binds the session's affiliate to the customer
// (first touch). Answers only whether something new was bound.
public_handler!(identify, |call| {
    let body: IdentifyRequest = call.json()?;
    let customer_keys = body.customer_keys()?;
    let store = &call.app.store;
    let now = timestamp::now();
    let session_click = clicks::get_live_by_session(store, &body.session_id, now)
        .await?
        .ok_or(Error::NotFound("session"))?;
    let tenant = Tenant::from_key(&session_click.tenant)
        .ok_or_else(|| Error::internal(format!("click {} has no tenant", session_click.id)))?;
    let bound = referrals::bind_identities(
        store,
        &tenant,
        &customer_keys,
        &Binding {
            affiliate_id: &session_click.affiliate_id,
            campaign_id: &session_click.campaign_id,
            source: ReferralSource::Identify,
            session_id: Some(&body.session_id),
            at: now,
        },
    )
    .await?;
    Reply::ok(IdentifyView {
        session_id: body.session_id,
        bound,
    })
});
