//! What operations share: tags, the security scheme, headers, the id and
//! paging parameters, the error answers (their examples rendered by the
//! envelope code itself), the envelope schemas and the webhook payload.

use api::domain::idempotency::{KEEP_HOURS, MAX_KEY_LEN};
use api::error::{Error, ErrorCode};
use api::ids::IdKind;
use api::issue::Issue;
use api::store::page::{DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET};
use serde_json::{json, Map, Value};

/// The request id every example shows.
pub const EXAMPLE_REQUEST_ID: &str = "req_01JD3Q5W6X7Y8Z9A0B1C2D3E4F";
/// The time every example shows.
pub const EXAMPLE_TIMESTAMP: &str = "2026-11-22T10:00:00.000Z";

/// The tags, in the order the description lists them.
pub fn tags() -> Value {
    let tags: [(&str, &str); 13] = [
        ("Campaigns", "A merchant's affiliate campaigns and their commission rules."),
        ("Public", "Unauthenticated, browser-facing routes (rate-limited per client IP, CORS for any origin)."),
        ("Meta", "About the API itself."),
        ("Tracking", "Anonymous click tracking and session-to-customer binding, called by the browser script (`/tracker.js` of the local host; see `tracker/README.md`). A click records which affiliate sent a visitor; its session id is what a merchant's checkout later passes to `identify` and to the conversion postback."),
        ("Affiliates", "The partners of a campaign: their e-mail (unique per campaign), code (unique per account and mode), status and payout details."),
        ("Applications", "Sign-ups waiting for the merchant: accept (the affiliate becomes ACTIVE) or reject (the affiliate becomes REJECTED). No e-mail is sent by the API."),
        ("Assets", "Marketing material for affiliates. Swipe copy (text) is created through the API; images, files and links come from the dashboard upload flow. Assets are archived, never deleted."),
        ("Conversions", "Sales reported by the merchant's server (postback), attributed to affiliates with the campaign's commission rules, listed and summarised. Amounts and commissions are exact decimals in major units of their own currency; currencies are never converted or mixed."),
        ("Payouts", "What affiliates are owed, one payout per affiliate and currency, created by the daily payout job from APPROVED conversions (never through the API), moved through invoice, approval and payment, or rejected or cancelled. Payment goes through a provider: `manual` (the merchant pays and marks the payout paid) or `sandbox` (moves no money; test mode always uses it)."),
        ("Portal", "What an affiliate sees of its own programme with a portal token (`POST /api/v1/affiliates/{id}/portal-sessions`): its terms and referral link, its numbers, conversions, payouts and swipe copy, its payout details and invoices; and the hosted page at `/portal`. Never another affiliate's record, a customer's identity or merchant metadata."),
        ("Reports", "Switching and reporting: the referred customers, bulk import of affiliates and referrals from another platform (idempotent by `externalId`), the conversions as CSV and the yearly payments report (see docs/reports.md)."),
        ("Events", "Every change of a merchant-visible record appends an event in the same transaction (an outbox); events are kept 30 days."),
        ("Webhooks", "Endpoints that receive events by HTTPS POST, signed as the Standard Webhooks specification says (verify with its official libraries; see docs/webhooks.md). Retries after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h; a 410 answer, or 5 days of failures only, disables the endpoint."),
    ];
    tags.iter()
        .map(|(name, description)| json!({"name": name, "description": description}))
        .collect()
}

/// `components`: the derived schemas beside the shared parts.
pub fn components(mut schemas: Value) -> Value {
    if let Some(map) = schemas.as_object_mut() {
        for (name, schema) in envelope_schemas() {
            map.insert(name.into(), schema);
        }
    }
    json!({
        "securitySchemes": {"apiKey": {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "rk_live_<JWT> | rk_test_<JWT>",
            "description": "An API key, `Authorization: Bearer rk_live_…` or `Bearer rk_test_…`. The prefix selects the mode; test and live data are separate.",
        }, "portalToken": {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "pt_live_<JWT> | pt_test_<JWT>",
            "description": "A portal token of `POST /api/v1/affiliates/{id}/portal-sessions`: one affiliate, one hour; it opens the `/api/v1/portal/*` routes only (an API key is 401 there).",
        }},
        "schemas": schemas,
        "responses": responses(),
        "parameters": parameters(),
        "headers": headers(),
    })
}

