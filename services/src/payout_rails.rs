//! Paying payouts through the merchant's paying integration (contract
//! section 14): batch-process and the payout job move the money, exactly
//! once, whatever fails.
//!
//! For each payout on the rail: the move to PROCESSING with a new
//! `paymentAttempt` is committed first; only then is the provider asked,
//! with the attempt's key (`domain::payout_rail::attempt_key`), and its
//! answer committed: PAID (Stripe's transfer), or APPROVED again with
//! `lastPaymentError` (a refusal: nothing was paid, the next try is a new
//! attempt). Without an answer the payout stays PROCESSING and the next
//! batch-process of it, or the payout job, asks again with the same key, which
//! the provider answers once. A crash between the two steps leaves the same
//! PROCESSING payout, so it is paid once too.

use chrono::{DateTime, Duration, Utc};
use futures::stream::{self, StreamExt};

use crate::app::App;
use crate::payout_accounts::{paying, Paying};
use crate::payout_transitions;
use crate::payouts::{self, Outcomes};
use crate::rails::paypal::PaypalPayout;
use crate::rails::stripe::Transfer;
use crate::retry::Attempt;
use crate::tax_forms;
use domain::affiliate::Affiliate;
use domain::error::{Error, Result};
use domain::payout::{Payout, PayoutStatus};
use domain::payout_command::Command;
use domain::payout_rail::{self, Destination, ProviderAnswer, Rail, RailStep};
use domain::payout_work::TransitionPlan;
use domain::tenant::{Mode, Tenant};
use store::affiliates as affiliate_store;
use store::payouts as store_payouts;

/// Provider calls a batch-process makes at once.
const CALLS_AT_ONCE: usize = 8;
/// How long a PROCESSING payout waits before the payout job asks again.
pub const REDRIVE_AFTER_MINUTES: i64 = 10;

/// batch-process: payouts whose affiliate's method is the paying
/// integration's are paid through it (a few calls at once); the others
/// are processed as without a rail (`payouts::process_many`). The answers
/// keep the ids' order.
pub async fn process_many(
    app: &App,
    tenant: &Tenant,
    ids: Vec<String>,
    now: DateTime<Utc>,
) -> Outcomes {
    let paying = match paying(app, tenant).await {
        Ok(Some(p)) => p,
        Ok(None) => return payouts::process_many(app, tenant, ids, now).await,
        Err(e) => return failed_all(ids, "the paying integration", &e),
    };
    let on_rail = match on_rail(app, tenant, &paying, &ids).await {
        Ok(found) => found,
        Err(e) => return failed_all(ids, "the payouts and their affiliates", &e),
    };
    let others: Vec<String> = ids
        .iter()
        .filter(|id| !on_rail.iter().any(|(p, _)| &p.id == *id))
        .cloned()
        .collect();
    let paid = pay_many(app, tenant, &paying, on_rail, now).await;
    let mut rest = payouts::process_many(app, tenant, others, now).await;
    rest.extend(paid);
    let mut ordered = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(at) = rest.iter().position(|(r, _)| *r == id) {
            ordered.push(rest.swap_remove(at));
        }
    }
    ordered
}

/// Every payout answered: `what` could not be read. An internal cause
/// stays internal (500, logged by each item's answer, never sent); any
/// other failure is 503 with its own words.
fn failed_all(ids: Vec<String>, what: &str, e: &Error) -> Outcomes {
    let failure = || match e {
        Error::Internal(cause) => Error::Internal(format!("{what}: {cause}")),
        other => Error::Unavailable(format!("{what} could not be read: {other}")),
    };
    ids.into_iter().map(|id| (id, Err(failure()))).collect()
}

