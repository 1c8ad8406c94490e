//! What payout transitions committed together add to their affiliates'
//! `paid` totals, summed per affiliate and currency: one write per
//! affiliate's totals item, one attribute per currency.

use std::collections::BTreeMap;

use crate::affiliate::Totals;
use crate::payout_work::TransitionPlan;

/// The `paid` totals `plans` add ([`TransitionPlan::paid`]), per affiliate
/// and currency, exact; an affiliate none of them pays is left out.
pub fn paid_totals(plans: &[TransitionPlan]) -> BTreeMap<&str, Totals> {
    let mut totals: BTreeMap<&str, Totals> = BTreeMap::new();
    for plan in plans {
        if let Some(amount) = plan.paid() {
            let payout = &plan.payout;
            *totals
                .entry(payout.affiliate_id.as_str())
                .or_default()
                .entry(payout.currency)
                .or_default() += amount;
        }
    }
    totals
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money::Currency;
    use crate::payout::tests::payout;
    use crate::payout::PayoutStatus;
    use crate::payout_work::AtOnce;
    use rust_decimal::Decimal;

    fn plan(affiliate: &str, currency: &str, amount: i64, status: PayoutStatus) -> TransitionPlan {
        let mut p = payout(status);
        p.affiliate_id = affiliate.into();
        p.currency = Currency::parse("currency", currency).unwrap();
        p.amount = Decimal::new(amount, 2);
        TransitionPlan::new(p, PayoutStatus::Processing, Vec::new(), AtOnce::Nothing)
    }

    #[test]
    fn paid_payouts_add_up_per_affiliate_and_currency() {
        use PayoutStatus::*;
        let plans = [
            plan("aff_1", "USD", 1001, Paid),
            plan("aff_1", "USD", 2002, Paid),
            plan("aff_1", "EUR", 500, Paid),
            plan("aff_2", "USD", 1, Paid),
            plan("aff_2", "USD", 9900, Rejected),
            plan("aff_3", "USD", 700, Approved),
        ];
        let totals = paid_totals(&plans);
        let usd = Currency::parse("currency", "USD").unwrap();
        let eur = Currency::parse("currency", "EUR").unwrap();
        assert_eq!(totals.len(), 2, "aff_3 is paid nothing");
        assert_eq!(totals["aff_1"][&usd].to_string(), "30.03");
        assert_eq!(totals["aff_1"][&eur].to_string(), "5.00");
        assert_eq!(totals["aff_2"][&usd].to_string(), "0.01");
        assert_eq!(totals["aff_2"].len(), 1);
    }
}
