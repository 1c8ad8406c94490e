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
//!
//! The store adds no money up: what a write counts is the domain's
//! (`RollupRow::of`, netted per day by `summary::net`, as a transaction may
//! touch an item once), and the rows read come back one per figures stored,
//! for the summary to add up (`summary::summarise`).

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
use domain::summary::{self, RollupRow, Window};
use domain::tenant::Tenant;

/// Placeholder of the campaign segment for conversions without a campaign.
const NO_CAMPAIGN: &str = "-";
/// The month totals of items written before the month item held the days.
const LEGACY_TOTALS: [&str; 3] = ["revenue", "commission", attrs::COUNT];

/// The sort key of the month item counting `row`.
fn month_key(row: &RollupRow) -> String {
    format!(
        "M#{}#{}#{}#{}",
        row.day.format("%Y-%m"),
        row.currency.code(),
        row.status.name(),
        row.campaign_id.as_deref().unwrap_or(NO_CAMPAIGN)
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

/// The partitions a conversion is counted in: its tenant's, and its
/// affiliate's when it has one.
fn partitions(tenant: &Tenant, affiliate_id: Option<&str>) -> Vec<String> {
    let mut pks = vec![keys::rollups(tenant)];
    pks.extend(affiliate_id.map(|a| keys::affiliate_rollups(tenant, a)));
    pks
}

/// A rollup item's key: partition and sort key.
type ItemKey = (String, String);

/// Writes what `counted` (each row with its conversion's affiliate) changes
/// in the rollups: the rows of each partition netted by the domain
/// (`summary::net`: a transaction may touch an item once, so the changes of
/// one item's day are one figure), then one ADD update per month item with
/// a day that changed, none for an item whose figures cancel out.
fn write<R: Copy>(
    tx: &mut Tx<R>,
    role: R,
    tenant: &Tenant,
    counted: Vec<(Option<&str>, RollupRow)>,
) {
    let mut by_partition: BTreeMap<String, Vec<RollupRow>> = BTreeMap::new();
    for (affiliate_id, row) in counted {
        for pk in partitions(tenant, affiliate_id) {
            by_partition.entry(pk).or_default().push(row.clone());
        }
    }
    let mut by_item: BTreeMap<ItemKey, Vec<RollupRow>> = BTreeMap::new();
    for (pk, rows) in by_partition {
        for row in summary::net(rows) {
            let sk = month_key(&row);
            by_item.entry((pk.clone(), sk)).or_default().push(row);
        }
    }
    for ((pk, sk), days) in by_item {
        let mut update = UpdateExpr::new();
        for row in &days {
            let [r, c, n] = day_attributes(row.day.day());
            update = update
                .add(&r, number_value(row.revenue))
                .add(&c, number_value(row.commission))
                .add(&n, number_value(row.count));
        }
        if let Some(cmp) = days.first().and_then(|row| row.campaign_id.as_deref()) {
            update = update.set(attrs::CAMPAIGN_ID, string_value(cmp));
        }
        tx.update(role, &pk, &sk, &update);
    }
}

/// Counts a new conversion in its rollups (one action, two when attributed).
pub fn record<R: Copy>(tx: &mut Tx<R>, role: R, tenant: &Tenant, c: &Conversion) {
    let counted = vec![(c.affiliate_id.as_deref(), RollupRow::of(c))];
    write(tx, role, tenant, counted);
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
    let row = RollupRow {
        revenue,
        commission,
        count,
        ..RollupRow::of(sample)
    };
    write(
        tx,
        role,
        tenant,
        vec![(sample.affiliate_id.as_deref(), row)],
    );
}

/// Moves the figures of many status changes `(before, after)` at once, one
/// update per rollup item: each `before` taken out, each `after` counted.
pub fn moved_many<R: Copy>(
    tx: &mut Tx<R>,
    role: R,
    tenant: &Tenant,
    changes: &[(Conversion, Conversion)],
) {
    let counted = changes
        .iter()
        .flat_map(|(before, after)| {
            [
                (
                    before.affiliate_id.as_deref(),
                    RollupRow::of(before).taken_out(),
                ),
                (after.affiliate_id.as_deref(), RollupRow::of(after)),
            ]
        })
        .collect();
    write(tx, role, tenant, counted);
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

/// Reads one rollup item back into the rows `w` counts, one per figures it
/// holds, not added up (the summary adds rows up, in the domain): a day
/// item's on its day; a month item's days within the window or, for `all`,
/// each of its days and the month totals written before the month item held
/// the days, all dated the month's first day. A month item's figures that
/// count nothing give no row.
fn rows(item: &Item, w: &WindowItems) -> Result<Vec<RollupRow>> {
    let sk = string_of(item, attrs::SK).unwrap_or_default();
    let parts: Vec<&str> = sk.split('#').collect();
    let bad = || Error::internal(format!("malformed rollup key {sk:?}"));
    let [kind, date, currency, status, campaign] = parts[..] else {
        return Err(bad());
    };
    let row = |day, names: &[&str; 3]| -> Result<RollupRow> {
        Ok(RollupRow {
            day,
            currency: Currency::parse("currency", currency).map_err(|_| bad())?,
            status: ConversionStatus::parse(status).ok_or_else(bad)?,
            campaign_id: (campaign != NO_CAMPAIGN).then(|| campaign.to_string()),
            revenue: decimal(item, names[0])?,
            commission: decimal(item, names[1])?,
            count: decimal(item, names[2])?
                .try_into()
                .map_err(|_| Error::internal("rollup count is not an integer"))?,
        })
    };
    match kind {
        "D" => {
            let day = NaiveDate::parse_from_str(date, "%Y-%m-%d").map_err(|_| bad())?;
            Ok(vec![row(day, &LEGACY_TOTALS)?])
        }
        "M" => {
            let all = w.range.is_none();
            let mut found = Vec::new();
            if all {
                let first = NaiveDate::parse_from_str(&format!("{date}-01"), "%Y-%m-%d")
                    .map_err(|_| bad())?;
                found.push(row(first, &LEGACY_TOTALS)?);
            }
            for day in w.days_of(item).ok_or_else(bad)? {
                let names = day_attributes(day.day());
                let dated = if all {
                    day.with_day(1).unwrap_or(day)
                } else {
                    day
                };
                found.push(row(dated, &names.each_ref().map(String::as_str))?);
            }
            found.retain(|r| !r.is_zero());
            Ok(found)
        }
        _ => Err(bad()),
    }
}

/// The rollup rows of a window, optionally of one campaign (see
/// `read_partition`).
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
        // For `all`: the old totals and each day, dated the month's first
        // day, for the summary to add up.
        let all = rows(&month, &counted(None)).unwrap();
        assert_eq!(all.len(), 3);
        assert!(all
            .iter()
            .all(|r| r.day == day("2026-01-01") && r.campaign_id.is_none()));
        let [sum] = &summary::net(all)[..] else {
            panic!("one key")
        };
        assert_eq!(
            (
                sum.revenue.to_string(),
                sum.commission.to_string(),
                sum.count
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

    /// A conversion of 49.99 USD earning 5.00 on 2 January.
    fn conversion(id: &str, status: &str, affiliate: Option<&str>) -> Conversion {
        domain::conversion::sample::stored(serde_json::json!({
            "id": id, "externalId": id, "status": status, "affiliateId": affiliate,
        }))
    }

    /// Each update's key and the numbers it adds, in order.
    fn updates(tx: &Tx<()>) -> Vec<(String, String, Vec<String>)> {
        tx.actions()
            .iter()
            .map(|(_, a)| {
                let u = a.update().expect("an update");
                let key = |name| u.key()[name].as_s().unwrap().clone();
                let mut added: Vec<String> = u
                    .expression_attribute_values()
                    .into_iter()
                    .flatten()
                    .filter_map(|(_, v)| v.as_n().ok().cloned())
                    .collect();
                added.sort();
                (key("pk"), key("sk"), added)
            })
            .collect()
    }

    #[test]
    fn a_write_touches_each_item_once_with_the_netted_figures() {
        let t = Tenant::new("acct_1", domain::tenant::Mode::Test);
        let approved = |c: &Conversion| Conversion {
            status: ConversionStatus::Approved,
            ..c.clone()
        };
        let (a, b) = (
            conversion("cnv_a", "PENDING", Some("aff_1")),
            conversion("cnv_b", "PENDING", Some("aff_1")),
        );
        let mut tx = Tx::on("t");
        moved_many(
            &mut tx,
            (),
            &t,
            &[(a.clone(), approved(&a)), (b.clone(), approved(&b))],
        );
        let sum = |n: &str, r: &str, c: &str| {
            let mut v = vec![n.to_string(), r.to_string(), c.to_string()];
            v.sort();
            v
        };
        let (tenant_pk, affiliate_pk) = (keys::rollups(&t), keys::affiliate_rollups(&t, "aff_1"));
        // Each of the two partitions: two more APPROVED, two fewer PENDING.
        let mut expected = [tenant_pk, affiliate_pk]
            .into_iter()
            .flat_map(|pk| {
                [
                    (
                        pk.clone(),
                        "M#2026-01#USD#APPROVED#cmp_1".to_string(),
                        sum("2", "99.98", "10.00"),
                    ),
                    (
                        pk,
                        "M#2026-01#USD#PENDING#cmp_1".to_string(),
                        sum("-2", "-99.98", "-10.00"),
                    ),
                ]
            })
            .collect::<Vec<_>>();
        expected.sort();
        let mut got = updates(&tx);
        got.sort();
        assert_eq!(got, expected);

        // A late attribution: out of the tenant's UNATTRIBUTED item, into
        // the tenant's and the affiliate's PENDING items.
        let before = Conversion {
            status: ConversionStatus::Unattributed,
            affiliate_id: None,
            ..a.clone()
        };
        let mut tx = Tx::on("t");
        moved_many(&mut tx, (), &t, &[(before, a.clone())]);
        assert_eq!(updates(&tx).len(), 3);

        // Figures that cancel out write nothing.
        let mut tx = Tx::on("t");
        moved_many(&mut tx, (), &t, &[(a.clone(), a.clone())]);
        assert!(tx.is_empty());
        record(&mut tx, (), &t, &a);
        assert_eq!(updates(&tx).len(), 2);
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
