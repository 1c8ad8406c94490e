//! Payout invoices in the private bucket: their keys and the files accepted
//! (`services::invoices` applies them to their payouts).
//!
//! Key: `invoices/<account id>/<live|test>/<payout id>/<file name>`. An object
//! whose key names no payout of that tenant, or whose type or size is not
//! acceptable (PDF, PNG or JPEG, at most 4 MiB), is ignored and logged, never
//! applied. Log lines name the payout, never the key.

use crate::domain::tenant::{Mode, Tenant};
use crate::ids::{self, IdKind};

/// The prefix every invoice key starts with.
pub use crate::domain::payout::INVOICE_PREFIX as PREFIX;
/// Largest invoice accepted.
pub const MAX_BYTES: u64 = 4 * 1024 * 1024;
/// Content types accepted.
pub use crate::domain::payout::INVOICE_CONTENT_TYPES as CONTENT_TYPES;
/// Longest file name accepted.
const MAX_FILE_NAME: usize = 200;

/// The key an invoice of a payout is stored under.
pub use crate::domain::payout::invoice_key as key;

/// The tenant, payout id and file name a key names, when it is well formed.
pub fn parse_key(key: &str) -> Option<(Tenant, String, String)> {
    let rest = key.strip_prefix(PREFIX)?;
    let mut parts = rest.splitn(4, '/');
    let (account, mode, payout, file) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let well_formed = ids::is_valid(IdKind::Account, account)
        && ids::is_valid(IdKind::Payout, payout)
        && !file.is_empty()
        && file.chars().count() <= MAX_FILE_NAME
        && !file.contains('/')
        && !file.chars().any(char::is_control);
    well_formed.then(|| {
        Some((
            Tenant::new(account, Mode::parse(mode)?),
            payout.to_string(),
            file.to_string(),
        ))
    })?
}
