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
use crate::provider_format::{PADDLE_DISCOUNT_PREFIX, STRIPE_PROMOTION_CODE_PREFIX};
use crate::schema::Judged;
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

/// A promotion code as the merchant asks for it (`wire::promotion_code::NewPromotionCode` is its body).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromotionCodeDraft {
    pub integration_id: String,
    /// Each judged against the body's length limits (`wire::promotion_code`).
    pub code: Option<Judged<String>>,
    pub provider_id: Option<Judged<String>>,
    pub coupon_id: Option<Judged<String>>,
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
        Provider::Stripe => Some(STRIPE_PROMOTION_CODE_PREFIX),
        Provider::Paddle => Some(PADDLE_DISCOUNT_PREFIX),
        Provider::Paypal => None,
    }
}

impl PromotionCodeDraft {
    /// What the body asks of `integration`: a provider id of its provider, or
    /// a code and a coupon for STRIPE. 400 for a shape or combination that
    /// does not fit, 409 INVALID_STATE for a Stripe creation without a key.
    pub fn making(&self, integration: &Integration) -> Result<Making, Error> {
        let mut issues = Issues::new();
        // A provider id of no provider's format is not asked whose it is.
        let formed = self.provider_id.as_ref().is_none_or(|j| j.issue.is_none());
        let [code, provider_id, coupon_id] = [&self.code, &self.provider_id, &self.coupon_id]
            .map(|field| field.clone().map(|judged| judged.take(&mut issues)));
        let Some(prefix) = provider_prefix(integration.provider) else {
            issues.add(
                &["integrationId"],
                "invalid_value",
                "integrationId must name a STRIPE or PADDLE integration",
            );
            issues.finish()?;
            return Err(Error::internal("an integration issue not recorded"));
        };
        let making = choose(
            (provider_id, code, coupon_id),
            formed,
            integration,
            prefix,
            &mut issues,
        );
        issues.finish()?;
        let making = making.ok_or_else(|| Error::internal("a promotion code without a making"))?;
        if matches!(making, Making::CreateAtStripe { .. }) && integration.api_key.is_none() {
            return Err(Error::state(
                "integration",
                "WITHOUT_API_KEY",
                "create promotion codes",
            ));
        }
        Ok(making)
    }
}

/// The making the fields (provider id, code, coupon) name, their
/// combination's issues recorded (`formed`: the provider id has a
/// provider's format).
fn choose(
    fields: (Option<String>, Option<String>, Option<String>),
    formed: bool,
    integration: &Integration,
    prefix: &str,
    issues: &mut Issues,
) -> Option<Making> {
    match (&fields.0, &fields.1, &fields.2) {
        (Some(id), _, None) => {
            if formed {
                check_provider_id(id, integration.provider, prefix, issues);
            }
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

/// Records an issue when `id` (of a provider's format) is not one of
/// `provider`'s: its `prefix`.
fn check_provider_id(id: &str, provider: Provider, prefix: &str, issues: &mut Issues) {
    if !id.starts_with(prefix) {
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
        input: &PromotionCodeDraft,
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
            return Err(Error::state(
                "affiliate",
                affiliate.status.as_str(),
                "get promotion codes",
            ));
        }
        Ok(PromotionCode {
            id: new_id(IdKind::PromotionCode),
            affiliate_id: affiliate.id.clone(),
            campaign_id: affiliate.campaign_id.clone(),
            integration_id: integration.id.clone(),
            provider: integration.provider,
            code: input.code.as_ref().map(|c| c.value.clone()),
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
