//! Links that arrived before their payment. Since Stripe API version
//! `2025-03-31.basil` an invoice names no payment intent or charge: its
//! `invoice_payment.paid` event links them, in either order with the
//! invoice's own event. A link whose payment is not recorded yet is kept
//! (`pk = LINK#<tenant>#<payment id>`, `sk = LINK`) for 30 days and read
//! when the payment is recorded.

use chrono::{DateTime, Duration, Utc};

use crate::attrs;
use crate::keys;
use crate::{from_item, item_at, number_value, string_value, Store};
use domain::connector::Link;
use domain::error::Result;
use domain::tenant::Tenant;

/// How long a link waits for its payment.
const KEPT_DAYS: i64 = 30;

/// The sort key of a kept link (one per payment: a later one replaces it).
const SK: &str = "LINK";

/// Keeps a link whose payment is not recorded (one Put).
pub async fn park(store: &Store, tenant: &Tenant, link: &Link, now: DateTime<Utc>) -> Result<()> {
    let mut item = item_at(&keys::parked_link(tenant, &link.payment_id), SK, link)?;
    item.insert(attrs::TENANT.into(), string_value(tenant.key()));
    let expires = (now + Duration::days(KEPT_DAYS)).timestamp();
    item.insert(attrs::TTL.into(), number_value(expires));
    store.put(item).await
}

/// The link kept for a payment recorded under `payment_id` (one GetItem).
pub async fn of_payment(store: &Store, tenant: &Tenant, payment_id: &str) -> Result<Option<Link>> {
    let pk = keys::parked_link(tenant, payment_id);
    match store.get_item(&pk, SK).await? {
        Some(item) => Ok(Some(from_item(item)?)),
        None => Ok(None),
    }
}
