//! What the API and the portal show of a promotion code, and the body that
//! registers or creates one.

use domain::connector::Provider;
use domain::promotion_code::PromotionCode;
use domain::promotion_code::PromotionCodeDraft;
use domain::provider_format::{DiscountId, ProviderCode, ProviderToken};
use domain::timestamp::Timestamp;
use serde::{Deserialize, Serialize};

/// A promotion code as the API shows it.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PromotionCode)]
pub struct PromotionCodeView<'a> {
    #[schema(value_type = domain::ids::PromotionCodeId)]
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
    pub created_at: Timestamp,
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
            created_at: p.created_at.into(),
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
    pub created_at: Timestamp,
}

impl<'a> From<&'a PromotionCode> for PortalPromotionCode<'a> {
    fn from(p: &'a PromotionCode) -> Self {
        PortalPromotionCode {
            code: p.code.as_deref(),
            provider: p.provider,
            active: p.active,
            created_at: p.created_at.into(),
        }
    }
}

/// `POST /api/v1/affiliates/{id}/promotion-codes`: register an existing code
/// (`providerId`), or create one at Stripe (`code` and `couponId`).
#[derive(utoipa::ToSchema, Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = PromotionCodeRequest)]
pub struct NewPromotionCode {
    /// The STRIPE or PADDLE integration of the provider the code lives at.
    #[schema(value_type = domain::ids::IntegrationId)]
    pub integration_id: String,
    /// The customer-facing code, letters and digits (Stripe's rule). Required with `couponId`
    /// to create the code at Stripe; with `providerId`, shown as given.
    #[schema(value_type = Option<ProviderCode>)]
    pub code: Option<String>,
    /// An existing code to register: a Stripe promotion code (`promo_…`) or a Paddle discount
    /// (`dsc_…`), of the integration's provider.
    #[schema(value_type = Option<DiscountId>)]
    pub provider_id: Option<String>,
    /// STRIPE, without `providerId`: the coupon the new promotion code applies (the integration
    /// needs its `apiKey`).
    #[schema(value_type = Option<ProviderToken>)]
    pub coupon_id: Option<String>,
}

impl From<NewPromotionCode> for PromotionCodeDraft {
    fn from(b: NewPromotionCode) -> Self {
        PromotionCodeDraft {
            integration_id: b.integration_id,
            code: b.code.map(|v| ProviderCode::judge("code", v)),
            provider_id: b.provider_id.map(|v| DiscountId::judge("providerId", v)),
            coupon_id: b.coupon_id.map(|v| ProviderToken::judge("couponId", v)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integration::NewIntegration;
    use chrono::Utc;
    use domain::connector::Provider;
    use domain::error::Error;
    use domain::integration::Integration;
    use domain::promotion_code::Making;
    use domain::tenant::Mode;

    fn integration(provider: Provider, api_key: Option<&str>) -> Integration {
        let secret = match provider {
            Provider::Stripe => "whsec_0123456789abcdefghijklmn",
            _ => "pdl_ntfset_0123456789abcdefghijklmn",
        };
        let input = NewIntegration {
            provider,
            signing_secret: Some(secret.into()),
            connect_signing_secret: None,
            api_key: api_key.map(str::to_string),
            client_id: None,
            client_secret: None,
            webhook_id: None,
            campaign_id: None,
            description: None,
        };
        Integration::create(input.into(), Mode::Test, Utc::now()).unwrap()
    }

    fn body(
        code: Option<&str>,
        provider_id: Option<&str>,
        coupon: Option<&str>,
    ) -> NewPromotionCode {
        NewPromotionCode {
            integration_id: "int_01JD3Q5W6X7Y8Z9A0B1C2D3E4F".into(),
            code: code.map(str::to_string),
            provider_id: provider_id.map(str::to_string),
            coupon_id: coupon.map(str::to_string),
        }
    }

    #[test]
    fn a_code_is_registered_by_its_provider_id_or_created_at_stripe() {
        let stripe = integration(Provider::Stripe, Some("sk_test_51Habc"));
        let keyless = integration(Provider::Stripe, None);
        let paddle = integration(Provider::Paddle, None);
        let id = "promo_1Pgc79B7WZ01zgkW";
        let promo = Some(id);
        // (integration, body, Ok(making) or Err(path or state))
        let register = |id: &str| {
            Ok(Making::Register {
                provider_id: id.into(),
            })
        };
        let cases: Vec<(&Integration, NewPromotionCode, Result<Making, &str>)> = vec![
            (&stripe, body(None, promo, None), register(id)),
            (&keyless, body(Some("ANNA20"), promo, None), register(id)),
            (
                &paddle,
                body(None, Some("dsc_01hv8x2acma6"), None),
                register("dsc_01hv8x2acma6"),
            ),
            (&paddle, body(None, promo, None), Err("providerId")),
            (
                &stripe,
                body(None, Some("dsc_01hv8x2acma6"), None),
                Err("providerId"),
            ),
            (
                &stripe,
                body(None, Some("promo_a-b"), None),
                Err("providerId"),
            ),
            (
                &stripe,
                body(Some("ANNA20"), promo, Some("C1")),
                Err("couponId"),
            ),
            (
                &stripe,
                body(Some("ANNA20"), None, Some("SUMMER")),
                Ok(Making::CreateAtStripe {
                    code: "ANNA20".into(),
                    coupon_id: "SUMMER".into(),
                }),
            ),
            (
                &stripe,
                body(Some("ANNA 20"), None, Some("SUMMER")),
                Err("code"),
            ),
            (&stripe, body(Some("ANNA20"), None, None), Err("couponId")),
            (&stripe, body(None, None, Some("SUMMER")), Err("code")),
            (
                &paddle,
                body(Some("ANNA20"), None, Some("SUMMER")),
                Err("providerId"),
            ),
            (
                &keyless,
                body(Some("ANNA20"), None, Some("SUMMER")),
                Err("INVALID_STATE"),
            ),
            (
                &stripe,
                body(Some(&"A".repeat(51)), None, Some("S")),
                Err("code"),
            ),
        ];
        for (i, (integration, body, want)) in cases.into_iter().enumerate() {
            let got = PromotionCodeDraft::from(body).making(integration);
            match (got, want) {
                (Ok(g), Ok(w)) => assert_eq!(g, w, "case {i}"),
                (Err(Error::Validation(issues)), Err(path)) => {
                    assert_eq!(issues[0].path, vec![serde_json::json!(path)], "case {i}")
                }
                (Err(Error::InvalidState { .. }), Err("INVALID_STATE")) => {}
                (got, want) => panic!("case {i}: {got:?}, want {want:?}"),
            }
        }
    }
}
