//! Campaigns and their commission rules.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::commission_plan::{self, CommissionRule, LeadCommission, Pay};
pub use crate::commission_terms::CommissionType;
use crate::commission_tiers::{self, Tier};
use crate::edit::{self, Stamped};
use crate::error::Error;
use crate::field;
use crate::ids::{new_id, IdKind};
use crate::limits;
use crate::metadata::{self, Metadata, MetadataPatch};
use crate::money::{json_number, json_number_opt, Currency, JsonDecimal, NotDecimal};
use crate::patch::Patch;
use crate::risk::{RiskSettings, RiskSettingsInput};
use crate::schema::Limits;
use crate::tax_form::TaxFormSetting;
use crate::timestamp::serde_ts;
use crate::validation::Issues;

/// A campaign as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Campaign {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub commission_type: CommissionType,
    pub commission_value: Decimal,
    pub currency: Option<Currency>,
    pub commission_recurring: bool,
    /// `None`: lifetime recurring commission.
    pub recurring_months_limit: Option<u32>,
    pub cookie_days: u32,
    pub hold_days: u32,
    pub minimum_payout: Decimal,
    pub is_public: bool,
    pub signup_open: bool,
    pub auto_approve_affiliates: bool,
    /// Where affiliates send visitors: the portal's referral link is this
    /// URL with `?ref=<code>`.
    #[serde(default)]
    pub landing_url: Option<String>,
    /// What risk checks flag and hold (defaults for campaigns stored before them).
    #[serde(default)]
    pub risk: RiskSettings,
    /// Ordered; the first that holds decides (see `domain::commission_plan`).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "commission_plan::stored_json"
    )]
    pub commission_rules: Vec<CommissionRule>,
    /// By distinct paying customers referred (see `domain::commission_tiers`).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "commission_plan::stored_json"
    )]
    pub tiers: Vec<Tier>,
    /// What a LEAD earns when no rule for leads decides.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "commission_plan::stored_json"
    )]
    pub lead_commission: Option<LeadCommission>,
    /// Whether payment waits for the affiliate's tax form (see `domain::tax_form`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "commission_plan::stored_json"
    )]
    pub tax_form: Option<TaxFormSetting>,
    #[serde(default)]
    pub metadata: Metadata,
    #[serde(with = "serde_ts")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "serde_ts")]
    pub updated_at: DateTime<Utc>,
}

/// Body of `POST /api/v1/campaigns`. Unknown fields are rejected (VALIDATION_FAILED, code
/// `unrecognized_keys`). All rules are checked together and every broken one is reported.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = CampaignCreate, example = json!({"name": "Spring partners", "commissionType": "PERCENTAGE", "commissionValue": 20, "commissionRecurring": true, "recurringMonthsLimit": 12, "isPublic": true}))]
pub struct NewCampaign {
    #[schema(value_type = field::Name)]
    pub name: String,
    #[serde(default)]
    #[schema(value_type = Option<field::LongText>)]
    pub description: Option<String>,
    /// Where affiliates send visitors: an `http` or `https` URL with a host, without white
    /// space; the affiliate portal's referral link is it with `?ref=<code>`.
    #[serde(default)]
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
    #[serde(default)]
    #[schema(value_type = Option<crate::money::Currency>)]
    pub currency: Option<String>,
    #[serde(default)]
    #[schema(default = json!(false))]
    pub commission_recurring: bool,
    /// null or absent: lifetime. Must be null or absent when `commissionRecurring` is false.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 120, default = json!(null))]
    pub recurring_months_limit: Option<i64>,
    /// null or absent: 30.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 365, default = json!(30))]
    pub cookie_days: Option<i64>,
    /// null or absent: 30.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 365, default = json!(30))]
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
    #[serde(default)]
    #[schema(default = json!(true))]
    pub signup_open: Option<bool>,
    #[serde(default)]
    #[schema(default = json!(false))]
    pub auto_approve_affiliates: bool,
    /// Risk checks (see `docs/risk.md`); absent fields take their defaults.
    #[serde(default)]
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
    #[serde(default)]
    pub lead_commission: Option<LeadCommission>,
    /// Whether payment waits for the affiliate's tax form; absent: never.
    #[serde(default)]
    pub tax_form: Option<TaxFormSetting>,
    #[serde(default)]
    #[schema(value_type = Option<crate::metadata::MetadataSchema>)]
    pub metadata: Option<Metadata>,
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
    #[schema(value_type = Option<crate::money::Currency>)]
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
    #[schema(value_type = Option<crate::metadata::MetadataPatchSchema>)]
    pub metadata: Patch<MetadataPatch>,
}

