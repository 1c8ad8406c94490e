//! What the API and the events show of a campaign (the merchant's view, the
//! commission terms an affiliate sees, the public profile), and the bodies
//! that create and change one.

use crate::number::Number;
use crate::risk::RiskSettingsInput;
use crate::risk::RiskSettingsView;
use domain::campaign::CampaignChanges;
use domain::campaign::CampaignDraft;
use domain::campaign::{Campaign, CommissionType};
use domain::commission_plan::{CommissionRule, LeadCommission};
use domain::commission_tiers::Tier;
use domain::field;
use domain::metadata::Metadata;
use domain::metadata::MetadataPatch;
use domain::money::json_number_opt;
use domain::money::JsonDecimal;
use domain::money::{json_number, Currency};
use domain::patch::Patch;
use domain::risk::RiskChanges;
use domain::tax_form::TaxFormSetting;
use domain::timestamp::Timestamp;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// A campaign as its merchant sees it.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Campaign)]
pub struct CampaignView<'a> {
    #[schema(value_type = domain::ids::CampaignId)]
    pub id: &'a str,
    pub object: &'static str,
    #[schema(min_length = 1, max_length = 200)]
    pub name: &'a str,
    #[schema(max_length = 2000)]
    pub description: Option<&'a str>,
    pub commission_type: CommissionType,
    /// PERCENTAGE: percent of the payment, 0-100 (at most 4 decimals). FIXED: an amount in
    /// major units of `currency`, greater than 0.
    pub commission_value: Number,
    /// ISO 4217 code of a FIXED commission; null for PERCENTAGE.
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
    // A bound cannot stand beside the `Number` component: described inline.
    #[schema(value_type = f64, minimum = 0)]
    pub minimum_payout: Number,
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
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl<'a> From<&'a Campaign> for CampaignView<'a> {
    fn from(c: &'a Campaign) -> Self {
        CampaignView {
            id: &c.id,
            object: "campaign",
            name: &c.name,
            description: c.description.as_deref(),
            commission_type: c.commission_type,
            commission_value: c.commission_value.into(),
            currency: c.currency,
            commission_recurring: c.commission_recurring,
            recurring_months_limit: c.recurring_months_limit,
            cookie_days: c.cookie_days,
            hold_days: c.hold_days,
            minimum_payout: c.minimum_payout.into(),
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
            created_at: c.created_at.into(),
            updated_at: c.updated_at.into(),
        }
    }
}

/// A campaign's commission terms as an affiliate sees them: the part of a
/// campaign its public profile and the affiliate portal both show.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = CampaignTerms)]
pub struct CampaignTerms<'a> {
    #[schema(value_type = domain::ids::CampaignId)]
    pub id: &'a str,
    pub name: &'a str,
    pub commission_type: CommissionType,
    /// Percent (PERCENTAGE) or an amount in major units of `currency` (FIXED).
    pub commission_value: Number,
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
            commission_value: c.commission_value.into(),
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

