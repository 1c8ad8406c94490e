use serde_json::{json, Value};

use super::*;
use crate::affiliate::NewAffiliate;
use crate::event::Subject;
use crate::timestamp::parse_datetime;

fn at() -> DateTime<Utc> {
    parse_datetime("2026-07-01T12:00:00Z").unwrap()
}

fn body(v: Value) -> NewAdjustment {
    serde_json::from_value(v).unwrap()
}

fn affiliate(status: AffiliateStatus) -> Affiliate {
    let input: NewAffiliate = serde_json::from_value(
        json!({"campaignId": "cmp_1", "email": "anna@partners.example.com", "name": "Anna"}),
    )
    .unwrap();
    Affiliate::enroll(input, status, at(), Issues::new())
        .unwrap()
        .affiliate
}

/// The paths and codes of a body's issues, in order (none when it is valid).
fn issues(v: Value) -> Vec<(String, String)> {
    match body(v).validate() {
        Ok(_) => vec![],
        Err(Error::Validation(all)) => all
            .into_iter()
            .map(|i| (i.path[0].as_str().unwrap().to_string(), i.code))
            .collect(),
        Err(e) => panic!("not a validation failure: {e}"),
    }
}

/// The issues of a body with these fields (`externalId` left out when `None`).
fn judged(amount: Value, currency: &str, reason: &str, xid: Option<&str>) -> Vec<(String, String)> {
    let mut v = json!({"amount": amount, "currency": currency, "reason": reason});
    if let Some(x) = xid {
        v["externalId"] = json!(x);
    }
    issues(v)
}

/// Expected issues: each one's path and code.
type Want<'a> = &'a [(&'a str, &'a str)];

fn want(all: Want) -> Vec<(String, String)> {
    all.iter()
        .map(|(p, c)| (p.to_string(), c.to_string()))
        .collect()
}

#[test]
fn amounts_are_not_zero_below_ten_to_the_twelve_and_exact_to_the_currency() {
    let cases: [(Value, &str, Want); 11] = [
        (json!(25.5), "usd", &[]),
        (json!(-10), "EUR", &[]),
        (json!(999999999999.99_f64), "USD", &[]),
        (json!(-999999999999.99_f64), "USD", &[]),
        (json!(1.234), "KWD", &[]),
        (json!(0), "USD", &[("amount", "invalid_value")]),
        (json!(0.0), "USD", &[("amount", "invalid_value")]),
        (json!(1000000000000_i64), "USD", &[("amount", "too_big")]),
        (json!(-1000000000000_i64), "USD", &[("amount", "too_small")]),
        (json!(1.5), "JPY", &[("amount", "invalid_value")]),
        (json!(1.001), "USD", &[("amount", "invalid_value")]),
    ];
    for (amount, currency, issues) in cases {
        let got = judged(amount.clone(), currency, "Bonus", None);
        assert_eq!(got, want(issues), "{amount} {currency}");
    }
}

#[test]
fn texts_are_checked_and_every_issue_is_reported_with_its_path() {
    let (long, long_id) = ("r".repeat(501), "x".repeat(256));
    let cases: [(&str, &str, Option<&str>, Want); 10] = [
        ("XAU", "Gold", None, &[("currency", "invalid_string")]),
        ("USD", "", None, &[("reason", "too_small")]),
        ("USD", "   ", None, &[("reason", "too_small")]),
        ("USD", &long, None, &[("reason", "too_big")]),
        ("USD", "a\nb", None, &[("reason", "invalid_string")]),
        ("USD", "ok", Some("x-1"), &[]),
        ("USD", "ok", Some(""), &[("externalId", "too_small")]),
        ("USD", "ok", Some(&long_id), &[("externalId", "too_big")]),
        (
            "USD",
            "ok",
            Some("a\u{85}b"),
            &[("externalId", "invalid_string")],
        ),
        (
            "nope",
            " ",
            Some(""),
            &[
                ("currency", "invalid_string"),
                ("reason", "too_small"),
                ("externalId", "too_small"),
            ],
        ),
    ];
    for (currency, reason, xid, issues) in cases {
        let got = judged(json!(5), currency, reason, xid);
        assert_eq!(got, want(issues), "{currency} {reason:?} {xid:?}");
    }
    // Every field at once.
    let all = judged(json!(0), "nope", "", Some(""));
    assert_eq!(
        all,
        want(&[
            ("currency", "invalid_string"),
            ("amount", "invalid_value"),
            ("reason", "too_small"),
            ("externalId", "too_small"),
        ])
    );
}

#[test]
fn unknown_fields_are_refused() {
    let r = serde_json::from_value::<NewAdjustment>(
        json!({"amount": 5, "currency": "USD", "reason": "ok", "note": "x"}),
    );
    assert!(r.unwrap_err().to_string().contains("unknown field `note`"));
}

#[test]
fn a_valid_request_is_exact_to_the_currency_and_keeps_what_was_sent() {
    let r =
        body(json!({"amount": 25.5, "currency": "usd", "reason": " Bonus ", "externalId": "b-1"}))
            .validate()
            .unwrap();
    assert_eq!(r.amount.to_string(), "25.50");
    assert_eq!(r.currency.code(), "USD");
    assert_eq!(r.reason, " Bonus ");
    assert_eq!(r.external_id.as_deref(), Some("b-1"));
}

fn request(amount: Value, reason: &str) -> AdjustmentRequest {
    body(json!({"amount": amount, "currency": "USD", "reason": reason, "externalId": "x-1"}))
        .validate()
        .unwrap()
}

