//! The conversion summary: periods, the rollup window they read, and the
//! exact aggregation of rollup rows into totals and groups.
//!
//! Periods are whole UTC days (or months for `all`) ending today, so they map
//! onto the daily rollup items: `7d` is today and the 6 days before, `30d` and
//! `90d` likewise, `12m` is every day from the same date 12 months ago (the
//! day after it) up to today, and `24h` is today and yesterday (at least the
//! last 24 hours, at most 48). `all` reads the monthly rollups.
//!
//! Totals count every conversion of the window except REVERSED ones (refunded
//! revenue is not revenue, clawed-back commission not commission);
//! `group_by=status` shows REVERSED as its own group, `group_by=campaign`
//! leaves it out like the totals.
//!
//! A series (`group_by=day|week|month`) buckets the same rows by the UTC day,
//! ISO week (from Monday) or month they fall in, each point dated by its
//! bucket's first day; like the totals it leaves REVERSED conversions out. A
//! series needs a window of days: a period other than `all`, or `from`/`to`
//! spanning at most [`MAX_SERIES_DAYS`] days.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Days, Duration, Months, NaiveDate, Utc};
use rust_decimal::Decimal;
use serde::Serialize;

use crate::conversion::{Conversion, ConversionStatus, FUTURE_TOLERANCE_MINUTES};
use crate::enums::wire_enum;
use crate::money::Currency;

wire_enum! {
    /// A summary window: whole UTC days ending today (`24h` = today and yesterday), or `all`
    /// (monthly buckets).
    #[schema(as = SummaryPeriod)]
    pub enum Period [ignore_case] {
        Hours24 = "24h",
        Days7 = "7d",
        Days30 = "30d",
        Days90 = "90d",
        Months12 = "12m",
        All = "all",
    }
}

/// Rollup granularity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    Day,
    Month,
}

/// The rollups a period reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub granularity: Granularity,
    /// First day read (`None`: from the beginning, monthly).
    pub first_day: Option<NaiveDate>,
    /// Last day read: today, or tomorrow when a payment may already be dated
    /// there (occurredAt may lie up to 5 minutes ahead).
    pub last_day: NaiveDate,
    /// The instant the window starts (`None` for `all`).
    pub from: Option<DateTime<Utc>>,
    /// The instant of the request.
    pub to: DateTime<Utc>,
}

/// The window of a period at `now`.
pub fn window(period: Period, now: DateTime<Utc>) -> Window {
    let today = now.date_naive();
    let back = |days: u64| today.checked_sub_days(Days::new(days)).unwrap_or(today);
    let first_day = match period {
        Period::Hours24 => Some(back(1)),
        Period::Days7 => Some(back(6)),
        Period::Days30 => Some(back(29)),
        Period::Days90 => Some(back(89)),
        Period::Months12 => Some(
            today
                .checked_sub_months(Months::new(12))
                .and_then(|d| d.checked_add_days(Days::new(1)))
                .unwrap_or(today),
        ),
        Period::All => None,
    };
    Window {
        granularity: if period == Period::All {
            Granularity::Month
        } else {
            Granularity::Day
        },
        first_day,
        last_day: (now + Duration::minutes(FUTURE_TOLERANCE_MINUTES)).date_naive(),
        from: first_day.map(|d| d.and_hms_opt(0, 0, 0).expect("midnight").and_utc()),
        to: now,
    }
}

wire_enum! {
    /// The extra grouping of a summary.
    #[schema(as = SummaryGroupBy)]
    pub enum GroupBy [ignore_case] {
        Status = "status",
        Campaign = "campaign",
        Day = "day",
        Week = "week",
        Month = "month",
    }
}

impl GroupBy {
    /// Whether this grouping is a series over time.
    pub fn is_series(self) -> bool {
        matches!(self, GroupBy::Day | GroupBy::Week | GroupBy::Month)
    }

