//! Money: exact decimals in major units, ISO 4217 currencies and their exponents.

use std::fmt;
use std::str::FromStr;

use rust_decimal::{Decimal, RoundingStrategy};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::issue::Issue;

/// Amounts (payments, FIXED commissions, minimum payouts) are below 10^12
/// major units.
pub const MAX_AMOUNT_DIGITS: u32 = 12;

/// An ISO 4217 currency code with a minor unit (USD, JPY, KWD, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Currency(iso_currency::Currency);

impl Currency {
    /// Parses a code in any letter case; metals and funds without a minor unit are refused.
    pub fn parse(path: &str, code: &str) -> Result<Self, Issue> {
        let upper = code.trim().to_ascii_uppercase();
        let bad = || {
            Issue::new(
                &[path],
                "invalid_string",
                format!("{path} must be a 3-letter ISO 4217 currency code"),
            )
        };
        if upper.len() != 3 {
            return Err(bad());
        }
        let c = iso_currency::Currency::from_code(&upper).ok_or_else(bad)?;
        if c.exponent().is_none() {
            return Err(bad());
        }
        Ok(Currency(c))
    }

    /// The three-letter code.
    pub fn code(&self) -> &'static str {
        self.0.code()
    }

    /// Digits after the decimal point in the minor unit (USD 2, JPY 0, KWD 3).
    pub fn exponent(&self) -> u32 {
        u32::from(self.0.exponent().unwrap_or(2))
    }

    /// Rounds half-even to the minor unit.
    pub fn round(&self, amount: Decimal) -> Decimal {
        let mut r =
            amount.round_dp_with_strategy(self.exponent(), RoundingStrategy::MidpointNearestEven);
        r.rescale(self.exponent());
        r
    }

    /// The amount in minor units (cents), rounded half-even; exact counters use it.
    pub fn to_minor(&self, amount: Decimal) -> i64 {
        let r = self.round(amount);
        (r * Decimal::from(10_i64.pow(self.exponent())))
            .trunc()
            .try_into()
            .unwrap_or(i64::MAX)
    }

    /// An amount given in minor units, in major units.
    pub fn from_minor(&self, minor: i64) -> Decimal {
        Decimal::new(minor, self.exponent())
    }

    /// True when `amount` has no more decimals than the minor unit allows.
    pub fn fits(&self, amount: Decimal) -> bool {
        amount.normalize().scale() <= self.exponent()
    }

    /// [`Currency::fits`] as a field's check: the issue names the rule.
    pub fn check_fits(&self, path: &str, amount: Decimal) -> Result<(), Issue> {
        if self.fits(amount) {
            return Ok(());
        }
        Err(Issue::new(
            &[path],
            "invalid_value",
            format!(
                "{} amounts have at most {} decimals",
                self.code(),
                self.exponent()
            ),
        ))
    }
}

impl Currency {
    /// Every currency with a minor unit, in code order.
    pub fn all() -> Vec<Currency> {
        use iso_currency::IntoEnumIterator;
        let mut all: Vec<Currency> = iso_currency::Currency::iter()
            .filter(|c| c.exponent().is_some())
            .map(Currency)
            .collect();
        all.sort_by_key(|c| c.code());
        all
    }
}

// `CurrencyCode` in the description: the codes `Currency::parse` accepts,
// and the exponents `fits` and `round` apply.
crate::described!(Currency, "CurrencyCode", {
    let all = Currency::all();
    let codes: Vec<&str> = all.iter().map(Currency::code).collect();
    let with = |e: u32| {
        let picked: Vec<&str> = all
            .iter()
            .filter(|c| c.exponent() == e)
            .map(Currency::code)
            .collect();
        format!("{e} for {}", picked.join(", "))
    };
    let description = format!(
            "An ISO 4217 currency code that has a minor unit (metals and funds without one are refused). Requests may write it in any letter case (and a body field may carry surrounding spaces); answers always use upper case. The exponent of the minor unit fixes how many decimals an amount may have: {}; {}; {}; 2 for every other code.",
            with(0),
            with(3),
            with(4)
        );
    serde_json::json!({
        "type": "string",
        "enum": codes,
        "description": description,
    })
});

