//! Affiliates' payout accounts (contract section 14): the paying
//! integration, Stripe Connect onboarding (one connected account per
//! affiliate, a fresh link each time) and what Stripe's `account.updated`
//! says of an account.

use chrono::{DateTime, Utc};

use crate::app::App;
use crate::auth::sealing;
use crate::rails::stripe::AccountLink;
use crate::retry::{retry_on_conflict, Attempt, UPDATE_ATTEMPTS};
use domain::affiliate::Affiliate;
use domain::connector::Provider;
use domain::error::{Error, Result};
use domain::payout_rail::{AccountUpdate, PayoutAccount, Rail};
use domain::tenant::Tenant;
use store::{affiliates, integrations, payout_accounts};

/// The tenant's paying integration, its credentials opened.
pub struct Paying {
    pub rail: Rail,
    /// STRIPE: the secret key; PAYPAL: the REST app's client id.
    pub(crate) key: String,
    /// PAYPAL: the REST app's secret (read by the payout rails, which only
    /// the functions built with `files` have).
    #[cfg_attr(not(feature = "files"), allow(dead_code))]
    pub(crate) secret: String,
}

impl std::fmt::Debug for Paying {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Paying")
            .field("rail", &self.rail)
            .finish_non_exhaustive()
    }
}

/// The tenant's paying integration, if it has one.
pub async fn paying(app: &App, tenant: &Tenant) -> Result<Option<Paying>> {
    let Some(i) = integrations::paying(&app.store, tenant).await? else {
        return Ok(None);
    };
    let open = |sealed: &Option<String>| {
        let sealed = sealed.clone();
        async move {
            match sealed {
                Some(s) => sealing::open(&app.signing, &s).await.map(Some),
                None => Ok(None),
            }
        }
    };
    Ok(
        match (
            i.provider,
            open(&i.api_key).await?,
            open(&i.client_secret).await?,
        ) {
            (Provider::Stripe, Some(key), _) => Some(Paying {
                rail: Rail::Stripe,
                key,
                secret: String::new(),
            }),
            (Provider::Paypal, _, Some(secret)) => Some(Paying {
                rail: Rail::Paypal,
                key: i.client_id.clone().unwrap_or_default(),
                secret,
            }),
            _ => None,
        },
    )
}

/// Where Stripe sends the affiliate back after onboarding.
#[derive(Debug, Clone)]
pub struct Return {
    /// When the affiliate is done (or left).
    pub return_url: String,
    /// When the link expired before it was used.
    pub refresh_url: String,
}

impl Return {
    /// Back to the portal page of the merchant's account (which asks for a
    /// new portal session when the affiliate's has ended).
    pub fn portal(base: &str, account_id: &str) -> Return {
        let page = format!("{}/portal?account={account_id}", base.trim_end_matches('/'));
        Return {
            return_url: format!("{page}&payouts=done"),
            refresh_url: format!("{page}&payouts=refresh"),
        }
    }
}

/// The affiliate's onboarding link: its connected account is created once
/// (Stripe Express, keyed by the affiliate so two calls at once make one),
/// then a fresh link. 409 INVALID_STATE without a paying Stripe integration.
pub async fn onboard(
    app: &App,
    tenant: &Tenant,
    affiliate: Affiliate,
    back: &Return,
    now: DateTime<Utc>,
) -> Result<AccountLink> {
    let Some(paying) = paying(app, tenant)
        .await?
        .filter(|p| p.rail == Rail::Stripe)
    else {
        return Err(Error::NotPaidThroughStripe);
    };
    let stripe = app.rails.stripe(&paying.key);
    let account_id = match &affiliate.payout_account {
        Some(a) => a.account_id.clone(),
        None => {
            let created = stripe
                .create_account(&affiliate.id, affiliate.email.as_str())
                .await?;
            let account = PayoutAccount::created(created.id.clone(), created.currently_due, now);
            set(
                app,
                tenant,
                affiliate,
                |a| match &a.payout_account {
                    Some(_) => None,
                    None => Some(account.clone()),
                },
                now,
            )
            .await?;
            created.id
        }
    };
    stripe
        .account_link(&account_id, &back.refresh_url, &back.return_url)
        .await
}

/// What `account.updated` came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Updated {
    /// The affiliate's account now shows it.
    Applied,
    /// Nothing shown changed.
    Unchanged,
    /// An account of no affiliate of this tenant.
    Unknown,
}

/// Applies Stripe's `account.updated` for an account of `tenant`'s
/// affiliates; an account unknown, or another tenant's, changes nothing.
pub async fn account_updated(
    app: &App,
    tenant: &Tenant,
    update: &AccountUpdate,
    now: DateTime<Utc>,
) -> Result<Updated> {
    let Some((owner, affiliate_id)) =
        payout_accounts::owner(&app.store, &update.account_id).await?
    else {
        return Ok(Updated::Unknown);
    };
    if owner != *tenant {
        return Ok(Updated::Unknown);
    }
    let affiliate = affiliates::get(&app.store, tenant, &affiliate_id).await?;
    let changed = set(
        app,
        tenant,
        affiliate,
        |a| {
            let before = a.payout_account.as_ref()?;
            (before.account_id == update.account_id)
                .then(|| update.applied(before, now))
                .flatten()
        },
        now,
    )
    .await?;
    Ok(if changed {
        Updated::Applied
    } else {
        Updated::Unchanged
    })
}

/// Sets the affiliate's payout account to what `decide` makes of the
/// affiliate as read (none: nothing to write); true when written.
async fn set(
    app: &App,
    tenant: &Tenant,
    affiliate: Affiliate,
    decide: impl Fn(&Affiliate) -> Option<PayoutAccount>,
    now: DateTime<Utc>,
) -> Result<bool> {
    let id = affiliate.id.clone();
    let (decide, id, mut first) = (&decide, &id, Some(affiliate));
    retry_on_conflict(UPDATE_ATTEMPTS, "affiliate", || {
        let read = first.take();
        async move {
            let old = match read {
                Some(a) => a,
                None => affiliates::get(&app.store, tenant, id).await?,
            };
            let Some(account) = decide(&old) else {
                return Ok(Attempt::Done(false));
            };
            let mut new = old.clone();
            new.payout_account = Some(account);
            new.stamps.stamp(now);
            Ok(
                match payout_accounts::replace(&app.store, tenant, &new, &old).await? {
                    true => Attempt::Done(true),
                    false => Attempt::Conflict,
                },
            )
        }
    })
    .await
}
