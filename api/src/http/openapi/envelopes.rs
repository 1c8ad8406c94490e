//! The envelopes `http::envelope` writes around every answer, described:
//! `meta`, a list's `meta`, the error envelope, and the success envelope
//! of each data schema (`XResponse`, `XListResponse`).

use serde_json::json;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::{Ref, RefOr};

use super::answers::EXAMPLE_REQUEST_ID;
use super::components::constant;
use crate::http::envelope::ListMeta;
use crate::store::page::{MAX_LIMIT, MAX_OFFSET};

/// `meta` of every answer.
pub struct Meta;

crate::described!(
    Meta,
    "Meta",
    json!({
        "type": "object", "required": ["timestamp", "requestId"],
        "properties": {
            "timestamp": {"$ref": "#/components/schemas/Timestamp"},
            "requestId": {"type": "string", "description": "Equals the `X-Request-Id` response header.", "example": EXAMPLE_REQUEST_ID},
        },
    }),
);

crate::described!(
    ListMeta,
    "ListMeta",
    json!({
        "type": "object",
        "description": "`meta` of list responses: `Meta` plus paging facts. There is no total count.",
        "required": ["timestamp", "requestId", "limit", "offset", "hasMore", "nextCursor"],
        "properties": {
            "timestamp": {"$ref": "#/components/schemas/Timestamp"},
            "requestId": {"type": "string", "description": "Equals the `X-Request-Id` response header."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "The page size applied."},
            "offset": {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET, "description": "The offset applied."},
            "hasMore": {"type": "boolean", "description": "True when more records follow this page."},
            "nextCursor": {"type": ["string", "null"], "description": "Pass as `cursor` to get the next page; null on the last page."},
        },
    }),
);

/// The body of every error answer (`envelope::failure`).
pub struct ErrorEnvelope;

crate::described!(
    ErrorEnvelope,
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
);

/// The success envelope around `data` (one record, or a page of them with
/// the list's `meta`).
pub(super) fn success(data: RefOr<Schema>, list: bool) -> RefOr<Schema> {
    let meta = if list { "ListMeta" } else { "Meta" };
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .required("success")
        .required("data")
        .required("meta")
        .property("success", constant(Type::Boolean, json!(true)))
        .property("data", data)
        .property("meta", Ref::from_schema_name(meta))
        .into()
}
