//! The schemas of query values as `http::query::Query` reads them, for a
//! statement's parameters (`("from" = inline(Option<DateOrTime>), Query,
//! ...)`): text without control characters (refused in any value), a date or
//! a date-time, an exact non-negative amount, and the summary's period.

use rust_decimal::Decimal;
use serde_json::json;
use utoipa::openapi::schema::{AnyOfBuilder, KnownFormat, RefBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

use super::components::of_type;
use crate::domain::summary::Period;
use ::domain::field::LINE_PATTERN;

/// A query value's schema, stated by code (always inline).
macro_rules! value_schemas {
    ($($(#[$doc:meta])* $name:ident => $schema:expr;)+) => {$(
        $(#[$doc])*
        pub struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                $schema
            }
        }

        impl ToSchema for $name {}
    )+};
}

fn format(known: KnownFormat) -> Option<SchemaFormat> {
    Some(SchemaFormat::KnownFormat(known))
}

value_schemas! {
    /// Text: any characters but control ones.
    Line => of_type(Type::String).pattern(Some(LINE_PATTERN)).into();
    /// An e-mail address.
    EmailLine => of_type(Type::String).format(format(KnownFormat::Email)).pattern(Some(LINE_PATTERN)).into();
    /// An ISO-8601 date (`2026-01-31`) or date-time (`Query::bound`).
    DateOrTime => AnyOfBuilder::new()
        .item(of_type(Type::String).format(format(KnownFormat::Date)))
        .item(of_type(Type::String).format(format(KnownFormat::DateTime)))
        .into();
    /// An amount filter: a number >= 0 that is an exact decimal, up to
    /// `Decimal::MAX` (`Query::amount`), unlike a body's `field::Amount`.
    FilterAmount => of_type(Type::Number)
        .format(format(KnownFormat::Double))
        .minimum(Some(0))
        .maximum(Some(largest_amount()))
        .into();
    /// The summary's period, `30d` when left out.
    PeriodParam => RefOr::Ref(
        RefBuilder::new()
            .ref_location_from_schema_name(Period::name())
            .default(Some(json!(Period::Days30.as_str())))
            .build(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::query::Query;

    /// The described maximum is accepted as the description writes it and as
    /// a client renders it with an exponent; the next `f64` up is refused.
    #[test]
    fn the_largest_amount_described_is_one_the_api_accepts() {
        let max = largest_amount();
        let above = f64::from_bits(max.to_bits() + 1);
        let accepted = |text: String| {
            let pairs = vec![("max_amount".to_string(), text)];
            let mut q = Query::new(&pairs);
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
