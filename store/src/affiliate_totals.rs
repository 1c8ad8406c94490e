//! An affiliate's money totals, kept in their own item next to its record.
//!
//! `pk = <affiliate id>`, `sk = "TOTALS"`, holding `tenant` and one number
//! per kind and currency: `earned_USD`, `paid_EUR`, … It carries no index
//! attributes, so changing a total writes this one small item only: never the
//! affiliate record, its four index entries or its `version`, and concurrent
//! postbacks of one affiliate do not contend with a merchant's update.
//!
//! Totals change with `ADD`, which starts a missing attribute (and a missing
//! item) from zero: the item appears with the affiliate's first earning (an
//! affiliate's creation writes nothing here) and a write needs no read first.
//! Its condition, `attribute_not_exists(tenant) OR tenant = :t`, keeps one
//! tenant from writing into another tenant's item.
//!
//! The record itself stores no totals. `GET /affiliates/{id}` reads the record
//! and this item with one consistent Query (`store::affiliates::get`), a list
//! page reads its affiliates' items with one BatchGetItem ([`read_many`]).

use std::collections::HashMap;
use std::str::FromStr;

use aws_sdk_dynamodb::types::AttributeValue;
use rust_decimal::Decimal;

use crate::attrs;
use crate::keys::TOTALS_SK;
use crate::tx::Tx;
use crate::update::UpdateExpr;
use crate::{number_value, string_of, string_value, Item, Store};
use domain::affiliate::Totals;
use domain::commission_tiers::{Referred, TierMark};
use domain::error::{Error, Result};
use domain::money::Currency;
use domain::postback::ReferredChange;
use domain::timestamp;

/// ListKind of total: commission earned (the conversion flow).
pub const EARNED: &str = "earned";
/// ListKind of total: commission paid out (the payout flow).
pub const PAID: &str = "paid";

/// Key of an affiliate's totals item.
pub fn key(affiliate_id: &str) -> (String, String) {
    (affiliate_id.to_string(), TOTALS_SK.to_string())
}

/// The attribute holding one kind of total in one currency.
fn attribute(kind: &str, currency: Currency) -> String {
    format!("{kind}_{}", currency.code())
}

/// Adds `delta` (negative to give back) to one total: an Update of the
/// TOTALS item that starts missing attributes (and the item) from zero.
pub fn add<R: Copy>(
    tx: &mut Tx<R>,
    role: R,
    tenant_key: &str,
    affiliate_id: &str,
    kind: &str,
    currency: Currency,
    delta: Decimal,
) {
    add_each(
        tx,
        role,
        tenant_key,
        affiliate_id,
        kind,
        &[(currency, delta)],
    );
}

/// Adds to one kind of total in several currencies at once: one Update of
/// the TOTALS item (a transaction may touch an item once).
pub fn add_each<R: Copy>(
    tx: &mut Tx<R>,
    role: R,
    tenant_key: &str,
    affiliate_id: &str,
    kind: &str,
    deltas: &[(Currency, Decimal)],
) {
    let mut update = UpdateExpr::new();
    for (currency, delta) in deltas {
        update = update.add(&attribute(kind, *currency), number_value(*delta));
    }
    let update = update
        .set(attrs::TENANT, string_value(tenant_key))
        .when_absent_or_eq(attrs::TENANT, string_value(tenant_key));
    tx.update(role, affiliate_id, TOTALS_SK, &update);
}

/// The attribute counting distinct paying customers referred.
const CUSTOMERS: &str = "customers";
/// The attribute naming the affiliate's tier.
const TIER: &str = "tier";
/// The attribute holding when the affiliate reached its tier.
const TIER_SINCE: &str = "tierSince";

/// What one conversion changes in its affiliate's TOTALS item: the
/// commission it earns, and its count and tier, as one Update (a
/// transaction touches an item once). Only a condition (the count's band,
/// nothing written) is a ConditionCheck; nothing at all adds nothing.
pub fn credit<R: Copy>(
    tx: &mut Tx<R>,
    role: R,
    tenant_key: &str,
    affiliate_id: &str,
    earned: Option<(Currency, Decimal)>,
    referred: Option<&ReferredChange>,
) {
    let mut update = UpdateExpr::new();
    let mut writes = false;
    if let Some((currency, amount)) = earned {
        update = update.add(&attribute(EARNED, currency), number_value(amount));
        writes = true;
    }
    let mut checks = false;
    if let Some(r) = referred {
        let counted = &r.counted;
        if counted.adds {
            update = update.add(CUSTOMERS, number_value(1));
            writes = true;
        }
        if let Some(g) = counted.guard {
            update = update.when_count_within(CUSTOMERS, g.low, g.high);
            checks = true;
        }
        if let Some(tier) = &counted.change {
            update = match &r.read.tier {
                Some(t) => update.when_eq(TIER, string_value(&t.name)),
                None => update.when_absent(TIER),
            };
            update = match tier {
                Some(t) => update
                    .set(TIER, string_value(&t.name))
                    .set(TIER_SINCE, string_value(timestamp::format(&t.since))),
                None => update.remove(TIER).remove(TIER_SINCE),
            };
            writes = true;
        }
    }
    let update = update.when_absent_or_eq(attrs::TENANT, string_value(tenant_key));
    match (writes, checks) {
        (true, _) => {
            let update = update.set(attrs::TENANT, string_value(tenant_key));
            tx.update(role, affiliate_id, TOTALS_SK, &update);
        }
        (false, true) => {
            tx.check(role, affiliate_id, TOTALS_SK, &update);
        }
        (false, false) => {}
    }
}