/// The payouts among `ids` whose affiliate the rail pays, with that affiliate.
async fn on_rail(
    app: &App,
    tenant: &Tenant,
    paying: &Paying,
    ids: &[String],
) -> Result<Vec<(Payout, Affiliate)>> {
    let mut payouts = store_payouts::get_many(&app.store, tenant, ids).await?;
    let affiliate_ids: Vec<&str> = payouts.values().map(|p| p.affiliate_id.as_str()).collect();
    let owners = affiliate_store::get_many(&app.store, tenant, &affiliate_ids).await?;
    Ok(ids
        .iter()
        .filter_map(|id| {
            let p = payouts.remove(id)?;
            let a = owners.get(&p.affiliate_id)?;
            let rides = Rail::for_method(a.payout_method, paying.rail).is_some();
            (rides && p.is_visible()).then(|| (p, a.clone()))
        })
        .collect())
}

/// Pays one payout on the rail, as it now is: a new attempt, the current
/// attempt asked again, or nothing to send.
pub async fn pay(
    app: &App,
    tenant: &Tenant,
    paying: &Paying,
    payout: Payout,
    affiliate: &Affiliate,
    now: DateTime<Utc>,
) -> Result<Payout> {
    let processing = match payout_rail::step(&payout, paying.rail) {
        RailStep::Wait => return Ok(payout),
        RailStep::Redrive => payout,
        RailStep::Begin => match payout_rail::ready(&payout, affiliate, paying.rail) {
            Err(refusal) => return refuse(app, tenant, paying.rail, payout, refusal, now).await,
            Ok(_) => match begin(app, tenant, paying.rail, payout, now).await? {
                Some(p) => p,
                None => return Err(Error::internal("a payout to pay did not move")),
            },
        },
    };
    if payout_rail::step(&processing, paying.rail) != RailStep::Redrive {
        // Another caller paid, refused or handed it over meanwhile.
        return Ok(processing);
    }
    let answer = call_again(app, tenant.mode, paying, &processing, affiliate).await;
    answered(app, tenant, processing, answer, now).await
}

/// Asks the provider for `p`'s current attempt, at the affiliate's destination.
async fn call_again(
    app: &App,
    mode: Mode,
    paying: &Paying,
    p: &Payout,
    affiliate: &Affiliate,
) -> ProviderAnswer {
    match payout_rail::redrive_destination(affiliate, paying.rail) {
        Some(d) => call(app, mode, paying, p, &d).await,
        None => ProviderAnswer::NoAnswer {
            cause: "the affiliate has no destination left to ask for".into(),
        },
    }
}

/// What batch-process does with one payout on the rail, decided on it as read.
enum Planned {
    /// Answered now (nothing to send, or a decision that failed).
    Done(Box<Result<Payout>>),
    /// Sent again with its current key.
    Redrive(Box<(Payout, Affiliate)>),
    /// A plan to commit: PROCESSING (then the call), or refused before any call.
    Commit(Box<(TransitionPlan, Affiliate, Payout)>),
}

/// batch-process on the rail: the moves to PROCESSING (and refusals made
/// before any call) committed several payouts a transaction, then the
/// provider asked at most [`CALLS_AT_ONCE`] at a time, then the answers
/// committed several a transaction. A payout whose transaction was refused
/// (it changed meanwhile) goes through [`pay`] alone.
async fn pay_many(
    app: &App,
    tenant: &Tenant,
    paying: &Paying,
    on_rail: Vec<(Payout, Affiliate)>,
    now: DateTime<Utc>,
) -> Outcomes {
    let on_rail = match tax_held(app, tenant, on_rail, now).await {
        Ok(on_rail) => on_rail,
        Err(failed) => return failed,
    };
    let mut batch = plan_all(app, tenant, paying, on_rail, now).await;
    let alone = commit_moves(app, tenant, &mut batch).await;
    let answers = call_all(app, tenant, paying, batch.to_call).await;
    let mut done = batch.done;
    done.extend(commit_answers(app, tenant, answers, now).await);
    done.extend(pay_alone(app, tenant, paying, alone, now).await);
    done
}

