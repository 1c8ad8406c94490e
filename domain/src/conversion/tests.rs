//! Conversions' validation, reversal and view, as tables of cases.

use super::*;
use crate::referral::email_hash;
use serde_json::json;

fn body(v: serde_json::Value) -> Result<Postback, Error> {
    crate::json_body::from_value::<PostbackBody>(v)?.validate(Utc::now())
}

fn issue_paths(r: Result<Postback, Error>) -> Vec<String> {
    match r {
        Err(Error::Validation(issues)) => issues
            .iter()
            .map(|i| {
                i.path
                    .iter()
                    .map(|p| p.as_str().unwrap_or("").to_string())
                    .collect::<Vec<_>>()
                    .join(".")
            })
            .collect(),
        other => panic!("expected validation failure, got {other:?}"),
    }
}

fn base() -> serde_json::Value {
    json!({"amount": 19.99, "currency": "usd", "externalId": "ord_1", "conversionType": "SALE"})
}

fn with(extra: serde_json::Value) -> serde_json::Value {
    let mut b = base();
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

#[test]
fn an_earning_keeps_its_status_condition_only_for_a_cached_affiliate() {
    let e = Earning {
        affiliate_id: "aff_1".into(),
        currency: Currency::parse("currency", "USD").unwrap(),
        amount: Decimal::new(500, 2),
        while_status: Some(AffiliateStatus::Active),
    };
    assert_eq!(e.to_commit(true), e);
    let fresh = e.to_commit(false);
    assert_eq!(fresh.while_status, None);
    assert_eq!(
        (fresh.amount, &fresh.affiliate_id),
        (e.amount, &e.affiliate_id)
    );
    let unconditioned = Earning {
        while_status: None,
        ..e
    };
    assert_eq!(unconditioned.to_commit(true).while_status, None);
}

#[test]
fn a_minimal_postback_is_valid_and_normalised() {
    let p = body(base()).unwrap();
    assert_eq!(p.amount.to_string(), "19.99");
    assert_eq!(p.currency.code(), "USD");
    assert!(p.email.is_none());
    assert!(p.customer_keys().is_empty());
    assert_eq!(p.fallback_key(), None);
    assert!(p.occurred_at <= Utc::now());
}

#[test]
fn amounts_must_be_positive_and_fit_the_currency() {
    assert_eq!(issue_paths(body(with(json!({"amount": 0})))), ["amount"]);
    assert_eq!(issue_paths(body(with(json!({"amount": -1})))), ["amount"]);
    assert_eq!(
        issue_paths(body(with(json!({"amount": 19.999})))),
        ["amount"]
    );
    assert_eq!(
        issue_paths(body(with(json!({"amount": 10.5, "currency": "JPY"})))),
        ["amount"]
    );
    assert!(body(with(json!({"amount": 10.125, "currency": "KWD"}))).is_ok());
    assert_eq!(issue_paths(body(with(json!({"amount": 1e12})))), ["amount"]);
    assert!(matches!(
        body(with(json!({"amount": "19.99"}))),
        Err(Error::Validation(_))
    ));
}

#[test]
fn currency_type_and_external_id_are_checked() {
    assert_eq!(
        issue_paths(body(with(json!({"currency": "ABC"})))),
        ["currency"]
    );
    assert_eq!(
        issue_paths(body(with(json!({"currency": "XAU"})))),
        ["currency"]
    );
    assert_eq!(
        issue_paths(body(with(json!({"conversionType": "REFUND"})))),
        ["conversionType"]
    );
    // A LEAD has no amount: 0 or left out.
    assert_eq!(
        issue_paths(body(with(json!({"conversionType": "LEAD"})))),
        ["amount"]
    );
    let mut lead = with(json!({"conversionType": "LEAD"}));
    lead.as_object_mut().unwrap().remove("amount");
    assert_eq!(body(lead).unwrap().amount, Decimal::ZERO);
    assert!(body(with(json!({"conversionType": "LEAD", "amount": 0}))).is_ok());
    let mut sale = with(json!({}));
    sale.as_object_mut().unwrap().remove("amount");
    assert_eq!(issue_paths(body(sale)), ["amount"]);
    assert_eq!(
        issue_paths(body(with(json!({"externalId": ""})))),
        ["externalId"]
    );
    assert_eq!(
        issue_paths(body(with(json!({"externalId": "x".repeat(256)})))),
        ["externalId"]
    );
    assert!(body(with(json!({"externalId": "x".repeat(255)}))).is_ok());
    assert_eq!(issue_paths(body(with(json!({"extra": 1})))), ["extra"]);
}

#[test]
fn customer_identities_are_hashed_checked_and_ordered() {
    let h = email_hash("jane@example.com");
    let p = body(with(json!({"customerEmail": " Jane@Example.com "}))).unwrap();
    assert_eq!(p.email, Some(CustomerKey::EmailHash(h.clone())));
    let p = body(with(
        json!({"customerEmailHash": h.to_uppercase(), "customerId": "u1"}),
    ))
    .unwrap();
    assert_eq!(
        p.customer_keys()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        vec!["cid:u1".to_string(), format!("email:{h}")]
    );
    let p = body(with(json!({"sessionId": "ses_x", "clickId": "clk_y"}))).unwrap();
    assert_eq!(p.fallback_key(), Some(CustomerKey::from_session("ses_x")));
    let p = body(with(json!({"clickId": "clk_y"}))).unwrap();
    assert_eq!(p.fallback_key(), Some(CustomerKey::from_click("clk_y")));
    let p = body(with(json!({"clickId": "clk_y", "customerId": "u1"}))).unwrap();
    assert_eq!(p.fallback_key(), None);
    assert_eq!(
        issue_paths(body(with(json!({"customerEmailHash": "abc"})))),
        ["customerEmailHash"]
    );
    assert_eq!(
        issue_paths(body(with(json!({"customerEmail": "not-an-email"})))),
        ["customerEmail"]
    );
    assert_eq!(
        issue_paths(body(with(json!({"customerId": "  "})))),
        ["customerId"]
    );
    assert_eq!(
        issue_paths(body(with(json!({
            "customerEmail": "a@b.co", "customerEmailHash": h
        })))),
        ["customerEmailHash"]
    );
}

#[test]
fn occurred_at_may_be_back_dated_but_not_far_in_the_future() {
    let p = body(with(json!({"occurredAt": "2020-02-29T12:00:00.123456Z"}))).unwrap();
    assert_eq!(
        timestamp::format(&p.occurred_at),
        "2020-02-29T12:00:00.123Z"
    );
    let soon = timestamp::format(&(Utc::now() + Duration::minutes(4)));
    assert!(body(with(json!({ "occurredAt": soon }))).is_ok());
    let late = timestamp::format(&(Utc::now() + Duration::minutes(6)));
    assert_eq!(
        issue_paths(body(with(json!({ "occurredAt": late })))),
        ["occurredAt"]
    );
    assert_eq!(
        issue_paths(body(with(json!({"occurredAt": "yesterday"})))),
        ["occurredAt"]
    );
}

#[test]
fn every_bad_field_is_reported_at_once() {
    let paths = issue_paths(body(json!({
        "amount": 0, "currency": "US", "externalId": "", "conversionType": "sale",
        "metadata": {"k": "v".repeat(501)},
    })));
    assert_eq!(
        paths,
        [
            "currency",
            "amount",
            "externalId",
            "conversionType",
            "metadata.k"
        ]
    );
}

#[test]
fn statuses_parse_and_reverse_rules() {
    for name in ConversionStatus::NAMES {
        assert_eq!(ConversionStatus::parse(name).unwrap().as_str(), name);
    }
    assert!(ConversionStatus::Pending.reversible());
    assert!(ConversionStatus::Unattributed.reversible());
    assert!(!ConversionStatus::Paid.reversible());
    assert!(!ConversionStatus::Reversed.reversible());
}

fn recorded(status: ConversionStatus, payout: Option<&str>) -> Conversion {
    let p = body(base()).unwrap();
    Conversion {
        id: "cnv_1".into(),
        external_id: p.external_id,
        campaign_id: Some("cmp_1".into()),
        affiliate_id: Some("aff_1".into()),
        amount: p.amount,
        currency: p.currency,
        conversion_type: ConversionType::Sale,
        commission: Decimal::new(250, 2),
        commission_reason: None,
        status,
        attribution: AttributionMethod::Code,
        customer_ref: None,
        is_recurring: false,
        click_id: None,
        session_id: None,
        customer_id: None,
        hold_days: 30,
        payable_at: p.occurred_at,
        payout_id: payout.map(str::to_string),
        metadata: Metadata::default(),
        occurred_at: p.occurred_at,
        created_at: p.occurred_at,
        updated_at: p.occurred_at,
        reversed_at: None,
        reversal_reason: None,
        reversed_amount: Decimal::ZERO,
        commission_reversed: Decimal::ZERO,
        commission_clawed_back: Decimal::ZERO,
        risk: Risk::default(),
        product_id: None,
        plan_id: None,
        commission_source: None,
        payment_number: None,
    }
}

#[test]
fn reversal_transitions() {
    use ConversionStatus::*;
    let now = Utc::now();
    for (from, in_payout, ok) in [
        (Pending, false, true),
        (Approved, false, true),
        (Unattributed, false, true),
        (Approved, true, false),
        (Paid, true, false),
        (Reversed, false, false),
    ] {
        let c = recorded(from, in_payout.then_some("po_1"));
        let payout = if in_payout {
            HoldingPayout::Unpaid
        } else {
            HoldingPayout::None
        };
        match c.reverse(payout, None, Some("refund".into()), now) {
            Ok(r) => {
                assert!(ok, "{from:?} must not reverse");
                assert_eq!(r.from, from);
                assert_eq!(r.reversed.status, Reversed);
                assert_eq!(r.reversed.reversed_at, Some(now));
                assert_eq!(r.reversed.reversal_reason.as_deref(), Some("refund"));
                let back = r.give_back.expect("commission goes back");
                assert_eq!(
                    (back.affiliate_id.as_str(), back.amount),
                    ("aff_1", -c.commission)
                );
                assert_eq!(back.while_status, None);
                assert_eq!(r.clawback, None);
            }
            Err(Error::InvalidState { current, .. }) => {
                assert!(!ok && !in_payout, "{from:?} must reverse");
                assert_eq!(current, from.as_str());
            }
            Err(Error::InPayout { current, payout_id }) => {
                assert!(!ok && in_payout, "{from:?} in a payout");
                assert_eq!(
                    (current.as_str(), payout_id.as_str()),
                    (from.as_str(), "po_1")
                );
            }
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    let mut free = recorded(Pending, None);
    free.commission = Decimal::ZERO;
    assert_eq!(
        free.reverse(HoldingPayout::None, None, None, now)
            .unwrap()
            .give_back,
        None
    );
    // A paid conversion of a paid payout is clawed back.
    let paid = recorded(Paid, Some("po_1"));
    let r = paid.reverse(HoldingPayout::Paid, None, None, now).unwrap();
    let claw = r.clawback.expect("clawback");
    assert_eq!(
        (claw.amount, claw.conversion_id.as_deref()),
        (-paid.commission, Some("cnv_1"))
    );
    assert_eq!(claw.payout_id, None);
    assert_eq!(r.give_back.map(|e| e.amount), Some(-paid.commission));
    // Still settling (APPROVED in a PAID payout), or in a rejected payout not yet released.
    for (st, po) in [
        (Approved, HoldingPayout::Paid),
        (Approved, HoldingPayout::Unpaid),
    ] {
        let err = recorded(st, Some("po_1"))
            .reverse(po, None, None, now)
            .unwrap_err();
        assert!(matches!(err, Error::InPayout { .. }));
    }
}

#[test]
fn partial_reversals_cut_the_commission_in_proportion_and_add_up_to_it() {
    let now = Utc::now();
    let dec = |s: &str| s.parse::<Decimal>().unwrap();
    let mut c = recorded(ConversionStatus::Pending, None);
    c.amount = dec("10.00");
    c.commission = dec("3.33");
    // (part, reversedAmount, commissionReversed, cut given back, status)
    let steps = [
        (
            Some("3.33"),
            "3.33",
            "1.11",
            "1.11",
            ConversionStatus::Pending,
        ),
        (Some("0.01"), "3.34", "1.11", "0", ConversionStatus::Pending),
        (
            Some("6.65"),
            "9.99",
            "3.33",
            "2.22",
            ConversionStatus::Pending,
        ),
        (None, "10.00", "3.33", "0", ConversionStatus::Reversed),
    ];
    for (i, (part, total, commission, cut, status)) in steps.into_iter().enumerate() {
        let r = c
            .reverse(HoldingPayout::None, part.map(dec), None, now)
            .unwrap_or_else(|e| panic!("step {i}: {e:?}"));
        assert_eq!(r.reversed.reversed_amount, dec(total), "step {i}");
        assert_eq!(r.reversed.commission_reversed, dec(commission), "step {i}");
        let back = r.give_back.map_or(Decimal::ZERO, |e| -e.amount);
        assert_eq!(back, dec(cut), "step {i}");
        assert_eq!(r.reversed.status, status, "step {i}");
        assert_eq!(
            (r.from, r.before.clone()),
            (c.status, c.clone()),
            "step {i}"
        );
        assert!(r.reversed.net_commission() >= Decimal::ZERO, "step {i}");
        c = r.reversed;
    }
    // Nothing is left: another reversal is 409.
    let err = c.reverse(HoldingPayout::None, None, None, now).unwrap_err();
    assert!(matches!(err, Error::InvalidState { .. }));

    // Refused parts: above what is left, zero, more decimals than USD has.
    let mut c = recorded(ConversionStatus::Approved, None);
    c.amount = dec("10.00");
    for (part, code) in [
        ("10.01", "too_big"),
        ("0", "too_small"),
        ("1.005", "invalid_value"),
    ] {
        match c.reverse(HoldingPayout::None, Some(dec(part)), None, now) {
            Err(Error::Validation(issues)) => assert_eq!(issues[0].code, code, "{part}"),
            other => panic!("{part}: {other:?}"),
        }
    }
    // A part of a paid conversion is clawed back by the cut alone.
    let mut paid = recorded(ConversionStatus::Paid, Some("po_1"));
    paid.amount = dec("100");
    paid.commission = dec("20.00");
    let r = paid
        .reverse(HoldingPayout::Paid, Some(dec("25")), None, now)
        .unwrap();
    assert_eq!(r.reversed.status, ConversionStatus::Paid);
    assert_eq!(r.clawback.map(|a| a.amount), Some(dec("-5.00")));
    assert_eq!(r.reversed.rollup_figures(), (dec("75"), dec("15.00")));
}

#[test]
fn approval_and_payment_and_stages() {
    let now = Utc::now();
    let mut c = recorded(ConversionStatus::Pending, None);
    c.payable_at = now + chrono::Duration::days(1);
    assert_eq!(c.payout_stage(), PayoutStage::AwaitingHold(c.payable_at));
    assert!(c.approve(now).is_err(), "inside its hold");
    c.payable_at = now;
    let approved = c.approve(now).unwrap();
    assert_eq!(approved.status, ConversionStatus::Approved);
    assert_eq!(approved.payout_stage(), PayoutStage::Payable);
    assert!(approved.approve(now).is_err());
    assert!(approved.pay("po_1", now).is_err(), "not in that payout");
    let mut held = approved.clone();
    held.payout_id = Some("po_1".into());
    assert_eq!(held.payout_stage(), PayoutStage::InPayout("po_1".into()));
    assert_eq!(
        held.pay("po_1", now).unwrap().status,
        ConversionStatus::Paid
    );
    assert!(held.pay("po_2", now).is_err());
    let unattributed = recorded(ConversionStatus::Unattributed, None);
    assert_eq!(unattributed.payout_stage(), PayoutStage::Outside);
}
