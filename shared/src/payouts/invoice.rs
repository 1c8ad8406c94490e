//! Invoice events: an object created under `invoices/` moves the payout its
//! key names from PENDING to INVOICE_UPLOADED and records the key, privately.
//!
//! Key: `invoices/<account id>/<live|test>/<payout id>/<file name>`. An object
//! whose key names no payout of that tenant, or whose type or size is not
//! acceptable (PDF, PNG or JPEG, at most 4 MiB), is ignored and logged, never
//! applied. Log lines name the payout, never the key.

use chrono::{DateTime, Utc};

use crate::app::App;
use crate::domain::payout::{Command, InvoiceUpload, Payout};
use crate::domain::tenant::{Mode, Tenant};
use crate::error::{Error, Result};
use crate::ids::{self, IdKind};
use crate::payouts::transition;

/// The prefix every invoice key starts with.
pub const PREFIX: &str = "invoices/";
/// Largest invoice accepted.
pub const MAX_BYTES: u64 = 4 * 1024 * 1024;
/// Content types accepted.
pub const CONTENT_TYPES: [&str; 3] = ["application/pdf", "image/png", "image/jpeg"];
/// Longest file name accepted.
const MAX_FILE_NAME: usize = 200;

/// What an invoice event did.
#[derive(Debug, Clone, PartialEq)]
pub enum Handled {
    /// The payout is INVOICE_UPLOADED now.
    Applied(Box<Payout>),
    /// Nothing changed, for this reason.
    Ignored(String),
}

/// The key an invoice of a payout is stored under.
pub fn key(tenant: &Tenant, payout_id: &str, file_name: &str) -> String {
    format!(
        "{PREFIX}{}/{}/{payout_id}/{file_name}",
        tenant.account_id,
        tenant.mode.as_str()
    )
}

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

/// Handles one created object (S3 notification, or `refctl invoice attach`).
pub async fn on_object_created(app: &App, key: &str, now: DateTime<Utc>) -> Result<Handled> {
    let Some((tenant, payout_id, file_name)) = parse_key(key) else {
        return Ok(ignored(None, "the key names no payout"));
    };
    let Some(facts) = app.files().head(key).await? else {
        return Ok(ignored(Some(&payout_id), "the object is gone"));
    };
    let content_type = facts.content_type.unwrap_or_default();
    let base_type = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if !CONTENT_TYPES.contains(&base_type.as_str()) {
        return Ok(ignored(Some(&payout_id), "not a PDF, PNG or JPEG"));
    }
    if facts.size == 0 || facts.size > MAX_BYTES {
        return Ok(ignored(Some(&payout_id), "empty or larger than 4 MiB"));
    }
    let upload = InvoiceUpload {
        key: key.to_string(),
        file_name,
        content_type: base_type,
        size: facts.size,
    };
    let attach = |_: &Payout| Command::AttachInvoice(upload.clone());
    match transition(&app.store, &tenant, &payout_id, attach, now).await {
        Ok(p) => {
            tracing::info!(payout = %p.id, "invoice attached");
            Ok(Handled::Applied(Box::new(p)))
        }
        Err(Error::NotFound(_)) => Ok(ignored(Some(&payout_id), "no such payout in that tenant")),
        Err(e @ Error::InvalidState { .. }) => Ok(ignored(Some(&payout_id), &e.to_string())),
        Err(e) => Err(e),
    }
}

fn ignored(payout: Option<&str>, why: &str) -> Handled {
    tracing::warn!(
        payout = payout.unwrap_or("-"),
        reason = why,
        "invoice object ignored"
    );
    Handled::Ignored(why.to_string())
}