/// Body of `POST /api/v1/campaigns`. Unknown fields are rejected (VALIDATION_FAILED, code
/// `unrecognized_keys`). All rules are checked together and every broken one is reported.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = CampaignCreate, example = json!({"name": "Spring partners", "commissionType": "PERCENTAGE", "commissionValue": 20, "commissionRecurring": true, "recurringMonthsLimit": 12, "isPublic": true}))]
pub struct NewCampaign {
    #[schema(value_type = field::Name)]
    pub name: String,
    #[schema(value_type = Option<field::LongText>)]
    pub description: Option<String>,
    /// Where affiliates send visitors: an `http` or `https` URL with a host, without white
    /// space; the affiliate portal's referral link is it with `?ref=<code>`.
    #[schema(value_type = Option<field::Url>)]
    pub landing_url: Option<String>,
    pub commission_type: CommissionType,
    /// PERCENTAGE: 0-100 with at most 4 decimals. FIXED: greater than 0 and below 10^12, in
    /// major units, with no more decimals than the currency's minor unit allows (see
    /// `CurrencyCode`).
    #[serde(with = "json_number")]
    #[schema(value_type = field::CommissionValue)]
    pub commission_value: Decimal,
    /// ISO 4217 code, any letter case (returned uppercase). Required for FIXED; must be absent
    /// or null for PERCENTAGE.
    #[schema(value_type = Option<domain::money::Currency>)]
    pub currency: Option<String>,
    #[serde(default)]
    #[schema(default = json!(false))]
    pub commission_recurring: bool,
    /// null or absent: lifetime. Must be null or absent when `commissionRecurring` is false.
    #[schema(minimum = 1, maximum = 120, default = json!(null))]
    pub recurring_months_limit: Option<i64>,
    /// null or absent: 30.
    #[schema(minimum = 1, maximum = 365, default = json!(domain::campaign::DEFAULT_COOKIE_DAYS))]
    pub cookie_days: Option<i64>,
    /// null or absent: 30.
    #[schema(minimum = 0, maximum = 365, default = json!(domain::campaign::DEFAULT_HOLD_DAYS))]
    pub hold_days: Option<i64>,
    /// Major units, 0 to below 10^12, at most 28 decimals; applied per currency. Null or
    /// absent: 0.
    #[serde(default, with = "json_number_opt")]
    #[schema(value_type = Option<field::AmountOrZero>, default = json!(0))]
    pub minimum_payout: Option<Decimal>,
    #[serde(default)]
    #[schema(default = json!(false))]
    pub is_public: bool,
    /// null or absent: true.
    #[schema(default = json!(true))]
    pub signup_open: Option<bool>,
    #[serde(default)]
    #[schema(default = json!(false))]
    pub auto_approve_affiliates: bool,
    /// Risk checks (see `docs/risk.md`); absent fields take their defaults.
    pub risk: Option<RiskSettingsInput>,
    /// At most 20, ordered: the first whose `when` holds decides how much an earning payment
    /// earns (see `docs/commissions.md`); none -> the campaign's own rate. Default `[]`.
    #[serde(default)]
    #[schema(max_items = 20)]
    pub commission_rules: Vec<CommissionRule>,
    /// At most 10, by strictly increasing `minCustomers`: an affiliate's payments earn the
    /// highest tier its distinct paying customers reach, when no override or rule decides.
    /// Default `[]`.
    #[serde(default)]
    #[schema(max_items = 10)]
    pub tiers: Vec<Tier>,
    /// What a LEAD earns when no rule for leads decides; absent: leads earn 0.
    pub lead_commission: Option<LeadCommission>,
    /// Whether payment waits for the affiliate's tax form; absent: never.
    pub tax_form: Option<TaxFormSetting>,
    #[schema(value_type = Option<domain::metadata::MetadataSchema>)]
    pub metadata: Option<Metadata>,
}

/// A campaign body's fields moved into the domain's input of the same
/// fields, the ranges judged by the create body's limits: the create body
/// and the PATCH hold the same fields (as values or as changes), so one
/// list serves both.
macro_rules! campaign_input {
    ($b:ident => $to:ident) => {
        moved! { $b => $to {
            name, description, landing_url, commission_type, commission_value, currency,
            commission_recurring, minimum_payout, is_public, signup_open,
            auto_approve_affiliates, commission_rules, tiers, lead_commission, tax_form,
            metadata;
            recurring_months_limit: $b
                .recurring_months_limit
                .map(|v| ranged!(NewCampaign, "recurringMonthsLimit", v)),
            cookie_days: $b.cookie_days.map(|v| ranged!(NewCampaign, "cookieDays", v)),
            hold_days: $b.hold_days.map(|v| ranged!(NewCampaign, "holdDays", v)),
            risk: $b.risk.map(RiskChanges::from),
        } }
    };
}

impl From<NewCampaign> for CampaignDraft {
    fn from(b: NewCampaign) -> Self {
        campaign_input!(b => CampaignDraft)
    }
}

