//! The conventions every schema of the API follows, stated once for all
//! the types (each could be an attribute on every type it concerns): a
//! record carrying another's fields (`#[serde(flatten)]`, which the derive
//! writes as `allOf`) is the one object it is sent as; answers carry every
//! field (nullable ones as `null`); a resource's `object` is its name (its
//! `id` is its kind's type, `domain::ids`); request text in arrays refuses
//! control characters and a text `from`/`to` takes a date or a date-time.

use serde_json::{json, Value};
use utoipa::openapi::schema::{
    AdditionalProperties, AnyOfBuilder, ArrayItems, KnownFormat, Object, Schema, SchemaFormat,
    SchemaType, Type,
};
use utoipa::openapi::{OpenApi as Description, RefOr};
use utoipa::Modify;

use super::components::{constant, of_type};
use ::domain::field::LINE_PATTERN;

type Schemas = std::collections::BTreeMap<String, RefOr<Schema>>;

/// Applies the conventions to every schema of the description.
pub struct Conventions;

impl Modify for Conventions {
    fn modify(&self, doc: &mut Description) {
        let paths = serde_json::to_string(&doc.paths).unwrap_or_default();
        let Some(components) = doc.components.as_mut() else {
            return;
        };
        merge_flattened(&mut components.schemas, &paths);
        for (name, schema) in components.schemas.iter_mut() {
            let RefOr::T(Schema::Object(object)) = schema else {
                continue;
            };
            record_fields(name, object);
            if is_body(object) {
                body_strings(object);
            } else if name != "SummaryGroup" {
                // A summary group states its own, keyed by `status` or by `campaignId`.
                every_field_required(object);
            }
        }
    }
}

/// A keyword of a schema written as JSON (`schema::from_json`), which
/// carries its keywords as extensions.
fn written<'a>(object: &'a Object, keyword: &str) -> Option<&'a Value> {
    object.extensions.as_ref()?.get(keyword)
}

/// A request body: it refuses fields it does not name.
fn is_body(object: &Object) -> bool {
    let refuses =
        |a: &AdditionalProperties<Schema>| matches!(a, AdditionalProperties::FreeForm(false));
    object.additional_properties.as_deref().is_some_and(refuses)
        || written(object, "additionalProperties") == Some(&json!(false))
}

/// An answer carries every field (nullable ones as `null`).
fn every_field_required(object: &mut Object) {
    object.required = object.properties.keys().cloned().collect();
    let properties = written(object, "properties").and_then(Value::as_object);
    let keys: Option<Vec<Value>> = properties.map(|p| p.keys().map(|k| json!(k)).collect());
    if let (Some(keys), Some(keywords)) = (keys, object.extensions.as_mut()) {
        keywords.insert("required".into(), Value::Array(keys));
    }
}

/// A record made of parts (`allOf`) is the one object it is sent as, the
/// parts' fields in order, when its parts are named nowhere else (a part
/// that is an answer of its own, as a webhook endpoint is, stays a
/// reference); a part goes once nothing names it.
fn merge_flattened(schemas: &mut Schemas, paths: &str) {
    let text = |schemas: &Schemas| serde_json::to_string(schemas).unwrap_or_default() + paths;
    let named = |text: &str, part: &str| {
        text.matches(&format!("\"#/components/schemas/{part}\""))
            .count()
    };
    let flattened: Vec<(String, Vec<String>)> = schemas
        .iter()
        .filter_map(|(name, schema)| Some((name.clone(), part_names(schema)?)))
        .collect();
    let in_merges = |part: &str| {
        flattened
            .iter()
            .flat_map(|(_, p)| p)
            .filter(|p| *p == part)
            .count()
    };
    let before = text(schemas);
    let alone = |parts: &[String]| parts.iter().all(|p| named(&before, p) <= in_merges(p));
    let merging: Vec<&(String, Vec<String>)> = flattened.iter().filter(|(_, p)| alone(p)).collect();
    for (name, _) in &merging {
        if let Some(one) = merged(&schemas[name], schemas) {
            schemas.insert(name.clone(), RefOr::T(Schema::Object(one)));
        }
    }
    let after = text(schemas);
    for part in merging.iter().flat_map(|(_, parts)| parts) {
        if named(&after, part) == 0 {
            schemas.remove(part);
        }
    }
}

/// The schemas an `allOf` of object parts names, or `None` when it is
/// something else (a rule, a part without fields).
fn part_names(schema: &RefOr<Schema>) -> Option<Vec<String>> {
    let RefOr::T(Schema::AllOf(all_of)) = schema else {
        return None;
    };
    let mut names = Vec::new();
    for part in &all_of.items {
        match part {
            RefOr::Ref(r) => names.push(r.ref_location.rsplit('/').next()?.to_string()),
            RefOr::T(Schema::Object(o)) if !o.properties.is_empty() => {}
            RefOr::T(_) => return None,
        }
    }
    (!names.is_empty()).then_some(names)
}

