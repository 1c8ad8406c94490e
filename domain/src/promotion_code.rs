//! Promotion codes (contract section 16): a discount code at the payment
//! provider that names an affiliate. A payment that carries a registered
//! code, and no stronger hint (a click, session or code in
//! `metadata.referral`), is attributed to that affiliate
//! (`attribution: PROMOTION_CODE`), and its customer is bound for recurring
//! commission. A code is registered by its provider id (a Stripe promotion
//! code `promo_…`, a Paddle discount `dsc_…`) or created at Stripe through
//! the integration's `apiKey`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::affiliate::{Affiliate, AffiliateStatus};
use crate::connector::Provider;
use crate::error::Error;
use crate::ids::{new_id, IdKind};
use crate::integration::Integration;
use crate::limits;
use crate::timestamp::serde_ts;
use crate::validation::Issues;

/// A promotion code as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromotionCode {
    pub id: String,
    pub affiliate_id: String,
    /// The affiliate's campaign: what a payment carrying the code earns by.
    pub campaign_id: String,
    pub integration_id: String,
    pub provider: Provider,
    /// The customer-facing code, when known.
    pub code: Option<String>,
    /// The provider's id of it (`promo_…`, `dsc_…`).
    pub provider_id: String,
    pub active: bool,
    /// Made at Stripe by this product: deactivated there when it is here.
    pub created_here: bool,
    #[serde(with = "serde_ts")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "serde_ts")]
    pub updated_at: DateTime<Utc>,
}

/// `POST /api/v1/affiliates/{id}/promotion-codes`: register an existing code
/// (`providerId`), or create one at Stripe (`code` and `couponId`).
#[derive(utoipa::ToSchema, Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = PromotionCodeRequest)]
pub struct NewPromotionCode {
    /// The STRIPE or PADDLE integration of the provider the code lives at.
    #[schema(pattern = "^int_[0-9A-HJKMNP-TV-Z]{26}$", example = json!("int_01JD3Q5W6X7Y8Z9A0B1C2D3E4F"))]
    pub integration_id: String,
    /// The customer-facing code, letters and digits (Stripe's rule). Required with `couponId`
    /// to create the code at Stripe; with `providerId`, shown as given.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 50, pattern = "^[A-Za-z0-9]+$", example = json!("ANNA20"))]
    pub code: Option<String>,
    /// An existing code to register: a Stripe promotion code (`promo_…`) or a Paddle discount
    /// (`dsc_…`), of the integration's provider.
    #[serde(default)]
    #[schema(min_length = 5, max_length = 255, pattern = "^(promo|dsc)_[A-Za-z0-9]+$", example = json!("promo_1Pgc79B7WZ01zgkWNy4mn5NX"))]
    pub provider_id: Option<String>,
    /// STRIPE, without `providerId`: the coupon the new promotion code applies (the integration
    /// needs its `apiKey`).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 255, pattern = "^[!-~]+$", example = json!("SUMMER20"))]
    pub coupon_id: Option<String>,
}

/// How a promotion code comes to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Making {
    /// An existing code of the provider, registered by its id.
    Register { provider_id: String },
    /// A new Stripe promotion code of `coupon_id`, created through the
    /// integration's key.
    CreateAtStripe { code: String, coupon_id: String },
}

/// The id prefix of a provider's codes.
fn provider_prefix(provider: Provider) -> Option<&'static str> {
    match provider {
        Provider::Stripe => Some("promo_"),
        Provider::Paddle => Some("dsc_"),
        Provider::Paypal => None,
    }
}

impl NewPromotionCode {
    /// What the body asks of `integration`: a provider id of its provider, or
    /// a code and a coupon for STRIPE. 400 for a shape or combination that
    /// does not fit, 409 INVALID_STATE for a Stripe creation without a key.
    pub fn making(&self, integration: &Integration) -> Result<Making, Error> {
        let mut issues = Issues::new();
        let fields = [
            ("code", &self.code, limits!(NewPromotionCode, "code")),
            (
                "providerId",
                &self.provider_id,
                limits!(NewPromotionCode, "providerId"),
            ),
            (
                "couponId",
                &self.coupon_id,
                limits!(NewPromotionCode, "couponId"),
            ),
        ];
        for (field, value, limits) in fields {
            if let Some(v) = value {
                issues.check(limits.check_len(field, v));
            }
        }
        if let Some(code) = &self.code {
            if !code.bytes().all(|b| b.is_ascii_alphanumeric()) {
                issues.add(
                    &["code"],
                    "invalid_string",
                    "code must be letters and digits",
                );
            }
        }
        let Some(prefix) = provider_prefix(integration.provider) else {
            issues.add(
                &["integrationId"],
                "invalid_value",
                "integrationId must name a STRIPE or PADDLE integration",
            );
            issues.finish()?;
            return Err(Error::internal("an integration issue not recorded"));
        };
        let making = self.choose(integration, prefix, &mut issues);
        issues.finish()?;
        let making = making.ok_or_else(|| Error::internal("a promotion code without a making"))?;
        if matches!(making, Making::CreateAtStripe { .. }) && integration.api_key.is_none() {
            return Err(Error::InvalidState {
                resource: "integration",
                current: "WITHOUT_API_KEY".into(),
                action: "create promotion codes",
            });
        }
        Ok(making)
    }

