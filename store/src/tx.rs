//! Transactions whose actions are named by their role.
//!
//! A write plan becomes one `TransactWriteItems` call. Each action is pushed
//! with a role (a small enum of the caller's, such as "the externalId guard"
//! or "a referral"), and a cancelled transaction is read back by role, never
//! by position: `e.failed(Role::Guard)`. Every condition is spelled with the
//! one builder, [`UpdateExpr`].

use std::time::Duration;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    ConditionCheck, Delete, Put, ReturnConsumedCapacity, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, Update,
};

use crate::update::UpdateExpr;
use crate::{item_key, Item, Store};
use domain::error::Error;

/// Most actions DynamoDB takes in one transaction.
pub const MAX_ACTIONS: usize = 100;
/// Tries of a transaction that lost a race to another transaction (not a condition).
const CONFLICT_ATTEMPTS: u32 = 8;
/// The cancellation code of an action whose condition was false.
const CONDITION_FAILED: &str = "ConditionalCheckFailed";

/// The actions of one transaction, each with its role.
#[derive(Debug, Clone)]
pub struct Tx<R> {
    table: String,
    actions: Vec<(R, TransactWriteItem)>,
    /// The first action that could not be built; reported by `Store::transact`.
    broken: Option<String>,
}

/// Why a transaction did not apply.
#[derive(Debug)]
pub enum TxError<R> {
    /// Cancelled: per action, its role, the cancellation code and the item as it was.
    Cancelled(Vec<(R, Option<String>, Option<Item>)>),
    /// Anything else.
    Failed(Error),
}

impl<R> From<Error> for TxError<R> {
    fn from(e: Error) -> Self {
        TxError::Failed(e)
    }
}

impl<R: Copy + PartialEq + std::fmt::Debug> TxError<R> {
    /// True when an action of `role` failed its condition.
    pub fn failed(&self, role: R) -> bool {
        self.failure(role).is_some()
    }

    /// The old item of the first action of `role` that failed its condition
    /// (none when that item did not exist).
    pub fn old_item(&self, role: R) -> Option<&Item> {
        self.failure(role).and_then(Option::as_ref)
    }

    /// The old items of every action of `role` that failed its condition.
    pub fn old_items(&self, role: R) -> Vec<&Item> {
        match self {
            TxError::Cancelled(r) => r
                .iter()
                .filter(|(rl, code, _)| *rl == role && code.as_deref() == Some(CONDITION_FAILED))
                .filter_map(|(_, _, item)| item.as_ref())
                .collect(),
            TxError::Failed(_) => Vec::new(),
        }
    }

    fn failure(&self, role: R) -> Option<&Option<Item>> {
        match self {
            TxError::Cancelled(r) => r
                .iter()
                .find(|(rl, code, _)| *rl == role && code.as_deref() == Some(CONDITION_FAILED))
                .map(|(_, _, item)| item),
            TxError::Failed(_) => None,
        }
    }

    /// Turns an unexplained cancellation into an internal error.
    pub fn into_error(self) -> Error {
        match self {
            TxError::Failed(e) => e,
            TxError::Cancelled(r) => Error::internal(format!(
                "transaction cancelled: {:?}",
                r.iter()
                    .filter(|(_, code, _)| code.as_deref().is_some_and(|c| c != "None"))
                    .map(|(role, code, _)| (role, code))
                    .collect::<Vec<_>>()
            )),
        }
    }
}

impl<R: Copy> Tx<R> {
    /// Adds a Put that creates the item (fails when its key exists).
    pub fn put_new(&mut self, role: R, item: Item) -> &mut Self {
        self.put(role, item, &UpdateExpr::new().when_new())
    }

