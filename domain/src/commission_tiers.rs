//! Performance tiers (contract section 15): a campaign's `tiers` pay by how
//! many distinct paying customers an affiliate referred. An affiliate's
//! count and its current tier live with its money totals; each attributed
//! first payment (a new paying customer) adds one, counting the customer of
//! the payment being recorded, and a change of tier is recorded once, with
//! `affiliate.tier_changed`.
//!
//! The commission a payment earns depends on the count it read, so its
//! commit holds the count to the band it decided from ([`Guard`]): a
//! concurrent new customer that moves the affiliate across a tier boundary
//! makes it decide again, and only the payment that crosses a boundary
//! records the change.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::commission_plan::{split_path, Pay};
use crate::timestamp::serde_ts;
use crate::validation::Issues;

/// Most tiers a campaign has.
pub const MAX_TIERS: usize = 10;

/// One tier: from `minCustomers` distinct paying customers referred, the
/// affiliate's payments earn `pay` (unless an override or a rule decides).
#[derive(utoipa::ToSchema, Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(example = json!({"name": "Gold", "minCustomers": 10, "pay": {"type": "PERCENTAGE", "value": 30}}))]
pub struct Tier {
    /// 1-100 characters, named in each conversion it decides and on the affiliate.
    #[schema(value_type = crate::field::Label)]
    pub name: String,
    /// At least 1; strictly increasing from tier to tier.
    #[schema(minimum = 1, maximum = 1000000000)]
    pub min_customers: u32,
    pub pay: Pay,
}

/// The tier an affiliate is in, and since when.
#[derive(utoipa::ToSchema, Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TierMark {
    pub name: String,
    /// When the payment that moved the affiliate into it was recorded.
    #[serde(with = "serde_ts")]
    #[schema(value_type = crate::timestamp::Timestamp)]
    pub since: DateTime<Utc>,
}

/// What an affiliate has referred so far: its distinct paying customers
/// and the tier they put it in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Referred {
    pub customers: u32,
    pub tier: Option<TierMark>,
}

/// The counts a commit holds an affiliate's customer count to: from `low`
/// through `high` (inclusive; none: no upper bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guard {
    pub low: u32,
    pub high: Option<u32>,
}

/// Checks a campaign's tiers: at most [`MAX_TIERS`], each named, its
/// `minCustomers` at least 1 and above the one before, its pay as a
/// commission's.
pub fn check_tiers(tiers: &[Tier], issues: &mut Issues) {
    if tiers.len() > MAX_TIERS {
        issues.add(
            &["tiers"],
            "too_big",
            format!("tiers holds at most {MAX_TIERS} tiers"),
        );
    }
    let mut previous = 0;
    for (n, tier) in tiers.iter().enumerate() {
        let path = format!("tiers[{n}]");
        let name = format!("{path}.name");
        if let Err(mut issue) = crate::field::Label::parse(&name, &tier.name) {
            issue.path = split_path(&name);
            issues.push(issue);
        }
        let min = format!("{path}.minCustomers");
        if tier.min_customers < 1 {
            issues.add_at(split_path(&min), "too_small", format!("{min} must be >= 1"));
        } else if tier.min_customers <= previous {
            issues.add_at(
                split_path(&min),
                "invalid_range",
                format!("{min} must be greater than the tier before's"),
            );
        }
        previous = previous.max(tier.min_customers);
        tier.pay.check(&format!("{path}.pay"), issues);
    }
}

/// The tier `customers` distinct paying customers reach: the highest whose
/// `minCustomers` is at most that many, with its position.
pub fn tier_for(tiers: &[Tier], customers: u32) -> Option<(usize, &Tier)> {
    tiers
        .iter()
        .enumerate()
        .filter(|(_, t)| t.min_customers <= customers)
        .max_by_key(|(_, t)| t.min_customers)
}

/// The counts that reach the same tier as `customers`: from the band's
/// lowest through its highest.
fn band(tiers: &[Tier], customers: u32) -> Guard {
    let low = tier_for(tiers, customers).map_or(0, |(_, t)| t.min_customers);
    let high = tiers
        .iter()
        .map(|t| t.min_customers)
        .filter(|m| *m > customers)
        .min()
        .map(|next| next - 1);
    Guard { low, high }
}

/// What recording one attributed payment changes in its affiliate's count,
/// decided from the count it read.
#[derive(Debug, Clone, PartialEq)]
pub struct Counted {
    /// The count the commission is decided from (this payment's customer included).
    pub customers: u32,
    /// Whether this payment adds a customer (its first payment).
    pub adds: bool,
    /// The tier to record, when it is not the one recorded.
    pub change: Option<Option<TierMark>>,
    /// The counts the commit must find, when the campaign has tiers.
    pub guard: Option<Guard>,
}