/// Each payout with the refusal of its affiliate's missing tax form, if
/// any (`tax_forms::holds`); every payout answered 503 when the forms
/// cannot be read.
async fn tax_held(
    app: &App,
    tenant: &Tenant,
    on_rail: Vec<(Payout, Affiliate)>,
    now: DateTime<Utc>,
) -> std::result::Result<Vec<(Payout, Affiliate, Option<Error>)>, Outcomes> {
    let asked: Vec<&Payout> = on_rail.iter().map(|(p, _)| p).collect();
    let mut held = match tax_forms::holds(app, tenant, &asked, now).await {
        Ok(held) => held,
        Err(e) => {
            let ids = on_rail.into_iter().map(|(p, _)| p.id).collect();
            return Err(failed_all(ids, "the affiliates' tax forms", &e));
        }
    };
    Ok(on_rail
        .into_iter()
        .map(|(p, a)| {
            let refusal = held.remove(&p.id);
            (p, a, refusal)
        })
        .collect())
}

/// batch-process's payouts on the rail, by what comes next for each.
#[derive(Default)]
struct Batch {
    /// Answered.
    done: Outcomes,
    /// PROCESSING: the provider is asked (again).
    to_call: Vec<(Payout, Affiliate)>,
    /// A plan to commit, with the payout's affiliate and the payout as read.
    to_commit: Vec<(TransitionPlan, Affiliate, Payout)>,
}

/// Decides each payout as read (a few at once); a held one is answered
/// with its refusal.
async fn plan_all(
    app: &App,
    tenant: &Tenant,
    paying: &Paying,
    on_rail: Vec<(Payout, Affiliate, Option<Error>)>,
    now: DateTime<Utc>,
) -> Batch {
    let decided: Vec<(String, Planned)> = stream::iter(on_rail)
        .map(|(p, a, refusal)| async move {
            let planned = match refusal {
                Some(e) => Planned::Done(Box::new(Err(e))),
                None => plan(app, tenant, paying, p.clone(), a, now).await,
            };
            (p.id.clone(), planned)
        })
        .buffered(CALLS_AT_ONCE)
        .collect()
        .await;
    let mut batch = Batch::default();
    for (id, planned) in decided {
        match planned {
            Planned::Done(r) => batch.done.push((id, *r)),
            Planned::Redrive(r) => batch.to_call.push(*r),
            Planned::Commit(c) => batch.to_commit.push(*c),
        }
    }
    batch
}

/// Commits the batch's plans several a transaction: a payout now
/// PROCESSING is to call, one refused before any call is done; those whose
/// transaction was refused are returned, as read, to go alone.
async fn commit_moves(app: &App, tenant: &Tenant, batch: &mut Batch) -> Vec<(Payout, Affiliate)> {
    let (plans, kept): (Vec<TransitionPlan>, Vec<(Affiliate, Payout)>) =
        std::mem::take(&mut batch.to_commit)
            .into_iter()
            .map(|(plan, a, read)| (plan, (a, read)))
            .unzip();
    let committed = payouts::commit_plans(&app.store, tenant, plans).await;
    let mut alone = Vec::new();
    for ((a, read), written) in kept.into_iter().zip(committed) {
        match written {
            Some(p) if p.status == PayoutStatus::Processing => batch.to_call.push((p, a)),
            Some(p) => batch.done.push((p.id.clone(), refused(p))),
            None => alone.push((read, a)),
        }
    }
    alone
}

/// Asks the provider for each payout's current attempt, at most
/// [`CALLS_AT_ONCE`] at a time.
async fn call_all(
    app: &App,
    tenant: &Tenant,
    paying: &Paying,
    to_call: Vec<(Payout, Affiliate)>,
) -> Vec<(Payout, Affiliate, ProviderAnswer)> {
    stream::iter(to_call)
        .map(|(p, a)| async move {
            let answer = call_again(app, tenant.mode, paying, &p, &a).await;
            (p, a, answer)
        })
        .buffer_unordered(CALLS_AT_ONCE)
        .collect()
        .await
}

