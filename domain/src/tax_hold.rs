//! The tax-form hold over an affiliate's payouts: which payouts asked to
//! move towards payment wait for its form (the rule of one payment is
//! `domain::tax_form`; this module counts what came before it).

use std::collections::BTreeMap;

use chrono::Datelike;
use rust_decimal::Decimal;

use crate::money::Currency;
use crate::payout::{Payout, PayoutStatus};
use crate::tax_form::{missing, Payment, TaxForm, TaxFormSetting};

/// Which of one affiliate's payouts asked to move towards payment (`asked`,
/// in the order asked) wait for its tax form. Each counts, in its currency,
/// what the affiliate was paid in `year`, every other payout of its
/// `history` approved or in flight (it may be paid without asking again),
/// and the asked ones before it that go ahead; it waits when that total with
/// its own amount reaches `fromAmount` while a required form is missing.
pub fn held(
    setting: Option<&TaxFormSetting>,
    form: Option<&TaxForm>,
    history: &[Payout],
    asked: &[&Payout],
    year: i32,
) -> Vec<bool> {
    let is_asked = |p: &Payout| asked.iter().any(|a| a.id == p.id);
    let counted = |p: &&Payout| match p.status {
        PayoutStatus::Paid => p.paid_at.is_some_and(|t| t.year() == year),
        PayoutStatus::Approved | PayoutStatus::Processing => !is_asked(p),
        _ => false,
    };
    let mut totals: BTreeMap<Currency, Decimal> = BTreeMap::new();
    for p in history.iter().filter(counted) {
        *totals.entry(p.currency).or_default() += p.amount;
    }
    asked
        .iter()
        .map(|p| {
            let total = totals.entry(p.currency).or_default();
            let waits = missing(&Payment {
                setting,
                form,
                paid_this_year: *total,
                amount: p.amount,
            });
            if !waits {
                *total += p.amount;
            }
            waits
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tax_form::TaxFormType;
    use chrono::Utc;

    #[test]
    fn payouts_asked_together_or_in_flight_count_towards_the_amount() {
        use crate::payout::tests::payout;
        let setting = TaxFormSetting {
            required: true,
            from_amount: Decimal::from(600),
        };
        let of = |id: &str, status, amount: i64, paid: Option<&str>| {
            let mut p = payout(status);
            p.id = id.into();
            p.amount = Decimal::from(amount);
            p.paid_at = paid.and_then(crate::timestamp::parse_datetime);
            p
        };
        use PayoutStatus::*;
        let history = vec![
            of("po_old", Paid, 500, Some("2025-12-31T00:00:00Z")),
            of("po_a", Approved, 250, None),
            of("po_b", InvoiceUploaded, 250, None),
            of("po_c", Approved, 200, None),
        ];
        let asked: Vec<&Payout> = vec![&history[1], &history[2]];
        let s = Some(&setting);
        // Last year's payment counts for nothing; c (approved, not asked) counts.
        assert_eq!(held(s, None, &history, &asked, 2026), [false, true]);
        let mut sent = history.clone();
        sent[3].status = Rejected;
        assert_eq!(held(s, None, &sent, &asked, 2026), [false, false]);
        sent[0].paid_at = crate::timestamp::parse_datetime("2026-01-02T00:00:00Z");
        assert_eq!(held(s, None, &sent, &asked, 2026), [true, true]);
        let form = TaxForm {
            form_type: TaxFormType::W9,
            uploaded_at: Utc::now(),
            key: "k".into(),
        };
        assert_eq!(held(s, Some(&form), &sent, &asked, 2026), [false, false]);
    }
}
