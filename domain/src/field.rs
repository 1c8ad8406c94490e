//! The rules of single fields, one type per rule: each has one parser (the
//! issue codes and messages a bad value gets) and one schema (its
//! `ToSchema`, a component the fields refer to), both built from the same
//! constants, so a limit, a pattern or a character rule is written once and
//! the description follows it.
//!
//! A body keeps its fields as strings (serde would stop at the first bad
//! one), states each field's rule with `#[schema(value_type = field::Name)]`
//! and calls the rule's parser in its validation, reporting every bad field
//! at once. The string rules are a few shapes with their longest length as
//! a parameter ([`Token`], [`Line`], [`Phrase`], [`Text`], [`Passage`],
//! [`Identifier`]); the aliases below name each rule the fields follow, so
//! each length is written once. E-mail addresses and affiliate codes are
//! types of their own modules (`crate::email`, `crate::affiliate_code`);
//! the currency is [`Currency`](crate::money::Currency).

use std::borrow::Cow;

use chrono::{Datelike, NaiveDate};
use rust_decimal::Decimal;
use serde_json::{json, Value};
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;

use crate::issue::Issue;
use crate::money::MAX_AMOUNT_DIGITS;

// The control-character rule: one function, and the patterns written from
// the same character classes.

/// The control characters (Unicode category Cc: U+0000-U+001F and
/// U+007F-U+009F), as a regular expression's character class holds them.
macro_rules! controls {
    () => {
        r"\u0000-\u001F\u007F-\u009F"
    };
}

/// The control characters free text may not hold: all but tab, line feed
/// and carriage return.
macro_rules! text_controls {
    () => {
        r"\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F"
    };
}

/// True when `c` may not be in a field: every control character (Unicode
/// category Cc, `char::is_control`); free text may hold tab, line feed and
/// carriage return. [`LINE_PATTERN`] and [`TEXT_PATTERN`] say the same.
pub fn is_refused_control(c: char, free_text: bool) -> bool {
    c.is_control() && !(free_text && matches!(c, '\t' | '\n' | '\r'))
}

/// One line: no control character.
pub const LINE_PATTERN: &str = concat!("^[^", controls!(), "]*$");
/// One line with a character that is not white space.
pub const PHRASE_PATTERN: &str = concat!(
    "^[^",
    controls!(),
    r"]*[^\s",
    controls!(),
    "][^",
    controls!(),
    "]*$"
);
/// Free text: no control character but tab, line feed and carriage return.
pub const TEXT_PATTERN: &str = concat!("^[^", text_controls!(), "]*$");
/// Free text with a character that is not white space.
pub const PASSAGE_PATTERN: &str = concat!(
    "^[^",
    text_controls!(),
    r"]*[^\s",
    controls!(),
    "][^",
    text_controls!(),
    "]*$"
);
/// An `http` or `https` URL (scheme in any letter case) with a host, no
/// white space and no control character.
pub const URL_PATTERN: &str = concat!(
    r"^[Hh][Tt][Tt][Pp][Ss]?://[^\s/",
    controls!(),
    r"][^\s",
    controls!(),
    "]*$"
);

/// The issue of a value holding a control character its field refuses.
fn check_controls(path: &str, v: &str, free_text: bool) -> Result<(), Issue> {
    if v.chars().any(|c| is_refused_control(c, free_text)) {
        return Err(Issue::new(
            &[path],
            "invalid_string",
            format!("{path} must not contain control characters"),
        ));
    }
    Ok(())
}

/// A schema written as JSON (see [`crate::json_schema::from_json`]).
fn schema_of(value: Value) -> RefOr<Schema> {
    crate::json_schema::from_json(value)
}

/// The keywords of `T`'s schema, to write inline in a schema built by hand.
pub fn keywords<T: utoipa::PartialSchema>() -> Value {
    serde_json::to_value(T::schema()).unwrap_or_default()
}

/// The shape of a string rule: its length in characters, whether it may be
/// blank (white space only) and whether it is free text.
struct Form {
    min: usize,
    max: usize,
    blank: bool,
    free_text: bool,
}