    /// The first day of the bucket `day` falls in (the day itself for a
    /// grouping that is no series).
    fn bucket(self, day: NaiveDate) -> NaiveDate {
        match self {
            GroupBy::Week => day - Days::new(u64::from(day.weekday().num_days_from_monday())),
            GroupBy::Month => day.with_day(1).unwrap_or(day),
            _ => day,
        }
    }
}

/// The most days a window given by `from`/`to` may span.
pub const MAX_SERIES_DAYS: i64 = 366;

/// The window of the whole UTC days `first..=last` (at most
/// [`MAX_SERIES_DAYS`], checked by the caller).
pub fn window_between(first: NaiveDate, last: NaiveDate) -> Window {
    let midnight = |d: NaiveDate| d.and_hms_opt(0, 0, 0).expect("midnight").and_utc();
    let end = last
        .checked_add_days(Days::new(1))
        .map(midnight)
        .unwrap_or_else(|| midnight(last))
        - Duration::milliseconds(1);
    Window {
        granularity: Granularity::Day,
        first_day: Some(first),
        last_day: last,
        from: Some(midnight(first)),
        to: end,
    }
}

/// The number of days `first..=last` spans.
pub fn days_spanned(first: NaiveDate, last: NaiveDate) -> i64 {
    (last - first).num_days() + 1
}

/// Figures of one day of the rollups (a monthly window: dated the month's
/// first day), in one currency, status and campaign. Rows of the same key
/// add up: a summary sums them, [`net`] nets a write's.
#[derive(Debug, Clone, PartialEq)]
pub struct RollupRow {
    pub day: NaiveDate,
    pub currency: Currency,
    pub status: ConversionStatus,
    pub campaign_id: Option<String>,
    pub revenue: Decimal,
    pub commission: Decimal,
    pub count: i64,
}

impl RollupRow {
    /// What `c` counts in the rollups: one conversion with its figures
    /// (`Conversion::rollup_figures`), under its status on its UTC day.
    pub fn of(c: &Conversion) -> RollupRow {
        let (revenue, commission) = c.rollup_figures();
        RollupRow {
            day: c.occurred_at.date_naive(),
            currency: c.currency,
            status: c.status,
            campaign_id: c.campaign_id.clone(),
            revenue,
            commission,
            count: 1,
        }
    }

    /// The same row taken out: every figure negated.
    pub fn taken_out(self) -> RollupRow {
        RollupRow {
            revenue: -self.revenue,
            commission: -self.commission,
            count: -self.count,
            ..self
        }
    }

    /// Whether it counts nothing: no conversion, no revenue, no commission.
    pub fn is_zero(&self) -> bool {
        self.count == 0 && self.revenue.is_zero() && self.commission.is_zero()
    }

    /// The key rows add up under.
    fn key(&self) -> (NaiveDate, Currency, ConversionStatus, Option<String>) {
        (
            self.day,
            self.currency,
            self.status,
            self.campaign_id.clone(),
        )
    }
}

/// Rows added up exactly per day, currency, status and campaign (in that
/// order), those that cancel out left out: what one write changes.
pub fn net(rows: impl IntoIterator<Item = RollupRow>) -> Vec<RollupRow> {
    let mut sums: BTreeMap<_, RollupRow> = BTreeMap::new();
    for r in rows {
        match sums.entry(r.key()) {
            Entry::Vacant(v) => {
                v.insert(r);
            }
            Entry::Occupied(mut o) => {
                let sum = o.get_mut();
                sum.revenue += r.revenue;
                sum.commission += r.commission;
                sum.count += r.count;
            }
        }
    }
    sums.into_values().filter(|r| !r.is_zero()).collect()
}

/// Revenue, commission and count in one currency
/// (`wire::summary::FiguresView` shows them).
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    pub currency: Currency,
    /// Sum of the amounts, exact.
    pub revenue: Decimal,
    /// Sum of the commissions, exact.
    pub commission: Decimal,
    pub count: i64,
}

