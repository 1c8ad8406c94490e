//! Invoice events: the S3 `ObjectCreated` notifications of the bucket's
//! `invoices/` prefix, each object handed to
//! [`on_object_created`](services::invoices::on_object_created),
//! which moves the payout its key names to INVOICE_UPLOADED. Keys are never
//! logged (they name the tenant); the shared handler logs the payout id.

use chrono::{DateTime, Utc};
use percent_encoding::percent_decode_str;
use serde::{Deserialize, Serialize};
use services::app::App;
use services::domain::error::Result;
use services::invoices::{self, Handled};

/// An S3 event notification: only the fields this function reads.
#[derive(Debug, Clone, Deserialize)]
pub struct S3Event {
    #[serde(rename = "Records", default)]
    pub records: Vec<S3Record>,
}

/// One record of a notification.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct S3Record {
    #[serde(default)]
    pub event_name: String,
    pub s3: S3Entity,
}

/// The bucket and object a record names.
#[derive(Debug, Clone, Deserialize)]
pub struct S3Entity {
    pub object: S3Object,
}

/// The object a record names; `key` is URL-encoded, as S3 sends it.
#[derive(Debug, Clone, Deserialize)]
pub struct S3Object {
    pub key: String,
}

impl S3Event {
    /// The decoded keys of the objects created.
    pub fn created_keys(&self) -> Vec<String> {
        self.records
            .iter()
            .filter(|r| r.event_name.starts_with("ObjectCreated"))
            .map(|r| decode_key(&r.s3.object.key))
            .collect()
    }
}

/// Decodes a key as S3 notifications encode it: form encoding, so `+` is a
/// space and `%XX` a byte.
pub fn decode_key(raw: &str) -> String {
    percent_decode_str(&raw.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

/// How many objects of one notification were applied or ignored.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct Summary {
    pub applied: usize,
    pub ignored: usize,
}

/// Handles every created object of a notification. A failure of storage
/// is returned, so Lambda retries the event (applying it again is a no-op).
pub async fn handle(app: &App, event: &S3Event, now: DateTime<Utc>) -> Result<Summary> {
    let mut summary = Summary::default();
    for key in event.created_keys() {
        match invoices::on_object_created(app, &key, now).await? {
            Handled::Applied(_) => summary.applied += 1,
            Handled::Ignored(_) => summary.ignored += 1,
        }
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_decoded_as_s3_encodes_them() {
        assert_eq!(
            decode_key("invoices/acct_1/test/po_1/my+invoice%281%29%C3%A9.pdf"),
            "invoices/acct_1/test/po_1/my invoice(1)é.pdf"
        );
        let event: S3Event = serde_json::from_value(serde_json::json!({
            "Records": [
                {"eventName": "ObjectCreated:Put", "s3": {"object": {"key": "invoices/a+b.pdf"}}},
                {"eventName": "ObjectRemoved:Delete", "s3": {"object": {"key": "invoices/c.pdf"}}}
            ]
        }))
        .unwrap();
        assert_eq!(event.created_keys(), ["invoices/a b.pdf"]);
    }
}
