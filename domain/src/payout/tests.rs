//! The transition table and the chunked work of payouts, as tables of cases.

use super::*;
use crate::change::{Event, Subject};
use crate::conversion::ConversionStatus;
use crate::event::EventType;
use crate::payout_account::Rail;
use crate::payout_command::{Command, FollowUp, Outcome};
use crate::payout_work::{AtOnce, Releasing, TransitionPlan};
use crate::timestamp::parse_datetime;
use PayoutStatus::*;

/// The invoice key an approval found in storage.
const CHECKED: &str = "invoices/k";

/// A payout of 123.45 USD to `aff_1` by PayPal (for other modules' tests too).
pub(crate) fn payout(status: PayoutStatus) -> Payout {
    let t = parse_datetime("2026-01-01T00:00:00Z").unwrap();
    let usd = Currency::parse("currency", "USD").unwrap();
    Payout {
        id: "po_1".into(),
        amount: Decimal::new(12_345, 2),
        status,
        conversion_count: 3,
        ..Payout::requested("aff_1", "cmp_1", usd, PayoutMethod::Paypal, t)
    }
}

/// `n` APPROVED conversions held by `payout` (`clawed_back` of each
/// taken by refunds meanwhile) and `m` adjustments it holds.
fn held(payout: &str, n: usize, m: usize, clawed_back: &str) -> (Vec<Conversion>, Vec<Adjustment>) {
    let at = "2026-01-01T00:00:00Z";
    let conversions = (0..n)
        .map(|i| {
            crate::conversion::sample::stored(serde_json::json!({
                "id": format!("cnv_{i}"), "externalId": format!("order-{i}"),
                "amount": "50.00", "commissionClawedBack": clawed_back,
                "status": "APPROVED", "payoutId": payout, "holdDays": 0,
                "payableAt": at, "occurredAt": at, "createdAt": at, "updatedAt": at,
            }))
        })
        .collect();
    let adjustments = (0..m)
        .map(|i| Adjustment {
            id: format!("adj_{i}"),
            affiliate_id: "aff_1".into(),
            campaign_id: None,
            currency: Currency::parse("currency", "USD").unwrap(),
            amount: Decimal::new(-100, 2),
            conversion_id: Some(format!("cnv_{i}")),
            reason: None,
            external_id: None,
            payout_id: Some(payout.into()),
            created_at: parse_datetime(at).unwrap(),
        })
        .collect();
    (conversions, adjustments)
}

/// The release of `n` conversions and `m` adjustments `p` holds.
fn releasing(p: &Payout, n: usize, m: usize) -> Releasing {
    let (c, a) = held(&p.id, n, m, "0");
    p.releasing(c, a, p.updated_at)
}

#[test]
fn a_release_moves_only_what_the_payout_still_holds_and_gives_back_clawbacks() {
    let p = payout(Rejected);
    let now = parse_datetime("2026-02-01T00:00:00Z").unwrap();
    let (mut c, mut a) = held(&p.id, 3, 2, "1.50");
    // Taken out meanwhile: one conversion in another payout, one adjustment in none.
    c[1].payout_id = Some("po_2".into());
    a[0].payout_id = None;
    c[2].commission_clawed_back = Decimal::ZERO;
    let r = p.releasing(c, a, now);
    let ids: Vec<&str> = r.conversions.iter().map(|(b, _)| b.id.as_str()).collect();
    assert_eq!(ids, ["cnv_0", "cnv_2"]);
    assert!(r
        .conversions
        .iter()
        .all(|(_, after)| after.payout_id.is_none()));
    let adj: Vec<(&str, Option<&str>)> = r
        .adjustments
        .iter()
        .map(|a| (a.id.as_str(), a.payout_id.as_deref()))
        .collect();
    assert_eq!(adj, [("adj_1", None)]);
    assert_eq!(r.len(), 3);
    // Only the conversion refunds cut while held gets its clawback back.
    let back: Vec<(Option<&str>, Decimal)> = r
        .given_back
        .iter()
        .map(|g| (g.conversion_id.as_deref(), g.amount))
        .collect();
    assert_eq!(back, [(Some("cnv_0"), Decimal::new(150, 2))]);
    assert_eq!(r.given_back[0].created_at, now);
    assert_eq!(r.conversions[0].1.commission_clawed_back, Decimal::ZERO);
    assert!(p.releasing(vec![], vec![], now).is_empty());
}

