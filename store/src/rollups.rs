//! Conversion rollups: revenue, commission and count per (day, currency,
//! status, campaign), kept up to date with ADD in the same transaction as
//! every conversion write, so the summary reads a bounded number of small
//! items however many conversions there are.
//!
//! One item per (month, currency, status, campaign) holds each day's figures:
//! `pk = keys::rollups(tenant)` (or the affiliate's partition),
//! `sk = M#<yyyy-mm>#<currency>#<status>#<campaignId or ->`, number
//! attributes `r<dd>`, `c<dd>`, `n<dd>` (revenue, commission, count of day
//! `dd`; exact decimals: DynamoDB numbers, written as decimal strings, never
//! through binary floats) and `campaignId` for the campaign filter. A
//! conversion write is one update per partition; a month's figures are the
//! sum of its days.
//!
//! Items written before the month item held the days are still read and add
//! up with it: day items `D#<yyyy-mm-dd>#…` and the month totals `revenue`,
//! `commission`, `count` on the `M#` items (which counted the same
//! conversions as the day items, so a day window reads the day items and a
//! month window the totals).
//!
//! A status change (reverse here; approval and payment in the payout flow)
//! moves the figures between status items with [`moved_many`] in the same
//! transaction as the change.

use std::collections::BTreeMap;
use std::str::FromStr;

use chrono::{Datelike, NaiveDate};
use rust_decimal::Decimal;

use crate::attrs;
use crate::keys;
use crate::months::{self, WindowItems};
use crate::tx::Tx;
use crate::update::UpdateExpr;
use crate::{number_value, string_of, string_value, Item, Store};
use domain::conversion::{Conversion, ConversionStatus};
use domain::error::{Error, Result};
use domain::money::Currency;
use domain::status::Status;
use domain::summary::{RollupRow, Window};
use domain::tenant::Tenant;

/// Placeholder of the campaign segment for conversions without a campaign.
const NO_CAMPAIGN: &str = "-";
/// The month totals of items written before the month item held the days.
const LEGACY_TOTALS: [&str; 3] = ["revenue", "commission", attrs::COUNT];

/// The sort key of the month item counting `c` under `status`.
fn month_key(c: &Conversion, status: ConversionStatus) -> String {
    format!(
        "M#{}#{}#{}#{}",
        c.occurred_at.format("%Y-%m"),
        c.currency.code(),
        status.name(),
        c.campaign_id.as_deref().unwrap_or(NO_CAMPAIGN)
    )
}

/// The revenue, commission and count attributes of day `day` of a month item.
fn day_attributes(day: u32) -> [String; 3] {
    [
        format!("r{day:02}"),
        format!("c{day:02}"),
        format!("n{day:02}"),
    ]
}

fn negate(d: Decimal, sign: i64) -> Decimal {
    if sign < 0 {
        -d
    } else {
        d
    }
}

/// Revenue, commission and count added to a rollup.
#[derive(Default)]
struct Figures {
    revenue: Decimal,
    commission: Decimal,
    count: i64,
}

impl Figures {
    /// `c`'s figures, added (`sign` 1) or removed (`sign` -1).
    fn of(c: &Conversion, sign: i64) -> Self {
        let (revenue, commission) = c.rollup_figures();
        Figures {
            revenue: negate(revenue, sign),
            commission: negate(commission, sign),
            count: sign,
        }
    }

    fn plus(&mut self, f: &Figures) {
        self.revenue += f.revenue;
        self.commission += f.commission;
        self.count += f.count;
    }

    fn is_zero(&self) -> bool {
        self.count == 0 && self.revenue.is_zero() && self.commission.is_zero()
    }
}

/// The partitions a conversion is counted in: its tenant's, and its
/// affiliate's when it has one.
fn partitions(tenant: &Tenant, c: &Conversion) -> Vec<String> {
    let mut pks = vec![keys::rollups(tenant)];
    pks.extend(
        c.affiliate_id
            .as_deref()
            .map(|a| keys::affiliate_rollups(tenant, a)),
    );
    pks
}

/// A rollup item's key: partition and sort key.
type ItemKey = (String, String);

/// What a transaction adds to one month item: its campaign, and the
/// figures per day of the month.
type MonthSums = (Option<String>, BTreeMap<u32, Figures>);

/// What a transaction adds to rollup items.
#[derive(Default)]
struct Sums(BTreeMap<ItemKey, MonthSums>);

impl Sums {
    /// Counts `f` for `c`'s day under `status`, in each of its partitions.
    fn add(&mut self, tenant: &Tenant, c: &Conversion, status: ConversionStatus, f: &Figures) {
        for pk in partitions(tenant, c) {
            let (_, days) = self
                .0
                .entry((pk, month_key(c, status)))
                .or_insert_with(|| (c.campaign_id.clone(), BTreeMap::new()));
            days.entry(c.occurred_at.day()).or_default().plus(f);
        }
    }

