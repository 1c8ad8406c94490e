//! Refunds that arrived before their payment. The contract asks the same
//! result whatever the order of a provider's events, and a refund of a
//! payment not recorded is IGNORED ("unknown payment"): such a refund is
//! kept, under each id its payment may be known by (`pk =
//! REFUND#<tenant>#<payment id>`, `sk` = the refund's identity, so a repeat
//! is the same item), for 30 days, and applied when the payment is
//! recorded.

use chrono::{DateTime, Duration, Utc};
use futures::future::{join_all, try_join_all};

use crate::attrs;
use crate::keys;
use crate::{from_item, item_at, number_value, string_value, Store};
use domain::connector::Refund;
use domain::error::Result;
use domain::tenant::Tenant;

/// How long a refund waits for its payment.
const KEPT_DAYS: i64 = 30;

/// Keeps a refund whose payment is not recorded (one Put per id it names,
/// at once).
pub async fn park(store: &Store, tenant: &Tenant, r: &Refund, now: DateTime<Utc>) -> Result<()> {
    let sk = r.identity();
    let expires = (now + Duration::days(KEPT_DAYS)).timestamp();
    let puts = r.payment_ids.iter().map(|id| {
        let item = item_at(&keys::parked_refunds(tenant, id), &sk, r).map(|mut item| {
            item.insert(attrs::TENANT.into(), string_value(tenant.key()));
            item.insert(attrs::TTL.into(), number_value(expires));
            item
        });
        async move { store.put(item?).await }
    });
    try_join_all(puts).await?;
    Ok(())
}

/// Removes a kept refund once applied (under every id it was kept for, at
/// once), so later deliveries of its payment do not apply it again (which
/// would change nothing, at a read and a write each).
pub async fn discard(store: &Store, tenant: &Tenant, r: &Refund) -> Result<()> {
    let sk = r.identity();
    let deletes = r.payment_ids.iter().map(|id| {
        let pk = keys::parked_refunds(tenant, id);
        let sk = sk.clone();
        async move { store.delete(&pk, &sk).await }
    });
    try_join_all(deletes).await?;
    Ok(())
}

/// The refunds kept for a payment known by `ids` (one Query per id, at
/// once), each once.
pub async fn of_payment(store: &Store, tenant: &Tenant, ids: &[String]) -> Result<Vec<Refund>> {
    let reads = ids.iter().map(|id| {
        let pk = keys::parked_refunds(tenant, id);
        async move { store.query_range(&pk, " ", "~").await }
    });
    let mut found: Vec<Refund> = Vec::new();
    for items in join_all(reads).await {
        for item in items? {
            let r: Refund = from_item(item)?;
            if !found.iter().any(|f| f.identity() == r.identity()) {
                found.push(r);
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::connector::RefundPart;
    use domain::money::Currency;

    #[test]
    fn a_kept_refund_reads_back_as_it_was() {
        for (part, once_key) in [
            (RefundPart::Full, None),
            (
                RefundPart::SoFar {
                    refunded: 600,
                    total: 1200,
                },
                None,
            ),
            (RefundPart::Minor(500), Some("adj_1".to_string())),
        ] {
            let r = Refund {
                payment_ids: vec!["pi_1".into(), "ch_1".into()],
                part,
                once_key,
                currency: Currency::parse("c", "EUR").ok(),
            };
            let item = item_at("REFUND#acct_1#test#pi_1", &r.identity(), &r).unwrap();
            assert_eq!(from_item::<Refund>(item).unwrap(), r);
        }
    }
}
