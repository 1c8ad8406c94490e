//! A conversion's item: its index entries, the attributes it leaves out
//! while the rest says them, and its decoding.

use rust_decimal::Decimal;

use crate::attrs::{self, CREATED_AT, METADATA, UPDATED_AT};
use crate::compact::Derived;
use crate::keys::{self, Index, ListKind};
use crate::page;
use crate::{from_item, number_value, string_of, string_value, IndexKeys, Item};
use domain::conversion::{Conversion, ConversionType, PayoutStage};
use domain::error::{Error, Result};
use domain::tenant::Tenant;
use domain::timestamp;

/// The attribute of `Conversion::reversed_amount`.
pub(super) const REVERSED_AMOUNT: &str = "reversedAmount";
/// The attribute of `Conversion::commission_reversed` (stored as the decimal's string).
pub const COMMISSION_REVERSED: &str = "commissionReversed";
/// The attribute of `Conversion::commission_clawed_back`.
pub const COMMISSION_CLAWED_BACK: &str = "commissionClawedBack";

/// The stored form of a decimal attribute (serde's: its string), for conditions.
pub fn decimal_value(d: Decimal) -> aws_sdk_dynamodb::types::AttributeValue {
    string_value(d.to_string())
}

/// The index entries of a conversion.
pub fn index_keys(tenant: &Tenant, c: &Conversion) -> IndexKeys {
    let sk = c.sort_key();
    let mut index = IndexKeys::new()
        .at(ListKind::Conversion.all(tenant), &sk)
        .at(ListKind::Conversion.in_status(tenant, c.status), &sk);
    if let Some(cmp) = &c.campaign_id {
        index = index.at(ListKind::Conversion.of_campaign(tenant, cmp), &sk);
    }
    if let Some(aff) = &c.affiliate_id {
        index = index.at(ListKind::Conversion.of_affiliate(tenant, aff), &sk);
    }
    match (c.payout_stage(), &c.affiliate_id) {
        (PayoutStage::AwaitingHold(at), _) => index.with(
            Index::Gsi5,
            keys::due_approval(keys::shard_of(&c.id)),
            keys::at(&at, &c.id),
        ),
        (PayoutStage::Payable, Some(aff)) => index.with(
            Index::Gsi5,
            keys::payable_pool(tenant, aff, c.currency.code()),
            &sk,
        ),
        (PayoutStage::InPayout(po), _) => index.with(Index::Gsi5, keys::payout_members(&po), &sk),
        _ => index,
    }
}

/// The item of a conversion, without what [`decode`] derives again.
pub fn item(tenant: &Tenant, c: &Conversion) -> Result<Item> {
    let mut item = crate::record_item(&c.id, Some(&tenant.key()), c, &index_keys(tenant, c))?;
    item.insert(attrs::AMOUNT_VALUE.into(), number_value(c.amount));
    page::mark_risk(&mut item, &c.risk);
    leave_out_derived(&mut item);
    Ok(item)
}

/// Attributes an item leaves out while they hold only what the rest says,
/// about 250 bytes, so that a conversion stays under 1 KB through its
/// status moves (`store::compact`): `id`, `campaignId`, `affiliateId`,
/// `createdAt` equal to `occurredAt`, `updatedAt` equal to `createdAt`; and
/// here an empty `metadata`, `isRecurring: false`, `conversionType: SALE`,
/// `payableAt` equal to `occurredAt + holdDays` (`Conversion::payable_after`).
const IS_RECURRING: &str = "isRecurring";
const OCCURRED_AT: &str = "occurredAt";
const PAYABLE_AT: &str = "payableAt";
const HOLD_DAYS: &str = "holdDays";
const CONVERSION_TYPE: &str = "conversionType";
/// What `store::compact` leaves out of a conversion.
const DERIVED: Derived = Derived {
    kind: ListKind::Conversion,
    same_as: &[(UPDATED_AT, CREATED_AT), (CREATED_AT, OCCURRED_AT)],
    zero: &[],
};