    /// One update per item (a transaction may not touch an item twice),
    /// none for an item whose figures cancel out.
    fn write<R: Copy>(self, tx: &mut Tx<R>, role: R) {
        for ((pk, sk), (campaign, days)) in self.0 {
            let mut update = UpdateExpr::new();
            let mut changed = false;
            for (day, f) in days.iter().filter(|(_, f)| !f.is_zero()) {
                let [r, c, n] = day_attributes(*day);
                update = update
                    .add(&r, number_value(f.revenue))
                    .add(&c, number_value(f.commission))
                    .add(&n, number_value(f.count));
                changed = true;
            }
            if !changed {
                continue;
            }
            if let Some(cmp) = campaign {
                update = update.set(attrs::CAMPAIGN_ID, string_value(cmp));
            }
            tx.update(role, &pk, &sk, &update);
        }
    }
}

/// Counts a new conversion in its rollups (one action, two when attributed).
pub fn record<R: Copy>(tx: &mut Tx<R>, role: R, tenant: &Tenant, c: &Conversion) {
    let mut sums = Sums::default();
    sums.add(tenant, c, c.status, &Figures::of(c, 1));
    sums.write(tx, role);
}

/// Backfills (seeding, rebuilds): counts `count` conversions of `sample`'s
/// day, currency, status and campaign whose amounts and commissions sum to
/// `revenue` and `commission` (one action).
pub fn backfill<R: Copy>(
    tx: &mut Tx<R>,
    role: R,
    tenant: &Tenant,
    sample: &Conversion,
    revenue: Decimal,
    commission: Decimal,
    count: i64,
) {
    let figures = Figures {
        revenue,
        commission,
        count,
    };
    let mut sums = Sums::default();
    sums.add(tenant, sample, sample.status, &figures);
    sums.write(tx, role);
}

/// Moves the figures of many status changes `(before, after)` at once, one
/// update per rollup item.
pub fn moved_many<R: Copy>(
    tx: &mut Tx<R>,
    role: R,
    tenant: &Tenant,
    changes: &[(Conversion, Conversion)],
) {
    let mut sums = Sums::default();
    for (before, after) in changes {
        sums.add(tenant, before, before.status, &Figures::of(before, -1));
        sums.add(tenant, after, after.status, &Figures::of(after, 1));
    }
    sums.write(tx, role);
}

/// A number attribute as a decimal, zero when absent.
fn decimal(item: &Item, name: &str) -> Result<Decimal> {
    let Some(raw) = item.get(name).and_then(|v| v.as_n().ok()) else {
        return Ok(Decimal::ZERO);
    };
    Decimal::from_str(raw)
        .or_else(|_| Decimal::from_scientific(raw))
        .map_err(|e| Error::internal(format!("rollup {name} {raw:?}: {e}")))
}

/// Adds the figures named `[revenue, commission, count]` of an item.
fn add_named(f: &mut Figures, item: &Item, names: &[impl AsRef<str>; 3]) -> Result<()> {
    let count = decimal(item, names[2].as_ref())?;
    f.plus(&Figures {
        revenue: decimal(item, names[0].as_ref())?,
        commission: decimal(item, names[1].as_ref())?,
        count: count
            .try_into()
            .map_err(|_| Error::internal("rollup count is not an integer"))?,
    });
    Ok(())
}

/// Reads one rollup item back into the figures `w` counts, one row per day:
/// a day item's whole on its day; a month item's days within the window, or,
/// for `all`, its whole (with the month totals written before the month item
/// held the days) on the month's first day.
fn rows(item: &Item, w: &WindowItems) -> Result<Vec<RollupRow>> {
    let sk = string_of(item, attrs::SK).unwrap_or_default();
    let parts: Vec<&str> = sk.split('#').collect();
    let bad = || Error::internal(format!("malformed rollup key {sk:?}"));
    let [kind, date, currency, status, campaign] = parts[..] else {
        return Err(bad());
    };
    let to_row = |day, f| to_row(day, currency, status, campaign, f).ok_or_else(bad);
    match kind {
        "D" => {
            let day = NaiveDate::parse_from_str(date, "%Y-%m-%d").map_err(|_| bad())?;
            let mut f = Figures::default();
            add_named(&mut f, item, &LEGACY_TOTALS)?;
            Ok(vec![to_row(day, f)?])
        }
        "M" if w.range.is_none() => {
            let first =
                NaiveDate::parse_from_str(&format!("{date}-01"), "%Y-%m-%d").map_err(|_| bad())?;
            let mut f = Figures::default();
            add_named(&mut f, item, &LEGACY_TOTALS)?;
            for day in w.days_of(item).ok_or_else(bad)? {
                add_named(&mut f, item, &day_attributes(day.day()))?;
            }
            Ok(vec![to_row(first, f)?])
        }
        "M" => {
            let mut found = Vec::new();
            for day in w.days_of(item).ok_or_else(bad)? {
                let mut f = Figures::default();
                add_named(&mut f, item, &day_attributes(day.day()))?;
                if !f.is_zero() {
                    found.push(to_row(day, f)?);
                }
            }
            Ok(found)
        }
        _ => Err(bad()),
    }
}

