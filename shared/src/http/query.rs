//! Query-string parameters: typed getters, list paging, unknown names refused.

use rust_decimal::Decimal;

use crate::error::Error;
use crate::store::page::{PageRequest, DEFAULT_LIMIT, MAX_LIMIT};
use crate::timestamp::Bound;
use crate::validation::{Issue, Issues};

/// The query of one request, with the names a route accepts.
#[derive(Debug)]
pub struct Query<'a> {
    pairs: &'a [(String, String)],
    issues: Issues,
}

impl<'a> Query<'a> {
    /// Checks that every parameter is one the route knows.
    pub fn new(pairs: &'a [(String, String)], allowed: &[&str]) -> Self {
        let mut issues = Issues::new();
        for (k, _) in pairs {
            if !allowed.contains(&k.as_str()) {
                issues.add(
                    &[k],
                    "unrecognized_keys",
                    format!("unknown query parameter {k}"),
                );
            }
        }
        let mut seen = std::collections::HashSet::new();
        for (k, _) in pairs {
            if !seen.insert(k) {
                issues.add(
                    &[k],
                    "invalid_value",
                    format!("{k} is given more than once"),
                );
            }
        }
        Query { pairs, issues }
    }

    /// A parameter's raw value.
    pub fn str(&self, name: &str) -> Option<&'a str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A parameter that must be one of `values` (matched in any letter case),
    /// returned in the case `values` uses.
    pub fn one_of(&mut self, name: &str, values: &[&'static str]) -> Option<&'static str> {
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

    /// A non-negative decimal parameter.
    pub fn amount(&mut self, name: &str) -> Option<Decimal> {
        let raw = self.str(name)?;
        match raw.parse::<Decimal>() {
            Ok(d) if d >= Decimal::ZERO => Some(d),
            _ => {
                self.issues.add(
                    &[name],
                    "invalid_number",
                    format!("{name} must be a number >= 0"),
                );
                None
            }
        }
    }

    /// An ISO-8601 date or date-time bound.
    pub fn bound(&mut self, name: &str) -> Option<Bound> {
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

    /// `limit`, `offset` and `cursor` as the list rules say.
    pub fn page(&mut self) -> PageRequest {
        let mut page = PageRequest::default();
        if let Some(raw) = self.str("limit") {
            match raw.parse::<i64>() {
                Ok(n) if n >= 1 => page.limit = (n as usize).min(MAX_LIMIT),
                _ => self
                    .issues
                    .add(&["limit"], "too_small", "limit must be an integer >= 1"),
            }
        } else {
            page.limit = DEFAULT_LIMIT;
        }
        if let Some(raw) = self.str("offset") {
            match raw.parse::<usize>() {
                Ok(n) => page.offset = n,
                _ => self.issues.add(
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

    /// `Ok` when every parameter was valid.
    pub fn finish(self) -> Result<(), Error> {
        self.issues.finish()
    }
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
        let mut q = Query::new(&p, &["limit"]);
        assert_eq!(q.page().limit, 100);
        assert!(q.finish().is_ok());
        for bad in ["0", "-1", "abc", "1.5"] {
            let p = pairs(&[("limit", bad)]);
            let mut q = Query::new(&p, &["limit"]);
            q.page();
            assert!(q.finish().is_err(), "limit={bad} must fail");
        }
        let p = pairs(&[("cursor", "x"), ("offset", "1")]);
        let mut q = Query::new(&p, &["cursor", "offset"]);
        q.page();
        assert!(q.finish().is_err());
        let p = pairs(&[("nope", "1")]);
        assert!(Query::new(&p, &["limit"]).finish().is_err());
    }
}
