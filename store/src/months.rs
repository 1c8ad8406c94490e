//! Items that hold a month's figures day by day (`sk = M#<yyyy-mm>…`, an
//! attribute per day), beside the day items written before them
//! (`sk = D#<yyyy-mm-dd>…`, no longer written): the conversion rollups and
//! the click counts. A window reads both, and they add up.

use std::ops::RangeInclusive;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{Datelike, NaiveDate};

use crate::attrs;
use crate::{string_of, Item, Store};
use domain::error::Result;
use domain::summary::{Granularity, Window};

/// Sorts after every character a sort key holds.
const HIGH: &str = "~";

/// What a window reads from one partition.
pub struct WindowItems {
    /// The month items of the window's months.
    pub months: Vec<Item>,
    /// The window's day items written before the month items held the days
    /// (a window of days only: a month item's totals count them otherwise).
    pub days: Vec<Item>,
    /// The window's days; `None` for every day (`all`).
    pub range: Option<RangeInclusive<NaiveDate>>,
}

impl WindowItems {
    /// The days of a month item's month that the window counts; `None` for
    /// an item that is not a month item.
    pub fn days_of(&self, item: &Item) -> Option<impl Iterator<Item = NaiveDate> + '_> {
        let sk = string_of(item, attrs::SK)?;
        let period = sk.strip_prefix("M#")?.get(..7)?;
        let month = NaiveDate::parse_from_str(&format!("{period}-01"), "%Y-%m-%d").ok()?;
        Some(
            month
                .iter_days()
                .take_while(move |d| d.month() == month.month())
                .filter(|d| self.range.as_ref().is_none_or(|r| r.contains(d))),
        )
    }
}

/// The items of one partition a window reads: its months' items and, for a
/// window of days, the day items of its days (two strongly consistent
/// Queries at once), optionally only those whose `filter` attribute has the
/// given value.
pub async fn read(
    store: &Store,
    pk: &str,
    window: &Window,
    filter: Option<(&str, AttributeValue)>,
) -> Result<WindowItems> {
    let month = |d: NaiveDate| d.format("%Y-%m").to_string();
    let lo = format!("M#{}", window.first_day.map(month).unwrap_or_default());
    let hi = format!("M#{}#{HIGH}", month(window.last_day));
    let range = match (window.granularity, window.first_day) {
        (Granularity::Day, Some(first)) => Some(first..=window.last_day),
        _ => None,
    };
    let Some(days) = range.clone() else {
        let months = store.query_range_where(pk, &lo, &hi, filter).await?;
        return Ok(WindowItems {
            months,
            days: Vec::new(),
            range,
        });
    };
    let day = |d: &NaiveDate| d.format("%Y-%m-%d").to_string();
    let (day_lo, day_hi) = (
        format!("D#{}", day(days.start())),
        format!("D#{}#{HIGH}", day(days.end())),
    );
    let (months, days) = tokio::join!(
        store.query_range_where(pk, &lo, &hi, filter.clone()),
        store.query_range_where(pk, &day_lo, &day_hi, filter)
    );
    Ok(WindowItems {
        months: months?,
        days: days?,
        range,
    })
}
