//! Tax forms: the affiliate's upload through the portal, the merchant's
//! download, and the check that holds approve and batch-process while the
//! campaign requires a form the affiliate has not sent (the rule is
//! `domain::tax_form`).

use chrono::{DateTime, Datelike, Utc};

use crate::app::App;
use crate::domain::affiliate::Affiliate;
use crate::domain::payout::{Payout, PayoutStatus};
use crate::domain::tax_form::{self, Payment, TaxForm, TaxFormType};
use crate::domain::tenant::Tenant;
use crate::error::{Error, Result};
use crate::retry;
use crate::store::payouts::{self, PayoutFilter};
use crate::store::{affiliates, campaigns};

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

/// What the affiliate was paid in `p`'s currency in the calendar year of
/// `now`: its PAID payouts (one Query of its partition), added up by the
/// domain.
async fn paid_this_year(
    app: &App,
    tenant: &Tenant,
    p: &Payout,
    now: DateTime<Utc>,
) -> Result<rust_decimal::Decimal> {
    let filter = PayoutFilter {
        affiliate_id: Some(p.affiliate_id.clone()),
        status: Some(PayoutStatus::Paid),
        ..PayoutFilter::default()
    };
    let paid = payouts::all(&app.store, tenant, &filter).await?;
    Ok(tax_form::paid_in_year(&paid, p.currency, now.year()))
}

/// Refuses (409 INVALID_STATE) to move `p` towards payment while its
/// campaign requires the affiliate's tax form, the affiliate has none, and
/// its yearly total with `p` reaches the campaign's `fromAmount`. A payout
/// that is paid or closed already is left to its transition's own answer.
/// Costs one GetItem (the campaign) unless the campaign requires a form.
pub async fn check_payable(
    app: &App,
    tenant: &Tenant,
    p: &Payout,
    now: DateTime<Utc>,
) -> Result<()> {
    let open = matches!(
        p.status,
        PayoutStatus::Pending | PayoutStatus::InvoiceUploaded | PayoutStatus::Approved
    );
    if !open {
        return Ok(());
    }
    let campaign = match campaigns::get(&app.store, tenant, &p.campaign_id).await {
        Ok(c) => c,
        Err(Error::NotFound(_)) => return Ok(()),
        Err(e) => return Err(e),
    };
    if !tax_form::may_apply(campaign.tax_form.as_ref()) {
        return Ok(());
    }
    let (a, paid) = tokio::join!(
        affiliates::get(&app.store, tenant, &p.affiliate_id),
        paid_this_year(app, tenant, p, now)
    );
    let a = a?;
    let payment = Payment {
        setting: campaign.tax_form.as_ref(),
        form: a.tax_form.as_ref(),
        paid_this_year: paid?,
        amount: p.amount,
    };
    tax_form::check(&payment, p.status.as_str())
}
