//! The success and error envelopes: the one place an `Error` becomes a response.

use serde_json::{json, Value};

use ::domain::error::Error;
use ::domain::timestamp;

/// Paging facts added to `meta` of list responses.
#[derive(Debug, Clone)]
pub struct ListMeta {
    pub limit: usize,
    pub offset: usize,
    pub has_more: bool,
    pub next_cursor: Option<String>,
}

/// `{success: true, data, meta}`.
pub fn success(data: Value, list: Option<&ListMeta>, request_id: &str) -> Value {
    let mut meta = json!({
        "timestamp": timestamp::format(&timestamp::now()),
        "requestId": request_id,
    });
    if let Some(l) = list {
        meta["limit"] = json!(l.limit);
        meta["offset"] = json!(l.offset);
        meta["hasMore"] = json!(l.has_more);
        meta["nextCursor"] = json!(l.next_cursor);
    }
    json!({ "success": true, "data": data, "meta": meta })
}

/// The HTTP status and envelope of an error, plus headers it implies.
pub fn failure(err: &Error, request_id: &str) -> (u16, Value, Vec<(&'static str, String)>) {
    let code = err.code();
    let mut headers = Vec::new();
    let mut status = code.status();
    let (message, details) = match err {
        Error::Validation(issues) => (err.to_string(), json!(issues)),
        Error::InvalidState { current, .. }
        | Error::InvoiceMissing { current }
        | Error::InvoiceReplaced { current } => {
            (err.to_string(), json!({ "currentState": current }))
        }
        Error::NotPaidThroughStripe => (
            err.to_string(),
            json!({ "currentState": "NO_PAYING_STRIPE_INTEGRATION" }),
        ),
        Error::ProviderRefused { current, code, .. } => (
            err.to_string(),
            json!({ "currentState": current, "providerCode": code }),
        ),
        Error::InPayout { current, payout_id } => (
            err.to_string(),
            json!({ "currentState": current, "payoutId": payout_id }),
        ),
        Error::MethodNotAllowed { allow } => {
            status = 405;
            headers.push(("allow", allow.join(", ")));
            (err.to_string(), json!({ "allow": allow }))
        }
        Error::RateLimited { retry_after } => {
            headers.push(("retry-after", retry_after.to_string()));
            (err.to_string(), json!({ "retryAfter": retry_after }))
        }
        Error::Internal(cause) => {
            tracing::error!(request_id, cause = %cause, "internal error");
            (
                "an internal error occurred; it has been logged".to_string(),
                Value::Null,
            )
        }
        Error::Unavailable(cause) => {
            tracing::warn!(request_id, cause = %cause, "dependency unavailable");
            let retry_after = ::domain::error::UNAVAILABLE_RETRY_AFTER_SECONDS;
            headers.push(("retry-after", retry_after.to_string()));
            (err.to_string(), json!({ "retryAfter": retry_after }))
        }
        _ => (err.to_string(), Value::Null),
    };
    let body = json!({
        "success": false,
        "error": { "code": code.as_str(), "message": message, "details": details },
        "meta": { "timestamp": timestamp::format(&timestamp::now()), "requestId": request_id },
    });
    (status, body, headers)
}
