//! Affiliate records and the guard items that keep e-mails (per campaign) and
//! codes (per tenant) unique. A guard is written in the same transaction as
//! the record with `attribute_not_exists(pk)`, so two concurrent sign-ups
//! cannot both pass: no read-then-write race.
//!
//! The money totals (`earned`, `paid`) live in the affiliate's TOTALS item
//! (`store::affiliate_totals`), not in the record: reads join the two.

use crate::attrs;
use crate::keys::{self, Index, ListKind, GUARD_SK, RECORD_SK, TOTALS_SK};
use crate::page::{ListQuery, Page, PageRequest};
use crate::tx::Tx;
use crate::update::UpdateExpr;
use crate::{
    affiliate_totals, events, from_item, item_at, record_item, string_of, string_value, IndexKeys,
    Item, Store,
};
use domain::affiliate::{Affiliate, AffiliateStatus};
use domain::affiliate_code::{AffiliateCode, CodeOwner};
use domain::commission_plan::{stored_json, Pay};
use domain::conversion::Earning;
use domain::error::{Error, Result};
use domain::ids::{self, IdKind};
use domain::tenant::Tenant;

/// The role of each action of an affiliate's transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    Record,
    EmailGuard,
    CodeGuard,
    /// The removal of a guard the affiliate no longer needs.
    Release,
    Event,
}

/// The attribute of `Affiliate::commission_override`.
const COMMISSION_OVERRIDE: &str = "commissionOverride";
/// The attribute of `Affiliate::tax_form`.
const TAX_FORM: &str = "taxForm";

/// Attributes a merchant's update owns. The totals are not record attributes:
/// the conversion and payout flows keep them in the TOTALS item.
const EDITABLE: [&str; 13] = [
    attrs::NAME,
    "email",
    "code",
    attrs::STATUS,
    "suspendedAt",
    "payoutMethod",
    "payoutEmail",
    "website",
    COMMISSION_OVERRIDE,
    TAX_FORM,
    attrs::METADATA,
    attrs::VERSION,
    attrs::UPDATED_AT,
];

pub(crate) fn item(tenant: &Tenant, a: &Affiliate) -> Result<Item> {
    let index = IndexKeys::new()
        .at(ListKind::Affiliate.all(tenant), &a.id)
        .at(
            ListKind::Affiliate.of_campaign(tenant, &a.campaign_id),
            &a.id,
        )
        .at(ListKind::Affiliate.in_status(tenant, a.status), &a.id)
        .with(
            Index::Gsi4,
            keys::affiliate_by_email(tenant, &a.email.lower()),
            &a.id,
        );
    let mut item = record_item(&a.id, Some(&tenant.key()), a, &index)?;
    // The totals live in the TOTALS item; the record never stores them.
    for total in TOTAL_ATTRIBUTES {
        item.remove(total);
    }
    Ok(item)
}

/// Record attributes that older records may still carry and that reads ignore.
const TOTAL_ATTRIBUTES: [&str; 2] = [affiliate_totals::EARNED, affiliate_totals::PAID];

/// An affiliate from its record and its totals item (absent: nothing earned yet).
pub fn from_parts(mut record: Item, totals: Option<&Item>, tenant_key: &str) -> Result<Affiliate> {
    for total in TOTAL_ATTRIBUTES {
        record.remove(total);
    }
    let mut a: Affiliate = from_item(record)?;
    (a.earned, a.paid) = affiliate_totals::read(totals, tenant_key)?;
    a.referred = affiliate_totals::read_referred(totals, tenant_key)?;
    Ok(a)
}

/// The condition that an affiliate is the tenant's and still has `status`.
pub fn status_is(tenant_key: &str, status: AffiliateStatus) -> UpdateExpr {
    UpdateExpr::new()
        .when_tenant(tenant_key)
        .when_status(status)
}

/// The affiliate's terms as a cached read saw them: its status and its
/// `commissionOverride` (absent, or this one), so a commission decided
/// from a stale copy is refused and decided again.
pub fn terms_are(tenant_key: &str, status: AffiliateStatus, overrides: Option<&Pay>) -> UpdateExpr {
    let when = status_is(tenant_key, status);
    // Stored as its JSON text (`commission_plan::stored_json`).
    match overrides.and_then(|p| stored_json::text(&Some(p))) {
        Some(pay) => when.when_eq(COMMISSION_OVERRIDE, string_value(pay)),
        None => when.when_absent(COMMISSION_OVERRIDE),
    }
}

