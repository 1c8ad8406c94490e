//! Merchant accounts and their API keys (managed by the operator CLI).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::tenant::Mode;
use crate::timestamp::{serde_ts, serde_ts_opt};

/// A merchant account.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Account {
    pub id: String,
    pub name: String,
    pub plan: String,
    pub locked: bool,
    /// `None`: the subscription never expires.
    #[serde(with = "serde_ts_opt", default)]
    pub subscription_expires_at: Option<DateTime<Utc>>,
    #[serde(with = "serde_ts")]
    pub created_at: DateTime<Utc>,
    /// Origins that may frame the affiliate portal page besides its own
    /// (its `Content-Security-Policy: frame-ancestors`); set by the operator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub portal_frame_ancestors: Vec<String>,
}

/// Most origins an account may let frame its portal.
pub const MAX_FRAME_ANCESTORS: usize = 10;

impl Account {
    /// The account with these portal framing origins: each an `https`
    /// origin (`https://host[:port]`, no path) or a local `http` one
    /// (`localhost`, `127.0.0.1`); at most [`MAX_FRAME_ANCESTORS`].
    pub fn with_frame_ancestors(&self, origins: &[String]) -> Result<Account, Error> {
        if origins.len() > MAX_FRAME_ANCESTORS {
            return Err(Error::invalid(
                &["origins"],
                "too_big",
                format!("at most {MAX_FRAME_ANCESTORS} origins"),
            ));
        }
        for (i, o) in origins.iter().enumerate() {
            if !is_origin(o) {
                return Err(Error::invalid(
                    &["origins"],
                    "invalid_string",
                    format!("origin {i} must be https://host[:port] (or http://localhost[:port])"),
                ));
            }
        }
        let mut a = self.clone();
        a.portal_frame_ancestors = origins.iter().map(|o| o.to_ascii_lowercase()).collect();
        Ok(a)
    }

    /// The portal page's `frame-ancestors` sources: its own origin, then the account's.
    pub fn frame_ancestors(&self) -> String {
        std::iter::once("'self'")
            .chain(self.portal_frame_ancestors.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// PERMISSION_DENIED when the account may not use the API right now.
    pub fn check_usable(&self, now: DateTime<Utc>) -> Result<(), Error> {
        if self.locked {
            return Err(Error::PermissionDenied("the account is locked".into()));
        }
        if self.subscription_expires_at.is_some_and(|t| t <= now) {
            return Err(Error::PermissionDenied(
                "the account's subscription has expired".into(),
            ));
        }
        Ok(())
    }
}

/// `https://host[:port]`, or `http://` for a local host, with nothing after.
fn is_origin(o: &str) -> bool {
    let lower = o.to_ascii_lowercase();
    let (rest, local_only) = match lower.strip_prefix("https://") {
        Some(r) => (r, false),
        None => match lower.strip_prefix("http://") {
            Some(r) => (r, true),
            None => return false,
        },
    };
    let host = rest.split(':').next().unwrap_or_default();
    // A port is 1 to 65535, in plain digits.
    let port_ok = rest.split_once(':').is_none_or(|(_, p)| {
        p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok_and(|n| n > 0)
    });
    let host_ok = !host.is_empty()
        && host.len() <= 253
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    host_ok && port_ok && (!local_only || host == "localhost" || host == "127.0.0.1")
}

/// An API key record. Only the hash of the key value is kept.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ApiKey {
    pub id: String,
    pub account_id: String,
    pub name: String,
    pub mode: Mode,
    /// SHA-256 of the full key value; never returned.
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub key_hash: String,
    /// Last four characters, so an operator can tell keys apart.
    pub last4: String,
    #[serde(with = "serde_ts")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "serde_ts_opt", default)]
    pub revoked_at: Option<DateTime<Utc>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locked_and_expired_accounts_are_refused() {
        let now = Utc::now();
        let mut a = Account {
            id: "acct_1".into(),
            name: "n".into(),
            plan: "free".into(),
            locked: false,
            subscription_expires_at: None,
            created_at: now,
            portal_frame_ancestors: Vec::new(),
        };
        assert!(a.check_usable(now).is_ok());
        a.subscription_expires_at = Some(now - chrono::Duration::seconds(1));
        assert!(a.check_usable(now).is_err());
        a.subscription_expires_at = Some(now + chrono::Duration::days(1));
        assert!(a.check_usable(now).is_ok());
        a.locked = true;
        assert!(matches!(
            a.check_usable(now),
            Err(Error::PermissionDenied(_))
        ));
    }

    #[test]
    fn portal_framing_origins_are_origins_only() {
        let a = Account {
            id: "acct_1".into(),
            name: "n".into(),
            plan: "free".into(),
            locked: false,
            subscription_expires_at: None,
            created_at: Utc::now(),
            portal_frame_ancestors: Vec::new(),
        };
        assert_eq!(a.frame_ancestors(), "'self'");
        let ok = [
            "https://App.Example.com",
            "https://a.example.com:8443",
            "http://localhost:3000",
        ];
        let set = a.with_frame_ancestors(&ok.map(String::from)).unwrap();
        assert_eq!(
            set.frame_ancestors(),
            "'self' https://app.example.com https://a.example.com:8443 http://localhost:3000"
        );
        for bad in [
            "http://app.example.com",
            "https://app.example.com/path",
            "https://",
            "app.example.com",
            "https://a.example.com:99999x",
            "https://a.example.com:99999",
            "https://a.example.com:0",
            "https://a.example.com:",
            "https://a.example.com:+443",
            "https://a b.com",
            "*",
            "https://a.example.com; script-src *",
        ] {
            assert!(a.with_frame_ancestors(&[bad.to_string()]).is_err(), "{bad}");
        }
        let many: Vec<String> = (0..11)
            .map(|i| format!("https://a{i}.example.com"))
            .collect();
        assert!(a.with_frame_ancestors(&many).is_err());
    }
}
