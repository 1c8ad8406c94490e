//! What the layers every operation passes give it, added to what its
//! handler states: the success envelope around its data, the request-id and
//! rate-limit headers (CORS on public routes), the error answers of its
//! access and shape, the `{id}` and paging parameters, and on a merchant's
//! POST the `Idempotency-Key`.

use std::collections::BTreeMap;

use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::schema::{ArrayItems, Schema};
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{OpenApi as Description, Ref, RefOr, Required, Response};
use utoipa::Modify;

use super::components::{header_ref, parameter_ref, ID_PARAMETERS};
use super::envelopes::success;

/// Completes every operation of the description.
pub struct Operations;

impl Modify for Operations {
    fn modify(&self, doc: &mut Description) {
        let mut envelopes = BTreeMap::new();
        for (path, item) in doc.paths.paths.iter_mut() {
            let id = id_parameter(path);
            if let Some(name) = id {
                item.parameters = Some(vec![parameter_ref(name)]);
            }
            let ops = [
                (&mut item.get, false),
                (&mut item.post, true),
                (&mut item.put, false),
                (&mut item.patch, false),
                (&mut item.delete, false),
            ];
            for (op, post) in ops {
                if let Some(op) = op {
                    complete(op, id.is_some(), post, &mut envelopes);
                }
            }
        }
        let components = doc.components.get_or_insert_with(Default::default);
        for (name, schema) in envelopes {
            components.schemas.entry(name).or_insert(schema);
        }
    }
}

/// The `{id}` parameter of a path, named after the resource the path starts
/// with (the segment after the portal's own, for the affiliate portal's
/// routes).
fn id_parameter(path: &str) -> Option<&'static str> {
    if !path.contains("{id}") {
        return None;
    }
    let mut segments = path.trim_start_matches("/api/v1/").split('/');
    let first = segments.next()?;
    let resource = match first {
        "portal" => segments.next()?,
        _ => first,
    };
    let found = ID_PARAMETERS.iter().find(|p| p.0 == resource);
    found.map(|p| p.1)
}

/// Who may call an operation, as its statement's `security` says.
#[derive(PartialEq)]
enum Access {
    /// An API key (the description's default): counted per account.
    Merchant,
    /// A portal token: counted per affiliate.
    Portal,
    /// Anyone (`security()`), counted per client address, CORS.
    Public,
    /// Anyone, outside the access layer: the document built into the
    /// binary, whose statement names every answer (its `500` too).
    Outside,
}

impl Access {
    fn of(op: &Operation) -> Access {
        let portal = SecurityRequirement::new("portalToken", Vec::<String>::new());
        match &op.security {
            None => Access::Merchant,
            Some(s) if s.is_empty() && op.responses.responses.contains_key("500") => {
                Access::Outside
            }
            Some(s) if s.is_empty() => Access::Public,
            Some(s) if s.iter().all(|r| *r == portal) => Access::Portal,
            Some(_) => Access::Merchant,
        }
    }
}

/// Adds to `op` what its access and shape give it.
fn complete(
    op: &mut Operation,
    has_id: bool,
    post: bool,
    envelopes: &mut BTreeMap<String, RefOr<Schema>>,
) {
    let access = Access::of(op);
    if access == Access::Outside {
        return;
    }
    optional_body(op);
    let has_query = shared_paging(op);
    for (status, response) in op.responses.responses.iter_mut() {
        if let (true, RefOr::T(response)) = (status.starts_with('2'), response) {
            envelope(response, envelopes);
            standard_headers(response, &access);
        }
    }
    let has_body = op.request_body.is_some();
    let mut add = |status: &str, name: &str| {
        let answer = RefOr::Ref(Ref::from_response_name(name));
        op.responses
            .responses
            .entry(status.into())
            .or_insert(answer);
    };
    if has_body {
        add("400", "BadRequest");
    } else if has_query {
        add("400", "ValidationFailed");
    }
    if access != Access::Public {
        add("401", "Unauthorized");
    }
    if access == Access::Merchant {
        add("403", "PermissionDenied");
    }
    if has_id || access == Access::Public {
        add("404", "NotFound");
    }
    add("429", "TooManyRequests");
    add("500", "ServerError");
    add("503", "ServiceUnavailable");
    if post && access == Access::Merchant {
        idempotent(op);
    }
}

