//! Invoice events: an object created under `invoices/` moves the payout its
//! key names from PENDING to INVOICE_UPLOADED and records the key, privately
//! (the key's form and the accepted files: `payouts::invoice`). An object
//! whose key names no payout of that tenant, or whose type or size is not
//! acceptable, is ignored and logged, never applied. Log lines name the
//! payout, never the key.

use chrono::{DateTime, Utc};

use crate::app::App;
use crate::paying::invoice::{parse_key, CONTENT_TYPES, MAX_BYTES};
use crate::payouts::transition;
use domain::error::{Error, Result};
use domain::payout::{InvoiceUpload, Payout};
use domain::payout_command::Command;

/// What an invoice event did.
#[derive(Debug, Clone, PartialEq)]
pub enum Handled {
    /// The payout is INVOICE_UPLOADED now.
    Applied(Box<Payout>),
    /// Nothing changed, for this reason.
    Ignored(String),
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
    match transition(app, &tenant, &payout_id, attach, now).await {
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
