//! Attributes a record's item leaves out while its keys or its other
//! attributes already say them, derived again when it is read: a write,
//! and each of the item's index entries, costs a unit per KB, so a record
//! that stays under 1 KB through its moves costs half. Items written with
//! every attribute read the same.
//!
//! Left out: `id` (the `pk`); `campaignId` and `affiliateId` while they end
//! the item's GSI2 and GSI4 partition keys; an attribute equal to another
//! (a timestamp not moved since); a counter at zero (its field defaults to
//! 0, and `ADD` starts it again).

use aws_sdk_dynamodb::types::AttributeValue;

use crate::attrs::{self, ID};
use crate::keys::{ListKind, Partition};
use crate::{string_of, string_value, Item};
use domain::tenant::Tenant;

/// The ids that end an index partition's key: (attribute, index, partition).
const IN_PARTITION: [(&str, PartitionOf); 2] = [
    (attrs::CAMPAIGN_ID, ListKind::of_campaign),
    (attrs::AFFILIATE_ID, ListKind::of_affiliate),
];
type PartitionOf = fn(ListKind, &Tenant, &str) -> Partition;

/// What one kind of record leaves out.
#[derive(Debug, Clone, Copy)]
pub struct Derived {
    /// The kind whose GSI2 and GSI4 partitions end with its campaign and affiliate.
    pub kind: ListKind,
    /// `(attribute, equal to)`: left out in this order while equal, so a
    /// chain (`updatedAt` = `createdAt` = `occurredAt`) compares values as
    /// stored; derived again in the reverse order.
    pub same_as: &'static [(&'static str, &'static str)],
    /// Counters left out at zero.
    pub zero: &'static [&'static str],
}

impl Derived {
    /// Removes from `item` what [`Derived::restore`] gives back.
    pub fn leave_out(&self, item: &mut Item) {
        item.remove(ID);
        for (attr, partition) in IN_PARTITION {
            let ends = id_in_partition(item, self.kind, partition);
            if string_of(item, attr).is_some() && string_of(item, attr).map(str::to_string) == ends
            {
                item.remove(attr);
            }
        }
        for (attr, from) in self.same_as {
            if item.get(*attr).is_some() && item.get(*attr) == item.get(*from) {
                item.remove(*attr);
            }
        }
        for attr in self.zero {
            if matches!(item.get(*attr), Some(AttributeValue::N(n)) if n == "0") {
                item.remove(*attr);
            }
        }
    }

    /// Adds back to `item` what [`Derived::leave_out`] removed (counters
    /// come back through their fields' defaults).
    pub fn restore(&self, item: &mut Item) {
        if let (false, Some(pk)) = (item.contains_key(ID), item.get(attrs::PK).cloned()) {
            item.insert(ID.into(), pk);
        }
        for (attr, partition) in IN_PARTITION {
            if let (false, Some(id)) = (
                item.contains_key(attr),
                id_in_partition(item, self.kind, partition),
            ) {
                item.insert(attr.into(), string_value(id));
            }
        }
        for (attr, from) in self.same_as.iter().rev() {
            if let (false, Some(v)) = (item.contains_key(*attr), item.get(*from).cloned()) {
                item.insert((*attr).into(), v);
            }
        }
    }
}

/// The id a list partition key of the item ends with, when it is that
/// list's partition of the item's tenant for `kind`.
fn id_in_partition(item: &Item, kind: ListKind, partition: PartitionOf) -> Option<String> {
    let tenant = Tenant::from_key(string_of(item, attrs::TENANT)?)?;
    let (index, prefix) = partition(kind, &tenant, "");
    Some(
        string_of(item, index.pk())?
            .strip_prefix(&prefix)?
            .to_string(),
    )
}