/// Default attribution window.
pub const DEFAULT_COOKIE_DAYS: u32 = 30;
/// Default hold period.
pub const DEFAULT_HOLD_DAYS: u32 = 30;

fn to_u32(path: &str, v: i64, limits: Limits, issues: &mut Issues) -> u32 {
    issues.check(limits.check_range(path, v));
    limits.clamp(v) as u32
}

/// Stores a JSON number as an exact decimal, or records why it cannot be one.
fn decimal_into(path: &str, v: JsonDecimal, target: &mut Decimal, issues: &mut Issues) {
    match v.0 {
        Ok(d) => *target = d,
        Err(NotDecimal::NotFinite) => {
            issues.add(&[path], "invalid_type", format!("{path} must be a number"))
        }
        Err(e) => issues.add(&[path], "invalid_value", format!("{path} {e}")),
    }
}

impl Stamped for Campaign {
    fn stamp(&mut self, now: DateTime<Utc>) {
        self.updated_at = now;
    }
}

impl Campaign {
    /// Builds and validates a new campaign.
    pub fn create(input: NewCampaign, now: DateTime<Utc>) -> Result<Campaign, Error> {
        let mut issues = Issues::new();
        let currency = input
            .currency
            .as_deref()
            .and_then(|c| issues.check(Currency::parse("currency", c)));
        let campaign = Campaign {
            id: new_id(IdKind::Campaign),
            name: input.name,
            description: input.description,
            commission_type: input.commission_type,
            commission_value: input.commission_value,
            currency,
            commission_recurring: input.commission_recurring,
            recurring_months_limit: input.recurring_months_limit.map(|v| {
                to_u32(
                    "recurringMonthsLimit",
                    v,
                    limits!(NewCampaign, "recurringMonthsLimit"),
                    &mut issues,
                )
            }),
            cookie_days: input.cookie_days.map_or(DEFAULT_COOKIE_DAYS, |v| {
                to_u32(
                    "cookieDays",
                    v,
                    limits!(NewCampaign, "cookieDays"),
                    &mut issues,
                )
            }),
            hold_days: input.hold_days.map_or(DEFAULT_HOLD_DAYS, |v| {
                to_u32("holdDays", v, limits!(NewCampaign, "holdDays"), &mut issues)
            }),
            minimum_payout: input.minimum_payout.unwrap_or(Decimal::ZERO),
            is_public: input.is_public,
            signup_open: input.signup_open.unwrap_or(true),
            auto_approve_affiliates: input.auto_approve_affiliates,
            landing_url: input.landing_url,
            risk: RiskSettings::default().apply(input.risk.unwrap_or_default(), &mut issues),
            commission_rules: input.commission_rules,
            tiers: input.tiers,
            lead_commission: input.lead_commission,
            tax_form: input.tax_form,
            metadata: input.metadata.unwrap_or_default(),
            created_at: now,
            updated_at: now,
        };
        campaign.validate(issues)?;
        Ok(campaign)
    }

