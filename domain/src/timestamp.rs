//! Timestamps: ISO-8601 UTC with milliseconds and `Z`, everywhere.

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serializer};

/// Current time.
pub fn now() -> DateTime<Utc> {
    Utc::now()
}

/// Formats a time the one way the API and the store write it.
pub fn format(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parses an ISO-8601 date-time with an offset.
pub fn parse_datetime(s: &str) -> Option<DateTime<Utc>> {
    // A leap second (`:60`) would be answered as a time most clients
    // cannot read; it is refused like any other bad time.
    rfc3339(s).filter(|t| !is_leap_second(t))
}

/// Any RFC 3339 time, in UTC (a leap second included).
fn rfc3339(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn is_leap_second(t: &DateTime<Utc>) -> bool {
    use chrono::Timelike;
    t.nanosecond() >= 1_000_000_000
}

/// Reads a stored time: as [`parse_datetime`], but a leap second written
/// before those were refused reads as the last millisecond of its minute,
/// so a record that holds one still reads (and is answered as a time every
/// client can parse).
pub fn read_stored(s: &str) -> Option<DateTime<Utc>> {
    use chrono::Timelike;
    let t = rfc3339(s)?;
    match is_leap_second(&t) {
        true => t.with_nanosecond(999_000_000),
        false => Some(t),
    }
}

/// A bound given as a date (`2026-01-31`, the whole UTC day) or a date-time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Date(NaiveDate),
    DateTime(DateTime<Utc>),
}

impl Bound {
    /// Parses either form.
    pub fn parse(s: &str) -> Option<Bound> {
        if let Some(t) = parse_datetime(s) {
            return Some(Bound::DateTime(t));
        }
        NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .ok()
            .map(Bound::Date)
    }

    /// The first instant the bound admits, when used as a lower bound.
    pub fn start(self) -> DateTime<Utc> {
        match self {
            Bound::Date(d) => d.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc(),
            Bound::DateTime(t) => t,
        }
    }

    /// The last instant the bound admits, when used as an upper bound (a date covers its whole day).
    pub fn end(self) -> DateTime<Utc> {
        match self {
            Bound::Date(d) => d
                .and_hms_milli_opt(23, 59, 59, 999)
                .expect("end of day exists")
                .and_utc(),
            Bound::DateTime(t) => t,
        }
    }
}

/// Serde helpers for `DateTime<Utc>` in the API's one format.
pub mod serde_ts {
    use super::{format, read_stored, DateTime, Deserialize, Deserializer, Serializer, Utc};

    /// Writes the API format.
    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(t))
    }

    /// Reads any RFC 3339 time (see [`read_stored`]).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let s = String::deserialize(d)?;
        read_stored(&s).ok_or_else(|| serde::de::Error::custom("expected an ISO-8601 date-time"))
    }
}

/// Serde helpers for `Option<DateTime<Utc>>` in the API's one format.
pub mod serde_ts_opt {
    use super::{format, read_stored, DateTime, Deserialize, Deserializer, Serializer, Utc};

    /// Writes the API format or null.
    pub fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&format(t)),
            None => s.serialize_none(),
        }
    }

    /// Reads any RFC 3339 time or null (see [`read_stored`]).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        let s = Option::<String>::deserialize(d)?;
        match s {
            None => Ok(None),
            Some(s) => read_stored(&s)
                .map(Some)
                .ok_or_else(|| serde::de::Error::custom("expected an ISO-8601 date-time")),
        }
    }
}

/// The example every time of the description shows.
pub const EXAMPLE: &str = "2026-11-22T10:00:00.000Z";

/// A time as the API answers it: [`format`]ted, described once as the
/// `Timestamp` component (views hold it; a record's own time names it as its
/// schema's `value_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timestamp(pub DateTime<Utc>);

impl From<DateTime<Utc>> for Timestamp {
    fn from(t: DateTime<Utc>) -> Self {
        Timestamp(t)
    }
}

impl serde::Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(&self.0))
    }
}

crate::described!(
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
    fn formats_with_millis_and_z() {
        let t = parse_datetime("2026-01-02T03:04:05.6+00:00").unwrap();
        assert_eq!(format(&t), "2026-01-02T03:04:05.600Z");
    }

    #[test]
    fn date_bounds_cover_the_whole_day() {
        let b = Bound::parse("2026-01-31").unwrap();
        assert_eq!(format(&b.start()), "2026-01-31T00:00:00.000Z");
        assert_eq!(format(&b.end()), "2026-01-31T23:59:59.999Z");
        assert!(Bound::parse("31/01/2026").is_none());
    }

    #[test]
    fn a_leap_second_is_no_time() {
        // Stored before it was refused, it still reads.
        let stored = read_stored("2026-11-20T10:00:60.000Z").unwrap();
        assert_eq!(format(&stored), "2026-11-20T10:00:59.999Z");
        #[derive(serde::Deserialize)]
        struct At {
            #[serde(with = "serde_ts")]
            at: DateTime<Utc>,
        }
        let at: At = serde_json::from_str(r#"{"at": "2026-11-20T10:00:60.000Z"}"#).unwrap();
        assert_eq!(at.at, stored);
        assert!(parse_datetime("2026-11-20T10:00:60Z").is_none());
        assert!(parse_datetime("2026-11-20T10:00:60.500Z").is_none());
        assert!(Bound::parse("2026-11-20T10:00:60Z").is_none());
        assert!(parse_datetime("2026-11-20T10:00:59.999Z").is_some());
    }

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
