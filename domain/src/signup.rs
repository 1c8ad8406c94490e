//! Public sign-up: a visitor asks to join a public campaign.

use chrono::{DateTime, Utc};

use crate::affiliate::{Affiliate, AffiliateDraft, AffiliateStatus, Enrollment};
use crate::application::Application;
use crate::campaign::Campaign;
use crate::error::Error;
use crate::field;
use crate::risk::{self, Risk};
use crate::validation::Issues;

/// A visitor's request to join a public campaign (`wire::signup::SignUp` is
/// its body).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SignUpDraft {
    pub campaign_id: String,
    pub email: String,
    pub name: String,
    pub code: Option<String>,
    pub website: Option<String>,
    pub message: Option<String>,
}

/// The affiliate a sign-up creates: ACTIVE when the campaign approves
/// affiliates automatically, otherwise PENDING with an application to review.
/// Both carry the sign-up's risk flags; the affiliate keeps the `network`
/// it came from (a salted hash) for SAME_NETWORK.
pub fn enroll(
    input: SignUpDraft,
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
    let new = AffiliateDraft {
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
