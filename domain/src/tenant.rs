//! The tenant of every record: an account in one mode.

use crate::enums::wire_enum;

wire_enum! {
    /// Live or test data; a key of one mode never sees the other's records.
    #[derive(Hash)]
    pub enum Mode {
        Live = "live",
        Test = "test",
    }
}

/// (account, mode): the owner of a record.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Tenant {
    pub account_id: String,
    pub mode: Mode,
}

impl Tenant {
    /// The tenant of an account in a mode.
    pub fn new(account_id: impl Into<String>, mode: Mode) -> Self {
        Tenant {
            account_id: account_id.into(),
            mode,
        }
    }

    /// The string stored on records and used in index keys: `acct_...#live`.
    pub fn key(&self) -> String {
        format!("{}#{}", self.account_id, self.mode.as_str())
    }

    /// Reads a tenant key (`acct_...#live`) back, as stored on records.
    pub fn from_key(key: &str) -> Option<Tenant> {
        let (account, mode) = key.rsplit_once('#')?;
        if account.is_empty() {
            return None;
        }
        Some(Tenant::new(account, Mode::parse(mode)?))
    }
}
