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
use crate::metadata::{self, Metadata, MetadataPatch};
use crate::money::{Currency, JsonDecimal, NotDecimal};
use crate::patch::Patch;
use crate::risk::{RiskChanges, RiskSettings};
use crate::schema::Ranged;
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

/// A new campaign as the merchant asks for it (`wire::campaign::NewCampaign`
/// is its body).
#[derive(Debug, Clone, PartialEq)]
pub struct CampaignDraft {
    pub name: String,
    pub description: Option<String>,
    pub landing_url: Option<String>,
    pub commission_type: CommissionType,
    pub commission_value: Decimal,
    pub currency: Option<String>,
    pub commission_recurring: bool,
    /// Each period judged against the body's range (`wire::campaign`).
    pub recurring_months_limit: Option<Ranged>,
    pub cookie_days: Option<Ranged>,
    pub hold_days: Option<Ranged>,
    pub minimum_payout: Option<Decimal>,
    pub is_public: bool,
    pub signup_open: Option<bool>,
    pub auto_approve_affiliates: bool,
    pub risk: Option<RiskChanges>,
    pub commission_rules: Vec<CommissionRule>,
    pub tiers: Vec<Tier>,
    pub lead_commission: Option<LeadCommission>,
    pub tax_form: Option<TaxFormSetting>,
    pub metadata: Option<Metadata>,
}

/// A campaign's changes: only what is given changes
/// (`wire::campaign::CampaignPatch` is their body).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CampaignChanges {
    pub name: Patch<String>,
    pub description: Patch<String>,
    pub landing_url: Patch<String>,
    pub commission_type: Patch<CommissionType>,
    pub commission_value: Patch<JsonDecimal>,
    pub currency: Patch<String>,
    pub commission_recurring: Patch<bool>,
    /// Each period judged against the body's range (`wire::campaign`).
    pub recurring_months_limit: Patch<Ranged>,
    pub cookie_days: Patch<Ranged>,
    pub hold_days: Patch<Ranged>,
    pub minimum_payout: Patch<JsonDecimal>,
    pub is_public: Patch<bool>,
    pub signup_open: Patch<bool>,
    pub auto_approve_affiliates: Patch<bool>,
    pub risk: Patch<RiskChanges>,
    pub commission_rules: Patch<Vec<CommissionRule>>,
    pub tiers: Patch<Vec<Tier>>,
    pub lead_commission: Patch<LeadCommission>,
    pub tax_form: Patch<TaxFormSetting>,
    pub metadata: Patch<MetadataPatch>,
}

/// Default attribution window.
pub const DEFAULT_COOKIE_DAYS: u32 = 30;
/// Default hold period.
pub const DEFAULT_HOLD_DAYS: u32 = 30;

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
    pub fn create(input: CampaignDraft, now: DateTime<Utc>) -> Result<Campaign, Error> {
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
            recurring_months_limit: input.recurring_months_limit.map(|r| r.take(&mut issues)),
            cookie_days: input
                .cookie_days
                .map_or(DEFAULT_COOKIE_DAYS, |r| r.take(&mut issues)),
            hold_days: input
                .hold_days
                .map_or(DEFAULT_HOLD_DAYS, |r| r.take(&mut issues)),
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
    pub fn apply(&self, patch: CampaignChanges, now: DateTime<Utc>) -> Result<Campaign, Error> {
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
        (months, cookie, hold): (Patch<Ranged>, Patch<Ranged>, Patch<Ranged>),
        i: &mut Issues,
    ) {
        match months {
            Patch::Value(r) => self.recurring_months_limit = Some(r.take(i)),
            Patch::Null => self.recurring_months_limit = None,
            Patch::Absent => {}
        }
        if let Some(r) = cookie.required("cookieDays", i) {
            self.cookie_days = r.take(i);
        }
        if let Some(r) = hold.required("holdDays", i) {
            self.hold_days = r.take(i);
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
            return Err(Error::state("campaign", "SIGNUP_CLOSED", "signup"));
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

/// Test inputs written as the JSON bodies that carry them (each period
/// taken as within its range: ranges are judged where the body is read).
#[cfg(test)]
impl CampaignDraft {
    pub(crate) fn from_json(body: &serde_json::Value) -> CampaignDraft {
        use crate::patch::from_json::field;
        let period = |k: &str| field::<u32>(body, k).map(Ranged::ok);
        let decimal = |k: &str| {
            body.get(k)
                .and_then(|v| v.to_string().parse::<Decimal>().ok())
        };
        CampaignDraft {
            name: field(body, "name").unwrap_or_default(),
            description: field(body, "description"),
            landing_url: field(body, "landingUrl"),
            commission_type: field(body, "commissionType").expect("a commissionType"),
            commission_value: decimal("commissionValue").unwrap_or_default(),
            currency: field(body, "currency"),
            commission_recurring: field(body, "commissionRecurring").unwrap_or_default(),
            recurring_months_limit: period("recurringMonthsLimit"),
            cookie_days: period("cookieDays"),
            hold_days: period("holdDays"),
            minimum_payout: decimal("minimumPayout"),
            is_public: field(body, "isPublic").unwrap_or_default(),
            signup_open: field(body, "signupOpen"),
            auto_approve_affiliates: field(body, "autoApproveAffiliates").unwrap_or_default(),
            risk: body.get("risk").map(RiskChanges::from_json),
            commission_rules: field(body, "commissionRules").unwrap_or_default(),
            tiers: field(body, "tiers").unwrap_or_default(),
            lead_commission: field(body, "leadCommission"),
            tax_form: field(body, "taxForm"),
            metadata: field(body, "metadata"),
        }
    }
}
