//! Update expressions built from parts (SET, REMOVE, counters, equality
//! conditions), so a state change writes only the attributes it owns and
//! never clobbers fields another writer maintains.

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};

use crate::attrs;
use crate::{item_key, number_value, string_value, Item, Store};
use domain::error::Result;
use domain::payout::PayoutWork;
use domain::status::{Status, Transition};

/// One item's update and the conditions it is applied under: the one way a
/// conditional write (an UpdateItem, or a transaction's Update, Delete or
/// ConditionCheck, see `store::tx`) is spelled.
#[derive(Debug, Clone, Default)]
pub struct UpdateExpr {
    sets: Vec<String>,
    removes: Vec<String>,
    adds: Vec<String>,
    conditions: Vec<String>,
    names: HashMap<String, String>,
    values: Item,
}

/// What a conditional update did.
#[derive(Debug)]
pub enum Updated {
    /// Applied; the item as it is now.
    Applied(Item),
    /// The condition failed; the item as it was (none when it does not exist).
    Refused(Option<Item>),
}

impl UpdateExpr {
    /// An empty update.
    pub fn new() -> Self {
        Self::default()
    }

    fn name(&mut self, attr: &str) -> String {
        if let Some((k, _)) = self.names.iter().find(|(_, v)| v.as_str() == attr) {
            return k.clone();
        }
        let k = format!("#a{}", self.names.len());
        self.names.insert(k.clone(), attr.to_string());
        k
    }

    fn value(&mut self, v: AttributeValue) -> String {
        let k = format!(":v{}", self.values.len());
        self.values.insert(k.clone(), v);
        k
    }

    /// `SET attr = value`.
    pub fn set(mut self, attr: &str, v: AttributeValue) -> Self {
        let (a, v) = (self.name(attr), self.value(v));
        self.sets.push(format!("{a} = {v}"));
        self
    }

    /// `SET` when there is a value, `REMOVE` when there is none.
    pub fn set_or_remove(self, attr: &str, v: Option<AttributeValue>) -> Self {
        match v {
            Some(v) => self.set(attr, v),
            None => self.remove(attr),
        }
    }

    /// `REMOVE attr`.
    pub fn remove(mut self, attr: &str) -> Self {
        let a = self.name(attr);
        self.removes.push(a);
        self
    }

    /// Adds one to a numeric attribute (a missing one counts as 0).
    pub fn increment(mut self, attr: &str) -> Self {
        let a = self.name(attr);
        let (zero, one) = (self.value(number_value(0)), self.value(number_value(1)));
        self.sets
            .push(format!("{a} = if_not_exists({a}, {zero}) + {one}"));
        self
    }

    /// `ADD attr value`: adds to a number (a missing one counts as 0).
    pub fn add(mut self, attr: &str, v: AttributeValue) -> Self {
        let (a, v) = (self.name(attr), self.value(v));
        self.adds.push(format!("{a} {v}"));
        self
    }

    /// `SET attr = value` only when the attribute is missing (keeps the first value).
    pub fn set_if_absent(mut self, attr: &str, v: AttributeValue) -> Self {
        let (a, v) = (self.name(attr), self.value(v));
        self.sets.push(format!("{a} = if_not_exists({a}, {v})"));
        self
    }

    /// Copies `attrs` from a full item: set when present there, removed when absent.
    pub fn copy_from(mut self, item: &Item, attrs: &[&str]) -> Self {
        for attr in attrs {
            self = self.set_or_remove(attr, item.get(*attr).cloned());
        }
        self
    }

    /// Applies only while `attr = value` (a missing item or attribute fails).
    pub fn when_eq(mut self, attr: &str, v: AttributeValue) -> Self {
        let (a, v) = (self.name(attr), self.value(v));
        self.conditions.push(format!("{a} = {v}"));
        self
    }

    /// Applies only while the record is in `status`, the one the domain
    /// decided from (the only place a status becomes a condition).
    pub fn when_status<S: Status>(self, status: S) -> Self {
        self.when_eq(attrs::STATUS, string_value(status.name()))
    }

