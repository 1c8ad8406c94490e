//! A payout's work in chunks: the claim of its pool, the payment or release
//! of its conversions, each chunk counted on the payout, and what moves at
//! once when it is small enough for one transaction.

use crate::change::Event;
use crate::conversion::{Adjustment, Conversion};
use crate::payout::{Payout, PayoutStatus, PayoutWork};
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

/// What one claim chunk writes: each conversion as read and as it joins the
/// payout (the store conditions on the first), each adjustment as it joins,
/// and what the payout's claim counters grow by, in minor units.
#[derive(Debug, Clone, PartialEq)]
pub struct Claiming {
    pub conversions: Vec<(Conversion, Conversion)>,
    pub adjustments: Vec<Adjustment>,
    pub minor: i64,
    pub adjustment_minor: i64,
}

/// What one release writes: each conversion the payout still holds, as read
/// and as it returns to its pool; the adjustments giving back what refunds
/// clawed back while the payout held them; the payout's own adjustments as
/// they return.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Releasing {
    pub conversions: Vec<(Conversion, Conversion)>,
    pub given_back: Vec<Adjustment>,
    pub adjustments: Vec<Adjustment>,
}

impl Releasing {
    /// The members it moves (what a release counts).
    pub fn len(&self) -> usize {
        self.conversions.len() + self.adjustments.len()
    }

    /// Whether it moves nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A chunk of a payout's settle or release work, as [`Payout::chunk`]
/// plans it: the members it moves, the counter as read (the chunk applies
/// only while it still reads so), and the payout once the chunk is
/// committed, with its work over when the chunk ends it (the payout is then
/// written once less).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkChunk {
    work: PayoutWork,
    moved: usize,
    read: u64,
    after: Payout,
}

impl WorkChunk {
    /// The work it is a chunk of.
    pub fn work(&self) -> PayoutWork {
        self.work
    }

    /// How many members it moves.
    pub fn moved(&self) -> usize {
        self.moved
    }

    /// The work's counter as the chunk was planned on.
    pub fn read(&self) -> u64 {
        self.read
    }

    /// The payout with its work over, when this chunk ends it.
    pub fn ended(&self) -> Option<&Payout> {
        self.after.work.is_none().then_some(&self.after)
    }

    /// The payout once the chunk is committed: it is the payout's only
    /// writer while the counter reads as planned.
    pub fn into_after(self) -> Payout {
        self.after
    }
}

/// What a transition moves in its own transaction: nothing (any work left
/// follows in chunks), or every member of the payout.
#[derive(Debug, Default)]
pub enum AtOnce {
    /// Nothing: any work left follows in chunks.
    #[default]
    Nothing,
    /// Its conversions, `(before, after)`, paid.
    Settle(Vec<(Conversion, Conversion)>),
    /// Its members, back to the pool.
    Release(Releasing),
}

/// What a transition commits: the payout as it becomes, the status it
/// leaves, its event, and the members it moves with it.
#[derive(Debug)]
pub struct TransitionPlan {
    pub payout: Payout,
    pub from: PayoutStatus,
    /// Its events, in the order they happened.
    pub events: Vec<Event>,
    pub moves: AtOnce,
}

impl TransitionPlan {
    /// The plan of the transition from `from` to `payout`.
    pub fn new(payout: Payout, from: PayoutStatus, events: Vec<Event>, moves: AtOnce) -> Self {
        TransitionPlan {
            payout,
            from,
            events,
            moves,
        }
    }

    /// What it adds to the affiliate's `paid` total: a transition to PAID
    /// adds the amount.
    pub fn paid(&self) -> Option<Decimal> {
        (self.payout.status == PayoutStatus::Paid).then_some(self.payout.amount)
    }
}

impl Payout {
    /// The payout once its claim is complete: its figures are what was claimed.
    pub fn claimed(&self, now: DateTime<Utc>) -> Payout {
        let mut p = self.clone();
        let c = p.currency;
        p.conversion_count = p.progress.claimed;
        p.adjustment_total = c.from_minor(p.progress.claimed_adjustment_minor);
        p.amount = c.from_minor(p.progress.claimed_minor + p.progress.claimed_adjustment_minor);
        p.work = None;
        p.updated_at = now;
        p
    }

    /// One chunk of this payout's claim: each member read in the pool joins
    /// it, and its counters grow by their number and their amounts.
    pub fn claiming(&self, conversions: &[Conversion], adjustments: &[Adjustment]) -> Claiming {
        let c = self.currency;
        Claiming {
            conversions: conversions
                .iter()
                .map(|cv| (cv.clone(), cv.claimed(&self.id)))
                .collect(),
            adjustments: adjustments.iter().map(|a| a.claimed(&self.id)).collect(),
            minor: conversions
                .iter()
                .map(|cv| c.to_minor(cv.net_commission()))
                .sum(),
            adjustment_minor: adjustments.iter().map(|a| c.to_minor(a.amount)).sum(),
        }
    }

