//! Webhook endpoints (`whe_…`) and the bookkeeping of their deliveries, as
//! pure decisions: what an endpoint may be created or changed to, what a
//! rotation does to its secrets, and, given one attempt's result and the
//! retry schedule, what the delivery task, the endpoint and the attempt
//! record become. The store commits these; `webhooks::dispatch` runs them.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::edit::{self, Stamped, Stamps};
use crate::enums::wire_enum;
use crate::error::Error;
use crate::event::{EventType, Published};
use crate::field;
use crate::ids::{new_id, IdKind};
use crate::issue::Issue;
use crate::patch::Patch;
use crate::status::Transition;
use crate::timestamp::{self, serde_ts, serde_ts_opt};
use crate::validation::Issues;
use crate::webhook_schedule::{RetrySchedule, DISABLE_AFTER};
use crate::webhook_signature::Secret;

wire_enum! {
    /// Whether an endpoint receives deliveries.
    #[schema(as = WebhookEndpointStatus)]
    pub enum EndpointStatus {
        Enabled = "ENABLED",
        Disabled = "DISABLED",
    }
}

wire_enum! {
    /// An attempt's own outcome: SUCCEEDED (a 2xx answer) or FAILED (anything else; when a
    /// retry is due, `nextAttemptAt` says when). PENDING is a delivery not yet attempted, so
    /// no listed attempt has it.
    pub enum DeliveryStatus {
        Succeeded = "SUCCEEDED",
        Failed = "FAILED",
        Pending = "PENDING",
    }
}

crate::status::statuses!(EndpointStatus, DeliveryStatus);

impl From<Verdict> for DeliveryStatus {
    /// An attempt's own outcome.
    fn from(verdict: Verdict) -> Self {
        match verdict {
            Verdict::Delivered => DeliveryStatus::Succeeded,
            Verdict::Gone | Verdict::Retry => DeliveryStatus::Failed,
        }
    }
}

/// `eventTypes` entry that subscribes to every type.
pub const ALL_TYPES: &str = "*";
/// Most `eventTypes` entries.
pub const MAX_EVENT_TYPES: usize = 50;
/// How long the previous secret still signs after a rotation.
pub const ROTATION_OVERLAP_HOURS: i64 = 24;
/// How far back a replay may reach (the events' retention).
pub const REPLAY_DAYS: i64 = 30;

/// `disabledReason` after a 410 answer.
pub const GONE_REASON: &str = "the endpoint answered 410 Gone";
/// `disabledReason` after `DISABLE_AFTER` of failures only.
pub const FAILING_REASON: &str = "every delivery failed for 5 days";
/// `disabledReason` when the merchant disables the endpoint.
pub const MANUAL_REASON: &str = "disabled through the API";
/// The most endpoints an account holds in one mode by default (Stripe's
/// limit too): every event reads them all and may go to each, so their
/// number bounds what one event costs.
pub const MAX_ENDPOINTS: u64 = 16;

/// Whether a tenant holding `count` endpoints may add one under the cap
/// `max`: LIMIT_EXCEEDED at the cap.
pub fn room_for_endpoint(count: u64, max: u64) -> Result<(), Error> {
    if count >= max {
        return Err(Error::LimitExceeded(format!(
            "an account holds at most {max} webhook endpoints in each mode; delete one first"
        )));
    }
    Ok(())
}

/// An endpoint as stored. Its `Debug` form hides the secrets (see `Secret`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub id: String,
    pub url: String,
    pub event_types: Vec<String>,
    pub description: Option<String>,
    pub status: EndpointStatus,
    pub disabled_reason: Option<String>,
    /// Private: signs every delivery.
    #[serde(with = "secret_text")]
    pub secret: Secret,
    /// Private: the secret before the last rotation, signing until `previous_secret_until`.
    #[serde(with = "secret_text_opt", default)]
    pub previous_secret: Option<Secret>,
    #[serde(with = "serde_ts_opt", default)]
    pub previous_secret_until: Option<DateTime<Utc>>,
    /// Private: the start of the current streak of failed attempts.
    #[serde(with = "serde_ts_opt", default)]
    pub failing_since: Option<DateTime<Utc>>,
    /// Its version and times.
    #[serde(flatten)]
    pub stamps: Stamps,
}

/// A new endpoint as the merchant asks for it (`wire::webhook::NewEndpoint`
/// is its body).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EndpointDraft {
    pub url: String,
    /// `None`: every type.
    pub event_types: Option<Vec<String>>,
    pub description: Option<String>,
}

