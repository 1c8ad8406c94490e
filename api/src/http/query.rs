//! Query-string parameters: typed getters, list paging, unknown names refused.
//!
//! A route accepts exactly the names its reader asks for: each name is
//! written once, in the getter that reads it.

use std::collections::HashSet;

use axum::extract::FromRequestParts;
use chrono::NaiveDate;
use http::request::Parts;
use rust_decimal::Decimal;

use crate::domain::summary;
use crate::store::page::{PageRequest, DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET};
use ::domain::enums::WireEnum;
use ::domain::error::Error;
use ::domain::timestamp::{self, Bound};
use ::domain::validation::{self, Issue, Issues};

/// A route's query read as `T`: unknown names are refused and every issue
/// is reported at once (`VALIDATION_FAILED`).
#[derive(Debug)]
pub struct Params<T>(pub T);

/// A value read from a query string; the names it asks `q` for are the ones
/// the route accepts.
pub trait FromQuery: Sized {
    /// Reads the value; problems are recorded on `q`.
    fn read(q: &mut Query<'_>) -> Self;
}

impl<T: FromQuery, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = crate::http::reply::Failure;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let pairs: Vec<(String, String)> = parts
            .uri
            .query()
            .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default();
        let mut q = Query::new(&pairs);
        let value = T::read(&mut q);
        q.finish()?;
        Ok(Params(value))
    }
}

/// A query string with `name` set to `value` (its other parameters kept
/// in order): the next answer's link.
pub fn with_param(query: Option<&str>, name: &str, value: &str) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (k, v) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        if k != name {
            out.append_pair(&k, &v);
        }
    }
    out.append_pair(name, value);
    out.finish()
}

impl FromQuery for PageRequest {
    fn read(q: &mut Query<'_>) -> Self {
        q.page()
    }
}

/// A list's query: its page and its filters.
#[derive(Debug)]
pub struct Listing<F> {
    pub page: PageRequest,
    pub filter: F,
}

/// A list's filters read as `http::filters` says.
impl<F: FromQuery> FromQuery for Listing<F> {
    fn read(q: &mut Query<'_>) -> Self {
        let page = q.page();
        Listing {
            page,
            filter: F::read(q),
        }
    }
}

/// The query of one request, with the names its reader asked for.
#[derive(Debug)]
pub struct Query<'a> {
    pairs: &'a [(String, String)],
    /// The names asked for (the route's own literals: nothing is copied).
    asked: Vec<&'static str>,
    issues: Issues,
}

impl<'a> Query<'a> {
    /// Checks every value for control characters and every name for repeats.
    pub fn new(pairs: &'a [(String, String)]) -> Self {
        let mut issues = Issues::new();
        for (k, v) in pairs {
            let path = [serde_json::Value::String(k.clone())];
            issues.check(validation::check_control(&path, v, false).map_or(Ok(()), Err));
        }
        let mut seen = HashSet::new();
        for (k, _) in pairs {
            if !seen.insert(k) {
                issues.add(
                    &[k],
                    "invalid_value",
                    format!("{k} is given more than once"),
                );
            }
        }
        Query {
            pairs,
            asked: Vec::new(),
            issues,
        }
    }

    /// Accepts a parameter that the route reads elsewhere.
    pub fn accept(&mut self, name: &'static str) {
        if !self.asked.contains(&name) {
            self.asked.push(name);
        }
    }

    /// A parameter's raw value.
    pub fn str(&mut self, name: &'static str) -> Option<&'a str> {
        self.accept(name);
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A parameter that must be one of `values` (matched in any letter case),
    /// returned in the case `values` uses.
    pub fn one_of(&mut self, name: &'static str, values: &[&'static str]) -> Option<&'static str> {
        let raw = self.str(name)?;
        let found = values.iter().find(|v| v.eq_ignore_ascii_case(raw)).copied();
        if found.is_none() {
            self.issues.add(
                &[name],
                "invalid_enum_value",
                format!("{name} must be one of {}", values.join(", ")),
            );
        }
        found
    }

    /// A parameter naming a variant of `E` (in any letter case), as
    /// [`Query::one_of`] judges it.
    pub fn variant<E: WireEnum>(&mut self, name: &'static str) -> Option<E> {
        self.one_of(name, E::names()).and_then(E::from_wire)
    }