fn headers() -> Value {
    json!({
        "XRequestId": {
            "description": "The request id; equals `meta.requestId`. A well-formed incoming `X-Request-Id` is echoed, otherwise a `req_…` id is generated.",
            "schema": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,128}$"},
        },
        "RateLimitLimit": {
            "description": "Requests allowed in the current window (per account, or per client IP and route for public routes).",
            "schema": {"type": "integer", "minimum": 0},
        },
        "RateLimitRemaining": {
            "description": "Requests left in the current window.",
            "schema": {"type": "integer", "minimum": 0},
        },
        "RateLimitReset": {
            "description": "Seconds until the current window resets.",
            "schema": {"type": "integer", "minimum": 0},
        },
        "RetryAfter": {
            "description": "Whole seconds to wait before retrying.",
            "schema": {"type": "integer", "minimum": 1},
        },
        "Allow": {
            "description": "The methods the path accepts, comma-separated.",
            "schema": {"type": "string"},
            "example": "GET, POST",
        },
        "IdempotentReplayed": {
            "description": "`true` when the answer is the one kept for this `Idempotency-Key`: the request was not run again.",
            "schema": {"type": "string", "const": "true"},
        },
        "AccessControlAllowOrigin": {
            "description": "CORS: any origin may call this public route (no credentials).",
            "schema": {"type": "string", "const": "*"},
        },
    })
}

/// The resources whose ids appear as `{id}` in paths: (parameter name,
/// id kind, what it is called, example id).
pub const ID_PARAMETERS: [(&str, IdKind, &str, &str); 9] = [
    (
        "CampaignId",
        IdKind::Campaign,
        "campaign",
        "cmp_01JD3Q5W6X7Y8Z9A0B1C2D3E4F",
    ),
    (
        "AffiliateId",
        IdKind::Affiliate,
        "affiliate",
        "aff_01JD9A7C2E4G6J8M0P2R4T6V8X",
    ),
    (
        "ApplicationId",
        IdKind::Application,
        "application",
        "app_01JD9A7C2E4G6J8M0P2R4T6V8Y",
    ),
    (
        "AssetId",
        IdKind::Asset,
        "asset",
        "ast_01JD9B3D5F7H9K1N3Q5S7T9W1Y",
    ),
    (
        "ConversionId",
        IdKind::Conversion,
        "conversion",
        "cnv_01JD3Q5W6X7Y8Z9A0B1C2D3E4F",
    ),
    (
        "PayoutId",
        IdKind::Payout,
        "payout",
        "po_01JD9A7C2E4G6J8M0P2R4T6V8Y",
    ),
    (
        "EventId",
        IdKind::Event,
        "event",
        "evt_01JD9C5F7H9K1N3Q5S7T9W1Y3A",
    ),
    (
        "WebhookEndpointId",
        IdKind::WebhookEndpoint,
        "endpoint",
        "whe_01JD9C4E6G8J0M2P4R6T8V0X2Z",
    ),
    (
        "IntegrationId",
        IdKind::Integration,
        "integration",
        "int_01JD9D2F4H6K8N0Q2S4V6X8Z0B",
    ),
];