/// Pays each payout alone through [`pay`], a few at once.
async fn pay_alone(
    app: &App,
    tenant: &Tenant,
    paying: &Paying,
    alone: Vec<(Payout, Affiliate)>,
    now: DateTime<Utc>,
) -> Outcomes {
    stream::iter(alone)
        .map(|(p, a)| async move { (p.id.clone(), pay(app, tenant, paying, p, &a, now).await) })
        .buffer_unordered(CALLS_AT_ONCE)
        .collect()
        .await
}

/// The step of one payout, decided on it as read.
async fn plan(
    app: &App,
    tenant: &Tenant,
    paying: &Paying,
    p: Payout,
    a: Affiliate,
    now: DateTime<Utc>,
) -> Planned {
    let begin = match payout_rail::step(&p, paying.rail) {
        RailStep::Wait => return Planned::Done(Box::new(Ok(p))),
        RailStep::Redrive => return Planned::Redrive(Box::new((p, a))),
        RailStep::Begin => payout_rail::ready(&p, &a, paying.rail),
    };
    let planned = async {
        let checked = payouts::invoice_presence(app, &p).await?;
        let process = Command::Process {
            checked_invoice: checked,
            rail: Some(paying.rail),
        };
        let Some(moved) = p.apply(process, now)?.moved(now)? else {
            return Err(Error::internal("a payout to pay did not move"));
        };
        let moved = match begin {
            Ok(_) => moved,
            Err((code, message)) => {
                let failed = moved
                    .payout
                    .apply(Command::PaymentFailed { code, message }, now)?;
                moved.then(failed, now)?
            }
        };
        payout_transitions::planned(&app.store, tenant, moved, now).await
    };
    match planned.await {
        Ok(plan) => Planned::Commit(Box::new((plan, a, p))),
        Err(e) => Planned::Done(Box::new(Err(e))),
    }
}

/// The answer of a payout the provider refused (or that was refused
/// before any call): 409 naming the code; any other, as it is.
fn refused(p: Payout) -> Result<Payout> {
    match (&p.last_payment_error, p.status) {
        (Some(e), PayoutStatus::Approved) => Err(Error::ProviderRefused {
            current: p.status.as_str().into(),
            code: e.code.clone(),
            message: e.message.clone(),
        }),
        _ => Ok(p),
    }
}

/// Commits the providers' answers: those that complete in one write several
/// a transaction; one that leaves work (a payout of many conversions), or
/// whose transaction was refused, alone through [`answered`].
async fn commit_answers(
    app: &App,
    tenant: &Tenant,
    answers: Vec<(Payout, Affiliate, ProviderAnswer)>,
    now: DateTime<Utc>,
) -> Outcomes {
    let planned: Vec<(Payout, ProviderAnswer, Option<TransitionPlan>)> = stream::iter(answers)
        .map(|(p, _, answer)| async move {
            let plan = match answer.command() {
                Some(c) => answer_plan(app, tenant, &p, c, now).await,
                None => None,
            };
            (p, answer, plan)
        })
        .buffered(CALLS_AT_ONCE)
        .collect()
        .await;
    let (mut plans, mut together, mut alone) = (Vec::new(), Vec::new(), Vec::new());
    for (p, answer, plan) in planned {
        match plan {
            Some(plan) if plan.payout.work.is_none() => {
                plans.push(plan);
                together.push((p, answer));
            }
            _ => alone.push((p, answer)),
        }
    }
    let mut done = Vec::new();
    let committed = payouts::commit_plans(&app.store, tenant, plans).await;
    for ((p, answer), written) in together.into_iter().zip(committed) {
        match written {
            Some(after) => done.push((after.id.clone(), refused(after))),
            None => alone.push((p, answer)),
        }
    }
    for (p, answer) in alone {
        let id = p.id.clone();
        done.push((id, answered(app, tenant, p, answer, now).await));
    }
    done
}