impl Form {
    /// The value against the rule: not blank (when it may not be), its
    /// length, its characters.
    fn check(&self, path: &str, v: &str) -> Result<(), Issue> {
        if !self.blank && !v.is_empty() && v.trim().is_empty() {
            return Err(Issue::new(
                &[path],
                "too_small",
                format!("{path} must not be blank (white space only)"),
            ));
        }
        check_len(path, v, self.min, self.max)?;
        check_controls(path, v, self.free_text)
    }

    /// The rule in JSON Schema terms.
    fn schema(&self, description: String) -> RefOr<Schema> {
        let pattern = match (self.free_text, self.blank) {
            (false, true) => LINE_PATTERN,
            (false, false) => PHRASE_PATTERN,
            (true, true) => TEXT_PATTERN,
            (true, false) => PASSAGE_PATTERN,
        };
        let mut schema = json!({"type": "string", "description": description});
        if self.min > 0 {
            schema["minLength"] = json!(self.min);
        }
        if self.max < usize::MAX {
            schema["maxLength"] = json!(self.max);
        }
        schema["pattern"] = json!(pattern);
        schema_of(schema)
    }
}

/// The words a rule's description gives its length: `at most 200` or
/// `1-200` characters (nothing when unbounded).
fn length(min: usize, max: usize) -> String {
    match (min, max) {
        (_, usize::MAX) => String::new(),
        (0, max) => format!(" of at most {max} characters"),
        (min, max) => format!(" of {min}-{max} characters"),
    }
}

/// Defines a string rule of one shape, its longest length a parameter: the
/// type, its parser and its schema (named after the shape and the length).
macro_rules! string_rule {
    (
        $(#[$doc:meta])*
        $name:ident,
        min: $min:expr, blank: $blank:expr, free_text: $free_text:expr,
        describe: $describe:expr $(,)?
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name<const MAX: usize>;

        impl<const MAX: usize> $name<MAX> {
            /// The most characters it takes.
            pub const MAX: usize = MAX;
            const FORM: Form = Form {
                min: $min,
                max: MAX,
                blank: $blank,
                free_text: $free_text,
            };

            /// The value against the rule; the issue names `path`.
            pub fn parse(path: &str, v: &str) -> Result<(), Issue> {
                Self::FORM.check(path, v)
            }
        }

        impl<const MAX: usize> utoipa::PartialSchema for $name<MAX> {
            fn schema() -> RefOr<Schema> {
                let describe: fn(String) -> String = $describe;
                Self::FORM.schema(describe(length($min, MAX)))
            }
        }

        impl<const MAX: usize> utoipa::ToSchema for $name<MAX> {
            fn name() -> Cow<'static, str> {
                match MAX {
                    usize::MAX => Cow::Borrowed(stringify!($name)),
                    max => Cow::Owned(format!(concat!(stringify!($name), "{}"), max)),
                }
            }
        }
    };
}

string_rule! {
    /// An id-like value: 1 to `MAX` characters on one line (white space
    /// allowed).
    Token,
    min: 1, blank: true, free_text: false,
    describe: |len| format!("An id-like value{len}, on one line (no control characters)."),
}

string_rule! {
    /// One line of at most `MAX` characters (`usize::MAX`: unbounded).
    Line,
    min: 0, blank: true, free_text: false,
    describe: |len| format!("One line{len} (no control characters)."),
}

string_rule! {
    /// One line of 1 to `MAX` characters, not blank.
    Phrase,
    min: 1, blank: false, free_text: false,
    describe: |len| format!("One line{len}, not blank (no control characters)."),
}

string_rule! {
    /// Free text of at most `MAX` characters: tab, line feed and carriage
    /// return allowed.
    Text,
    min: 0, blank: true, free_text: true,
    describe: |len| format!(
        "Free text{len}: no control characters other than tab, line feed and carriage return."
    ),
}

string_rule! {
    /// Free text of 1 to `MAX` characters, not blank.
    Passage,
    min: 1, blank: false, free_text: true,
    describe: |len| format!(
        "Free text{len}, not blank: no control characters other than tab, line feed and carriage return."
    ),
}

/// An id the merchant's own system gave (a customer id, an import row's
/// `externalId`): 1 to `MAX` characters, not blank, one line; one issue
/// says all of it.
#[derive(Debug, Clone, Copy)]
pub struct Identifier<const MAX: usize>;

