//! Payout routes: the list, one payout and its invoice file, the merchant's
//! transitions (approve, reject, mark paid, settle) and the per-id bulk
//! calls (batch-process, bulk-cancel). Payouts themselves are created by the
//! payout job, never here. The invoice's storage key stays inside: the file
//! is served through this API, not through a storage URL.

mod bulk;

use http::Method;
use shared::domain::affiliate::PayoutMethod;
use shared::domain::payout::{PayoutStatus, PayoutView};
use shared::domain::payout_commands::{
    ApprovePayout, BatchProcess, BulkCancel, MarkPaid, RejectPayout, SettlePayout,
};
use shared::error::Error;
use shared::http::query::Query;
use shared::http::{Call, Reply, Router};
use shared::payouts::{self, invoice};
use shared::store::payouts::{self as store_payouts, PayoutFilter};
use shared::{handler, timestamp};

use crate::bulk::{each_id, BulkView};

/// The routes this function serves.
pub fn router() -> Router {
    Router::new(vec![
        (Method::GET, "/api/v1/payouts", list),
        (Method::GET, "/api/v1/payouts/{id}", get),
        (Method::GET, "/api/v1/payouts/{id}/invoice", get_invoice),
        (Method::POST, "/api/v1/payouts/{id}/approve", approve),
        (Method::POST, "/api/v1/payouts/{id}/reject", reject),
        (Method::POST, "/api/v1/payouts/{id}/mark-paid", mark_paid),
        (Method::PUT, "/api/v1/payouts/{id}/mark-paid", settle),
        (Method::POST, "/api/v1/payouts/batch-process", batch_process),
        (Method::POST, "/api/v1/payouts/bulk-cancel", bulk_cancel),
    ])
}

/// Query parameters of the payout list.
const LIST_PARAMS: [&str; 8] = [
    "limit",
    "offset",
    "cursor",
    "affiliate_id",
    "status",
    "method",
    "from",
    "to",
];

handler!(list, |call| {
    let mut q = call.query(&LIST_PARAMS);
    let page = q.page();
    let filter = list_filter(&mut q);
    q.finish()?;
    let found = store_payouts::list(&call.app.store, call.tenant(), &filter, &page).await?;
    Reply::list_with(&found, PayoutView::from, &page)
});

/// The list's filters; problems are recorded on the query.
fn list_filter(q: &mut Query<'_>) -> PayoutFilter {
    let statuses = PayoutStatus::ALL.map(PayoutStatus::as_str);
    let status = q.one_of("status", &statuses).and_then(PayoutStatus::parse);
    let methods = PayoutMethod::ALL.map(PayoutMethod::as_str);
    let method = q
        .one_of("method", &methods)
        .and_then(|name| PayoutMethod::ALL.into_iter().find(|m| m.as_str() == name));
    // `from`/`to` bound `requestedAt`, with the conversion list's rules.
    let (from, to) = q.range();
    PayoutFilter {
        affiliate_id: q.str("affiliate_id").map(str::to_string),
        status,
        method,
        from: from.map(|b| b.start()),
        to: to.map(|b| b.end()),
    }
}

handler!(get, |call| {
    let p = store_payouts::get(&call.app.store, call.tenant(), call.param("id")?).await?;
    Reply::ok(PayoutView::from(&p))
});

handler!(get_invoice, |call| {
    let p = store_payouts::get(&call.app.store, call.tenant(), call.param("id")?).await?;
    let (Some(key), Some(meta)) = (&p.invoice_key, &p.invoice) else {
        return Err(Error::NotFound("invoice"));
    };
    let Some((bytes, _)) = call.app.files().get(key).await? else {
        return Err(Error::NotFound("invoice"));
    };
    Ok(
        Reply::raw(200, invoice_content_type(&meta.content_type), bytes).header(
            "content-disposition",
            format!(
                "attachment; filename=\"{}\"",
                safe_file_name(&meta.file_name)
            ),
        ),
    )
});

/// The invoice's content type as accepted at upload (PDF, PNG or JPEG).
fn invoice_content_type(recorded: &str) -> &'static str {
    invoice::CONTENT_TYPES
        .into_iter()
        .find(|ct| ct.eq_ignore_ascii_case(recorded))
        .unwrap_or("application/octet-stream")
}

/// The file name for `Content-Disposition`: anything but `[A-Za-z0-9._-]`
/// becomes `_`, so the header can be neither broken nor injected into.
fn safe_file_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

handler!(approve, |call| {
    let ApprovePayout {} = call.json()?;
    let p = payouts::approve(
        &call.app,
        call.tenant(),
        call.param("id")?,
        timestamp::now(),
    )
    .await?;
    Reply::ok(PayoutView::from(&p))
});

handler!(reject, |call| {
    let command = call.json::<RejectPayout>()?.into_command()?;
    transition(&call, command).await
});

handler!(mark_paid, |call| {
    let command = call.json::<MarkPaid>()?.into_command()?;
    transition(&call, command).await
});

handler!(settle, |call| {
    let command = call.json::<SettlePayout>()?.into_command()?;
    transition(&call, command).await
});

/// Applies one merchant command to the payout the path names.
async fn transition(
    call: &Call,
    command: shared::domain::payout::Command,
) -> shared::error::Result<Reply> {
    let p = payouts::transition(
        &call.app.store,
        call.tenant(),
        call.param("id")?,
        |_| command.clone(),
        timestamp::now(),
    )
    .await?;
    Reply::ok(PayoutView::from(&p))
}

handler!(batch_process, |call| {
    let ids = call.json::<BatchProcess>()?.ids()?;
    let (app, tenant) = (call.app.clone(), call.tenant().clone());
    let results = each_id(ids, move |id| {
        let (app, tenant) = (app.clone(), tenant.clone());
        async move { payouts::process(&app, &tenant, &id, timestamp::now()).await }
    })
    .await;
    Reply::ok(BulkView::new("processed", &results))
});

handler!(bulk_cancel, |call| {
    let (ids, command) = call.json::<BulkCancel>()?.into_parts()?;
    let (app, tenant) = (call.app.clone(), call.tenant().clone());
    let results = each_id(ids, move |id| {
        let (app, tenant, command) = (app.clone(), tenant.clone(), command.clone());
        async move {
            let cancel = |_: &_| command.clone();
            payouts::transition(&app.store, &tenant, &id, cancel, timestamp::now()).await
        }
    })
    .await;
    Reply::ok(BulkView::new("cancelled", &results))
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invoice_headers_are_tame() {
        assert_eq!(invoice_content_type("application/pdf"), "application/pdf");
        assert_eq!(
            invoice_content_type("text/html"),
            "application/octet-stream"
        );
        assert_eq!(safe_file_name("inv 1\"\r\n.pdf"), "inv_1___.pdf");
    }
}
