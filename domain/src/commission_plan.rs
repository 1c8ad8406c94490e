//! Commission plans (contract section 15): how much an earning payment
//! earns, and why. A campaign's `commissionRules` pay by conversion type,
//! product, plan, customer tenure and amount; an affiliate's
//! `commissionOverride` decides before them; the campaign's own rate is the
//! fallback. [`rate`] is the one function the postback, the connectors,
//! late attribution and the preview call: facts in, the commission and its
//! [`CommissionSource`] out. Whether a payment earns at all (the recurring
//! rules, the affiliate's status) stays `commission::decide`'s.

use chrono::{DateTime, Months, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::commission_terms::{CommissionReason, CommissionType, ConversionType};
use crate::enums::wire_enum;
use crate::field;
use crate::money::{json_number, json_number_opt, Currency};
use crate::validation::Issues;

/// Most rules a campaign has.
pub const MAX_RULES: usize = 20;
/// Most product or plan ids a rule names.
pub const MAX_IDS: usize = 50;

/// How much a rule or an override pays: a percentage of the payment (0-100,
/// at most 4 decimals), or a fixed amount (above 0, below 10^12, in
/// `currency`'s minor unit), as the campaign's own commission.
#[derive(utoipa::ToSchema, Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(example = json!({"type": "PERCENTAGE", "value": 50}))]
pub struct Pay {
    #[serde(rename = "type")]
    pub kind: CommissionType,
    #[serde(with = "json_number")]
    #[schema(value_type = field::CommissionValue)]
    pub value: Decimal,
    /// Required for FIXED, absent for PERCENTAGE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<Currency>,
}

/// An inclusive lower and exclusive upper bound on the payment's amount.
#[derive(utoipa::ToSchema, Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AmountRange {
    /// At least this (inclusive).
    #[serde(
        default,
        with = "json_number_opt",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<field::AmountOrZero>)]
    pub min: Option<Decimal>,
    /// Below this (exclusive).
    #[serde(
        default,
        with = "json_number_opt",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<field::Amount>)]
    pub max: Option<Decimal>,
}

/// Whole calendar months since the customer's first payment: `from`
/// inclusive, `to` exclusive.
#[derive(utoipa::ToSchema, Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MonthRange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 1200)]
    pub from: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1200)]
    pub to: Option<u32>,
}

/// The customer's n-th attributed payment in the campaign (1 = the first):
/// `from` and `to` inclusive.
#[derive(utoipa::ToSchema, Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CountRange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1000000000)]
    pub from: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1000000000)]
    pub to: Option<u32>,
}

/// What a LEAD earns: a fixed amount in a currency (a lead has no amount
/// to take a percentage of).
#[derive(utoipa::ToSchema, Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(example = json!({"value": 5, "currency": "USD"}))]
pub struct LeadCommission {
    /// Above 0, below 10^12, in `currency`'s minor unit.
    #[serde(with = "json_number")]
    #[schema(value_type = field::Amount)]
    pub value: Decimal,
    pub currency: Currency,
}

impl LeadCommission {
    /// As the FIXED pay it is.
    pub fn pay(&self) -> Pay {
        Pay {
            kind: CommissionType::Fixed,
            value: self.value,
            currency: Some(self.currency),
        }
    }
}

/// When a rule holds: every condition given must (`{}` always holds for a
/// SALE; a rule applies to LEADs only when its `conversionType` says LEAD).
#[derive(utoipa::ToSchema, Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct When {
    /// SALE when absent: a rule for leads names LEAD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversion_type: Option<ConversionType>,
    /// The customer's n-th attributed payment in the campaign (1 = the first), inclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment_number: Option<CountRange>,
    /// The conversion's `productId` is one of these (1-50 ids of 1-255 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<field::Key>>, min_items = 1, max_items = 50)]
    pub product_ids: Option<Vec<String>>,
    /// The conversion's `planId` is one of these (1-50 ids of 1-255 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<field::Key>>, min_items = 1, max_items = 50)]
    pub plan_ids: Option<Vec<String>>,
    /// Calendar months from the referral's `firstPaymentAt` to the payment (0 for the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub months_since_first_payment: Option<MonthRange>,
    /// The payment's amount, in its currency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<AmountRange>,
}

