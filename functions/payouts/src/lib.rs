//! Payout routes: the list, one payout and its invoice file, the merchant's
//! transitions (approve, reject, mark paid, settle) and the per-id bulk
//! calls (batch-process, bulk-cancel). Payouts themselves are created by the
//! payout job, never here. The invoice's storage key stays inside: the file
//! is served through this API, not through a storage URL.

mod bulk;

use std::sync::Arc;

use api::domain::error::Error;
use api::domain::payout_command::Command;
use api::domain::tenant::Tenant;
use api::domain::timestamp;
use api::http::Answer;
use api::http::{ApiRouter, Json, Listing, Merchant, Params, PathId, Reply};
use api::routes;
use api::services::app::App;
use api::services::paying::invoice;
use api::services::tax_forms;
use api::services::{payout_rails, payouts};
use api::store::page::PageRequest;
use api::store::payouts::{self as store_payouts, PayoutFilter};
use api::wire::payout::PayoutView;
use api::wire::payout_commands::{
    ApprovePayout, BatchProcess, BulkCancel, MarkPaid, RejectPayout, SettlePayout,
};
use axum::extract::State;

use crate::bulk::{each_id, BulkView};

/// The routes this function serves.
pub fn routes() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(get))
        .routes(routes!(get_invoice))
        .routes(routes!(get_tax_form))
        .routes(routes!(approve))
        .routes(routes!(reject))
        .routes(routes!(mark_paid, settle))
        .routes(routes!(batch_process))
        .routes(routes!(bulk_cancel))
}

/// List payouts
///
/// The payouts of the key's account and mode, newest `requestedAt` first. Served by one Query:
/// by affiliate, else by status, else every payout; the other filters narrow that Query.
#[utoipa::path(
    get,
    path = "/api/v1/payouts",
    operation_id = "listPayouts",
    tag = "Payouts",
    params(
        PageRequest,
        ("affiliate_id" = inline(Option<api::http::openapi::Line>), Query, description = "Only payouts of this affiliate."),
        ("status" = Option<api::domain::payout::PayoutStatus>, Query, description = "Only payouts in this status (any letter case)."),
        ("method" = Option<api::domain::affiliate::PayoutMethod>, Query, description = "Only payouts with this payout method (any letter case)."),
        ("from" = inline(Option<api::http::openapi::DateOrTime>), Query, description = "Lower bound on `requestedAt`: a date (`2026-01-31`, from its start, UTC) or a date-time. After `to`: 400."),
        ("to" = inline(Option<api::http::openapi::DateOrTime>), Query, description = "Upper bound on `requestedAt`: a date (the whole UTC day) or a date-time, inclusive.")
    ),
    responses(
        (status = 200, description = "A page of payouts.", body = [api::wire::payout::PayoutView])
    )
)]
async fn list(
    m: Merchant,
    State(app): State<Arc<App>>,
    Params(Listing { page, filter }): Params<Listing<PayoutFilter>>,
) -> Answer {
    let found = store_payouts::list(&app.store, m.tenant(), &filter, &page).await?;
    Reply::list_with(&found, PayoutView::from, &page)
}

/// Get a payout
///
/// One payout of the key's account and mode. Its invoice shows as `{uploaded, fileName,
/// contentType, size, uploadedAt}`; the storage key never appears.
#[utoipa::path(
    get,
    path = "/api/v1/payouts/{id}",
    operation_id = "getPayout",
    tag = "Payouts",
    responses(
        (status = 200, description = "The payout.", body = api::wire::payout::PayoutView)
    )
)]
async fn get(m: Merchant, State(app): State<Arc<App>>, PathId(id): PathId) -> Answer {
    let p = store_payouts::get(&app.store, m.tenant(), &id).await?;
    Reply::ok(PayoutView::from(&p))
}