impl Figures {
    fn new(currency: Currency) -> Figures {
        Figures {
            currency,
            revenue: Decimal::ZERO,
            commission: Decimal::ZERO,
            count: 0,
        }
    }

    fn add(&mut self, r: &RollupRow) {
        self.revenue += r.revenue;
        self.commission += r.commission;
        self.count += r.count;
    }

    fn rounded(mut self) -> Figures {
        self.revenue = self.currency.round(self.revenue);
        self.commission = self.currency.round(self.commission);
        self
    }
}

/// The key of a group.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupKey {
    Status {
        status: ConversionStatus,
    },
    Campaign {
        /// Null for conversions without a campaign (unattributed, no `campaignId`).
        campaign_id: Option<String>,
    },
}

/// One group: its key and its figures in one currency.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub key: GroupKey,
    pub figures: Figures,
}

/// A window's rollups added up (`wire::summary::SummaryView` shows it).
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The period asked for (none when the window is given by days).
    pub period: Option<Period>,
    /// The rollups read.
    pub granularity: Granularity,
    /// Start of the first UTC day counted (none for `all`).
    pub from: Option<DateTime<Utc>>,
    /// The time of the request; with days, the end of the last day.
    pub to: DateTime<Utc>,
    pub group_by: Option<GroupBy>,
    pub campaign_id: Option<String>,
    /// Per currency (sorted by code), every conversion except REVERSED ones.
    pub totals: Vec<Figures>,
    /// Empty without `group_by=status|campaign`.
    pub groups: Vec<Group>,
    /// With a series grouping: per bucket and currency, by date then code.
    pub series: Vec<Point>,
}

/// One point of a series: a bucket's figures in one currency.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The bucket's first day (UTC): the day, the Monday of the ISO week, or the month's first day.
    pub date: NaiveDate,
    pub figures: Figures,
}

/// The series of `rows` bucketed by `by`: per bucket and currency, every
/// conversion but REVERSED ones, buckets without conversions left out.
pub fn series(by: GroupBy, rows: &[RollupRow]) -> Vec<Point> {
    let mut points: BTreeMap<(NaiveDate, Currency), Figures> = BTreeMap::new();
    for r in rows
        .iter()
        .filter(|r| r.status != ConversionStatus::Reversed)
    {
        points
            .entry((by.bucket(r.day), r.currency))
            .or_insert_with(|| Figures::new(r.currency))
            .add(r);
    }
    points
        .into_iter()
        .filter(|(_, f)| f.count != 0)
        .map(|((date, _), f)| Point {
            date,
            figures: f.rounded(),
        })
        .collect()
}

wire_enum! {
    /// The series the portal's stats add.
    #[schema(as = PortalStatsSeries)]
    pub enum SeriesBy [ignore_case] {
        Day = "day",
    }
}

/// One day of an affiliate's daily series: its clicks and its figures per
/// currency (every conversion but REVERSED ones).
#[derive(Debug, Clone, PartialEq)]
pub struct Day {
    /// The UTC day.
    pub date: NaiveDate,
    pub clicks: i64,
    /// Per currency (sorted by code); empty on a day without conversions.
    pub totals: Vec<Figures>,
}

/// Every day of a window of days, in order, with its clicks and figures
/// (empty for a window without days, `all`).
pub fn daily(window: &Window, rows: &[RollupRow], clicks: &[(NaiveDate, i64)]) -> Vec<Day> {
    let Some(first) = window.first_day else {
        return Vec::new();
    };
    // To today: a payment dated a few minutes ahead counts in the totals,
    // but tomorrow is no day of the chart.
    let last = window.to.date_naive().min(window.last_day);
    let mut days: BTreeMap<NaiveDate, Day> = first
        .iter_days()
        .take_while(|d| *d <= last)
        .map(|date| {
            let day = Day {
                date,
                clicks: 0,
                totals: Vec::new(),
            };
            (date, day)
        })
        .collect();
    for (date, n) in clicks {
        if let Some(d) = days.get_mut(date) {
            d.clicks += n;
        }
    }
    for p in series(GroupBy::Day, rows) {
        if let Some(d) = days.get_mut(&p.date) {
            d.totals.push(p.figures);
        }
    }
    days.into_values().collect()
}