    /// A non-negative decimal parameter.
    pub fn amount(&mut self, name: &'static str) -> Option<Decimal> {
        let raw = self.str(name)?;
        match decimal_of_number(raw) {
            Some(d) if d >= Decimal::ZERO => Some(d),
            _ => {
                self.issues.add(
                    &[name],
                    "invalid_number",
                    format!("{name} must be a number >= 0 with at most 28 decimals"),
                );
                None
            }
        }
    }

    /// An ISO-8601 date or date-time bound.
    pub fn bound(&mut self, name: &'static str) -> Option<Bound> {
        let raw = self.str(name)?;
        let b = Bound::parse(raw);
        if b.is_none() {
            self.issues.add(
                &[name],
                "invalid_date",
                format!("{name} must be an ISO-8601 date (2026-01-31) or date-time"),
            );
        }
        b
    }

    /// `from` and `to`, with `from` not after `to`.
    pub fn range(&mut self) -> (Option<Bound>, Option<Bound>) {
        let from = self.bound("from");
        let to = self.bound("to");
        if let (Some(f), Some(t)) = (from, to) {
            if f.start() > t.end() {
                self.issues
                    .add(&["from"], "invalid_range", "from must not be after to");
            }
        }
        (from, to)
    }

    /// `from` and `to` as a window of whole UTC days (`to` defaults to
    /// today), at most `summary::MAX_SERIES_DAYS`; `None` without `from`.
    pub fn days(&mut self) -> Option<(NaiveDate, NaiveDate)> {
        let (from, to) = self.range();
        let Some(from) = from else {
            if to.is_some() {
                self.issues
                    .add(&["to"], "invalid_combination", "to needs from");
            }
            return None;
        };
        let first = from.start().date_naive();
        let last = to.map_or_else(|| timestamp::now().date_naive(), |t| t.end().date_naive());
        if summary::days_spanned(first, last) > summary::MAX_SERIES_DAYS {
            self.issues.add(
                &["to"],
                "too_big",
                format!(
                    "from and to may span at most {} days",
                    summary::MAX_SERIES_DAYS
                ),
            );
        }
        if first > last && to.is_none() {
            self.issues
                .add(&["from"], "invalid_range", "from must not be after today");
        }
        (first <= last).then_some((first, last))
    }

    /// `limit`, `offset` and `cursor` as the list rules say.
    pub fn page(&mut self) -> PageRequest {
        let mut page = PageRequest::default();
        if let Some(raw) = self.str("limit") {
            match parse_count(raw) {
                Some(n) if n >= 1 => page.limit = n.min(MAX_LIMIT as u64) as usize,
                _ => self
                    .issues
                    .add(&["limit"], "too_small", "limit must be an integer >= 1"),
            }
        } else {
            page.limit = DEFAULT_LIMIT;
        }
        if let Some(raw) = self.str("offset") {
            match parse_count(raw) {
                Some(n) if n <= MAX_OFFSET as u64 => page.offset = n as usize,
                Some(_) => self.issues.add(
                    &["offset"],
                    "too_big",
                    format!(
                        "offset must be at most {MAX_OFFSET}; page deeper with cursor (meta.nextCursor)"
                    ),
                ),
                None => self.issues.add(
                    &["offset"],
                    "invalid_number",
                    "offset must be an integer >= 0",
                ),
            }
        }
        if let Some(c) = self.str("cursor") {
            if self.str("offset").is_some() {
                self.issues.add(
                    &["cursor"],
                    "invalid_combination",
                    "give either cursor or offset, not both",
                );
            }
            page.cursor = Some(c.to_string());
        }
        page
    }

    /// Records a custom issue.
    pub fn issue(&mut self, issue: Issue) {
        self.issues.check::<()>(Err(issue));
    }

    /// `Ok` when every parameter was asked for and valid; a name nobody
    /// asked for is reported first.
    pub fn finish(self) -> Result<(), Error> {
        let mut all = Issues::new();
        for (k, _) in self.pairs {
            if !self.asked.contains(&k.as_str()) {
                all.add(
                    &[k],
                    "unrecognized_keys",
                    format!("unknown query parameter {k}"),
                );
            }
        }
        all.append(self.issues);
        all.finish()
    }
}

