//! Hand-written parts of the API description, for the types whose JSON
//! Schema the derive cannot state (maps with limits, the currency table):
//! each is built from the very constants the validation uses.

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

/// The pattern of a one-line string: no control characters.
pub const LINE_PATTERN: &str = r"^[^\u0000-\u001F\u007F]*$";
/// The pattern of free text: tab, line feed and carriage return allowed.
pub const TEXT_PATTERN: &str = r"^[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]*$";

/// Describes a type by JSON Schema written in code: `described!(Type,
/// "Name", json!({...}))` implements `ToSchema` with that name; a fourth
/// argument, `[("Other", json!({...})), ...]`, adds schemas it refers to.
#[macro_export]
macro_rules! described {
    ($ty:ty, $name:literal, $schema:expr $(, [$(($dep:literal, $dep_schema:expr)),* $(,)?])? $(,)?) => {
        impl ::utoipa::PartialSchema for $ty {
            fn schema() -> ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema> {
                $crate::schema::from_json($schema)
            }
        }

        impl ::utoipa::ToSchema for $ty {
            fn name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed($name)
            }

            $(
            fn schemas(
                schemas: &mut Vec<(String, ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema>)>,
            ) {
                $( schemas.push(($dep.to_string(), $crate::schema::from_json($dep_schema))); )*
            }
            )?
        }
    };
}