/// batch-process's move without a rail, `checked` the invoice it found.
fn process(checked: Option<&str>) -> Command {
    Command::Process {
        checked_invoice: checked.map(str::to_string),
        rail: None,
    }
}

#[test]
fn a_payout_approved_in_passing_records_its_approval_first() {
    let now = parse_datetime("2026-02-01T00:00:00Z").unwrap();
    let process = process(Some(CHECKED));
    // (from, approved before?, approval recorded?)
    let cases = [
        (PayoutStatus::InvoiceUploaded, false, true),
        (PayoutStatus::Approved, true, false),
    ];
    for (from, approved_before, recorded) in cases {
        let mut before = payout(from);
        before.approved_at = approved_before.then_some(now - chrono::Duration::days(1));
        let Ok(Outcome::Changed {
            payout: after,
            event,
            approval,
            ..
        }) = before.apply(process.clone(), now)
        else {
            panic!("{from:?}: no change");
        };
        assert_eq!(approval.is_some(), recorded, "{from:?}");
        let events = after.transition_events(event, approval.as_deref(), now);
        let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
        let statuses: Vec<&str> = events
            .iter()
            .map(|e| payout_of(e).status.as_str())
            .collect();
        if recorded {
            assert_eq!(types, ["payout.approved", "payout.processing"]);
            assert_eq!(statuses, ["APPROVED", "PROCESSING"]);
            assert!(events[0].id < events[1].id, "listed in that order");
            assert_eq!(
                payout_of(&events[0]).approved_at,
                payout_of(&events[1]).approved_at
            );
        } else {
            assert_eq!(types, ["payout.processing"]);
        }
    }
    // A payout marked paid from INVOICE_UPLOADED was never approved.
    let Ok(Outcome::Changed { approval, .. }) = payout(PayoutStatus::InvoiceUploaded).apply(
        Command::Settle {
            payment_reference: None,
            note: None,
        },
        now,
    ) else {
        panic!("settle: no change");
    };
    assert!(approval.is_none());
}

#[test]
fn a_provider_answer_joins_the_move_to_processing_in_one_write() {
    let now = parse_datetime("2026-02-01T00:00:00Z").unwrap();
    let process = process(Some(CHECKED));
    let paid = Command::ConfirmPayment {
        reference: Some("sandbox_po".into()),
    };
    let failed = Command::PaymentFailed {
        code: "card_declined".into(),
        message: "refused".into(),
    };
    // (from, answer, where it ends, its events with the status each shows)
    let cases = [
        (
            PayoutStatus::InvoiceUploaded,
            paid.clone(),
            PayoutStatus::Paid,
            vec![
                ("payout.approved", "APPROVED"),
                ("payout.processing", "PROCESSING"),
                ("payout.paid", "PAID"),
            ],
        ),
        (
            PayoutStatus::Approved,
            failed,
            PayoutStatus::Approved,
            vec![
                ("payout.processing", "PROCESSING"),
                ("payout.payment_failed", "APPROVED"),
            ],
        ),
    ];
    for (from, answer, to, want) in cases {
        let mut before = payout(from);
        if from == PayoutStatus::Approved {
            before.approved_at = Some(now - chrono::Duration::days(1));
        }
        let processing = before.apply(process.clone(), now).unwrap();
        let first = processing.moved(now).unwrap().expect("a change");
        assert_eq!(first.payout.status, PayoutStatus::Processing);
        let next = first.payout.apply(answer, now).unwrap();
        let joined = first.then(next, now).unwrap();
        assert_eq!((joined.from, joined.payout.status), (from, to), "{from:?}");
        let got: Vec<(&str, &str)> = joined
            .events
            .iter()
            .map(|e| (e.event_type.as_str(), payout_of(e).status.as_str()))
            .collect();
        assert_eq!(got, want, "{from:?}");
        assert!(
            joined.events.windows(2).all(|w| w[0].id < w[1].id),
            "listed in the order they happened"
        );
        // Paid: its conversions follow in the same write or in chunks.
        let work = (to == PayoutStatus::Paid).then_some(PayoutWork::Settle);
        assert_eq!(joined.payout.work, work);
    }
    // An unchanged answer (paid already) adds nothing to the first step.
    let first = payout(PayoutStatus::Approved)
        .apply(process, now)
        .unwrap()
        .moved(now)
        .unwrap()
        .unwrap();
    let joined = first.clone().then(Outcome::Unchanged, now).unwrap();
    assert_eq!(joined, first);
}

