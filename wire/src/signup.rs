//! What a public sign-up answers.

use domain::affiliate::{AffiliateStatus, Enrollment};
use serde::Serialize;

/// 201 body of a sign-up: the affiliate, and the application when there is one.
#[derive(utoipa::ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Signup)]
pub struct SignUpView<'a> {
    #[schema(inline)]
    affiliate: SignUpAffiliate<'a>,
    /// The PENDING application; null when the campaign approves affiliates automatically.
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

/// The new affiliate as the applicant sees it.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignUpAffiliate<'a> {
    #[schema(pattern = "^aff_[0-9A-HJKMNP-TV-Z]{26}$")]
    id: &'a str,
    /// The affiliate code (`ref` in links, `affiliateCode` in postbacks). Unique per account
    /// and mode in any letter case.
    #[schema(value_type = domain::affiliate_code::AffiliateCode)]
    code: &'a str,
    status: AffiliateStatus,
}
