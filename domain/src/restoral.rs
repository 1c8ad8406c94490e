//! Giving back a provider's reversal: a refund that failed (Stripe
//! `refund.failed`) or a chargeback reversed because the merchant won the
//! dispute (Paddle `chargeback_reverse`). The inverse of
//! a provider's reversal ([`Conversion::reverse`] by
//! [`ReversedBy::Provider`](crate::conversion_changes::ReversedBy)): the amount and commission reversed shrink, the
//! affiliate earns the cut again, and what had become a clawback is given
//! back as a positive adjustment netted into its next payout.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

use crate::conversion::{Adjustment, Conversion, ConversionStatus, Earning, HoldingPayout};

use crate::change::Event;
use crate::conversion_changes::Reversal;
use crate::error::Error;
use crate::event::EventType;
use crate::risk::RiskLevel;

impl Conversion {
    /// Restores `part` of what was reversed (all of it when `None`; never
    /// more than was reversed). `Ok(None)` when nothing is reversed. The
    /// commission reversed is recomputed from the amount still reversed, as
    /// a reversal computes it, so reversals and restorals add up exactly.
    ///
    /// A REVERSED conversion takes the status it would have: PAID or
    /// APPROVED in the payout that holds it (paid or not), else ON_HOLD
    /// when it carries a HIGH flag (the merchant reviews it again), else
    /// PENDING (the payout job approves it once `payableAt` has passed), or
    /// UNATTRIBUTED without an affiliate. A partly reversed one keeps its
    /// status. The event is `conversion.restored`.
    pub fn restore(
        &self,
        payout: HoldingPayout,
        part: Option<Decimal>,
        reason: String,
        now: DateTime<Utc>,
    ) -> Result<Option<Reversal>, Error> {
        let part = part
            .unwrap_or(self.reversed_amount)
            .min(self.reversed_amount);
        if part <= Decimal::ZERO {
            return Ok(None);
        }
        let mut after = self.clone();
        after.reversed_amount = self.reversed_amount - part;
        after.commission_reversed = match after.reversed_amount.is_zero() {
            true => Decimal::ZERO,
            false => {
                let share = self.commission * after.reversed_amount / self.amount;
                self.currency.round(share).min(self.commission)
            }
        };
        let cut = self.commission_reversed - after.commission_reversed;
        let unclawed = cut.min(self.commission_clawed_back);
        after.commission_clawed_back -= unclawed;
        if self.status == ConversionStatus::Reversed {
            after.status = self.restored_status(payout);
        }
        if after.reversed_amount.is_zero() {
            after.reversed_at = None;
        }
        after.reversal_reason = Some(reason);
        after.updated_at = now;
        let earning = Earning::of_cut(self, cut);
        let clawback = (unclawed > Decimal::ZERO && earning.is_some())
            .then(|| Adjustment::clawback(self, unclawed, now));
        let event = Event::new(EventType::ConversionRestored, &after, now);
        Ok(Some(Reversal {
            event,
            before: self.clone(),
            reversed: after,
            give_back: earning,
            clawback,
        }))
    }

