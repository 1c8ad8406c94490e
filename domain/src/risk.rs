//! Risk: explainable flags on conversions and applications.
//!
//! Each rule is a pure function of facts the click, postback or sign-up
//! already reads (contract section 12). A flag names its code and says what
//! matched without personal data: never an e-mail, an address or a hash.
//! A record's level is its highest flag's; a HIGH flag on a campaign that
//! holds flagged conversions makes the conversion ON_HOLD.

use std::collections::HashSet;
use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::enums::wire_enum;
use crate::money::Currency;
use crate::patch::Patch;
use crate::schema::Ranged;
use crate::timestamp::serde_ts;
use crate::validation::Issues;

wire_enum! {
    /// Why a record was flagged.
    #[derive(Hash)]
    pub enum RiskCode {
        /// The customer's e-mail is the affiliate's own, or the customer is the affiliate's
        /// own referral (HIGH).
        SelfReferral = "SELF_REFERRAL",
        /// The attributing click came from the network the affiliate signed up from, on the
        /// same day (HIGH).
        SameNetwork = "SAME_NETWORK",
        /// More than `maxClicksPerHour` clicks for one code from one network within an hour;
        /// the clicks beyond never attribute (LOW on a conversion that names one).
        ClickFlood = "CLICK_FLOOD",
        /// More than `maxConversionsPerHour` conversions for one affiliate and customer, or
        /// through clicks from one network, within an hour (HIGH).
        RapidConversions = "RAPID_CONVERSIONS",
        /// The amount is above the campaign's `reviewAbove` (HIGH).
        LargeAmount = "LARGE_AMOUNT",
        /// The e-mail's domain is a known disposable-address provider (LOW).
        DisposableEmail = "DISPOSABLE_EMAIL",
    }
}

wire_enum! {
    /// A record's risk: its highest flag's level; NONE without flags.
    #[derive(PartialOrd, Ord, Default)]
    pub enum RiskLevel [ignore_case] {
        /// No flag.
        #[default]
        None = "NONE",
        /// Only LOW flags: worth a look, nothing is held.
        Low = "LOW",
        /// A HIGH flag: held when the campaign holds flagged conversions.
        High = "HIGH",
    }
}

impl RiskCode {
    /// The level a flag of this code gives.
    pub fn level(self) -> RiskLevel {
        match self {
            RiskCode::ClickFlood | RiskCode::DisposableEmail => RiskLevel::Low,
            _ => RiskLevel::High,
        }
    }
}

/// One reason a record was flagged.
#[derive(utoipa::ToSchema, Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schema(as = RiskFlag)]
pub struct Flag {
    pub code: RiskCode,
    /// What matched, without personal data.
    pub message: String,
    #[serde(with = "serde_ts")]
    #[schema(value_type = crate::timestamp::Timestamp)]
    pub detected_at: DateTime<Utc>,
}

impl Flag {
    fn new(code: RiskCode, message: impl Into<String>, at: DateTime<Utc>) -> Flag {
        Flag {
            code,
            message: message.into(),
            detected_at: at,
        }
    }
}

/// A record's risk: its level and the flags behind it (kept as history).
#[derive(utoipa::ToSchema, Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Risk {
    /// The highest flag's level; NONE without flags.
    pub level: RiskLevel,
    pub flags: Vec<Flag>,
}

impl Risk {
    /// The risk of these flags.
    pub fn of(flags: Vec<Flag>) -> Risk {
        let level = flags
            .iter()
            .map(|f| f.code.level())
            .max()
            .unwrap_or_default();
        Risk { level, flags }
    }

    /// No flag.
    pub fn is_clear(&self) -> bool {
        self.flags.is_empty()
    }

    /// Whether a campaign with these settings holds a conversion of this risk.
    pub fn holds(&self, settings: &RiskSettings) -> bool {
        settings.hold_flagged && self.level == RiskLevel::High
    }
}

/// Default `maxClicksPerHour`.
pub const DEFAULT_MAX_CLICKS_PER_HOUR: u32 = 30;
/// Default `maxConversionsPerHour`.
pub const DEFAULT_MAX_CONVERSIONS_PER_HOUR: u32 = 10;

/// A campaign's risk settings as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RiskSettings {
    pub hold_flagged: bool,
    pub review_above: Option<Decimal>,
    pub max_clicks_per_hour: u32,
    pub max_conversions_per_hour: u32,
}

