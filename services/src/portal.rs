//! The affiliate portal's use cases: a merchant opens a portal session for
//! one affiliate; the affiliate reads its own numbers, edits its payout
//! details and sends a payout's invoice. Every read is scoped to the
//! affiliate the token names: another affiliate's record is 404, as if it
//! did not exist.

use chrono::{DateTime, Utc};

use crate::affiliates::update as update_affiliate;
use crate::app::App;
use crate::paying::invoice;
use crate::payouts as payout_service;
use domain::affiliate::Affiliate;
use domain::affiliate::AffiliateChanges;
use domain::asset::{Asset, AssetStatus};
use domain::campaign::Campaign;
use domain::conversion::Conversion;
use domain::error::{Error, Result};
use domain::payout::{InvoiceUpload, Payout};
use domain::payout_command::Command;
use domain::portal;
use domain::summary::{self, GroupBy, Period, Summary};
use domain::tenant::Tenant;
use store::assets::{self, AssetFilter};
use store::conversions::{self, ConversionFilter};
use store::page::{Page, PageRequest};
use store::payouts::{self, PayoutFilter};
use store::{campaigns, clicks, rollups};

/// The affiliate's campaign (one GetItem).
pub async fn campaign(app: &App, tenant: &Tenant, a: &Affiliate) -> Result<Campaign> {
    campaigns::get(&app.store, tenant, &a.campaign_id).await
}

/// Applies the affiliate's own edit of its name and payout details, by the
/// merchant's rules for the same fields; the affiliate and its campaign after.
pub async fn update_me(
    app: &App,
    tenant: &Tenant,
    a: &Affiliate,
    changes: &AffiliateChanges,
) -> Result<(Affiliate, Campaign)> {
    let (updated, campaign) = tokio::join!(
        update_affiliate(app, tenant, &a.id, changes),
        campaign(app, tenant, a)
    );
    Ok((updated?, campaign?))
}

/// The affiliate's figures of a period: its summary by status, its clicks
/// and, when asked, every day's clicks and figures.
pub struct Stats {
    pub summary: Summary,
    pub clicks: i64,
    pub days: Option<Vec<summary::Day>>,
}

/// The affiliate's figures of a period: its rollups and its click counts
/// (two Queries at once), flat in the data like the summary.
pub async fn stats(
    app: &App,
    tenant: &Tenant,
    a: &Affiliate,
    period: Period,
    daily: bool,
    now: DateTime<Utc>,
) -> Result<Stats> {
    let window = summary::window(period, now);
    let (rows, clicks) = tokio::join!(
        rollups::read_affiliate(&app.store, tenant, &a.id, &window),
        clicks::daily(&app.store, tenant, &a.id, &window)
    );
    let (rows, clicks) = (rows?, clicks?);
    let s = summary::summarise(Some(period), &window, Some(GroupBy::Status), None, &rows);
    Ok(Stats {
        summary: s,
        clicks: clicks.iter().map(|(_, n)| n).sum(),
        days: daily.then(|| summary::daily(&window, &rows, &clicks)),
    })
}

/// A page of the affiliate's conversions, newest first.
pub async fn conversions(
    app: &App,
    tenant: &Tenant,
    a: &Affiliate,
    page: &PageRequest,
) -> Result<Page<Conversion>> {
    let f = ConversionFilter {
        affiliate_id: Some(a.id.clone()),
        ..ConversionFilter::default()
    };
    conversions::list(&app.store, tenant, &f, page).await
}

/// One of the affiliate's conversions (404 for any other).
pub async fn conversion(app: &App, tenant: &Tenant, a: &Affiliate, id: &str) -> Result<Conversion> {
    let c = conversions::get(&app.store, tenant, id).await?;
    match c.affiliate_id.as_deref() == Some(a.id.as_str()) {
        true => Ok(c),
        false => Err(Error::NotFound("conversion")),
    }
}

/// A page of the affiliate's payouts, newest first.
pub async fn payouts(
    app: &App,
    tenant: &Tenant,
    a: &Affiliate,
    page: &PageRequest,
) -> Result<Page<Payout>> {
    let f = PayoutFilter {
        affiliate_id: Some(a.id.clone()),
        ..PayoutFilter::default()
    };
    payouts::list(&app.store, tenant, &f, page).await
}

/// One of the affiliate's payouts (404 for any other).
pub async fn payout(app: &App, tenant: &Tenant, a: &Affiliate, id: &str) -> Result<Payout> {
    let p = payouts::get(&app.store, tenant, id).await?;
    match p.affiliate_id == a.id {
        true => Ok(p),
        false => Err(Error::NotFound("payout")),
    }
}

/// Stores the affiliate's invoice for its payout where the invoice event
/// expects it and applies it at once (the S3 event that follows finds the
/// payout INVOICE_UPLOADED and changes nothing). The file's type is what
/// its first bytes prove.
pub async fn upload_invoice(
    app: &App,
    tenant: &Tenant,
    a: &Affiliate,
    id: &str,
    file_name: Option<&str>,
    bytes: Vec<u8>,
    now: DateTime<Utc>,
) -> Result<Payout> {
    let content_type = portal::invoice_type(&bytes, invoice::MAX_BYTES)?;
    let p = payout(app, tenant, a, id).await?;
    // Refused before anything is stored when the payout takes no invoice.
    if !p.takes_invoice() {
        return Err(Error::state(
            "payout",
            p.status.as_str(),
            "attach an invoice",
        ));
    }
    let file_name = portal::invoice_file_name(file_name, content_type);
    // Its own object: a new file never overwrites one being approved.
    let upload_id = ulid::Ulid::new().to_string();
    let key = invoice::upload_key(tenant, &p.id, &upload_id, &file_name);
    let size = bytes.len() as u64;
    app.files().put(&key, bytes, content_type).await?;
    let upload = InvoiceUpload {
        key,
        file_name,
        content_type: content_type.to_string(),
        size,
    };
    let attach = |_: &Payout| Ok(Command::ReplaceInvoice(upload.clone()));
    // Decided first on the payout as read above (no second read).
    let id = p.id.clone();
    payout_service::transition_from(app, tenant, &id, Some(p), attach, now).await
}

/// A page of the finalized assets of the affiliate's campaign.
pub async fn assets(
    app: &App,
    tenant: &Tenant,
    a: &Affiliate,
    page: &PageRequest,
) -> Result<Page<Asset>> {
    let f = AssetFilter {
        status: Some(AssetStatus::Finalized),
        campaign_id: Some(a.campaign_id.clone()),
        kind: None,
    };
    assets::list(&app.store, tenant, &f, page).await
}
