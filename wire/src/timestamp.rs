//! A time as every view answers it.

use chrono::{DateTime, Utc};
use serde::{Serialize, Serializer};

/// The example every time of the description shows.
pub const EXAMPLE: &str = "2026-11-22T10:00:00.000Z";

/// A time in a view: ISO-8601 UTC with milliseconds and `Z` (the one format
/// of [`domain::timestamp::format`]), described once as a component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timestamp(pub DateTime<Utc>);

impl From<DateTime<Utc>> for Timestamp {
    fn from(t: DateTime<Utc>) -> Self {
        Timestamp(t)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&domain::timestamp::format(&self.0))
    }
}

domain::described!(
    Timestamp,
    "Timestamp",
    serde_json::json!({
        "type": "string",
        "format": "date-time",
        "description": "ISO-8601 UTC with milliseconds and `Z`.",
        "example": EXAMPLE,
    }),
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_is_written_with_milliseconds_and_z() {
        let at = |s: &str| Timestamp(DateTime::parse_from_rfc3339(s).unwrap().to_utc());
        let cases = [
            (
                "2026-11-18T07:46:40.123456+02:00",
                "2026-11-18T05:46:40.123Z",
            ),
            ("2026-11-18T07:46:40Z", "2026-11-18T07:46:40.000Z"),
        ];
        for (given, written) in cases {
            assert_eq!(serde_json::to_value(at(given)).unwrap(), written);
        }
        let none: Option<Timestamp> = None;
        assert_eq!(serde_json::to_value(none).unwrap(), serde_json::Value::Null);
    }
}