/// One of a campaign's commission rules: the first that holds decides.
#[derive(utoipa::ToSchema, Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(example = json!({"name": "First year", "when": {"monthsSinceFirstPayment": {"to": 12}}, "pay": {"type": "PERCENTAGE", "value": 50}}))]
pub struct CommissionRule {
    /// 1-100 characters, named in each conversion it decides.
    #[schema(value_type = field::Label)]
    pub name: String,
    #[serde(default)]
    pub when: When,
    pub pay: Pay,
}

wire_enum! {
    /// What decided a commission: the affiliate's `OVERRIDE`, a campaign `RULE`, a `TIER`, the
    /// `CAMPAIGN`'s own rate, or `NONE` (the payment earns nothing; `commissionReason` says why).
    pub enum SourceKind {
        Override = "OVERRIDE",
        Rule = "RULE",
        Tier = "TIER",
        Campaign = "CAMPAIGN",
        None = "NONE",
    }
}

/// Why a conversion earns what it earns.
#[derive(utoipa::ToSchema, Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CommissionSource {
    pub kind: SourceKind,
    /// The rule's (or tier's) name; null for the others.
    pub name: Option<String>,
    /// The rule's position in `commissionRules`, 0-based; null for the others.
    pub index: Option<u32>,
}

impl CommissionSource {
    /// A source of this kind alone.
    pub fn of(kind: SourceKind) -> CommissionSource {
        CommissionSource {
            kind,
            name: None,
            index: None,
        }
    }
}

/// The facts a commission is decided from.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts<'a> {
    pub amount: Decimal,
    pub currency: Currency,
    pub occurred_at: DateTime<Utc>,
    pub conversion_type: ConversionType,
    pub product_id: Option<&'a str>,
    pub plan_id: Option<&'a str>,
    /// The referral's first payment, when one was recorded before.
    pub first_payment_at: Option<DateTime<Utc>>,
    /// The customer's n-th attributed payment (1 = the first; 0 for a lead).
    pub payment_number: u32,
}

impl Facts<'_> {
    /// Whole calendar months from the first payment to this one (0 for the first).
    pub fn months_since_first_payment(&self) -> u32 {
        let Some(first) = self.first_payment_at else {
            return 0;
        };
        let mut months = 0;
        while months < 1200
            && first
                .checked_add_months(Months::new(months + 1))
                .is_some_and(|t| t <= self.occurred_at)
        {
            months += 1;
        }
        months
    }
}

impl Pay {
    /// What it pays on a payment: `Err` when it is a fixed amount in
    /// another currency (no exchange rates are applied).
    pub fn amount(&self, amount: Decimal, currency: Currency) -> Result<Decimal, CommissionReason> {
        match self.kind {
            CommissionType::Percentage => {
                Ok(currency.round(amount * self.value / Decimal::ONE_HUNDRED))
            }
            CommissionType::Fixed => match self.currency {
                Some(c) if c == currency => Ok(c.round(self.value)),
                _ => Err(CommissionReason::CurrencyMismatch),
            },
        }
    }

