//! What `affiliate.tier_changed` carries.

use domain::commission_tiers::TierMark;
use serde::Serialize;

/// The data of `affiliate.tier_changed`: the affiliate's new tier (null:
/// none reached, after the campaign's tiers changed), the one before, and
/// the count and the conversion that moved it.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = AffiliateTierChange)]
pub struct TierChangeView<'a> {
    #[schema(value_type = domain::ids::AffiliateId)]
    pub affiliate_id: &'a str,
    #[schema(value_type = domain::ids::CampaignId)]
    pub campaign_id: &'a str,
    pub tier: Option<&'a TierMark>,
    /// The name of the tier before; null: none.
    pub previous_tier: Option<&'a str>,
    /// Distinct paying customers referred, the crossing payment's customer included.
    pub customers_referred: u32,
    /// The conversion whose payment moved the affiliate.
    pub conversion_id: &'a str,
}

impl<'a> From<&'a domain::change::TierChange> for TierChangeView<'a> {
    fn from(c: &'a domain::change::TierChange) -> Self {
        TierChangeView {
            affiliate_id: &c.affiliate_id,
            campaign_id: &c.campaign_id,
            tier: c.tier.as_ref(),
            previous_tier: c.previous_tier.as_deref(),
            customers_referred: c.customers_referred,
            conversion_id: &c.conversion_id,
        }
    }
}
