//! The commission rules (the heart of the seed), as pure functions.
//!
//! - The customer's first attributed payment earns.
//! - A later payment of the same customer (same referral) earns only when the
//!   campaign is `commissionRecurring`, and, with `recurringMonthsLimit = N`,
//!   only while `occurredAt < firstPaymentAt + N calendar months`.
//!   `firstPaymentAt` is the first attributed payment's `occurredAt`, never
//!   the click.
//! - Only ACTIVE affiliates earn.
//! - PERCENTAGE: `amount × value / 100`, rounded half-even to the minor unit of
//!   the payment's currency. FIXED: the campaign's amount, when the payment is
//!   in the campaign's currency; a payment in another currency earns 0 with
//!   reason `CURRENCY_MISMATCH` (no exchange rates are applied, so a
//!   commission is always in the payment's currency).
//!
//! A payment that earns nothing is still recorded, with commission 0 and a
//! [`CommissionReason`].

use chrono::{DateTime, Months, Utc};
use rust_decimal::Decimal;

use crate::campaign::Campaign;
use crate::commission_plan::{self, CommissionSource, Facts, Pay, SourceKind, Terms};
pub use crate::commission_terms::CommissionReason;
use crate::commission_terms::ConversionType;
use crate::commission_tiers::tier_for;
use crate::money::Currency;

/// Who a payment would earn for: whether it may earn (ACTIVE), the
/// commission its merchant set for it alone, the distinct paying customers
/// it referred (this payment's customer included), and whether this
/// customer's lead was paid before.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Earner<'a> {
    pub active: bool,
    pub commission_override: Option<&'a Pay>,
    pub customers: u32,
    pub lead_paid: bool,
}

/// What the rules decided for one payment.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// In the payment's currency, rounded to its minor unit.
    pub commission: Decimal,
    /// Set when the payment earns nothing because of a rule.
    pub reason: Option<CommissionReason>,
    /// Not the customer's first attributed payment.
    pub is_recurring: bool,
    /// What decided the amount (NONE when a rule made it 0).
    pub source: CommissionSource,
}

impl Decision {
    fn zero(currency: Currency, reason: CommissionReason, is_recurring: bool) -> Decision {
        Decision {
            commission: currency.round(Decimal::ZERO),
            reason: Some(reason),
            is_recurring,
            source: CommissionSource::of(SourceKind::None),
        }
    }
}

/// The decision for a payment no affiliate could be found for.
pub fn unattributed(facts: &Facts<'_>) -> Decision {
    Decision::zero(facts.currency, CommissionReason::Unattributed, false)
}

/// Whether a later payment at `occurred_at` is still inside the recurring
/// window that opened with the first attributed payment at `first_payment_at`.
/// `None` (lifetime) is always inside; a window so long it overflows the
/// calendar is treated as lifetime.
pub fn inside_recurring_window(
    first_payment_at: DateTime<Utc>,
    months_limit: Option<u32>,
    occurred_at: DateTime<Utc>,
) -> bool {
    match months_limit {
        None => true,
        Some(n) => match first_payment_at.checked_add_months(Months::new(n)) {
            Some(end) => occurred_at < end,
            None => true,
        },
    }
}

/// The commission of an attributed payment: whether it earns (the
/// affiliate's status, the recurring rules), then how much and why
/// (`commission_plan::rate`: the override, the campaign's rules, its own
/// rate). `facts.first_payment_at` is the referral's first attributed
/// payment when one was recorded before; `None` makes this payment the first.
pub fn decide(campaign: &Campaign, earner: &Earner<'_>, facts: &Facts<'_>) -> Decision {
    if facts.conversion_type == ConversionType::Lead {
        return decide_lead(campaign, earner, facts);
    }
    let is_recurring = facts.first_payment_at.is_some();
    if !earner.active {
        return Decision::zero(
            facts.currency,
            CommissionReason::AffiliateNotActive,
            is_recurring,
        );
    }
    if let Some(first) = facts.first_payment_at {
        if !campaign.commission_recurring {
            return Decision::zero(facts.currency, CommissionReason::NotRecurring, true);
        }
        if !inside_recurring_window(first, campaign.recurring_months_limit, facts.occurred_at) {
            return Decision::zero(facts.currency, CommissionReason::RecurringWindowEnded, true);
        }
    }
    let own = campaign.own_pay();
    let terms = Terms {
        overrides: earner.commission_override,
        rules: &campaign.commission_rules,
        tier: tier_for(&campaign.tiers, earner.customers).map(|(_, t)| (t.name.as_str(), &t.pay)),
        fallback: &own,
    };
    decided(commission_plan::rate(&terms, facts), facts, is_recurring)
}