/// A number as sent, read digit for digit (`money::decimal_from_json`, a
/// leading `+` allowed); a positive one below a decimal's least step
/// (10^-28) is 0; `None` for anything else that is no exact decimal.
fn decimal_of_number(raw: &str) -> Option<Decimal> {
    use ::domain::money::{decimal_from_json, NotDecimal};
    let raw = raw.strip_prefix('+').unwrap_or(raw);
    match decimal_from_json(raw) {
        Ok(d) => Some(d),
        Err(NotDecimal::TooManyDecimals)
            if raw.parse::<f64>().is_ok_and(|v| v > 0.0 && v < 1e-28) =>
        {
            Some(Decimal::ZERO)
        }
        Err(_) => None,
    }
}

/// A non-negative integer in plain decimal digits; values past `u64` saturate,
/// so "too big" stays distinguishable from "not a number".
fn parse_count(raw: &str) -> Option<u64> {
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(raw.parse::<u64>().unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn limits_clamp_and_reject() {
        let p = pairs(&[("limit", "500")]);
        let mut q = Query::new(&p);
        assert_eq!(q.page().limit, 100);
        assert!(q.finish().is_ok());
        for bad in ["0", "-1", "abc", "1.5"] {
            let p = pairs(&[("limit", bad)]);
            let mut q = Query::new(&p);
            q.page();
            assert!(q.finish().is_err(), "limit={bad} must fail");
        }
        let p = pairs(&[("cursor", "x"), ("offset", "1")]);
        let mut q = Query::new(&p);
        q.page();
        assert!(q.finish().is_err());
        let p = pairs(&[("limit", "99999999999999999999999")]);
        let mut q = Query::new(&p);
        assert_eq!(q.page().limit, 100);
        assert!(q.finish().is_ok());
        let p = pairs(&[("status", "pending\u{0}")]);
        let mut q = Query::new(&p);
        q.str("status");
        assert!(q.finish().is_err());
        let p = pairs(&[("min_amount", "5e-324"), ("max_amount", "1.5e10")]);
        let mut q = Query::new(&p);
        assert_eq!(q.amount("min_amount"), Some(Decimal::ZERO));
        assert_eq!(
            q.amount("max_amount"),
            Some(Decimal::from(15_000_000_000_i64))
        );
        assert!(q.finish().is_ok());
        // Read digit for digit, exponent form too.
        let p = pairs(&[("max_amount", "9999999999999999e-4")]);
        let mut q = Query::new(&p);
        assert_eq!(
            q.amount("max_amount"),
            Some("999999999999.9999".parse().unwrap())
        );
        for bad in [
            "1e300",
            "-1",
            "NaN",
            "inf",
            "-5e-324",
            "9.99999999999999999999999999999",
        ] {
            let p = pairs(&[("min_amount", bad)]);
            let mut q = Query::new(&p);
            q.amount("min_amount");
            assert!(q.finish().is_err(), "min_amount={bad} must fail");
        }
    }

    /// The names a reader asks for are the ones accepted; any other is
    /// reported, before the issues of the values read.
    #[test]
    fn a_name_nobody_asks_for_is_refused_first() {
        let p = pairs(&[("limit", "0"), ("nope", "1"), ("status", "x")]);
        let mut q = Query::new(&p);
        q.page();
        q.accept("status");
        let Err(Error::Validation(issues)) = q.finish() else {
            panic!("an unknown name and a bad limit must fail");
        };
        let found: Vec<(String, &str)> = issues
            .iter()
            .map(|i| (i.path[0].to_string(), i.code.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("\"nope\"".to_string(), "unrecognized_keys"),
                ("\"limit\"".to_string(), "too_small")
            ]
        );
    }

    #[test]
    fn offsets_are_capped_at_ten_thousand() {
        let offset = |raw: &str| {
            let p = pairs(&[("offset", raw)]);
            let mut q = Query::new(&p);
            let page = q.page();
            q.finish().map(|_| page.offset)
        };
        assert_eq!(offset("0").ok(), Some(0));
        assert_eq!(offset("10000").ok(), Some(10_000));
        for bad in [
            "10001",
            "2147483627",
            "2147483648",
            "18446744073709551615",
            "99999999999999999999999",
        ] {
            match offset(bad) {
                Err(Error::Validation(issues)) => {
                    assert_eq!(issues[0].code, "too_big", "{bad}");
                    assert!(issues[0].message.contains("cursor"), "{bad}");
                }
                other => panic!("offset={bad} gave {other:?}"),
            }
        }
        for bad in ["-1", "1.5", "+3", "", " 1", "abc"] {
            assert!(offset(bad).is_err(), "offset={bad} must fail");
        }
    }
}