/// An endpoint's changes: only what is given changes
/// (`wire::webhook::EndpointPatch` is their body).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EndpointChanges {
    pub url: Patch<String>,
    pub event_types: Patch<Vec<String>>,
    pub description: Patch<String>,
    pub status: Patch<EndpointStatus>,
}

/// The `eventTypes` entries, checked: 1-50 known type names (`webhook.test`
/// is sent to every endpoint on request and is not subscribed to) or `["*"]`
/// alone; repeated entries are kept once.
fn event_types(types: Vec<String>, issues: &mut Issues) -> Vec<String> {
    if types.is_empty() || types.len() > MAX_EVENT_TYPES {
        let code = if types.is_empty() {
            "too_small"
        } else {
            "too_big"
        };
        issues.add(
            &["eventTypes"],
            code,
            format!("eventTypes must hold 1 to {MAX_EVENT_TYPES} entries"),
        );
    }
    let mut kept: Vec<String> = Vec::new();
    for (i, t) in types.into_iter().enumerate() {
        let known =
            t == ALL_TYPES || EventType::parse(&t).is_some_and(|e| e != EventType::WebhookTest);
        if !known {
            issues.check::<()>(Err(Issue {
                path: vec![Value::from("eventTypes"), Value::from(i)],
                code: "invalid_enum_value".into(),
                message: "each entry must be an event type name (see GET /api/v1/openapi.json, EventType) or *".into(),
            }));
        } else if !kept.contains(&t) {
            kept.push(t);
        }
    }
    if kept.len() > 1 && kept.iter().any(|t| t == ALL_TYPES) {
        issues.add(
            &["eventTypes"],
            "invalid_value",
            "* subscribes to every type and must be the only entry",
        );
    }
    kept
}

fn description(text: String, issues: &mut Issues) -> Option<String> {
    issues.check(field::ShortText::parse("description", &text));
    Some(text)
}

impl Stamped for Endpoint {
    fn stamp(&mut self, now: DateTime<Utc>) {
        self.stamps.stamp(now);
    }
}

impl Endpoint {
    /// A new ENABLED endpoint with a fresh secret. `url_check` is the SSRF
    /// guard's verdict on `input.url` (it needs DNS, so it runs before).
    pub fn create(
        input: EndpointDraft,
        url_check: Result<(), Issue>,
        now: DateTime<Utc>,
    ) -> Result<Endpoint, Error> {
        let mut issues = Issues::new();
        issues.check(url_check);
        let types = event_types(
            input.event_types.unwrap_or_else(|| vec![ALL_TYPES.into()]),
            &mut issues,
        );
        let description = input.description.and_then(|d| description(d, &mut issues));
        issues.finish()?;
        Ok(Endpoint {
            id: new_id(IdKind::WebhookEndpoint),
            url: input.url,
            event_types: types,
            description,
            status: EndpointStatus::Enabled,
            disabled_reason: None,
            secret: Secret::generate(),
            previous_secret: None,
            previous_secret_until: None,
            failing_since: None,
            stamps: Stamps::new(now),
        })
    }

    /// Applies a PATCH. `url_check` is the guard's verdict on a new `url`
    /// (`Ok` when none was sent). Enabling clears the reason and the failing
    /// streak; disabling records that the merchant did it.
    pub fn apply(
        &self,
        patch: EndpointChanges,
        url_check: Result<(), Issue>,
        now: DateTime<Utc>,
    ) -> Result<Endpoint, Error> {
        let mut issues = Issues::new();
        let mut e = self.clone();
        issues.check(url_check);
        if let Some(url) = patch.url.required("url", &mut issues) {
            e.url = url;
        }
        if let Some(types) = patch.event_types.required("eventTypes", &mut issues) {
            e.event_types = event_types(types, &mut issues);
        }
        match patch.description {
            Patch::Value(d) => e.description = description(d, &mut issues),
            Patch::Null => e.description = None,
            Patch::Absent => {}
        }
        match patch.status.required("status", &mut issues) {
            Some(s) if s == self.status => {}
            Some(EndpointStatus::Enabled) => {
                e.status = EndpointStatus::Enabled;
                e.disabled_reason = None;
                e.failing_since = None;
            }
            Some(EndpointStatus::Disabled) => {
                e.status = EndpointStatus::Disabled;
                e.disabled_reason = Some(MANUAL_REASON.into());
            }
            None => {}
        }
        issues.finish()?;
        Ok(edit::stamped(self, e, now))
    }

