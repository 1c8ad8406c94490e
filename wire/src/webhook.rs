//! What the API shows of webhook endpoints, their deliveries and the events.

use chrono::Duration;
use chrono::{DateTime, Utc};
use domain::error::Error;
use domain::event::{EventType, Published};
use domain::field;
use domain::patch::Patch;
use domain::timestamp::Bound;
use domain::timestamp::Timestamp;
use domain::validation::Issues;
use domain::webhook::EndpointChanges;
use domain::webhook::EndpointDraft;
use domain::webhook::ALL_TYPES;
use domain::webhook::MAX_EVENT_TYPES;
use domain::webhook::REPLAY_DAYS;
use domain::webhook::{DeliveryAttempt, DeliveryStatus, Endpoint, EndpointStatus};
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

/// The merchant's view of an endpoint: never a secret.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = WebhookEndpoint)]
pub struct EndpointView<'a> {
    #[schema(value_type = domain::ids::WebhookEndpointId)]
    id: &'a str,
    object: &'static str,
    #[schema(format = "uri")]
    url: &'a str,
    #[schema(value_type = EventTypesSchema)]
    event_types: &'a [String],
    description: Option<&'a str>,
    status: EndpointStatus,
    /// Why the endpoint is DISABLED: a 410 answer, 5 days of failed deliveries, or the
    /// merchant.
    disabled_reason: Option<&'a str>,
    created_at: Timestamp,
    updated_at: Timestamp,
}

impl<'a> From<&'a Endpoint> for EndpointView<'a> {
    fn from(e: &'a Endpoint) -> Self {
        EndpointView {
            id: &e.id,
            object: "webhook_endpoint",
            url: &e.url,
            event_types: &e.event_types,
            description: e.description.as_deref(),
            status: e.status,
            disabled_reason: e.disabled_reason.as_deref(),
            created_at: e.stamps.created_at.into(),
            updated_at: e.stamps.updated_at.into(),
        }
    }
}

/// The merchant's view of a delivery attempt.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = WebhookDelivery)]
pub struct DeliveryView<'a> {
    #[schema(value_type = domain::ids::DeliveryId)]
    id: &'a str,
    object: &'static str,
    endpoint_id: &'a str,
    event_id: &'a str,
    event_type: EventType,
    /// 1 for the first attempt of a run; a redelivery or replay starts a new run.
    #[schema(minimum = 1)]
    attempt: u32,
    status: DeliveryStatus,
    response_status: Option<u16>,
    duration_ms: u64,
    /// Why no answer came (timeout, connection error, refused URL).
    error: Option<&'a str>,
    /// The start of the answer, at most 1 KB.
    #[schema(max_length = 1024)]
    response_body: Option<&'a str>,
    attempted_at: Timestamp,
    next_attempt_at: Option<Timestamp>,
}

impl<'a> From<&'a DeliveryAttempt> for DeliveryView<'a> {
    fn from(d: &'a DeliveryAttempt) -> Self {
        DeliveryView {
            id: &d.id,
            object: "webhook_delivery",
            endpoint_id: &d.endpoint_id,
            event_id: &d.event_id,
            event_type: d.event_type,
            attempt: d.attempt,
            status: d.status,
            response_status: d.response_status,
            duration_ms: d.duration_ms,
            error: d.error.as_deref(),
            response_body: d.response_body.as_deref(),
            attempted_at: d.attempted_at.into(),
            next_attempt_at: d.next_attempt_at.map(Timestamp),
        }
    }
}

/// The merchant's view of an event.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Event)]
pub struct EventView<'a> {
    #[schema(value_type = domain::ids::EventId)]
    id: &'a str,
    object: &'static str,
    #[serde(rename = "type")]
    event_type: EventType,
    created_at: Timestamp,
    /// The record's API view after the change (a conversion for `conversion.*`, and so on);
    /// never a private field.
    #[schema(value_type = Object)]
    data: &'a Value,
}

impl<'a> From<&'a Published> for EventView<'a> {
    fn from(e: &'a Published) -> Self {
        EventView {
            id: &e.id,
            object: "event",
            event_type: e.event_type,
            created_at: e.created_at.into(),
            data: &e.data,
        }
    }
}

/// The answer to a creation or a rotation: the view and, this once, the secret.
#[derive(Debug, Serialize)]
pub struct EndpointWithSecret<'a> {
    #[serde(flatten)]
    endpoint: EndpointView<'a>,
    secret: String,
}