    /// The conversions read that this payout pays, each with its PAID form
    /// (one it no longer holds, or no longer APPROVED, is left out).
    pub fn paying(
        &self,
        conversions: Vec<Conversion>,
        now: DateTime<Utc>,
    ) -> Vec<(Conversion, Conversion)> {
        conversions
            .into_iter()
            .filter_map(|c| c.pay(&self.id, now).ok().map(|paid| (c, paid)))
            .collect()
    }

    /// The release of the members read that this payout still holds (one
    /// taken out meanwhile is left out): each back in its pool, a conversion
    /// with what refunds clawed back while held given back as an adjustment.
    pub fn releasing(
        &self,
        conversions: Vec<Conversion>,
        adjustments: Vec<Adjustment>,
        now: DateTime<Utc>,
    ) -> Releasing {
        let mine = |held: &Option<String>| held.as_deref() == Some(self.id.as_str());
        let mut r = Releasing::default();
        for cv in conversions.into_iter().filter(|c| mine(&c.payout_id)) {
            let (after, given_back) = cv.released(now);
            r.given_back.extend(given_back);
            r.conversions.push((cv, after));
        }
        r.adjustments = adjustments
            .iter()
            .filter(|a| mine(&a.payout_id))
            .map(Adjustment::released)
            .collect();
        r
    }

    /// The payout with its settle work done by the transition that leaves
    /// it, when `paid` conversions (paid in that same transaction) are all
    /// it holds; `None` otherwise (the work then runs in chunks).
    pub fn settled_at_once(&self, paid: usize) -> Option<Payout> {
        self.done_at_once(PayoutWork::Settle, paid)
    }

    /// The payout with its release work done by the transition that leaves
    /// it, when the members `r` releases in that same transaction are all it
    /// holds, of each kind; `None` otherwise (chunks then).
    pub fn released_at_once(&self, r: &Releasing) -> Option<Payout> {
        // Each kind whole: the one counter alone would let one stand for the other.
        let whole = u64::try_from(r.adjustments.len()).ok()? == self.progress.claimed_adjustments;
        self.done_at_once(PayoutWork::Release, r.len())
            .filter(|_| whole)
    }

    /// The payout after a chunk of its `work` moved `n` more members: that
    /// work's counter grown (`None` for a claim, counted as it joins by
    /// [`Payout::claiming`]). [`Payout::work_done`] then judges whether that
    /// chunk ends the work.
    pub fn counted(&self, work: PayoutWork, n: usize) -> Option<Payout> {
        let grown = self.done_count(work)?.checked_add(u64::try_from(n).ok()?)?;
        let mut p = self.clone();
        match work {
            PayoutWork::Settle => p.progress.settled = grown,
            PayoutWork::Release => p.progress.released = grown,
            PayoutWork::Claim => return None,
        }
        Some(p)
    }

    /// A chunk of this payout's `work` that moves `moved` more members at
    /// `now`, and whether it ends the work (`None` for a claim, counted as it
    /// joins, or when the counter would overflow).
    pub fn chunk(&self, work: PayoutWork, moved: usize, now: DateTime<Utc>) -> Option<WorkChunk> {
        let counted = self.counted(work, moved)?;
        let after = match counted.work_done() {
            true => counted.work_ended(now),
            false => counted,
        };
        Some(WorkChunk {
            work,
            moved,
            read: self.done_count(work)?,
            after,
        })
    }

    /// The payout once its settle or release work is over, at `now`.
    pub fn work_ended(&self, now: DateTime<Utc>) -> Payout {
        let mut p = self.clone();
        p.work = None;
        p.updated_at = now;
        p
    }

    /// How many members `work` has moved so far (`None` for a claim).
    fn done_count(&self, work: PayoutWork) -> Option<u64> {
        match work {
            PayoutWork::Settle => Some(self.progress.settled),
            PayoutWork::Release => Some(self.progress.released),
            PayoutWork::Claim => None,
        }
    }

    /// How many members `work` moves in all (`None` for a claim).
    fn work_total(&self, work: PayoutWork) -> Option<u64> {
        match work {
            PayoutWork::Settle => Some(self.conversion_count),
            PayoutWork::Release => Some(self.conversion_count + self.progress.claimed_adjustments),
            PayoutWork::Claim => None,
        }
    }

    /// The payout with `work` done by one transaction that moves `n`
    /// members, when none of it was done before and they are exactly all
    /// of it (more than it holds means the counters drifted: chunks then).
    fn done_at_once(&self, work: PayoutWork, n: usize) -> Option<Payout> {
        let fresh = self.work == Some(work) && self.done_count(work)? == 0;
        if !fresh || u64::try_from(n).ok()? != self.work_total(work)? {
            return None;
        }
        let mut p = self.counted(work, n)?;
        p.work = None;
        Some(p)
    }

    /// Whether its outstanding work is done, by what the chunks counted.
    pub fn work_done(&self) -> bool {
        match self.work {
            None => true,
            Some(w) => match (self.done_count(w), self.work_total(w)) {
                (Some(done), Some(total)) => done >= total,
                _ => false,
            },
        }
    }
}
