//! Event and webhook endpoint routes: the event log, endpoints and their
//! secrets, delivery attempts, test deliveries, redelivery and replay.
//! Delivery itself runs in `shared::webhooks::dispatch`.

use http::Method;
use serde::{Deserialize, Serialize};
use shared::domain::event::EventType;
use shared::domain::webhook::{
    DeletedEndpoint, DeliveryStatus, DeliveryView, EndpointPatch, EndpointView, EndpointWithSecret,
    EventView, NewEndpoint, RedeliverRequest, ReplayRequest,
};
use shared::handler;
use shared::http::{Reply, Router};
use shared::store::events::{self, EventFilter};
use shared::store::webhooks::{self as store, AttemptFilter};
use shared::timestamp;
use shared::webhooks::dispatch;

/// The routes this function serves.
pub fn router() -> Router {
    const ENDPOINTS: &str = "/api/v1/webhook-endpoints";
    const ENDPOINT: &str = "/api/v1/webhook-endpoints/{id}";
    Router::new(vec![
        (Method::GET, "/api/v1/events", list_events),
        (Method::GET, "/api/v1/events/{id}", get_event),
        (Method::POST, "/api/v1/events/{id}/redeliver", redeliver),
        (Method::GET, ENDPOINTS, list_endpoints),
        (Method::POST, ENDPOINTS, create_endpoint),
        (Method::GET, ENDPOINT, get_endpoint),
        (Method::PATCH, ENDPOINT, update_endpoint),
        (Method::DELETE, ENDPOINT, delete_endpoint),
        (
            Method::POST,
            "/api/v1/webhook-endpoints/{id}/rotate-secret",
            rotate_secret,
        ),
        (Method::POST, "/api/v1/webhook-endpoints/{id}/test", test),
        (
            Method::GET,
            "/api/v1/webhook-endpoints/{id}/deliveries",
            deliveries,
        ),
        (
            Method::POST,
            "/api/v1/webhook-endpoints/{id}/replay",
            replay,
        ),
    ])
}

/// A body that must be empty or `{}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoFields {}

handler!(list_events, |call| {
    let mut q = call.query(&["limit", "offset", "cursor", "type", "from", "to"]);
    let page = q.page();
    let event_type = q
        .one_of("type", &EventType::NAMES)
        .and_then(EventType::parse);
    let (from, to) = q.range();
    q.finish()?;
    let filter = EventFilter {
        event_type,
        from: from.map(|b| b.start()),
        to: to.map(|b| b.end()),
    };
    let found = events::list(&call.app.store, call.tenant(), &filter, &page).await?;
    Reply::list_with(&found, EventView::from, &page)
});

handler!(get_event, |call| {
    let event = events::get(&call.app.store, call.tenant(), call.param("id")?).await?;
    Reply::ok(EventView::from(&event))
});

/// The answer to a redelivery.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Redelivered<'a> {
    event_id: &'a str,
    deliveries: Vec<DeliveryView<'a>>,
}

handler!(redeliver, |call| {
    let body: RedeliverRequest = call.json()?;
    let id = call.param("id")?;
    let attempts =
        dispatch::redeliver(&call.app, call.tenant(), id, body.endpoint_id.as_deref()).await?;
    Reply::ok(Redelivered {
        event_id: id,
        deliveries: attempts.iter().map(DeliveryView::from).collect(),
    })
});

handler!(list_endpoints, |call| {
    let mut q = call.query(&["limit", "offset", "cursor"]);
    let page = q.page();
    q.finish()?;
    let found = store::list_endpoints(&call.app.store, call.tenant(), &page).await?;
    Reply::list_with(&found, EndpointView::from, &page)
});

handler!(create_endpoint, |call| {
    let input: NewEndpoint = call.json()?;
    let endpoint = dispatch::create_endpoint(&call.app, call.tenant(), input).await?;
    Reply::created(EndpointWithSecret::from(&endpoint))
});

handler!(get_endpoint, |call| {
    let e = store::get_endpoint(&call.app.store, call.tenant(), call.param("id")?).await?;
    Reply::ok(EndpointView::from(&e))
});

handler!(update_endpoint, |call| {
    let patch: EndpointPatch = call.json()?;
    let e = dispatch::update_endpoint(&call.app, call.tenant(), call.param("id")?, patch).await?;
    Reply::ok(EndpointView::from(&e))
});

handler!(delete_endpoint, |call| {
    let e = store::delete_endpoint(&call.app.store, call.tenant(), call.param("id")?).await?;
    Reply::ok(DeletedEndpoint::from(&e))
});

handler!(rotate_secret, |call| {
    let NoFields {} = call.json()?;
    let e = dispatch::rotate_secret(&call.app, call.tenant(), call.param("id")?).await?;
    Reply::ok(EndpointWithSecret::from(&e))
});

handler!(test, |call| {
    let NoFields {} = call.json()?;
    let attempt = dispatch::test(&call.app, call.tenant(), call.param("id")?).await?;
    Reply::ok(DeliveryView::from(&attempt))
});

handler!(deliveries, |call| {
    let mut q = call.query(&["limit", "offset", "cursor", "event_id", "status"]);
    let page = q.page();
    let filter = AttemptFilter {
        event_id: q.str("event_id").map(str::to_string),
        status: q
            .one_of("status", &DeliveryStatus::NAMES)
            .and_then(DeliveryStatus::parse),
    };
    q.finish()?;
    let endpoint = store::get_endpoint(&call.app.store, call.tenant(), call.param("id")?).await?;
    let found = store::list_attempts(&call.app.store, &endpoint, &filter, &page).await?;
    Reply::list_with(&found, DeliveryView::from, &page)
});

handler!(replay, |call| {
    let body: ReplayRequest = call.json()?;
    let window = body.window(timestamp::now())?;
    let report = dispatch::replay(&call.app, call.tenant(), call.param("id")?, window).await?;
    Reply::ok(report)
});

/// Handles one batch of the DynamoDB Stream (Lambda event source mapping
/// with `ReportBatchItemFailures`): first attempts for each new event, in
/// order. On a failure it stops and names that record, so Lambda retries
/// from there (records before it are done; a record seen again starts no
/// second first attempt).
pub async fn deliver_batch(app: &shared::App, batch: &serde_json::Value) -> serde_json::Value {
    let records = batch["Records"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for record in records {
        let outcome = match shared::store::stream::event_of_lambda_record(record) {
            Ok(Some((tenant, event))) => dispatch::on_event(app, &tenant, &event).await.map(|_| ()),
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        if let Err(e) = outcome {
            let sequence = record["dynamodb"]["SequenceNumber"]
                .as_str()
                .unwrap_or_default();
            tracing::warn!(
                sequence,
                error = e.code().as_str(),
                "webhook stream record failed; Lambda retries from it"
            );
            return serde_json::json!({ "batchItemFailures": [{ "itemIdentifier": sequence }] });
        }
    }
    serde_json::json!({ "batchItemFailures": [] })
}