fn parameters() -> Value {
    let mut out = Map::new();
    for (name, kind, noun, example) in ID_PARAMETERS {
        let prefix = kind.prefix();
        let description = if kind == IdKind::Payout {
            format!("The {noun} id (`{prefix}_…`). A malformed id, another account's or the other mode's is answered 404.")
        } else {
            format!("The {noun} id (`{prefix}_…`). A malformed id is answered 404.")
        };
        out.insert(
            name.into(),
            json!({"name": "id", "in": "path", "required": true, "description": description,
                   "schema": {"type": "string"}, "example": example}),
        );
    }
    out.insert("IdempotencyKey".into(), json!({
        "name": "Idempotency-Key", "in": "header", "required": false,
        "description": format!("Makes the POST safe to retry (1-{MAX_KEY_LEN} visible ASCII characters; any other is 400 INVALID_REQUEST). The same key with the same method, path and body within {KEEP_HOURS} hours is answered the first success again, with `Idempotent-Replayed: true`, and nothing runs; with another request, 409 ALREADY_EXISTS naming the key; sent while the first still runs, it waits for its answer (409 after 8 seconds). A failed request is not kept: it may be sent again under the same key. Keys are per account and mode."),
        "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LEN, "pattern": "^[\\x20-\\x7E]+$"},
    }));
    out.insert("Limit".into(), json!({
        "name": "limit", "in": "query", "required": false,
        "description": format!("Page size. Default {DEFAULT_LIMIT}; values above {MAX_LIMIT} are clamped to {MAX_LIMIT}; below 1 or not an integer gives 400 VALIDATION_FAILED."),
        "schema": {"type": "integer", "minimum": 1, "default": DEFAULT_LIMIT},
    }));
    out.insert("Offset".into(), json!({
        "name": "offset", "in": "query", "required": false,
        "description": format!("Records to skip: an integer from 0 to {MAX_OFFSET}. Larger gives 400 VALIDATION_FAILED (page deeper with `cursor`, which costs the same at any depth). Cannot be combined with `cursor` (400 VALIDATION_FAILED)."),
        "schema": {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET, "default": 0},
    }));
    out.insert("Cursor".into(), json!({
        "name": "cursor", "in": "query", "required": false,
        "description": "`meta.nextCursor` of the previous page, as given (an opaque token); constant cost however deep. Only a cursor this list returned to the same account and mode is valid: any other value, the empty string included, gives 400 VALIDATION_FAILED (`invalid_cursor`). Cannot be combined with `offset` (400 VALIDATION_FAILED, `invalid_combination`).",
        "schema": {"type": "string", "minLength": 1, "pattern": "^[A-Za-z0-9_-]+$"},
    }));
    Value::Object(out)
}

/// The envelope the API answers `err` with, as an example.
pub fn example(err: &Error) -> Value {
    let (_, mut body, _) = api::http::envelope::failure(err, EXAMPLE_REQUEST_ID);
    body["meta"]["timestamp"] = json!(EXAMPLE_TIMESTAMP);
    body
}