/// The plan of a provider's answer to a PROCESSING payout, when it makes one.
async fn answer_plan(
    app: &App,
    tenant: &Tenant,
    p: &Payout,
    command: Command,
    now: DateTime<Utc>,
) -> Option<TransitionPlan> {
    let moved = p.apply(command, now).ok()?.moved(now).ok()??;
    payout_transitions::planned(&app.store, tenant, moved, now)
        .await
        .ok()
}

/// Commits the move to PROCESSING (a new attempt) and returns the payout as
/// written; when another caller moved it first, the payout as it now is
/// (PROCESSING: its attempt is asked again with the same key).
pub async fn begin(
    app: &App,
    tenant: &Tenant,
    rail: Rail,
    payout: Payout,
    now: DateTime<Utc>,
) -> Result<Option<Payout>> {
    let checked = payouts::invoice_presence(app, &payout).await?;
    let id = payout.id.clone();
    let process = |_: &Payout| {
        Ok(Command::Process {
            checked_invoice: checked.clone(),
            rail: Some(rail),
        })
    };
    match payouts::transition_from(app, tenant, &id, Some(payout), process, now).await {
        Ok(p) => Ok(Some(p)),
        Err(Error::InvalidState { current, .. })
            if current == PayoutStatus::Processing.as_str() =>
        {
            Ok(Some(store_payouts::get(&app.store, tenant, &id).await?))
        }
        Err(e) => Err(e),
    }
}

/// A payout refused before any call (no usable destination): PROCESSING and
/// back to APPROVED in one write, with `lastPaymentError` and
/// `payout.payment_failed`; 409 naming the code.
async fn refuse(
    app: &App,
    tenant: &Tenant,
    rail: Rail,
    payout: Payout,
    (code, message): (String, String),
    now: DateTime<Utc>,
) -> Result<Payout> {
    let checked = payouts::invoice_presence(app, &payout).await?;
    let process = Command::Process {
        checked_invoice: checked,
        rail: Some(rail),
    };
    let failed = Command::PaymentFailed {
        code: code.clone(),
        message: message.clone(),
    };
    if let Some(processing) = payout.apply(process, now)?.moved(now)? {
        let next = processing.payout.apply(failed, now)?;
        let moved = processing.then(next, now)?;
        if let Attempt::Conflict =
            payout_transitions::commit(&app.store, tenant, moved, now).await?
        {
            return Err(Error::Unavailable(
                "the payout is being changed by other requests; retry".into(),
            ));
        }
    }
    Err(Error::ProviderRefused {
        current: PayoutStatus::Approved.as_str().into(),
        code,
        message,
    })
}

/// Asks the provider to pay `p`'s current attempt.
async fn call(
    app: &App,
    mode: Mode,
    paying: &Paying,
    p: &Payout,
    destination: &Destination,
) -> ProviderAnswer {
    let key = payout_rail::attempt_key(p);
    let amount = match paying.rail.amount(p.currency, p.amount) {
        Ok(a) => a,
        // An attempt begun before its amount was checked: never sent as is.
        Err((_, message)) => return ProviderAnswer::NoAnswer { cause: message },
    };
    match destination {
        Destination::StripeAccount(account) => {
            // Amounts stay below 10^12 major units: the digits fit.
            let Ok(amount_minor) = i64::try_from(amount.mantissa()) else {
                return ProviderAnswer::NoAnswer {
                    cause: format!("the amount {amount} is beyond what can be sent"),
                };
            };
            let transfer = Transfer {
                amount_minor,
                currency: p.currency.code(),
                destination: account,
                payout_id: &p.id,
                affiliate_id: &p.affiliate_id,
                idempotency_key: &key,
            };
            app.rails.stripe(&paying.key).transfer(&transfer).await
        }
        Destination::PaypalEmail(receiver) => {
            let payout = PaypalPayout {
                value: amount.to_string(),
                currency: p.currency.code(),
                receiver,
                payout_id: &p.id,
                idempotency_key: &key,
            };
            let paypal = app.rails.paypal(mode, &paying.key, &paying.secret);
            paypal.payout(&payout).await
        }
    }
}

