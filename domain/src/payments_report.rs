//! The yearly payments report for the merchant's accountant: one row per
//! affiliate and currency, from the payouts PAID in the calendar year (by
//! `paidAt`, UTC).

use std::collections::{BTreeMap, BTreeSet};

use chrono::Datelike;
use rust_decimal::Decimal;

use crate::affiliate::Affiliate;
use crate::money::Currency;
use crate::payout::{Payout, PayoutStatus};
use crate::tax_form::TaxFormType;

/// One affiliate's payments in one currency
/// (`wire::payments_report::PaymentsReportRow` shows it).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub affiliate_id: String,
    /// The affiliate's name now (empty when the affiliate is gone).
    pub name: String,
    pub currency: Currency,
    /// The sum of the year's PAID payouts, exact.
    pub total: Decimal,
    /// How many payouts.
    pub count: u64,
    /// The payout methods they went by (sorted).
    pub methods: Vec<String>,
    /// The tax form the affiliate sent, if any.
    pub tax_form_type: Option<TaxFormType>,
}

/// Whether the report of `year` counts `p`: PAID in that year (UTC).
pub fn counts(p: &Payout, year: i32) -> bool {
    p.status == PayoutStatus::Paid && p.paid_at.is_some_and(|t| t.year() == year)
}

/// The rows of `year`: per affiliate and currency (sorted by affiliate id,
/// then currency code), every payout PAID in the year added up.
pub fn rows(year: i32, payouts: &[Payout], affiliates: &BTreeMap<String, Affiliate>) -> Vec<Row> {
    type Sums = (Decimal, u64, BTreeSet<&'static str>);
    let mut sums: BTreeMap<(&str, Currency), Sums> = BTreeMap::new();
    for p in payouts.iter().filter(|p| counts(p, year)) {
        let s = sums.entry((&p.affiliate_id, p.currency)).or_default();
        s.0 += p.amount;
        s.1 += 1;
        s.2.insert(p.method.as_str());
    }
    sums.into_iter()
        .map(|((id, currency), (total, count, methods))| {
            let a = affiliates.get(id);
            Row {
                affiliate_id: id.to_string(),
                name: a.map(|a| a.name.clone()).unwrap_or_default(),
                currency,
                total: currency.round(total),
                count,
                methods: methods.into_iter().map(str::to_string).collect(),
                tax_form_type: a.and_then(|a| a.tax_form.as_ref()).map(|t| t.form_type),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::affiliate::PayoutMethod;
    use crate::payout::tests::payout;
    use crate::timestamp::parse_datetime;

    fn paid(
        affiliate: &str,
        amount: &str,
        currency: &str,
        at: &str,
        method: PayoutMethod,
    ) -> Payout {
        let mut p = payout(PayoutStatus::Paid);
        p.affiliate_id = affiliate.into();
        p.amount = amount.parse().unwrap();
        p.currency = Currency::parse("currency", currency).unwrap();
        p.paid_at = parse_datetime(at);
        p.method = method;
        p
    }

    #[test]
    fn rows_add_up_each_affiliate_s_year_per_currency() {
        use PayoutMethod::*;
        let mut open = paid("aff_a", "99", "USD", "2026-05-01T00:00:00Z", Paypal);
        open.status = PayoutStatus::Approved;
        let payouts = [
            paid("aff_b", "10.10", "USD", "2026-01-01T00:00:00Z", Stripe),
            paid("aff_a", "0.1", "USD", "2026-03-01T00:00:00Z", Paypal),
            paid("aff_a", "0.2", "USD", "2026-12-31T23:59:59Z", Stripe),
            paid("aff_a", "5", "EUR", "2026-06-01T00:00:00Z", Paypal),
            paid("aff_a", "7", "USD", "2025-12-31T23:59:59Z", Paypal),
            paid("aff_a", "8", "USD", "2027-01-01T00:00:00Z", Paypal),
            open,
        ];
        let rows = rows(2026, &payouts, &BTreeMap::new());
        let got: Vec<(String, &str, String, u64, String)> = rows
            .iter()
            .map(|r| {
                let total = r.total.to_string();
                (
                    r.affiliate_id.clone(),
                    r.currency.code(),
                    total,
                    r.count,
                    r.methods.join("+"),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("aff_a".into(), "EUR", "5.00".into(), 1, "PAYPAL".into()),
                (
                    "aff_a".into(),
                    "USD",
                    "0.30".into(),
                    2,
                    "PAYPAL+STRIPE".into()
                ),
                ("aff_b".into(), "USD", "10.10".into(), 1, "STRIPE".into()),
            ]
        );
        assert!(rows
            .iter()
            .all(|r| r.tax_form_type.is_none() && r.name.is_empty()));
    }
}