/// An error answer: its description, its examples (one, or several by
/// name) and the headers beside `X-Request-Id`.
pub fn error_response(description: &str, examples: &[(&str, Error)], headers: &[&str]) -> Value {
    let mut content = json!({"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}});
    match examples {
        [(_, only)] => content["example"] = example(only),
        many => {
            let named: Map<String, Value> = many
                .iter()
                .map(|(name, err)| {
                    let summary = err.code().as_str();
                    (
                        name.to_string(),
                        json!({"summary": summary, "value": example(err)}),
                    )
                })
                .collect();
            content["examples"] = Value::Object(named);
        }
    }
    let mut hs = Map::new();
    hs.insert(
        "X-Request-Id".into(),
        json!({"$ref": "#/components/headers/XRequestId"}),
    );
    for h in headers {
        hs.insert(
            h.to_string(),
            json!({"$ref": format!("#/components/headers/{}", h.replace('-', ""))}),
        );
    }
    json!({"description": description, "headers": hs, "content": {"application/json": content}})
}

fn invalid(path: &str, code: &str, message: &str) -> Error {
    Error::Validation(vec![Issue::new(&[path], code, message)])
}

fn responses() -> Value {
    let rate = [
        "Retry-After",
        "RateLimit-Limit",
        "RateLimit-Remaining",
        "RateLimit-Reset",
    ];
    let content_type = || Error::InvalidRequest("Content-Type must be application/json".into());
    json!({
        "ValidationFailed": error_response(
            "`VALIDATION_FAILED`: the body or query breaks the schema or the rules. `details` lists every issue found.",
            &[("", invalid("commissionValue", "invalid_value", "a percentage commissionValue must be 0-100"))], &[]),
        "InvalidRequest": error_response(
            "`INVALID_REQUEST`: the body is not declared `application/json`, is not parsable JSON, is larger than 64 KiB, or has an object with the same key twice (at any depth); or the `Idempotency-Key` is not 1-255 visible ASCII characters.",
            &[("", content_type())], &[]),
        "BadRequest": error_response(
            "`VALIDATION_FAILED` (the body breaks the schema or the rules; `details` lists every issue) or `INVALID_REQUEST` (body not declared `application/json`, not parsable JSON, larger than 64 KiB, or with an object holding the same key twice; or an `Idempotency-Key` that is not 1-255 visible ASCII characters).",
            &[("validationFailed", invalid("extra", "unrecognized_keys", "unknown field extra")), ("invalidRequest", content_type())], &[]),
        "Unauthorized": error_response(
            "`UNAUTHORIZED`: the API key is missing, malformed, tampered, unknown or revoked (one answer for all).",
            &[("", Error::Unauthorized)], &[]),
        "PermissionDenied": error_response(
            "`PERMISSION_DENIED`: the account is locked or its subscription has expired (a valid key of that account, or a signed provider event to one of its integrations).",
            &[("", Error::PermissionDenied("the account is locked".into()))], &[]),
        "NotFound": error_response(
            "`NOT_FOUND`: no such record in the caller's account and mode (or, for public routes, no public record), or no such route.",
            &[("", Error::NotFound("campaign"))], &[]),
        "MethodNotAllowed": error_response(
            "`INVALID_REQUEST` with status 405: the path exists but not with this method. The `Allow` header and `details.allow` list the methods that do.",
            &[("", Error::MethodNotAllowed { allow: vec!["GET".into(), "POST".into()] })], &["Allow"]),
        "Conflict": error_response(
            "`ALREADY_EXISTS` (a unique value is taken, or an `Idempotency-Key` was used with another request or its first request still runs) or `INVALID_STATE` (the record's state forbids the operation; `details.currentState` names it).",
            &[("", Error::InvalidState { resource: "payout", current: "PAID".into(), action: "approve" })], &[]),
        "TooManyRequests": error_response(
            "`RATE_LIMIT_EXCEEDED`: the rate limit of this account (or client IP, for public routes) is used up; retry after `Retry-After` seconds. (`LIMIT_EXCEEDED`, a used-up plan quota, also uses 429.)",
            &[("", Error::RateLimited { retry_after: 17 })], &rate),
        "ServerError": error_response(
            "`SERVER_ERROR`: an unexpected failure. It is logged under the request id; the message reveals no internals.",
            &[("", Error::internal("example"))], &[]),
        "ServiceUnavailable": error_response(
            "`SERVICE_UNAVAILABLE`: a dependency timed out or is unreachable, or the record is too contended to update; retry after `Retry-After` seconds. Store calls are bounded (connect, per-attempt and per-call timeouts), so this answer comes within seconds, never at the gateway's limit.",
            &[("", Error::Unavailable("a storage service is unavailable; retry later".into()))], &["Retry-After"]),
    })
}

/// Adds the types every description needs that no operation names: the
/// error envelope's parts and the webhook delivery body.
pub fn add_derived(schemas: &mut Value) {
    if let Some(map) = schemas.as_object_mut() {
        map.extend(derived());
    }
}

fn derived() -> Vec<(String, Value)> {
    fn of<T: utoipa::ToSchema>() -> (String, Value) {
        let schema = serde_json::to_value(T::schema()).unwrap_or_default();
        (T::name().into_owned(), schema)
    }
    vec![
        of::<ErrorCode>(),
        of::<Issue>(),
        of::<api::domain::webhook::WebhookPayload>(),
        of::<api::domain::commission_tiers::TierChangeView<'static>>(),
        // Named only by query parameters.
        of::<api::domain::tax_form::TaxFormFilter>(),
        of::<api::domain::summary::SeriesBy>(),
    ]
}

/// The envelope schemas every answer uses.
fn envelope_schemas() -> Vec<(&'static str, Value)> {
    vec![
        (
            "Meta",
            json!({
                "type": "object", "required": ["timestamp", "requestId"],
                "properties": {
                    "timestamp": {"type": "string", "format": "date-time", "description": "ISO-8601 UTC with milliseconds and `Z`.", "example": EXAMPLE_TIMESTAMP},
                    "requestId": {"type": "string", "description": "Equals the `X-Request-Id` response header.", "example": EXAMPLE_REQUEST_ID},
                },
            }),
        ),
        (
            "ListMeta",
            json!({
                "type": "object",
                "description": "`meta` of list responses: `Meta` plus paging facts. There is no total count.",
                "required": ["timestamp", "requestId", "limit", "offset", "hasMore", "nextCursor"],
                "properties": {
                    "timestamp": {"type": "string", "format": "date-time", "description": "ISO-8601 UTC with milliseconds and `Z`.", "example": EXAMPLE_TIMESTAMP},
                    "requestId": {"type": "string", "description": "Equals the `X-Request-Id` response header."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "The page size applied."},
                    "offset": {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET, "description": "The offset applied."},
                    "hasMore": {"type": "boolean", "description": "True when more records follow this page."},
                    "nextCursor": {"type": ["string", "null"], "description": "Pass as `cursor` to get the next page; null on the last page."},
                },
            }),
        ),
        (
            "ErrorEnvelope",
            json!({
                "type": "object", "required": ["success", "error", "meta"],
                "properties": {
                    "success": {"type": "boolean", "const": false},
                    "error": {
                        "type": "object", "required": ["code", "message", "details"],
                        "properties": {
                            "code": {"$ref": "#/components/schemas/ErrorCode"},
                            "message": {"type": "string", "description": "Human-readable; may change, match on `code`."},
                            "details": {
                                "description": "`null`; for VALIDATION_FAILED an array of issues; for INVALID_STATE `{currentState}`; for a 405 `{allow}`; for RATE_LIMIT_EXCEEDED and SERVICE_UNAVAILABLE `{retryAfter}`.",
                                "oneOf": [
                                    {"type": "null"},
                                    {"type": "array", "items": {"$ref": "#/components/schemas/ValidationIssue"}},
                                    {"type": "object", "additionalProperties": true},
                                ],
                            },
                        },
                    },
                    "meta": {"$ref": "#/components/schemas/Meta"},
                },
            }),
        ),
    ]
}

/// What a webhook endpoint receives.
pub fn webhooks() -> Value {
    let header = |name: &str| json!({"name": name, "in": "header", "required": true, "schema": {"type": "string"}});
    json!({"event": {"post": {
        "operationId": "receiveEvent",
        "tags": ["Webhooks"],
        "summary": "An event delivered to your endpoint",
        "description": "Answer 2xx within 15 s. 410 disables the endpoint; anything else is retried. Deliveries are at least once and in no guaranteed order: dedupe on `webhook-id`.",
        "parameters": [header("webhook-id"), header("webhook-timestamp"), header("webhook-signature")],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/WebhookPayload"}}}},
        "responses": {"2XX": {"description": "Delivered."}, "410": {"description": "Stop: the endpoint is disabled."}},
    }}})
}