impl<const MAX: usize> Identifier<MAX> {
    /// The most characters it takes.
    pub const MAX: usize = MAX;
    const FORM: Form = Form {
        min: 1,
        max: MAX,
        blank: false,
        free_text: false,
    };

    /// The value against the rule; the issue names `path`.
    pub fn parse(path: &str, v: &str) -> Result<(), Issue> {
        Self::FORM.check(path, v).map_err(|_| {
            Issue::new(
                &[path],
                "invalid_string",
                format!("{path} must be 1-{MAX} characters, not blank, without control characters"),
            )
        })
    }
}

impl<const MAX: usize> utoipa::PartialSchema for Identifier<MAX> {
    fn schema() -> RefOr<Schema> {
        Self::FORM.schema(format!(
            "An id the merchant's own system gave: 1-{MAX} characters, not blank, on one line (no control characters)."
        ))
    }
}

impl<const MAX: usize> utoipa::ToSchema for Identifier<MAX> {
    fn name() -> Cow<'static, str> {
        Cow::Owned(format!("Identifier{MAX}"))
    }
}

// The rules the fields follow, each length written once.

/// Longest customer id (characters).
pub const MAX_CUSTOMER_ID_CHARS: usize = 256;
/// Longest `externalId` of an import row (characters).
pub const MAX_EXTERNAL_ID_CHARS: usize = 255;

/// 64 lowercase hex characters.
pub fn is_email_hash(s: &str) -> bool {
    s.len() == EmailHash::LEN
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The postback's `externalId` and attribution signals, product and plan
/// ids, an adjustment's `externalId`.
pub type Key = Token<255>;
/// The `campaignId` and `ref` of a click.
pub type ClickKey = Token<64>;
/// The name of an affiliate, a campaign, an asset.
pub type Name = Phrase<200>;
/// The name of a commission rule or tier, a payout's payment method.
pub type Label = Phrase<100>;
/// Why a payout is rejected or cancelled, or a conversion reversed.
pub type Reason = Phrase<1000>;
/// Why an adjustment is booked, as the affiliate sees it.
pub type AdjustmentReason = Phrase<500>;
/// The id of a record named in a body (an unknown one is 404).
pub type IdRef = Line<{ usize::MAX }>;
/// A payout's payment reference.
pub type PaymentReference = Line<200>;
/// Why an application is rejected (a blank one counts as none).
pub type RejectReason = Line<1000>;
/// A page's URL or referrer as the browser reports it.
pub type PageUrl = Line<2048>;
/// A webhook endpoint's URL (which the SSRF guard checks further).
pub type WebhookUrl = Line<2000>;
/// A short description (an integration's, a webhook endpoint's).
pub type ShortText = Text<500>;
/// A note (a payout's settlement note).
pub type Note = Text<1000>;
/// A longer text (a campaign's description, a sign-up's message).
pub type LongText = Text<2000>;
/// The text of a swipe-copy asset.
pub type SwipeBody = Passage<20000>;
/// The merchant's customer id (`cid:<customerId>` keys its referrals).
pub type CustomerRef = Identifier<MAX_CUSTOMER_ID_CHARS>;
/// An import row's `externalId`.
pub type ImportId = Identifier<MAX_EXTERNAL_ID_CHARS>;

/// An `http` or `https` URL (scheme in any letter case) with a host, no
/// white space, at most [`Url::MAX`] characters: a website, a landing page.
#[derive(Debug, Clone, Copy)]
pub struct Url;

impl Url {
    /// The most characters it takes.
    pub const MAX: usize = 2000;

    /// The value against the rule; the issue names `path`.
    pub fn parse(path: &str, v: &str) -> Result<(), Issue> {
        check_http_url(path, v)?;
        check_len(path, v, 0, Self::MAX)?;
        check_controls(path, v, false)
    }
}

impl utoipa::PartialSchema for Url {
    fn schema() -> RefOr<Schema> {
        schema_of(json!({
            "type": "string",
            "description": format!("An `http` or `https` URL (scheme in any letter case) with a host, without white space; at most {} characters.", Url::MAX),
            "maxLength": Url::MAX,
            "pattern": URL_PATTERN,
            "example": "https://shop.example.com/pricing",
        }))
    }
}

impl utoipa::ToSchema for Url {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Url")
    }
}

