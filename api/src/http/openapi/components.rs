//! The components every operation refers to: the security schemes, the
//! headers, the `{id}`, paging and `Idempotency-Key` parameters, and the
//! webhook the API sends; with the description's own facts (its info).

use serde_json::{json, Value};
use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Header, Info, OpenApi as Description, Ref, RefOr, Required};
use utoipa::{Modify, OpenApi};

use crate::domain::idempotency::{KEEP_HOURS, MAX_KEY_LEN};
use crate::domain::webhook::WebhookPayload;
use crate::store::page::{DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET};
use ::domain::ids::IdKind;

/// Adds the shared components and the description's info.
pub struct Shared;

impl Modify for Shared {
    fn modify(&self, doc: &mut Description) {
        doc.info = Info::builder()
            .title("Affiliate Programme API")
            .version("1.0.0")
            .description(Some(include_str!("intro.md").trim_end()))
            .build();
        let components = doc.components.get_or_insert_with(Default::default);
        components.security_schemes.extend([
            bearer("apiKey", "rk_live_<JWT> | rk_test_<JWT>", "An API key, `Authorization: Bearer rk_live_…` or `Bearer rk_test_…`. The prefix selects the mode; test and live data are separate."),
            bearer("portalToken", "pt_live_<JWT> | pt_test_<JWT>", "A portal token of `POST /api/v1/affiliates/{id}/portal-sessions`: one affiliate, one hour; it opens the `/api/v1/portal/*` routes only (an API key is 401 there)."),
        ]);
        components.headers.extend(headers());
        components.parameters.extend(parameters());
        doc.webhooks = Some(Webhooks::openapi().paths);
    }
}

fn bearer(name: &str, format: &str, description: &str) -> (String, RefOr<SecurityScheme>) {
    let scheme = HttpBuilder::new()
        .scheme(HttpAuthScheme::Bearer)
        .bearer_format(format)
        .description(Some(description));
    (name.into(), RefOr::T(SecurityScheme::Http(scheme.build())))
}

/// The reference to a response header's component: its name without dashes.
pub(super) fn header_ref(name: &str) -> Ref {
    Ref::new(format!("#/components/headers/{}", name.replace('-', "")))
}

/// The reference to a shared parameter.
pub(super) fn parameter_ref(name: &str) -> RefOr<Parameter> {
    RefOr::Ref(Ref::new(format!("#/components/parameters/{name}")))
}

/// A schema of one JSON type.
pub(super) fn of_type(kind: Type) -> ObjectBuilder {
    ObjectBuilder::new().schema_type(kind)
}

/// A schema whose one value is `value`: JSON Schema's `const`, which the
/// typed model lacks, carried as its one extra keyword.
pub(super) fn constant(kind: Type, value: Value) -> Schema {
    let keyword: Extensions = [("const", value)].into_iter().collect();
    Schema::Object(of_type(kind).extensions(Some(keyword)).build())
}

fn header(description: &str, schema: impl Into<RefOr<Schema>>) -> HeaderBuilder {
    let header = Header::builder().description(Some(description));
    header.schema(Some(schema))
}

fn count(minimum: i64) -> ObjectBuilder {
    of_type(Type::Integer).minimum(Some(minimum))
}

fn headers() -> Vec<(String, RefOr<Header>)> {
    let id = of_type(Type::String).pattern(Some("^[A-Za-z0-9._-]{1,128}$"));
    let methods = header(
        "The methods the path accepts, comma-separated.",
        of_type(Type::String),
    );
    let headers = [
        ("XRequestId", header("The request id; equals `meta.requestId`. A well-formed incoming `X-Request-Id` is echoed, otherwise a `req_…` id is generated.", id)),
        ("RateLimitLimit", header("Requests allowed in the current window (per account, or per client IP and route for public routes).", count(0))),
        ("RateLimitRemaining", header("Requests left in the current window.", count(0))),
        ("RateLimitReset", header("Seconds until the current window resets.", count(0))),
        ("RetryAfter", header("Whole seconds to wait before retrying.", count(1))),
        ("Allow", methods.example(Some(json!("GET, POST")))),
        ("IdempotentReplayed", header("`true` when the answer is the one kept for this `Idempotency-Key`: the request was not run again.", constant(Type::String, json!("true")))),
        ("AccessControlAllowOrigin", header("CORS: any origin may call this public route (no credentials).", constant(Type::String, json!("*")))),
    ];
    headers
        .into_iter()
        .map(|(name, h)| (name.to_string(), RefOr::T(h.build())))
        .collect()
}