/// A LEAD: paid once per customer, by a rule for leads or the campaign's
/// `leadCommission`, to an ACTIVE affiliate; never recurring.
fn decide_lead(campaign: &Campaign, earner: &Earner<'_>, facts: &Facts<'_>) -> Decision {
    if !earner.active {
        return Decision::zero(facts.currency, CommissionReason::AffiliateNotActive, false);
    }
    if earner.lead_paid {
        return Decision::zero(facts.currency, CommissionReason::LeadAlreadyRewarded, false);
    }
    let rated = commission_plan::rate_lead(
        &campaign.commission_rules,
        campaign.lead_commission.as_ref(),
        facts,
    );
    decided(rated, facts, false)
}

/// The decision of a rate: its amount and source, or 0 with its reason.
fn decided(
    (amount, source): (Result<Decimal, CommissionReason>, CommissionSource),
    facts: &Facts<'_>,
    is_recurring: bool,
) -> Decision {
    match amount {
        Ok(commission) => Decision {
            commission,
            reason: None,
            is_recurring,
            source,
        },
        Err(reason) => Decision::zero(facts.currency, reason, is_recurring),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    use crate::timestamp::parse_datetime;

    fn dec(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    fn cur(c: &str) -> Currency {
        Currency::parse("currency", c).unwrap()
    }

    fn at(s: &str) -> DateTime<Utc> {
        parse_datetime(s).unwrap()
    }

    fn campaign(json: serde_json::Value) -> Campaign {
        let mut base = serde_json::json!({
            "name": "C", "commissionType": "PERCENTAGE", "commissionValue": 10,
        });
        for (k, v) in json.as_object().unwrap() {
            base[k] = v.clone();
        }
        Campaign::create(crate::campaign::CampaignDraft::from_json(&base), Utc::now()).unwrap()
    }

    /// A payment, as these tests give it.
    struct Payment {
        amount: Decimal,
        currency: Currency,
        occurred_at: DateTime<Utc>,
    }

    fn pay(amount: &str, currency: &str, when: &str) -> Payment {
        Payment {
            amount: dec(amount),
            currency: cur(currency),
            occurred_at: at(when),
        }
    }

    /// A sale's facts, with no product or plan.
    fn facts(p: &Payment, first: Option<DateTime<Utc>>) -> Facts<'static> {
        Facts {
            amount: p.amount,
            currency: p.currency,
            occurred_at: p.occurred_at,
            conversion_type: crate::conversion::ConversionType::Sale,
            product_id: None,
            plan_id: None,
            first_payment_at: first,
            payment_number: if first.is_some() { 2 } else { 1 },
        }
    }

    /// `super::decide` for a sale with no product, plan or override.
    fn decide(c: &Campaign, active: bool, p: &Payment, first: Option<DateTime<Utc>>) -> Decision {
        let facts = facts(p, first);
        let earner = Earner {
            active,
            ..Earner::default()
        };
        super::decide(c, &earner, &facts)
    }

    /// The campaign's own rate on a payment.
    fn rate(c: &Campaign, p: &Payment) -> Result<Decimal, CommissionReason> {
        c.own_pay().amount(p.amount, p.currency)
    }

    #[test]
    fn percentages_round_half_even_to_the_minor_unit() {
        let c = campaign(serde_json::json!({}));
        let d = decide(&c, true, &pay("19.99", "USD", "2026-01-01T00:00:00Z"), None);
        assert_eq!(d.commission.to_string(), "2.00");
        assert_eq!(d.reason, None);
        assert!(!d.is_recurring);

        let c15 = campaign(serde_json::json!({"commissionValue": 15}));
        let d = decide(
            &c15,
            true,
            &pay("1000", "JPY", "2026-01-01T00:00:00Z"),
            None,
        );
        assert_eq!(d.commission.to_string(), "150");

        // 0.125 -> 0.12 and 0.135 -> 0.14 (banker's rounding), at 12.5%.
        let c125 = campaign(serde_json::json!({"commissionValue": 12.5}));
        let r = |a: &str| rate(&c125, &pay(a, "USD", "2026-01-01T00:00:00Z")).unwrap();
        assert_eq!(r("1.00").to_string(), "0.12");
        assert_eq!(r("1.08").to_string(), "0.14");
        // KWD has three decimals; 1.005 KWD at 10% = 0.1005 -> 0.100 (half-even).
        let d = decide(&c, true, &pay("1.005", "KWD", "2026-01-01T00:00:00Z"), None);
        assert_eq!(d.commission.to_string(), "0.100");
        // A rate that rounds to nothing earns 0 without a rule reason.
        let d = decide(&c, true, &pay("0.01", "USD", "2026-01-01T00:00:00Z"), None);
        assert_eq!(d.commission.to_string(), "0.00");
        assert_eq!(d.reason, None);
    }

    #[test]
    fn fixed_commission_needs_the_campaign_currency() {
        let c = campaign(serde_json::json!({
            "commissionType": "FIXED", "commissionValue": 25, "currency": "EUR",
        }));
        let d = decide(&c, true, &pay("9.99", "EUR", "2026-01-01T00:00:00Z"), None);
        assert_eq!(d.commission.to_string(), "25.00");
        assert_eq!(d.reason, None);
        let d = decide(&c, true, &pay("100", "USD", "2026-01-01T00:00:00Z"), None);
        assert_eq!(d.commission.to_string(), "0.00");
        assert_eq!(d.reason, Some(CommissionReason::CurrencyMismatch));
        let jpy = campaign(serde_json::json!({
            "commissionType": "FIXED", "commissionValue": 500, "currency": "JPY",
        }));
        let d = decide(
            &jpy,
            true,
            &pay("3000", "JPY", "2026-01-01T00:00:00Z"),
            None,
        );
        assert_eq!(d.commission.to_string(), "500");
    }

    #[test]
    fn only_active_affiliates_earn() {
        let c = campaign(serde_json::json!({}));
        let d = decide(&c, false, &pay("100", "USD", "2026-01-01T00:00:00Z"), None);
        assert_eq!(d.commission, Decimal::ZERO);
        assert_eq!(d.reason, Some(CommissionReason::AffiliateNotActive));
        let p = pay("100", "USD", "2026-01-01T00:00:00Z");
        let u = unattributed(&facts(&p, None));
        assert_eq!(u.commission.to_string(), "0.00");
        assert_eq!(u.reason, Some(CommissionReason::Unattributed));
    }

    #[test]
    fn non_recurring_campaigns_pay_the_first_payment_only() {
        let c = campaign(serde_json::json!({"commissionRecurring": false}));
        let first = at("2026-01-10T00:00:00Z");
        let d = decide(&c, true, &pay("50", "USD", "2026-01-10T00:00:00Z"), None);
        assert_eq!(d.commission.to_string(), "5.00");
        let d = decide(
            &c,
            true,
            &pay("50", "USD", "2026-02-10T00:00:00Z"),
            Some(first),
        );
        assert_eq!(d.commission, Decimal::ZERO);
        assert_eq!(d.reason, Some(CommissionReason::NotRecurring));
        assert!(d.is_recurring);
    }

    #[test]
    fn limited_recurring_windows_count_calendar_months_from_the_first_payment() {
        let c = campaign(serde_json::json!({
            "commissionRecurring": true, "recurringMonthsLimit": 12,
        }));
        let first = Some(at("2025-01-15T10:00:00Z"));
        let earns = |when: &str| {
            let d = decide(&c, true, &pay("100", "USD", when), first);
            assert!(d.is_recurring);
            d.reason.is_none()
        };
        assert!(earns("2025-12-15T10:00:00Z"), "11 months later");
        assert!(earns("2026-01-15T09:59:59.999Z"), "just inside");
        assert!(
            !earns("2026-01-15T10:00:00Z"),
            "the window end is exclusive"
        );
        assert!(!earns("2026-02-15T10:00:00Z"), "13 months later");
        let d = decide(&c, true, &pay("100", "USD", "2026-02-15T10:00:00Z"), first);
        assert_eq!(d.reason, Some(CommissionReason::RecurringWindowEnded));
        assert_eq!(d.commission.to_string(), "0.00");
    }

    #[test]
    fn calendar_months_clamp_to_the_end_of_short_months() {
        // 31 January + 1 month = 28 February (2026 is not a leap year).
        let first = at("2026-01-31T12:00:00Z");
        assert!(inside_recurring_window(
            first,
            Some(1),
            at("2026-02-28T11:59:59Z")
        ));
        assert!(!inside_recurring_window(
            first,
            Some(1),
            at("2026-02-28T12:00:00Z")
        ));
        // 29 February + 12 months = 28 February next year.
        let leap = at("2028-02-29T00:00:00Z");
        assert!(!inside_recurring_window(
            leap,
            Some(12),
            at("2029-02-28T00:00:00Z")
        ));
        assert!(inside_recurring_window(
            leap,
            Some(12),
            at("2029-02-27T23:59:59Z")
        ));
    }

    #[test]
    fn lifetime_recurring_never_ends() {
        let c = campaign(serde_json::json!({"commissionRecurring": true}));
        assert_eq!(c.recurring_months_limit, None);
        let d = decide(
            &c,
            true,
            &pay("20", "EUR", "2031-01-01T00:00:00Z"),
            Some(at("2026-01-01T00:00:00Z")),
        );
        assert_eq!(d.commission.to_string(), "2.00");
        assert!(d.is_recurring);
        assert_eq!(d.reason, None);
    }

    #[test]
    fn the_affiliate_rule_comes_before_the_recurring_rules() {
        let c = campaign(serde_json::json!({"commissionRecurring": false}));
        let d = decide(
            &c,
            false,
            &pay("20", "EUR", "2026-03-01T00:00:00Z"),
            Some(at("2026-01-01T00:00:00Z")),
        );
        assert_eq!(d.reason, Some(CommissionReason::AffiliateNotActive));
        assert!(d.is_recurring);
    }
}