    /// A new secret; the current one keeps signing for 24 hours (one
    /// rotation replaces an earlier previous secret).
    pub fn rotate(&self, now: DateTime<Utc>) -> Endpoint {
        let mut e = self.clone();
        e.previous_secret = Some(self.secret.clone());
        e.previous_secret_until = Some(now + Duration::hours(ROTATION_OVERLAP_HOURS));
        e.secret = Secret::generate();
        e.stamps.stamp(now);
        e
    }

    /// The secrets a delivery at `now` is signed with, newest first.
    pub fn signing_secrets(&self, now: DateTime<Utc>) -> Vec<&Secret> {
        let mut secrets = vec![&self.secret];
        if let (Some(old), Some(until)) = (&self.previous_secret, self.previous_secret_until) {
            if now < until {
                secrets.push(old);
            }
        }
        secrets
    }

    /// Whether the endpoint subscribes to events of type `t`.
    pub fn subscribes(&self, t: EventType) -> bool {
        t.subscribed(&self.event_types)
    }

    /// Whether a new event goes to this endpoint: ENABLED, subscribed, and
    /// created no later than the event (a stream read again after a restart
    /// must not send an endpoint the events from before it existed).
    pub fn receives(&self, event: &Published) -> bool {
        self.status == EndpointStatus::Enabled
            && self.subscribes(event.event_type)
            && self.stamps.created_at <= event.created_at
    }

    /// 409 unless ENABLED (redeliver and replay need a receiving endpoint).
    pub fn require_enabled(&self, action: &'static str) -> Result<(), Error> {
        if self.status == EndpointStatus::Enabled {
            Ok(())
        } else {
            Err(Error::state(
                "webhook endpoint",
                self.status.as_str(),
                action,
            ))
        }
    }
}

/// The delivery of one event to one endpoint, across its attempts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub endpoint_id: String,
    pub event_id: String,
    pub event_type: EventType,
    /// Attempts made in the current run (a redelivery starts a new run).
    pub attempt: u32,
    pub status: DeliveryStatus,
    /// While PENDING: when the next attempt is due, or while one runs, when
    /// its lease ends (so a crashed attempt is taken up again by the sweep).
    #[serde(with = "serde_ts_opt", default)]
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// Bumped by every write: an attempt is recorded only by its claimant.
    pub version: u64,
    #[serde(with = "serde_ts")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "serde_ts")]
    pub updated_at: DateTime<Utc>,
}

impl Task {
    /// When the retry sweep takes it up: while PENDING, its next attempt's
    /// time (or the end of the running attempt's lease).
    pub fn sweep_at(&self) -> Option<DateTime<Utc>> {
        self.next_attempt_at
            .filter(|_| self.status == DeliveryStatus::Pending)
    }

    /// A run of attempts starting now, claimed by its creator for `lease`.
    /// `previous` is the task of an earlier run (redeliver, replay), if any.
    pub fn start(
        previous: Option<&Task>,
        endpoint_id: &str,
        event: (&str, EventType),
        now: DateTime<Utc>,
        lease: Duration,
    ) -> Task {
        Task {
            endpoint_id: endpoint_id.to_string(),
            event_id: event.0.to_string(),
            event_type: event.1,
            attempt: 0,
            status: DeliveryStatus::Pending,
            next_attempt_at: Some(now + lease),
            version: previous.map_or(0, |t| t.version + 1),
            created_at: previous.map_or(now, |t| t.created_at),
            updated_at: now,
        }
    }

    /// A run due at once, left to the sweep (replay).
    pub fn schedule(
        previous: Option<&Task>,
        endpoint_id: &str,
        event: (&str, EventType),
        now: DateTime<Utc>,
    ) -> Task {
        Task::start(previous, endpoint_id, event, now, Duration::zero())
    }

    /// The task claimed for one attempt until `now + lease`; `None` unless a
    /// retry is due.
    pub fn claim(&self, now: DateTime<Utc>, lease: Duration) -> Option<Task> {
        let due = self.status == DeliveryStatus::Pending
            && self.next_attempt_at.is_some_and(|t| t <= now);
        due.then(|| Task {
            next_attempt_at: Some(now + lease),
            version: self.version + 1,
            updated_at: now,
            ..self.clone()
        })
    }

    /// The task ended without an attempt: its endpoint no longer receives.
    pub fn abandon(&self, now: DateTime<Utc>) -> Task {
        Task {
            status: DeliveryStatus::Failed,
            next_attempt_at: None,
            version: self.version + 1,
            updated_at: now,
            ..self.clone()
        }
    }
}

