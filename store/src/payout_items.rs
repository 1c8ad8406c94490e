//! A payout's item: its index entries, and what it leaves out while the
//! rest says it (`store::compact`, and the invoice's storage key, which
//! its tenant, id and file name give), derived again by [`decode`] on every
//! read, so that a payout holding an invoice stays under 1 KB through its
//! transitions (a write and each index entry cost a unit per KB).

use crate::attrs;
use crate::compact::Derived;
use crate::keys::{self, Index, ListKind};
use crate::{from_item, record_item, string_of, string_value, IndexKeys, Item};
use domain::error::Result;
use domain::payout::{Payout, INVOICE_PREFIX};
use domain::tenant::Tenant;

/// What `store::compact` leaves out of a payout: `id`, `affiliateId` (while
/// it is listed), `createdAt` equal to `requestedAt`, `updatedAt` equal to
/// `createdAt`, and its progress counters at zero. (`campaignId` ends no key
/// it has now; items written with a campaign list key derive it from there.)
const DERIVED: Derived = Derived {
    kind: ListKind::Payout,
    same_as: &[
        (attrs::UPDATED_AT, attrs::CREATED_AT),
        (attrs::CREATED_AT, "requestedAt"),
    ],
    zero: &[
        attrs::CLAIMED,
        attrs::CLAIMED_MINOR,
        attrs::CLAIMED_ADJUSTMENTS,
        attrs::CLAIMED_ADJUSTMENT_MINOR,
        attrs::SETTLED,
        attrs::RELEASED,
    ],
};

/// The item of a payout: in the tenant lists once assembled (every payout,
/// by status, by affiliate; no list reads by campaign, so no entry is
/// written there: each entry costs a write unit at every transition), in a
/// work partition while it has work left.
pub fn item(tenant: &Tenant, p: &Payout) -> Result<Item> {
    let sk = keys::at(&p.requested_at, &p.id);
    let mut index = IndexKeys::new();
    if p.is_visible() {
        index = index
            .at(ListKind::Payout.all(tenant), &sk)
            .at(ListKind::Payout.in_status(tenant, p.status), &sk)
            .at(ListKind::Payout.of_affiliate(tenant, &p.affiliate_id), &sk);
    }
    if let Some(queue) = p.queue() {
        let shard = keys::shard_of(&p.id);
        index = index.with(Index::Gsi5, keys::payout_work(queue, shard), &sk);
    }
    let mut item = record_item(&p.id, Some(&tenant.key()), p, &index)?;
    DERIVED.leave_out(&mut item);
    match &p.invoice_key {
        Some(_) if p.invoice_key == derived_invoice_key(tenant, p) => {
            item.remove(INVOICE_KEY);
        }
        // A portal upload's key (`<upload id>/<file name>` in the payout's
        // folder): only what follows the folder is stored, which keeps the
        // item under 1 KB.
        Some(key) => {
            if let Some(rest) = key.strip_prefix(&invoice_folder(tenant, p)) {
                item.insert(INVOICE_KEY.into(), string_value(rest));
            }
        }
        None => {}
    }
    Ok(item)
}

/// The storage folder of `p`'s invoices, ending with `/`.
fn invoice_folder(tenant: &Tenant, p: &Payout) -> String {
    domain::payout::invoice_key(tenant, &p.id, "")
}

/// The attribute of the invoice's storage key (private).
const INVOICE_KEY: &str = "invoiceKey";

/// The storage key an invoice of `p` has: the tenant, the payout and the
/// file name say it (`domain::payout::invoice_key`), so the item leaves it out.
fn derived_invoice_key(tenant: &Tenant, p: &Payout) -> Option<String> {
    let file = &p.invoice.as_ref()?.file_name;
    Some(domain::payout::invoice_key(tenant, &p.id, file))
}

