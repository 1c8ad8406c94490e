//! The answers operations refer to by type (`response = Conflict`, or
//! `response = inline(QuotaReached)` for one operation's own): the error
//! answers, their examples rendered by the envelope code itself, and the
//! answers that are no enveloped JSON (the document, an invoice file).

use serde_json::{json, Value};
use utoipa::openapi::example::ExampleBuilder;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{ContentBuilder, Header, Ref, RefOr, Response, ResponseBuilder};
use utoipa::ToResponse;

use super::components::header_ref;
use crate::domain::payout::INVOICE_CONTENT_TYPES;
use crate::domain::postback::Quota;
use crate::domain::webhook::{room_for_endpoint, MAX_ENDPOINTS};
use crate::http::envelope;
use crate::http::router::STATIC_CACHE_CONTROL;
use ::domain::error::Error;
use ::domain::issue::Issue;

/// The request id every example shows.
pub(super) const EXAMPLE_REQUEST_ID: &str = "req_01JD3Q5W6X7Y8Z9A0B1C2D3E4F";

/// The envelope the API answers `err` with, as an example.
fn example(err: &Error) -> Value {
    let (_, mut body, _) = envelope::failure(err, EXAMPLE_REQUEST_ID);
    body["meta"]["timestamp"] = json!(domain::timestamp::EXAMPLE);
    body
}

/// An error answer: its description, its examples (one, or several by
/// name) and the headers beside `X-Request-Id`.
fn error_response(description: &str, examples: &[(&str, Error)], headers: &[&str]) -> Response {
    let mut content = ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorEnvelope")));
    content = match examples {
        [(_, only)] => content.example(Some(example(only))),
        many => content.examples_from_iter(many.iter().map(|(name, err)| {
            let value = ExampleBuilder::new()
                .summary(err.code().as_str())
                .value(Some(example(err)));
            (*name, value.build())
        })),
    };
    let mut response = ResponseBuilder::new()
        .description(description)
        .header_ref("X-Request-Id", header_ref("X-Request-Id"));
    for name in headers {
        response = response.header_ref(*name, header_ref(name));
    }
    response
        .content("application/json", content.build())
        .build()
}

fn invalid(path: &str, code: &str, message: &str) -> Error {
    Error::Validation(vec![Issue::new(&[path], code, message)])
}

fn content_type() -> Error {
    Error::InvalidRequest("Content-Type must be application/json".into())
}

fn rate_limited() -> Error {
    Error::RateLimited { retry_after: 17 }
}

