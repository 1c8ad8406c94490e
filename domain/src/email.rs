//! E-mail addresses: checked once, kept as given, compared in lowercase.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::issue::Issue;

/// Longest address (RFC 5321 path limit).
pub const MAX_LEN: usize = 254;

/// A syntactically valid e-mail address, trimmed, in the caller's letter case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email(String);

impl Email {
    /// Checks the shape `local@domain.tld`; `path` names the field in the issue.
    pub fn parse(path: &str, raw: &str) -> Result<Email, Issue> {
        let v = raw.trim();
        let bad = || {
            Issue::new(
                &[path],
                "invalid_string",
                format!("{path} must be a valid e-mail address"),
            )
        };
        let refused = |c: char| c.is_whitespace() || crate::field::is_refused_control(c, false);
        if v.chars().count() > MAX_LEN || v.chars().any(refused) {
            return Err(bad());
        }
        let (local, domain) = v.rsplit_once('@').ok_or_else(bad)?;
        if local.is_empty() || local.len() > 64 || local.contains('@') {
            return Err(bad());
        }
        let labels: Vec<&str> = domain.split('.').collect();
        let label_ok = |l: &&str| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_alphanumeric() || c == '-')
        };
        if labels.len() < 2 || !labels.iter().all(label_ok) {
            return Err(bad());
        }
        Ok(Email(v.to_string()))
    }

    /// The address as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The form used for uniqueness and look-ups: addresses differing only in
    /// letter case reach the same mailbox in practice.
    pub fn lower(&self) -> String {
        self.0.to_lowercase()
    }
}

// `Email` in the description: the rule `Email::parse` checks.
crate::described!(
    Email,
    "Email",
    serde_json::json!({
        "type": "string",
        "format": "email",
        "description": format!("An e-mail address, `local@domain.tld`, at most {MAX_LEN} characters (surrounding spaces trimmed); compared in lowercase."),
        "maxLength": MAX_LEN,
    })
);

impl Serialize for Email {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Email {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Email::parse("email", &s).map_err(|i| serde::de::Error::custom(i.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_addresses_and_compares_in_lowercase() {
        let e = Email::parse("email", "  Ann.Lee+x@Example.COM ").unwrap();
        assert_eq!(e.as_str(), "Ann.Lee+x@Example.COM");
        assert_eq!(e.lower(), "ann.lee+x@example.com");
        for bad in [
            "",
            "ann",
            "@example.com",
            "ann@",
            "ann@example",
            "ann@@example.com",
            "an n@example.com",
            "ann@-example.com",
            "ann@example..com",
        ] {
            assert!(Email::parse("email", bad).is_err(), "{bad}");
        }
        let long = format!("{}@example.com", "a".repeat(250));
        assert!(Email::parse("email", &long).is_err());
    }
}
