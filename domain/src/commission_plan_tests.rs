//! Table tests of `commission_plan`: every condition at, below and above its
//! edges, the precedence (override, rule, campaign), and the checks.

use super::*;
use serde_json::json;

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn usd() -> Currency {
    Currency::parse("currency", "USD").unwrap()
}

fn facts<'a>(amount: &str, when: &str, first: Option<&str>) -> Facts<'a> {
    Facts {
        amount: amount.parse().unwrap(),
        currency: usd(),
        occurred_at: at(when),
        conversion_type: ConversionType::Sale,
        product_id: None,
        plan_id: None,
        first_payment_at: first.map(at),
        payment_number: if first.is_some() { 2 } else { 1 },
    }
}

/// `rate` with no tier.
fn rated(
    overrides: Option<&Pay>,
    rules: &[CommissionRule],
    own: &Pay,
    f: &Facts<'_>,
) -> (Result<Decimal, CommissionReason>, CommissionSource) {
    let terms = Terms {
        overrides,
        rules,
        tier: None,
        fallback: own,
    };
    rate(&terms, f)
}

fn rule(value: serde_json::Value) -> CommissionRule {
    serde_json::from_value(value).unwrap()
}

fn pct(v: u32) -> Pay {
    serde_json::from_value(json!({"type": "PERCENTAGE", "value": v})).unwrap()
}

#[test]
fn months_since_the_first_payment_are_whole_calendar_months() {
    let cases = [
        (None, "2026-03-15T00:00:00Z", 0),
        // As the recurring window counts: a month from 31 January ends on 28 February.
        (Some("2026-01-31T10:00:00Z"), "2026-02-28T09:59:59Z", 0),
        (Some("2026-01-31T10:00:00Z"), "2026-02-28T10:00:00Z", 1),
        (Some("2026-01-31T10:00:00Z"), "2026-03-31T09:59:59Z", 1),
        (Some("2026-01-31T10:00:00Z"), "2026-03-31T10:00:00Z", 2),
        (Some("2026-01-15T00:00:00Z"), "2027-01-15T00:00:00Z", 12),
        (Some("2026-01-15T00:00:00Z"), "2027-01-14T23:59:59Z", 11),
    ];
    for (first, when, months) in cases {
        let f = facts("100", when, first);
        assert_eq!(
            f.months_since_first_payment(),
            months,
            "{first:?} -> {when}"
        );
    }
}

#[test]
fn each_condition_holds_at_and_inside_its_edges_only() {
    let months = When {
        months_since_first_payment: Some(MonthRange {
            from: Some(1),
            to: Some(12),
        }),
        ..When::default()
    };
    let first = Some("2026-01-01T00:00:00Z");
    for (when, holds) in [
        ("2026-01-31T00:00:00Z", false),
        ("2026-02-01T00:00:00Z", true),
        ("2026-12-31T23:59:59Z", true),
        ("2027-01-01T00:00:00Z", false),
    ] {
        assert_eq!(months.holds(&facts("10", when, first)), holds, "{when}");
    }
    let amount = When {
        amount: Some(AmountRange {
            min: Some("100".parse().unwrap()),
            max: Some("500".parse().unwrap()),
        }),
        ..When::default()
    };
    for (a, holds) in [
        ("99.99", false),
        ("100", true),
        ("499.99", true),
        ("500", false),
    ] {
        let f = facts(a, "2026-01-01T00:00:00Z", None);
        assert_eq!(amount.holds(&f), holds, "{a}");
    }
    let products = When {
        product_ids: Some(vec!["prod_a".into(), "prod_b".into()]),
        plan_ids: Some(vec!["price_y".into()]),
        ..When::default()
    };
    let mut f = facts("10", "2026-01-01T00:00:00Z", None);
    assert!(!products.holds(&f), "no product named");
    f.product_id = Some("prod_b");
    assert!(!products.holds(&f), "no plan named");
    f.plan_id = Some("price_y");
    assert!(products.holds(&f));
    f.product_id = Some("prod_c");
    assert!(!products.holds(&f));
    let sale = When {
        conversion_type: Some(ConversionType::Sale),
        ..When::default()
    };
    assert!(sale.holds(&f) && When::default().holds(&f));
}

