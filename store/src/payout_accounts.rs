//! Affiliates' connected accounts: the `payoutAccount` field of the
//! affiliate record, and the account's owner (`pk = PAYACCT#<acct_…>`,
//! `sk = GUARD`: the tenant and the affiliate), which Stripe's
//! `account.updated` is looked up by.

use serde::{Deserialize, Serialize};

use crate::affiliates::item;
use crate::keys::{self, GUARD_SK, RECORD_SK};
use crate::update::UpdateExpr;
use crate::{attrs, from_item, item_at, string_of, string_value, Store};
use domain::affiliate::Affiliate;
use domain::error::{Error, Result};
use domain::tenant::Tenant;

/// The attributes a payout account's change rewrites.
const FIELDS: [&str; 3] = ["payoutAccount", attrs::VERSION, attrs::UPDATED_AT];

/// Who a connected account belongs to.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AccountOwner {
    affiliate_id: String,
}

/// The role of each action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    Record,
    Owner,
}

/// Writes `new`'s payout account if the affiliate is as `old` was read
/// (false otherwise); a new account's owner is written with it.
pub async fn replace(
    store: &Store,
    tenant: &Tenant,
    new: &Affiliate,
    old: &Affiliate,
) -> Result<bool> {
    let update = UpdateExpr::new()
        .copy_from(&item(tenant, new)?, &FIELDS)
        .when_as_read(&tenant.key(), old.stamps.version);
    let mut tx = store.tx();
    tx.update(Write::Record, &new.id, RECORD_SK, &update);
    let added = new
        .payout_account
        .as_ref()
        .filter(|a| old.payout_account.as_ref().map(|o| &o.account_id) != Some(&a.account_id));
    if let Some(account) = added {
        let owner = AccountOwner {
            affiliate_id: new.id.clone(),
        };
        let mut guard = item_at(&keys::payout_account(&account.account_id), GUARD_SK, &owner)?;
        guard.insert(attrs::TENANT.into(), string_value(tenant.key()));
        tx.put_new(Write::Owner, guard);
    }
    match store.transact(tx).await {
        Ok(()) => Ok(true),
        Err(e) if e.failed(Write::Record) => Ok(false),
        Err(e) if e.failed(Write::Owner) => Err(Error::internal(
            "a connected account already belongs to another affiliate",
        )),
        Err(e) => Err(e.into_error()),
    }
}

/// The tenant and affiliate a connected account belongs to, if any.
pub async fn owner(store: &Store, account_id: &str) -> Result<Option<(Tenant, String)>> {
    let Some(item) = store
        .get_item(&keys::payout_account(account_id), GUARD_SK)
        .await?
    else {
        return Ok(None);
    };
    let tenant = string_of(&item, attrs::TENANT).and_then(Tenant::from_key);
    let owner: AccountOwner = from_item(item)?;
    Ok(tenant.map(|t| (t, owner.affiliate_id)))
}
