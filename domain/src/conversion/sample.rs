//! One stored conversion for the tests of every crate (the `testing`
//! feature): a test states only the fields it is about.

use serde_json::{json, Value};

use super::Conversion;

/// A PENDING SALE of 49.99 USD earning 5.00 by code (`cnv_1`, order
/// `order-1`, `aff_1` in `cmp_1`), occurred, created and updated on
/// 2 January 2026 at 10:00 UTC, payable 30 days on. `fields` replace any of
/// these, or add others, by their stored names.
pub fn stored(fields: Value) -> Conversion {
    let mut c = json!({
        "id": "cnv_1", "externalId": "order-1", "campaignId": "cmp_1",
        "affiliateId": "aff_1", "amount": "49.99", "currency": "USD",
        "conversionType": "SALE", "commission": "5.00", "status": "PENDING",
        "attribution": "CODE", "holdDays": 30,
        "payableAt": "2026-02-01T10:00:00.000Z",
        "occurredAt": "2026-01-02T10:00:00.000Z",
        "createdAt": "2026-01-02T10:00:00.000Z",
        "updatedAt": "2026-01-02T10:00:00.000Z",
    });
    if let (Some(base), Value::Object(given)) = (c.as_object_mut(), fields) {
        base.extend(given);
    }
    serde_json::from_value(c).expect("a stored conversion")
}