#[test]
fn a_booking_joins_the_pool_moves_earned_and_records_its_event() {
    let a = affiliate(AffiliateStatus::Active);
    let Decision::Book(b) = request(json!(-12.5), "Refund outside the product")
        .decide(&a, None, at())
        .unwrap()
    else {
        panic!("not booked");
    };
    let adj = &b.adjustment;
    assert!(adj.id.starts_with("adj_"));
    assert!(adj.is_manual());
    assert_eq!(adj.payout_id, None);
    assert_eq!(adj.campaign_id.as_deref(), Some("cmp_1"));
    assert_eq!(adj.amount.to_string(), "-12.50");
    assert_eq!(b.earning.amount, adj.amount);
    assert_eq!(b.earning.while_status, Some(AffiliateStatus::Active));
    assert_eq!(b.event.event_type, EventType::AdjustmentCreated);
    assert_eq!(adj.reason.as_deref(), Some("Refund outside the product"));
    assert_eq!(adj.external_id.as_deref(), Some("x-1"));
    assert_eq!(b.event.subject, Subject::Adjustment(Box::new(adj.clone())));
}

#[test]
fn only_an_accepted_affiliate_gets_a_new_adjustment() {
    for (status, ok) in [
        (AffiliateStatus::Active, true),
        (AffiliateStatus::Suspended, true),
        (AffiliateStatus::Pending, false),
        (AffiliateStatus::Rejected, false),
    ] {
        let got = request(json!(5), "Bonus").decide(&affiliate(status), None, at());
        match got {
            Ok(Decision::Book(b)) => {
                assert!(ok, "{status:?} booked");
                assert_eq!(b.earning.while_status, Some(status));
            }
            Err(Error::InvalidState { current, .. }) => {
                assert!(!ok, "{status:?} refused");
                assert_eq!(current, status.as_str());
            }
            other => panic!("{status:?}: {other:?}"),
        }
    }
}

#[test]
fn the_same_external_id_replays_the_same_request_and_refuses_another() {
    let a = affiliate(AffiliateStatus::Active);
    let Decision::Book(b) = request(json!(5), "Bonus").decide(&a, None, at()).unwrap() else {
        panic!("not booked");
    };
    let original = b.adjustment;
    // Numerically equal amounts are the same request; the status no longer matters.
    let rejected = Affiliate {
        status: AffiliateStatus::Rejected,
        ..a.clone()
    };
    for again in [request(json!(5), "Bonus"), request(json!(5.00), "Bonus")] {
        assert_eq!(
            again.decide(&rejected, Some(&original), at()).unwrap(),
            Decision::Replay(original.clone())
        );
    }
    let other = Affiliate {
        id: "aff_other".into(),
        ..a.clone()
    };
    for (req, on) in [
        (request(json!(6), "Bonus"), &a),
        (request(json!(5), "Another bonus"), &a),
        (request(json!(5), "Bonus"), &other),
    ] {
        match req.decide(on, Some(&original), at()) {
            Err(Error::AlreadyExists(m)) => assert!(m.contains("externalId x-1"), "{m}"),
            got => panic!("{got:?}"),
        }
    }
}

#[test]
fn stored_clawbacks_without_the_new_fields_are_still_read() {
    let stored = json!({
        "id": "adj_1", "affiliateId": "aff_1", "campaignId": "cmp_1", "currency": "USD",
        "amount": "-5.00", "conversionId": "cnv_1", "createdAt": "2026-01-01T00:00:00.000Z",
    });
    let a: Adjustment = serde_json::from_value(stored).unwrap();
    assert!(!a.is_manual());
    assert_eq!((a.reason, a.external_id, a.payout_id), (None, None, None));
}

#[test]
fn a_bonus_alone_opens_a_payout_once_it_reaches_the_minimum_and_is_netted_positive() {
    use crate::campaign::Campaign;
    use crate::payout::{Payout, PoolEntry};
    let campaign = Campaign::create(
        serde_json::from_value(json!({"name": "C", "commissionType": "PERCENTAGE",
            "commissionValue": 10, "minimumPayout": 20}))
        .unwrap(),
        at(),
    )
    .unwrap();
    let a = affiliate(AffiliateStatus::Active);
    let book = |amount: Value| match request(amount, "Bonus").decide(&a, None, at()).unwrap() {
        Decision::Book(b) => b.adjustment,
        other => panic!("{other:?}"),
    };
    let usd = Currency::parse("currency", "USD").unwrap();
    let pool = |all: &[&Adjustment]| -> Vec<PoolEntry> {
        all.iter()
            .map(|x| PoolEntry::Adjustment((*x).clone()))
            .collect()
    };
    let (small, big, back) = (book(json!(15)), book(json!(30)), book(json!(-12)));
    // Below the minimum, or netted below it by a manual clawback: no payout.
    for below in [pool(&[&small]), pool(&[&big, &back])] {
        assert!(Payout::open(&a, &campaign, usd, &below, at()).is_none());
    }
    let p = Payout::open(&a, &campaign, usd, &pool(&[&small, &big, &back]), at()).unwrap();
    let c = p.claiming(&[], &[small.clone(), big.clone(), back.clone()]);
    assert!(c
        .adjustments
        .iter()
        .all(|x| x.payout_id.as_deref() == Some(p.id.as_str())));
    let mut claimed = p.clone();
    claimed.progress.claimed_adjustments = 3;
    claimed.progress.claimed_adjustment_minor = c.adjustment_minor;
    let done = claimed.claimed(at());
    assert_eq!(done.adjustment_total.to_string(), "33.00");
    assert_eq!(done.amount.to_string(), "33.00");
    assert_eq!(done.conversion_count, 0);
}