impl Default for RiskSettings {
    fn default() -> Self {
        RiskSettings {
            hold_flagged: true,
            review_above: None,
            max_clicks_per_hour: DEFAULT_MAX_CLICKS_PER_HOUR,
            max_conversions_per_hour: DEFAULT_MAX_CONVERSIONS_PER_HOUR,
        }
    }
}

/// A campaign's risk settings as a request changes them: on create every
/// field is optional (its default applies); on update only the fields sent
/// change (`wire::risk::RiskSettingsInput` is their body).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RiskChanges {
    pub hold_flagged: Patch<bool>,
    pub review_above: Patch<crate::money::JsonDecimal>,
    /// Judged against the body's range (`wire::risk`).
    pub max_clicks_per_hour: Patch<Ranged>,
    pub max_conversions_per_hour: Patch<Ranged>,
}

/// Test inputs written as the JSON bodies that carry them (each count taken
/// as within its range: ranges are judged where the body is read).
#[cfg(test)]
impl RiskChanges {
    pub(crate) fn from_json(body: &serde_json::Value) -> RiskChanges {
        use crate::patch::from_json::patch;
        RiskChanges {
            hold_flagged: patch(body, "holdFlagged"),
            review_above: patch(body, "reviewAbove"),
            max_clicks_per_hour: patch::<u32>(body, "maxClicksPerHour").map(Ranged::ok),
            max_conversions_per_hour: patch::<u32>(body, "maxConversionsPerHour").map(Ranged::ok),
        }
    }
}

impl RiskSettings {
    /// These settings with `input` applied; issues are reported under `risk`.
    pub fn apply(&self, input: RiskChanges, issues: &mut Issues) -> RiskSettings {
        let mut s = self.clone();
        if let Some(v) = required(input.hold_flagged, "holdFlagged", issues) {
            s.hold_flagged = v;
        }
        match input.review_above {
            Patch::Value(v) => match v.0 {
                Ok(d) if crate::field::Amount::parse("risk.reviewAbove", d).is_ok() => {
                    s.review_above = Some(d)
                }
                _ => issues.add(
                    &["risk", "reviewAbove"],
                    "invalid_value",
                    "risk.reviewAbove must be a number above 0 and below 10^12 with at most 28 \
                     decimals, or null",
                ),
            },
            Patch::Null => s.review_above = None,
            Patch::Absent => {}
        }
        for (name, value, target) in [
            (
                "maxClicksPerHour",
                input.max_clicks_per_hour,
                &mut s.max_clicks_per_hour,
            ),
            (
                "maxConversionsPerHour",
                input.max_conversions_per_hour,
                &mut s.max_conversions_per_hour,
            ),
        ] {
            if let Some(v) = required(value, name, issues) {
                *target = v.take(issues);
            }
        }
        s
    }
}

/// A field of `risk` that cannot be null: an `invalid_type` issue when it is.
fn required<T>(value: Patch<T>, name: &str, issues: &mut Issues) -> Option<T> {
    match value {
        Patch::Null => {
            let message = format!("risk.{name} cannot be null");
            issues.add(&["risk", name], "invalid_type", message);
            None
        }
        other => other.apply_opt(None),
    }
}

/// Whether a click is one of the ones beyond the campaign's hourly limit:
/// `seen` counts the clicks for its code from its network this hour, itself included.
pub fn click_flood(seen: u64, settings: &RiskSettings) -> bool {
    seen > u64::from(settings.max_clicks_per_hour)
}

/// Which hourly conversion limits a conversion went past (its counters said so).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OverLimit {
    /// For its affiliate and customer identity, by `occurredAt`.
    pub customer: bool,
    /// Through clicks from its click's network, by recording time.
    pub network: bool,
}

/// What the postback read that the conversion rules look at.
#[derive(Debug, Clone, Default)]
pub struct ConversionFacts<'a> {
    pub amount: Decimal,
    pub currency: Option<Currency>,
    /// The e-mail hashes of the payment's identities and of the referrals
    /// that attributed it.
    pub customer_email_hashes: Vec<&'a str>,
    /// The affiliate's own e-mail hash.
    pub affiliate_email_hash: Option<&'a str>,
    /// The network of the click (or the session's click) that attributed it.
    pub click_network: Option<&'a str>,
    /// The network the affiliate's public sign-up came from.
    pub signup_network: Option<&'a str>,
    /// The postback named a click that was flagged CLICK_FLOOD.
    pub flooded_click: bool,
    pub over: OverLimit,
}