/// Where a portal page's "Back" link leads: an [`Url`] in ASCII (anything
/// else percent-encoded), so its characters are the bytes it adds to the
/// portal token, which must fit a request header.
#[derive(Debug, Clone, Copy)]
pub struct ReturnUrl;

impl ReturnUrl {
    /// The pattern: `http` or `https`, then printable ASCII without spaces.
    const PATTERN: &'static str =
        r#"^[Hh][Tt][Tt][Pp][Ss]?://[\u0021-\u002E\u0030-\u007E][\u0021-\u007E]*$"#;

    /// The value against the rule; the issue names `path`.
    pub fn parse(path: &str, v: &str) -> Result<(), Issue> {
        Url::parse(path, v)?;
        match v.is_ascii() {
            true => Ok(()),
            false => Err(Issue::new(
                &[path],
                "invalid_string",
                format!("{path} must be ASCII (percent-encode anything else)"),
            )),
        }
    }
}

impl utoipa::PartialSchema for ReturnUrl {
    fn schema() -> RefOr<Schema> {
        schema_of(json!({
            "type": "string",
            "description": format!("An `http` or `https` URL in ASCII (percent-encode anything else); at most {} characters.", Url::MAX),
            "maxLength": Url::MAX,
            "pattern": ReturnUrl::PATTERN,
            "example": "https://shop.example.com/account",
        }))
    }
}

impl utoipa::ToSchema for ReturnUrl {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("ReturnUrl")
    }
}

/// The hex SHA-256 of a trimmed, lowercased e-mail address, in either
/// letter case (kept lowercase).
#[derive(Debug, Clone, Copy)]
pub struct EmailHash;

impl EmailHash {
    /// Hex digits of a SHA-256.
    pub const LEN: usize = 64;

    /// The hash in lowercase (surrounding spaces aside), or the issue at
    /// `customerEmailHash`.
    pub fn parse(v: &str) -> Result<String, Issue> {
        let hash = v.trim().to_ascii_lowercase();
        if !is_email_hash(&hash) {
            return Err(Issue::new(
                &["customerEmailHash"],
                "invalid_string",
                format!(
                    "customerEmailHash must be the hex SHA-256 of the trimmed, lowercased e-mail ({} characters)",
                    Self::LEN
                ),
            ));
        }
        Ok(hash)
    }
}

impl utoipa::PartialSchema for EmailHash {
    fn schema() -> RefOr<Schema> {
        schema_of(json!({
            "type": "string",
            "description": "Hex SHA-256 (either letter case; stored lowercase) of the trimmed, lowercased e-mail.",
            "pattern": format!("^[0-9a-fA-F]{{{}}}$", EmailHash::LEN),
        }))
    }
}

impl utoipa::ToSchema for EmailHash {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("EmailHash")
    }
}

/// A calendar date, exactly `YYYY-MM-DD`, not before 1970-01-01 (as every
/// other date of the API: a year 0000 is no date a client library reads
/// back).
#[derive(Debug, Clone, Copy)]
pub struct CalendarDate;

impl CalendarDate {
    /// The pattern: four digits of a year from 1970, two of a month, two of a day.
    const PATTERN: &'static str = r"^(19[7-9]\d|[2-9]\d{3})-\d{2}-\d{2}$";

    /// The date `v` names; the issue names `path`.
    pub fn parse(path: &str, v: &str) -> Result<NaiveDate, Issue> {
        let well_formed = v.len() == 10
            && v.char_indices().all(|(i, c)| match i {
                4 | 7 => c == '-',
                _ => c.is_ascii_digit(),
            });
        well_formed
            .then(|| NaiveDate::parse_from_str(v, "%Y-%m-%d").ok())
            .flatten()
            .filter(|d| d.year() >= 1970)
            .ok_or_else(|| {
                Issue::new(
                    &[path],
                    "invalid_date",
                    format!("{path} must be a date as YYYY-MM-DD, not before 1970-01-01"),
                )
            })
    }
}