// `WebhookEndpoint` and, this once, its secret.
domain::described!(
    EndpointWithSecret<'_>,
    "WebhookEndpointWithSecret",
    serde_json::json!({"allOf": [{"$ref": "#/components/schemas/WebhookEndpoint"}, {"type": "object", "required": ["secret"], "properties": {"secret": {"type": "string", "example": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "description": "`whsec_` + base64 of 32 random bytes. Shown only in the answers to creation and rotation."}}}]}),
);

impl<'a> From<&'a Endpoint> for EndpointWithSecret<'a> {
    fn from(e: &'a Endpoint) -> Self {
        EndpointWithSecret {
            endpoint: EndpointView::from(e),
            secret: e.secret.to_text(),
        }
    }
}

/// The answer to a DELETE: the endpoint as it was, marked deleted.
#[derive(Debug, Serialize)]
pub struct DeletedEndpoint<'a> {
    #[serde(flatten)]
    endpoint: EndpointView<'a>,
    deleted: bool,
}

// `WebhookEndpoint` marked deleted.
domain::described!(
    DeletedEndpoint<'_>,
    "DeletedWebhookEndpoint",
    serde_json::json!({"allOf": [{"$ref": "#/components/schemas/WebhookEndpoint"}, {"type": "object", "required": ["deleted"], "properties": {"deleted": {"type": "boolean", "const": true}}}]}),
);

impl<'a> From<&'a Endpoint> for DeletedEndpoint<'a> {
    fn from(e: &'a Endpoint) -> Self {
        DeletedEndpoint {
            endpoint: EndpointView::from(e),
            deleted: true,
        }
    }
}

/// Body of `POST /api/v1/webhook-endpoints/{id}/replay`.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayRequest {
    /// ISO-8601 date (whole UTC day) or date-time, at most 30 days back.
    pub from: String,
    /// ISO-8601 date or date-time; default now.
    pub to: Option<String>,
}

impl ReplayRequest {
    /// The window: `from` at most 30 days back, `to` (default now) not
    /// before `from`; dates cover their whole UTC day.
    pub fn window(&self, now: DateTime<Utc>) -> Result<(DateTime<Utc>, DateTime<Utc>), Error> {
        let mut issues = Issues::new();
        let bound = |name: &str, raw: &str, issues: &mut Issues| {
            let b = Bound::parse(raw);
            if b.is_none() {
                issues.add(
                    &[name],
                    "invalid_date",
                    format!("{name} must be an ISO-8601 date (2026-01-31) or date-time"),
                );
            }
            b
        };
        let from = bound("from", &self.from, &mut issues).map(Bound::start);
        let to = match &self.to {
            Some(raw) => bound("to", raw, &mut issues).map(Bound::end),
            None => Some(now),
        };
        if let Some(f) = from {
            if f < now - Duration::days(REPLAY_DAYS) {
                issues.add(
                    &["from"],
                    "too_small",
                    format!("from must be at most {REPLAY_DAYS} days back (events are kept {REPLAY_DAYS} days)"),
                );
            }
        }
        if let (Some(f), Some(t)) = (from, to) {
            if f > t {
                // Without `to` the window ends now.
                let end = if self.to.is_some() {
                    "to"
                } else {
                    "now (to's default)"
                };
                issues.add(
                    &["from"],
                    "invalid_range",
                    format!("from must not be after {end}"),
                );
            }
        }
        issues.finish()?;
        Ok((from.unwrap_or(now), to.unwrap_or(now)))
    }
}

/// Body of `POST /api/v1/events/{id}/redeliver`.
#[derive(utoipa::ToSchema, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RedeliverRequest {
    /// Only this endpoint (ENABLED, subscribed to the event's type). Without it: every ENABLED
    /// endpoint that received the event.
    #[schema(value_type = Option<field::IdRef>)]
    pub endpoint_id: Option<String>,
}

/// Body of `POST /api/v1/webhook-endpoints`.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = WebhookEndpointCreate)]
pub struct NewEndpoint {
    /// An `https` URL whose host resolves to public addresses only (no loopback, private,
    /// link-local, unique-local or multicast address).
    #[schema(value_type = field::WebhookUrl)]
    pub url: String,
    #[schema(value_type = Option<EventTypesSchema>)]
    pub event_types: Option<Vec<String>>,
    #[schema(value_type = Option<field::ShortText>)]
    pub description: Option<String>,
}