/// The flags of a new attributed conversion, in the codes' order.
pub fn assess_conversion(
    f: &ConversionFacts<'_>,
    s: &RiskSettings,
    at: DateTime<Utc>,
) -> Vec<Flag> {
    let mut flags = Vec::new();
    if let Some(mine) = f.affiliate_email_hash {
        if f.customer_email_hashes.contains(&mine) {
            flags.push(Flag::new(
                RiskCode::SelfReferral,
                "the customer's e-mail is the affiliate's own",
                at,
            ));
        }
    }
    if let (Some(click), Some(signup)) = (f.click_network, f.signup_network) {
        if click == signup {
            flags.push(Flag::new(
                RiskCode::SameNetwork,
                "the attributing click came from the network the affiliate signed up from, \
                 the same day",
                at,
            ));
        }
    }
    if f.flooded_click {
        flags.push(Flag::new(
            RiskCode::ClickFlood,
            format!(
                "the click named was beyond {} clicks for its code from one network within an \
                 hour, and was not used for attribution",
                s.max_clicks_per_hour
            ),
            at,
        ));
    }
    if let Some(flag) = rapid_conversions(f.over, s, at) {
        flags.push(flag);
    }
    if let Some(flag) = large_amount(f.amount, f.currency, s, at) {
        flags.push(flag);
    }
    flags
}

fn rapid_conversions(over: OverLimit, s: &RiskSettings, at: DateTime<Utc>) -> Option<Flag> {
    let max = s.max_conversions_per_hour;
    let message = match (over.customer, over.network) {
        (false, false) => return None,
        (true, false) => {
            format!("more than {max} conversions for this affiliate and customer within an hour")
        }
        (false, true) => {
            format!("more than {max} conversions through clicks from one network within an hour")
        }
        (true, true) => format!(
            "more than {max} conversions for this affiliate and customer, and through clicks \
             from one network, within an hour"
        ),
    };
    Some(Flag::new(RiskCode::RapidConversions, message, at))
}

fn large_amount(
    amount: Decimal,
    currency: Option<Currency>,
    s: &RiskSettings,
    at: DateTime<Utc>,
) -> Option<Flag> {
    let limit = s.review_above.filter(|limit| amount > *limit)?;
    let code = currency.map_or("", |c| c.code());
    Some(Flag::new(
        RiskCode::LargeAmount,
        format!("the amount is above the campaign's review threshold of {limit} {code}")
            .trim_end()
            .to_string(),
        at,
    ))
}

/// The flags of an application or sign-up with this e-mail.
pub fn assess_signup(email: &str, at: DateTime<Utc>) -> Vec<Flag> {
    let domain = email.rsplit_once('@').map_or("", |(_, d)| d);
    match is_disposable(domain) {
        true => vec![Flag::new(
            RiskCode::DisposableEmail,
            "the e-mail's domain is a known disposable-address provider",
            at,
        )],
        false => Vec::new(),
    }
}