/// Body of `PUT /api/v1/campaigns/{id}`: a partial update. Only the fields sent change; an
/// empty body changes nothing but `updatedAt`. Sending null clears the nullable fields
/// (`description`, `currency`, `recurringMonthsLimit` = lifetime, `metadata` = all keys); null
/// for any other field is VALIDATION_FAILED. The merged campaign is validated as a whole with
/// the same rules as on create (so turning `commissionRecurring` off needs
/// `recurringMonthsLimit: null` unless it already is). Switching `commissionType` to PERCENTAGE
/// drops the currency unless `currency` is sent too. Unknown fields are rejected.
#[derive(utoipa::ToSchema, Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = CampaignUpdate, example = json!({"commissionValue": 25, "recurringMonthsLimit": null}))]
pub struct CampaignPatch {
    #[serde(default)]
    #[schema(value_type = field::Name)]
    pub name: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<field::LongText>)]
    pub description: Patch<String>,
    /// Null removes it.
    #[serde(default)]
    #[schema(value_type = Option<field::Url>)]
    pub landing_url: Patch<String>,
    #[serde(default)]
    #[schema(value_type = CommissionType)]
    pub commission_type: Patch<CommissionType>,
    /// PERCENTAGE: 0-100 with at most 4 decimals. FIXED: greater than 0 and below 10^12, in
    /// major units, with no more decimals than the currency's minor unit allows (see
    /// `CurrencyCode`).
    #[serde(default)]
    #[schema(value_type = field::CommissionValue)]
    pub commission_value: Patch<JsonDecimal>,
    #[serde(default)]
    #[schema(value_type = Option<domain::money::Currency>)]
    pub currency: Patch<String>,
    #[serde(default)]
    #[schema(value_type = bool)]
    pub commission_recurring: Patch<bool>,
    #[serde(default)]
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 120)]
    pub recurring_months_limit: Patch<i64>,
    #[serde(default)]
    #[schema(value_type = i64, minimum = 1, maximum = 365)]
    pub cookie_days: Patch<i64>,
    #[serde(default)]
    #[schema(value_type = i64, minimum = 0, maximum = 365)]
    pub hold_days: Patch<i64>,
    /// Major units, 0 to below 10^12, at most 28 decimals; applied per currency.
    #[serde(default)]
    #[schema(value_type = field::AmountOrZero)]
    pub minimum_payout: Patch<JsonDecimal>,
    #[serde(default)]
    #[schema(value_type = bool)]
    pub is_public: Patch<bool>,
    #[serde(default)]
    #[schema(value_type = bool)]
    pub signup_open: Patch<bool>,
    #[serde(default)]
    #[schema(value_type = bool)]
    pub auto_approve_affiliates: Patch<bool>,
    /// Only the risk fields sent change.
    #[serde(default)]
    #[schema(value_type = RiskSettingsInput)]
    pub risk: Patch<RiskSettingsInput>,
    /// Replaces every rule (`[]` removes them). Recorded commissions keep their amounts.
    #[serde(default)]
    #[schema(value_type = Vec<CommissionRule>, max_items = 20)]
    pub commission_rules: Patch<Vec<CommissionRule>>,
    /// Replaces every tier (`[]` removes them). Recorded commissions keep their amounts; an
    /// affiliate's tier follows at its next payment.
    #[serde(default)]
    #[schema(value_type = Vec<Tier>, max_items = 10)]
    pub tiers: Patch<Vec<Tier>>,
    /// Null removes it.
    #[serde(default)]
    #[schema(value_type = Option<LeadCommission>)]
    pub lead_commission: Patch<LeadCommission>,
    /// Null removes it (no form is required).
    #[serde(default)]
    #[schema(value_type = Option<TaxFormSetting>)]
    pub tax_form: Patch<TaxFormSetting>,
    /// Merged into the stored metadata (a key set to null is removed); null removes every key.
    #[serde(default)]
    #[schema(value_type = Option<domain::metadata::MetadataPatchSchema>)]
    pub metadata: Patch<MetadataPatch>,
}