#[test]
fn only_a_transition_to_paid_adds_to_the_paid_total() {
    let now = parse_datetime("2026-02-01T00:00:00Z").unwrap();
    let mut paying = 0;
    for (i, command) in commands().into_iter().enumerate() {
        for from in PayoutStatus::ALL {
            let Ok(Outcome::Changed {
                payout,
                from,
                event,
                ..
            }) = payout(from).apply(command.clone(), now)
            else {
                continue;
            };
            let Some(event) = event else {
                continue;
            };
            let recorded = payout.event(event, now);
            let plan = TransitionPlan::new(*payout, from, vec![recorded], AtOnce::Nothing);
            let pays = matches!(
                command,
                Command::MarkPaid { .. } | Command::Settle { .. } | Command::ConfirmPayment { .. }
            );
            let want = pays.then_some(Decimal::new(12_345, 2));
            assert_eq!(plan.paid(), want, "command {i} from {from:?}");
            paying += usize::from(pays);
        }
    }
    assert!(paying > 0, "some transitions pay");
}

#[test]
fn a_payout_pays_only_the_approved_conversions_it_still_holds() {
    let p = payout(Paid);
    let now = parse_datetime("2026-02-01T00:00:00Z").unwrap();
    let (mut c, _) = held(&p.id, 3, 0, "0");
    c[1].payout_id = Some("po_2".into());
    c[2].status = ConversionStatus::Paid;
    let paid = p.paying(c, now);
    let got: Vec<(&str, ConversionStatus)> = paid
        .iter()
        .map(|(before, after)| (before.id.as_str(), after.status))
        .collect();
    assert_eq!(got, [("cnv_0", ConversionStatus::Paid)]);
}

#[test]
fn a_payout_waits_in_the_queue_of_its_work_or_of_its_provider() {
    let with = |status, work| {
        let mut p = payout(status);
        p.work = work;
        p.queue()
    };
    assert_eq!(
        with(Pending, Some(PayoutWork::Claim)),
        Some(PayoutQueue::Build)
    );
    assert_eq!(
        with(Paid, Some(PayoutWork::Settle)),
        Some(PayoutQueue::Settle)
    );
    assert_eq!(
        with(Rejected, Some(PayoutWork::Release)),
        Some(PayoutQueue::Release)
    );
    // PROCESSING: the job asks a rail again until it has taken the payout;
    // one paid by hand, or taken (PayPal's batch), is not the job's.
    assert_eq!(with(Processing, None), None);
    let on_rail = |reference: Option<&str>| {
        let mut p = payout(Processing);
        p.rail = Some(Rail::Paypal);
        p.payment_reference = reference.map(str::to_string);
        p.queue()
    };
    assert_eq!(on_rail(None), Some(PayoutQueue::Paying));
    assert_eq!(on_rail(Some("5UXD2E8A7EBQJ")), None);
    for status in [
        Pending,
        InvoiceUploaded,
        Approved,
        Paid,
        Rejected,
        Cancelled,
    ] {
        assert_eq!(with(status, None), None, "{status:?}");
    }
}

#[test]
fn a_claim_keeps_each_conversion_as_read_beside_it_joined() {
    let mut p = payout(Pending);
    p.work = Some(PayoutWork::Claim);
    let (mut c, mut a) = held(&p.id, 2, 1, "0");
    c.iter_mut().for_each(|c| c.payout_id = None);
    a.iter_mut().for_each(|a| a.payout_id = None);
    let claim = p.claiming(&c, &a);
    assert_eq!((claim.conversions.len(), claim.adjustments.len()), (2, 1));
    for ((before, after), read) in claim.conversions.iter().zip(&c) {
        assert_eq!((before, after.payout_id.as_deref()), (read, Some("po_1")));
    }
    assert_eq!(claim.adjustments[0].payout_id.as_deref(), Some("po_1"));
    assert_eq!((claim.minor, claim.adjustment_minor), (1_000, -100));
}

fn commands() -> Vec<Command> {
    vec![
        Command::AttachInvoice(InvoiceUpload {
            key: "invoices/k".into(),
            file_name: "inv.pdf".into(),
            content_type: "application/pdf".into(),
            size: 10,
        }),
        Command::Approve {
            checked_invoice: Some(CHECKED.into()),
        },
        Command::MarkPaid {
            payment_date: NaiveDate::from_ymd_opt(2026, 1, 2).unwrap(),
            payment_method: "wire".into(),
        },
        Command::Settle {
            payment_reference: Some("ref".into()),
            note: None,
        },
        Command::Reject {
            reason: "no".into(),
        },
        process(Some(CHECKED)),
        Command::ConfirmPayment { reference: None },
        Command::PaymentFailed {
            code: "sandbox".into(),
            message: "down".into(),
        },
        Command::Cancel {
            reason: "dup".into(),
        },
        Command::ReplaceInvoice(InvoiceUpload {
            key: "invoices/other".into(),
            file_name: "other.pdf".into(),
            content_type: "application/pdf".into(),
            size: 20,
        }),
    ]
}

