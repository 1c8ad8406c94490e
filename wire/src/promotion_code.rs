//! What the API and the portal show of a promotion code.

use chrono::{DateTime, Utc};
use domain::connector::Provider;
use domain::promotion_code::PromotionCode;
use domain::timestamp::serde_ts;
use serde::Serialize;

/// A promotion code as the API shows it.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PromotionCode)]
pub struct PromotionCodeView<'a> {
    #[schema(pattern = "^prc_[0-9A-HJKMNP-TV-Z]{26}$", example = json!("prc_01JD3Q5W6X7Y8Z9A0B1C2D3E4F"))]
    pub id: &'a str,
    pub object: &'static str,
    pub affiliate_id: &'a str,
    pub integration_id: &'a str,
    pub provider: Provider,
    /// The customer-facing code, when known.
    pub code: Option<&'a str>,
    /// The provider's id of it.
    #[schema(example = json!("promo_1Pgc79B7WZ01zgkWNy4mn5NX"))]
    pub provider_id: &'a str,
    /// Whether payments carrying it are attributed.
    pub active: bool,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
}

impl<'a> From<&'a PromotionCode> for PromotionCodeView<'a> {
    fn from(p: &'a PromotionCode) -> Self {
        PromotionCodeView {
            id: &p.id,
            object: "promotion_code",
            affiliate_id: &p.affiliate_id,
            integration_id: &p.integration_id,
            provider: p.provider,
            code: p.code.as_deref(),
            provider_id: &p.provider_id,
            active: p.active,
            created_at: p.created_at,
        }
    }
}

/// A promotion code as the affiliate's portal shows it: the code to share,
/// never the merchant's provider ids.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PortalPromotionCode)]
pub struct PortalPromotionCode<'a> {
    /// The customer-facing code (none when the merchant registered it by its provider id
    /// alone).
    #[schema(example = json!("ANNA20"))]
    pub code: Option<&'a str>,
    pub provider: Provider,
    /// Whether payments carrying it are yours.
    pub active: bool,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
}

impl<'a> From<&'a PromotionCode> for PortalPromotionCode<'a> {
    fn from(p: &'a PromotionCode) -> Self {
        PortalPromotionCode {
            code: p.code.as_deref(),
            provider: p.provider,
            active: p.active,
            created_at: p.created_at,
        }
    }
}
