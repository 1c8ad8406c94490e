//! What the API answers of an affiliate's payout account: the onboarding
//! link.

use chrono::{DateTime, Utc};
use domain::timestamp::Timestamp;
use serde::Serialize;

/// A Stripe onboarding link: open `url` in the affiliate's browser before `expiresAt`.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountLink {
    /// Always `account_link`.
    pub object: &'static str,
    /// Stripe's hosted onboarding, for this affiliate's connected account.
    #[schema(example = json!("https://connect.stripe.com/setup/e/acct_1Nv0FGQ9RKHgCVdK/aBcDeF"))]
    pub url: String,
    pub expires_at: Timestamp,
}

impl AccountLink {
    /// The link Stripe made.
    pub fn new(url: String, expires_at: DateTime<Utc>) -> Self {
        AccountLink {
            object: "account_link",
            url,
            expires_at: expires_at.into(),
        }
    }
}