/// A body stated as `Option<T>` (every field optional): `T`, not required.
fn optional_body(op: &mut Operation) {
    let Some(RefOr::T(body)) = &mut op.request_body else {
        return;
    };
    let Some(RefOr::T(content)) = body.content.get_mut("application/json") else {
        return;
    };
    let Some(RefOr::T(Schema::OneOf(one_of))) = &content.schema else {
        return;
    };
    let inner = one_of.items.iter().find(|s| matches!(s, RefOr::Ref(_)));
    if let Some(inner) = inner.cloned() {
        content.schema = Some(inner);
        body.required = Some(Required::False);
    }
}

/// The paging parameters (`PageRequest`'s, or a statement's own of those
/// names) are the shared components; whether the operation takes a query.
fn shared_paging(op: &mut Operation) -> bool {
    let mut has_query = false;
    for p in op.parameters.iter_mut().flatten() {
        let RefOr::T(parameter) = p else {
            continue;
        };
        let query = parameter.parameter_in == ParameterIn::Query;
        has_query |= query;
        let shared = match parameter.name.as_str() {
            "limit" if query => "Limit",
            "offset" if query => "Offset",
            "cursor" if query => "Cursor",
            _ => continue,
        };
        *p = parameter_ref(shared);
    }
    has_query
}

/// The data schema of a success answer wrapped in the success envelope:
/// `X` becomes `XResponse`, a list of `X` becomes `XListResponse`.
fn envelope(response: &mut Response, envelopes: &mut BTreeMap<String, RefOr<Schema>>) {
    let Some(RefOr::T(content)) = response.content.get_mut("application/json") else {
        return;
    };
    let Some(data) = &content.schema else {
        return;
    };
    let (name, list) = match data {
        RefOr::Ref(r) => {
            let base = ref_name(r);
            (
                format!("{}Response", base.strip_suffix("Result").unwrap_or(base)),
                false,
            )
        }
        RefOr::T(Schema::Array(array)) => match &array.items {
            ArrayItems::RefOrSchema(items) => match items.as_ref() {
                RefOr::Ref(r) => (format!("{}ListResponse", ref_name(r)), true),
                RefOr::T(_) => return,
            },
            _ => return,
        },
        RefOr::T(_) => return,
    };
    envelopes
        .entry(name.clone())
        .or_insert_with(|| success(data.clone(), list));
    content.schema = Some(RefOr::Ref(Ref::from_schema_name(name)));
}

fn ref_name(r: &Ref) -> &str {
    r.ref_location.rsplit('/').next().unwrap_or_default()
}

/// `X-Request-Id` and the rate-limit headers on every success answer, and
/// CORS on the public ones; a header the statement names stays its own.
fn standard_headers(response: &mut Response, access: &Access) {
    let mut names = vec![
        "X-Request-Id",
        "RateLimit-Limit",
        "RateLimit-Remaining",
        "RateLimit-Reset",
    ];
    if *access == Access::Public {
        names.push("Access-Control-Allow-Origin");
    }
    for name in names {
        let header = RefOr::Ref(header_ref(name));
        response.headers.entry(name.into()).or_insert(header);
    }
}

/// A merchant's POST takes `Idempotency-Key`, and its successes may say
/// `Idempotent-Replayed`.
fn idempotent(op: &mut Operation) {
    let key = parameter_ref("IdempotencyKey");
    op.parameters.get_or_insert_with(Vec::new).push(key);
    let responses = &mut op.responses.responses;
    for (status, name) in [("409", "Conflict"), ("400", "InvalidRequest")] {
        let answer = RefOr::Ref(Ref::from_response_name(name));
        responses.entry(status.into()).or_insert(answer);
    }
    for (status, response) in responses.iter_mut() {
        if let (true, RefOr::T(response)) = (status.starts_with('2'), response) {
            let replayed = RefOr::Ref(header_ref("Idempotent-Replayed"));
            response
                .headers
                .insert("Idempotent-Replayed".into(), replayed);
        }
    }
}
