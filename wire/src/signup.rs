//! A public sign-up: its body, and what it answers.

use domain::affiliate::{AffiliateStatus, Enrollment};
use domain::field;
use domain::signup::SignUpDraft;
use serde::{Deserialize, Serialize};

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
    #[schema(value_type = domain::ids::AffiliateId)]
    id: &'a str,
    /// The affiliate code (`ref` in links, `affiliateCode` in postbacks). Unique per account
    /// and mode in any letter case.
    #[schema(value_type = domain::affiliate_code::AffiliateCode)]
    code: &'a str,
    status: AffiliateStatus,
}

/// Body of `POST /api/v1/affiliates/signup`. Status, payout details and metadata are the
/// merchant's to set and are rejected here.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = SignupRequest)]
pub struct SignUp {
    #[schema(value_type = field::IdRef)]
    pub campaign_id: String,
    /// Kept as given (trimmed); compared and looked up in lowercase.
    #[schema(value_type = domain::email::Email)]
    pub email: String,
    #[schema(value_type = field::Name)]
    pub name: String,
    /// The code the applicant would like; generated when absent. Taken: 409 ALREADY_EXISTS.
    #[schema(value_type = Option<domain::affiliate_code::AffiliateCode>)]
    pub code: Option<String>,
    /// An `http` or `https` URL (scheme in any letter case) with a host, without white space;
    /// at most 2000 characters.
    #[schema(value_type = Option<field::Url>)]
    pub website: Option<String>,
    /// A note to the merchant, kept on the application.
    #[schema(value_type = Option<field::LongText>)]
    pub message: Option<String>,
}

impl From<SignUp> for SignUpDraft {
    fn from(b: SignUp) -> Self {
        moved! { b => SignUpDraft {
            campaign_id, email, name, code, website, message,
        } }
    }
}