    /// Applies only while a payout has `work` under way.
    pub fn when_work(self, work: PayoutWork) -> Self {
        self.when_eq(attrs::WORK, string_value(work.as_str()))
    }

    /// Moves the record along a transition the domain decided: `to`, only
    /// while it is still in `from`.
    pub fn transition<S: Status>(self, t: Transition<S>) -> Self {
        self.set(attrs::STATUS, string_value(t.to.name()))
            .when_status(t.from)
    }

    /// Applies only while the item exists.
    pub fn when_exists(mut self) -> Self {
        let a = self.name(attrs::PK);
        self.conditions.push(format!("attribute_exists({a})"));
        self
    }

    /// Applies only while the item does not exist (a Put that creates).
    pub fn when_new(mut self) -> Self {
        let a = self.name(attrs::PK);
        self.conditions.push(format!("attribute_not_exists({a})"));
        self
    }

    /// Applies only while `attr` is missing (or the item is).
    pub fn when_absent(mut self, attr: &str) -> Self {
        let a = self.name(attr);
        self.conditions.push(format!("attribute_not_exists({a})"));
        self
    }

    /// Applies while `attr` is missing or equal to `value`.
    pub fn when_absent_or_eq(mut self, attr: &str, v: AttributeValue) -> Self {
        let (a, v) = (self.name(attr), self.value(v));
        self.conditions
            .push(format!("(attribute_not_exists({a}) OR {a} = {v})"));
        self
    }

    /// Applies while the counter `attr` reads `n`: a counter at zero is left
    /// out of its item (`store::compact`), so zero also matches its absence.
    pub fn when_count(self, attr: &str, n: u64) -> Self {
        match n {
            0 => self.when_absent_or_eq(attr, number_value(0)),
            _ => self.when_eq(attr, number_value(n)),
        }
    }

    /// Applies while the counter `attr` reads from `low` through `high`
    /// (none: no upper bound); a counter at zero may be absent.
    pub fn when_count_within(mut self, attr: &str, low: u32, high: Option<u32>) -> Self {
        let a = self.name(attr);
        let lo = self.value(number_value(low));
        let within = match high {
            Some(h) => {
                let hi = self.value(number_value(h));
                format!("{a} BETWEEN {lo} AND {hi}")
            }
            None => format!("{a} >= {lo}"),
        };
        self.conditions.push(match low {
            0 => format!("(attribute_not_exists({a}) OR {within})"),
            _ => within,
        });
        self
    }

    /// Applies while the number `attr` is missing or below `value`.
    pub fn when_absent_or_below(mut self, attr: &str, v: AttributeValue) -> Self {
        let (a, v) = (self.name(attr), self.value(v));
        self.conditions
            .push(format!("(attribute_not_exists({a}) OR {a} < {v})"));
        self
    }

    /// Applies while the number `attr` is above `value`.
    pub fn when_above(mut self, attr: &str, v: AttributeValue) -> Self {
        let (a, v) = (self.name(attr), self.value(v));
        self.conditions.push(format!("{a} > {v}"));
        self
    }

    /// Applies only while the record belongs to `tenant` (so it also exists).
    pub fn when_tenant(self, tenant_key: &str) -> Self {
        self.when_eq(attrs::TENANT, string_value(tenant_key))
    }

    /// Applies only while the tenant's record is as it was read: still at
    /// `version`, so nobody changed it since.
    pub fn when_as_read(self, tenant_key: &str, version: u64) -> Self {
        self.when_tenant(tenant_key)
            .when_eq(attrs::VERSION, number_value(version))
    }

