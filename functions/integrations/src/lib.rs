//! Payment-provider integration routes: the merchant's integrations (Stripe,
//! Paddle Billing), the public receiver their events are sent to, and the
//! log of what was received. Receiving runs in
//! `api::services::provider_events`.

use std::sync::Arc;

use api::domain::connector::Provider;
use api::domain::integration::DeliveryOutcome;
use api::domain::timestamp;
use api::http::Answer;
use api::http::{ApiRouter, BaseUrl, EventBody, Json, Merchant, Params, PathId, Reply};
use api::routes;
use api::services::app::App;
use api::services::rails::paypal::Transmission;
use api::services::{integrations, provider_events as receiving};
use api::store::integrations::{self as store, DeliveryRow};
use api::store::page::PageRequest;
use api::wire::integration::IntegrationView;
use api::wire::integration::{IntegrationPatch, NewIntegration};
use axum::extract::State;
use http::HeaderMap;
use serde::Serialize;

/// The routes this function serves.
pub fn routes() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get, update, delete))
        .routes(routes!(receive))
        .routes(routes!(deliveries))
}

/// List integrations
///
/// The key's account and mode's integrations, newest first; never a signing secret.
#[utoipa::path(
    get,
    path = "/api/v1/integrations",
    operation_id = "listIntegrations",
    tag = "Integrations",
    params(PageRequest),
    responses(
        (status = 200, description = "A page of integrations.", body = [IntegrationView])
    )
)]
async fn list(
    m: Merchant,
    State(app): State<Arc<App>>,
    BaseUrl(base): BaseUrl,
    Params(page): Params<PageRequest>,
) -> Answer {
    let found = store::list(&app.store, m.tenant(), &page).await?;
    Reply::list_with(&found, |i| IntegrationView::of(i, &base), &page)
}

/// Create an integration
///
/// Connects a payment provider: paste the answer's `webhookUrl` into the provider's webhook
/// settings and send the secret the provider shows as `signingSecret` (write-only: it is never
/// returned, nor in an event or a log). A test-mode key makes a test-mode integration, whose
/// events make test-mode conversions. `campaignId`, when given, must be a campaign of the key's
/// account and mode (404 otherwise).
#[utoipa::path(
    post,
    path = "/api/v1/integrations",
    operation_id = "createIntegration",
    tag = "Integrations",
    request_body = api::wire::integration::IntegrationCreate,
    responses(
        (status = 201, description = "The integration.", body = IntegrationView),
        (status = 404, response = api::http::openapi::NotFound),
        (status = 409, description = "Conflict: another integration of the account and mode already pays")
    )
)]
async fn create(
    m: Merchant,
    State(app): State<Arc<App>>,
    BaseUrl(base): BaseUrl,
    Json(input): Json<NewIntegration>,
) -> Answer {
    let integration = integrations::create(&app, m.tenant(), input.into()).await?;
    Reply::created(IntegrationView::of(&integration, &base))
}

/// Retrieve an integration
///
/// Never its signing secret.
#[utoipa::path(
    get,
    path = "/api/v1/integrations/{id}",
    operation_id = "getIntegration",
    tag = "Integrations",
    responses(
        (status = 200, description = "The integration.", body = IntegrationView)
    )
)]
async fn get(
    m: Merchant,
    State(app): State<Arc<App>>,
    BaseUrl(base): BaseUrl,
    PathId(id): PathId,
) -> Answer {
    let i = store::get(&app.store, m.tenant(), &id).await?;
    Reply::ok(IntegrationView::of(&i, &base))
}

/// Update an integration
///
/// `signingSecret` (after the provider rolled it), `campaignId`, `description`, `status`. A
/// DISABLED integration answers its events 409, so the provider keeps them and retries. A body
/// that changes nothing answers the integration as it is, `updatedAt` unchanged.
#[utoipa::path(
    patch,
    path = "/api/v1/integrations/{id}",
    operation_id = "updateIntegration",
    tag = "Integrations",
    request_body = Option<IntegrationPatch>,
    responses(
        (status = 200, description = "The integration.", body = IntegrationView),
        (status = 409, description = "Conflict: another integration of the account and mode already pays")
    )
)]
async fn update(
    m: Merchant,
    State(app): State<Arc<App>>,
    BaseUrl(base): BaseUrl,
    PathId(id): PathId,
    Json(patch): Json<IntegrationPatch>,
) -> Answer {
    let i = integrations::update(&app, m.tenant(), &id, &patch.into()).await?;
    Reply::ok(IntegrationView::of(&i, &base))
}

/// Delete an integration
///
/// Disables and hides it: it leaves the list, reads of it are 404, and so are the events sent to
/// it. The conversions it made stay.
#[utoipa::path(
    delete,
    path = "/api/v1/integrations/{id}",
    operation_id = "deleteIntegration",
    tag = "Integrations",
    responses(
        (status = 200, description = "The deleted integration.", body = IntegrationView)
    )
)]
async fn delete(
    m: Merchant,
    State(app): State<Arc<App>>,
    BaseUrl(base): BaseUrl,
    PathId(id): PathId,
) -> Answer {
    let i = integrations::delete(&app, m.tenant(), &id).await?;
    Reply::ok(IntegrationView::of(&i, &base))
}