    /// The status a fully reversed conversion goes back to.
    fn restored_status(&self, payout: HoldingPayout) -> ConversionStatus {
        match (&self.payout_id, payout) {
            (Some(_), HoldingPayout::Paid) => ConversionStatus::Paid,
            (Some(_), _) => ConversionStatus::Approved,
            (None, _) if self.affiliate_id.is_none() => ConversionStatus::Unattributed,
            (None, _) if self.risk.level == RiskLevel::High => ConversionStatus::OnHold,
            (None, _) => ConversionStatus::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion_changes::ReversedBy;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    /// A recorded conversion of 100.00 USD earning 10.00.
    fn recorded(status: &str, payout: Option<&str>, affiliate: Option<&str>) -> Conversion {
        let at = "2026-11-01T00:00:00Z";
        crate::conversion::sample::stored(serde_json::json!({
            "affiliateId": affiliate, "amount": "100.00", "commission": "10.00",
            "status": status, "payoutId": payout, "payableAt": "2026-12-01T00:00:00Z",
            "occurredAt": at, "createdAt": at, "updatedAt": at,
        }))
    }

    fn refunded(c: &Conversion, payout: HoldingPayout, part: Option<&str>) -> Conversion {
        let part = part.map(|p| p.parse().unwrap());
        let now = at("2026-11-10T00:00:00Z");
        c.reverse(ReversedBy::Provider, payout, part, None, now)
            .unwrap()
            .reversed
    }

    fn restored(c: &Conversion, payout: HoldingPayout, part: Option<&str>) -> Option<Reversal> {
        let part = part.map(|p| p.parse().unwrap());
        c.restore(
            payout,
            part,
            "stripe refund failed".into(),
            at("2026-11-11T00:00:00Z"),
        )
        .unwrap()
    }

    #[test]
    fn a_full_restoral_undoes_a_full_refund_back_to_the_status_it_would_have() {
        let cases = [
            (
                "PENDING",
                None,
                Some("aff_1"),
                HoldingPayout::None,
                "PENDING",
            ),
            (
                "APPROVED",
                None,
                Some("aff_1"),
                HoldingPayout::None,
                "PENDING",
            ),
            (
                "UNATTRIBUTED",
                None,
                None,
                HoldingPayout::None,
                "UNATTRIBUTED",
            ),
            (
                "APPROVED",
                Some("po_1"),
                Some("aff_1"),
                HoldingPayout::Unpaid,
                "APPROVED",
            ),
            (
                "PAID",
                Some("po_1"),
                Some("aff_1"),
                HoldingPayout::Paid,
                "PAID",
            ),
        ];
        for (status, payout, aff, holding, back) in cases {
            let c = recorded(status, payout, aff);
            let reversed = refunded(&c, holding, None);
            assert_eq!(reversed.status, ConversionStatus::Reversed, "{status}");
            let r = restored(&reversed, holding, None).unwrap();
            assert_eq!(r.before.status, ConversionStatus::Reversed);
            assert_eq!(r.reversed.status.as_str(), back, "{status}");
            assert!(r.reversed.reversed_amount.is_zero());
            assert!(r.reversed.commission_reversed.is_zero());
            assert!(r.reversed.commission_clawed_back.is_zero());
            assert_eq!(r.reversed.reversed_at, None);
            assert_eq!(r.event.event_type, EventType::ConversionRestored);
            let earned = r.give_back.as_ref().map(|e| e.amount);
            assert_eq!(earned, aff.map(|_| "10.00".parse().unwrap()), "{status}");
            let clawed = matches!(holding, HoldingPayout::None) || aff.is_none();
            assert_eq!(r.clawback.is_none(), clawed, "{status}");
            if let Some(a) = &r.clawback {
                assert_eq!(a.amount, "10.00".parse::<Decimal>().unwrap());
            }
        }
    }

    #[test]
    fn a_flagged_conversion_goes_back_on_hold() {
        let mut c = recorded("PENDING", None, Some("aff_1"));
        c.risk.level = RiskLevel::High;
        let r = restored(
            &refunded(&c, HoldingPayout::None, None),
            HoldingPayout::None,
            None,
        );
        assert_eq!(r.unwrap().reversed.status, ConversionStatus::OnHold);
    }

    #[test]
    fn partial_restorals_add_up_with_the_reversals_and_never_pass_them() {
        let c = recorded("PENDING", None, Some("aff_1"));
        let reversed = refunded(&c, HoldingPayout::None, Some("33.33"));
        assert_eq!(reversed.commission_reversed.to_string(), "3.33");
        let once = restored(&reversed, HoldingPayout::None, Some("13.33")).unwrap();
        assert_eq!(once.reversed.status, ConversionStatus::Pending);
        assert_eq!(once.reversed.reversed_amount.to_string(), "20.00");
        assert_eq!(once.reversed.commission_reversed.to_string(), "2.00");
        assert_eq!(once.give_back.unwrap().amount.to_string(), "1.33");
        // More than is reversed restores what is.
        let rest = restored(&once.reversed, HoldingPayout::None, Some("50.00")).unwrap();
        assert!(rest.reversed.reversed_amount.is_zero());
        assert_eq!(rest.give_back.unwrap().amount.to_string(), "2.00");
        assert!(restored(&rest.reversed, HoldingPayout::None, None).is_none());
        assert!(restored(&c, HoldingPayout::None, Some("1.00")).is_none());
    }

    #[test]
    fn a_merchant_reversal_restored_in_part_keeps_the_rest_reversed() {
        let c = recorded("PAID", Some("po_1"), Some("aff_1"));
        let now = at("2026-11-10T00:00:00Z");
        let part = Some("40.00".parse().unwrap());
        let reversed = c
            .reverse(ReversedBy::Merchant, HoldingPayout::Paid, part, None, now)
            .unwrap()
            .reversed;
        assert_eq!(reversed.commission_clawed_back.to_string(), "4.00");
        let r = restored(&reversed, HoldingPayout::Paid, Some("10.00")).unwrap();
        assert_eq!(r.reversed.status, ConversionStatus::Paid);
        assert_eq!(r.reversed.commission_clawed_back.to_string(), "3.00");
        assert_eq!(r.clawback.unwrap().amount.to_string(), "1.00");
    }
}