    /// Applies a partial update, then validates the merged campaign as a whole.
    pub fn apply(&self, patch: CampaignPatch, now: DateTime<Utc>) -> Result<Campaign, Error> {
        let mut issues = Issues::new();
        let i = &mut issues;
        let mut c = self.clone();
        if let Some(v) = patch.name.required("name", i) {
            c.name = v;
        }
        c.description = patch.description.apply_opt(c.description);
        c.landing_url = patch.landing_url.apply_opt(c.landing_url);
        let commission = (
            patch.commission_type,
            patch.commission_value,
            patch.currency,
        );
        c.apply_commission(commission, i);
        if let Some(v) = patch
            .commission_recurring
            .required("commissionRecurring", i)
        {
            c.commission_recurring = v;
        }
        let periods = (
            patch.recurring_months_limit,
            patch.cookie_days,
            patch.hold_days,
        );
        c.apply_periods(periods, i);
        if let Some(v) = patch.minimum_payout.required("minimumPayout", i) {
            decimal_into("minimumPayout", v, &mut c.minimum_payout, i);
        }
        for (field, flag, target) in [
            ("isPublic", patch.is_public, &mut c.is_public),
            ("signupOpen", patch.signup_open, &mut c.signup_open),
            (
                "autoApproveAffiliates",
                patch.auto_approve_affiliates,
                &mut c.auto_approve_affiliates,
            ),
        ] {
            if let Some(v) = flag.required(field, i) {
                *target = v;
            }
        }
        if let Some(r) = patch.risk.required("risk", i) {
            c.risk = c.risk.apply(r, i);
        }
        let plans = (patch.commission_rules, patch.tiers, patch.lead_commission);
        c.apply_plans(plans, i);
        c.tax_form = patch.tax_form.apply_opt(c.tax_form.take());
        match patch.metadata {
            Patch::Value(m) => c.metadata = metadata::merge(c.metadata, m),
            Patch::Null => c.metadata.clear(),
            Patch::Absent => {}
        }
        c.validate(issues)?;
        Ok(edit::stamped(self, c, now))
    }

    /// A patch's own commission: its type (a switch to a percentage drops a
    /// currency the patch does not restate), value and currency.
    fn apply_commission(
        &mut self,
        (kind, value, currency): (Patch<CommissionType>, Patch<JsonDecimal>, Patch<String>),
        i: &mut Issues,
    ) {
        if let Some(t) = kind.required("commissionType", i) {
            if t == CommissionType::Percentage && !currency.is_present() {
                self.currency = None;
            }
            self.commission_type = t;
        }
        if let Some(v) = value.required("commissionValue", i) {
            decimal_into("commissionValue", v, &mut self.commission_value, i);
        }
        match currency {
            Patch::Value(code) => self.currency = i.check(Currency::parse("currency", &code)),
            Patch::Null => self.currency = None,
            Patch::Absent => {}
        }
    }

    /// A patch's periods: the recurring months limit (null: lifetime), the
    /// cookie and the hold days, each within its limits.
    fn apply_periods(
        &mut self,
        (months, cookie, hold): (Patch<i64>, Patch<i64>, Patch<i64>),
        i: &mut Issues,
    ) {
        match months {
            Patch::Value(v) => {
                self.recurring_months_limit = Some(to_u32(
                    "recurringMonthsLimit",
                    v,
                    limits!(NewCampaign, "recurringMonthsLimit"),
                    i,
                ))
            }
            Patch::Null => self.recurring_months_limit = None,
            Patch::Absent => {}
        }
        if let Some(v) = cookie.required("cookieDays", i) {
            self.cookie_days = to_u32("cookieDays", v, limits!(NewCampaign, "cookieDays"), i);
        }
        if let Some(v) = hold.required("holdDays", i) {
            self.hold_days = to_u32("holdDays", v, limits!(NewCampaign, "holdDays"), i);
        }
    }

    /// A patch's commission plan: its rules and tiers replace the stored
    /// ones, its lead commission is set or cleared.
    fn apply_plans(
        &mut self,
        (rules, tiers, lead): (
            Patch<Vec<CommissionRule>>,
            Patch<Vec<Tier>>,
            Patch<LeadCommission>,
        ),
        i: &mut Issues,
    ) {
        if let Some(rules) = rules.required("commissionRules", i) {
            self.commission_rules = rules;
        }
        if let Some(tiers) = tiers.required("tiers", i) {
            self.tiers = tiers;
        }
        self.lead_commission = lead.apply_opt(self.lead_commission.take());
    }

