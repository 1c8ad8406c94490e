//! Campaign records.

use crate::attrs;
use crate::keys::{ListKind, RECORD_SK, STAMP_SK};
use crate::page::{ListQuery, Page, PageRequest};
use crate::tx::Tx;
use crate::update::UpdateExpr;
use crate::{
    events, from_item, item_key, record_item, string_of, string_value, IndexKeys, Item, Store,
};
use domain::campaign::Campaign;
use domain::error::Result;
use domain::ids::{self, IdKind};
use domain::tenant::Tenant;
use domain::timestamp;

fn item(tenant: &Tenant, c: &Campaign) -> Result<Item> {
    let index = IndexKeys::new().at(ListKind::Campaign.all(tenant), &c.id);
    record_item(&c.id, Some(&tenant.key()), c, &index)
}

/// The roles of a campaign write's actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    Record,
    Stamp,
    Event,
}

/// A campaign's stamp: its tenant and `updatedAt`, written with every
/// change of the record. A postback that took the campaign from its cache
/// checks the stamp, not the record: a ConditionCheck is billed by the
/// size of the item it reads, and the record grows with its commission
/// plan (20 rules and 10 tiers: 4 KB).
fn stamp(tenant: &Tenant, c: &Campaign) -> Item {
    let mut item = item_key(&c.id, STAMP_SK);
    item.extend([
        (attrs::TENANT.to_string(), string_value(tenant.key())),
        (
            attrs::UPDATED_AT.to_string(),
            string_value(timestamp::format(&c.updated_at)),
        ),
    ]);
    item
}

/// Writes a campaign (new when `when` is none, else under `when`), its
/// stamp and its event in one transaction; false when `when` failed.
async fn write(
    store: &Store,
    tenant: &Tenant,
    c: &Campaign,
    when: Option<&UpdateExpr>,
    e: &domain::change::Event,
) -> Result<bool> {
    let mut tx = store.tx();
    match when {
        None => tx.put_new(Write::Record, item(tenant, c)?),
        Some(when) => tx.put(Write::Record, item(tenant, c)?, when),
    };
    tx.put(Write::Stamp, stamp(tenant, c), &UpdateExpr::new());
    events::append(&mut tx, Write::Event, tenant, e)?;
    match store.transact(tx).await {
        Ok(()) => Ok(true),
        Err(err) if err.failed(Write::Record) => Ok(false),
        Err(err) => Err(err.into_error()),
    }
}

/// Stores a new campaign with its `campaign.created` event.
pub async fn insert(store: &Store, tenant: &Tenant, c: &Campaign) -> Result<()> {
    let created = c.created_event();
    crate::created(write(store, tenant, c, None, &created).await?, "campaign")
}

/// The tenant's campaign, or NOT_FOUND.
pub async fn get(store: &Store, tenant: &Tenant, id: &str) -> Result<Campaign> {
    store
        .get_record(IdKind::Campaign, "campaign", id, &tenant.key())
        .await
}

/// Any tenant's campaign with its tenant key (public endpoints resolve by id alone).
pub async fn get_with_tenant(store: &Store, id: &str) -> Result<Option<(Campaign, String)>> {
    if !ids::is_valid(IdKind::Campaign, id) {
        return Ok(None);
    }
    match store.get_item(id, RECORD_SK).await? {
        Some(item) => {
            let tenant = string_of(&item, attrs::TENANT)
                .unwrap_or_default()
                .to_string();
            Ok(Some((from_item(item)?, tenant)))
        }
        None => Ok(None),
    }
}

/// The condition that a campaign is the tenant's and still as `seen` (every
/// change moves `updatedAt`).
pub fn unchanged(tenant_key: &str, seen: &Campaign) -> UpdateExpr {
    UpdateExpr::new().when_tenant(tenant_key).when_eq(
        attrs::UPDATED_AT,
        string_value(timestamp::format(&seen.updated_at)),
    )
}

/// Checks (in a transaction, role `role`) that a campaign taken from the
/// cache is the tenant's and unchanged since `seen`, on its stamp. A
/// campaign stored before stamps has none until its next change: nothing
/// to compare, and nothing changed it since.
pub fn check_unchanged<R: Copy>(tx: &mut Tx<R>, role: R, tenant_key: &str, seen: &Campaign) {
    let when = UpdateExpr::new()
        .when_absent_or_eq(attrs::TENANT, string_value(tenant_key))
        .when_absent_or_eq(
            attrs::UPDATED_AT,
            string_value(timestamp::format(&seen.updated_at)),
        );
    tx.check(role, &seen.id, STAMP_SK, &when);
}

/// Writes an updated campaign and its `campaign.updated` event if nobody
/// changed it since `previous` was read; false when somebody did.
pub async fn replace(
    store: &Store,
    tenant: &Tenant,
    c: &Campaign,
    previous: &Campaign,
) -> Result<bool> {
    let when = unchanged(&tenant.key(), previous);
    let updated = c.changed_event();
    write(store, tenant, c, Some(&when), &updated).await
}

/// The tenant's campaigns among `ids` (each once, at most 100), in one
/// BatchGetItem; another tenant's, and ids of no campaign's shape, are left
/// out.
pub async fn get_each(store: &Store, tenant: &Tenant, ids: &[&str]) -> Result<Vec<Campaign>> {
    store
        .get_records(IdKind::Campaign, ids, &tenant.key())
        .await
}

/// The tenant's campaigns, newest first.
pub async fn list(store: &Store, tenant: &Tenant, page: &PageRequest) -> Result<Page<Campaign>> {
    let q = ListQuery::of(ListKind::Campaign.all(tenant));
    store.query_page(&q, page).await?.try_map(from_item)
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use serde_json::json;

    #[test]
    fn stored_plans_are_one_json_text_with_exact_amounts() {
        let input = json!({"name": "C", "commissionType": "PERCENTAGE", "commissionValue": 10,
            "commissionRules": [{"name": "R", "pay": {"type": "FIXED", "value": 12.5, "currency": "USD"}}]});
        let body: wire::campaign::NewCampaign = serde_json::from_value(input).unwrap();
        let campaign = domain::campaign::Campaign::create(body.into(), Utc::now()).unwrap();
        let item: std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue> =
            serde_dynamo::to_item(&campaign).unwrap();
        let stored = item["commissionRules"]
            .as_s()
            .expect("one string attribute");
        assert!(stored.contains(r#""value":12.5"#), "{stored}");
        let back: domain::campaign::Campaign = serde_dynamo::from_item(item).unwrap();
        assert_eq!(back.commission_rules, campaign.commission_rules);
    }
}
