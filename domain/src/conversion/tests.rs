//! Conversions' earnings, statuses, reversals and stages, as tables of cases.

use super::*;
use crate::conversion_changes::{Reversal, ReversedBy};

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
fn statuses_parse_and_reverse_rules() {
    for name in ConversionStatus::NAMES {
        assert_eq!(ConversionStatus::parse(name).unwrap().as_str(), name);
    }
    assert!(ConversionStatus::Pending.reversible());
    assert!(ConversionStatus::Unattributed.reversible());
    assert!(!ConversionStatus::Paid.reversible());
    assert!(!ConversionStatus::Reversed.reversible());
}

/// A SALE of 19.99 USD earning 2.50 by code, recorded now with a 30-day hold.
fn recorded(status: ConversionStatus, payout: Option<&str>) -> Conversion {
    let at = truncate_millis(Utc::now());
    super::sample::stored(serde_json::json!({
        "amount": "19.99", "commission": "2.50", "status": status, "payoutId": payout,
        "payableAt": at, "occurredAt": at, "createdAt": at, "updatedAt": at,
    }))
}

/// The merchant's reversal of `c`.
fn by_merchant(
    c: &Conversion,
    payout: HoldingPayout,
    part: Option<Decimal>,
    reason: Option<String>,
    now: DateTime<Utc>,
) -> Result<Reversal, Error> {
    c.reverse(ReversedBy::Merchant, payout, part, reason, now)
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
        match by_merchant(&c, payout, None, Some("refund".into()), now) {
            Ok(r) => {
                assert!(ok, "{from:?} must not reverse");
                assert_eq!(r.before.status, from);
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
        by_merchant(&free, HoldingPayout::None, None, None, now)
            .unwrap()
            .give_back,
        None
    );
    // A paid conversion of a paid payout is clawed back.
    let paid = recorded(Paid, Some("po_1"));
    let r = by_merchant(&paid, HoldingPayout::Paid, None, None, now).unwrap();
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
            .reverse(ReversedBy::Merchant, po, None, None, now)
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
        let r = by_merchant(&c, HoldingPayout::None, part.map(dec), None, now)
            .unwrap_or_else(|e| panic!("step {i}: {e:?}"));
        assert_eq!(r.reversed.reversed_amount, dec(total), "step {i}");
        assert_eq!(r.reversed.commission_reversed, dec(commission), "step {i}");
        let back = r.give_back.map_or(Decimal::ZERO, |e| -e.amount);
        assert_eq!(back, dec(cut), "step {i}");
        assert_eq!(r.reversed.status, status, "step {i}");
        assert_eq!(r.before, c, "step {i}");
        assert!(r.reversed.net_commission() >= Decimal::ZERO, "step {i}");
        c = r.reversed;
    }
    // Nothing is left: another reversal is 409.
    let err = by_merchant(&c, HoldingPayout::None, None, None, now).unwrap_err();
    assert!(matches!(err, Error::InvalidState { .. }));

    // Refused parts: above what is left, zero, more decimals than USD has.
    let mut c = recorded(ConversionStatus::Approved, None);
    c.amount = dec("10.00");
    for (part, code) in [
        ("10.01", "too_big"),
        ("0", "too_small"),
        ("1.005", "invalid_value"),
    ] {
        match by_merchant(&c, HoldingPayout::None, Some(dec(part)), None, now) {
            Err(Error::Validation(issues)) => assert_eq!(issues[0].code, code, "{part}"),
            other => panic!("{part}: {other:?}"),
        }
    }
    // A part of a paid conversion is clawed back by the cut alone.
    let mut paid = recorded(ConversionStatus::Paid, Some("po_1"));
    paid.amount = dec("100");
    paid.commission = dec("20.00");
    let r = by_merchant(&paid, HoldingPayout::Paid, Some(dec("25")), None, now).unwrap();
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