/// The distinct paying customers and tier an item holds (none: nothing yet).
pub fn read_referred(item: Option<&Item>, tenant_key: &str) -> Result<Referred> {
    let Some(item) = item.filter(|i| string_of(i, attrs::TENANT) == Some(tenant_key)) else {
        return Ok(Referred::default());
    };
    let customers = match item.get(CUSTOMERS) {
        Some(AttributeValue::N(n)) => n.parse().map_err(|_| bad(CUSTOMERS))?,
        Some(_) => return Err(bad(CUSTOMERS)),
        None => 0,
    };
    let since = string_of(item, TIER_SINCE).and_then(timestamp::parse_datetime);
    let tier = match (string_of(item, TIER), since) {
        (Some(name), Some(since)) => Some(TierMark {
            name: name.to_string(),
            since,
        }),
        _ => None,
    };
    Ok(Referred { customers, tier })
}

fn bad(name: &str) -> Error {
    Error::internal(format!("affiliate totals: unreadable attribute {name}"))
}

/// The `earned` and `paid` totals an item holds: both empty when there is no
/// item (nothing earned yet) or when it is not the tenant's.
pub fn read(item: Option<&Item>, tenant_key: &str) -> Result<(Totals, Totals)> {
    let mut earned = Totals::new();
    let mut paid = Totals::new();
    let Some(item) = item.filter(|i| string_of(i, attrs::TENANT) == Some(tenant_key)) else {
        return Ok((earned, paid));
    };
    for (name, value) in item {
        let Some((kind, code)) = name.split_once('_') else {
            continue;
        };
        let into = match kind {
            EARNED => &mut earned,
            PAID => &mut paid,
            _ => continue,
        };
        let currency = Currency::parse(name, code).map_err(|_| bad(name))?;
        let AttributeValue::N(v) = value else {
            return Err(bad(name));
        };
        let amount = Decimal::from_str(v)
            .or_else(|_| Decimal::from_scientific(v))
            .map_err(|_| bad(name))?;
        into.insert(currency, amount);
    }
    Ok((earned, paid))
}

/// The totals items of several affiliates, by affiliate id, with one
/// BatchGetItem (at most 100 ids; none for none). Eventually consistent, like
/// the index Query that lists the affiliates. An affiliate without an item
/// has earned nothing yet.
pub async fn read_many(store: &Store, affiliate_ids: &[&str]) -> Result<HashMap<String, Item>> {
    if affiliate_ids.is_empty() {
        return Ok(HashMap::new());
    }
    let keys: Vec<(String, String)> = affiliate_ids.iter().map(|id| key(id)).collect();
    Ok(store
        .batch_get_with(&keys, false)
        .await?
        .into_iter()
        .filter_map(|item| Some((string_of(&item, attrs::PK)?.to_string(), item)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usd() -> Currency {
        Currency::parse("c", "USD").unwrap()
    }

    #[test]
    fn totals_read_back_exactly_and_only_for_their_tenant() {
        let item = Item::from([
            ("pk".to_string(), string_value("aff_1")),
            ("sk".to_string(), string_value(TOTALS_SK)),
            ("tenant".to_string(), string_value("acct_1#test")),
            ("earned_USD".to_string(), number_value("1234567.89")),
            ("earned_JPY".to_string(), number_value("1500")),
            ("paid_USD".to_string(), number_value("0.1")),
        ]);
        let (earned, paid) = read(Some(&item), "acct_1#test").unwrap();
        assert_eq!(earned[&usd()].to_string(), "1234567.89");
        assert_eq!(earned.len(), 2);
        assert_eq!(paid[&usd()].to_string(), "0.1");
        assert_eq!(paid.len(), 1);
        let (earned, paid) = read(Some(&item), "acct_2#test").unwrap();
        assert!(earned.is_empty() && paid.is_empty());
        let (earned, paid) = read(None, "acct_1#test").unwrap();
        assert!(earned.is_empty() && paid.is_empty());
        let mut broken = item.clone();
        broken.insert("earned_XYZ".into(), number_value("1"));
        assert!(read(Some(&broken), "acct_1#test").is_err());
    }

    #[test]
    fn attributes_are_per_kind_and_currency() {
        assert_eq!(attribute(EARNED, usd()), "earned_USD");
        assert_eq!(attribute(PAID, usd()), "paid_USD");
        assert_eq!(key("aff_1"), ("aff_1".to_string(), "TOTALS".to_string()));
    }
}