/// Answers described by code: each a type whose `ToResponse` is its name
/// and that answer.
macro_rules! answers {
    ($($(#[$doc:meta])* $name:ident => $answer:expr;)+) => {$(
        $(#[$doc])*
        pub struct $name;

        impl<'s> ToResponse<'s> for $name {
            fn response() -> (&'s str, RefOr<Response>) {
                (stringify!($name), RefOr::T($answer))
            }
        }
    )+};
}

answers! {
    /// 400 for a query that breaks the rules.
    ValidationFailed => error_response(
        "`VALIDATION_FAILED`: the body or query breaks the schema or the rules. `details` lists every issue found.",
        &[("", invalid("commissionValue", "invalid_value", "a percentage commissionValue must be 0-100"))], &[]);
    /// 400 for a request that is not well-formed JSON, or a bad `Idempotency-Key`.
    InvalidRequest => error_response(
        "`INVALID_REQUEST`: the body is not declared `application/json`, is not parsable JSON, is larger than 64 KiB, or has an object with the same key twice (at any depth); or the `Idempotency-Key` is not 1-255 visible ASCII characters.",
        &[("", content_type())], &[]);
    /// 400 for an operation with a body: either of the two above.
    BadRequest => error_response(
        "`VALIDATION_FAILED` (the body breaks the schema or the rules; `details` lists every issue) or `INVALID_REQUEST` (body not declared `application/json`, not parsable JSON, larger than 64 KiB, or with an object holding the same key twice; or an `Idempotency-Key` that is not 1-255 visible ASCII characters).",
        &[("validationFailed", invalid("extra", "unrecognized_keys", "unknown field extra")), ("invalidRequest", content_type())], &[]);
    /// 401: no valid credentials.
    Unauthorized => error_response(
        "`UNAUTHORIZED`: the API key is missing, malformed, tampered, unknown or revoked (one answer for all).",
        &[("", Error::Unauthorized)], &[]);
    /// 403: a locked account.
    PermissionDenied => error_response(
        "`PERMISSION_DENIED`: the account is locked or its subscription has expired (a valid key of that account, or a signed provider event to one of its integrations).",
        &[("", Error::PermissionDenied("the account is locked".into()))], &[]);
    /// 404: no such record or route.
    NotFound => error_response(
        "`NOT_FOUND`: no such record in the caller's account and mode (or, for public routes, no public record), or no such route.",
        &[("", Error::NotFound("campaign"))], &[]);
    /// 405: the path has not this method.
    MethodNotAllowed => error_response(
        "`INVALID_REQUEST` with status 405: the path exists but not with this method. The `Allow` header and `details.allow` list the methods that do.",
        &[("", Error::MethodNotAllowed { allow: vec!["GET".into(), "POST".into()] })], &["Allow"]);
    /// 409: a taken value or a state that forbids the operation.
    Conflict => error_response(
        "`ALREADY_EXISTS` (a unique value is taken, or an `Idempotency-Key` was used with another request or its first request still runs) or `INVALID_STATE` (the record's state forbids the operation; `details.currentState` names it).",
        &[("", Error::InvalidState { resource: "payout", current: "PAID".into(), action: "approve" })], &[]);
    /// 429: the rate limit is used up.
    TooManyRequests => error_response(
        "`RATE_LIMIT_EXCEEDED`: the rate limit of this account (or client IP, for public routes) is used up; retry after `Retry-After` seconds. (`LIMIT_EXCEEDED`, a used-up plan quota, also uses 429.)",
        &[("", rate_limited())], &["Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"]);
    /// 500: an unexpected failure.
    ServerError => error_response(
        "`SERVER_ERROR`: an unexpected failure. It is logged under the request id; the message reveals no internals.",
        &[("", Error::internal("example"))], &[]);
    /// 503: a dependency is unavailable.
    ServiceUnavailable => error_response(
        "`SERVICE_UNAVAILABLE`: a dependency timed out or is unreachable, or the record is too contended to update; retry after `Retry-After` seconds. Store calls are bounded (connect, per-attempt and per-call timeouts), so this answer comes within seconds, never at the gateway's limit.",
        &[("", Error::Unavailable("a storage service is unavailable; retry later".into()))], &["Retry-After"]);
    /// The postback's 429: the plan's quota, or the rate limit.
    QuotaReached => error_response(
        "`LIMIT_EXCEEDED`: the account's monthly live-mode conversion quota (per plan; configuration) is used up: nothing was recorded. Or `RATE_LIMIT_EXCEEDED` (see `Retry-After`).",
        &[("limitExceeded", Quota { account_id: "acct_example".into(), plan: "free".into(), cap: Some(1000) }.reached()), ("rateLimited", rate_limited())],
        &["Retry-After"]);
    /// A new webhook endpoint's 429: the cap, or the rate limit.
    EndpointCapReached => error_response(
        &format!("`LIMIT_EXCEEDED`: the account holds {MAX_ENDPOINTS} endpoints in this mode (`WEBHOOK_MAX_ENDPOINTS`); nothing was created, and a delete makes room. Or `RATE_LIMIT_EXCEEDED` (see `Retry-After`)."),
        &[("limitExceeded", room_for_endpoint(MAX_ENDPOINTS, MAX_ENDPOINTS).err().unwrap_or_else(|| Error::internal("the cap admits no more"))), ("rateLimited", rate_limited())],
        &["Retry-After"]);
    /// This description, served as is: not enveloped, outside the rate limit.
    OpenApiDocument => document();
    /// A payout's invoice file, in the type it was uploaded in.
    InvoiceFile => invoice_file();
}

fn document() -> Response {
    let cache = ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some([STATIC_CACHE_CONTROL, "no-store"]));
    let cache = Header::builder()
        .description(Some("Shared caches may keep the document for five minutes; an answer to a request that carried `Authorization` is `no-store`, like every authenticated answer."))
        .schema(Some(cache));
    let object = ObjectBuilder::new().schema_type(Type::Object);
    ResponseBuilder::new()
        .description("The OpenAPI document.")
        .header_ref("X-Request-Id", header_ref("X-Request-Id"))
        .header_ref(
            "Access-Control-Allow-Origin",
            header_ref("Access-Control-Allow-Origin"),
        )
        .header("Cache-Control", cache.build())
        .content(
            "application/json",
            ContentBuilder::new().schema(Some(object)).build(),
        )
        .build()
}

fn invoice_file() -> Response {
    let disposition = Header::builder()
        .description(Some("`attachment; filename=\"…\"` (the file name with anything but `[A-Za-z0-9._-]` replaced by `_`)."))
        .schema(Some(ObjectBuilder::new().schema_type(Type::String)));
    let mut response = ResponseBuilder::new()
        .description("The invoice file, as uploaded.")
        .header("Content-Disposition", disposition.build());
    for content_type in INVOICE_CONTENT_TYPES {
        let bytes = ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)));
        response = response.content(
            content_type,
            ContentBuilder::new().schema(Some(bytes)).build(),
        );
    }
    response.build()
}
