//! Public affiliate sign-up. It answers only about the campaign named in the
//! body: a campaign that is not public is 404 whoever owns it.

use http::Method;
use shared::domain::signup::{self, SignUp, SignUpView};
use shared::domain::tenant::Tenant;
use shared::http::{Handler, Reply};
use shared::store::{campaigns, enrollments};
use shared::{public_handler, timestamp, Error};

/// The sign-up route.
pub fn routes() -> Vec<(Method, &'static str, Handler)> {
    vec![(Method::POST, "/api/v1/affiliates/signup", sign_up)]
}

public_handler!(sign_up, |call| {
    let input: SignUp = call.json()?;
    let store = &call.app.store;
    let (campaign, tenant) = match campaigns::get_with_tenant(store, &input.campaign_id).await? {
        Some((c, t)) if c.is_public => (
            c,
            Tenant::from_key(&t).ok_or_else(|| Error::internal("campaign without a tenant"))?,
        ),
        _ => return Err(Error::NotFound("campaign")),
    };
    if !campaign.accepts_signups() {
        // The public profile already shows signupOpen, so saying so leaks nothing.
        return Err(Error::InvalidState {
            resource: "campaign",
            current: "SIGNUP_CLOSED".into(),
            action: "signup",
        });
    }
    let mut new = signup::enroll(input, &campaign, timestamp::now())?;
    enrollments::enroll(store, &tenant, &mut new).await?;
    Reply::created(SignUpView::from(&new))
});