/// Download a payout's invoice (ext)
///
/// The bytes of the invoice file with its content type (PDF, PNG or JPEG), served through the
/// API so that no storage key or storage URL is ever shown. 404 when the payout has no invoice.
#[utoipa::path(
    get,
    path = "/api/v1/payouts/{id}/invoice",
    operation_id = "getPayoutInvoice",
    tag = "Payouts",
    responses(
        (status = 200, response = inline(api::http::openapi::InvoiceFile))
    )
)]
async fn get_invoice(m: Merchant, State(app): State<Arc<App>>, PathId(id): PathId) -> Answer {
    let p = store_payouts::get(&app.store, m.tenant(), &id).await?;
    let (Some(key), Some(meta)) = (&p.invoice_key, &p.invoice) else {
        return Err(Error::NotFound("invoice").into());
    };
    let Some((bytes, _)) = app.files().get(key).await? else {
        return Err(Error::NotFound("invoice").into());
    };
    let content_type = invoice_content_type(&meta.content_type);
    let file_name = safe_file_name(&meta.file_name);
    Ok(
        Reply::raw(http::StatusCode::OK, content_type, bytes).header(
            "content-disposition",
            format!("attachment; filename=\"{file_name}\""),
        ),
    )
}

/// Download an affiliate's tax form (ext)
///
/// The PDF the affiliate sent last through the portal (its type: `taxForm.formType` on the
/// affiliate), served through the API so that no storage key is ever shown. 404 when it sent
/// none.
#[utoipa::path(
    get,
    path = "/api/v1/affiliates/{id}/tax-form",
    operation_id = "getAffiliateTaxForm",
    tag = "Affiliates",
    responses(
        (status = 200, description = "The tax form's PDF.", content_type = "application/pdf", headers(("Content-Disposition" = String, description = "`attachment; filename=\"<formType>-<affiliate id>.pdf\"`.")))
    )
)]
async fn get_tax_form(m: Merchant, State(app): State<Arc<App>>, PathId(id): PathId) -> Answer {
    let (form, bytes) = tax_forms::file(&app, m.tenant(), &id).await?;
    let name = format!("{}-{id}.pdf", form.form_type.as_str());
    Ok(
        Reply::raw(http::StatusCode::OK, "application/pdf", bytes).header(
            "content-disposition",
            format!("attachment; filename=\"{name}\""),
        ),
    )
}

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

