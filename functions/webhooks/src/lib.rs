//! Event and webhook endpoint routes: the event log, endpoints and their
//! secrets, delivery attempts, test deliveries, redelivery and replay.
//! Delivery itself runs in `api::services::webhooks`.

use std::sync::Arc;

use api::domain::timestamp;
use api::http::Answer;
use api::http::{ApiRouter, Json, Listing, Merchant, Params, PathId, Reply};
use api::routes;
use api::services::app::App;
use api::services::webhooks as dispatch;
use api::store::events::{self, EventFilter};
use api::store::page::PageRequest;
use api::store::webhooks::{self as store, AttemptFilter};
use api::wire::webhook::DeletedEndpoint;
use api::wire::webhook::DeliveryView;
use api::wire::webhook::EndpointView;
use api::wire::webhook::EndpointWithSecret;
use api::wire::webhook::EventView;
use api::wire::webhook::RedeliverRequest;
use api::wire::webhook::ReplayRequest;
use api::wire::webhook::{EndpointPatch, NewEndpoint};
use axum::extract::State;
use serde::{Deserialize, Serialize};

/// The routes this function serves.
pub fn routes() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(list_events))
        .routes(routes!(get_event))
        .routes(routes!(redeliver))
        .routes(routes!(list_endpoints, create_endpoint))
        .routes(routes!(get_endpoint, update_endpoint, delete_endpoint))
        .routes(routes!(rotate_secret))
        .routes(routes!(test))
        .routes(routes!(deliveries))
        .routes(routes!(replay))
}

/// A body that must be empty or `{}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoFields {}

/// List events
///
/// The key's account and mode's events (kept 30 days), newest first.
#[utoipa::path(
    get,
    path = "/api/v1/events",
    operation_id = "listEvents",
    tag = "Events",
    params(
        PageRequest,
        ("type" = Option<api::domain::event::EventType>, Query, description = ""),
        ("from" = inline(Option<api::http::openapi::DateOrTime>), Query, description = "ISO-8601 date (whole UTC day) or date-time."),
        ("to" = inline(Option<api::http::openapi::DateOrTime>), Query, description = "ISO-8601 date (whole UTC day) or date-time.")
    ),
    responses(
        (status = 200, description = "A page of events.", body = [api::wire::webhook::EventView])
    )
)]
async fn list_events(
    m: Merchant,
    State(app): State<Arc<App>>,
    Params(Listing { page, filter }): Params<Listing<EventFilter>>,
) -> Answer {
    let found = events::list(&app.store, m.tenant(), &filter, &page).await?;
    Reply::list_with(&found, EventView::from, &page)
}

/// Retrieve an event
///
/// One event of the key's account and mode.
#[utoipa::path(
    get,
    path = "/api/v1/events/{id}",
    operation_id = "getEvent",
    tag = "Events",
    responses(
        (status = 200, description = "The event.", body = api::wire::webhook::EventView)
    )
)]
async fn get_event(m: Merchant, State(app): State<Arc<App>>, PathId(id): PathId) -> Answer {
    let event = events::get(&app.store, m.tenant(), &id).await?;
    Reply::ok(EventView::from(&event))
}

/// The answer to a redelivery.
#[derive(utoipa::ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Redelivery)]
struct Redelivered<'a> {
    event_id: &'a str,
    deliveries: Vec<DeliveryView<'a>>,
}

/// Send an event again
///
/// Attempts the event now as a new run of deliveries (retried on failure like any delivery). A
/// DISABLED endpoint: 409; one not subscribed to the type: 400.
#[utoipa::path(
    post,
    path = "/api/v1/events/{id}/redeliver",
    operation_id = "redeliverEvent",
    tag = "Events",
    request_body = Option<api::wire::webhook::RedeliverRequest>,
    responses(
        (status = 200, description = "The attempts made.", body = Redelivered),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn redeliver(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(body): Json<RedeliverRequest>,
) -> Answer {
    let endpoint = body.endpoint_id.as_deref();
    let attempts = dispatch::redeliver(&app, m.tenant(), &id, endpoint).await?;
    Reply::ok(Redelivered {
        event_id: &id,
        deliveries: attempts.iter().map(DeliveryView::from).collect(),
    })
}

/// List webhook endpoints
///
/// Newest first; never a secret.
#[utoipa::path(
    get,
    path = "/api/v1/webhook-endpoints",
    operation_id = "listWebhookEndpoints",
    tag = "Webhooks",
    params(
        PageRequest
    ),
    responses(
        (status = 200, description = "A page of endpoints.", body = [api::wire::webhook::EndpointView])
    )
)]
async fn list_endpoints(
    m: Merchant,
    State(app): State<Arc<App>>,
    Params(page): Params<PageRequest>,
) -> Answer {
    let found = store::list_endpoints(&app.store, m.tenant(), &page).await?;
    Reply::list_with(&found, EndpointView::from, &page)
}

