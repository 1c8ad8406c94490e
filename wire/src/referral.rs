//! What the API shows of a referral.

use domain::referral::{CustomerKey, Referral, ReferralSource};
use domain::timestamp::Timestamp;
use serde::Serialize;

/// A referral as the API lists it: never an e-mail or its hash.
#[derive(utoipa::ToSchema, Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Referral)]
pub struct ReferralView {
    #[schema(value_type = domain::ids::ReferralId)]
    pub id: String,
    pub affiliate_id: String,
    pub campaign_id: String,
    /// The merchant's customer id, when the customer was listed by it (null when it was
    /// identified by e-mail, session or click only).
    pub customer_id: Option<String>,
    /// The customer's first attributed payment (the start of a limited recurring window), as
    /// this binding knows it.
    pub first_payment_at: Option<Timestamp>,
    /// How the customer was bound to the affiliate.
    pub attribution: ReferralSource,
    /// When the customer was bound.
    pub created_at: Timestamp,
}

impl ReferralView {
    /// The view of a listed referral (`None` for one without an id).
    pub fn of(r: &Referral) -> Option<ReferralView> {
        let customer = CustomerKey::parse(&r.customer_key);
        Some(ReferralView {
            id: r.id.clone()?,
            affiliate_id: r.affiliate_id.clone(),
            campaign_id: r.campaign_id.clone(),
            customer_id: customer
                .as_ref()
                .and_then(CustomerKey::customer_id)
                .map(str::to_string),
            first_payment_at: r.first_payment_at.map(Timestamp),
            attribution: r.source,
            created_at: r.bound_at.into(),
        })
    }
}