/// Approve a payout
///
/// INVOICE_UPLOADED -> APPROVED, when the invoice object is present in storage (checked at the
/// call), as a conditional write. Any other state, or the invoice missing: 409 INVALID_STATE
/// with `details.currentState` (a PENDING payout has no invoice yet). Of racing transitions on
/// one payout exactly one applies; the others get 409.
#[utoipa::path(
    post,
    path = "/api/v1/payouts/{id}/approve",
    operation_id = "approvePayout",
    tag = "Payouts",
    request_body = Option<api::wire::payout_commands::ApprovePayout>,
    responses(
        (status = 200, description = "The approved payout.", body = api::wire::payout::PayoutView),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn approve(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(ApprovePayout {}): Json<ApprovePayout>,
) -> Answer {
    let p = payouts::approve(&app, m.tenant(), &id, timestamp::now()).await?;
    Reply::ok(PayoutView::from(&p))
}

/// Reject a payout
///
/// PENDING, INVOICE_UPLOADED or APPROVED -> REJECTED with the reason; its conversions (and
/// netted adjustments) return to the affiliate's payable pool, where the next payout job run
/// can pay them again. Any other state: 409 INVALID_STATE.
#[utoipa::path(
    post,
    path = "/api/v1/payouts/{id}/reject",
    operation_id = "rejectPayout",
    tag = "Payouts",
    request_body = api::wire::payout_commands::RejectPayout,
    responses(
        (status = 200, description = "The rejected payout.", body = api::wire::payout::PayoutView),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn reject(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(body): Json<RejectPayout>,
) -> Answer {
    transition(&app, m.tenant(), &id, body.into_command()?).await
}

/// Mark an approved payout paid
///
/// APPROVED -> PAID: the merchant paid outside the platform on `paymentDate` by
/// `paymentMethod`. Paid side effects: its conversions become PAID and the affiliate's `paid`
/// total grows (completed exactly once, resumed by the payout job after a crash). Any other
/// state: 409 INVALID_STATE.
#[utoipa::path(
    post,
    path = "/api/v1/payouts/{id}/mark-paid",
    operation_id = "markPayoutPaid",
    tag = "Payouts",
    request_body = api::wire::payout_commands::MarkPaid,
    responses(
        (status = 200, description = "The paid payout.", body = api::wire::payout::PayoutView),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn mark_paid(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(body): Json<MarkPaid>,
) -> Answer {
    transition(&app, m.tenant(), &id, body.into_command()?).await
}

/// Settle a payout outside the platform
///
/// PENDING, INVOICE_UPLOADED, APPROVED or PROCESSING -> PAID (the affiliate-visible status),
/// with an optional `paymentReference` and `note`, and the paid side effects. On a PAID payout:
/// 200 with the payout unchanged. REJECTED or CANCELLED: 409 INVALID_STATE.
#[utoipa::path(
    put,
    path = "/api/v1/payouts/{id}/mark-paid",
    operation_id = "settlePayout",
    tag = "Payouts",
    request_body = Option<api::wire::payout_commands::SettlePayout>,
    responses(
        (status = 200, description = "The paid payout.", body = api::wire::payout::PayoutView),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn settle(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(body): Json<SettlePayout>,
) -> Answer {
    transition(&app, m.tenant(), &id, body.into_command()?).await
}

/// Applies one merchant command to the payout the path names.
async fn transition(app: &App, tenant: &Tenant, id: &str, command: Command) -> Answer {
    let now = timestamp::now();
    let p = payouts::transition(app, tenant, id, |_| command.clone(), now).await?;
    Reply::ok(PayoutView::from(&p))
}

/// Approve and pay up to 100 payouts
///
/// Each id on its own, in order: INVOICE_UPLOADED (invoice present in storage) or APPROVED ->
/// PROCESSING, then the payment provider is asked with the payout id as idempotency key:
/// `sandbox` pays at once (PAID, its conversions PAID), `manual` leaves it PROCESSING until
/// mark-paid. A provider failure answers that id with SERVICE_UNAVAILABLE in `failed` and
/// leaves the payout APPROVED with `paymentError`; processing it again retries, never paying
/// twice. The call is 200 even when some fail.
#[utoipa::path(
    post,
    path = "/api/v1/payouts/batch-process",
    operation_id = "batchProcessPayouts",
    tag = "Payouts",
    request_body = api::wire::payout_commands::BatchProcess,
    responses(
        (status = 200, description = "Per-id results.", body = crate::bulk::BatchProcessResult)
    )
)]
async fn batch_process(
    m: Merchant,
    State(app): State<Arc<App>>,
    Json(body): Json<BatchProcess>,
) -> Answer {
    let ids = body.ids()?;
    let results = payout_rails::process_many(&app, m.tenant(), ids, timestamp::now()).await;
    Reply::ok(BulkView::new("processed", &results))
}

/// Cancel up to 100 payouts
///
/// Each id on its own: PENDING, INVOICE_UPLOADED or APPROVED -> CANCELLED with the reason; its
/// conversions return to the payable pool. Other states: INVALID_STATE in `failed`. The call is
/// 200 even when some fail.
#[utoipa::path(
    post,
    path = "/api/v1/payouts/bulk-cancel",
    operation_id = "bulkCancelPayouts",
    tag = "Payouts",
    request_body = api::wire::payout_commands::BulkCancel,
    responses(
        (status = 200, description = "Per-id results.", body = crate::bulk::BulkCancelResult)
    )
)]
async fn bulk_cancel(
    m: Merchant,
    State(app): State<Arc<App>>,
    Json(body): Json<BulkCancel>,
) -> Answer {
    let (ids, command) = body.into_parts()?;
    let tenant = m.tenant().clone();
    let results = each_id(ids, move |id| {
        let (app, tenant, command) = (app.clone(), tenant.clone(), command.clone());
        async move {
            let cancel = |_: &_| command.clone();
            payouts::transition(&app, &tenant, &id, cancel, timestamp::now()).await
        }
    })
    .await;
    Reply::ok(BulkView::new("cancelled", &results))
}

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