    /// The making the fields name, their combination's issues recorded.
    fn choose(
        &self,
        integration: &Integration,
        prefix: &str,
        issues: &mut Issues,
    ) -> Option<Making> {
        match (&self.provider_id, &self.code, &self.coupon_id) {
            (Some(id), _, None) => {
                check_provider_id(id, integration.provider, prefix, issues);
                Some(Making::Register {
                    provider_id: id.clone(),
                })
            }
            (Some(_), _, Some(_)) => {
                issues.add(
                    &["couponId"],
                    "invalid_combination",
                    "couponId is taken only without providerId (to create a code)",
                );
                None
            }
            (None, Some(code), Some(coupon)) if integration.provider == Provider::Stripe => {
                Some(Making::CreateAtStripe {
                    code: code.clone(),
                    coupon_id: coupon.clone(),
                })
            }
            (None, _, _) if integration.provider != Provider::Stripe => {
                issues.add(
                    &["providerId"],
                    "required",
                    "providerId is required (a Paddle discount is registered by its id)",
                );
                None
            }
            (None, code, coupon) => {
                require_code_and_coupon(code.as_deref(), coupon.as_deref(), issues);
                None
            }
        }
    }
}

/// Records an issue when `id` is not one of `provider`'s: its `prefix`,
/// then letters and digits.
fn check_provider_id(id: &str, provider: Provider, prefix: &str, issues: &mut Issues) {
    let rest = id.strip_prefix(prefix);
    if !rest.is_some_and(|r| r.bytes().all(|b| b.is_ascii_alphanumeric())) {
        issues.add(
            &["providerId"],
            "invalid_string",
            format!("providerId must be a {} id ({prefix}…)", provider.as_str()),
        );
    }
}

/// Records what a code created at Stripe lacks of its `code` and `couponId`.
fn require_code_and_coupon(code: Option<&str>, coupon: Option<&str>, issues: &mut Issues) {
    for (field, value) in [("code", code), ("couponId", coupon)] {
        if value.is_none() {
            issues.add(
                &[field],
                "required",
                format!("{field} is required without providerId"),
            );
        }
    }
}

impl PromotionCode {
    /// A new ACTIVE code of `affiliate` at `integration`'s provider, known
    /// there as `provider_id`. 409 INVALID_STATE for an affiliate who earns
    /// nothing now (SUSPENDED, REJECTED).
    pub fn new(
        input: &NewPromotionCode,
        affiliate: &Affiliate,
        integration: &Integration,
        provider_id: String,
        created_here: bool,
        now: DateTime<Utc>,
    ) -> Result<PromotionCode, Error> {
        if matches!(
            affiliate.status,
            AffiliateStatus::Suspended | AffiliateStatus::Rejected
        ) {
            return Err(Error::InvalidState {
                resource: "affiliate",
                current: affiliate.status.as_str().into(),
                action: "get promotion codes",
            });
        }
        Ok(PromotionCode {
            id: new_id(IdKind::PromotionCode),
            affiliate_id: affiliate.id.clone(),
            campaign_id: affiliate.campaign_id.clone(),
            integration_id: integration.id.clone(),
            provider: integration.provider,
            code: input.code.clone(),
            provider_id,
            active: true,
            created_here,
            created_at: now,
            updated_at: now,
        })
    }

    /// The code deactivated (it stops attributing); one inactive already is
    /// left as it is (`None`).
    pub fn deactivate(&self, now: DateTime<Utc>) -> Option<PromotionCode> {
        self.active.then(|| PromotionCode {
            active: false,
            updated_at: now,
            ..self.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integration::NewIntegration;
    use crate::tenant::Mode;

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
        Integration::create(input, Mode::Test, Utc::now()).unwrap()
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
            let got = body.making(integration);
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