/// The records whose ids appear as `{id}` in paths: (the paths' first
/// segment, parameter name, id kind, what it is called, example id).
pub(super) const ID_PARAMETERS: [(&str, &str, IdKind, &str, &str); 9] = [
    (
        "campaigns",
        "CampaignId",
        IdKind::Campaign,
        "campaign",
        "cmp_01JD3Q5W6X7Y8Z9A0B1C2D3E4F",
    ),
    (
        "affiliates",
        "AffiliateId",
        IdKind::Affiliate,
        "affiliate",
        "aff_01JD9A7C2E4G6J8M0P2R4T6V8X",
    ),
    (
        "applications",
        "ApplicationId",
        IdKind::Application,
        "application",
        "app_01JD9A7C2E4G6J8M0P2R4T6V8Y",
    ),
    (
        "assets",
        "AssetId",
        IdKind::Asset,
        "asset",
        "ast_01JD9B3D5F7H9K1N3Q5S7T9W1Y",
    ),
    (
        "conversions",
        "ConversionId",
        IdKind::Conversion,
        "conversion",
        "cnv_01JD3Q5W6X7Y8Z9A0B1C2D3E4F",
    ),
    (
        "payouts",
        "PayoutId",
        IdKind::Payout,
        "payout",
        "po_01JD9A7C2E4G6J8M0P2R4T6V8Y",
    ),
    (
        "events",
        "EventId",
        IdKind::Event,
        "event",
        "evt_01JD9C5F7H9K1N3Q5S7T9W1Y3A",
    ),
    (
        "webhook-endpoints",
        "WebhookEndpointId",
        IdKind::WebhookEndpoint,
        "endpoint",
        "whe_01JD9C4E6G8J0M2P4R6T8V0X2Z",
    ),
    (
        "integrations",
        "IntegrationId",
        IdKind::Integration,
        "integration",
        "int_01JD9D2F4H6K8N0Q2S4V6X8Z0B",
    ),
];

fn parameter(name: &str, place: ParameterIn, description: String) -> ParameterBuilder {
    let required = if place == ParameterIn::Path {
        Required::True
    } else {
        Required::False
    };
    let parameter = ParameterBuilder::new().name(name).parameter_in(place);
    parameter.required(required).description(Some(description))
}

fn parameters() -> Vec<(String, RefOr<Parameter>)> {
    let mut out = Vec::new();
    for (_, name, kind, noun, example) in ID_PARAMETERS {
        let prefix = kind.prefix();
        let description = if kind == IdKind::Payout {
            format!("The {noun} id (`{prefix}_…`). A malformed id, another account's or the other mode's is answered 404.")
        } else {
            format!("The {noun} id (`{prefix}_…`). A malformed id is answered 404.")
        };
        let id =
            parameter("id", ParameterIn::Path, description).schema(Some(of_type(Type::String)));
        out.push((name.into(), id.example(Some(json!(example)))));
    }
    let key = parameter("Idempotency-Key", ParameterIn::Header, format!("Makes the POST safe to retry (1-{MAX_KEY_LEN} visible ASCII characters; any other is 400 INVALID_REQUEST). The same key with the same method, path and body within {KEEP_HOURS} hours is answered the first success again, with `Idempotent-Replayed: true`, and nothing runs; with another request, 409 ALREADY_EXISTS naming the key; sent while the first still runs, it waits for its answer (409 after 8 seconds). A failed request is not kept: it may be sent again under the same key. Keys are per account and mode."));
    let key_text = of_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(MAX_KEY_LEN));
    out.push((
        "IdempotencyKey".into(),
        key.schema(Some(key_text.pattern(Some("^[\\x20-\\x7E]+$")))),
    ));
    let limit = parameter("limit", ParameterIn::Query, format!("Page size. Default {DEFAULT_LIMIT}; values above {MAX_LIMIT} are clamped to {MAX_LIMIT}; below 1 or not an integer gives 400 VALIDATION_FAILED."));
    out.push((
        "Limit".into(),
        limit.schema(Some(count(1).default(Some(json!(DEFAULT_LIMIT))))),
    ));
    let offset = parameter("offset", ParameterIn::Query, format!("Records to skip: an integer from 0 to {MAX_OFFSET}. Larger gives 400 VALIDATION_FAILED (page deeper with `cursor`, which costs the same at any depth). Cannot be combined with `cursor` (400 VALIDATION_FAILED)."));
    let skip = count(0)
        .maximum(Some(MAX_OFFSET as f64))
        .default(Some(json!(0)));
    out.push(("Offset".into(), offset.schema(Some(skip))));
    let cursor = parameter("cursor", ParameterIn::Query, "`meta.nextCursor` of the previous page, as given (an opaque token); constant cost however deep. Only a cursor this list returned to the same account and mode is valid: any other value, the empty string included, gives 400 VALIDATION_FAILED (`invalid_cursor`). Cannot be combined with `offset` (400 VALIDATION_FAILED, `invalid_combination`).".into());
    let token = of_type(Type::String)
        .min_length(Some(1))
        .pattern(Some("^[A-Za-z0-9_-]+$"));
    out.push(("Cursor".into(), cursor.schema(Some(token))));
    out.into_iter()
        .map(|(name, p)| (name, RefOr::T(p.build())))
        .collect()
}

/// The webhook the API sends, stated like a route.
#[derive(OpenApi)]
#[openapi(paths(receive_event))]
struct Webhooks;

/// An event delivered to your endpoint
///
/// Answer 2xx within 15 s. 410 disables the endpoint; anything else is retried. Deliveries are
/// at least once and in no guaranteed order: dedupe on `webhook-id`.
#[utoipa::path(
    post,
    path = "event",
    operation_id = "receiveEvent",
    tag = "Webhooks",
    params(
        ("webhook-id" = String, Header),
        ("webhook-timestamp" = String, Header),
        ("webhook-signature" = String, Header)
    ),
    request_body = WebhookPayload,
    responses(
        (status = "2XX", description = "Delivered."),
        (status = 410, description = "Stop: the endpoint is disabled.")
    )
)]
#[allow(dead_code)] // the merchant's endpoint, described here only
fn receive_event() {}
