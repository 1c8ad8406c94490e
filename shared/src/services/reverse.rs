//! Reversing (refunding) a conversion: read the conversion and the payout
//! holding it, decide in `Conversion::reverse`, commit the change with its
//! rollups, totals, clawback and event; a concurrent change reads again.

use chrono::{DateTime, Utc};

use crate::domain::conversion::{Conversion, ReverseRequest};
use crate::domain::tenant::Tenant;
use crate::error::Result;
use crate::retry::{retry_on_conflict, Attempt};
use crate::store::conversions;
use crate::store::Store;

/// Times a reversal is planned again after a concurrent write to the conversion.
const REVERSE_ATTEMPTS: usize = 3;

/// Reverses a conversion, in full or in part, as `Conversion::reverse`
/// decides; the conversion as reversed.
pub async fn reverse(
    store: &Store,
    tenant: &Tenant,
    id: &str,
    request: &ReverseRequest,
    now: DateTime<Utc>,
) -> Result<Conversion> {
    retry_on_conflict(REVERSE_ATTEMPTS, "conversion", || {
        let reason = request.reason.clone();
        async move {
            let facts = conversions::read_reversal(store, tenant, id).await?;
            let r = facts.conversion.reverse(
                facts.payout_status.into(),
                request.amount,
                reason,
                now,
            )?;
            Ok(
                match conversions::commit_reversal(store, tenant, &facts.conversion, &r).await? {
                    true => Attempt::Done(r.reversed),
                    false => Attempt::Conflict,
                },
            )
        }
    })
    .await
}
