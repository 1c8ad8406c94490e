//! An exact decimal as every view answers it.

use rust_decimal::Decimal;
use serde::{Serialize, Serializer};

/// An amount or a rate in a view: a JSON number with its exact
/// digits, trailing zeros dropped (as [`domain::money::json_number`] writes
/// it), described once as a component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Number(pub Decimal);

impl From<Decimal> for Number {
    fn from(d: Decimal) -> Self {
        Number(d)
    }
}

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        domain::money::json_number::serialize(&self.0, s)
    }
}

domain::described!(
    Number,
    "Number",
    serde_json::json!({
        "type": "number",
        "description": "An exact decimal, written with its digits (trailing zeros dropped).",
    }),
);

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    #[test]
    fn a_decimal_is_written_with_its_digits() {
        let cases = [
            ("12.50", "12.5"),
            ("0.10", "0.1"),
            ("1000", "1000"),
            ("-3.25", "-3.25"),
        ];
        for (given, written) in cases {
            let n = Number(Decimal::from_str(given).unwrap());
            assert_eq!(serde_json::to_string(&n).unwrap(), written);
        }
    }
}
