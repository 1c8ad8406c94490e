//! Merchant accounts and their API keys (managed by the operator CLI).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::tenant::Mode;
use crate::error::Error;
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
}

impl Account {
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
}
