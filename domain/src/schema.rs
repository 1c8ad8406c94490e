//! Hand-written parts of the API description, for the types whose JSON
//! Schema the derive cannot state (maps with limits, the currency table):
//! each is built from the very constants the validation uses.

use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;

use crate::issue::Issue;

pub use crate::json_schema::from_json;

/// Describes a type by JSON Schema written in code: `described!(Type,
/// "Name", json!({...}))` implements `ToSchema` with that name; a fourth
/// argument, `[("Other", json!({...})), ...]`, adds schemas it refers to.
#[macro_export]
macro_rules! described {
    ($ty:ty, $name:expr, $schema:expr $(, [$(($dep:expr, $dep_schema:expr)),* $(,)?])? $(,)?) => {
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

/// The limits a type's description states for one of its properties: the
/// rules of a single body (integer ranges, item counts), written once in the `#[schema(...)]` attribute of its field;
/// the validation reads them from there (through [`limits!`](crate::limits)),
/// so the description and the check cannot drift apart. Rules fields share
/// are types of `crate::field` (a provider's formats, of
/// `crate::provider_format`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// `minimum` (unbounded when not stated).
    pub minimum: i64,
    /// `maximum` (unbounded when not stated).
    pub maximum: i64,
    /// `maxItems` (unbounded when not stated).
    pub max_items: usize,
}

impl Limits {
    /// What `T`'s schema states for `property`.
    pub fn of<T: utoipa::PartialSchema>(property: &str) -> Limits {
        let mut limits = Limits {
            minimum: i64::MIN,
            maximum: i64::MAX,
            max_items: usize::MAX,
        };
        let RefOr::T(Schema::Object(object)) = T::schema() else {
            return limits;
        };
        let stated = object.properties.get(property);
        debug_assert!(stated.is_some(), "no property {property} in the schema");
        match stated {
            Some(RefOr::T(Schema::Object(p))) => {
                limits.minimum = p.minimum.as_ref().map_or(limits.minimum, whole);
                limits.maximum = p.maximum.as_ref().map_or(limits.maximum, whole);
            }
            Some(RefOr::T(Schema::Array(a))) => {
                limits.max_items = a.max_items.unwrap_or(limits.max_items);
            }
            _ => {}
        }
        limits
    }

    /// An integer against `minimum` and `maximum`.
    pub fn check_range(&self, path: &str, value: i64) -> Result<(), Issue> {
        crate::field::check_range(path, value, self.minimum, self.maximum)
    }

    /// An integer brought inside `minimum` and `maximum` (after its issue is recorded).
    pub fn clamp(&self, value: i64) -> i64 {
        value.clamp(self.minimum, self.maximum)
    }
}

/// A value judged against the limits its body states, where the body is
/// read: the value (a number brought inside its range), and the issue when it
/// broke a limit. The domain records the issue where its own checks stand, so
/// a refused body lists its issues in the order of its fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged<T> {
    pub value: T,
    pub issue: Option<Issue>,
}

/// A whole number judged against its range.
pub type Ranged = Judged<u32>;

impl<T> Judged<T> {
    /// A value within its limits (the domain's tests).
    #[cfg(test)]
    pub fn ok(value: T) -> Judged<T> {
        Judged { value, issue: None }
    }

    /// Records the issue, if any; the value.
    pub fn take(self, issues: &mut crate::validation::Issues) -> T {
        if let Some(i) = self.issue {
            issues.push(i);
        }
        self.value
    }

    /// Records the issue, if any; the value, borrowed (where the value is
    /// kept after it is checked).
    pub fn judge(&self, issues: &mut crate::validation::Issues) -> &T {
        if let Some(i) = &self.issue {
            issues.push(i.clone());
        }
        &self.value
    }
}

impl Judged<u32> {
    /// `value` against `limits`' range, the issue at `path`.
    pub fn of(path: &[&str], value: i64, limits: Limits) -> Ranged {
        let issue = limits
            .check_range(&path.join("."), value)
            .err()
            .map(|mut i| {
                i.path = path.iter().map(|p| serde_json::Value::from(*p)).collect();
                i
            });
        Judged {
            value: limits.clamp(value).clamp(0, i64::from(u32::MAX)) as u32,
            issue,
        }
    }
}

fn whole(n: &utoipa::Number) -> i64 {
    match n {
        utoipa::Number::Int(i) => *i as i64,
        utoipa::Number::UInt(u) => i64::try_from(*u).unwrap_or(i64::MAX),
        utoipa::Number::Float(f) => *f as i64,
    }
}

/// The [`Limits`] `$ty`'s schema states for `$property`, read once per call site.
#[macro_export]
macro_rules! limits {
    ($ty:ty, $property:literal) => {{
        static LIMITS: ::std::sync::OnceLock<$crate::schema::Limits> = ::std::sync::OnceLock::new();
        *LIMITS.get_or_init(|| $crate::schema::Limits::of::<$ty>($property))
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(dead_code)]
    #[derive(utoipa::ToSchema)]
    #[serde(rename_all = "camelCase")]
    struct Body {
        #[schema(minimum = 2, maximum = 9)]
        days: Option<i64>,
        #[schema(max_items = 3)]
        ids: Vec<String>,
        free: String,
    }

    #[test]
    fn limits_are_read_from_what_the_schema_states() {
        let days = limits!(Body, "days");
        assert_eq!((days.minimum, days.maximum), (2, 9));
        assert_eq!(days.clamp(40), 9);
        assert!(days.check_range("days", 1).is_err());
        assert_eq!(Limits::of::<Body>("ids").max_items, 3);
        let free = Limits::of::<Body>("free");
        assert_eq!((free.minimum, free.maximum), (i64::MIN, i64::MAX));
    }
}