/// The contract's table: (command index, from, to, follow-up).
fn table() -> Vec<(usize, PayoutStatus, PayoutStatus, FollowUp)> {
    use FollowUp::*;
    let mut t = vec![
        (0, Pending, InvoiceUploaded, Nothing),
        (1, InvoiceUploaded, Approved, Nothing),
        (2, Approved, Paid, PayConversions),
        (5, InvoiceUploaded, Processing, Nothing),
        (5, Approved, Processing, Nothing),
        (6, Processing, Paid, PayConversions),
        (7, Processing, Approved, Nothing),
        (9, Pending, InvoiceUploaded, Nothing),
        (9, InvoiceUploaded, InvoiceUploaded, Nothing),
    ];
    for from in [Pending, InvoiceUploaded, Approved, Processing] {
        t.push((3, from, Paid, PayConversions));
    }
    for from in [Pending, InvoiceUploaded, Approved] {
        t.push((4, from, Rejected, ReleaseConversions));
        t.push((8, from, Cancelled, ReleaseConversions));
    }
    t
}

#[test]
fn the_same_invoice_again_is_no_change_and_storage_never_replaces_one() {
    let now = parse_datetime("2026-02-01T00:00:00Z").unwrap();
    let upload = |key: &str, size| InvoiceUpload {
        key: key.into(),
        file_name: "inv.pdf".into(),
        content_type: "application/pdf".into(),
        size,
    };
    let Ok(Outcome::Changed { payout: held, .. }) =
        payout(Pending).apply(Command::AttachInvoice(upload("invoices/a", 10)), now)
    else {
        panic!("attached");
    };
    // (command, changed?)
    let cases = [
        (
            Command::AttachInvoice(upload("invoices/a", 10)),
            Some(false),
        ),
        (
            Command::ReplaceInvoice(upload("invoices/a", 10)),
            Some(false),
        ),
        (Command::AttachInvoice(upload("invoices/b", 10)), None),
        (
            Command::ReplaceInvoice(upload("invoices/a", 11)),
            Some(true),
        ),
        (
            Command::ReplaceInvoice(upload("invoices/b", 10)),
            Some(true),
        ),
    ];
    for (command, changed) in cases {
        let got = held.apply(command.clone(), now);
        let seen = match got {
            Ok(Outcome::Unchanged) => Some(false),
            Ok(Outcome::Changed { .. }) => Some(true),
            Err(_) => None,
        };
        assert_eq!(seen, changed, "{command:?}");
    }
}

#[test]
fn a_reversal_knows_the_holding_payout_by_its_status() {
    assert_eq!(HoldingPayout::from(None), HoldingPayout::None);
    assert_eq!(HoldingPayout::from(Some(Paid)), HoldingPayout::Paid);
    for open in [
        Pending,
        InvoiceUploaded,
        Approved,
        Processing,
        Rejected,
        Cancelled,
    ] {
        assert_eq!(HoldingPayout::from(Some(open)), HoldingPayout::Unpaid);
    }
}

/// What a chunk of `work` moving `n` at `at` plans: moved, read, the work's
/// end, the settled and released counters, the work and the time after it.
type Planned = (
    usize,
    u64,
    Option<(Option<PayoutWork>, DateTime<Utc>)>,
    (u64, u64),
    Option<PayoutWork>,
    DateTime<Utc>,
);

fn planned(p: &Payout, work: PayoutWork, n: usize, at: DateTime<Utc>) -> Option<Planned> {
    p.chunk(work, n, at).map(|c| {
        let ended = c.ended().map(|e| (e.work, e.updated_at));
        let (moved, read, after) = (c.moved(), c.read(), c.into_after());
        let counters = (after.progress.settled, after.progress.released);
        (moved, read, ended, counters, after.work, after.updated_at)
    })
}

