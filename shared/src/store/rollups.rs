//! Conversion rollups: revenue, commission and count per (day, currency,
//! status, campaign) and per (month, currency, status, campaign), kept up to
//! date with ADD in the same transaction as every conversion write, so the
//! summary reads a bounded number of small items however many conversions
//! there are.
//!
//! Items: `pk = keys::rollups(tenant)`,
//! `sk = D#<yyyy-mm-dd>#<currency>#<status>#<campaignId or ->` and
//! `sk = M#<yyyy-mm>#…` with number attributes `revenue`, `commission`,
//! `count` (exact decimals: DynamoDB numbers, written as decimal strings,
//! never through binary floats) and `campaignId` for the campaign filter.
//!
//! A status change (reverse here; approval and payment in the payout flow)
//! moves the figures between status items with [`moved`] in the same
//! transaction as the change.

use std::str::FromStr;

use aws_sdk_dynamodb::types::ReturnConsumedCapacity;
use rust_decimal::Decimal;

use crate::domain::conversion::{Conversion, ConversionStatus};
use crate::domain::summary::{Granularity, RollupRow, Window};
use crate::domain::tenant::Tenant;
use crate::error::{Error, Result};
use crate::money::Currency;
use crate::store::keys;
use crate::store::tx::Tx;
use crate::store::update::UpdateExpr;
use crate::store::{number_value, string_of, string_value, Item, Store};

/// Placeholder of the campaign segment for conversions without a campaign.
const NO_CAMPAIGN: &str = "-";
/// Sorts after every character a rollup sort key holds.
const HIGH: &str = "~";

fn sort_key(granularity: Granularity, c: &Conversion, status: ConversionStatus) -> String {
    let (prefix, period) = match granularity {
        Granularity::Day => ("D", c.occurred_at.format("%Y-%m-%d").to_string()),
        Granularity::Month => ("M", c.occurred_at.format("%Y-%m").to_string()),
    };
    format!(
        "{prefix}#{period}#{}#{}#{}",
        c.currency.code(),
        status.as_str(),
        c.campaign_id.as_deref().unwrap_or(NO_CAMPAIGN)
    )
}

fn negate(d: Decimal, sign: i64) -> Decimal {
    if sign < 0 {
        -d
    } else {
        d
    }
}

/// Adds (`sign` 1) or removes (`sign` -1) a conversion's figures under `status`.
fn add<R: Copy>(
    tx: &mut Tx<R>,
    role: R,
    tenant: &Tenant,
    c: &Conversion,
    status: ConversionStatus,
    sign: i64,
) {
    let (revenue, commission) = c.rollup_figures();
    let figures = Figures {
        revenue: negate(revenue, sign),
        commission: negate(commission, sign),
        count: sign,
    };
    add_figures(tx, role, tenant, c, status, &figures);
}

/// Revenue, commission and count added to a rollup.
struct Figures {
    revenue: Decimal,
    commission: Decimal,
    count: i64,
}

