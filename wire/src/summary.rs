//! The conversion summary and the affiliate's stats as the API shows them:
//! the domain's exact sums (`domain::summary`) as JSON numbers.

use crate::number::Number;
use chrono::NaiveDate;
use domain::conversion::ConversionStatus;
use domain::money::Currency;
use domain::summary::{
    Day, Figures, Granularity, Group, GroupBy, GroupKey, Period, Point, Summary,
};
use domain::timestamp::Timestamp;
use serde::Serialize;

/// Revenue, commission and count in one currency.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = SummaryFigures)]
pub struct FiguresView {
    pub currency: Currency,
    /// Sum of the amounts, exact.
    pub revenue: Number,
    /// Sum of the commissions, exact.
    pub commission: Number,
    #[schema(minimum = 0)]
    pub count: i64,
}

impl From<&Figures> for FiguresView {
    fn from(f: &Figures) -> Self {
        FiguresView {
            currency: f.currency,
            revenue: f.revenue.into(),
            commission: f.commission.into(),
            count: f.count,
        }
    }
}

/// Each of `figures` as shown.
fn shown(figures: &[Figures]) -> Vec<FiguresView> {
    figures.iter().map(FiguresView::from).collect()
}

/// The key of a group, flat beside its figures.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum GroupKeyView {
    Status {
        status: ConversionStatus,
    },
    #[serde(rename_all = "camelCase")]
    Campaign {
        campaign_id: Option<String>,
    },
}

/// One group: its key and its figures in one currency.
#[derive(Debug, Serialize)]
pub struct GroupView {
    #[serde(flatten)]
    pub key: GroupKeyView,
    #[serde(flatten)]
    pub figures: FiguresView,
}

impl From<&Group> for GroupView {
    fn from(g: &Group) -> Self {
        let key = match &g.key {
            GroupKey::Status { status } => GroupKeyView::Status { status: *status },
            GroupKey::Campaign { campaign_id } => GroupKeyView::Campaign {
                campaign_id: campaign_id.clone(),
            },
        };
        GroupView {
            key,
            figures: FiguresView::from(&g.figures),
        }
    }
}

// The description of [`GroupView`]: its key (flattened, so stated here) and
// the figures of [`FiguresView`].
domain::described!(GroupView, "SummaryGroup", {
    let figures =
        serde_json::to_value(<FiguresView as utoipa::PartialSchema>::schema()).unwrap_or_default();
    let mut properties = serde_json::json!({
        "status": {"$ref": "#/components/schemas/ConversionStatus"},
        "campaignId": {"type": ["string", "null"]},
    });
    if let (Some(all), Some(more)) = (
        properties.as_object_mut(),
        figures["properties"].as_object(),
    ) {
        all.extend(more.clone());
    }
    serde_json::json!({
        "type": "object",
        "required": figures["required"],
        "description": "Figures of one group in one currency: keyed by `status` (group_by=status) or `campaignId` (group_by=campaign; null for conversions without a campaign).",
        "properties": properties,
    })
});

/// One point of a series: a bucket's figures in one currency.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = SummaryPoint)]
pub struct PointView {
    /// The bucket's first day (UTC): the day, the Monday of the ISO week, or the month's first day.
    #[schema(value_type = String, format = Date, example = json!("2026-11-02"))]
    pub date: NaiveDate,
    #[serde(flatten)]
    pub figures: FiguresView,
}

impl From<&Point> for PointView {
    fn from(p: &Point) -> Self {
        PointView {
            date: p.date,
            figures: FiguresView::from(&p.figures),
        }
    }
}

/// The summary as returned.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = ConversionSummary)]
pub struct SummaryView {
    /// The period asked for (null when the window is given by `from`/`to`).
    pub period: Option<Period>,
    /// The rollups read: daily for every period but `all`, monthly for `all`.
    pub granularity: Granularity,
    /// Start of the first UTC day counted (null for `all`).
    pub from: Option<Timestamp>,
    /// The time of the request; with `from`/`to`, the end of the last day.
    pub to: Timestamp,
    /// The `group_by` asked for, or null.
    pub group_by: Option<GroupBy>,
    pub campaign_id: Option<String>,
    /// Per currency (sorted by code), every conversion of the window except REVERSED ones.
    /// Currencies are never mixed or converted.
    pub totals: Vec<FiguresView>,
    /// Empty without `group_by=status|campaign`.
    pub groups: Vec<GroupView>,
    /// With `group_by=day|week|month`: per bucket and currency (by date, then
    /// currency code), every conversion but REVERSED ones; buckets without
    /// conversions are left out. Empty otherwise.
    pub series: Vec<PointView>,
}

impl From<Summary> for SummaryView {
    fn from(s: Summary) -> Self {
        SummaryView {
            period: s.period,
            granularity: s.granularity,
            from: s.from.map(Timestamp),
            to: s.to.into(),
            group_by: s.group_by,
            totals: shown(&s.totals),
            groups: s.groups.iter().map(GroupView::from).collect(),
            series: s.series.iter().map(PointView::from).collect(),
            campaign_id: s.campaign_id,
        }
    }
}

