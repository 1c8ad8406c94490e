//! Public sign-up: a visitor asks to join a public campaign.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::affiliate::{Affiliate, AffiliateStatus, Enrollment, NewAffiliate};
use crate::domain::application::{Application, MAX_MESSAGE_LEN};
use crate::domain::campaign::Campaign;
use crate::error::Error;
use crate::validation::{check_len, Issues};

/// Body of `POST /api/v1/affiliates/signup`. Status, payout details and
/// metadata are the merchant's to set, so they are not accepted here.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SignUp {
    pub campaign_id: String,
    pub email: String,
    pub name: String,
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub website: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
}

/// The affiliate a sign-up creates: ACTIVE when the campaign approves
/// affiliates automatically, otherwise PENDING with an application to review.
pub fn enroll(input: SignUp, campaign: &Campaign, now: DateTime<Utc>) -> Result<Enrollment, Error> {
    let mut issues = Issues::new();
    let message = input.message.filter(|m| !m.trim().is_empty());
    if let Some(m) = &message {
        issues.check(check_len("message", m, 1, MAX_MESSAGE_LEN));
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
    if status == AffiliateStatus::Pending {
        e.application = Some(Application::pending(
            &e.affiliate.id,
            &e.affiliate.campaign_id,
            message,
            now,
        ));
    }
    Ok(e)
}

/// The new affiliate as the applicant sees it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignUpAffiliate<'a> {
    id: &'a str,
    code: &'a str,
    status: AffiliateStatus,
}

/// 201 body of a sign-up: the affiliate, and the application when there is one.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignUpView<'a> {
    affiliate: SignUpAffiliate<'a>,
    application_id: Option<&'a str>,
}

impl<'a> From<&'a Enrollment> for SignUpView<'a> {
    fn from(e: &'a Enrollment) -> Self {
        SignUpView {
            affiliate: SignUpAffiliate {
                id: &e.affiliate.id,
                code: e.affiliate.code.as_str(),
                status: e.affiliate.status,
            },
            application_id: e.application.as_ref().map(|a| a.id.as_str()),
        }
    }
}
