//! The yearly payments report: the tenant's PAID payouts (one Query of the
//! status partition, up to the year's end: it grows with the years), the
//! affiliates of the year's (batch reads), and the domain's rows.

use std::collections::BTreeMap;

use chrono::NaiveDate;

use crate::app::App;
use domain::error::{Error, Result};
use domain::payments_report::{self, Row};
use domain::payout::PayoutStatus;
use domain::tenant::Tenant;
use store::affiliates;
use store::payouts::{self, PayoutFilter};

/// The report of `year` (payouts PAID in it, by `paidAt`).
pub async fn year(app: &App, tenant: &Tenant, year: i32) -> Result<Vec<Row>> {
    let end = NaiveDate::from_ymd_opt(year, 12, 31)
        .and_then(|d| d.and_hms_milli_opt(23, 59, 59, 999))
        .ok_or_else(|| Error::internal(format!("no end of year {year}")))?
        .and_utc();
    let filter = PayoutFilter {
        status: Some(PayoutStatus::Paid),
        to: Some(end),
        ..PayoutFilter::default()
    };
    let mut paid = payouts::all(&app.store, tenant, &filter).await?;
    paid.retain(|p| payments_report::counts(p, year));
    let ids: Vec<&str> = paid.iter().map(|p| p.affiliate_id.as_str()).collect();
    let found: BTreeMap<_, _> = affiliates::get_each(&app.store, tenant, &ids)
        .await?
        .into_iter()
        .collect();
    Ok(payments_report::rows(year, &paid, &found))
}