impl Figures {
    fn zero() -> Self {
        Figures {
            revenue: Decimal::ZERO,
            commission: Decimal::ZERO,
            count: 0,
        }
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

/// Adds figures to the day and month rollups of `c`'s day, currency and
/// campaign, the tenant's and its affiliate's.
fn add_figures<R: Copy>(
    tx: &mut Tx<R>,
    role: R,
    tenant: &Tenant,
    c: &Conversion,
    status: ConversionStatus,
    f: &Figures,
) {
    for pk in partitions(tenant, c) {
        for g in [Granularity::Day, Granularity::Month] {
            let mut update = UpdateExpr::new()
                .add("revenue", number_value(f.revenue))
                .add("commission", number_value(f.commission))
                .add("count", number_value(f.count));
            if let Some(cmp) = &c.campaign_id {
                update = update.set("campaignId", string_value(cmp.clone()));
            }
            tx.update(role, &pk, &sort_key(g, c, status), &update);
        }
    }
}

/// Counts a new conversion in its rollups (two actions, four when attributed).
pub fn record<R: Copy>(tx: &mut Tx<R>, role: R, tenant: &Tenant, c: &Conversion) {
    add(tx, role, tenant, c, c.status, 1);
}

/// Backfills (seeding, rebuilds): counts `count` conversions of `sample`'s
/// day, currency, status and campaign whose amounts and commissions sum to
/// `revenue` and `commission` (two actions).
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
    add_figures(tx, role, tenant, sample, sample.status, &figures);
}

/// Moves the figures of many status changes `(before, after)` at once, one
/// update per rollup item (a transaction may not touch an item twice).
pub fn moved_many<R: Copy>(
    tx: &mut Tx<R>,
    role: R,
    tenant: &Tenant,
    changes: &[(Conversion, Conversion)],
) {
    type Sums = std::collections::BTreeMap<(String, String), (Option<String>, Figures)>;
    let mut sums: Sums = std::collections::BTreeMap::new();
    for (before, after) in changes {
        for (c, status, sign) in [(before, before.status, -1), (after, after.status, 1)] {
            for pk in partitions(tenant, c) {
                for g in [Granularity::Day, Granularity::Month] {
                    let e = sums
                        .entry((pk.clone(), sort_key(g, c, status)))
                        .or_insert_with(|| (c.campaign_id.clone(), Figures::zero()));
                    let (revenue, commission) = c.rollup_figures();
                    e.1.revenue += negate(revenue, sign);
                    e.1.commission += negate(commission, sign);
                    e.1.count += sign;
                }
            }
        }
    }
    for ((pk, sk), (campaign, f)) in sums {
        if f.count == 0 && f.revenue.is_zero() && f.commission.is_zero() {
            continue;
        }
        let mut update = UpdateExpr::new()
            .add("revenue", number_value(f.revenue))
            .add("commission", number_value(f.commission))
            .add("count", number_value(f.count));
        if let Some(cmp) = campaign {
            update = update.set("campaignId", string_value(cmp));
        }
        tx.update(role, &pk, &sk, &update);
    }
}

fn decimal(item: &Item, name: &str) -> Result<Decimal> {
    let raw = item
        .get(name)
        .and_then(|v| v.as_n().ok())
        .ok_or_else(|| Error::internal(format!("rollup without {name}")))?;
    Decimal::from_str(raw)
        .or_else(|_| Decimal::from_scientific(raw))
        .map_err(|e| Error::internal(format!("rollup {name} {raw:?}: {e}")))
}

/// Reads one rollup item back into figures.
pub fn row(item: &Item) -> Result<RollupRow> {
    let sk = string_of(item, "sk").unwrap_or_default();
    let parts: Vec<&str> = sk.split('#').collect();
    let [_, _, currency, status, campaign] = parts[..] else {
        return Err(Error::internal(format!("malformed rollup key {sk:?}")));
    };
    let bad = || Error::internal(format!("malformed rollup key {sk:?}"));
    Ok(RollupRow {
        currency: Currency::parse("currency", currency).map_err(|_| bad())?,
        status: ConversionStatus::parse(status).ok_or_else(bad)?,
        campaign_id: (campaign != NO_CAMPAIGN).then(|| campaign.to_string()),
        revenue: decimal(item, "revenue")?,
        commission: decimal(item, "commission")?,
        count: decimal(item, "count")?
            .try_into()
            .map_err(|_| Error::internal("rollup count is not an integer"))?,
    })
}

/// The rollup rows of a window, optionally of one campaign: one strongly
/// consistent Query (more pages only past 1 MB of rollups).
pub async fn read(
    store: &Store,
    tenant: &Tenant,
    window: &Window,
    campaign_id: Option<&str>,
) -> Result<Vec<RollupRow>> {
    read_partition(store, &keys::rollups(tenant), window, campaign_id).await
}

/// The rollup rows of one affiliate in a window: one strongly consistent Query.
pub async fn read_affiliate(
    store: &Store,
    tenant: &Tenant,
    affiliate_id: &str,
    window: &Window,
) -> Result<Vec<RollupRow>> {
    let pk = keys::affiliate_rollups(tenant, affiliate_id);
    read_partition(store, &pk, window, None).await
}

/// The sort-key range of a window's rollups.
fn window_range(window: &Window) -> (String, String) {
    match window.granularity {
        Granularity::Day => (
            format!(
                "D#{}",
                window
                    .first_day
                    .map(|d| d.format("%Y-%m-%d").to_string())
                    .unwrap_or_default()
            ),
            format!("D#{}#{HIGH}", window.last_day.format("%Y-%m-%d")),
        ),
        Granularity::Month => (
            format!(
                "M#{}",
                window
                    .first_day
                    .map(|d| d.format("%Y-%m").to_string())
                    .unwrap_or_default()
            ),
            format!("M#{}#{HIGH}", window.last_day.format("%Y-%m")),
        ),
    }
}

async fn read_partition(
    store: &Store,
    pk: &str,
    window: &Window,
    campaign_id: Option<&str>,
) -> Result<Vec<RollupRow>> {
    let (lo, hi) = window_range(window);
    let mut rows = Vec::new();
    let mut start = None;
    loop {
        let mut q = store
            .client()
            .query()
            .table_name(store.table())
            .key_condition_expression("pk = :pk AND sk BETWEEN :lo AND :hi")
            .expression_attribute_values(":pk", string_value(pk))
            .expression_attribute_values(":lo", string_value(lo.clone()))
            .expression_attribute_values(":hi", string_value(hi.clone()))
            .consistent_read(true)
            .set_exclusive_start_key(start.take())
            .return_consumed_capacity(ReturnConsumedCapacity::Total);
        if let Some(c) = campaign_id {
            q = q
                .filter_expression("campaignId = :cmp")
                .expression_attribute_values(":cmp", string_value(c));
        }
        let out = q.send().await?;
        store.metrics().record_read_total(out.consumed_capacity());
        for item in out.items() {
            rows.push(row(item)?);
        }
        start = out.last_evaluated_key;
        if start.is_none() {
            return Ok(rows);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn rows_read_back_from_their_keys() {
        let item: Item = HashMap::from([
            ("pk".to_string(), string_value("ROLLUP#acct_1#test")),
            (
                "sk".to_string(),
                string_value("D#2026-01-31#USD#PENDING#cmp_1"),
            ),
            ("revenue".to_string(), number_value("20.29")),
            ("commission".to_string(), number_value("2.03")),
            ("count".to_string(), number_value("3")),
        ]);
        let r = row(&item).unwrap();
        assert_eq!(r.currency.code(), "USD");
        assert_eq!(r.status, ConversionStatus::Pending);
        assert_eq!(r.campaign_id.as_deref(), Some("cmp_1"));
        assert_eq!(r.revenue.to_string(), "20.29");
        assert_eq!(r.count, 3);
        let mut none = item.clone();
        none.insert("sk".into(), string_value("M#2026-01#EUR#UNATTRIBUTED#-"));
        assert_eq!(row(&none).unwrap().campaign_id, None);
        none.insert("sk".into(), string_value("M#2026-01#EUR"));
        assert!(row(&none).is_err());
    }
}