impl utoipa::PartialSchema for CalendarDate {
    fn schema() -> RefOr<Schema> {
        schema_of(json!({
            "type": "string",
            "format": "date",
            "description": "A calendar date, exactly `YYYY-MM-DD`, not before 1970-01-01.",
            "pattern": CalendarDate::PATTERN,
            "example": "2026-11-20",
        }))
    }
}

impl utoipa::ToSchema for CalendarDate {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("CalendarDate")
    }
}

// Amounts: exact decimals in major units, below 10^MAX_AMOUNT_DIGITS.

/// The bound every amount stays below: 10^[`MAX_AMOUNT_DIGITS`] major units.
pub fn amount_limit() -> Decimal {
    Decimal::from(amount_bound())
}

/// [`amount_limit`] as the description writes it.
fn amount_bound() -> i64 {
    10_i64.pow(MAX_AMOUNT_DIGITS)
}

/// An issue at `path` saying the amount is at or beyond the bound.
fn too_big(path: &str, what: &str) -> Issue {
    Issue::new(
        &[path],
        "too_big",
        format!("{path} must be less than 10^{MAX_AMOUNT_DIGITS}{what}"),
    )
}

/// Defines an amount rule: the type and its schema (a number with the
/// given bounds, the upper one always [`amount_limit`]).
macro_rules! amount_rule {
    ($(#[$doc:meta])* $name:ident, $description:expr, {$($bound:tt)*}) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;

        impl utoipa::PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                schema_of(json!({
                    "type": "number",
                    "description": format!($description, digits = MAX_AMOUNT_DIGITS),
                    $($bound)*
                    "exclusiveMaximum": amount_bound(),
                }))
            }
        }

        impl utoipa::ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
        }
    };
}

amount_rule! {
    /// An amount above 0 and below 10^12 major units.
    Amount,
    "An amount in major units: above 0 and below 10^{digits}.",
    {"exclusiveMinimum": 0,}
}

amount_rule! {
    /// An amount of 0 or more, below 10^12 major units.
    AmountOrZero,
    "An amount in major units: 0 or more, below 10^{digits}.",
    {"minimum": 0,}
}

amount_rule! {
    /// An amount of either sign, below 10^12 major units in magnitude.
    SignedAmount,
    "An amount in major units, of either sign: below 10^{digits} in magnitude.",
    {"exclusiveMinimum": -amount_bound(),}
}

amount_rule! {
    /// A commission's value: a percentage (0-100) or a fixed amount (see
    /// [`Amount`]), below 10^12 either way; `Pay::check` decides by kind.
    CommissionValue,
    "A percentage (0-100, at most 4 decimals) or a fixed amount in major units (above 0): below 10^{digits} either way.",
    {}
}

impl Amount {
    /// The amount against the rule; the issue names `path`.
    pub fn parse(path: &str, v: Decimal) -> Result<(), Issue> {
        below_limit(path, v, v > Decimal::ZERO, "greater than 0")
    }
}

impl AmountOrZero {
    /// The amount against the rule; the issue names `path`.
    pub fn parse(path: &str, v: Decimal) -> Result<(), Issue> {
        below_limit(path, v, v >= Decimal::ZERO, ">= 0")
    }
}

/// An amount that passed its lower bound (`low`, which must be `floor`)
/// and is below the limit.
fn below_limit(path: &str, v: Decimal, low: bool, floor: &str) -> Result<(), Issue> {
    if !low {
        let message = format!("{path} must be {floor}");
        return Err(Issue::new(&[path], "too_small", message));
    }
    if v >= amount_limit() {
        return Err(too_big(path, ""));
    }
    Ok(())
}

impl SignedAmount {
    /// The amount against the rule (too big or too small by its sign); the
    /// issue names `path`.
    pub fn parse(path: &str, v: Decimal) -> Result<(), Issue> {
        if v.abs() < amount_limit() {
            return Ok(());
        }
        let mut issue = too_big(path, " in magnitude");
        if v.is_sign_negative() {
            issue.code = "too_small".into();
        }
        Err(issue)
    }
}

/// Checks a string's length in characters.
pub fn check_len(path: &str, value: &str, min: usize, max: usize) -> Result<(), Issue> {
    check_within(path, value.chars().count(), min, max, " characters")
}