/// What the receiver answers the provider.
#[derive(utoipa::ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = IntegrationEventReceived)]
struct ReceivedView {
    received: bool,
    /// APPLIED, IGNORED (nothing to do: see `reason`) or DUPLICATE (applied before).
    outcome: DeliveryOutcome,
    reason: Option<String>,
    /// The conversion the event recorded or reversed, if any.
    conversion_id: Option<String>,
}

/// Receive a provider's event
///
/// The URL the provider sends its events to (`webhookUrl`). No API key: the provider's
/// signature over the raw body is the credential (`Stripe-Signature` or `Paddle-Signature`,
/// at most 300 seconds old). A missing, malformed, stale or wrong signature is 400
/// INVALID_REQUEST, and nothing is recorded but a REJECTED row in the delivery log; an unknown
/// or deleted integration is 404. Once signed: a DISABLED integration is 409, and an account
/// locked or past its subscription 403 (the provider retries later, and the event applies once
/// it is usable, within the provider's retry window). An event is applied once per provider
/// event id (again: 200 DUPLICATE), in any order of arrival. 200 IGNORED, with the reason, when
/// none of its commands had anything to do: an event type not mapped, a field the mapping needs
/// missing or unreadable (ids over 255 characters, no `livemode`, no time), a zero amount or one
/// the postback would refuse, a checkout naming no live session, click or code of this account
/// (or a flooded click), an unknown payment, a refund with nothing left to reverse, a payment id
/// of another account or mode, or an event whose mode differs from the integration's (see
/// `docs/integrations.md`). A signature header sent twice is 400; a body over 1 MiB
/// (1,048,576 bytes) is 400, nothing recorded.
#[utoipa::path(
    post,
    path = "/api/v1/integrations/{id}/events",
    operation_id = "receiveIntegrationEvent",
    tags = ["Integrations", "Public"], security(),
    params(
        ("Stripe-Signature" = Option<String>, Header, description = "Stripe's signature (`t=…,v1=…`), for a STRIPE integration."),
        ("Paddle-Signature" = Option<String>, Header, description = "Paddle's signature (`ts=…;h1=…`), for a PADDLE integration."),
        ("PAYPAL-TRANSMISSION-ID" = Option<String>, Header, description = "For a PAYPAL integration, with the four below: the event is verified by PayPal's API."),
        ("PAYPAL-TRANSMISSION-TIME" = Option<String>, Header, description = ""),
        ("PAYPAL-TRANSMISSION-SIG" = Option<String>, Header, description = ""),
        ("PAYPAL-CERT-URL" = Option<String>, Header, description = ""),
        ("PAYPAL-AUTH-ALGO" = Option<String>, Header, description = "")
    ),
    request_body(content = serde_json::Value, description = "The provider's event, as it sends it."),
    responses(
        (status = 200, description = "Received.", body = ReceivedView),
        (status = 403, response = api::http::openapi::PermissionDenied),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn receive(
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    headers: HeaderMap,
    EventBody(body): EventBody,
) -> Answer {
    // Each provider's headers, as sent; the integration's provider picks its own.
    let delivery = receiving::Delivery {
        signatures: Provider::ALL
            .iter()
            .flat_map(|p| {
                let sent = headers.get_all(p.signature_header()).iter();
                sent.map(move |v| (*p, v.to_str().unwrap_or_default()))
            })
            .collect(),
        transmission: Transmission::from_headers(|name| {
            Some(headers.get(name)?.to_str().ok()?.to_string())
        }),
    };
    let answer = receiving::receive(&app, &id, &delivery, &body, timestamp::now()).await?;
    Reply::ok(ReceivedView {
        received: true,
        outcome: answer.outcome,
        reason: answer.reason,
        conversion_id: answer.conversion_id,
    })
}

/// One received event as the log shows it.
#[derive(utoipa::ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = IntegrationDelivery)]
struct DeliveryView<'a> {
    provider_event_id: Option<&'a str>,
    #[serde(rename = "type")]
    event_type: Option<&'a str>,
    #[schema(value_type = String, format = DateTime)]
    received_at: String,
    outcome: DeliveryOutcome,
    reason: Option<&'a str>,
    conversion_id: Option<&'a str>,
}

impl<'a> From<&'a DeliveryRow> for DeliveryView<'a> {
    fn from(r: &'a DeliveryRow) -> Self {
        DeliveryView {
            provider_event_id: r.provider_event_id.as_deref(),
            event_type: r.event_type.as_deref(),
            received_at: timestamp::format(&r.received_at),
            outcome: r.outcome,
            reason: r.reason.as_deref(),
            conversion_id: r.conversion_id.as_deref(),
        }
    }
}

/// List an integration's deliveries
///
/// What the integration received in the last 30 days, newest first: ids, types, outcomes and
/// the conversion each touched; never a payload.
#[utoipa::path(
    get,
    path = "/api/v1/integrations/{id}/deliveries",
    operation_id = "listIntegrationDeliveries",
    tag = "Integrations",
    params(PageRequest),
    responses(
        (status = 200, description = "A page of deliveries.", body = [DeliveryView])
    )
)]
async fn deliveries(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Params(page): Params<PageRequest>,
) -> Answer {
    let i = store::get(&app.store, m.tenant(), &id).await?;
    let found = store::deliveries(&app.store, &i.id, &page).await?;
    Reply::list_with(&found, DeliveryView::from, &page)
}
