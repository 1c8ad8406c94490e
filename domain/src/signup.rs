//! Public sign-up: a visitor asks to join a public campaign.

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::affiliate::{Affiliate, AffiliateStatus, Enrollment, NewAffiliate};
use crate::application::Application;
use crate::campaign::Campaign;
use crate::error::Error;
use crate::field;
use crate::risk::{self, Risk};
use crate::validation::Issues;

/// Body of `POST /api/v1/affiliates/signup`. Status, payout details and metadata are the
/// merchant's to set and are rejected here.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = SignupRequest)]
pub struct SignUp {
    #[schema(value_type = field::IdRef)]
    pub campaign_id: String,
    /// Kept as given (trimmed); compared and looked up in lowercase.
    #[schema(value_type = crate::email::Email)]
    pub email: String,
    #[schema(value_type = field::Name)]
    pub name: String,
    /// The code the applicant would like; generated when absent. Taken: 409 ALREADY_EXISTS.
    #[serde(default)]
    #[schema(value_type = Option<crate::affiliate_code::AffiliateCode>)]
    pub code: Option<String>,
    /// An `http` or `https` URL (scheme in any letter case) with a host, without white space;
    /// at most 2000 characters.
    #[serde(default)]
    #[schema(value_type = Option<field::Url>)]
    pub website: Option<String>,
    /// A note to the merchant, kept on the application.
    #[serde(default)]
    #[schema(value_type = Option<field::LongText>)]
    pub message: Option<String>,
}

/// The affiliate a sign-up creates: ACTIVE when the campaign approves
/// affiliates automatically, otherwise PENDING with an application to review.
/// Both carry the sign-up's risk flags; the affiliate keeps the `network`
/// it came from (a salted hash) for SAME_NETWORK.
pub fn enroll(
    input: SignUp,
    campaign: &Campaign,
    network: Option<String>,
    now: DateTime<Utc>,
) -> Result<Enrollment, Error> {
    let mut issues = Issues::new();
    let message = input.message.filter(|m| !m.trim().is_empty());
    if let Some(m) = &message {
        issues.check(field::LongText::parse("message", m));
    }
    let status = if campaign.auto_approve_affiliates {
        AffiliateStatus::Active
    } else {
        AffiliateStatus::Pending
    };
    let new = NewAffiliate {
        campaign_id: campaign.id.clone(),
        email: input.email,
        name: input.name,
        code: input.code,
        payout_method: None,
        payout_email: None,
        website: input.website,
        metadata: None,
    };
    let mut e = Affiliate::enroll(new, status, now, issues)?;
    let risk = Risk::of(risk::assess_signup(e.affiliate.email.as_str(), now));
    e.affiliate.signup_network = network;
    e.affiliate.risk = risk.clone();
    if status == AffiliateStatus::Pending {
        let mut application =
            Application::pending(&e.affiliate.id, &e.affiliate.campaign_id, message, now);
        application.risk = risk;
        e.application = Some(application);
    }
    Ok(e)
}