/// The one object of a schema made of object parts (`allOf`).
fn merged(schema: &RefOr<Schema>, schemas: &Schemas) -> Option<Object> {
    let RefOr::T(Schema::AllOf(all_of)) = schema else {
        return None;
    };
    let mut out = Object::new();
    out.description.clone_from(&all_of.description);
    for part in &all_of.items {
        let part = match part {
            RefOr::Ref(r) => schemas.get(r.ref_location.rsplit('/').next()?)?,
            part => part,
        };
        let RefOr::T(Schema::Object(part)) = part else {
            return None;
        };
        if part.properties.is_empty() {
            return None;
        }
        out.properties.extend(part.properties.clone());
        out.required.extend(part.required.iter().cloned());
    }
    Some(out)
}

/// A resource's answer: its `object` is its name (its `id` is described by
/// its kind's type, `domain::ids`).
fn record_fields(name: &str, object: &mut Object) {
    if let Some(field) = object.properties.get_mut("object") {
        *field = constant(Type::String, json!(snake(name))).into();
    }
}

/// `WebhookEndpoint` is `webhook_endpoint`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// Whether `object` is of type `kind` (alone, or beside others).
fn has_type(object: &Object, kind: Type) -> bool {
    match &object.schema_type {
        SchemaType::Type(one) => *one == kind,
        SchemaType::Array(types) => types.contains(&kind),
        SchemaType::AnyValue => false,
    }
}

/// A request body: text in arrays refuses control characters like every
/// other string, and a text `from`/`to` takes a date or a date-time (a
/// number's, as a month range's, stays a number).
fn body_strings(body: &mut Object) {
    for (name, field) in body.properties.iter_mut() {
        let RefOr::T(schema) = field else {
            continue;
        };
        if let Schema::Array(array) = schema {
            let items = match &mut array.items {
                ArrayItems::RefOrSchema(items) => Some(items.as_mut()),
                _ => None,
            };
            let text = array.schema_type == SchemaType::Type(Type::Array);
            if let (true, Some(RefOr::T(Schema::Object(item)))) = (text, items) {
                let free = item.schema_type == SchemaType::Type(Type::String);
                if free && item.enum_values.is_none() {
                    item.pattern.get_or_insert(LINE_PATTERN.to_string());
                }
            }
        }
        let Schema::Object(text) = schema else {
            continue;
        };
        if (name == "from" || name == "to") && has_type(text, Type::String) {
            let format =
                |known| of_type(Type::String).format(Some(SchemaFormat::KnownFormat(known)));
            let mut forms = AnyOfBuilder::new()
                .item(format(KnownFormat::Date))
                .item(format(KnownFormat::DateTime));
            if has_type(text, Type::Null) {
                forms = forms.item(of_type(Type::Null));
            }
            *schema = Schema::AnyOf(forms.description(text.description.take()).build());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use utoipa::openapi::schema::{AllOfBuilder, ObjectBuilder};
    use utoipa::openapi::Ref;

    fn object(field: &str) -> RefOr<Schema> {
        let object = ObjectBuilder::new().required(field);
        object.property(field, of_type(Type::String)).into()
    }

    fn refer(name: &str) -> RefOr<Schema> {
        RefOr::Ref(Ref::from_schema_name(name))
    }

    fn all_of(parts: [RefOr<Schema>; 2]) -> RefOr<Schema> {
        let all_of = parts
            .into_iter()
            .fold(AllOfBuilder::new(), |a, p| a.item(p));
        all_of.description(Some("d")).into()
    }

    fn schemas(named: [(&str, RefOr<Schema>); 4]) -> Schemas {
        named.into_iter().map(|(n, s)| (n.to_string(), s)).collect()
    }

    const PATHS: &str = r##"{"/e":{"get":{"$ref":"#/components/schemas/Endpoint"}}}"##;

    #[test]
    fn a_part_named_only_by_flattening_is_merged_and_one_named_elsewhere_stays() {
        let mut schemas = schemas([
            ("Terms", object("id")),
            ("Portal", all_of([refer("Terms"), object("days")])),
            ("Endpoint", object("url")),
            ("WithSecret", all_of([refer("Endpoint"), object("secret")])),
        ]);
        merge_flattened(&mut schemas, PATHS);
        assert_eq!(
            serde_json::to_value(&schemas["Portal"]).unwrap(),
            json!({"type": "object", "description": "d", "required": ["id", "days"],
                "properties": {"id": {"type": "string"}, "days": {"type": "string"}}})
        );
        assert!(!schemas.contains_key("Terms"));
        assert!(matches!(schemas["WithSecret"], RefOr::T(Schema::AllOf(_))));
        assert!(schemas.contains_key("Endpoint"));
    }

    #[test]
    fn a_part_a_kept_record_still_names_stays() {
        let mut schemas = schemas([
            ("Shared", object("id")),
            ("Endpoint", object("url")),
            ("Merged", all_of([refer("Shared"), object("days")])),
            ("Kept", all_of([refer("Shared"), refer("Endpoint")])),
        ]);
        merge_flattened(&mut schemas, PATHS);
        assert!(matches!(schemas["Merged"], RefOr::T(Schema::Object(_))));
        assert!(matches!(schemas["Kept"], RefOr::T(Schema::AllOf(_))));
        assert!(schemas.contains_key("Shared"), "Kept still names it");
    }
}
