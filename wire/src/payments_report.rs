//! The yearly payments report as the API shows it: a row per affiliate
//! and currency, as JSON or as the columns of a CSV.

use crate::number::Number;
use domain::money::Currency;
use domain::payments_report::Row;
use domain::tax_form::TaxFormType;
use serde::Serialize;

/// One affiliate's payments in one currency.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PaymentsReportRow)]
pub struct PaymentsReportRow<'a> {
    pub affiliate_id: &'a str,
    /// The affiliate's name now (empty when the affiliate is gone).
    pub name: &'a str,
    pub currency: Currency,
    /// The sum of the year's PAID payouts, exact.
    pub total: Number,
    /// How many payouts.
    #[schema(minimum = 1)]
    pub count: u64,
    /// The payout methods they went by (sorted).
    pub methods: &'a [String],
    /// The tax form the affiliate sent; null: none.
    pub tax_form_type: Option<TaxFormType>,
}

impl<'a> From<&'a Row> for PaymentsReportRow<'a> {
    fn from(r: &'a Row) -> Self {
        PaymentsReportRow {
            affiliate_id: &r.affiliate_id,
            name: &r.name,
            currency: r.currency,
            total: r.total.into(),
            count: r.count,
            methods: &r.methods,
            tax_form_type: r.tax_form_type,
        }
    }
}

/// The whole report as the JSON answer's `data` holds it: every row at
/// once (no paging: one row per affiliate and currency of the year).
pub struct Rows;

domain::described!(
    Rows,
    "PaymentsReport",
    serde_json::json!({
        "type": "array",
        "description": "Every row of the year, sorted by affiliate id, then currency.",
        "items": {"$ref": "#/components/schemas/PaymentsReportRow"},
    }),
    [(
        "PaymentsReportRow",
        serde_json::to_value(<PaymentsReportRow as utoipa::PartialSchema>::schema())
            .unwrap_or_default()
    )]
);