/// Adds an earning to the affiliate's `earned` total (role `add_role`). With
/// `while_status`, a ConditionCheck (role `check_role`) first requires the
/// affiliate record to be the tenant's and in that status; a check writes
/// nothing. Either fails as a condition failure of the transaction.
pub fn earn<R: Copy>(
    tx: &mut Tx<R>,
    (check_role, add_role): (R, R),
    tenant_key: &str,
    e: &Earning,
    overrides: Option<&Pay>,
) {
    if let Some(st) = e.while_status {
        let when = terms_are(tenant_key, st, overrides);
        tx.check(check_role, &e.affiliate_id, RECORD_SK, &when);
    }
    affiliate_totals::add(
        tx,
        add_role,
        tenant_key,
        &e.affiliate_id,
        affiliate_totals::EARNED,
        e.currency,
        e.amount,
    );
}

/// A guard item: the tenant and the code's owner. The code guard doubles as
/// the look-up from a `ref` or `affiliateCode` to its affiliate.
pub(crate) fn guard(pk: String, tenant: &Tenant, a: &Affiliate) -> Result<Item> {
    let owner = CodeOwner {
        affiliate_id: a.id.clone(),
        campaign_id: a.campaign_id.clone(),
    };
    owner_guard(pk, tenant, &owner)
}

/// A guard item at `pk` naming `owner` (an affiliate code's, a promotion
/// code's), the tenant beside it.
pub(crate) fn owner_guard(pk: String, tenant: &Tenant, owner: &CodeOwner) -> Result<Item> {
    let mut item = item_at(&pk, GUARD_SK, owner)?;
    item.insert(attrs::TENANT.into(), string_value(tenant.key()));
    Ok(item)
}

/// The owner a guard at `pk` names, when the guard is the tenant's (one
/// GetItem).
pub(crate) async fn guard_owner(
    store: &Store,
    tenant: &Tenant,
    pk: &str,
) -> Result<Option<CodeOwner>> {
    match store.get_item(pk, GUARD_SK).await? {
        Some(item) if string_of(&item, attrs::TENANT) == Some(tenant.key().as_str()) => {
            Ok(Some(from_item(item)?))
        }
        _ => Ok(None),
    }
}

/// Resolves an affiliate code (any letter case) within a tenant with one
/// GetItem of its guard.
pub async fn resolve_code(store: &Store, tenant: &Tenant, code: &str) -> Result<Option<CodeOwner>> {
    guard_owner(store, tenant, &keys::code_guard(tenant, code)).await
}

pub(crate) fn email_guard(tenant: &Tenant, a: &Affiliate) -> String {
    keys::email_guard(tenant, &a.campaign_id, &a.email.lower())
}

pub fn duplicate_email() -> Error {
    Error::AlreadyExists("an affiliate with this email already exists in this campaign".into())
}

pub fn duplicate_code(code: &AffiliateCode) -> Error {
    Error::AlreadyExists(format!("the affiliate code {} is taken", code.as_str()))
}

/// The tenant's affiliate with its totals, or NOT_FOUND: the record and the
/// TOTALS item in one strongly consistent Query (`"R" <= sk <= "TOTALS"`).
pub async fn get(store: &Store, tenant: &Tenant, id: &str) -> Result<Affiliate> {
    if !ids::is_valid(IdKind::Affiliate, id) {
        return Err(Error::NotFound("affiliate"));
    }
    let tenant_key = tenant.key();
    let mut record = None;
    let mut totals = None;
    for item in store.query_range(id, RECORD_SK, TOTALS_SK).await? {
        match string_of(&item, attrs::SK) {
            Some(RECORD_SK) => record = Some(item),
            Some(TOTALS_SK) => totals = Some(item),
            _ => {}
        }
    }
    match record {
        Some(r) if string_of(&r, attrs::TENANT) == Some(tenant_key.as_str()) => {
            from_parts(r, totals.as_ref(), &tenant_key)
        }
        _ => Err(Error::NotFound("affiliate")),
    }
}

