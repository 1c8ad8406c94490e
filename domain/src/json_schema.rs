//! A schema written as JSON, for the types whose description is built by
//! code (`schema::described!`, the field rules of `field`).

use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType};
use utoipa::openapi::RefOr;

/// A schema written as JSON, carried as it is (every keyword of JSON
/// Schema, which the typed model does not all have).
pub fn from_json(value: serde_json::Value) -> RefOr<Schema> {
    let keywords: Extensions = match value {
        serde_json::Value::Object(map) => map.into_iter().collect(),
        _ => Extensions::default(),
    };
    let object = ObjectBuilder::new()
        .schema_type(SchemaType::AnyValue)
        .extensions(Some(keywords))
        .build();
    RefOr::T(Schema::Object(object))
}