/// An APPROVED payout after `command` at `now`.
fn after(command: Command, now: DateTime<Utc>) -> Payout {
    match payout(Approved).apply(command, now).unwrap() {
        Outcome::Changed { payout, .. } => *payout,
        _ => panic!("unchanged"),
    }
}

#[test]
fn a_settlement_is_done_at_once_only_when_every_conversion_moves_with_it() {
    let now = parse_datetime("2026-02-01T00:00:00Z").unwrap();
    let paid = after(
        Command::MarkPaid {
            payment_date: NaiveDate::from_ymd_opt(2026, 1, 2).unwrap(),
            payment_method: "wire".into(),
        },
        now,
    );
    assert_eq!(paid.work, Some(PayoutWork::Settle));
    let done = paid.settled_at_once(3).unwrap();
    assert_eq!((done.work, done.progress.settled), (None, 3));
    assert!(done.work_done());
    assert_eq!(done.status, Paid);
    // Fewer found than it holds, or work already under way: in chunks.
    assert!(paid.settled_at_once(2).is_none());
    assert!(paid.settled_at_once(4).is_none(), "more than it holds");
    let mut begun = paid.clone();
    begun.progress.settled = 1;
    assert!(begun.settled_at_once(3).is_none());
    // Nothing to settle at all: no work to end.
    assert!(payout(Approved).settled_at_once(3).is_none());
    // In chunks: the chunk that brings the counter to the count ends it.
    let part = paid.counted(PayoutWork::Settle, 2).unwrap();
    assert_eq!((part.progress.settled, part.work_done()), (2, false));
    assert!(part.counted(PayoutWork::Settle, 1).unwrap().work_done());
    assert!(paid.counted(PayoutWork::Claim, 1).is_none());
    // A chunk short of the total only counts; the last one ends the work
    // at its time.
    let later = now + chrono::Duration::minutes(1);
    let (settle, paid_at) = (Some(PayoutWork::Settle), paid.updated_at);
    let first = Some((2, 0, None, (2, 0), settle, paid_at));
    assert_eq!(planned(&paid, PayoutWork::Settle, 2, later), first);
    let last = Some((1, 2, Some((None, later)), (3, 0), None, later));
    assert_eq!(planned(&part, PayoutWork::Settle, 1, later), last);
    assert!(paid.chunk(PayoutWork::Claim, 1, now).is_none());
    assert!(
        paid.released_at_once(&releasing(&paid, 3, 0)).is_none(),
        "settle, not release"
    );
}

#[test]
fn a_release_is_done_at_once_only_when_every_member_moves_with_it() {
    let now = parse_datetime("2026-02-01T00:00:00Z").unwrap();
    let later = now + chrono::Duration::minutes(1);
    // Released: its conversions and its claimed adjustments, all of them.
    let mut rejected = after(
        Command::Reject {
            reason: "no".into(),
        },
        now,
    );
    rejected.progress.claimed_adjustments = 1;
    // Released in chunks: its conversions and its adjustment count.
    let release = Some(PayoutWork::Release);
    let first = (3, 0, None, (0, 3), release, rejected.updated_at);
    assert_eq!(
        planned(&rejected, PayoutWork::Release, 3, later),
        Some(first)
    );
    let mut begun = rejected.clone();
    begun.progress.released = 3;
    let last = (1, 3, Some((None, later)), (0, 4), None, later);
    assert_eq!(planned(&begun, PayoutWork::Release, 1, later), Some(last));
    assert!(rejected.settled_at_once(3).is_none(), "release, not settle");
    let done = rejected
        .released_at_once(&releasing(&rejected, 3, 1))
        .unwrap();
    assert_eq!((done.work, done.progress.released), (None, 4));
    assert!(done.work_done());
    // Fewer or more than it holds, or an adjustment for a conversion: in chunks.
    for (conversions, adjustments) in [(3, 0), (2, 1), (4, 1), (2, 2)] {
        let r = releasing(&rejected, conversions, adjustments);
        assert!(
            rejected.released_at_once(&r).is_none(),
            "{conversions} conversions, {adjustments} adjustments"
        );
    }
}