    /// The update expression.
    pub fn expression(&self) -> String {
        let mut out = String::new();
        if !self.sets.is_empty() {
            out.push_str("SET ");
            out.push_str(&self.sets.join(", "));
        }
        if !self.removes.is_empty() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str("REMOVE ");
            out.push_str(&self.removes.join(", "));
        }
        if !self.adds.is_empty() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str("ADD ");
            out.push_str(&self.adds.join(", "));
        }
        out
    }

    /// The attribute names the expressions use (none: `None`, as the SDK wants).
    pub(crate) fn names(&self) -> Option<HashMap<String, String>> {
        (!self.names.is_empty()).then(|| self.names.clone())
    }

    /// The values the expressions use (none: `None`, as the SDK wants).
    pub(crate) fn values(&self) -> Option<Item> {
        (!self.values.is_empty()).then(|| self.values.clone())
    }

    /// The condition expression, if any.
    pub fn condition(&self) -> Option<String> {
        (!self.conditions.is_empty()).then(|| self.conditions.join(" AND "))
    }
}

impl Store {
    /// Applies an [`UpdateExpr`] to one item; a failed condition is an answer, not an error.
    pub async fn update(&self, pk: &str, sk: &str, u: &UpdateExpr) -> Result<Updated> {
        let call = self
            .client()
            .update_item()
            .table_name(self.table())
            .set_key(Some(item_key(pk, sk)))
            .update_expression(u.expression())
            .set_condition_expression(u.condition())
            .set_expression_attribute_names(u.names())
            .set_expression_attribute_values(u.values())
            .return_values(ReturnValue::AllNew);
        Ok(match conditional!(self, call, UpdateItemError) {
            Ok(out) => Updated::Applied(out.attributes.unwrap_or_default()),
            Err(old) => Updated::Refused(old),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_set_remove_and_conditions_with_placeholders() {
        let u = UpdateExpr::new()
            .set("status", string_value("ON"))
            .remove("gsi1pk")
            .increment("version")
            .when_eq("status", string_value("OFF"))
            .when_tenant("acct_1#test");
        assert_eq!(
            u.expression(),
            "SET #a0 = :v0, #a2 = if_not_exists(#a2, :v1) + :v2 REMOVE #a1"
        );
        assert_eq!(u.condition().unwrap(), "#a0 = :v3 AND #a3 = :v4");
        assert_eq!(u.names.get("#a0").map(String::as_str), Some("status"));
        assert_eq!(u.values.get(":v4"), Some(&string_value("acct_1#test")));
        let item: Item = HashMap::from([("name".to_string(), string_value("x"))]);
        let u = UpdateExpr::new().copy_from(&item, &["name", "website"]);
        assert_eq!(u.expression(), "SET #a0 = :v0 REMOVE #a1");
    }

    #[test]
    fn a_decided_transition_sets_its_status_while_the_record_is_in_its_from() {
        use domain::webhook::EndpointChange;
        let u = UpdateExpr::new().transition(EndpointChange::DISABLING);
        assert_eq!(u.expression(), "SET #a0 = :v0");
        assert_eq!(u.condition().unwrap(), "#a0 = :v1");
        assert_eq!(u.names.get("#a0").map(String::as_str), Some(attrs::STATUS));
        assert_eq!(u.values.get(":v0"), Some(&string_value("DISABLED")));
        assert_eq!(u.values.get(":v1"), Some(&string_value("ENABLED")));
    }

    #[test]
    fn builds_counters_first_values_and_alternative_conditions() {
        let u = UpdateExpr::new()
            .add("count", number_value(1))
            .set_if_absent("ttl", number_value(99))
            .when_absent_or_below("count", number_value(3));
        assert_eq!(
            u.expression(),
            "SET #a1 = if_not_exists(#a1, :v1) ADD #a0 :v0"
        );
        assert_eq!(
            u.condition().unwrap(),
            "(attribute_not_exists(#a0) OR #a0 < :v2)"
        );
        let u = UpdateExpr::new()
            .set("firstPaymentAt", string_value("t"))
            .when_exists()
            .when_absent("firstPaymentAt");
        assert_eq!(
            u.condition().unwrap(),
            "attribute_exists(#a1) AND attribute_not_exists(#a0)"
        );
        let u = UpdateExpr::new().when_new();
        assert_eq!(u.expression(), "");
        assert_eq!(u.condition().unwrap(), "attribute_not_exists(#a0)");
        assert!(UpdateExpr::new().values().is_none());
    }
}