    /// The rules of a campaign's own commission, at `path` (`""` for the
    /// campaign's own fields, `commissionValue` and `currency`).
    pub fn check(&self, path: &str, issues: &mut Issues) {
        let (value, currency) = match path {
            "" => ("commissionValue".to_string(), "currency".to_string()),
            p => (format!("{p}.value"), format!("{p}.currency")),
        };
        let at = |f: &str| split_path(f);
        match self.kind {
            CommissionType::Percentage => {
                if self.value < Decimal::ZERO || self.value > Decimal::ONE_HUNDRED {
                    issues.add_at(
                        at(&value),
                        "invalid_value",
                        format!("a percentage {value} must be 0-100"),
                    );
                }
                if self.value.normalize().scale() > 4 {
                    issues.add_at(
                        at(&value),
                        "invalid_value",
                        "a percentage has at most 4 decimals",
                    );
                }
                if self.currency.is_some() {
                    issues.add_at(
                        at(&currency),
                        "invalid_value",
                        format!("{currency} applies to FIXED commission only"),
                    );
                }
            }
            CommissionType::Fixed => {
                if let Err(mut issue) = field::Amount::parse(&value, self.value) {
                    issue.path = at(&value);
                    issue.message = format!("a FIXED {}", issue.message);
                    issues.push(issue);
                }
                match &self.currency {
                    None => issues.add_at(
                        at(&currency),
                        "required",
                        format!("{currency} is required for FIXED commission"),
                    ),
                    Some(cur) => {
                        if let Err(mut issue) = cur.check_fits(&value, self.value) {
                            issue.path = at(&value);
                            issues.push(issue);
                        }
                    }
                }
            }
        }
    }
}

/// A dotted path with indexes (`commissionRules[3].pay.value`) as the
/// issue path it names (`["commissionRules", 3, "pay", "value"]`).
pub fn split_path(path: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let mut rest = part;
        if let Some(open) = rest.find('[') {
            out.push(Value::from(&rest[..open]));
            rest = &rest[open..];
            while let Some(close) = rest.find(']') {
                match rest[1..close].parse::<u64>() {
                    Ok(n) => out.push(Value::from(n)),
                    Err(_) => out.push(Value::from(&rest[1..close])),
                }
                rest = &rest[close + 1..];
            }
        } else {
            out.push(Value::from(rest));
        }
    }
    out
}

impl When {
    /// Whether every condition given holds for `facts`.
    pub fn holds(&self, facts: &Facts<'_>) -> bool {
        let listed = |ids: &Option<Vec<String>>, id: Option<&str>| match ids {
            None => true,
            Some(ids) => id.is_some_and(|id| ids.iter().any(|i| i == id)),
        };
        let months = facts.months_since_first_payment();
        self.conversion_type.unwrap_or_default() == facts.conversion_type
            && self.payment_number.as_ref().is_none_or(|r| {
                r.from.is_none_or(|f| facts.payment_number >= f)
                    && r.to.is_none_or(|t| facts.payment_number <= t)
            })
            && listed(&self.product_ids, facts.product_id)
            && listed(&self.plan_ids, facts.plan_id)
            && self.months_since_first_payment.as_ref().is_none_or(|r| {
                r.from.is_none_or(|f| months >= f) && r.to.is_none_or(|t| months < t)
            })
            && self.amount.as_ref().is_none_or(|r| {
                r.min.is_none_or(|m| facts.amount >= m) && r.max.is_none_or(|m| facts.amount < m)
            })
    }

    fn check(&self, path: &str, issues: &mut Issues) {
        for (name, ids) in [
            ("productIds", &self.product_ids),
            ("planIds", &self.plan_ids),
        ] {
            if let Some(ids) = ids {
                check_ids(&format!("{path}.{name}"), ids, issues);
            }
        }
        if let Some(CountRange { from, to }) = &self.payment_number {
            let at = format!("{path}.paymentNumber");
            for (end, v) in [("from", from), ("to", to)] {
                if *v == Some(0) {
                    let at = format!("{at}.{end}");
                    issues.add_at(split_path(&at), "too_small", format!("{at} must be >= 1"));
                }
            }
            if let (Some(f), Some(t)) = (from, to) {
                if t < f {
                    issues.add_at(
                        split_path(&format!("{at}.to")),
                        "invalid_range",
                        format!("{at}.to must be at least from"),
                    );
                }
            }
        }
        if let Some(MonthRange {
            from: Some(f),
            to: Some(t),
        }) = &self.months_since_first_payment
        {
            if t <= f {
                let at = format!("{path}.monthsSinceFirstPayment.to");
                issues.add_at(
                    split_path(&at),
                    "invalid_range",
                    format!("{at} must be greater than from"),
                );
            }
        }
        if let Some(range) = &self.amount {
            range.check(&format!("{path}.amount"), issues);
        }
    }
}

