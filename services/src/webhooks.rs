//! Webhook delivery, above the store: first attempts for a new event, the
//! sweep of due retries, redelivery, replay and test deliveries. Each attempt
//! reads its endpoint, checks the URL again (DNS may have changed), signs
//! the body with the endpoint's current secret (and the previous one for a
//! day after a rotation), posts it, and commits what `domain::webhook`
//! decides from the result.
//!
//! At most one attempt of a task runs at a time: whoever creates or claims
//! a task holds it for a lease (past the delivery timeout), and records the
//! attempt only if the task is still as its claim left it. A crash leaves
//! the task due when its lease ends, and the sweep takes it up.

use chrono::{DateTime, Duration, Utc};
use futures::future::join_all;
use serde::Serialize;

use crate::app::App;
use crate::edited::{self, Edited};
use crate::retry::{retry, retry_on_conflict, Attempt, UPDATE_ATTEMPTS};
use crate::webhook_delivery::{check_url, AttemptResult, Verdict};
use domain::error::{Error, Result};
use domain::event::Published;
use domain::tenant::Tenant;
use domain::timestamp;
use domain::webhook::{self, DeliveryAttempt, Endpoint, EndpointStatus, Outcome, Task};
use domain::webhook_signature as signature;
use store::events::{self, EventFilter};
use store::keys::WORK_SHARDS;
use store::page::{PageRequest, MAX_LIMIT};
use store::webhooks::{self as endpoint_store, EndpointCount};

/// Most due retries one sweep takes from a shard.
const SWEEP_BATCH: usize = 200;
/// Attempts run side by side (per event, per sweep chunk).
const PARALLEL: usize = 16;
/// Most events one replay schedules.
pub const MAX_REPLAY: usize = 1000;

/// How long an attempt holds its task: twice the delivery timeout and a
/// margin, so no second attempt starts while one may still be running.
fn lease(app: &App) -> Duration {
    let timeout = Duration::from_std(app.config.webhooks.timeout).unwrap_or(Duration::seconds(15));
    timeout * 2 + Duration::seconds(30)
}

/// Events of one stream batch handed to [`on_event`] at once.
const EVENTS_AT_ONCE: usize = 32;

/// Runs [`on_event`] for each event of a stream batch (`None`: a record
/// that is no event), up to [`EVENTS_AT_ONCE`] at once, each starting as a
/// place frees: an endpoint that answers slowly holds one place, never the
/// events behind it (so one endpoint may get that many attempts at once).
/// The outcome of each, in the batch's order.
pub async fn on_events(
    app: &App,
    events: Vec<Result<Option<(Tenant, Published)>>>,
) -> Vec<Result<usize>> {
    use futures::stream::{self, StreamExt};
    let mut done: Vec<(usize, Result<usize>)> = stream::iter(events.into_iter().enumerate())
        .map(|(i, found)| async move {
            let outcome = match found {
                Ok(Some((tenant, event))) => on_event(app, &tenant, &event).await,
                Ok(None) => Ok(0),
                Err(e) => Err(e),
            };
            (i, outcome)
        })
        .buffer_unordered(EVENTS_AT_ONCE)
        .collect()
        .await;
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, outcome)| outcome).collect()
}

/// Sends the first attempt of `event` to every ENABLED endpoint of its
/// tenant that subscribes to it (a test-mode event reaches test-mode
/// endpoints only: they belong to another tenant). A task that already
/// exists (a stream record seen twice) is left alone. Returns how many
/// deliveries started.
pub async fn on_event(app: &App, tenant: &Tenant, event: &Published) -> Result<usize> {
    let endpoints = endpoint_store::all_endpoints(&app.store, tenant).await?;
    let runs = endpoints
        .iter()
        .filter(|e| e.receives(event))
        .map(|e| first_attempt(app, tenant, e, event));
    let mut started = 0;
    let mut failure = None;
    for result in join_all(runs).await {
        match result {
            Ok(true) => started += 1,
            Ok(false) => {}
            Err(e) => failure = Some(e),
        }
    }
    failure.map_or(Ok(started), Err)
}

async fn first_attempt(
    app: &App,
    tenant: &Tenant,
    e: &Endpoint,
    event: &Published,
) -> Result<bool> {
    let task = Task::start(
        None,
        &e.id,
        (&event.id, event.event_type),
        timestamp::now(),
        lease(app),
    );
    if !endpoint_store::put_task(&app.store, tenant, &task, None).await? {
        return Ok(false);
    }
    attempt(app, tenant, e, &task, event).await?;
    Ok(true)
}

