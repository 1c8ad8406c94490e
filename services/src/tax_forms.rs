//! Tax forms: the affiliate's upload through the portal, the merchant's
//! download, and the check that holds approve and batch-process while the
//! campaign requires a form the affiliate has not sent (the rule is
//! `domain::tax_form`).

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Datelike, Utc};

use crate::app::App;
use crate::retry;
use domain::affiliate::Affiliate;
use domain::error::{Error, Result};
use domain::payout::{Payout, PayoutStatus};
use domain::tax_form::{self, TaxForm, TaxFormSetting, TaxFormType};
use domain::tax_hold;
use domain::tenant::Tenant;
use store::payouts::{self, PayoutFilter};
use store::{affiliates, campaigns};

/// Stores the affiliate's form (its own object: a new upload never
/// overwrites one being read) and records it on the affiliate with an
/// `affiliate.updated` event (read again when it changed meanwhile); the
/// affiliate after.
pub async fn upload(
    app: &App,
    tenant: &Tenant,
    a: &Affiliate,
    form_type: TaxFormType,
    bytes: Vec<u8>,
    now: DateTime<Utc>,
) -> Result<Affiliate> {
    tax_form::check_file(&bytes)?;
    let key = tax_form::key(tenant, &a.id, &ulid::Ulid::new().to_string());
    app.files().put(&key, bytes, "application/pdf").await?;
    let form = TaxForm {
        form_type,
        uploaded_at: now,
        key,
    };
    let form = &form;
    retry::edit(
        "affiliate",
        || affiliates::get(&app.store, tenant, &a.id),
        |current| Ok(current.with_tax_form(form.clone(), now)),
        |next, current| async move {
            let written = affiliates::replace(&app.store, tenant, &next, &current).await?;
            Ok(written.then_some(next))
        },
    )
    .await
}

/// The affiliate's form: its type and the file's bytes (404 without one).
pub async fn file(app: &App, tenant: &Tenant, affiliate_id: &str) -> Result<(TaxForm, Vec<u8>)> {
    let a = affiliates::get(&app.store, tenant, affiliate_id).await?;
    let Some(form) = a.tax_form else {
        return Err(Error::NotFound("tax form"));
    };
    match app.files().get(&form.key).await? {
        Some((bytes, _)) => Ok((form, bytes)),
        None => Err(Error::NotFound("tax form")),
    }
}

/// The payouts among `asked` that wait for their affiliate's tax form, with
/// their refusal (409 INVALID_STATE), decided together so payouts asked at
/// once count towards each other (`domain::tax_hold::held`). Only open
/// payouts are judged (a paid or closed one is left to its transition's own
/// answer). Costs one BatchGetItem of their campaigns; only for a campaign
/// that requires a form, its affiliates (batch reads) and each one's
/// payouts (one Query of its partition each, at once).
pub async fn holds(
    app: &App,
    tenant: &Tenant,
    asked: &[&Payout],
    now: DateTime<Utc>,
) -> Result<HashMap<String, Error>> {
    let open: Vec<&Payout> = asked
        .iter()
        .copied()
        .filter(|p| {
            matches!(
                p.status,
                PayoutStatus::Pending | PayoutStatus::InvoiceUploaded | PayoutStatus::Approved
            )
        })
        .collect();
    let ids: Vec<&str> = open.iter().map(|p| p.campaign_id.as_str()).collect();
    let requiring: HashMap<String, TaxFormSetting> = campaigns::get_each(&app.store, tenant, &ids)
        .await?
        .into_iter()
        .filter(|c| tax_form::may_apply(c.tax_form.as_ref()))
        .filter_map(|c| Some((c.id, c.tax_form?)))
        .collect();
    let judged: Vec<&Payout> = open
        .into_iter()
        .filter(|p| requiring.contains_key(&p.campaign_id))
        .collect();
    if judged.is_empty() {
        return Ok(HashMap::new());
    }
    let affiliate_ids: BTreeSet<&str> = judged.iter().map(|p| p.affiliate_id.as_str()).collect();
    let affiliate_ids: Vec<&str> = affiliate_ids.into_iter().collect();
    let histories = affiliate_ids.iter().map(|a| history(app, tenant, a));
    let (found, histories) = tokio::join!(
        affiliates::get_each(&app.store, tenant, &affiliate_ids),
        futures::future::try_join_all(histories)
    );
    let (found, histories) = (found?, histories?);
    let mut refused = HashMap::new();
    for (a, history) in affiliate_ids.iter().zip(&histories) {
        let theirs: Vec<&Payout> = judged
            .iter()
            .copied()
            .filter(|p| p.affiliate_id == *a)
            .collect();
        let form = found.get(*a).and_then(|x| x.tax_form.as_ref());
        let setting = requiring.get(&theirs[0].campaign_id);
        let waits = tax_hold::held(setting, form, history, &theirs, now.year());
        for (p, w) in theirs.iter().zip(waits) {
            if w {
                refused.insert(p.id.clone(), tax_form::refusal(p.status.as_str()));
            }
        }
    }
    Ok(refused)
}

/// Every payout of an affiliate (one Query of its partition, page by page).
async fn history(app: &App, tenant: &Tenant, affiliate_id: &str) -> Result<Vec<Payout>> {
    let filter = PayoutFilter {
        affiliate_id: Some(affiliate_id.to_string()),
        ..PayoutFilter::default()
    };
    payouts::all(&app.store, tenant, &filter).await
}

/// Refuses (409 INVALID_STATE) to move `p` towards payment while it waits
/// for its affiliate's tax form (see [`holds`]).
pub async fn check_payable(
    app: &App,
    tenant: &Tenant,
    p: &Payout,
    now: DateTime<Utc>,
) -> Result<()> {
    match holds(app, tenant, &[p], now).await?.remove(&p.id) {
        Some(refusal) => Err(refusal),
        None => Ok(()),
    }
}