/// Checks a whole number lies in `min..=max`.
pub fn check_range(path: &str, value: i64, min: i64, max: i64) -> Result<(), Issue> {
    check_within(path, value, min, max, "")
}

/// The issue of a value outside `min..=max`, naming the bound it passed
/// and `unit` after it.
fn check_within<T: PartialOrd + std::fmt::Display>(
    path: &str,
    value: T,
    min: T,
    max: T,
    unit: &str,
) -> Result<(), Issue> {
    let (code, side, bound) = if value < min {
        ("too_small", "least", min)
    } else if value > max {
        ("too_big", "most", max)
    } else {
        return Ok(());
    };
    Err(Issue::new(
        &[path],
        code,
        format!("{path} must be at {side} {bound}{unit}"),
    ))
}

/// An `http` or `https` URL (scheme in any letter case) with a host and
/// no white space (its length is the caller's limit to check).
pub fn check_http_url(path: &str, v: &str) -> Result<(), Issue> {
    let lower = v.to_ascii_lowercase();
    let has_host = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"))
        .is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'));
    if !has_host || v.chars().any(char::is_whitespace) {
        return Err(Issue::new(
            &[path],
            "invalid_string",
            format!("{path} must be an http(s) URL"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use utoipa::{PartialSchema, ToSchema};

    /// The characters a pattern's class names (`\uXXXX` and ranges of them).
    fn class(body: &str) -> Vec<std::ops::RangeInclusive<u32>> {
        let code = |s: &str| u32::from_str_radix(&s[2..6], 16).unwrap();
        let items: Vec<&str> = body.split("\\u").skip(1).collect();
        let mut ranges = Vec::new();
        let mut i = 0;
        while i < items.len() {
            let start = code(&format!("\\u{}", items[i]));
            if items[i].ends_with('-') {
                ranges.push(start..=code(&format!("\\u{}", items[i + 1])));
                i += 2;
            } else {
                ranges.push(start..=start);
                i += 1;
            }
        }
        ranges
    }

    #[test]
    fn the_patterns_refuse_what_the_function_refuses() {
        for (pattern, free_text) in [(LINE_PATTERN, false), (TEXT_PATTERN, true)] {
            let body = pattern.trim_start_matches("^[^").trim_end_matches("]*$");
            let refused = class(body);
            for n in 0..0x3000_u32 {
                let Some(c) = char::from_u32(n) else { continue };
                let in_class = refused.iter().any(|r| r.contains(&n));
                assert_eq!(
                    in_class,
                    is_refused_control(c, free_text),
                    "{c:?} {pattern}"
                );
            }
        }
        for pattern in [PHRASE_PATTERN, PASSAGE_PATTERN, URL_PATTERN] {
            assert!(pattern.contains(controls!()), "{pattern}");
        }
    }

    #[test]
    fn a_return_url_is_an_http_url_in_ascii() {
        let code = |v: &str| ReturnUrl::parse("returnUrl", v).err().map(|i| i.code);
        assert_eq!(code("https://shop.example.com/a?b=%C3%A9"), None);
        assert_eq!(code("HTTP://shop.example.com"), None);
        assert_eq!(
            code("https://shop.example.com/\u{e9}").as_deref(),
            Some("invalid_string")
        );
        assert!(code("ftp://shop.example.com").is_some());
        assert!(code("https://shop.example.com/\u{1}").is_some());
        let long = format!("https://x.io/{}", "a".repeat(Url::MAX));
        assert_eq!(code(&long).as_deref(), Some("too_big"));
    }

    #[test]
    fn control_characters_are_every_cc_and_free_text_keeps_line_breaks() {
        for c in [
            '\u{0}', '\u{1b}', '\u{1f}', '\u{7f}', '\u{80}', '\u{85}', '\u{9f}',
        ] {
            assert!(is_refused_control(c, false), "{c:?}");
            assert!(is_refused_control(c, true), "{c:?}");
        }
        for c in ['\t', '\n', '\r'] {
            assert!(is_refused_control(c, false), "{c:?}");
            assert!(!is_refused_control(c, true), "{c:?}");
        }
        for c in [' ', 'a', '\u{a0}', 'é', '\u{2028}', '\u{200b}'] {
            assert!(!is_refused_control(c, false), "{c:?}");
        }
    }

    #[test]
    fn string_rules_give_todays_issues() {
        let code = |r: Result<(), Issue>| r.err().map(|i| (i.code, i.message));
        assert_eq!(code(Key::parse("externalId", " ")), None);
        assert_eq!(
            code(Key::parse("externalId", "")),
            Some((
                "too_small".into(),
                "externalId must be at least 1 characters".into()
            ))
        );
        assert_eq!(
            code(Key::parse("externalId", "a\u{85}")),
            Some((
                "invalid_string".into(),
                "externalId must not contain control characters".into()
            ))
        );
        assert_eq!(
            code(Name::parse("name", " \t ")),
            Some((
                "too_small".into(),
                "name must not be blank (white space only)".into()
            ))
        );
        assert_eq!(
            code(Name::parse("name", &"a".repeat(201))),
            Some((
                "too_big".into(),
                "name must be at most 200 characters".into()
            ))
        );
        assert_eq!(code(Reason::parse("reason", "")).unwrap().0, "too_small");
        assert_eq!(code(Note::parse("note", "a\r\n\tb")), None);
        assert_eq!(
            code(Note::parse("note", "a\u{7}")).unwrap().0,
            "invalid_string"
        );
        assert_eq!(code(SwipeBody::parse("body", "\n")).unwrap().0, "too_small");
        assert_eq!(code(IdRef::parse("campaignId", &"a".repeat(5000))), None);
        assert_eq!(
            code(CustomerRef::parse("customerId", " ")),
            Some((
                "invalid_string".into(),
                "customerId must be 1-256 characters, not blank, without control characters".into()
            ))
        );
        assert!(Url::parse("website", "https://a.example").is_ok());
        assert_eq!(
            code(Url::parse("website", "ftp://a.example")).unwrap().1,
            "website must be an http(s) URL"
        );
        assert_eq!(
            EmailHash::parse(&format!(" {} ", "AB".repeat(32))).unwrap(),
            "ab".repeat(32)
        );
    }

    #[test]
    fn amount_rules_give_todays_issues() {
        let limit = amount_limit();
        assert_eq!(limit, Decimal::from(1_000_000_000_000_i64));
        let code = |r: Result<(), Issue>| r.err().map(|i| (i.code, i.message));
        assert_eq!(
            code(Amount::parse("amount", Decimal::ZERO)),
            Some(("too_small".into(), "amount must be greater than 0".into()))
        );
        assert_eq!(
            code(AmountOrZero::parse("minimumPayout", limit)),
            Some((
                "too_big".into(),
                "minimumPayout must be less than 10^12".into()
            ))
        );
        assert_eq!(
            code(AmountOrZero::parse("minimumPayout", Decimal::ZERO)),
            None
        );
        assert_eq!(
            code(SignedAmount::parse("amount", -limit)),
            Some((
                "too_small".into(),
                "amount must be less than 10^12 in magnitude".into()
            ))
        );
        assert_eq!(
            code(SignedAmount::parse("amount", limit - Decimal::ONE)),
            None
        );
    }

    #[test]
    fn schemas_state_the_parsers_limits() {
        let name = keywords::<Name>();
        assert_eq!(name["minLength"], 1);
        assert_eq!(name["maxLength"], 200);
        assert_eq!(name["pattern"], PHRASE_PATTERN);
        assert_eq!(Name::name(), "Phrase200");
        assert_eq!(IdRef::name(), "Line");
        assert!(keywords::<IdRef>().get("maxLength").is_none());
        assert_eq!(Key::name(), "Token255");
        assert_eq!(keywords::<SwipeBody>()["pattern"], PASSAGE_PATTERN);
        let amount = keywords::<SignedAmount>();
        assert_eq!(amount["exclusiveMaximum"], 1_000_000_000_000_i64);
        assert_eq!(amount["exclusiveMinimum"], -1_000_000_000_000_i64);
        assert!(serde_json::to_string(&Amount::schema())
            .unwrap()
            .contains("10^12"));
    }
}
