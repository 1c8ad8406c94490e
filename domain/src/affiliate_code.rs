//! Affiliate codes: the `ref` in links and the `affiliateCode` of postbacks.

use rand::Rng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::issue::Issue;

/// The affiliate and campaign an affiliate code belongs to (what a code
/// guard records, so a `ref` or `affiliateCode` resolves with one read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeOwner {
    pub affiliate_id: String,
    pub campaign_id: String,
}

/// Shortest code.
pub const MIN_LEN: usize = 3;
/// Longest code.
pub const MAX_LEN: usize = 32;
/// Length of a generated code.
pub const GENERATED_LEN: usize = 8;
/// Letters and digits that cannot be mistaken for one another when read aloud
/// or copied by hand (no 0/O, 1/I/L).
const ALPHABET: &[u8] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";

/// `[A-Za-z0-9_-]{3,32}`, unique per tenant in any letter case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AffiliateCode(String);

impl AffiliateCode {
    /// Checks the pattern; `path` names the field in the issue.
    pub fn parse(path: &str, raw: &str) -> Result<AffiliateCode, Issue> {
        let ok = (MIN_LEN..=MAX_LEN).contains(&raw.len())
            && raw
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if ok {
            Ok(AffiliateCode(raw.to_string()))
        } else {
            Err(Issue::new(
                &[path],
                "invalid_string",
                format!("{path} must be {MIN_LEN}-{MAX_LEN} characters of A-Z, a-z, 0-9, _ and -"),
            ))
        }
    }

    /// A fresh random code.
    pub fn generate() -> AffiliateCode {
        let mut rng = rand::rng();
        AffiliateCode(
            (0..GENERATED_LEN)
                .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
                .collect(),
        )
    }

    /// The code as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The form uniqueness is decided on.
    pub fn lower(&self) -> String {
        self.0.to_ascii_lowercase()
    }
}

// `AffiliateCode` in the description: the rule `AffiliateCode::parse` checks.
crate::described!(
    AffiliateCode,
    "AffiliateCode",
    serde_json::json!({
        "type": "string",
        "description": format!("An affiliate code: {MIN_LEN}-{MAX_LEN} characters of A-Z, a-z, 0-9, _ and -, unique per account and mode in any letter case."),
        "pattern": format!("^[A-Za-z0-9_-]{{{MIN_LEN},{MAX_LEN}}}$"),
    })
);

impl Serialize for AffiliateCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for AffiliateCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        AffiliateCode::parse("code", &s).map_err(|i| serde::de::Error::custom(i.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_and_generation() {
        assert!(AffiliateCode::parse("code", "DEMO10").is_ok());
        assert!(AffiliateCode::parse("code", "a_b-c").is_ok());
        assert!(AffiliateCode::parse("code", &"x".repeat(32)).is_ok());
        for bad in ["ab", "has space", "ümlaut", "semi;colon", &"x".repeat(33)] {
            assert!(AffiliateCode::parse("code", bad).is_err(), "{bad}");
        }
        let g = AffiliateCode::generate();
        assert_eq!(g.as_str().len(), GENERATED_LEN);
        assert!(AffiliateCode::parse("code", g.as_str()).is_ok());
        assert_eq!(
            AffiliateCode::parse("code", "Demo10").unwrap().lower(),
            "demo10"
        );
    }
}