/// Runs one attempt of the claimed task and commits its outcome; `None`
/// when another claimant took the task meanwhile (nothing is recorded).
pub async fn attempt(
    app: &App,
    tenant: &Tenant,
    endpoint: &Endpoint,
    claimed: &Task,
    event: &Published,
) -> Result<Option<Outcome>> {
    let attempted_at = timestamp::now();
    let result = post(app, tenant, endpoint, event, attempted_at).await?;
    let now = timestamp::now();
    let outcome = webhook::after_attempt(
        claimed,
        endpoint,
        &result,
        &app.webhooks.retry_schedule,
        attempted_at,
        now,
    );
    if !endpoint_store::record_outcome(&app.store, tenant, claimed, &outcome).await? {
        tracing::warn!(event_id = %event.id, endpoint_id = %endpoint.id, "webhook attempt lost its claim; not recorded");
        return Ok(None);
    }
    endpoint_store::change_endpoint(&app.store, tenant, &endpoint.id, &outcome.endpoint, now)
        .await?;
    tracing::info!(
        event_id = %event.id,
        endpoint_id = %endpoint.id,
        attempt = outcome.attempt.attempt,
        status = outcome.attempt.status.as_str(),
        response_status = result.status,
        duration_ms = result.duration_ms,
        "webhook attempt"
    );
    Ok(Some(outcome))
}

/// Checks the URL again, signs and posts the event. A URL the guard now
/// refuses is a failed attempt (retried: DNS may change back).
async fn post(
    app: &App,
    tenant: &Tenant,
    endpoint: &Endpoint,
    event: &Published,
    at: DateTime<Utc>,
) -> Result<AttemptResult> {
    let target = match check_url(&endpoint.url, tenant.mode, app.webhooks.reach()).await {
        Ok(target) => target,
        Err(issue) => {
            return Ok(AttemptResult {
                status: None,
                duration_ms: 0,
                error: Some(issue.message),
                response_excerpt: None,
                verdict: Verdict::Retry,
            })
        }
    };
    let body = webhook::payload(event)?;
    let headers = signature::headers(
        &event.id,
        at.timestamp(),
        &body,
        &endpoint.signing_secrets(at),
    );
    let deliverer = app.webhooks.deliverer().map_err(Error::internal)?;
    Ok(deliverer.post(&target, &headers, body).await)
}

/// What a sweep did.
#[derive(Debug, Default, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SweepReport {
    /// Attempts made.
    pub attempted: usize,
    /// Tasks ended without an attempt (endpoint disabled or deleted, event expired).
    pub abandoned: usize,
    /// Due entries another claimant had taken (or the index was behind).
    pub skipped: usize,
}

/// Attempts every retry due by `now` (GSI5 `RETRY#<shard>`), a bounded
/// number per shard; the next sweep goes on.
pub async fn sweep(app: &App, now: DateTime<Utc>) -> Result<SweepReport> {
    let mut report = SweepReport::default();
    for shard in 0..WORK_SHARDS {
        let due = endpoint_store::due_tasks(&app.store, shard, now, SWEEP_BATCH).await?;
        for chunk in due.chunks(PARALLEL) {
            let runs = chunk.iter().map(|(t, task)| retry_task(app, t, task, now));
            for result in join_all(runs).await {
                match result? {
                    Retried::Attempted => report.attempted += 1,
                    Retried::Abandoned => report.abandoned += 1,
                    Retried::Skipped => report.skipped += 1,
                }
            }
        }
    }
    Ok(report)
}

enum Retried {
    Attempted,
    Abandoned,
    Skipped,
}

/// Claims a due task and attempts it, or ends it when its endpoint no
/// longer receives or its event has expired.
async fn retry_task(app: &App, tenant: &Tenant, due: &Task, now: DateTime<Utc>) -> Result<Retried> {
    let Some(claimed) = due.claim(now, lease(app)) else {
        return Ok(Retried::Skipped);
    };
    if !endpoint_store::put_task(&app.store, tenant, &claimed, Some(due)).await? {
        return Ok(Retried::Skipped);
    }
    let endpoint = found(endpoint_store::get_endpoint(&app.store, tenant, &due.endpoint_id).await)?;
    let event = found(events::get(&app.store, tenant, &due.event_id).await)?;
    match (endpoint, event) {
        (Some(e), Some(event)) if e.status == EndpointStatus::Enabled => {
            attempt(app, tenant, &e, &claimed, &event).await?;
            Ok(Retried::Attempted)
        }
        _ => {
            // Its last attempt no longer announces a retry.
            let last =
                endpoint_store::last_attempt(&app.store, &due.endpoint_id, &due.event_id).await?;
            let dropped = last.as_ref().and_then(DeliveryAttempt::retry_dropped);
            let abandoned = claimed.abandon(now);
            // Lost to another claimant (a redelivery): it goes on there.
            Ok(
                match endpoint_store::abandon_task(
                    &app.store,
                    tenant,
                    &abandoned,
                    &claimed,
                    dropped.as_ref(),
                )
                .await?
                {
                    true => Retried::Abandoned,
                    false => Retried::Skipped,
                },
            )
        }
    }
}