/// One day of an affiliate's daily series: its clicks and its figures per
/// currency (every conversion but REVERSED ones).
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PortalStatsDay)]
pub struct DayView {
    /// The UTC day.
    #[schema(value_type = String, format = Date, example = json!("2026-11-02"))]
    pub date: NaiveDate,
    #[schema(minimum = 0)]
    pub clicks: i64,
    /// Per currency (sorted by code); empty on a day without conversions.
    pub totals: Vec<FiguresView>,
}

impl From<&Day> for DayView {
    fn from(d: &Day) -> Self {
        DayView {
            date: d.date,
            clicks: d.clicks,
            totals: shown(&d.totals),
        }
    }
}

/// The affiliate's figures of a period.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PortalStats)]
pub struct PortalStats {
    pub period: Period,
    pub from: Option<Timestamp>,
    pub to: Timestamp,
    /// Clicks on the affiliate's links in the period.
    #[schema(minimum = 0)]
    pub clicks: i64,
    /// Per currency, every conversion but REVERSED ones.
    pub totals: Vec<FiguresView>,
    /// Per status and currency.
    pub by_status: Vec<GroupView>,
    /// With `series=day`: every UTC day of the period, oldest first, with its clicks and
    /// figures; null otherwise.
    pub series: Option<Vec<DayView>>,
}

impl PortalStats {
    /// The stats of `period`: its summary by status, its `clicks` and,
    /// when asked, its `days`.
    pub fn of(period: Period, s: &Summary, clicks: i64, days: Option<&[Day]>) -> PortalStats {
        PortalStats {
            period,
            from: s.from.map(Timestamp),
            to: s.to.into(),
            clicks,
            totals: shown(&s.totals),
            by_status: s.groups.iter().map(GroupView::from).collect(),
            series: days.map(|d| d.iter().map(DayView::from).collect()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;
    use domain::summary::{series, summarise, window, window_between, RollupRow};
    use rust_decimal::Decimal;
    use std::str::FromStr;

    fn day(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    fn row(cur: &str, st: ConversionStatus, cmp: Option<&str>, rev: &str, n: i64) -> RollupRow {
        let revenue = Decimal::from_str(rev).unwrap();
        RollupRow {
            day: day("2026-03-02"),
            currency: Currency::parse("c", cur).unwrap(),
            status: st,
            campaign_id: cmp.map(str::to_string),
            revenue,
            commission: revenue / Decimal::TEN,
            count: n,
        }
    }

    fn json(s: Summary) -> serde_json::Value {
        serde_json::to_value(SummaryView::from(s)).unwrap()
    }

    #[test]
    fn groups_show_their_key_flat_beside_exact_figures() {
        use ConversionStatus::*;
        let rows = vec![
            row("USD", Pending, Some("cmp_a"), "0.1", 1),
            row("USD", Pending, Some("cmp_a"), "0.2", 1),
            row("USD", Reversed, Some("cmp_b"), "5.00", 1),
            row("EUR", Unattributed, None, "7", 2),
        ];
        let now = domain::timestamp::parse_datetime("2026-03-31T15:00:00Z").unwrap();
        let w = window(Period::Days30, now);
        let by = |g| json(summarise(Some(Period::Days30), &w, Some(g), None, &rows));
        let v = by(GroupBy::Status);
        assert_eq!(v["period"], "30d");
        assert_eq!(v["granularity"], "day");
        assert_eq!(v["from"], "2026-03-02T00:00:00.000Z");
        assert_eq!(
            v["totals"],
            serde_json::json!([
                {"currency": "EUR", "revenue": 7, "commission": 0.7, "count": 2},
                {"currency": "USD", "revenue": 0.3, "commission": 0.03, "count": 2},
            ])
        );
        assert_eq!(
            v["groups"][0],
            serde_json::json!({"status": "PENDING", "currency": "USD", "revenue": 0.3, "commission": 0.03, "count": 2})
        );
        let v = by(GroupBy::Campaign);
        assert_eq!(v["groupBy"], "campaign");
        assert_eq!(
            v["groups"],
            serde_json::json!([
                {"campaignId": null, "currency": "EUR", "revenue": 7, "commission": 0.7, "count": 2},
                {"campaignId": "cmp_a", "currency": "USD", "revenue": 0.3, "commission": 0.03, "count": 2},
            ])
        );
        let all = json(summarise(
            Some(Period::All),
            &window(Period::All, now),
            None,
            None,
            &rows,
        ));
        assert_eq!(all["from"], serde_json::Value::Null);
        assert_eq!(all["groupBy"], serde_json::Value::Null);
    }

    #[test]
    fn a_series_point_is_dated_by_its_bucket() {
        let on = |d: &str| RollupRow {
            day: day(d),
            ..row("USD", ConversionStatus::Pending, None, "10", 1)
        };
        let rows = [on("2026-03-01"), on("2026-03-02")];
        let w = window_between(day("2026-03-01"), day("2026-04-01"));
        let v = json(summarise(None, &w, Some(GroupBy::Week), None, &rows));
        assert_eq!(v["period"], serde_json::Value::Null);
        assert_eq!(v["to"], "2026-04-01T23:59:59.999Z");
        assert_eq!(
            v["series"][0],
            serde_json::json!({"date": "2026-02-23", "currency": "USD", "revenue": 10, "commission": 1, "count": 1})
        );
        assert_eq!(series(GroupBy::Week, &rows).len(), 2);
    }
}