#[test]
fn the_override_decides_first_then_the_first_rule_that_holds_then_the_campaign() {
    let rules = vec![
        rule(
            json!({"name": "Pro yearly", "when": {"planIds": ["price_y"]},
                    "pay": {"type": "FIXED", "value": 25, "currency": "EUR"}}),
        ),
        rule(
            json!({"name": "First year", "when": {"monthsSinceFirstPayment": {"to": 12}},
                    "pay": {"type": "PERCENTAGE", "value": 50}}),
        ),
        rule(json!({"name": "Big", "when": {"amount": {"min": 1000}},
                    "pay": {"type": "PERCENTAGE", "value": 30}})),
    ];
    let own = pct(20);
    let first = Some("2026-01-01T00:00:00Z");
    let year_one = facts("200", "2026-06-01T00:00:00Z", first);
    let (amount, source) = rated(None, &rules, &own, &year_one);
    assert_eq!(amount.unwrap().to_string(), "100.00");
    assert_eq!(
        (source.kind, source.name.as_deref(), source.index),
        (SourceKind::Rule, Some("First year"), Some(1))
    );
    // A FIXED rule in another currency does not hold: the next one decides.
    let mut yearly = year_one.clone();
    yearly.plan_id = Some("price_y");
    assert_eq!(rated(None, &rules, &own, &yearly).1.index, Some(1));
    let later = facts("2000", "2027-06-01T00:00:00Z", first);
    assert_eq!(
        rated(None, &rules, &own, &later).1.name.as_deref(),
        Some("Big")
    );
    let small_later = facts("200", "2027-06-01T00:00:00Z", first);
    let (amount, source) = rated(None, &rules, &own, &small_later);
    assert_eq!(
        (amount.unwrap().to_string(), source.kind),
        ("40.00".into(), SourceKind::Campaign)
    );
    let overridden = pct(5);
    let (amount, source) = rated(Some(&overridden), &rules, &own, &year_one);
    assert_eq!(
        (amount.unwrap().to_string(), source),
        ("10.00".into(), CommissionSource::of(SourceKind::Override))
    );
    // An override fixed in another currency earns nothing, and says why.
    let eur: Pay =
        serde_json::from_value(json!({"type": "FIXED", "value": 5, "currency": "EUR"})).unwrap();
    let (amount, _) = rated(Some(&eur), &rules, &own, &year_one);
    assert_eq!(amount, Err(CommissionReason::CurrencyMismatch));
}

/// The issue paths of checking `rules`.
fn paths(rules: serde_json::Value) -> Vec<serde_json::Value> {
    let rules: Vec<CommissionRule> = serde_json::from_value(rules).unwrap();
    let mut issues = Issues::new();
    check_rules(&rules, &mut issues);
    match issues.finish() {
        Ok(()) => Vec::new(),
        Err(crate::error::Error::Validation(all)) => all
            .into_iter()
            .map(|i| serde_json::Value::Array(i.path))
            .collect(),
        Err(other) => panic!("{other:?}"),
    }
}

#[test]
fn every_limit_is_refused_naming_its_path() {
    let ok = json!({"name": "R", "pay": {"type": "PERCENTAGE", "value": 10}});
    assert!(paths(json!([ok])).is_empty());
    assert_eq!(
        paths(json!(vec![ok.clone(); 21])),
        vec![json!(["commissionRules"])]
    );
    let bad = json!([ok, ok, ok,
        {"name": "", "when": {"productIds": [], "planIds": ["", "p"],
                              "monthsSinceFirstPayment": {"from": 3, "to": 3},
                              "amount": {"min": 10, "max": 5}},
         "pay": {"type": "FIXED", "value": 10}},
        {"name": "P", "pay": {"type": "PERCENTAGE", "value": 101, "currency": "USD"}},
        {"name": "F", "pay": {"type": "FIXED", "value": 1.234, "currency": "USD"}}]);
    let found = paths(bad);
    for expected in [
        json!(["commissionRules", 3, "name"]),
        json!(["commissionRules", 3, "when", "productIds"]),
        json!(["commissionRules", 3, "when", "planIds", 0]),
        json!([
            "commissionRules",
            3,
            "when",
            "monthsSinceFirstPayment",
            "to"
        ]),
        json!(["commissionRules", 3, "when", "amount", "max"]),
        json!(["commissionRules", 3, "pay", "currency"]),
        json!(["commissionRules", 4, "pay", "value"]),
        json!(["commissionRules", 4, "pay", "currency"]),
        json!(["commissionRules", 5, "pay", "value"]),
    ] {
        assert!(found.contains(&expected), "{expected} not in {found:?}");
    }
    assert_eq!(found.len(), 9, "{found:?}");
}

#[test]
fn paths_split_into_keys_and_indexes() {
    assert_eq!(
        serde_json::Value::Array(split_path("commissionRules[3].when.planIds[0]")),
        json!(["commissionRules", 3, "when", "planIds", 0])
    );
    assert_eq!(
        serde_json::Value::Array(split_path("commissionValue")),
        json!(["commissionValue"])
    );
}