/// Commits a provider's answer to a PROCESSING payout: PAID, APPROVED again
/// (409 naming the provider's code), or, without an answer, left as it is
/// (503: asked again with the same key later).
async fn answered(
    app: &App,
    tenant: &Tenant,
    p: Payout,
    answer: ProviderAnswer,
    now: DateTime<Utc>,
) -> Result<Payout> {
    let Some(command) = answer.command() else {
        let ProviderAnswer::NoAnswer { cause } = answer else {
            return Ok(p);
        };
        tracing::warn!(payout = %p.id, attempt = p.payment_attempt, %cause, "payout: the provider did not answer");
        return Err(Error::Unavailable(format!(
            "payout {}: the payment provider did not answer ({cause}); it stays PROCESSING and is asked again with the same idempotency key by the next batch-process or the payout job",
            p.id
        )));
    };
    let id = p.id.clone();
    let asked = p.payment_attempt;
    // Decided again on a payout changed meanwhile: an answer is its
    // attempt's, never a later one's.
    let answer_of = |now_is: &Payout| {
        if now_is.payment_attempt == asked {
            Ok(command.clone())
        } else {
            Err(Error::state(
                "payout",
                now_is.status.as_str(),
                "record an earlier attempt's answer",
            ))
        }
    };
    let after = payouts::transition_from(app, tenant, &id, Some(p), answer_of, now).await?;
    refused(after)
}

/// The payout job's turn at a PROCESSING payout sent through a rail: its
/// attempt is asked again, with the same key, once it has waited
/// [`REDRIVE_AFTER_MINUTES`], through the rail it was sent to. Nothing
/// else: a payout no rail was asked for is the merchant's to mark paid, one
/// the provider took waits for its event, and one refused meanwhile waits
/// for the merchant's next batch-process (a new attempt is never begun here).
pub async fn redrive(app: &App, tenant: &Tenant, p: Payout, now: DateTime<Utc>) -> Result<Payout> {
    let Some(rail) = p.rail else {
        return Ok(p);
    };
    if now - p.updated_at < Duration::minutes(REDRIVE_AFTER_MINUTES) {
        return Ok(p);
    }
    let Some(paying) = paying(app, tenant).await?.filter(|r| r.rail == rail) else {
        tracing::warn!(payout = %p.id, "payout job: the rail the payout was sent through no longer pays; left PROCESSING");
        return Ok(p);
    };
    // Decided on the record as it is now: the job's index may lag behind.
    let current = store_payouts::get(&app.store, tenant, &p.id).await?;
    if payout_rail::step(&current, paying.rail) != RailStep::Redrive {
        return Ok(current);
    }
    let affiliate = affiliate_store::get(&app.store, tenant, &p.affiliate_id).await?;
    pay(app, tenant, &paying, current, &affiliate, now).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::error::ErrorCode;

    #[test]
    fn an_unreadable_batch_keeps_internal_causes_out_of_the_answers() {
        let e = Error::internal("ValidationException: table refctl-items");
        let out = failed_all(
            vec!["po_1".into(), "po_2".into()],
            "the paying integration",
            &e,
        );
        let ids: Vec<&str> = out.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["po_1", "po_2"]);
        for (id, answer) in &out {
            let err = answer.as_ref().unwrap_err();
            assert_eq!(err.code(), ErrorCode::ServerError);
            assert!(!err.item_message(id).contains("refctl-items"));
        }
    }

    #[test]
    fn a_busy_store_is_503_in_its_own_words() {
        let e = Error::Unavailable("a storage service is unavailable; retry later".into());
        let out = failed_all(vec!["po_1".into()], "the affiliates' tax forms", &e);
        let err = out[0].1.as_ref().unwrap_err();
        assert_eq!(err.code(), ErrorCode::ServiceUnavailable);
        assert_eq!(
            err.item_message("po_1"),
            "the affiliates' tax forms could not be read: a storage service is unavailable; retry later"
        );
    }
}