impl AmountRange {
    /// `min` not negative, `max` above it; `at` is the range's path.
    fn check(&self, at: &str, issues: &mut Issues) {
        if self.min.is_some_and(|m| m < Decimal::ZERO) {
            issues.add_at(
                split_path(&format!("{at}.min")),
                "too_small",
                format!("{at}.min must be >= 0"),
            );
        }
        if let (Some(lo), Some(hi)) = (self.min, self.max) {
            if hi <= lo {
                issues.add_at(
                    split_path(&format!("{at}.max")),
                    "invalid_range",
                    format!("{at}.max must be greater than min"),
                );
            }
        }
    }
}

/// A rule's product or plan ids at `at`: 1-[`MAX_IDS`], each a
/// [`field::Key`] as the postback's `productId` and `planId`.
fn check_ids(at: &str, ids: &[String], issues: &mut Issues) {
    if ids.is_empty() || ids.len() > MAX_IDS {
        issues.add_at(
            split_path(at),
            "invalid_value",
            format!("{at} must list 1-{MAX_IDS} ids"),
        );
    }
    for (n, id) in ids.iter().enumerate() {
        let item = format!("{at}[{n}]");
        if let Err(mut issue) = field::Key::parse(&item, id) {
            issue.path = split_path(&item);
            issues.push(issue);
        }
    }
}

/// Checks a campaign's rules: at most [`MAX_RULES`], each named (1-100
/// characters), its conditions and its pay as the contract bounds them.
pub fn check_rules(rules: &[CommissionRule], issues: &mut Issues) {
    if rules.len() > MAX_RULES {
        issues.add(
            &["commissionRules"],
            "too_big",
            format!("commissionRules holds at most {MAX_RULES} rules"),
        );
    }
    for (n, rule) in rules.iter().enumerate() {
        let path = format!("commissionRules[{n}]");
        let name = format!("{path}.name");
        if let Err(mut issue) = field::Label::parse(&name, &rule.name) {
            issue.path = split_path(&name);
            issues.push(issue);
        }
        rule.when.check(&format!("{path}.when"), issues);
        rule.pay.check(&format!("{path}.pay"), issues);
        if rule.when.conversion_type == Some(ConversionType::Lead)
            && rule.pay.kind == CommissionType::Percentage
        {
            let at = format!("{path}.pay.type");
            issues.add_at(
                split_path(&at),
                "invalid_value",
                format!("{at} must be FIXED for a rule for leads (a lead has no amount)"),
            );
        }
    }
}

/// What a payment may be paid by, in the order they decide: the
/// affiliate's override, the campaign's rules, the affiliate's tier, the
/// campaign's own rate.
#[derive(Debug, Clone, Copy)]
pub struct Terms<'a> {
    pub overrides: Option<&'a Pay>,
    pub rules: &'a [CommissionRule],
    /// The affiliate's tier: its name and pay.
    pub tier: Option<(&'a str, &'a Pay)>,
    pub fallback: &'a Pay,
}

/// How much an earning payment earns, and why: the affiliate's override
/// first, then the first rule that holds (a FIXED rule in another currency
/// does not hold), then its tier, then the campaign's own rate. `Err` with
/// the reason when the deciding pay is a fixed amount in another currency.
pub fn rate(
    terms: &Terms<'_>,
    facts: &Facts<'_>,
) -> (Result<Decimal, CommissionReason>, CommissionSource) {
    let Terms {
        overrides,
        rules,
        tier,
        fallback,
    } = *terms;
    if let Some(pay) = overrides {
        let source = CommissionSource::of(SourceKind::Override);
        return (pay.amount(facts.amount, facts.currency), source);
    }
    for (n, rule) in rules.iter().enumerate() {
        if !rule.when.holds(facts) {
            continue;
        }
        if let Ok(amount) = rule.pay.amount(facts.amount, facts.currency) {
            let source = CommissionSource {
                kind: SourceKind::Rule,
                name: Some(rule.name.clone()),
                index: u32::try_from(n).ok(),
            };
            return (Ok(amount), source);
        }
    }
    if let Some((name, pay)) = tier {
        let source = CommissionSource {
            kind: SourceKind::Tier,
            name: Some(name.to_string()),
            index: None,
        };
        return (pay.amount(facts.amount, facts.currency), source);
    }
    let source = CommissionSource::of(SourceKind::Campaign);
    (fallback.amount(facts.amount, facts.currency), source)
}

