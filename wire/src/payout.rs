//! What the API and the events show of a payout and its invoice (never the
//! invoice's storage key or the payout's work).

use crate::number::Number;
use chrono::NaiveDate;
use domain::affiliate::PayoutMethod;
use domain::money::Currency;
use domain::payout_account::PaymentError;
use domain::timestamp::Timestamp;
use serde::Serialize;

use domain::payout::{Invoice, Payout, PayoutStatus};

/// The invoice evidence. Its storage key is private and appears in no response; the file is
/// served by `GET /api/v1/payouts/{id}/invoice`.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PayoutInvoice)]
pub struct InvoiceView<'a> {
    pub uploaded: bool,
    pub file_name: Option<&'a str>,
    /// Null when no invoice was uploaded.
    #[schema(value_type = Option<domain::payout::InvoiceContentType>)]
    pub content_type: Option<&'a str>,
    /// Bytes.
    #[schema(minimum = 1, maximum = 4194304)]
    pub size: Option<u64>,
    pub uploaded_at: Option<Timestamp>,
}

impl<'a> From<Option<&'a Invoice>> for InvoiceView<'a> {
    fn from(i: Option<&'a Invoice>) -> Self {
        InvoiceView {
            uploaded: i.is_some(),
            file_name: i.map(|i| i.file_name.as_str()),
            content_type: i.map(|i| i.content_type.as_str()),
            size: i.map(|i| i.size),
            uploaded_at: i.map(|i| i.uploaded_at).map(Timestamp),
        }
    }
}

/// A payout: what one affiliate is owed in one currency.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Payout)]
pub struct PayoutView<'a> {
    #[schema(value_type = domain::ids::PayoutId)]
    pub id: &'a str,
    pub object: &'static str,
    pub affiliate_id: &'a str,
    pub campaign_id: &'a str,
    /// The sum of its conversions' commissions plus `adjustmentTotal`, in major units of
    /// `currency`, exact to its minor unit.
    pub amount: Number,
    pub currency: Currency,
    pub status: PayoutStatus,
    pub method: PayoutMethod,
    /// When the payout job created it. List order and `from`/`to` use it.
    pub requested_at: Timestamp,
    #[schema(minimum = 0)]
    pub conversion_count: u64,
    /// The adjustments netted into this payout: clawbacks of reversed, already paid
    /// conversions (negative) and the merchant's manual adjustments (a bonus positive, a manual
    /// clawback negative). Zero when there were none.
    pub adjustment_total: Number,
    #[schema(value_type = crate::payout::InvoiceView)]
    pub invoice: InvoiceView<'a>,
    pub approved_at: Option<Timestamp>,
    pub paid_at: Option<Timestamp>,
    /// From POST mark-paid.
    #[schema(format = Date)]
    pub payment_date: Option<NaiveDate>,
    /// From POST mark-paid.
    pub payment_method: Option<&'a str>,
    /// From PUT mark-paid, or the provider's reference.
    pub payment_reference: Option<&'a str>,
    /// From PUT mark-paid.
    pub note: Option<&'a str>,
    pub rejection_reason: Option<&'a str>,
    pub cancellation_reason: Option<&'a str>,
    /// Why the provider's last attempt failed, when it did (the payout is then APPROVED again).
    pub payment_error: Option<&'a str>,
    /// The provider's attempts so far: each batch-process that starts a payment counts one,
    /// and every call of an attempt carries the idempotency key `{id}-{paymentAttempt}`.
    #[schema(minimum = 0)]
    pub payment_attempt: u32,
    /// The last refusal: the provider's code and message (`no_destination` when the
    /// affiliate had no usable destination), and when.
    #[schema(value_type = Option<domain::payout_account::PaymentError>)]
    pub last_payment_error: Option<&'a PaymentError>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl<'a> From<&'a Payout> for PayoutView<'a> {
    fn from(p: &'a Payout) -> Self {
        PayoutView {
            id: &p.id,
            object: "payout",
            affiliate_id: &p.affiliate_id,
            campaign_id: &p.campaign_id,
            amount: p.amount.into(),
            currency: p.currency,
            status: p.status,
            method: p.method,
            requested_at: p.requested_at.into(),
            conversion_count: p.conversion_count,
            adjustment_total: p.adjustment_total.into(),
            invoice: InvoiceView::from(p.invoice.as_ref()),
            approved_at: p.approved_at.map(Timestamp),
            paid_at: p.paid_at.map(Timestamp),
            payment_date: p.payment_date,
            payment_method: p.payment_method.as_deref(),
            payment_reference: p.payment_reference.as_deref(),
            note: p.note.as_deref(),
            rejection_reason: p.rejection_reason.as_deref(),
            cancellation_reason: p.cancellation_reason.as_deref(),
            payment_error: p.payment_error.as_deref(),
            payment_attempt: p.payment_attempt,
            last_payment_error: p.last_payment_error.as_ref(),
            created_at: p.created_at.into(),
            updated_at: p.updated_at.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A PENDING payout of 123.45 USD, as stored, with an invoice or none.
    fn payout(invoice: Option<serde_json::Value>) -> Payout {
        let at = "2026-01-01T00:00:00.000Z";
        serde_json::from_value(json!({
            "id": "po_1", "affiliateId": "aff_1", "campaignId": "cmp_1", "amount": "123.45",
            "currency": "USD", "status": "PENDING", "method": "PAYPAL", "requestedAt": at,
            "conversionCount": 3, "adjustmentTotal": "0", "invoice": invoice,
            "invoiceKey": invoice.as_ref().map(|_| "invoices/k"),
            "work": "RELEASE", "settled": 1,
            "createdAt": at, "updatedAt": at,
        }))
        .unwrap()
    }

    #[test]
    fn the_view_hides_the_storage_key_and_the_work() {
        let invoice = json!({"fileName": "inv.pdf", "contentType": "application/pdf",
            "size": 10, "uploadedAt": "2026-01-01T00:00:00.000Z"});
        let p = payout(Some(invoice));
        assert!(
            p.invoice_key.is_some() && p.work.is_some(),
            "the private parts are there"
        );
        let v = serde_json::to_value(PayoutView::from(&p)).unwrap();
        let text = v.to_string();
        assert!(
            !text.contains("invoices/") && !text.contains("invoiceKey"),
            "{text}"
        );
        for private in ["work", "progress", "claimed", "settled", "released"] {
            assert!(v.get(private).is_none(), "{private}");
        }
        assert_eq!(v["invoice"]["uploaded"], true);
        assert_eq!(v["invoice"]["fileName"], "inv.pdf");
        assert_eq!(v["amount"], json!(123.45));
        let none = serde_json::to_value(PayoutView::from(&payout(None))).unwrap();
        assert_eq!(
            none["invoice"],
            json!({"uploaded": false, "fileName": null, "contentType": null, "size": null, "uploadedAt": null})
        );
    }
}