impl From<CampaignPatch> for CampaignChanges {
    fn from(b: CampaignPatch) -> Self {
        campaign_input!(b => CampaignChanges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use domain::error::Error;

    /// A campaign made from a create body, as the route makes it.
    fn new(json: serde_json::Value) -> Result<Campaign, Error> {
        let input: NewCampaign = serde_json::from_value(json).unwrap();
        Campaign::create(input.into(), Utc::now())
    }

    /// The changes an update body asks for, as the route reads them.
    fn patch(json: serde_json::Value) -> CampaignChanges {
        serde_json::from_value::<CampaignPatch>(json)
            .unwrap()
            .into()
    }

    #[test]
    fn an_edit_that_changes_nothing_leaves_the_campaign_as_it_was() {
        let c = new(
            serde_json::json!({"name": "A", "commissionType": "PERCENTAGE",
            "commissionValue": 10, "metadata": {"k": "v"}}),
        )
        .unwrap();
        let later = c.updated_at + chrono::Duration::hours(1);
        // (patch as sent, changed?)
        let cases = [
            (r#"{}"#, false),
            (r#"{"name": "A", "metadata": {"k": "v"}}"#, false),
            (r#"{"commissionValue": 10.00}"#, false),
            (r#"{"commissionValue": 10.5}"#, true),
            (r#"{"metadata": {"k": null}}"#, true),
            (r#"{"name": "B"}"#, true),
        ];
        for (p, changed) in cases {
            let next = c
                .apply(patch(serde_json::from_str(p).unwrap()), later)
                .unwrap();
            assert_eq!(next != c, changed, "{p}");
            let stamped = if changed { later } else { c.updated_at };
            assert_eq!(next.updated_at, stamped, "{p}");
        }
    }

    #[test]
    fn only_a_public_campaign_with_sign_up_open_takes_a_sign_up() {
        let base = serde_json::json!({"name": "A", "commissionType": "PERCENTAGE",
            "commissionValue": 10});
        let with = |public: bool, open: bool| {
            let mut json = base.clone();
            json["isPublic"] = public.into();
            json["signupOpen"] = open.into();
            new(json).unwrap().open_to_signups()
        };
        assert!(with(true, true).is_ok());
        // A private campaign is not found, whether its sign-up is open or not.
        for open in [true, false] {
            assert!(matches!(
                with(false, open),
                Err(Error::NotFound("campaign"))
            ));
        }
        let Err(Error::InvalidState { current, .. }) = with(true, false) else {
            panic!("a closed sign-up is a state");
        };
        assert_eq!(current, "SIGNUP_CLOSED");
    }

    #[test]
    fn recurring_rules_are_checked_after_the_merge() {
        let c = new(
            serde_json::json!({"name": "A", "commissionType": "PERCENTAGE", "commissionValue": 10,
            "commissionRecurring": true, "recurringMonthsLimit": 12}),
        )
        .unwrap();
        assert_eq!(c.recurring_months_limit, Some(12));
        // Turning recurring off while a limit remains is a contradiction.
        assert!(c
            .apply(
                patch(serde_json::json!({"commissionRecurring": false})),
                Utc::now()
            )
            .is_err());
        let off = c
            .apply(
                patch(
                    serde_json::json!({"commissionRecurring": false, "recurringMonthsLimit": null}),
                ),
                Utc::now(),
            )
            .unwrap();
        assert!(!off.commission_recurring);
        let lifetime = c
            .apply(
                patch(serde_json::json!({"recurringMonthsLimit": null})),
                Utc::now(),
            )
            .unwrap();
        assert_eq!(lifetime.recurring_months_limit, None);
        assert!(c
            .apply(
                patch(serde_json::json!({"recurringMonthsLimit": 121})),
                Utc::now()
            )
            .is_err());
        assert!(c
            .apply(
                patch(serde_json::json!({"recurringMonthsLimit": 0})),
                Utc::now()
            )
            .is_err());
    }

    #[test]
    fn commission_shapes() {
        assert!(new(
            serde_json::json!({"name": "A", "commissionType": "PERCENTAGE", "commissionValue": 101})
        )
        .is_err());
        assert!(new(
            serde_json::json!({"name": "A", "commissionType": "FIXED", "commissionValue": 5})
        )
        .is_err());
        assert!(new(serde_json::json!({"name": "A", "commissionType": "FIXED", "commissionValue": 5.5, "currency": "JPY"})).is_err());
        let f = new(serde_json::json!({"name": "A", "commissionType": "FIXED", "commissionValue": 5.5, "currency": "usd"})).unwrap();
        assert_eq!(f.currency.unwrap().code(), "USD");
        let p = f
            .apply(
                patch(serde_json::json!({"commissionType": "PERCENTAGE", "commissionValue": 20})),
                Utc::now(),
            )
            .unwrap();
        assert_eq!(p.currency, None);
        assert!(new(
            serde_json::json!({"name": "", "commissionType": "PERCENTAGE", "commissionValue": 1})
        )
        .is_err());
    }
}