fn to_row(
    day: NaiveDate,
    currency: &str,
    status: &str,
    campaign: &str,
    f: Figures,
) -> Option<RollupRow> {
    Some(RollupRow {
        day,
        currency: Currency::parse("currency", currency).ok()?,
        status: ConversionStatus::parse(status)?,
        campaign_id: (campaign != NO_CAMPAIGN).then(|| campaign.to_string()),
        revenue: f.revenue,
        commission: f.commission,
        count: f.count,
    })
}

/// The rollup rows of a window, optionally of one campaign (see
/// [`read_partition`]).
pub async fn read(
    store: &Store,
    tenant: &Tenant,
    window: &Window,
    campaign_id: Option<&str>,
) -> Result<Vec<RollupRow>> {
    read_partition(store, &keys::rollups(tenant), window, campaign_id).await
}

/// The rollup rows of one affiliate in a window.
pub async fn read_affiliate(
    store: &Store,
    tenant: &Tenant,
    affiliate_id: &str,
    window: &Window,
) -> Result<Vec<RollupRow>> {
    let pk = keys::affiliate_rollups(tenant, affiliate_id);
    read_partition(store, &pk, window, None).await
}

/// The rollup rows of a window in one partition (see `store::months`).
async fn read_partition(
    store: &Store,
    pk: &str,
    window: &Window,
    campaign_id: Option<&str>,
) -> Result<Vec<RollupRow>> {
    let filter = campaign_id.map(|c| (attrs::CAMPAIGN_ID, string_value(c)));
    let w = months::read(store, pk, window, filter).await?;
    let mut found = Vec::new();
    for item in w.months.iter().chain(&w.days) {
        found.extend(rows(item, &w)?);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn item(sk: &str, numbers: &[(&str, &str)]) -> Item {
        let mut item: Item = HashMap::from([
            ("pk".to_string(), string_value("ROLLUP#acct_1#test")),
            ("sk".to_string(), string_value(sk)),
        ]);
        for (name, n) in numbers {
            item.insert(name.to_string(), number_value(*n));
        }
        item
    }

    fn day(d: &str) -> NaiveDate {
        NaiveDate::parse_from_str(d, "%Y-%m-%d").unwrap()
    }

    /// A window of `first..=last`, or of every day.
    fn counted(days: Option<(&str, &str)>) -> WindowItems {
        WindowItems {
            months: Vec::new(),
            days: Vec::new(),
            range: days.map(|(first, last)| day(first)..=day(last)),
        }
    }

    #[test]
    fn day_items_written_before_read_back_whole() {
        let old = item(
            "D#2026-01-31#USD#PENDING#cmp_1",
            &[("revenue", "20.29"), ("commission", "2.03"), ("count", "3")],
        );
        for counted in [counted(None), counted(Some(("2026-01-02", "2026-01-31")))] {
            let [r] = &rows(&old, &counted).unwrap()[..] else {
                panic!("one row")
            };
            assert_eq!(r.day, day("2026-01-31"));
            assert_eq!(r.currency.code(), "USD");
            assert_eq!(r.status, ConversionStatus::Pending);
            assert_eq!(r.campaign_id.as_deref(), Some("cmp_1"));
            assert_eq!((r.revenue.to_string(), r.count), ("20.29".into(), 3));
        }
    }

    #[test]
    fn a_month_item_counts_the_window_s_days_or_all_with_the_old_totals() {
        let month = item(
            "M#2026-01#EUR#APPROVED#-",
            &[
                ("revenue", "100"),
                ("commission", "10"),
                ("count", "4"),
                ("r01", "5.5"),
                ("c01", "0.55"),
                ("n01", "1"),
                ("r31", "-2"),
                ("c31", "-0.2"),
                ("n31", "-1"),
            ],
        );
        let [all] = &rows(&month, &counted(None)).unwrap()[..] else {
            panic!("one row")
        };
        assert_eq!(all.campaign_id, None);
        assert_eq!(all.day, day("2026-01-01"));
        assert_eq!(
            (
                all.revenue.to_string(),
                all.commission.to_string(),
                all.count
            ),
            ("103.5".into(), "10.35".into(), 4)
        );
        let [first] = &rows(&month, &counted(Some(("2025-12-20", "2026-01-30")))).unwrap()[..]
        else {
            panic!("one row")
        };
        assert_eq!((first.revenue.to_string(), first.count), ("5.5".into(), 1));
        assert_eq!(first.day, day("2026-01-01"));
        let [last] = &rows(&month, &counted(Some(("2026-01-02", "2026-02-03")))).unwrap()[..]
        else {
            panic!("one row")
        };
        assert_eq!(
            (last.commission.to_string(), last.count),
            ("-0.2".into(), -1)
        );
        assert_eq!(last.day, day("2026-01-31"));
        let both = rows(&month, &counted(Some(("2026-01-01", "2026-01-31")))).unwrap();
        assert_eq!(both.len(), 2);
    }

    #[test]
    fn malformed_keys_are_refused() {
        for sk in [
            "M#2026-01#EUR",
            "M#2026-13#EUR#PENDING#-",
            "X#2026-01#EUR#PENDING#-",
        ] {
            assert!(rows(&item(sk, &[]), &counted(None)).is_err(), "{sk}");
        }
    }
}