/// Create a webhook endpoint
///
/// The URL passes the SSRF guard (400 VALIDATION_FAILED otherwise). The answer holds the
/// signing secret, shown this once. An account holds at most 16 endpoints in each mode:
/// the next create is 429 LIMIT_EXCEEDED until one is deleted.
#[utoipa::path(
    post,
    path = "/api/v1/webhook-endpoints",
    operation_id = "createWebhookEndpoint",
    tag = "Webhooks",
    request_body = api::wire::webhook::NewEndpoint,
    responses(
        (status = 201, description = "The endpoint and its secret.", body = EndpointWithSecret),
        (status = 429, response = inline(api::http::openapi::EndpointCapReached))
    )
)]
async fn create_endpoint(
    m: Merchant,
    State(app): State<Arc<App>>,
    Json(input): Json<NewEndpoint>,
) -> Answer {
    let endpoint = dispatch::create_endpoint(&app, m.tenant(), input.into()).await?;
    Reply::created(EndpointWithSecret::from(&endpoint))
}

/// Retrieve a webhook endpoint
///
/// Never the secret.
#[utoipa::path(
    get,
    path = "/api/v1/webhook-endpoints/{id}",
    operation_id = "getWebhookEndpoint",
    tag = "Webhooks",
    responses(
        (status = 200, description = "The endpoint.", body = api::wire::webhook::EndpointView)
    )
)]
async fn get_endpoint(m: Merchant, State(app): State<Arc<App>>, PathId(id): PathId) -> Answer {
    let e = store::get_endpoint(&app.store, m.tenant(), &id).await?;
    Reply::ok(EndpointView::from(&e))
}

/// Update a webhook endpoint
///
/// `url`, `eventTypes`, `description`, `status`. A new URL passes the SSRF guard. A body that
/// changes nothing answers the endpoint as it is, `updatedAt` unchanged.
#[utoipa::path(
    patch,
    path = "/api/v1/webhook-endpoints/{id}",
    operation_id = "updateWebhookEndpoint",
    tag = "Webhooks",
    request_body = Option<api::wire::webhook::EndpointPatch>,
    responses(
        (status = 200, description = "The endpoint.", body = api::wire::webhook::EndpointView)
    )
)]
async fn update_endpoint(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(patch): Json<EndpointPatch>,
) -> Answer {
    let e = dispatch::update_endpoint(&app, m.tenant(), &id, patch.into()).await?;
    Reply::ok(EndpointView::from(&e))
}

/// Delete a webhook endpoint
///
/// A hard delete: the endpoint and its secret are gone for good and no further delivery is
/// attempted; its delivery records expire with the events (30 days). Answers the endpoint as it
/// was, with `deleted: true`.
#[utoipa::path(
    delete,
    path = "/api/v1/webhook-endpoints/{id}",
    operation_id = "deleteWebhookEndpoint",
    tag = "Webhooks",
    responses(
        (status = 200, description = "The deleted endpoint.", body = DeletedEndpoint)
    )
)]
async fn delete_endpoint(m: Merchant, State(app): State<Arc<App>>, PathId(id): PathId) -> Answer {
    let e = dispatch::delete_endpoint(&app, m.tenant(), &id).await?;
    Reply::ok(DeletedEndpoint::from(&e))
}