/// What a LEAD earns, and why: the first rule for leads that holds (a
/// FIXED rule in another currency does not hold), else the campaign's
/// `leadCommission`; neither: `Err(NO_LEAD_COMMISSION)`. An override and a
/// tier are rates of payments: they do not pay leads.
pub fn rate_lead(
    rules: &[CommissionRule],
    lead: Option<&LeadCommission>,
    facts: &Facts<'_>,
) -> (Result<Decimal, CommissionReason>, CommissionSource) {
    let ruled = Terms {
        overrides: None,
        rules,
        tier: None,
        fallback: &Pay {
            kind: CommissionType::Percentage,
            value: Decimal::ZERO,
            currency: None,
        },
    };
    match rate(&ruled, facts) {
        (amount, source) if source.kind == SourceKind::Rule => (amount, source),
        _ => match lead {
            Some(l) => (
                l.pay().amount(facts.amount, facts.currency),
                CommissionSource::of(SourceKind::Campaign),
            ),
            None => (
                Err(CommissionReason::NoLeadCommission),
                CommissionSource::of(SourceKind::None),
            ),
        },
    }
}

#[cfg(test)]
#[path = "commission_plan_tests.rs"]
mod tests;

/// A preview's facts, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct PreviewRequest {
    pub amount: Decimal,
    pub currency: Currency,
    pub conversion_type: ConversionType,
    pub product_id: Option<String>,
    pub plan_id: Option<String>,
    pub months_since_first_payment: u32,
    /// 0 for a LEAD.
    pub payment_number: u32,
    pub affiliate_id: Option<String>,
    pub customers: Option<u32>,
}

impl PreviewRequest {
    /// The payment's facts at `now`: a later payment's first payment that
    /// many months before (a first payment has none).
    pub fn facts(&self, now: DateTime<Utc>) -> Facts<'_> {
        let months = self.months_since_first_payment;
        let later = self.payment_number > 1 || months > 0;
        Facts {
            amount: self.amount,
            currency: self.currency,
            occurred_at: now,
            conversion_type: self.conversion_type,
            product_id: self.product_id.as_deref(),
            plan_id: self.plan_id.as_deref(),
            first_payment_at: later
                .then(|| now.checked_sub_months(Months::new(months)))
                .flatten(),
            payment_number: self.payment_number,
        }
    }
}

/// Serde for a stored commission plan field (a campaign's rules, an
/// affiliate's override): kept as its JSON text, so its amounts keep their
/// exact digits as the API writes them (a JSON number) and the item holds
/// one plain string, whatever the store's own number types.
pub mod stored_json {
    use serde::de::DeserializeOwned;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Writes the value as its JSON text.
    pub fn serialize<T: Serialize, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
        let text = serde_json::to_string(value).map_err(serde::ser::Error::custom)?;
        s.serialize_str(&text)
    }

    /// Reads the value from its JSON text.
    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(
        d: D,
    ) -> Result<T, D::Error> {
        let text = String::deserialize(d)?;
        serde_json::from_str(&text).map_err(serde::de::Error::custom)
    }

    /// The JSON text a value is stored as (to compare a stored one with).
    pub fn text<T: Serialize>(value: &T) -> Option<String> {
        serde_json::to_string(value).ok()
    }
}
