//! Operator commands of the payout flow: run the payout job once, and attach
//! an invoice file as the storage event would.

use std::path::Path;
use std::time::Duration;

use api::services::app::App;
use api::services::invoices::{self, Handled};
use api::services::paying::invoice;
use api::services::payout_job::{self as job, Budget};
use api::store::payouts as store_payouts;
use api::Error;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

/// `payouts run [--now ISO] [--max-items N]`: the payout job, once.
pub async fn run(app: &App, now: Option<&str>, max_items: Option<usize>) -> Result<Value, Error> {
    let now = match now {
        None => api::domain::timestamp::now(),
        Some(raw) => api::domain::timestamp::parse_datetime(raw).ok_or_else(|| {
            Error::invalid(
                &["now"],
                "invalid_date",
                "now must be an ISO-8601 date-time",
            )
        })?,
    };
    let mut budget = Budget::default();
    if let Some(n) = max_items {
        budget.items = n;
    }
    budget.time = Duration::from_secs(14 * 60);
    let report = job::run(app, now, budget).await?;
    Ok(json!({ "now": api::domain::timestamp::format(&now), "report": report }))
}

/// The content type storage would record for a file name.
fn content_type_of(path: &Path) -> &'static str {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("pdf") => "application/pdf",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        _ => "application/octet-stream",
    }
}

/// `invoice attach --payout ID --file PATH`: puts the file under the
/// payout's invoice key and runs the invoice-event handler on it, as S3 would.
pub async fn attach(
    app: &App,
    payout_id: &str,
    file: &Path,
    now: DateTime<Utc>,
) -> Result<Value, Error> {
    let tenant = store_payouts::tenant_of(&app.store, payout_id)
        .await?
        .ok_or(Error::NotFound("payout"))?;
    let bytes = std::fs::read(file)
        .map_err(|e| Error::InvalidRequest(format!("cannot read {}: {e}", file.display())))?;
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::InvalidRequest("the file has no name".into()))?;
    let key = invoice::key(&tenant, payout_id, name);
    app.files().put(&key, bytes, content_type_of(file)).await?;
    Ok(match invoices::on_object_created(app, &key, now).await? {
        Handled::Applied(p) => json!({ "payoutId": p.id, "applied": true, "status": p.status }),
        Handled::Ignored(reason) => {
            json!({ "payoutId": payout_id, "applied": false, "reason": reason })
        }
    })
}