/// Several affiliates of the tenant with their totals, by id: their records
/// and their TOTALS items read at once (two batches, one round trip).
pub async fn get_many(
    store: &Store,
    tenant: &Tenant,
    ids: &[&str],
) -> Result<std::collections::HashMap<String, Affiliate>> {
    let tenant_key = tenant.key();
    let (records, totals) = tokio::join!(
        store.get_records_items(IdKind::Affiliate, ids, &tenant_key),
        affiliate_totals::read_many(store, ids)
    );
    let totals = totals?;
    let mut out = std::collections::HashMap::new();
    for record in records? {
        let Some(id) = string_of(&record, attrs::PK).map(str::to_string) else {
            continue;
        };
        let a = from_parts(record, totals.get(&id), &tenant_key)?;
        out.insert(id, a);
    }
    Ok(out)
}

/// The tenant's affiliates among `ids`, any number of them: 100 distinct
/// ones at a time.
pub async fn get_each(
    store: &Store,
    tenant: &Tenant,
    ids: &[&str],
) -> Result<std::collections::HashMap<String, Affiliate>> {
    // An id of no affiliate's shape names none (and is no key to read).
    let distinct: std::collections::BTreeSet<&str> = ids
        .iter()
        .copied()
        .filter(|id| ids::is_valid(IdKind::Affiliate, id))
        .collect();
    let distinct: Vec<&str> = distinct.into_iter().collect();
    let mut found = std::collections::HashMap::new();
    for chunk in distinct.chunks(100) {
        found.extend(get_many(store, tenant, chunk).await?);
    }
    Ok(found)
}

/// Writes a merchant's update if nobody changed the affiliate since `old` was
/// read (false when somebody did). A changed e-mail or code swaps its guard in
/// the same transaction; a taken one is ALREADY_EXISTS.
pub async fn replace(
    store: &Store,
    tenant: &Tenant,
    new: &Affiliate,
    old: &Affiliate,
) -> Result<bool> {
    let full = item(tenant, new)?;
    let mut fields = EDITABLE.to_vec();
    fields.extend([Index::Gsi3.pk(), Index::Gsi4.pk()]);
    let update = UpdateExpr::new()
        .copy_from(&full, &fields)
        .when_as_read(&tenant.key(), old.stamps.version);
    let email_changed = new.email.lower() != old.email.lower();
    let code_changed = new.code.lower() != old.code.lower();
    let mut tx = store.tx();
    tx.update(Write::Record, &new.id, RECORD_SK, &update);
    events::append(&mut tx, Write::Event, tenant, &new.changed_event())?;
    // The old guard goes only if it is still ours, so a stale read can never
    // release another affiliate's e-mail or code.
    let ours =
        UpdateExpr::new().when_absent_or_eq(attrs::AFFILIATE_ID, string_value(old.id.clone()));
    if email_changed {
        tx.delete(Write::Release, &email_guard(tenant, old), GUARD_SK, &ours);
        tx.put_new(
            Write::EmailGuard,
            guard(email_guard(tenant, new), tenant, new)?,
        );
    }
    if code_changed {
        let old_code = keys::code_guard(tenant, old.code.as_str());
        tx.delete(Write::Release, &old_code, GUARD_SK, &ours);
        let new_code = keys::code_guard(tenant, new.code.as_str());
        tx.put_new(Write::CodeGuard, guard(new_code, tenant, new)?);
    }
    match store.transact(tx).await {
        Ok(()) => Ok(true),
        Err(e) if e.failed(Write::Record) => Ok(false),
        Err(e) if e.failed(Write::EmailGuard) => Err(duplicate_email()),
        Err(e) if e.failed(Write::CodeGuard) => Err(duplicate_code(&new.code)),
        Err(e) => Err(e.into_error()),
    }
}

/// List filters; each is served by an index, the rest by a filter on that Query.
#[derive(Debug, Clone, Default)]
pub struct AffiliateFilter {
    pub campaign_id: Option<String>,
    pub status: Option<AffiliateStatus>,
    /// Lowercased.
    pub email: Option<String>,
    /// Only those without a tax form.
    pub tax_form_missing: bool,
}

