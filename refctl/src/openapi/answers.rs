//! The answers and parameters whose description comes from a constant of
//! the code rather than from a type: the document itself, invoice files,
//! the postback's quota answer and replay header, the endpoint cap's
//! answer, amount bounds and the summary's default period.

use api::domain::payout::INVOICE_CONTENT_TYPES;
use api::domain::postback::Quota;
use api::domain::summary::Period;
use api::domain::webhook::{room_for_endpoint, MAX_ENDPOINTS};
use api::error::Error;
use api::http::router::STATIC_CACHE_CONTROL;
use rust_decimal::Decimal;
use serde_json::{json, Value};

use super::components::error_response;

/// Completes the answers of the operations that have their own.
pub fn special(op: &mut Value) {
    match op["operationId"].as_str().unwrap_or_default() {
        "getOpenApi" => document(op),
        "getPayoutInvoice" => invoice(op),
        "postConversion" => postback(op),
        "createWebhookEndpoint" => endpoint_cap(op),
        _ => {}
    }
}

fn document(op: &mut Value) {
    let Some(ok) = op.pointer_mut("/responses/200") else {
        return;
    };
    ok["headers"] = json!({
        "X-Request-Id": {"$ref": "#/components/headers/XRequestId"},
        "Access-Control-Allow-Origin": {"$ref": "#/components/headers/AccessControlAllowOrigin"},
        "Cache-Control": {
            "description": "Shared caches may keep the document for five minutes; an answer to a request that carried `Authorization` is `no-store`, like every authenticated answer.",
            "schema": {"type": "string", "enum": [STATIC_CACHE_CONTROL, "no-store"]},
        },
    });
    ok["content"] = json!({"application/json": {"schema": {"type": "object"}}});
}

fn invoice(op: &mut Value) {
    let Some(ok) = op.pointer_mut("/responses/200") else {
        return;
    };
    let content: serde_json::Map<String, Value> = INVOICE_CONTENT_TYPES
        .iter()
        .map(|ct| {
            (
                ct.to_string(),
                json!({"schema": {"type": "string", "format": "binary"}}),
            )
        })
        .collect();
    ok["content"] = Value::Object(content);
}

fn postback(op: &mut Value) {
    if let Some(replayed) = op.pointer_mut("/responses/200/headers/Idempotent-Replayed") {
        replayed["schema"] = json!({"type": "string", "enum": ["true"]});
    }
    let quota = Quota {
        account_id: "acct_example".into(),
        plan: "free".into(),
        cap: Some(1000),
    };
    op["responses"]["429"] = error_response(
        "`LIMIT_EXCEEDED`: the account's monthly live-mode conversion quota (per plan; configuration) is used up: nothing was recorded. Or `RATE_LIMIT_EXCEEDED` (see `Retry-After`).",
        &[
            ("limitExceeded", quota.reached()),
            ("rateLimited", Error::RateLimited { retry_after: 17 }),
        ],
        &["Retry-After"],
    );
}

fn endpoint_cap(op: &mut Value) {
    let cap = MAX_ENDPOINTS;
    let reached = room_for_endpoint(cap, cap)
        .err()
        .unwrap_or_else(|| Error::internal("the cap admits no more"));
    op["responses"]["429"] = error_response(
        &format!("`LIMIT_EXCEEDED`: the account holds {cap} endpoints in this mode (`WEBHOOK_MAX_ENDPOINTS`); nothing was created, and a delete makes room. Or `RATE_LIMIT_EXCEEDED` (see `Retry-After`)."),
        &[
            ("limitExceeded", reached),
            ("rateLimited", Error::RateLimited { retry_after: 17 }),
        ],
        &["Retry-After"],
    );
}

/// The largest number a client may send as an amount filter: `Decimal::MAX`
/// as an `f64` is 2^96, one above it, which the API refuses; so the `f64`
/// just below, whose every decimal form fits.
fn largest_amount() -> f64 {
    let mut x: f64 = Decimal::MAX.to_string().parse().unwrap_or(f64::MAX);
    while x.to_string().parse::<Decimal>().is_err() {
        x = f64::from_bits(x.to_bits() - 1);
    }
    x
}

/// What a query parameter's name says of its values.
pub fn query_rules(name: &str, p: &mut Value) {
    let schema = &mut p["schema"];
    match name {
        "email" => schema["format"] = json!("email"),
        "min_amount" | "max_amount" => {
            schema["minimum"] = json!(0);
            schema["maximum"] = json!(largest_amount());
        }
        "period" => schema["default"] = json!(Period::Days30.as_str()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::http::query::Query;

    /// The described maximum is accepted as the description writes it and as
    /// a client renders it with an exponent; the next `f64` up is refused.
    #[test]
    fn the_largest_amount_described_is_one_the_api_accepts() {
        let max = largest_amount();
        let above = f64::from_bits(max.to_bits() + 1);
        let accepted = |text: String| {
            let pairs = vec![("max_amount".to_string(), text)];
            let mut q = Query::new(&pairs, &["max_amount"]);
            let amount = q.amount("max_amount");
            q.finish().is_ok() && amount.is_some()
        };
        for text in [json!(max).to_string(), format!("{max:e}"), max.to_string()] {
            assert!(accepted(text.clone()), "{text}");
        }
        assert!(!accepted(json!(above).to_string()), "{above}");
        assert!(!accepted(above.to_string()), "{above}");
    }
}
