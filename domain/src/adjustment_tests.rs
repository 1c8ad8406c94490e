use serde_json::{json, Value};

use super::*;
use crate::affiliate::AffiliateDraft;
use crate::change::Subject;
use crate::timestamp::parse_datetime;
use crate::validation::Issues;

fn at() -> DateTime<Utc> {
    parse_datetime("2026-07-01T12:00:00Z").unwrap()
}

fn affiliate(status: AffiliateStatus) -> Affiliate {
    let input = AffiliateDraft::from_json(
        &json!({"campaignId": "cmp_1", "email": "anna@partners.example.com", "name": "Anna"}),
    );
    Affiliate::enroll(input, status, at(), Issues::new())
        .unwrap()
        .affiliate
}

/// A validated request in USD, its amount exact to the cent, with `externalId` `x-1`.
fn request(amount: Value, reason: &str) -> AdjustmentRequest {
    let usd = Currency::parse("currency", "USD").unwrap();
    AdjustmentRequest {
        amount: usd.round(amount.to_string().parse().unwrap()),
        currency: usd,
        reason: reason.to_string(),
        external_id: Some("x-1".into()),
    }
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
    assert_eq!(
        b.event.subject,
        Subject::Adjustment(std::sync::Arc::new(adj.clone()))
    );
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
    let body = json!({"name": "C", "commissionType": "PERCENTAGE",
        "commissionValue": 10, "minimumPayout": 20});
    let campaign =
        Campaign::create(crate::campaign::CampaignDraft::from_json(&body), at()).unwrap();
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