/// One attempt, as `GET /webhook-endpoints/{id}/deliveries` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryAttempt {
    pub id: String,
    pub endpoint_id: String,
    pub event_id: String,
    pub event_type: EventType,
    /// 1 for the first attempt of a run.
    pub attempt: u32,
    /// This attempt's own outcome: SUCCEEDED or FAILED (with
    /// `next_attempt_at` when a retry is due). PENDING is a delivery's state
    /// (an attempt not yet made), never an attempt's.
    pub status: DeliveryStatus,
    pub response_status: Option<u16>,
    pub duration_ms: u64,
    pub error: Option<String>,
    /// The start of the answer, at most 1 KB.
    pub response_body: Option<String>,
    #[serde(with = "serde_ts")]
    pub attempted_at: DateTime<Utc>,
    #[serde(with = "serde_ts_opt", default)]
    pub next_attempt_at: Option<DateTime<Utc>>,
}

impl DeliveryAttempt {
    /// This attempt once the retry it announced will not be made (its
    /// endpoint was disabled or deleted, or its event expired, before the
    /// retry came due): `None` when it announced none.
    pub fn retry_dropped(&self) -> Option<DeliveryAttempt> {
        self.next_attempt_at.map(|_| DeliveryAttempt {
            next_attempt_at: None,
            ..self.clone()
        })
    }

    fn new(
        task: &Task,
        result: &AttemptResult,
        status: DeliveryStatus,
        attempted_at: DateTime<Utc>,
    ) -> DeliveryAttempt {
        DeliveryAttempt {
            id: new_id(IdKind::Delivery),
            endpoint_id: task.endpoint_id.clone(),
            event_id: task.event_id.clone(),
            event_type: task.event_type,
            attempt: task.attempt + 1,
            status,
            response_status: result.status,
            duration_ms: result.duration_ms,
            error: result.error.clone(),
            response_body: result.response_excerpt.clone(),
            attempted_at,
            next_attempt_at: None,
        }
    }
}

/// What an attempt changes on its endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointChange {
    /// Nothing.
    Keep,
    /// A failing streak starts at this time (kept if one already started).
    StartFailing(DateTime<Utc>),
    /// A success ends the failing streak.
    Recovered,
    /// The endpoint is disabled, for this reason.
    Disable(&'static str),
}

impl EndpointChange {
    /// A disable takes an enabled endpoint, and only an enabled one, to DISABLED.
    pub const DISABLING: Transition<EndpointStatus> = Transition {
        from: EndpointStatus::Enabled,
        to: EndpointStatus::Disabled,
    };
}

/// The decision after one attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub task: Task,
    pub attempt: DeliveryAttempt,
    pub endpoint: EndpointChange,
}

/// Decides what an attempt of the claimed `task`, started at `attempted_at`
/// and ended at `now` with `result`, leaves behind: 2xx delivered; 410 the
/// endpoint is disabled; otherwise a retry after the schedule's next delay,
/// FAILED after the last, and the endpoint disabled once its deliveries have
/// all failed for `DISABLE_AFTER`.
pub fn after_attempt(
    task: &Task,
    endpoint: &Endpoint,
    result: &AttemptResult,
    schedule: &RetrySchedule,
    attempted_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Outcome {
    let mut next = Task {
        attempt: task.attempt + 1,
        status: DeliveryStatus::Failed,
        next_attempt_at: None,
        version: task.version + 1,
        updated_at: now,
        ..task.clone()
    };
    let failing = match endpoint.failing_since {
        Some(_) => EndpointChange::Keep,
        None => EndpointChange::StartFailing(attempted_at),
    };
    let change = match result.verdict {
        Verdict::Delivered => {
            next.status = DeliveryStatus::Succeeded;
            match endpoint.failing_since {
                Some(_) => EndpointChange::Recovered,
                None => EndpointChange::Keep,
            }
        }
        Verdict::Gone => EndpointChange::Disable(GONE_REASON),
        Verdict::Retry => {
            let streak = endpoint.failing_since.unwrap_or(attempted_at);
            let limit = Duration::from_std(DISABLE_AFTER).unwrap_or(Duration::MAX);
            let delay = schedule
                .next_delay(next.attempt)
                .and_then(|d| Duration::from_std(d).ok());
            if now - streak >= limit {
                EndpointChange::Disable(FAILING_REASON)
            } else {
                if let Some(delay) = delay {
                    next.status = DeliveryStatus::Pending;
                    next.next_attempt_at = Some(now + delay);
                }
                failing
            }
        }
    };
    let mut attempt = DeliveryAttempt::new(task, result, result.verdict.into(), attempted_at);
    attempt.next_attempt_at = next.next_attempt_at;
    Outcome {
        task: next,
        attempt,
        endpoint: change,
    }
}

/// The record of a `webhook.test` delivery: one attempt, never retried,
/// and no effect on the endpoint's standing.
pub fn test_attempt(
    endpoint_id: &str,
    event: &Published,
    result: &AttemptResult,
    attempted_at: DateTime<Utc>,
) -> DeliveryAttempt {
    let task = Task::start(
        None,
        endpoint_id,
        (&event.id, event.event_type),
        attempted_at,
        Duration::zero(),
    );
    DeliveryAttempt::new(&task, result, result.verdict.into(), attempted_at)
}

/// The `webhook.test` event sent by `POST /webhook-endpoints/{id}/test`.
pub fn test_event(endpoint: &Endpoint, now: DateTime<Utc>) -> Published {
    let data = serde_json::json!({
        "endpointId": endpoint.id,
        "message": "a test delivery requested through the API",
    });
    Published::unstored(EventType::WebhookTest, data, now)
}

/// The body of a delivery: `{"id","type","timestamp","data"}`, where
/// `timestamp` is when the event happened.
pub fn payload(event: &Published) -> Result<Vec<u8>, Error> {
    #[derive(Serialize)]
    struct Payload<'a> {
        id: &'a str,
        #[serde(rename = "type")]
        event_type: EventType,
        timestamp: String,
        data: &'a Value,
    }
    serde_json::to_vec(&Payload {
        id: &event.id,
        event_type: event.event_type,
        timestamp: timestamp::format(&event.created_at),
        data: &event.data,
    })
    .map_err(Error::internal)
}