/// Rotate the signing secret
///
/// A new secret, shown this once; for 24 hours deliveries carry signatures with the new and the
/// old secret.
#[utoipa::path(
    post,
    path = "/api/v1/webhook-endpoints/{id}/rotate-secret",
    operation_id = "rotateWebhookSecret",
    tag = "Webhooks",
    responses(
        (status = 200, description = "The endpoint and its new secret.", body = EndpointWithSecret)
    )
)]
async fn rotate_secret(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(NoFields {}): Json<NoFields>,
) -> Answer {
    let e = dispatch::rotate_secret(&app, m.tenant(), &id).await?;
    Reply::ok(EndpointWithSecret::from(&e))
}

/// Send a test event
///
/// Delivers a `webhook.test` event now, whatever the endpoint's status: one attempt, recorded,
/// never retried, not an event of the account.
#[utoipa::path(
    post,
    path = "/api/v1/webhook-endpoints/{id}/test",
    operation_id = "testWebhookEndpoint",
    tag = "Webhooks",
    responses(
        (status = 200, description = "The attempt.", body = api::wire::webhook::DeliveryView)
    )
)]
async fn test(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(NoFields {}): Json<NoFields>,
) -> Answer {
    let attempt = dispatch::test(&app, m.tenant(), &id).await?;
    Reply::ok(DeliveryView::from(&attempt))
}

/// List delivery attempts
///
/// Every attempt to this endpoint, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/webhook-endpoints/{id}/deliveries",
    operation_id = "listWebhookDeliveries",
    tag = "Webhooks",
    params(
        PageRequest,
        ("event_id" = inline(Option<api::http::openapi::Line>), Query, description = ""),
        ("status" = Option<api::domain::webhook::DeliveryStatus>, Query, description = "Any letter case.")
    ),
    responses(
        (status = 200, description = "A page of attempts.", body = [api::wire::webhook::DeliveryView])
    )
)]
async fn deliveries(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Params(Listing { page, filter }): Params<Listing<AttemptFilter>>,
) -> Answer {
    let endpoint = store::get_endpoint(&app.store, m.tenant(), &id).await?;
    let found = store::list_attempts(&app.store, &endpoint, &filter, &page).await?;
    Reply::list_with(&found, DeliveryView::from, &page)
}

/// Replay a window of events
///
/// Schedules every event of the window the endpoint subscribes to for delivery now (at most 30
/// days back, at most 1000 events). A DISABLED endpoint: 409.
#[utoipa::path(
    post,
    path = "/api/v1/webhook-endpoints/{id}/replay",
    operation_id = "replayWebhookEvents",
    tag = "Webhooks",
    request_body = api::wire::webhook::ReplayRequest,
    responses(
        (status = 200, description = "What was scheduled.", body = api::services::webhooks::ReplayReport),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn replay(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(body): Json<ReplayRequest>,
) -> Answer {
    let window = body.window(timestamp::now())?;
    let report = dispatch::replay(&app, m.tenant(), &id, window).await?;
    Reply::ok(report)
}

/// Handles one batch of the DynamoDB Stream (Lambda event source mapping
/// with `ReportBatchItemFailures`): first attempts for each new event, up
/// to `on_events`' number at once. A failure names the first record that
/// failed, so Lambda retries from there (records before it are done; a
/// record seen again starts no second first attempt).
pub async fn deliver_batch(
    app: &api::services::app::App,
    batch: &serde_json::Value,
) -> serde_json::Value {
    let records = batch["Records"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let events = records
        .iter()
        .map(api::store::stream::event_of_lambda_record)
        .collect();
    // Side by side (a slow endpoint holds one place); a failure is reported
    // at the first record, in stream order, that did not finish: the ones
    // after it that did are not attempted twice (their tasks exist).
    let outcomes = dispatch::on_events(app, events).await;
    let mut first_failed = None;
    for (record, outcome) in records.iter().zip(outcomes) {
        if let Err(e) = outcome {
            let sequence = record["dynamodb"]["SequenceNumber"]
                .as_str()
                .unwrap_or_default();
            tracing::warn!(
                sequence,
                error = e.code().as_str(),
                "webhook stream record failed; Lambda retries from the first such"
            );
            first_failed.get_or_insert(sequence);
        }
    }
    match first_failed {
        Some(sequence) => {
            serde_json::json!({ "batchItemFailures": [{ "itemIdentifier": sequence }] })
        }
        None => serde_json::json!({ "batchItemFailures": [] }),
    }
}
