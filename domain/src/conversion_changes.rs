//! A conversion's changes that record events: a hold released, a
//! reversal (the merchant's or a provider's refund). Kept apart from the
//! record (`conversion`), which names no event.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

use crate::change::Event;
use crate::conversion::{Adjustment, Conversion, ConversionStatus, Earning, HoldingPayout};
use crate::error::Error;
use crate::event::EventType;

/// A hold ended: the conversion before and after, and the events to record.
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    pub before: Conversion,
    pub after: Conversion,
    pub events: Vec<Event>,
}

/// A conversion's reversal: the conversion after it, the status it left
/// (its rollups move from there), the commission its affiliate gives back
/// and, for a paid conversion, the clawback netted into the next payout.
#[derive(Debug, Clone, PartialEq)]
pub struct Reversal {
    pub reversed: Conversion,
    /// The conversion as it was read.
    pub before: Conversion,
    pub give_back: Option<Earning>,
    pub clawback: Option<Adjustment>,
    /// `conversion.reversed`, recorded with the change.
    pub event: Event,
}

/// Who asks for a reversal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReversedBy {
    /// The merchant's call: refused while an unpaid payout holds it.
    Merchant,
    /// A payment provider's refund or lost dispute, which cannot be refused:
    /// a conversion an unpaid payout holds keeps its place there (the payout
    /// pays what it claimed) and the cut becomes a clawback netted against
    /// the affiliate's next payout, as for a paid one. Should that payout be
    /// released instead, [`Conversion::released`] gives the clawback back.
    Provider,
}

impl Conversion {
    /// `conversion.approved` of a conversion just approved (by its release,
    /// or by the payout job once its hold is over).
    pub fn approved_event(&self, now: DateTime<Utc>) -> Event {
        Event::new(EventType::ConversionApproved, self, now)
    }

    /// Ends a hold: ON_HOLD -> PENDING, or APPROVED when its hold period is
    /// over at `now` (409 from any other status). Its flags stay as history.
    /// The events: `conversion.released`, and `conversion.approved` when it
    /// is payable at once.
    pub fn release(&self, now: DateTime<Utc>) -> Result<Release, Error> {
        if self.status != ConversionStatus::OnHold || self.payout_id.is_some() {
            return Err(self.wrong_state("release"));
        }
        let after = match self.payable_at <= now {
            true => self.moved_to(ConversionStatus::Approved, now),
            false => self.moved_to(ConversionStatus::Pending, now),
        };
        let mut events = vec![Event::new(EventType::ConversionReleased, &after, now)];
        if after.status == ConversionStatus::Approved {
            events.push(after.approved_event(now));
        }
        Ok(Release {
            before: self.clone(),
            after,
            events,
        })
    }

    /// Reverses (refunds) a conversion at the request of `by`, all of it or
    /// `part` of its amount; `payout` says whether the payout holding it,
    /// when one does, is paid.
    ///
    /// - `part` must be above 0, at most what is left to reverse
    ///   (`amount - reversedAmount`) and exact to the currency's minor unit
    ///   (400 otherwise). Without it, everything left is reversed.
    /// - The commission is cut in proportion: the total given back is
    ///   `commission * reversedAmount / amount`, rounded half-even to the
    ///   minor unit, and all of it once the whole amount is reversed, so
    ///   partial cuts never add up to more (or less) than the commission.
    /// - Fully reversed: REVERSED. Partly: the status stays.
    /// - In no payout and PENDING, APPROVED or UNATTRIBUTED: the affiliate
    ///   gives the cut back (`earned` drops).
    /// - PAID in a PAID payout: `earned` drops, `paid` stays, and a negative
    ///   adjustment (clawback) of the cut is netted against the affiliate's
    ///   next payout in that currency.
    /// - In an open payout (or one still settling or releasing): 409 naming it
    ///   (the merchant's; see [`ReversedBy::Provider`]).
    /// - Anything else (REVERSED, ...): 409.
    pub fn reverse(
        &self,
        by: ReversedBy,
        payout: HoldingPayout,
        part: Option<Decimal>,
        reason: Option<String>,
        now: DateTime<Utc>,
    ) -> Result<Reversal, Error> {
        use ConversionStatus::{Approved, Paid};
        let clawback = match (&self.payout_id, payout, self.status, by) {
            (None, _, st, _) if st.reversible() => false,
            (Some(_), HoldingPayout::Paid, Paid, _) => true,
            (
                Some(_),
                HoldingPayout::Paid | HoldingPayout::Unpaid,
                Approved | Paid,
                ReversedBy::Provider,
            ) => true,
            (Some(po), _, Approved | Paid, _) => {
                return Err(Error::InPayout {
                    current: self.status.as_str().to_string(),
                    payout_id: po.clone(),
                })
            }
            _ => return Err(self.wrong_state("reverse")),
        };
        let mut reversed = self.reversed_part(part, now)?;
        let cut = reversed.commission_reversed - self.commission_reversed;
        let give_back = Earning::of_cut(self, -cut);
        let clawback = give_back
            .as_ref()
            .filter(|_| clawback)
            .map(|e| Adjustment::clawback(self, e.amount, now));
        if clawback.is_some() {
            reversed.commission_clawed_back += cut;
        }
        reversed.reversal_reason = reason;
        let event = Event::new(EventType::ConversionReversed, &reversed, now);
        Ok(Reversal {
            event,
            before: self.clone(),
            reversed,
            give_back,
            clawback,
        })
    }
}