/// Secrets stored in their text form (`whsec_…`).
mod secret_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::webhook_signature::Secret;

    pub fn serialize<S: Serializer>(secret: &Secret, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&secret.to_text())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Secret, D::Error> {
        let text = String::deserialize(d)?;
        Secret::parse(&text).ok_or_else(|| serde::de::Error::custom("malformed secret"))
    }
}

/// Optional secrets stored in their text form.
mod secret_text_opt {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::webhook_signature::Secret;

    pub fn serialize<S: Serializer>(secret: &Option<Secret>, s: S) -> Result<S::Ok, S::Error> {
        match secret {
            Some(secret) => s.serialize_str(&secret.to_text()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Secret>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) => Secret::parse(&text)
                .map(Some)
                .ok_or_else(|| serde::de::Error::custom("malformed secret")),
        }
    }
}

/// What the retry logic does after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A 2xx answer: the delivery succeeded.
    Delivered,
    /// A 410 answer: the receiver asks us to stop; the endpoint is disabled.
    Gone,
    /// Anything else (other statuses, redirects, timeouts, connection errors).
    Retry,
}

/// The outcome of one attempt, as a delivery record keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptResult {
    /// The response status, if the receiver answered.
    pub status: Option<u16>,
    /// From sending the request to the end of the kept excerpt.
    pub duration_ms: u64,
    /// Why no answer came (timeout, connection error), if so.
    pub error: Option<String>,
    /// The start of the response body, at most 1 KB.
    pub response_excerpt: Option<String>,
    /// What to do next.
    pub verdict: Verdict,
}

/// The body of every delivery, as the endpoint receives it.
pub struct WebhookPayload;

// The description of [`WebhookPayload`].
crate::described!(
    WebhookPayload,
    "WebhookPayload",
    serde_json::json!({"type": "object", "required": ["id", "type", "timestamp", "data"], "description": "The body of every delivery (Standard Webhooks). Headers: `webhook-id` (the event id; dedupe on it), `webhook-timestamp` (Unix seconds of the attempt), `webhook-signature` (`v1,<base64 HMAC-SHA256 of \"{webhook-id}.{webhook-timestamp}.{body}\">`, keyed with the decoded secret; space-separated when two secrets sign, the 24 hours after a rotation), `content-type: application/json`. See docs/webhooks.md.", "properties": {"id": {"type": "string", "description": "The event id (`evt_…`)."}, "type": {"$ref": "#/components/schemas/EventType"}, "timestamp": {"type": "string", "format": "date-time", "description": "When the event happened (its `createdAt`)."}, "data": {"type": "object", "description": "The record's API view after the change (`affiliate.tier_changed`: an `AffiliateTierChange`)."}}}),
);

#[cfg(test)]
#[path = "webhook_tests.rs"]
mod tests;
