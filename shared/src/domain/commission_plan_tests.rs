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
    }
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
    let (amount, source) = rate(None, &rules, &own, &year_one);
    assert_eq!(amount.unwrap().to_string(), "100.00");
    assert_eq!(
        (source.kind, source.name.as_deref(), source.index),
        (SourceKind::Rule, Some("First year"), Some(1))
    );
    // A FIXED rule in another currency does not hold: the next one decides.
    let mut yearly = year_one.clone();
    yearly.plan_id = Some("price_y");
    assert_eq!(rate(None, &rules, &own, &yearly).1.index, Some(1));
    let later = facts("2000", "2027-06-01T00:00:00Z", first);
    assert_eq!(
        rate(None, &rules, &own, &later).1.name.as_deref(),
        Some("Big")
    );
    let small_later = facts("200", "2027-06-01T00:00:00Z", first);
    let (amount, source) = rate(None, &rules, &own, &small_later);
    assert_eq!(
        (amount.unwrap().to_string(), source.kind),
        ("40.00".into(), SourceKind::Campaign)
    );
    let overridden = pct(5);
    let (amount, source) = rate(Some(&overridden), &rules, &own, &year_one);
    assert_eq!(
        (amount.unwrap().to_string(), source),
        ("10.00".into(), CommissionSource::of(SourceKind::Override))
    );
    // An override fixed in another currency earns nothing, and says why.
    let eur: Pay =
        serde_json::from_value(json!({"type": "FIXED", "value": 5, "currency": "EUR"})).unwrap();
    let (amount, _) = rate(Some(&eur), &rules, &own, &year_one);
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
fn stored_plans_are_one_json_text_with_exact_amounts() {
    let input = json!({"name": "C", "commissionType": "PERCENTAGE", "commissionValue": 10,
        "commissionRules": [{"name": "R", "pay": {"type": "FIXED", "value": 12.5, "currency": "USD"}}]});
    let campaign = crate::domain::campaign::Campaign::create(
        serde_json::from_value(input).unwrap(),
        Utc::now(),
    )
    .unwrap();
    let item: std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue> =
        serde_dynamo::to_item(&campaign).unwrap();
    let stored = item["commissionRules"]
        .as_s()
        .expect("one string attribute");
    assert!(stored.contains(r#""value":12.5"#), "{stored}");
    let back: crate::domain::campaign::Campaign = serde_dynamo::from_item(item).unwrap();
    assert_eq!(back.commission_rules, campaign.commission_rules);
}
