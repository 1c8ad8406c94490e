//! What the API and the events show of a campaign: the merchant's view, the
//! commission terms an affiliate sees, and the public profile.

use crate::risk::RiskSettingsView;
use chrono::{DateTime, Utc};
use domain::campaign::{Campaign, CommissionType};
use domain::commission_plan::{CommissionRule, LeadCommission};
use domain::commission_tiers::Tier;
use domain::metadata::Metadata;
use domain::money::{json_number, Currency};
use domain::tax_form::TaxFormSetting;
use domain::timestamp::serde_ts;
use rust_decimal::Decimal;
use serde::Serialize;

/// A campaign as its merchant sees it.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Campaign)]
pub struct CampaignView<'a> {
    #[schema(pattern = "^cmp_[0-9A-HJKMNP-TV-Z]{26}$", example = json!("cmp_01JD3Q5W6X7Y8Z9A0B1C2D3E4F"))]
    pub id: &'a str,
    pub object: &'static str,
    #[schema(min_length = 1, max_length = 200)]
    pub name: &'a str,
    #[schema(max_length = 2000)]
    pub description: Option<&'a str>,
    pub commission_type: CommissionType,
    /// PERCENTAGE: percent of the payment, 0-100 (at most 4 decimals). FIXED: an amount in
    /// major units of `currency`, greater than 0.
    #[serde(with = "json_number")]
    #[schema(value_type = f64)]
    pub commission_value: Decimal,
    /// ISO 4217 code of a FIXED commission; null for PERCENTAGE.
    #[schema(value_type = Option<domain::money::Currency>)]
    pub currency: Option<Currency>,
    /// Whether later payments of a referred customer earn commission too.
    pub commission_recurring: bool,
    /// Recurring commission is earned while a payment occurs less than this many calendar
    /// months after the customer's first attributed payment; null means lifetime (or not
    /// recurring). Always null when `commissionRecurring` is false.
    #[schema(minimum = 1, maximum = 120)]
    pub recurring_months_limit: Option<u32>,
    /// Attribution window of clicks and sessions, in days.
    #[schema(minimum = 1, maximum = 365)]
    pub cookie_days: u32,
    /// Days a commission stays PENDING before it is payable.
    #[schema(minimum = 0, maximum = 365)]
    pub hold_days: u32,
    /// Smallest payable commission total, in major units, applied in each currency.
    #[serde(with = "json_number")]
    #[schema(value_type = f64, minimum = 0)]
    pub minimum_payout: Decimal,
    /// The public profile is visible (and sign-up possible when `signupOpen`).
    pub is_public: bool,
    /// Affiliates may sign up (only effective when `isPublic`).
    pub signup_open: bool,
    /// Sign-up makes an ACTIVE affiliate instead of a pending application.
    pub auto_approve_affiliates: bool,
    /// Where affiliates send visitors (the portal's referral link adds `?ref=<code>`).
    #[schema(max_length = 2000)]
    pub landing_url: Option<&'a str>,
    /// What risk checks flag and hold (see `docs/risk.md`).
    pub risk: RiskSettingsView,
    /// Ordered; the first whose `when` holds decides (see `docs/commissions.md`).
    pub commission_rules: &'a [CommissionRule],
    /// By strictly increasing `minCustomers` (see `docs/commissions.md`).
    pub tiers: &'a [Tier],
    /// What a LEAD earns when no rule for leads decides; null: leads earn 0.
    pub lead_commission: Option<&'a LeadCommission>,
    /// Whether payment waits for the affiliate's tax form; null: never.
    pub tax_form: Option<&'a TaxFormSetting>,
    #[schema(value_type = domain::metadata::MetadataSchema)]
    pub metadata: &'a Metadata,
    /// ISO-8601 UTC with milliseconds and `Z`.
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime, example = json!("2026-11-22T10:00:00.000Z"))]
    pub created_at: DateTime<Utc>,
    /// ISO-8601 UTC with milliseconds and `Z`.
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime, example = json!("2026-11-22T10:00:00.000Z"))]
    pub updated_at: DateTime<Utc>,
}

impl<'a> From<&'a Campaign> for CampaignView<'a> {
    fn from(c: &'a Campaign) -> Self {
        CampaignView {
            id: &c.id,
            object: "campaign",
            name: &c.name,
            description: c.description.as_deref(),
            commission_type: c.commission_type,
            commission_value: c.commission_value,
            currency: c.currency,
            commission_recurring: c.commission_recurring,
            recurring_months_limit: c.recurring_months_limit,
            cookie_days: c.cookie_days,
            hold_days: c.hold_days,
            minimum_payout: c.minimum_payout,
            is_public: c.is_public,
            signup_open: c.signup_open,
            auto_approve_affiliates: c.auto_approve_affiliates,
            landing_url: c.landing_url.as_deref(),
            risk: RiskSettingsView::from(&c.risk),
            commission_rules: &c.commission_rules,
            tiers: &c.tiers,
            lead_commission: c.lead_commission.as_ref(),
            tax_form: c.tax_form.as_ref(),
            metadata: &c.metadata,
            created_at: c.created_at,
            updated_at: c.updated_at,
        }
    }
}

/// A campaign's commission terms as an affiliate sees them: the part of a
/// campaign its public profile and the affiliate portal both show.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = CampaignTerms)]
pub struct CampaignTerms<'a> {
    #[schema(example = json!("cmp_01JD3Q5W6X7Y8Z9A0B1C2D3E4F"))]
    pub id: &'a str,
    pub name: &'a str,
    pub commission_type: CommissionType,
    /// Percent (PERCENTAGE) or an amount in major units of `currency` (FIXED).
    #[serde(with = "json_number")]
    #[schema(value_type = f64)]
    pub commission_value: Decimal,
    #[schema(value_type = Option<domain::money::Currency>)]
    pub currency: Option<Currency>,
    pub commission_recurring: bool,
    /// null: lifetime (or not recurring).
    #[schema(minimum = 1, maximum = 120)]
    pub recurring_months_limit: Option<u32>,
    #[schema(minimum = 1, maximum = 365)]
    pub cookie_days: u32,
}

impl<'a> From<&'a Campaign> for CampaignTerms<'a> {
    fn from(c: &'a Campaign) -> Self {
        CampaignTerms {
            id: &c.id,
            name: &c.name,
            commission_type: c.commission_type,
            commission_value: c.commission_value,
            currency: c.currency,
            commission_recurring: c.commission_recurring,
            recurring_months_limit: c.recurring_months_limit,
            cookie_days: c.cookie_days,
        }
    }
}

/// The public profile of a public campaign, for landing pages: commission terms and nothing
/// private.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PublicCampaign)]
pub struct PublicCampaignView<'a> {
    #[serde(flatten)]
    pub terms: CampaignTerms<'a>,
    pub description: Option<&'a str>,
    /// Whether affiliates can sign up now.
    pub signup_open: bool,
}

impl<'a> From<&'a Campaign> for PublicCampaignView<'a> {
    fn from(c: &'a Campaign) -> Self {
        PublicCampaignView {
            terms: CampaignTerms::from(c),
            description: c.description.as_deref(),
            signup_open: c.accepts_signups(),
        }
    }
}