impl Serialize for Currency {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

impl<'de> Deserialize<'de> for Currency {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Currency::parse("currency", &s).map_err(|i| serde::de::Error::custom(i.message))
    }
}

/// Most decimals a number may carry: what an exact decimal holds. A number
/// sent with more is refused as sent, never rounded first (1e-30 is not 0).
pub const MAX_DECIMALS: u32 = 28;

/// Why a JSON number is not an exact decimal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotDecimal {
    /// Not finite, or beyond a decimal's range.
    NotFinite,
    /// More than [`MAX_DECIMALS`] decimals as sent.
    TooManyDecimals,
    /// More significant digits than a decimal holds exactly.
    TooManyDigits,
}

impl fmt::Display for NotDecimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotDecimal::NotFinite => f.write_str("expected a finite number"),
            NotDecimal::TooManyDecimals => write!(f, "must have at most {MAX_DECIMALS} decimals"),
            NotDecimal::TooManyDigits => f.write_str("has more digits than can be kept exactly"),
        }
    }
}

/// Converts a JSON number's text to the exact decimal it writes (never
/// through a binary float): refused when it is no number, has more than
/// [`MAX_DECIMALS`] decimals (trailing zeros are none: `1.50`, `1.0e-28`),
/// or more digits than a decimal keeps.
pub fn decimal_from_json(text: &str) -> Result<Decimal, NotDecimal> {
    let (mantissa, exponent) = text.split_once(['e', 'E']).unwrap_or((text, "0"));
    let exponent: i64 = exponent.parse().map_err(|_| NotDecimal::NotFinite)?;
    let (negative, unsigned) = match mantissa.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, mantissa),
    };
    let (int, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let is_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !is_digits(int) || !is_digits(fraction) || unsigned.ends_with('.') {
        return Err(NotDecimal::NotFinite);
    }
    let mut digits = format!("{int}{fraction}")
        .trim_start_matches('0')
        .to_string();
    let mut scale = (fraction.len() as i64)
        .checked_sub(exponent)
        .ok_or(NotDecimal::NotFinite)?;
    while scale > 0 && digits.ends_with('0') {
        digits.pop();
        scale -= 1;
    }
    if digits.is_empty() {
        return Ok(Decimal::ZERO);
    }
    if scale > i64::from(MAX_DECIMALS) {
        return Err(NotDecimal::TooManyDecimals);
    }
    if scale < 0 {
        // Whole digits past a decimal's range are no finite decimal.
        if digits.len() as i64 - scale > 29 {
            return Err(NotDecimal::NotFinite);
        }
        digits.push_str(&"0".repeat(scale.unsigned_abs() as usize));
        scale = 0;
    }
    let n: i128 = digits.parse().map_err(|_| NotDecimal::TooManyDigits)?;
    let n = if negative { -n } else { n };
    Decimal::try_from_i128_with_scale(n, scale as u32).map_err(|_| match scale {
        0 => NotDecimal::NotFinite,
        _ => NotDecimal::TooManyDigits,
    })
}

/// Serde for decimals that travel as JSON numbers (never strings, never
/// binary floats: the number's text is read and written digit for digit).
pub mod json_number {
    use super::{
        decimal_from_json, Decimal, Deserialize, Deserializer, FromStr, Serialize, Serializer,
    };

    /// Writes the decimal as a JSON number with its exact digits.
    pub fn serialize<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
        number(d).serialize(s)
    }

    /// The JSON number of a decimal, trailing zeros dropped.
    pub fn number(d: &Decimal) -> serde_json::Number {
        serde_json::Number::from_str(&d.normalize().to_string())
            .unwrap_or_else(|_| serde_json::Number::from(0))
    }

    /// Reads a JSON number only, from its text.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
        let n = serde_json::Number::deserialize(d)?;
        decimal_from_json(&n.to_string()).map_err(serde::de::Error::custom)
    }
}

/// Serde for optional decimals that travel as JSON numbers.
pub mod json_number_opt {
    use super::{decimal_from_json, json_number, Decimal, Deserialize, Deserializer, Serializer};