    /// The rules that hold for every stored campaign.
    fn validate(&self, mut issues: Issues) -> Result<(), Error> {
        issues.check(field::Name::parse("name", &self.name));
        if let Some(d) = &self.description {
            issues.check(field::LongText::parse("description", d));
        }
        if let Some(u) = &self.landing_url {
            issues.check(field::Url::parse("landingUrl", u));
        }
        self.own_pay().check("", &mut issues);
        commission_plan::check_rules(&self.commission_rules, &mut issues);
        commission_tiers::check_tiers(&self.tiers, &mut issues);
        if let Some(l) = &self.lead_commission {
            l.pay().check("leadCommission", &mut issues);
        }
        if let Some(t) = &self.tax_form {
            t.check(&mut issues);
        }
        if !self.commission_recurring && self.recurring_months_limit.is_some() {
            issues.add(
                &["recurringMonthsLimit"],
                "invalid_value",
                "recurringMonthsLimit must be null when commissionRecurring is false",
            );
        }
        issues.check(field::AmountOrZero::parse(
            "minimumPayout",
            self.minimum_payout,
        ));
        metadata::validate(&self.metadata, &mut issues);
        issues.finish()
    }

    /// The campaign's own rate, as a rule's pay: what a payment earns when
    /// no override or rule decides.
    pub fn own_pay(&self) -> Pay {
        Pay {
            kind: self.commission_type,
            value: self.commission_value,
            currency: self.currency,
        }
    }

    /// Whether the public profile and sign-up accept affiliates.
    pub fn accepts_signups(&self) -> bool {
        self.is_public && self.signup_open
    }

    /// A sign-up to this campaign may go on: NOT_FOUND unless it is public
    /// (whoever owns it), 409 SIGNUP_CLOSED when its sign-up is closed (the
    /// public profile already shows `signupOpen`, so saying so leaks
    /// nothing).
    pub fn open_to_signups(&self) -> Result<(), Error> {
        if !self.is_public {
            return Err(Error::NotFound("campaign"));
        }
        if !self.signup_open {
            return Err(Error::InvalidState {
                resource: "campaign",
                current: "SIGNUP_CLOSED".into(),
                action: "signup",
            });
        }
        Ok(())
    }
}

/// The combination rules of a new campaign that `Campaign::validate` checks
/// (a PERCENTAGE is 0-100 and has no currency, a FIXED is above 0 and has
/// one, a months limit only with recurring commission), in JSON Schema
/// terms, for the description of `CampaignCreate`.
pub fn combination_rules() -> serde_json::Value {
    serde_json::json!([{"if": {"properties": {"commissionType": {"const": "PERCENTAGE"}}, "required": ["commissionType"]}, "then": {"properties": {"commissionValue": {"minimum": 0, "maximum": 100}, "currency": {"type": "null"}}}}, {"if": {"properties": {"commissionType": {"const": "FIXED"}}, "required": ["commissionType"]}, "then": {"required": ["currency"], "properties": {"commissionValue": {"exclusiveMinimum": 0}, "currency": {"type": "string"}}}}, {"if": {"not": {"properties": {"commissionRecurring": {"const": true}}, "required": ["commissionRecurring"]}}, "then": {"properties": {"recurringMonthsLimit": {"type": "null"}}}}])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(json: serde_json::Value) -> Result<Campaign, Error> {
        let input: NewCampaign = serde_json::from_value(json).unwrap();
        Campaign::create(input, Utc::now())
    }

    fn patch(json: serde_json::Value) -> CampaignPatch {
        serde_json::from_value(json).unwrap()
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
            let next = c.apply(serde_json::from_str(p).unwrap(), later).unwrap();
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