/// Only the fields sent change. Setting ENABLED clears `disabledReason`.
#[derive(utoipa::ToSchema, Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = WebhookEndpointUpdate)]
pub struct EndpointPatch {
    #[serde(default)]
    #[schema(value_type = field::WebhookUrl)]
    pub url: Patch<String>,
    #[serde(default)]
    #[schema(value_type = EventTypesSchema)]
    pub event_types: Patch<Vec<String>>,
    #[serde(default)]
    #[schema(value_type = Option<field::ShortText>)]
    pub description: Patch<String>,
    #[serde(default)]
    #[schema(value_type = EndpointStatus)]
    pub status: Patch<EndpointStatus>,
}

/// The description of `eventTypes`: `["*"]` alone, or 1 to
/// [`MAX_EVENT_TYPES`] named types that may be subscribed to.
pub struct EventTypesSchema;

domain::described!(EventTypesSchema, "EventTypes", {
    let named: Vec<&str> = EventType::ALL
        .into_iter()
        .filter(|e| *e != EventType::WebhookTest)
        .map(EventType::as_str)
        .collect();
    serde_json::json!({
        "description": "Event type names (repeated entries are kept once), or `[\"*\"]` alone for every type (the default).",
        "oneOf": [
            {"title": "EveryEventType", "type": "array", "minItems": 1, "maxItems": 1, "items": {"type": "string", "enum": [ALL_TYPES]}},
            {"title": "NamedEventTypes", "type": "array", "minItems": 1, "maxItems": MAX_EVENT_TYPES, "items": {"type": "string", "enum": named}},
        ],
    })
});

impl From<NewEndpoint> for EndpointDraft {
    fn from(b: NewEndpoint) -> Self {
        moved! { b => EndpointDraft {
            url, event_types, description,
        } }
    }
}

impl From<EndpointPatch> for EndpointChanges {
    fn from(b: EndpointPatch) -> Self {
        moved! { b => EndpointChanges {
            url, event_types, description, status,
        } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::timestamp;

    #[test]
    fn views_never_show_a_secret_except_on_creation() {
        let at = domain::timestamp::parse_datetime("2026-11-22T10:00:00.000Z").unwrap();
        let input: NewEndpoint =
            serde_json::from_value(serde_json::json!({"url": "https://hooks.example.com/x"}))
                .unwrap();
        let e = Endpoint::create(input.into(), Ok(()), at)
            .unwrap()
            .rotate(at);
        let text = e.secret.to_text();
        let old = e.previous_secret.as_ref().unwrap().to_text();
        let view = serde_json::to_string(&EndpointView::from(&e)).unwrap();
        assert!(
            !view.contains(&text[6..]) && !view.contains(&old[6..]),
            "{view}"
        );
        assert!(!view.contains("secret"));
        let deleted = serde_json::to_value(DeletedEndpoint::from(&e)).unwrap();
        assert_eq!(deleted["deleted"], true);
        assert!(deleted.get("secret").is_none());
        let created = serde_json::to_value(EndpointWithSecret::from(&e)).unwrap();
        assert_eq!(created["secret"], text.as_str());
        assert_eq!(created["object"], "webhook_endpoint");
    }

    #[test]
    fn replay_windows_reach_30_days_back_at_most() {
        let now = timestamp::parse_datetime("2026-11-22T10:00:00.000Z").unwrap();
        let req = |from: &str, to: Option<&str>| ReplayRequest {
            from: from.to_string(),
            to: to.map(str::to_string),
        };
        let ok = req("2026-11-01", Some("2026-11-02")).window(now).unwrap();
        assert_eq!(timestamp::format(&ok.0), "2026-11-01T00:00:00.000Z");
        assert_eq!(timestamp::format(&ok.1), "2026-11-02T23:59:59.999Z");
        assert_eq!(
            req("2026-11-22T09:00:00Z", None).window(now).unwrap().1,
            now
        );
        let refused = [
            req("2026-10-22T09:59:59Z", None),
            req("yesterday", None),
            req("2026-11-20", Some("2026-11-19")),
            req("2026-11-20", Some("soon")),
        ];
        for r in refused {
            assert!(r.window(now).is_err(), "{r:?}");
        }
    }

    #[test]
    fn a_patch_refuses_unknown_fields_and_statuses() {
        let patch = |v: serde_json::Value| serde_json::from_value::<EndpointPatch>(v);
        assert!(patch(serde_json::json!({"secret": "x"})).is_err());
        assert!(patch(serde_json::json!({"status": "PAUSED"})).is_err());
        let changes =
            EndpointChanges::from(patch(serde_json::json!({"description": null})).unwrap());
        assert_eq!(changes.description, Patch::Null);
        assert_eq!(changes.url, Patch::Absent);
    }
}