/// The tenant's affiliates, newest first.
pub async fn list(
    store: &Store,
    tenant: &Tenant,
    f: &AffiliateFilter,
    page: &PageRequest,
) -> Result<Page<Affiliate>> {
    // The most selective key first: an e-mail names a handful of records.
    let mut q = if let Some(email) = &f.email {
        ListQuery::new(Index::Gsi4, keys::affiliate_by_email(tenant, email))
    } else if let Some(c) = &f.campaign_id {
        ListQuery::of(ListKind::Affiliate.of_campaign(tenant, c))
    } else if let Some(st) = f.status {
        ListQuery::of(ListKind::Affiliate.in_status(tenant, st))
    } else {
        ListQuery::of(ListKind::Affiliate.all(tenant))
    };
    if let (Some(c), Some(Index::Gsi4)) = (&f.campaign_id, q.index) {
        q.filter = q.filter.eq(attrs::CAMPAIGN_ID, c);
    }
    if let (Some(st), Some(Index::Gsi4 | Index::Gsi2)) = (f.status, q.index) {
        q.filter = q.filter.status(st);
    }
    if f.tax_form_missing {
        q.filter = q.filter.absent(TAX_FORM);
    }
    let found = store.query_page(&q, page).await?;
    let ids: Vec<&str> = found
        .items
        .iter()
        .filter_map(|item| string_of(item, attrs::PK))
        .collect();
    let totals = affiliate_totals::read_many(store, &ids).await?;
    let tenant_key = tenant.key();
    found.try_map(|item| {
        let t = string_of(&item, attrs::PK).and_then(|id| totals.get(id));
        from_parts(item, t, &tenant_key)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::number_value;
    use aws_sdk_dynamodb::types::AttributeValue;
    use domain::affiliate::{AffiliateDraft, AffiliateStatus};
    use domain::tenant::Mode;
    use domain::validation::Issues;

    #[test]
    fn the_record_stores_no_totals_and_older_records_that_do_still_read() {
        let input = AffiliateDraft {
            campaign_id: "cmp_1".into(),
            email: "a@x.io".into(),
            name: "A".into(),
            ..Default::default()
        };
        let e = Affiliate::enroll(
            input,
            AffiliateStatus::Active,
            domain::timestamp::now(),
            Issues::new(),
        )
        .unwrap();
        let tenant = Tenant::new("acct_1", Mode::Test);
        let tk = tenant.key();
        let mut stored = item(&tenant, &e.affiliate).unwrap();
        assert!(!stored.contains_key("earned") && !stored.contains_key("paid"));
        // An older record with totals in it (numbers, or strings): ignored,
        // the TOTALS item is the only source.
        stored.insert(
            "earned".into(),
            AttributeValue::M(Item::from([
                ("USD".to_string(), string_value("oops")),
                ("JPY".to_string(), number_value("1500")),
            ])),
        );
        stored.insert("paid".into(), string_value("not a map"));
        let totals = Item::from([
            ("tenant".to_string(), string_value(tk.clone())),
            ("earned_USD".to_string(), number_value("1234567.89")),
        ]);
        let back = from_parts(stored.clone(), Some(&totals), &tk).unwrap();
        let usd = domain::money::Currency::parse("c", "USD").unwrap();
        assert_eq!(back.earned[&usd].to_string(), "1234567.89");
        assert_eq!(back.earned.len(), 1);
        assert!(back.paid.is_empty());
        let none = from_parts(stored, None, &tk).unwrap();
        assert!(none.earned.is_empty() && none.paid.is_empty());
        assert_eq!(none.id, e.affiliate.id);
    }

    #[test]
    fn the_stamps_are_attributes_of_the_record_and_an_unversioned_record_reads_as_version_0() {
        let now = domain::timestamp::parse_datetime("2026-11-22T10:00:00.123Z").unwrap();
        let input = AffiliateDraft {
            campaign_id: "cmp_1".into(),
            email: "a@x.io".into(),
            name: "A".into(),
            ..Default::default()
        };
        let mut a = Affiliate::enroll(input, AffiliateStatus::Active, now, Issues::new())
            .unwrap()
            .affiliate;
        a.stamps.stamp(now + chrono::Duration::seconds(1));
        let tenant = Tenant::new("acct_1", Mode::Test);
        let mut stored = item(&tenant, &a).unwrap();
        assert_eq!(stored["version"], number_value(1));
        assert_eq!(
            stored["createdAt"],
            string_value("2026-11-22T10:00:00.123Z")
        );
        assert_eq!(
            stored["updatedAt"],
            string_value("2026-11-22T10:00:01.123Z")
        );
        assert!(!stored.contains_key("stamps"));
        assert_eq!(from_parts(stored.clone(), None, &tenant.key()).unwrap(), a);
        stored.remove("version");
        let unversioned = from_parts(stored, None, &tenant.key()).unwrap();
        assert_eq!(unversioned.stamps.version, 0);
        assert_eq!(unversioned.stamps.updated_at, a.stamps.updated_at);
    }
}
