//! A payout's invoice: where its file is stored and when a payout takes
//! one (what the API shows of it is `wire::payout`'s).

use super::{serde_ts, DateTime, Deserialize, Error, Payout, PayoutStatus, Serialize, Tenant, Utc};

/// The states a payout takes an invoice through the portal in: while it
/// waits for one, and until it is approved (a new file replaces the one
/// sent, say a wrong one, or one missing from storage).
pub(crate) const INVOICE_STATES: &[PayoutStatus] =
    &[PayoutStatus::Pending, PayoutStatus::InvoiceUploaded];

/// The prefix every invoice's storage key starts with.
pub const INVOICE_PREFIX: &str = "invoices/";

/// The storage key of a payout's invoice:
/// `invoices/<account id>/<live|test>/<payout id>/<file name>`.
pub fn invoice_key(tenant: &Tenant, payout_id: &str, file_name: &str) -> String {
    format!(
        "{INVOICE_PREFIX}{}/{}/{payout_id}/{file_name}",
        tenant.account_id,
        tenant.mode.as_str()
    )
}

/// The storage key of one upload of a payout's invoice through the portal:
/// `invoices/<account id>/<live|test>/<payout id>/<upload id>/<file name>`.
/// Each upload is its own object, so a new file never overwrites one a
/// merchant may be approving.
pub fn upload_key(tenant: &Tenant, payout_id: &str, upload_id: &str, file_name: &str) -> String {
    invoice_key(tenant, payout_id, &format!("{upload_id}/{file_name}"))
}

/// Content types an invoice may have (PDF, PNG or JPEG).
pub const INVOICE_CONTENT_TYPES: [&str; 3] = ["application/pdf", "image/png", "image/jpeg"];

/// The description of an invoice's content type, from [`INVOICE_CONTENT_TYPES`].
pub struct InvoiceContentType;

crate::described!(
    InvoiceContentType,
    "InvoiceContentType",
    serde_json::json!({"type": "string", "enum": INVOICE_CONTENT_TYPES}),
);

/// What the API shows of an invoice (never its storage key).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Invoice {
    pub file_name: String,
    pub content_type: String,
    pub size: u64,
    #[serde(with = "serde_ts")]
    pub uploaded_at: DateTime<Utc>,
}

/// An invoice object that landed in storage for a payout.
#[derive(Debug, Clone, PartialEq)]
pub struct InvoiceUpload {
    pub key: String,
    pub file_name: String,
    pub content_type: String,
    pub size: u64,
}

impl Payout {
    /// Whether it takes an invoice through the portal now (PENDING, or
    /// INVOICE_UPLOADED until approved: a new file replaces the one sent).
    pub fn takes_invoice(&self) -> bool {
        INVOICE_STATES.contains(&self.status)
    }

    /// Whether an approval may go on with the invoice the call found in
    /// storage (`checked`: its key): an INVOICE_UPLOADED payout's file must
    /// be there, and be the one it holds now (a file replaced since the call
    /// looked is one the merchant has not seen).
    pub(crate) fn check_invoice(&self, checked: Option<&str>) -> Result<(), Error> {
        if self.status != PayoutStatus::InvoiceUploaded {
            return Ok(());
        }
        let current = self.status.as_str().to_string();
        match checked {
            None => Err(Error::InvoiceMissing { current }),
            Some(k) if self.invoice_key.as_deref().is_some_and(|held| held != k) => {
                Err(Error::InvoiceReplaced { current })
            }
            Some(_) => Ok(()),
        }
    }

    /// Whether `upload` is the invoice it holds: the same object, of the
    /// same size.
    pub(crate) fn holds_invoice(&self, upload: &InvoiceUpload) -> bool {
        self.status == PayoutStatus::InvoiceUploaded
            && self.invoice_key.as_deref() == Some(upload.key.as_str())
            && self.invoice.as_ref().is_some_and(|i| i.size == upload.size)
    }
}
