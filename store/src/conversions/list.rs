//! Conversions read by id and listed by index: the filters pick the most
//! selective partition.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

use super::item::{decode, item};
use crate::attrs;
use crate::keys::{self, Index, ListKind};
use crate::page::{ListQuery, Page, PageRequest};
use crate::Store;
use domain::conversion::{Conversion, ConversionStatus};
use domain::error::Result;
use domain::ids::IdKind;
use domain::money::Currency;
use domain::risk::RiskLevel;
use domain::tenant::Tenant;

/// The tenant's conversion, or NOT_FOUND.
pub async fn get(store: &Store, tenant: &Tenant, id: &str) -> Result<Conversion> {
    let item = store
        .get_record_item(IdKind::Conversion, "conversion", id, &tenant.key())
        .await?;
    decode(item)
}

/// List filters. One of them picks the index partition (payout, else
/// affiliate, else campaign, else status, else every conversion); `from`/`to`
/// are key ranges; the rest filter that one Query.
#[derive(Debug, Clone, Default)]
pub struct ConversionFilter {
    /// The conversions a payout holds (or held, once paid).
    pub payout_id: Option<String>,
    pub affiliate_id: Option<String>,
    pub campaign_id: Option<String>,
    pub status: Option<ConversionStatus>,
    pub currency: Option<Currency>,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub min_amount: Option<Decimal>,
    pub max_amount: Option<Decimal>,
    pub risk_level: Option<RiskLevel>,
}

/// The query a filter runs: the most selective partition, the rest as filters.
pub fn list_query(tenant: &Tenant, f: &ConversionFilter) -> ListQuery {
    let mut q = if let Some(po) = &f.payout_id {
        payout_members_query(tenant, po)
    } else if let Some(a) = &f.affiliate_id {
        ListQuery::of(ListKind::Conversion.of_affiliate(tenant, a))
    } else if let Some(c) = &f.campaign_id {
        ListQuery::of(ListKind::Conversion.of_campaign(tenant, c))
    } else if let Some(st) = f.status {
        ListQuery::of(ListKind::Conversion.in_status(tenant, st))
    } else {
        ListQuery::of(ListKind::Conversion.all(tenant))
    };
    // Sort keys are `<occurredAt>#<id>`.
    q = q.within(f.from, f.to);
    if let (Some(a), Some(Index::Gsi5)) = (&f.affiliate_id, q.index) {
        // The item's GSI4 partition names it (`affiliateId` is left out).
        q.filter = q
            .filter
            .in_list(ListKind::Conversion.of_affiliate(tenant, a));
    }
    if let (Some(c), Some(Index::Gsi4 | Index::Gsi5)) = (&f.campaign_id, q.index) {
        q.filter = q
            .filter
            .in_list(ListKind::Conversion.of_campaign(tenant, c));
    }
    if let (Some(st), Some(Index::Gsi4 | Index::Gsi2 | Index::Gsi5)) = (f.status, q.index) {
        q.filter = q.filter.status(st);
    }
    if let Some(cur) = f.currency {
        q.filter = q.filter.eq(attrs::CURRENCY, cur.code());
    }
    if let Some(min) = f.min_amount {
        q.filter = q.filter.num(attrs::AMOUNT_VALUE, ">=", &min.to_string());
    }
    if let Some(max) = f.max_amount {
        q.filter = q.filter.num(attrs::AMOUNT_VALUE, "<=", &max.to_string());
    }
    if let Some(level) = f.risk_level {
        q.filter = q.filter.risk_level(level);
    }
    q
}

/// A payout's partition of the work index (sort key `<occurredAt>#<id>`).
/// Payout ids are global, so the tenant is a filter, and the payout's
/// adjustments, which share the partition, are left out.
fn payout_members_query(tenant: &Tenant, payout_id: &str) -> ListQuery {
    let mut q = ListQuery::new(Index::Gsi5, keys::payout_members(payout_id));
    q.filter = q
        .filter
        .eq(attrs::TENANT, &tenant.key())
        .begins_with(attrs::PK, &format!("{}_", IdKind::Conversion.prefix()));
    q
}

/// The cursor of the list's page that starts after `c`.
pub fn cursor_after(
    tenant: &Tenant,
    f: &ConversionFilter,
    c: &Conversion,
) -> Result<Option<String>> {
    Ok(crate::page::cursor_after(
        &list_query(tenant, f),
        &item(tenant, c)?,
    ))
}

/// The tenant's conversions, newest first by `occurredAt`.
pub async fn list(
    store: &Store,
    tenant: &Tenant,
    f: &ConversionFilter,
    page: &PageRequest,
) -> Result<Page<Conversion>> {
    store
        .query_page(&list_query(tenant, f), page)
        .await?
        .try_map(decode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::tenant::Mode;
    use domain::timestamp;

    #[test]
    fn the_most_selective_partition_serves_a_list() {
        let t = Tenant::new("acct_1", Mode::Test);
        let f = ConversionFilter {
            affiliate_id: Some("aff_1".into()),
            campaign_id: Some("cmp_1".into()),
            status: Some(ConversionStatus::Pending),
            min_amount: Some(Decimal::from(5)),
            ..Default::default()
        };
        let q = list_query(&t, &f);
        assert_eq!(q.index, Some(Index::Gsi4));
        assert_eq!(q.pk, "acct_1#test#CNV#AFF#aff_1");
        assert!(q.sk_between.is_none());
        let q = list_query(
            &t,
            &ConversionFilter {
                payout_id: Some("po_1".into()),
                ..f.clone()
            },
        );
        assert_eq!((q.index, q.pk.as_str()), (Some(Index::Gsi5), "PO#po_1"));
        let q = list_query(
            &t,
            &ConversionFilter {
                campaign_id: Some("cmp_1".into()),
                status: Some(ConversionStatus::Pending),
                ..Default::default()
            },
        );
        assert_eq!(q.index, Some(Index::Gsi2));
        let q = list_query(
            &t,
            &ConversionFilter {
                status: Some(ConversionStatus::Reversed),
                from: timestamp::parse_datetime("2026-01-01T00:00:00Z"),
                ..Default::default()
            },
        );
        assert_eq!(q.index, Some(Index::Gsi3));
        assert_eq!(q.pk, "acct_1#test#CNV#ST#REVERSED");
        assert_eq!(
            q.sk_between,
            Some(("2026-01-01T00:00:00.000Z".to_string(), "~".to_string()))
        );
        let q = list_query(
            &t,
            &ConversionFilter {
                to: timestamp::parse_datetime("2026-01-31T23:59:59.999Z"),
                ..Default::default()
            },
        );
        assert_eq!(q.index, Some(Index::Gsi1));
        assert_eq!(
            q.sk_between,
            Some(("0".to_string(), "2026-01-31T23:59:59.999Z#~".to_string()))
        );
    }
}
