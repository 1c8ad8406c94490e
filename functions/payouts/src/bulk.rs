//! Per-id bulk calls: each id is handled on its own, a few at a time, and
//! answered in request order as done or failed.

use api::domain::error::{Error, Result};
use api::domain::payout::Payout;
use api::services::payouts::Outcomes;
use api::wire::application::BulkFailure;
use api::wire::payout::PayoutView;
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::future::Future;
use tokio::task::JoinSet;
use tracing::Instrument;

/// Ids handled at once: enough to finish 100 well inside the request
/// timeout, few enough not to flood the table or the provider.
const CONCURRENCY: usize = 8;

/// Runs `op` for every id, at most [`CONCURRENCY`] at a time; the results
/// keep the ids' order.
pub async fn each_id<F, Fut>(ids: Vec<String>, op: F) -> Outcomes
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<Payout>> + Send + 'static,
{
    let mut results: Vec<Option<Result<Payout>>> = ids.iter().map(|_| None).collect();
    let mut running = JoinSet::new();
    for (i, id) in ids.iter().enumerate() {
        if running.len() >= CONCURRENCY {
            collect(running.join_next().await, &mut results);
        }
        let work = op(id.clone());
        running.spawn(async move { (i, work.await) }.instrument(tracing::Span::current()));
    }
    while let Some(done) = running.join_next().await {
        collect(Some(done), &mut results);
    }
    ids.into_iter()
        .zip(results)
        .map(|(id, r)| {
            let r = r.unwrap_or_else(|| Err(Error::internal("bulk task was lost")));
            (id, r)
        })
        .collect()
}

type Joined = std::result::Result<(usize, Result<Payout>), tokio::task::JoinError>;

fn collect(done: Option<Joined>, results: &mut [Option<Result<Payout>>]) {
    match done {
        Some(Ok((i, r))) => results[i] = Some(r),
        // A task that panicked leaves its slot empty: reported as internal.
        Some(Err(e)) => tracing::error!(error = %e, "bulk task failed"),
        None => {}
    }
}

/// A bulk answer: `{<done>: [payout...], failed: [{id, code, message}]}`;
/// every id lands in exactly one list.
pub struct BulkView<'a> {
    key: &'static str,
    done: Vec<PayoutView<'a>>,
    failed: Vec<BulkFailure>,
}

impl<'a> BulkView<'a> {
    /// Sorts the results into the `key` list and `failed`.
    pub fn new(key: &'static str, results: &'a [(String, Result<Payout>)]) -> Self {
        let mut view = BulkView {
            key,
            done: Vec::new(),
            failed: Vec::new(),
        };
        for (id, result) in results {
            match result {
                Ok(p) => view.done.push(PayoutView::from(p)),
                Err(e) => view.failed.push(BulkFailure::new(id.clone(), e)),
            }
        }
        view
    }
}

impl Serialize for BulkView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry(self.key, &self.done)?;
        map.serialize_entry("failed", &self.failed)?;
        map.end()
    }
}

/// The failure entry of a payout bulk answer, in the description.
fn failure_schema() -> serde_json::Value {
    serde_json::json!({"type": "object", "required": ["id", "code", "message"], "properties": {"id": {"type": "string"}, "code": {"$ref": "#/components/schemas/ErrorCode"}, "message": {"type": "string"}}, "description": "`code` is NOT_FOUND (unknown, malformed, another account's or the other mode's id), INVALID_STATE (the payout's state forbids it) or SERVICE_UNAVAILABLE (the payment provider failed for this id and the payout is APPROVED again, or storage was unavailable: retry it); SERVER_ERROR for an internal failure of that id."})
}

/// `BatchProcessResult` in the description.
pub struct BatchProcessResult;

api::described!(
    BatchProcessResult,
    "BatchProcessResult",
    serde_json::json!({"type": "object", "required": ["processed", "failed"], "properties": {"processed": {"type": "array", "items": {"$ref": "#/components/schemas/Payout"}}, "failed": {"type": "array", "items": {"$ref": "#/components/schemas/PayoutBulkFailure"}}}, "description": "Every distinct id lands in exactly one list, in request order. A processed payout is PAID (sandbox) or PROCESSING (manual provider)."}),
    [("PayoutBulkFailure", failure_schema())]
);

/// `BulkCancelResult` in the description.
pub struct BulkCancelResult;

api::described!(
    BulkCancelResult,
    "BulkCancelResult",
    serde_json::json!({"type": "object", "required": ["cancelled", "failed"], "properties": {"cancelled": {"type": "array", "items": {"$ref": "#/components/schemas/Payout"}}, "failed": {"type": "array", "items": {"$ref": "#/components/schemas/PayoutBulkFailure"}}}, "description": "Every distinct id lands in exactly one list, in request order."}),
    [("PayoutBulkFailure", failure_schema())]
);
