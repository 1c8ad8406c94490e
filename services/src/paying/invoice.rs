//! Payout invoices in the private bucket: their keys and the files accepted
//! (`services::invoices` applies them to their payouts).
//!
//! Key: `invoices/<account id>/<live|test>/<payout id>/<file name>`, or, for
//! a portal upload, `…/<payout id>/<upload id>/<file name>`. An object
//! whose key names no payout of that tenant, or whose type or size is not
//! acceptable (PDF, PNG or JPEG, at most 4 MiB), is ignored and logged, never
//! applied. Log lines name the payout, never the key.

use domain::ids::{self, IdKind};
use domain::tenant::{Mode, Tenant};

/// The prefix every invoice key starts with.
pub use domain::payout::INVOICE_PREFIX as PREFIX;
/// Largest invoice accepted.
pub const MAX_BYTES: u64 = 4 * 1024 * 1024;
/// Content types accepted.
pub use domain::payout::INVOICE_CONTENT_TYPES as CONTENT_TYPES;
/// Longest file name accepted.
const MAX_FILE_NAME: usize = 200;

/// The key an invoice of a payout is stored under.
pub use domain::payout::invoice_key as key;
/// The key of one portal upload of a payout's invoice.
pub use domain::payout::upload_key;

/// The tenant, payout id and file name a key names, when it is well formed.
pub fn parse_key(key: &str) -> Option<(Tenant, String, String)> {
    let rest = key.strip_prefix(PREFIX)?;
    let mut parts = rest.splitn(4, '/');
    let (account, mode, payout, file) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    // A portal upload's own folder, then its file name.
    let file = match file.split_once('/') {
        Some((upload, name)) => ids::is_ulid(upload).then_some(name)?,
        None => file,
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_names_its_tenant_payout_and_file_with_or_without_an_upload_folder() {
        let acct = "acct_01HZY3Q5W6X7Y8Z9A0B1C2D3E4";
        let po = "po_01HZY3Q5W6X7Y8Z9A0B1C2D3E4";
        let named = |key: &str| parse_key(key).map(|(t, p, f)| (t.key(), p, f));
        let tenant = format!("{acct}#test");
        let cases = [
            (
                format!("invoices/{acct}/test/{po}/inv.pdf"),
                Some("inv.pdf"),
            ),
            (
                format!("invoices/{acct}/test/{po}/01HZY3Q5W6X7Y8Z9A0B1C2D3E4/inv.pdf"),
                Some("inv.pdf"),
            ),
            (format!("invoices/{acct}/test/{po}/a-b/inv.pdf"), None),
            (format!("invoices/{acct}/test/{po}/scans/inv.pdf"), None),
            (format!("invoices/{acct}/test/{po}/x/y/inv.pdf"), None),
            (format!("invoices/{acct}/test/{po}//inv.pdf"), None),
            (format!("invoices/{acct}/test/{po}/"), None),
        ];
        for (key, file) in cases {
            let want = file.map(|f| (tenant.clone(), po.to_string(), f.to_string()));
            assert_eq!(named(&key), want, "{key}");
        }
    }
}