#[test]
fn every_command_from_every_state_follows_the_table() {
    let now = parse_datetime("2026-02-01T00:00:00Z").unwrap();
    let table = table();
    for (i, command) in commands().into_iter().enumerate() {
        for from in PayoutStatus::ALL {
            let got = payout(from).apply(command.clone(), now);
            let want = table.iter().find(|(c, f, _, _)| *c == i && *f == from);
            match (got, want) {
                (
                    Ok(Outcome::Changed {
                        payout,
                        from: f,
                        follow_up,
                        ..
                    }),
                    Some((_, _, to, fu)),
                ) => {
                    assert_eq!(
                        (payout.status, f, follow_up),
                        (*to, from, *fu),
                        "{command:?} from {from:?}"
                    );
                    assert_eq!(payout.updated_at, now);
                }
                (Ok(Outcome::Unchanged), None) => {
                    assert!(
                        [(3, Paid), (6, Paid)].contains(&(i, from)),
                        "only PUT mark-paid and a payment confirmation on PAID are no-ops"
                    );
                }
                (Err(Error::InvalidState { current, .. }), None) => {
                    assert_eq!(current, from.as_str());
                }
                (got, want) => panic!("{command:?} from {from:?}: got {got:?}, want {want:?}"),
            }
        }
    }
}

#[test]
fn approving_needs_the_invoice_in_storage() {
    let now = Utc::now();
    for command in [
        Command::Approve {
            checked_invoice: None,
        },
        process(None),
    ] {
        let err = payout(InvoiceUploaded).apply(command, now).unwrap_err();
        assert!(matches!(err, Error::InvoiceMissing { .. }));
        assert_eq!(err.code().as_str(), "INVALID_STATE");
    }
    // A file replaced since the call looked is not the one approved.
    let mut replaced = payout(InvoiceUploaded);
    replaced.invoice_key = Some("invoices/new".into());
    for command in [
        Command::Approve {
            checked_invoice: Some("invoices/old".into()),
        },
        process(Some("invoices/old")),
    ] {
        let err = replaced.apply(command, now).unwrap_err();
        assert!(matches!(err, Error::InvoiceReplaced { .. }), "{err:?}");
    }
    let same = Command::Approve {
        checked_invoice: Some("invoices/new".into()),
    };
    assert!(replaced.apply(same, now).is_ok());
    // An approved payout's invoice was checked at approval.
    assert!(payout(Approved).apply(process(None), now).is_ok());
}

#[test]
fn transitions_record_what_happened() {
    let now = Utc::now();
    let Outcome::Changed {
        payout: p, event, ..
    } = payout(Pending).apply(commands().remove(0), now).unwrap()
    else {
        panic!("changed");
    };
    assert_eq!(event, Some(EventType::PayoutInvoiceUploaded));
    assert_eq!(p.invoice_key.as_deref(), Some("invoices/k"));
    assert_eq!(p.invoice.as_ref().map(|i| i.size), Some(10));
    let Outcome::Changed {
        payout: p, event, ..
    } = payout(Processing)
        .apply(
            Command::PaymentFailed {
                code: "sandbox".into(),
                message: "down".into(),
            },
            now,
        )
        .unwrap()
    else {
        panic!("changed");
    };
    assert_eq!(
        (p.status, event),
        (Approved, Some(EventType::PayoutPaymentFailed))
    );
    assert_eq!(p.payment_error.as_deref(), Some("down"));
    let last = p.last_payment_error.as_ref().expect("the refusal is kept");
    assert_eq!((last.code.as_str(), last.at), ("sandbox", now));
    // Each move to PROCESSING starts a new attempt (a new idempotency key).
    let approved = payout(Approved);
    let attempt = |p: &Payout| match p.apply(process(None), now) {
        Ok(Outcome::Changed { payout, .. }) => payout.payment_attempt,
        other => panic!("{other:?}"),
    };
    assert_eq!(attempt(&approved), approved.payment_attempt + 1);
    // An attempt names its rail, and an earlier attempt's reference goes.
    let mut refused = payout(Approved);
    refused.payment_reference = Some("5UXD2E8A7EBQJ".into());
    let process = Command::Process {
        checked_invoice: None,
        rail: Some(Rail::Stripe),
    };
    let Ok(Outcome::Changed { payout: next, .. }) = refused.apply(process, now) else {
        panic!("an APPROVED payout is processed")
    };
    assert_eq!(
        (next.rail, next.payment_reference),
        (Some(Rail::Stripe), None)
    );
    assert_eq!(
        PayoutStatus::parse("invoice_uploaded"),
        Some(InvoiceUploaded)
    );
    assert!(Processing.is_open() && !Paid.is_open() && !Rejected.is_open());
}

/// The payout an event is about.
fn payout_of(e: &Event) -> &Payout {
    match &e.subject {
        Subject::Payout(p) => p,
        other => panic!("not about a payout: {other:?}"),
    }
}