#[test]
fn payment_numbers_hold_inclusively_at_both_ends() {
    let when = |v: serde_json::Value| -> When { serde_json::from_value(v).unwrap() };
    let first_three = when(json!({"paymentNumber": {"from": 1, "to": 3}}));
    let from_four = when(json!({"paymentNumber": {"from": 4}}));
    let mut f = facts("100", "2026-03-01T00:00:00Z", None);
    for (n, three, four) in [
        (1, true, false),
        (3, true, false),
        (4, false, true),
        (99, false, true),
    ] {
        f.payment_number = n;
        assert_eq!(
            (first_three.holds(&f), from_four.holds(&f)),
            (three, four),
            "{n}"
        );
    }
    // A lead is no payment: a payment-number rule never holds for it.
    f.payment_number = 0;
    assert!(!first_three.holds(&f));
    let bad = paths(
        json!([{"name": "x", "when": {"paymentNumber": {"from": 0, "to": 0}},
        "pay": {"type": "PERCENTAGE", "value": 1}},
        {"name": "y", "when": {"paymentNumber": {"from": 5, "to": 4}},
        "pay": {"type": "PERCENTAGE", "value": 1}}]),
    );
    for (rule, end) in [(0, "from"), (0, "to"), (1, "to")] {
        let path = json!(["commissionRules", rule, "when", "paymentNumber", end]);
        assert!(bad.contains(&path), "{path} not in {bad:?}");
    }
}

#[test]
fn a_tier_decides_after_the_rules_and_before_the_campaign() {
    let rules = vec![rule(
        json!({"name": "Pro", "when": {"productIds": ["prod_pro"]},
        "pay": {"type": "PERCENTAGE", "value": 40}}),
    )];
    let gold = ("Gold", &pct(30));
    let own = pct(20);
    let override_pay = pct(5);
    let mut f = facts("100", "2026-03-01T00:00:00Z", None);
    let terms = |overrides, tier| Terms {
        overrides,
        rules: &rules,
        tier,
        fallback: &own,
    };
    let decided = |t: &Terms<'_>, f: &Facts<'_>| {
        let (amount, source) = rate(t, f);
        (amount.unwrap().to_string(), source.kind, source.name)
    };
    assert_eq!(
        decided(&terms(None, Some(gold)), &f),
        ("30.00".into(), SourceKind::Tier, Some("Gold".into()))
    );
    assert_eq!(decided(&terms(None, None), &f).1, SourceKind::Campaign);
    f.product_id = Some("prod_pro");
    assert_eq!(decided(&terms(None, Some(gold)), &f).1, SourceKind::Rule);
    assert_eq!(
        decided(&terms(Some(&override_pay), Some(gold)), &f).1,
        SourceKind::Override
    );
}

#[test]
fn a_lead_is_paid_by_a_rule_for_leads_else_the_lead_commission() {
    let rules = vec![
        rule(json!({"name": "All sales", "pay": {"type": "PERCENTAGE", "value": 50}})),
        rule(
            json!({"name": "Pro leads", "when": {"conversionType": "LEAD", "planIds": ["pro"]},
            "pay": {"type": "FIXED", "value": 8, "currency": "USD"}}),
        ),
    ];
    let lead: LeadCommission =
        serde_json::from_value(json!({"value": 3, "currency": "USD"})).unwrap();
    let mut f = facts("0", "2026-03-01T00:00:00Z", None);
    f.conversion_type = ConversionType::Lead;
    f.payment_number = 0;
    let (amount, source) = rate_lead(&rules, Some(&lead), &f);
    assert_eq!(
        (amount.unwrap().to_string(), source.kind),
        ("3.00".into(), SourceKind::Campaign)
    );
    f.plan_id = Some("pro");
    let (amount, source) = rate_lead(&rules, Some(&lead), &f);
    assert_eq!(
        (amount.unwrap().to_string(), source.index),
        ("8.00".into(), Some(1))
    );
    f.plan_id = None;
    let (amount, source) = rate_lead(&rules, None, &f);
    assert_eq!(
        (amount, source.kind),
        (Err(CommissionReason::NoLeadCommission), SourceKind::None)
    );
    // A rule for leads pays a fixed amount: a percentage of nothing is refused.
    let bad = paths(json!([{"name": "x", "when": {"conversionType": "LEAD"},
        "pay": {"type": "PERCENTAGE", "value": 10}}]));
    assert_eq!(bad, [json!(["commissionRules", 0, "pay", "type"])]);
}