    /// Writes the decimal as a JSON number, or null.
    pub fn serialize<S: Serializer>(d: &Option<Decimal>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => json_number::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    /// Reads a JSON number or null.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Decimal>, D::Error> {
        match Option::<serde_json::Number>::deserialize(d)? {
            None => Ok(None),
            Some(n) => decimal_from_json(&n.to_string())
                .map(Some)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// A JSON number as sent, read exactly: the decimal, or why it is none (for
/// fields whose rules report that themselves, such as a patch's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JsonDecimal(pub Result<Decimal, NotDecimal>);

impl<'de> Deserialize<'de> for JsonDecimal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = serde_json::Number::deserialize(d)?;
        Ok(JsonDecimal(decimal_from_json(&n.to_string())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    #[test]
    fn exponents_follow_iso_4217() {
        assert_eq!(Currency::parse("c", "usd").unwrap().exponent(), 2);
        assert_eq!(Currency::parse("c", "JPY").unwrap().exponent(), 0);
        assert_eq!(Currency::parse("c", "KWD").unwrap().exponent(), 3);
        assert!(Currency::parse("c", "XXX").is_err());
        assert!(Currency::parse("c", "ABC").is_err());
        assert!(Currency::parse("c", "US").is_err());
    }

    #[test]
    fn rounding_is_half_even_to_the_minor_unit() {
        let usd = Currency::parse("c", "USD").unwrap();
        assert_eq!(usd.round(dec("1.999")).to_string(), "2.00");
        assert_eq!(usd.round(dec("0.125")).to_string(), "0.12");
        assert_eq!(usd.round(dec("0.135")).to_string(), "0.14");
        let jpy = Currency::parse("c", "JPY").unwrap();
        assert_eq!(jpy.round(dec("150.5")).to_string(), "150");
        assert!(usd.fits(dec("19.99")));
        assert!(!usd.fits(dec("19.999")));
        assert!(jpy.fits(dec("1000.00")));
    }

    #[test]
    fn json_numbers_convert_exactly() {
        let exact = |t: &str| decimal_from_json(t).unwrap();
        assert_eq!(exact("19.99"), dec("19.99"));
        assert_eq!(exact("0.1"), dec("0.1"));
        assert_eq!(exact("1e-7"), dec("0.0000001"));
        assert_eq!(exact("1.50"), dec("1.5"));
        assert_eq!(exact("100e-2"), dec("1"));
        assert_eq!(exact("1e-28"), dec("0.0000000000000000000000000001"));
        assert_eq!(exact("1.5e-27"), dec("0.0000000000000000000000000015"));
        assert_eq!(exact("1.0000000000000000000000000000000"), dec("1"));
        assert_eq!(exact("1e20"), dec("100000000000000000000"));
        assert_eq!(exact("1.0e-28"), dec("0.0000000000000000000000000001"));
        assert_eq!(exact("-0"), Decimal::ZERO);
        assert_eq!(exact("-2.50"), dec("-2.5"));
        for bad in [
            "", "-", ".5", "1.", "1e", "NaN", "inf", "+5", "1..2", "0x10",
        ] {
            assert!(decimal_from_json(bad).is_err(), "{bad:?}");
        }
        // Digits a binary float would lose are kept.
        assert_eq!(exact("999999999999.9999"), dec("999999999999.9999"));
        assert_eq!(exact("10.0000000000000001"), dec("10.0000000000000001"));
        assert_eq!(decimal_from_json("1e-30"), Err(NotDecimal::TooManyDecimals));
        assert_eq!(
            decimal_from_json("1.5e-28"),
            Err(NotDecimal::TooManyDecimals)
        );
        assert_eq!(
            decimal_from_json("-1e-29"),
            Err(NotDecimal::TooManyDecimals)
        );
        assert_eq!(decimal_from_json("1e400"), Err(NotDecimal::NotFinite));
        assert_eq!(
            decimal_from_json("99999999999.999999999999999999"),
            Err(NotDecimal::TooManyDigits)
        );
    }

    #[test]
    fn json_numbers_are_written_with_their_exact_digits() {
        let text = |d: &str| serde_json::to_string(&json_number::number(&dec(d))).unwrap();
        assert_eq!(text("99999999999999.01"), "99999999999999.01");
        assert_eq!(text("3012345678908.7009"), "3012345678908.7009");
        assert_eq!(text("10.00"), "10");
        assert_eq!(text("0.0000001"), "0.0000001");
    }
}
