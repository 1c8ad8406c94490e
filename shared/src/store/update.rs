//! Update expressions built from parts (SET, REMOVE, counters, equality
//! conditions), so a state change writes only the attributes it owns and
//! never clobbers fields another writer maintains.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity, ReturnValue};
use aws_sdk_dynamodb::types::{ReturnValuesOnConditionCheckFailure, TransactWriteItem};

use crate::error::Result;
use crate::store::{n, s, Item, Store};

/// One item's update and the conditions it is applied under.
#[derive(Debug, Clone, Default)]
pub struct UpdateExpr {
    sets: Vec<String>,
    removes: Vec<String>,
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
        let (zero, one) = (self.value(n(0)), self.value(n(1)));
        self.sets
            .push(format!("{a} = if_not_exists({a}, {zero}) + {one}"));
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

    /// Applies only while the record belongs to `tenant` (so it also exists).
    pub fn when_tenant(self, tenant_key: &str) -> Self {
        self.when_eq("tenant", s(tenant_key))
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
        out
    }

    /// The condition expression, if any.
    pub fn condition(&self) -> Option<String> {
        (!self.conditions.is_empty()).then(|| self.conditions.join(" AND "))
    }
}

impl Store {
    /// An Update action for a transaction from an [`UpdateExpr`].
    pub fn tx_update_expr(&self, pk: &str, sk: &str, u: &UpdateExpr) -> TransactWriteItem {
        self.tx_update(
            pk,
            sk,
            &u.expression(),
            u.condition().as_deref(),
            u.names.clone(),
            u.values.clone(),
        )
    }

    /// Applies an [`UpdateExpr`] to one item; a failed condition is an answer, not an error.
    pub async fn update(&self, pk: &str, sk: &str, u: &UpdateExpr) -> Result<Updated> {
        let res = self
            .client()
            .update_item()
            .table_name(self.table())
            .key("pk", s(pk))
            .key("sk", s(sk))
            .update_expression(u.expression())
            .set_condition_expression(u.condition())
            .set_expression_attribute_names((!u.names.is_empty()).then(|| u.names.clone()))
            .set_expression_attribute_values((!u.values.is_empty()).then(|| u.values.clone()))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        match res {
            Ok(out) => {
                self.metrics().record_write_total(out.consumed_capacity());
                Ok(Updated::Applied(out.attributes.unwrap_or_default()))
            }
            Err(SdkError::ServiceError(e)) if e.err().is_conditional_check_failed_exception() => {
                let old = match e.err() {
                    aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(c) => {
                        c.item().cloned()
                    }
                    _ => None,
                };
                Ok(Updated::Refused(old))
            }
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_set_remove_and_conditions_with_placeholders() {
        let u = UpdateExpr::new()
            .set("status", s("ACTIVE"))
            .remove("gsi1pk")
            .increment("version")
            .when_eq("status", s("PENDING"))
            .when_tenant("acct_1#test");
        assert_eq!(
            u.expression(),
            "SET #a0 = :v0, #a2 = if_not_exists(#a2, :v1) + :v2 REMOVE #a1"
        );
        assert_eq!(u.condition().unwrap(), "#a0 = :v3 AND #a3 = :v4");
        assert_eq!(u.names.get("#a0").map(String::as_str), Some("status"));
        assert_eq!(u.values.get(":v4"), Some(&s("acct_1#test")));
        let item: Item = HashMap::from([("name".to_string(), s("x"))]);
        let u = UpdateExpr::new().copy_from(&item, &["name", "website"]);
        assert_eq!(u.expression(), "SET #a0 = :v0 REMOVE #a1");
    }
}