/// `None` for NOT_FOUND, the record otherwise.
fn found<T>(read: Result<T>) -> Result<Option<T>> {
    match read {
        Ok(v) => Ok(Some(v)),
        Err(Error::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Sends `event` again now, as a new run of attempts: to the named endpoint
/// (ENABLED and subscribed to the event's type), or to every endpoint that
/// received it. Returns the attempts made.
pub async fn redeliver(
    app: &App,
    tenant: &Tenant,
    event_id: &str,
    endpoint_id: Option<&str>,
) -> Result<Vec<DeliveryAttempt>> {
    let event = events::get(&app.store, tenant, event_id).await?;
    let endpoints = match endpoint_id {
        Some(id) => {
            let e = endpoint_store::get_endpoint(&app.store, tenant, id).await?;
            e.require_enabled("redeliver")?;
            if !e.subscribes(event.event_type) {
                return Err(Error::invalid(
                    &["endpointId"],
                    "invalid_value",
                    format!("the endpoint does not subscribe to {}", event.event_type),
                ));
            }
            vec![e]
        }
        None => endpoint_store::all_endpoints(&app.store, tenant)
            .await?
            .into_iter()
            .filter(|e| e.receives(&event))
            .collect(),
    };
    let runs = endpoints.iter().map(|e| rerun(app, tenant, e, &event));
    let mut attempts = Vec::new();
    for result in join_all(runs).await {
        attempts.extend(result?);
    }
    Ok(attempts)
}

/// Starts a new run of the event's task at the endpoint and attempts it;
/// `None` when a concurrent attempt holds the task.
async fn rerun(
    app: &App,
    tenant: &Tenant,
    endpoint: &Endpoint,
    event: &Published,
) -> Result<Option<DeliveryAttempt>> {
    let previous = endpoint_store::get_task(&app.store, &endpoint.id, &event.id).await?;
    let task = Task::start(
        previous.as_ref(),
        &endpoint.id,
        (&event.id, event.event_type),
        timestamp::now(),
        lease(app),
    );
    if !endpoint_store::put_task(&app.store, tenant, &task, previous.as_ref()).await? {
        return Ok(None);
    }
    let outcome = attempt(app, tenant, endpoint, &task, event).await?;
    Ok(outcome.map(|o| o.attempt))
}

/// What a replay scheduled.
#[derive(utoipa::ToSchema, Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Replay)]
pub struct ReplayReport {
    pub endpoint_id: String,
    #[serde(with = "timestamp::serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub from: DateTime<Utc>,
    #[serde(with = "timestamp::serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub to: DateTime<Utc>,
    /// Events of the window the endpoint subscribes to, scheduled for delivery now (at most
    /// 1000; a larger window is 400).
    pub scheduled: usize,
}

/// Schedules every event of `[from, to]` the endpoint subscribes to for
/// delivery now, each as a new run of its task; the sweep sends them.
/// Windows of more than `MAX_REPLAY` such events are refused.
pub async fn replay(
    app: &App,
    tenant: &Tenant,
    endpoint_id: &str,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
) -> Result<ReplayReport> {
    let endpoint = endpoint_store::get_endpoint(&app.store, tenant, endpoint_id).await?;
    endpoint.require_enabled("replay")?;
    let chosen = events_in_window(app, tenant, &endpoint, from, to).await?;
    let now = timestamp::now();
    let mut scheduled = 0;
    for event in &chosen {
        if schedule_now(app, tenant, &endpoint, event, now).await? {
            scheduled += 1;
        }
    }
    Ok(ReplayReport {
        endpoint_id: endpoint.id,
        from,
        to,
        scheduled,
    })
}

/// Schedules the event's task at the endpoint for delivery `now`, read
/// again while another writer changes it; false when every try lost.
async fn schedule_now(
    app: &App,
    tenant: &Tenant,
    endpoint: &Endpoint,
    event: &Published,
    now: DateTime<Utc>,
) -> Result<bool> {
    let key = (event.id.as_str(), event.event_type);
    let scheduled = retry(UPDATE_ATTEMPTS, || async move {
        let previous = endpoint_store::get_task(&app.store, &endpoint.id, &event.id).await?;
        let task = Task::schedule(previous.as_ref(), &endpoint.id, key, now);
        let put = endpoint_store::put_task(&app.store, tenant, &task, previous.as_ref()).await?;
        Ok(if put {
            Attempt::Done(())
        } else {
            Attempt::Conflict
        })
    })
    .await?;
    Ok(scheduled.is_some())
}

/// The events of the window the endpoint subscribes to.
async fn events_in_window(
    app: &App,
    tenant: &Tenant,
    endpoint: &Endpoint,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<Published>> {
    let filter = EventFilter {
        event_type: None,
        from: Some(from),
        to: Some(to),
    };
    let mut page = PageRequest {
        limit: MAX_LIMIT,
        ..PageRequest::default()
    };
    let mut chosen = Vec::new();
    loop {
        let found = events::list(&app.store, tenant, &filter, &page).await?;
        chosen.extend(
            found
                .items
                .into_iter()
                .filter(|e| endpoint.subscribes(e.event_type)),
        );
        if chosen.len() > MAX_REPLAY {
            return Err(Error::invalid(
                &["from"],
                "too_big",
                format!("the window holds more than {MAX_REPLAY} events for this endpoint; replay a narrower one"),
            ));
        }
        match found.next_cursor {
            Some(cursor) if found.has_more => page.cursor = Some(cursor),
            _ => return Ok(chosen),
        }
    }
}

/// Delivers a `webhook.test` event to the endpoint now, whatever its status:
/// one attempt, recorded, never retried, and not a tenant event.
pub async fn test(app: &App, tenant: &Tenant, endpoint_id: &str) -> Result<DeliveryAttempt> {
    let endpoint = endpoint_store::get_endpoint(&app.store, tenant, endpoint_id).await?;
    let at = timestamp::now();
    let event = webhook::test_event(&endpoint, at);
    let result = post(app, tenant, &endpoint, &event, at).await?;
    let record = webhook::test_attempt(&endpoint.id, &event, &result, at);
    endpoint_store::insert_attempt(&app.store, tenant, &record).await?;
    Ok(record)
}

/// The SSRF guard's verdict on an endpoint URL, for creation and PATCH.
async fn url_verdict(
    app: &App,
    tenant: &Tenant,
    url: &str,
) -> std::result::Result<(), domain::issue::Issue> {
    check_url(url, tenant.mode, app.webhooks.reach())
        .await
        .map(|_| ())
}

/// Creates an endpoint whose URL passes the guard.
pub async fn create_endpoint(
    app: &App,
    tenant: &Tenant,
    input: webhook::EndpointDraft,
) -> Result<Endpoint> {
    let verdict = url_verdict(app, tenant, &input.url).await;
    let endpoint = Endpoint::create(input, verdict, timestamp::now())?;
    let endpoint = &endpoint;
    retry_on_conflict(UPDATE_ATTEMPTS, Endpoint::WHAT, || async move {
        let cap = app.config.webhooks.max_endpoints;
        let count = endpoint_store::endpoint_count(&app.store, tenant).await?;
        if let Err(full) = webhook::room_for_endpoint(count.value(), cap) {
            // At the cap a kept count is checked against the list once.
            return match count {
                EndpointCount::Kept(n)
                    if endpoint_store::mend_endpoint_count(&app.store, tenant, n).await? =>
                {
                    Ok(Attempt::Conflict)
                }
                _ => Err(full),
            };
        }
        Ok(
            match endpoint_store::insert_endpoint(&app.store, tenant, endpoint, count, cap).await? {
                true => Attempt::Done(()),
                false => Attempt::Conflict,
            },
        )
    })
    .await?;
    Ok(endpoint.clone())
}

/// Applies a PATCH; a new URL passes the guard first.
pub async fn update_endpoint(
    app: &App,
    tenant: &Tenant,
    id: &str,
    patch: webhook::EndpointChanges,
) -> Result<Endpoint> {
    let verdict = match &patch.url {
        domain::patch::Patch::Value(url) => url_verdict(app, tenant, url).await,
        _ => Ok(()),
    };
    edited::edit(&app.store, tenant, id, |current: &Endpoint| {
        current.apply(patch.clone(), verdict.clone(), timestamp::now())
    })
    .await
}

/// Rotates the endpoint's secret.
pub async fn rotate_secret(app: &App, tenant: &Tenant, id: &str) -> Result<Endpoint> {
    edited::edit(&app.store, tenant, id, |current: &Endpoint| {
        Ok(current.rotate(timestamp::now()))
    })
    .await
}

/// Deletes a webhook endpoint for good; the endpoint as it was.
pub async fn delete_endpoint(app: &App, tenant: &Tenant, id: &str) -> Result<Endpoint> {
    let store = &app.store;
    retry_on_conflict(UPDATE_ATTEMPTS, Endpoint::WHAT, || async move {
        let (current, count) = tokio::join!(
            endpoint_store::get_endpoint(store, tenant, id),
            endpoint_store::endpoint_count(store, tenant)
        );
        let current = current?;
        Ok(
            match endpoint_store::delete_endpoint(store, tenant, &current, count?).await? {
                true => Attempt::Done(current),
                false => Attempt::Conflict,
            },
        )
    })
    .await
}