fn leave_out_derived(item: &mut Item) {
    use aws_sdk_dynamodb::types::AttributeValue as V;
    // `payableAt` first: it is compared with `occurredAt`, never left out.
    if item.get(PAYABLE_AT).is_some() && item.get(PAYABLE_AT) == derived_payable_at(item).as_ref() {
        item.remove(PAYABLE_AT);
    }
    DERIVED.leave_out(item);
    if string_of(item, CONVERSION_TYPE) == Some(ConversionType::default().as_str()) {
        item.remove(CONVERSION_TYPE);
    }
    if matches!(item.get(METADATA), Some(V::M(m)) if m.is_empty()) {
        item.remove(METADATA);
    }
    if matches!(item.get(IS_RECURRING), Some(V::Bool(false))) {
        item.remove(IS_RECURRING);
    }
}

/// `occurredAt + holdDays` in the item's own form.
fn derived_payable_at(item: &Item) -> Option<aws_sdk_dynamodb::types::AttributeValue> {
    let occurred = timestamp::read_stored(string_of(item, OCCURRED_AT)?)?;
    let days = match item.get(HOLD_DAYS)? {
        aws_sdk_dynamodb::types::AttributeValue::N(n) => n.parse().ok()?,
        _ => return None,
    };
    Some(string_value(timestamp::format(&Conversion::payable_after(
        occurred, days,
    ))))
}

/// A conversion from its item: what [`item`] left out is derived again (an
/// item written before it left anything out holds it all).
pub fn decode(mut item: Item) -> Result<Conversion> {
    if item.contains_key(ALIAS_OF) {
        return Err(Error::NotFound("conversion"));
    }
    DERIVED.restore(&mut item);
    if !item.contains_key(PAYABLE_AT) {
        if let Some(v) = derived_payable_at(&item) {
            item.insert(PAYABLE_AT.into(), v);
        }
    }
    from_item(item)
}

/// The attribute that makes an item at a conversion's key an alias claim
/// (an [`ExternalIdClaim`] naming another conversion), not a conversion.
pub(super) const ALIAS_OF: &str = "conversionId";

#[cfg(test)]
mod tests {
    use super::*;
    use domain::tenant::Mode;

    /// A stored conversion with the given times, metadata and recurrence.
    fn recorded(times: [&str; 4], recurring: bool, metadata: serde_json::Value) -> Conversion {
        let [occurred, created, updated, payable] = times;
        domain::conversion::sample::stored(serde_json::json!({
            "id": "cnv_01JD0000000000000000000001", "isRecurring": recurring,
            "payableAt": payable, "metadata": metadata,
            "occurredAt": occurred, "createdAt": created, "updatedAt": updated,
        }))
    }

    #[test]
    fn an_item_leaves_out_what_decode_derives() {
        let t = Tenant::new("acct_1", Mode::Test);
        let at = "2026-11-26T10:00:00.123Z";
        let fresh = recorded(
            [at, at, at, "2026-12-26T10:00:00.123Z"],
            false,
            serde_json::json!({}),
        );
        let it = item(&t, &fresh).unwrap();
        for gone in [
            "id",
            "campaignId",
            "affiliateId",
            CONVERSION_TYPE,
            METADATA,
            IS_RECURRING,
            CREATED_AT,
            UPDATED_AT,
            PAYABLE_AT,
        ] {
            assert!(!it.contains_key(gone), "{gone} is stored");
        }
        assert_eq!(string_of(&it, "pk"), Some(fresh.id.as_str()));
        assert_eq!(decode(it).unwrap(), fresh);

        // Values that differ from what they would be derived from are kept.
        let moved = recorded(
            [
                at,
                "2026-11-26T10:00:01.000Z",
                "2026-11-27T08:00:00.000Z",
                at,
            ],
            true,
            serde_json::json!({"plan": "pro"}),
        );
        let it = item(&t, &moved).unwrap();
        for kept in [METADATA, IS_RECURRING, CREATED_AT, UPDATED_AT, PAYABLE_AT] {
            assert!(it.contains_key(kept), "{kept} is left out");
        }
        assert_eq!(decode(it).unwrap(), moved);

        // An item written before anything was left out reads the same.
        let old = crate::record_item(&fresh.id, Some(&t.key()), &fresh, &IndexKeys::new());
        let old = old.unwrap();
        assert!(old.contains_key(PAYABLE_AT) && old.contains_key("id"));
        assert_eq!(decode(old).unwrap(), fresh);
    }
}