/// Adds rollup rows up exactly: totals per currency, groups per key and currency.
pub fn summarise(
    period: Option<Period>,
    window: &Window,
    group_by: Option<GroupBy>,
    campaign_id: Option<String>,
    rows: &[RollupRow],
) -> Summary {
    let mut totals: BTreeMap<Currency, Figures> = BTreeMap::new();
    let mut groups: BTreeMap<(GroupKey, Currency), Figures> = BTreeMap::new();
    for r in rows {
        let reversed = r.status == ConversionStatus::Reversed;
        if !reversed {
            totals
                .entry(r.currency)
                .or_insert_with(|| Figures::new(r.currency))
                .add(r);
        }
        let key = match group_by {
            Some(GroupBy::Status) => GroupKey::Status { status: r.status },
            Some(GroupBy::Campaign) if !reversed => GroupKey::Campaign {
                campaign_id: r.campaign_id.clone(),
            },
            _ => continue,
        };
        groups
            .entry((key, r.currency))
            .or_insert_with(|| Figures::new(r.currency))
            .add(r);
    }
    Summary {
        period,
        granularity: window.granularity,
        from: window.from,
        to: window.to,
        group_by,
        campaign_id,
        totals: totals
            .into_values()
            .filter(|f| f.count != 0)
            .map(Figures::rounded)
            .collect(),
        groups: groups
            .into_iter()
            .filter(|(_, f)| f.count != 0)
            .map(|((key, _), f)| Group {
                key,
                figures: f.rounded(),
            })
            .collect(),
        series: group_by
            .filter(|g| g.is_series())
            .map(|g| series(g, rows))
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timestamp;
    use std::str::FromStr;

    fn at(s: &str) -> DateTime<Utc> {
        timestamp::parse_datetime(s).unwrap()
    }

    fn day(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn periods_map_to_whole_utc_days_ending_today() {
        let now = at("2026-03-31T15:00:00Z");
        let w = |p| window(p, now);
        assert_eq!(w(Period::Hours24).first_day, Some(day("2026-03-30")));
        assert_eq!(w(Period::Days7).first_day, Some(day("2026-03-25")));
        assert_eq!(w(Period::Days30).first_day, Some(day("2026-03-02")));
        assert_eq!(w(Period::Days90).first_day, Some(day("2026-01-01")));
        assert_eq!(w(Period::Months12).first_day, Some(day("2025-04-01")));
        assert_eq!(w(Period::Days7).last_day, day("2026-03-31"));
        assert_eq!(w(Period::Days7).granularity, Granularity::Day);
        assert_eq!(
            timestamp::format(&w(Period::Days7).from.unwrap()),
            "2026-03-25T00:00:00.000Z"
        );
        let all = w(Period::All);
        assert_eq!(all.granularity, Granularity::Month);
        assert_eq!(all.first_day, None);
        assert_eq!(all.from, None);
        // Five minutes before midnight, tomorrow's rollups are read too.
        let late = window(Period::Days7, at("2026-03-31T23:57:00Z"));
        assert_eq!(late.last_day, day("2026-04-01"));
        for name in Period::NAMES {
            assert_eq!(Period::parse(name).unwrap().as_str(), name);
        }
        assert_eq!(Period::parse("1y"), None);
    }

    fn row(
        cur: &str,
        st: ConversionStatus,
        cmp: Option<&str>,
        rev: &str,
        com: &str,
        n: i64,
    ) -> RollupRow {
        RollupRow {
            day: day("2026-03-02"),
            currency: Currency::parse("c", cur).unwrap(),
            status: st,
            campaign_id: cmp.map(str::to_string),
            revenue: Decimal::from_str(rev).unwrap(),
            commission: Decimal::from_str(com).unwrap(),
            count: n,
        }
    }

    #[test]
    fn sums_are_exact_and_reversed_conversions_only_show_in_their_group() {
        use ConversionStatus::*;
        let rows = vec![
            row("USD", Pending, Some("cmp_a"), "0.1", "0.01", 1),
            row("USD", Pending, Some("cmp_a"), "0.2", "0.02", 1),
            row("USD", Approved, Some("cmp_b"), "19.99", "2.00", 1),
            row("USD", Reversed, Some("cmp_b"), "5.00", "0.50", 1),
            row("EUR", Unattributed, None, "7", "0", 2),
            row("JPY", Pending, Some("cmp_a"), "0", "0", 0),
        ];
        let w = window(Period::Days30, at("2026-03-31T15:00:00Z"));
        let s = summarise(Some(Period::Days30), &w, Some(GroupBy::Status), None, &rows);
        let shown = |f: &Figures| {
            format!(
                "{} {} {} {}",
                f.currency.code(),
                f.revenue,
                f.commission,
                f.count
            )
        };
        let totals: Vec<_> = s.totals.iter().map(shown).collect();
        assert_eq!(totals, ["EUR 7.00 0.00 2", "USD 20.29 2.03 3"]);
        let groups = |s: &Summary| {
            s.groups
                .iter()
                .map(|g| format!("{:?} {}", g.key, shown(&g.figures)))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            groups(&s),
            [
                "Status { status: Pending } USD 0.30 0.03 2",
                "Status { status: Approved } USD 19.99 2.00 1",
                "Status { status: Reversed } USD 5.00 0.50 1",
                "Status { status: Unattributed } EUR 7.00 0.00 2",
            ]
        );
        let s = summarise(
            Some(Period::Days30),
            &w,
            Some(GroupBy::Campaign),
            None,
            &rows,
        );
        assert_eq!(s.group_by, Some(GroupBy::Campaign));
        assert_eq!(
            groups(&s),
            [
                "Campaign { campaign_id: None } EUR 7.00 0.00 2",
                "Campaign { campaign_id: Some(\"cmp_a\") } USD 0.30 0.03 2",
                "Campaign { campaign_id: Some(\"cmp_b\") } USD 19.99 2.00 1",
            ]
        );
        let none = summarise(
            Some(Period::All),
            &window(Period::All, w.to),
            None,
            None,
            &rows,
        );
        assert!(none.groups.is_empty());
        assert_eq!(none.from, None);
    }

    /// A conversion of 49.99 USD earning 5.00 on 2 March, partly reversed.
    fn conversion(status: ConversionStatus, campaign: Option<&str>) -> Conversion {
        let at = "2026-03-02T23:30:00.000Z";
        crate::conversion::sample::stored(serde_json::json!({
            "campaignId": campaign, "status": status,
            "payableAt": "2026-04-01T23:30:00.000Z",
            "occurredAt": at, "createdAt": at, "updatedAt": at,
            "reversedAmount": "9.99", "commissionReversed": "1.00",
        }))
    }

    #[test]
    fn a_conversion_counts_its_rollup_figures_on_its_utc_day() {
        use ConversionStatus::*;
        let r = RollupRow::of(&conversion(Pending, Some("cmp_a")));
        assert_eq!(r, row("USD", Pending, Some("cmp_a"), "40.00", "4.00", 1));
        let out = r.clone().taken_out();
        assert_eq!(
            out,
            row("USD", Pending, Some("cmp_a"), "-40.00", "-4.00", -1)
        );
        assert!(!out.is_zero());
        // A REVERSED conversion counts what it recorded, under REVERSED.
        let r = RollupRow::of(&conversion(Reversed, None));
        assert_eq!(
            (r.revenue.to_string(), r.campaign_id),
            ("49.99".into(), None)
        );
    }

    #[test]
    fn net_adds_rows_up_per_key_and_leaves_out_what_cancels() {
        use ConversionStatus::*;
        let on = |d: &str, r: RollupRow| RollupRow { day: day(d), ..r };
        let pending = row("USD", Pending, Some("cmp_a"), "0.1", "0.01", 1);
        let rows = vec![
            on("2026-03-03", pending.clone()),
            pending.clone(),
            pending.clone(),
            pending.clone().taken_out(),
            row("USD", Approved, Some("cmp_a"), "0.2", "0.02", 1),
            row("USD", Approved, Some("cmp_a"), "0.2", "0.02", 1).taken_out(),
            row("EUR", Pending, Some("cmp_a"), "7", "0.7", 1),
            row("USD", Pending, None, "0", "0", 0),
        ];
        let netted = net(rows);
        assert_eq!(
            netted,
            vec![
                row("EUR", Pending, Some("cmp_a"), "7", "0.7", 1),
                row("USD", Pending, Some("cmp_a"), "0.1", "0.01", 1),
                on("2026-03-03", pending),
            ],
            "by day, currency, status and campaign; APPROVED cancels out"
        );
        assert!(net(Vec::new()).is_empty());
    }

    #[test]
    fn series_bucket_by_day_iso_week_and_month_without_reversed() {
        use ConversionStatus::*;
        let on = |d: &str, r: RollupRow| RollupRow { day: day(d), ..r };
        let rows = vec![
            on("2026-03-01", row("USD", Pending, None, "10", "1", 1)),
            on("2026-03-02", row("USD", Approved, None, "0.1", "0.01", 1)),
            on("2026-03-02", row("USD", Pending, None, "0.2", "0.02", 1)),
            on("2026-03-02", row("EUR", Pending, None, "5", "0.5", 1)),
            on("2026-03-08", row("USD", Reversed, None, "9", "0.9", 1)),
            on("2026-04-01", row("USD", Paid, None, "3", "0.3", 1)),
        ];
        let dates = |by| {
            series(by, &rows)
                .iter()
                .map(|p| {
                    format!(
                        "{} {} {}",
                        p.date,
                        p.figures.currency.code(),
                        p.figures.revenue
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            dates(GroupBy::Day),
            [
                "2026-03-01 USD 10.00",
                "2026-03-02 EUR 5.00",
                "2026-03-02 USD 0.30",
                "2026-04-01 USD 3.00"
            ]
        );
        // 2026-03-01 is a Sunday: its ISO week starts on Monday 23 February.
        assert_eq!(
            dates(GroupBy::Week),
            [
                "2026-02-23 USD 10.00",
                "2026-03-02 EUR 5.00",
                "2026-03-02 USD 0.30",
                "2026-03-30 USD 3.00"
            ]
        );
        assert_eq!(
            dates(GroupBy::Month),
            [
                "2026-03-01 EUR 5.00",
                "2026-03-01 USD 10.30",
                "2026-04-01 USD 3.00"
            ]
        );
        let w = window_between(day("2026-03-01"), day("2026-04-01"));
        let s = summarise(None, &w, Some(GroupBy::Week), None, &rows);
        assert_eq!(s.period, None);
        assert_eq!(
            s.from.map(|t| timestamp::format(&t)).as_deref(),
            Some("2026-03-01T00:00:00.000Z")
        );
        assert_eq!(timestamp::format(&s.to), "2026-04-01T23:59:59.999Z");
        assert_eq!(s.series[0].date, day("2026-02-23"));
        assert_eq!(s.series[0].figures.revenue.to_string(), "10.00");
        assert!(s.groups.is_empty());
        assert_eq!(days_spanned(day("2025-03-02"), day("2026-03-02")), 366);
    }
}