/// A payout from its item, with what [`item`] left out derived again (an
/// item written before anything was left out holds it all).
pub fn decode(mut item: Item) -> Result<Payout> {
    DERIVED.restore(&mut item);
    let tenant = string_of(&item, attrs::TENANT).and_then(Tenant::from_key);
    let mut p: Payout = from_item(item)?;
    if let Some(t) = tenant {
        p.invoice_key = match p.invoice_key.take() {
            None => derived_invoice_key(&t, &p),
            Some(key) if key.starts_with(INVOICE_PREFIX) => Some(key),
            Some(rest) => Some(invoice_folder(&t, &p) + &rest),
        };
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::string_of;
    use domain::tenant::Mode;

    fn payout(work: Option<&str>, claimed: u64, updated_at: &str) -> Payout {
        serde_json::from_value(serde_json::json!({
            "id": "po_01JD3Q5W6X7Y8Z9A0B1C2D3E4F",
            "affiliateId": "aff_01JD3Q5W6X7Y8Z9A0B1C2D3E4F",
            "campaignId": "cmp_01JD3Q5W6X7Y8Z9A0B1C2D3E4F",
            "amount": 12.5, "currency": "USD", "status": "PENDING", "method": "MANUAL",
            "requestedAt": "2026-11-26T10:00:00.000Z", "conversionCount": 3,
            "adjustmentTotal": 0, "work": work, "claimed": claimed,
            "createdAt": "2026-11-26T10:00:00.000Z", "updatedAt": updated_at,
        }))
        .unwrap()
    }

    #[test]
    fn an_item_leaves_out_what_decode_derives() {
        let t = Tenant::new("acct_1", Mode::Test);
        let at = "2026-11-26T10:00:00.000Z";
        let listed = payout(None, 0, at);
        let it = item(&t, &listed).unwrap();
        for gone in [
            "id",
            "affiliateId",
            "createdAt",
            "updatedAt",
            "claimed",
            "settled",
        ] {
            assert!(!it.contains_key(gone), "{gone} is stored");
        }
        assert_eq!(string_of(&it, "pk"), Some(listed.id.as_str()));
        assert!(it.contains_key("campaignId") && !it.contains_key("gsi2pk"));
        assert_eq!(decode(it.clone()).unwrap(), listed);

        // An invoice's storage key is left out while its names give it.
        let mut invoiced = listed.clone();
        invoiced.invoice = Some(
            serde_json::from_value(serde_json::json!({
            "fileName": "inv.pdf", "contentType": "application/pdf", "size": 15,
            "uploadedAt": at}))
            .unwrap(),
        );
        invoiced.invoice_key = Some(domain::payout::invoice_key(&t, &listed.id, "inv.pdf"));
        let stored = item(&t, &invoiced).unwrap();
        assert!(!stored.contains_key(INVOICE_KEY));
        assert_eq!(decode(stored).unwrap(), invoiced);
        invoiced.invoice_key = Some("invoices/elsewhere.pdf".into());
        let stored = item(&t, &invoiced).unwrap();
        assert!(
            stored.contains_key(INVOICE_KEY),
            "a key it does not give is kept"
        );
        assert_eq!(decode(stored).unwrap(), invoiced);
        // A portal upload's key keeps only what follows the payout's folder.
        let upload = "01JD3Q5W6X7Y8Z9A0B1C2D3E4F";
        invoiced.invoice_key = Some(domain::payout::upload_key(
            &t, &listed.id, upload, "inv.pdf",
        ));
        let stored = item(&t, &invoiced).unwrap();
        let kept = format!("{upload}/inv.pdf");
        assert_eq!(string_of(&stored, INVOICE_KEY), Some(kept.as_str()));
        assert_eq!(decode(stored).unwrap(), invoiced);

        // One written with a campaign list key derives its campaign from it.
        let mut keyed = it;
        keyed.remove("campaignId");
        keyed.insert(
            "gsi2pk".into(),
            crate::string_value(keys::by_campaign(&t, ListKind::Payout, &listed.campaign_id)),
        );
        assert_eq!(decode(keyed).unwrap(), listed);

        // Being assembled, it is in no list: its campaign and affiliate stay;
        // a counter above zero and a moved timestamp stay too.
        let building = payout(Some("CLAIM"), 4, "2026-11-26T10:00:01.000Z");
        let it = item(&t, &building).unwrap();
        for kept in ["campaignId", "affiliateId", "claimed", "updatedAt"] {
            assert!(it.contains_key(kept), "{kept} is left out");
        }
        assert_eq!(decode(it).unwrap(), building);

        // An item written before anything was left out reads the same.
        let old = record_item(&listed.id, Some(&t.key()), &listed, &IndexKeys::new()).unwrap();
        assert!(old.contains_key("id") && old.contains_key("createdAt"));
        assert_eq!(decode(old).unwrap(), listed);
    }
}