/// Whether a domain (or a parent domain of it) is on the shipped list of
/// disposable-address providers (`domain/data/disposable_email_domains.txt`).
pub fn is_disposable(domain: &str) -> bool {
    static LIST: OnceLock<HashSet<&'static str>> = OnceLock::new();
    let list = LIST.get_or_init(|| {
        include_str!("../data/disposable_email_domains.txt")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect()
    });
    let domain = domain.trim().trim_end_matches('.').to_ascii_lowercase();
    let mut rest = domain.as_str();
    loop {
        if list.contains(rest) {
            return true;
        }
        match rest.split_once('.') {
            Some((_, parent)) if parent.contains('.') => rest = parent,
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> DateTime<Utc> {
        crate::timestamp::parse_datetime("2026-11-25T10:00:00Z").unwrap()
    }

    fn codes(flags: &[Flag]) -> Vec<RiskCode> {
        flags.iter().map(|f| f.code).collect()
    }

    #[test]
    fn click_flood_flags_only_the_clicks_beyond_the_limit() {
        let s = RiskSettings::default();
        for (seen, flooded) in [
            (1, false),
            (29, false),
            (30, false),
            (31, true),
            (500, true),
        ] {
            assert_eq!(click_flood(seen, &s), flooded, "{seen} clicks");
        }
        let tight = RiskSettings {
            max_clicks_per_hour: 1,
            ..RiskSettings::default()
        };
        assert!(!click_flood(1, &tight));
        assert!(click_flood(2, &tight));
    }

    #[test]
    fn each_conversion_rule_flags_at_its_edge_and_not_below() {
        let s = RiskSettings {
            review_above: Some(Decimal::from(1000)),
            ..RiskSettings::default()
        };
        let base = ConversionFacts {
            amount: Decimal::from(1000),
            currency: Currency::parse("c", "USD").ok(),
            customer_email_hashes: vec!["aaa"],
            affiliate_email_hash: Some("bbb"),
            click_network: Some("n1"),
            signup_network: Some("n2"),
            ..ConversionFacts::default()
        };
        assert!(assess_conversion(&base, &s, at()).is_empty(), "near misses");
        let cases: Vec<(ConversionFacts, RiskCode)> = vec![
            (
                ConversionFacts {
                    customer_email_hashes: vec!["aaa", "bbb"],
                    ..base.clone()
                },
                RiskCode::SelfReferral,
            ),
            (
                ConversionFacts {
                    click_network: Some("n2"),
                    ..base.clone()
                },
                RiskCode::SameNetwork,
            ),
            (
                ConversionFacts {
                    flooded_click: true,
                    ..base.clone()
                },
                RiskCode::ClickFlood,
            ),
            (
                ConversionFacts {
                    over: OverLimit {
                        customer: true,
                        network: false,
                    },
                    ..base.clone()
                },
                RiskCode::RapidConversions,
            ),
            (
                ConversionFacts {
                    over: OverLimit {
                        customer: false,
                        network: true,
                    },
                    ..base.clone()
                },
                RiskCode::RapidConversions,
            ),
            (
                ConversionFacts {
                    amount: Decimal::new(100001, 2),
                    ..base.clone()
                },
                RiskCode::LargeAmount,
            ),
        ];
        for (facts, code) in cases {
            let flags = assess_conversion(&facts, &s, at());
            assert_eq!(codes(&flags), vec![code]);
            assert_eq!(Risk::of(flags).level, code.level());
        }
    }

    #[test]
    fn absent_facts_never_match_each_other() {
        let s = RiskSettings::default();
        let f = ConversionFacts {
            amount: Decimal::from(u32::MAX),
            ..ConversionFacts::default()
        };
        assert!(assess_conversion(&f, &s, at()).is_empty());
    }

    #[test]
    fn messages_carry_no_personal_data() {
        let s = RiskSettings {
            review_above: Some(Decimal::ONE),
            ..RiskSettings::default()
        };
        let hash = crate::referral::email_hash("ann@example.com");
        let f = ConversionFacts {
            amount: Decimal::TEN,
            currency: None,
            customer_email_hashes: vec![&hash],
            affiliate_email_hash: Some(&hash),
            click_network: Some("netnetnet"),
            signup_network: Some("netnetnet"),
            flooded_click: true,
            over: OverLimit {
                customer: true,
                network: true,
            },
        };
        let flags = assess_conversion(&f, &s, at());
        assert_eq!(flags.len(), 5);
        for flag in flags.iter().chain(&assess_signup("x@mailinator.com", at())) {
            assert!(!flag.message.contains(&hash) && !flag.message.contains("netnetnet"));
            assert!(!flag.message.contains('@') && !flag.message.contains("mailinator"));
        }
    }

    #[test]
    fn levels_are_the_highest_flags() {
        assert_eq!(Risk::of(vec![]).level, RiskLevel::None);
        let low = assess_signup("a@mailinator.com", at());
        assert_eq!(Risk::of(low.clone()).level, RiskLevel::Low);
        let mut both = low;
        both.push(Flag::new(RiskCode::LargeAmount, "x", at()));
        let risk = Risk::of(both);
        assert_eq!(risk.level, RiskLevel::High);
        assert!(risk.holds(&RiskSettings::default()));
        let lax = RiskSettings {
            hold_flagged: false,
            ..RiskSettings::default()
        };
        assert!(!risk.holds(&lax));
        assert!(!Risk::of(assess_signup("a@mailinator.com", at())).holds(&RiskSettings::default()));
        assert_eq!(RiskLevel::parse("high"), Some(RiskLevel::High));
    }

    #[test]
    fn disposable_domains_match_the_shipped_list_and_its_subdomains() {
        for (email, flagged) in [
            ("a@mailinator.com", true),
            ("a@MAILINATOR.com", true),
            ("a@x.mailinator.com", true),
            ("a@yopmail.com", true),
            ("a@example.com", false),
            ("a@mailinator.com.example.org", false),
            ("a@com", false),
            ("no-at-sign", false),
        ] {
            assert_eq!(!assess_signup(email, at()).is_empty(), flagged, "{email}");
        }
    }
}