    /// Adds a Put under the conditions of `when` (an expression of conditions only).
    pub fn put(&mut self, role: R, item: Item, when: &UpdateExpr) -> &mut Self {
        let built = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .set_condition_expression(when.condition())
            .set_expression_attribute_names(when.condition().and(when.names()))
            .set_expression_attribute_values(when.condition().and(when.values()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map(|p| TransactWriteItem::builder().put(p).build());
        self.push(role, built)
    }

    /// Adds an Update of one item.
    pub fn update(&mut self, role: R, pk: &str, sk: &str, u: &UpdateExpr) -> &mut Self {
        let built = Update::builder()
            .table_name(&self.table)
            .set_key(Some(item_key(pk, sk)))
            .update_expression(u.expression())
            .set_condition_expression(u.condition())
            .set_expression_attribute_names(u.names())
            .set_expression_attribute_values(u.values())
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map(|u| TransactWriteItem::builder().update(u).build());
        self.push(role, built)
    }

    /// Adds a ConditionCheck: it writes nothing (so no index entry is
    /// rewritten), yet cancels the transaction when `when` (conditions only) is false.
    pub fn check(&mut self, role: R, pk: &str, sk: &str, when: &UpdateExpr) -> &mut Self {
        let built = ConditionCheck::builder()
            .table_name(&self.table)
            .set_key(Some(item_key(pk, sk)))
            .condition_expression(when.condition().unwrap_or_default())
            .set_expression_attribute_names(when.names())
            .set_expression_attribute_values(when.values())
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map(|c| TransactWriteItem::builder().condition_check(c).build());
        self.push(role, built)
    }

    /// Adds a Delete of one item under `when` (conditions only).
    pub fn delete(&mut self, role: R, pk: &str, sk: &str, when: &UpdateExpr) -> &mut Self {
        let built = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(item_key(pk, sk)))
            .set_condition_expression(when.condition())
            .set_expression_attribute_names(when.condition().and(when.names()))
            .set_expression_attribute_values(when.condition().and(when.values()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map(|d| TransactWriteItem::builder().delete(d).build());
        self.push(role, built)
    }

    /// Moves every action of `other` into this transaction.
    pub fn append(&mut self, other: Tx<R>) -> &mut Self {
        self.actions.extend(other.actions);
        if self.broken.is_none() {
            self.broken = other.broken;
        }
        self
    }

    /// How many actions it holds.
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    /// Whether it holds no action.
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    fn push<E: std::fmt::Display>(
        &mut self,
        role: R,
        built: std::result::Result<TransactWriteItem, E>,
    ) -> &mut Self {
        match built {
            Ok(action) => self.actions.push((role, action)),
            Err(e) => {
                self.broken.get_or_insert_with(|| e.to_string());
            }
        }
        self
    }
}

/// The reasons of a cancellation, with the roles of their actions.
fn cancellation<R: Copy>(
    roles: &[R],
    c: &aws_sdk_dynamodb::types::error::TransactionCanceledException,
) -> Vec<(R, Option<String>, Option<Item>)> {
    roles
        .iter()
        .zip(c.cancellation_reasons())
        .map(|(role, r)| (*role, r.code().map(str::to_string), r.item().cloned()))
        .collect()
}

#[cfg(test)]
impl<R> Tx<R> {
    /// An empty transaction on `table`, without a store (tests).
    pub(crate) fn on(table: &str) -> Tx<R> {
        Tx {
            table: table.to_string(),
            actions: Vec::new(),
            broken: None,
        }
    }

    /// Its actions, in order (tests).
    pub(crate) fn actions(&self) -> &[(R, TransactWriteItem)] {
        &self.actions
    }
}

impl Store {
    /// An empty transaction on this table.
    pub fn tx<R>(&self) -> Tx<R> {
        Tx {
            table: self.table().to_string(),
            actions: Vec::new(),
            broken: None,
        }
    }

    /// Runs a transaction whose refusal is an answer: true when it applied,
    /// false when an action of one of `lost` failed its condition (what that
    /// action checks changed since it was read); any other failure is an error.
    pub async fn transact_unless<R: Copy + PartialEq + std::fmt::Debug>(
        &self,
        tx: Tx<R>,
        lost: &[R],
    ) -> domain::error::Result<bool> {
        match self.transact(tx).await {
            Ok(()) => Ok(true),
            Err(e) if lost.iter().any(|role| e.failed(*role)) => Ok(false),
            Err(e) => Err(e.into_error()),
        }
    }

    /// Runs a transaction. Conflicts with a concurrent transaction are retried,
    /// so a racing writer ends with a clear condition failure, not a conflict.
    pub async fn transact<R: Copy>(&self, tx: Tx<R>) -> std::result::Result<(), TxError<R>> {
        if let Some(e) = tx.broken {
            return Err(TxError::Failed(Error::internal(format!(
                "transaction action: {e}"
            ))));
        }
        let (roles, actions): (Vec<R>, Vec<TransactWriteItem>) = tx.actions.into_iter().unzip();
        let mut tries: u32 = 0;
        loop {
            let res = self
                .client()
                .transact_write_items()
                .set_transact_items(Some(actions.clone()))
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await;
            let ctx = match res {
                Ok(out) => {
                    for cc in out.consumed_capacity() {
                        self.metrics().record_write_total(Some(cc));
                    }
                    return Ok(());
                }
                Err(SdkError::ServiceError(ctx)) => ctx,
                Err(e) => return Err(TxError::Failed(crate::storage_error::sdk(e))),
            };
            let conflict = match ctx.err() {
                TransactWriteItemsError::TransactionCanceledException(c) => {
                    let reasons = cancellation(&roles, c);
                    let conflict = reasons
                        .iter()
                        .any(|(_, c, _)| c.as_deref() == Some("TransactionConflict"));
                    let failed = reasons
                        .iter()
                        .any(|(_, c, _)| c.as_deref() == Some(CONDITION_FAILED));
                    if failed || !conflict {
                        return Err(TxError::Cancelled(reasons));
                    }
                    true
                }
                TransactWriteItemsError::TransactionInProgressException(_) => true,
                _ => false,
            };
            tries += 1;
            if !conflict || tries >= CONFLICT_ATTEMPTS {
                return Err(TxError::Failed(crate::storage_error::sdk(
                    SdkError::ServiceError(ctx),
                )));
            }
            let jitter = rand::random::<u64>() % 20;
            tokio::time::sleep(Duration::from_millis(10 * u64::from(tries) + jitter)).await;
        }
    }
}