/// Counts a payment: a first payment adds its customer; the tier reached is
/// recorded when it differs from the recorded one. With tiers, the commit
/// holds the count to the band decided from; a payment that moves the
/// count across a boundary holds it to exactly what it read, so one
/// records the change.
pub fn count(tiers: &[Tier], read: &Referred, first_payment: bool, now: DateTime<Utc>) -> Counted {
    let customers = read.customers.saturating_add(u32::from(first_payment));
    let reached = tier_for(tiers, customers).map(|(_, t)| t.name.as_str());
    let change = (reached != read.tier.as_ref().map(|t| t.name.as_str())).then(|| {
        reached.map(|name| TierMark {
            name: name.to_string(),
            since: now,
        })
    });
    let guard = (!tiers.is_empty()).then(|| match (first_payment, &change) {
        (_, Some(_)) => Guard {
            low: read.customers,
            high: Some(read.customers),
        },
        (false, None) => band(tiers, read.customers),
        // The stored count plus one must stay in the band without
        // crossing into it: from its bottom to one below its top.
        (true, None) => {
            let b = band(tiers, customers);
            Guard {
                low: b.low.min(read.customers),
                high: b.high.map(|h| h.saturating_sub(1)),
            }
        }
    });
    Counted {
        customers,
        adds: first_payment,
        change,
        guard,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tiers(mins: &[u32]) -> Vec<Tier> {
        mins.iter()
            .map(|m| {
                serde_json::from_value(json!({"name": format!("T{m}"), "minCustomers": m,
                    "pay": {"type": "PERCENTAGE", "value": m}}))
                .unwrap()
            })
            .collect()
    }

    fn at() -> DateTime<Utc> {
        crate::timestamp::parse_datetime("2026-05-01T00:00:00Z").unwrap()
    }

    fn read(customers: u32, tier: Option<&str>) -> Referred {
        Referred {
            customers,
            tier: tier.map(|name| TierMark {
                name: name.into(),
                since: at(),
            }),
        }
    }

    #[test]
    fn the_tier_is_the_highest_reached() {
        let t = tiers(&[3, 10]);
        let name = |n| tier_for(&t, n).map(|(i, t)| (i, t.name.clone()));
        assert_eq!(name(0), None);
        assert_eq!(name(2), None);
        assert_eq!(name(3), Some((0, "T3".into())));
        assert_eq!(name(9), Some((0, "T3".into())));
        assert_eq!(name(10), Some((1, "T10".into())));
        assert_eq!(name(u32::MAX), Some((1, "T10".into())));
    }

    #[test]
    fn a_crossing_payment_changes_the_tier_once_under_the_exact_count() {
        let t = tiers(&[3, 10]);
        let c = count(&t, &read(2, None), true, at());
        assert_eq!(c.customers, 3);
        let mark = c.change.clone().flatten().unwrap();
        assert_eq!(mark.name, "T3");
        assert_eq!(
            c.guard,
            Some(Guard {
                low: 2,
                high: Some(2)
            })
        );
        // Inside a band: the stored count may move, the band may not.
        let c = count(&t, &read(4, Some("T3")), true, at());
        assert_eq!((c.customers, c.change.clone()), (5, None));
        assert_eq!(
            c.guard,
            Some(Guard {
                low: 3,
                high: Some(8)
            })
        );
        // A later payment of a known customer adds none.
        let c = count(&t, &read(9, Some("T3")), false, at());
        assert_eq!((c.customers, c.adds, c.change.clone()), (9, false, None));
        assert_eq!(
            c.guard,
            Some(Guard {
                low: 3,
                high: Some(9)
            })
        );
        let c = count(&t, &read(12, Some("T10")), true, at());
        assert_eq!(
            c.guard,
            Some(Guard {
                low: 10,
                high: None
            })
        );
    }

    #[test]
    fn below_the_first_tier_and_without_tiers() {
        let t = tiers(&[3]);
        let c = count(&t, &read(0, None), true, at());
        assert_eq!((c.customers, c.change.clone()), (1, None));
        assert_eq!(
            c.guard,
            Some(Guard {
                low: 0,
                high: Some(1)
            })
        );
        let c = count(&[], &read(41, None), true, at());
        assert_eq!((c.customers, c.adds, c.guard), (42, true, None));
        assert_eq!(c.change, None);
        // Tiers removed: the recorded tier is cleared once.
        let c = count(&[], &read(41, Some("T3")), false, at());
        assert_eq!(c.change, Some(None));
    }

    #[test]
    fn tiers_are_checked_in_order() {
        let mut issues = Issues::new();
        check_tiers(&tiers(&[3, 3, 2]), &mut issues);
        let Err(crate::error::Error::Validation(all)) = issues.finish() else {
            panic!("accepted");
        };
        let paths: Vec<_> = all.into_iter().map(|i| json!(i.path)).collect();
        assert_eq!(
            paths,
            [
                json!(["tiers", 1, "minCustomers"]),
                json!(["tiers", 2, "minCustomers"])
            ]
        );
        let mut issues = Issues::new();
        check_tiers(&tiers(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]), &mut issues);
        assert!(issues.finish().is_err());
        let mut issues = Issues::new();
        check_tiers(&tiers(&[1, 5]), &mut issues);
        assert!(issues.finish().is_ok());
    }
}
