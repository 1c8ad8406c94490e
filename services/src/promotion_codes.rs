//! An affiliate's promotion codes (contract section 16): registered by
//! their provider id or created at Stripe through the integration's key,
//! listed, and deactivated (at Stripe too when created here). A payment
//! carrying an active one is attributed through the postback's own first
//! read (`store::conversions::read_sightings`).

use crate::app::App;
use crate::auth::sealing;
use domain::affiliate::{Affiliate, AffiliateStatus};
use domain::error::{Error, Result};
use domain::integration::Integration;
use domain::promotion_code::{Making, PromotionCode, PromotionCodeDraft};

use domain::tenant::Tenant;
use domain::timestamp;
use store::page::{Page, PageRequest};
use store::{affiliates, integrations, promotion_codes};

/// A new code of the affiliate: the affiliate and the integration read at
/// once, the body judged against them, the code made at Stripe when asked,
/// then stored with its guards. A code made at Stripe whose commit fails is
/// deactivated there again.
pub async fn create(
    app: &App,
    tenant: &Tenant,
    affiliate_id: &str,
    input: &PromotionCodeDraft,
) -> Result<PromotionCode> {
    let (affiliate, integration) = tokio::join!(
        affiliates::get(&app.store, tenant, affiliate_id),
        integrations::get(&app.store, tenant, &input.integration_id)
    );
    let (affiliate, integration) = (affiliate?, integration?);
    let making = input.making(&integration)?;
    let now = timestamp::now();
    let (provider_id, here) = match &making {
        Making::Register { provider_id } => (provider_id.clone(), false),
        Making::CreateAtStripe { .. } => (String::new(), true),
    };
    let mut p = PromotionCode::new(input, &affiliate, &integration, provider_id, here, now)?;
    let Making::CreateAtStripe { code, coupon_id } = making else {
        promotion_codes::create(&app.store, tenant, &p).await?;
        return Ok(p);
    };
    let key = stripe_key(app, &integration).await?;
    let stripe = app.rails.stripe(&key);
    p.provider_id = stripe
        .create_promotion_code(&code, &coupon_id, affiliate_id, &p.id)
        .await?;
    if let Err(e) = promotion_codes::create(&app.store, tenant, &p).await {
        // Not stored: the code made at Stripe must not apply there alone.
        if let Err(undo) = stripe.deactivate_promotion_code(&p.provider_id).await {
            tracing::warn!(promotion_code = %p.id, error = %undo, "a promotion code made at Stripe stays active there");
        }
        return Err(e);
    }
    Ok(p)
}

/// A page of the affiliate's codes (404 for an affiliate not the tenant's).
pub async fn list(
    app: &App,
    tenant: &Tenant,
    affiliate_id: &str,
    page: &PageRequest,
) -> Result<Page<PromotionCode>> {
    let (affiliate, codes) = tokio::join!(
        affiliates::get(&app.store, tenant, affiliate_id),
        promotion_codes::list(&app.store, tenant, affiliate_id, page)
    );
    affiliate?;
    codes
}

/// After an affiliate's change: a SUSPENDED or REJECTED affiliate's active
/// codes are deactivated (they stop attributing at once), and those made at
/// Stripe are deactivated there too; Stripe's refusal or silence leaves
/// the code inactive here and is logged, since the change it follows is
/// made already.
pub async fn follow_status(app: &App, tenant: &Tenant, affiliate: &Affiliate) -> Result<()> {
    if !matches!(
        affiliate.status,
        AffiliateStatus::Suspended | AffiliateStatus::Rejected
    ) {
        return Ok(());
    }
    let mut page = PageRequest {
        limit: 100,
        offset: 0,
        cursor: None,
    };
    let now = timestamp::now();
    loop {
        let codes = promotion_codes::list(&app.store, tenant, &affiliate.id, &page).await?;
        for p in codes.items {
            let Some(after) = p.deactivate(now) else {
                continue;
            };
            promotion_codes::deactivate(&app.store, tenant, &after).await?;
            if p.created_here {
                if let Err(e) = deactivate_at_stripe(app, tenant, &p).await {
                    tracing::warn!(promotion_code = %p.id, error = %e, "a promotion code stays active at Stripe");
                }
            }
        }
        match codes.next_cursor {
            Some(next) => page.cursor = Some(next),
            None => return Ok(()),
        }
    }
}

/// The code made at Stripe, deactivated there.
async fn deactivate_at_stripe(app: &App, tenant: &Tenant, p: &PromotionCode) -> Result<()> {
    let integration = integrations::get(&app.store, tenant, &p.integration_id).await?;
    let key = stripe_key(app, &integration).await?;
    app.rails
        .stripe(&key)
        .deactivate_promotion_code(&p.provider_id)
        .await
}

/// Deactivates one of the affiliate's codes: at Stripe first when it was
/// made there (a refusal or no answer changes nothing here), then here.
pub async fn deactivate(
    app: &App,
    tenant: &Tenant,
    affiliate_id: &str,
    id: &str,
) -> Result<PromotionCode> {
    let p = promotion_codes::get(&app.store, tenant, affiliate_id, id)
        .await?
        .ok_or(Error::NotFound("promotion code"))?;
    let Some(after) = p.deactivate(timestamp::now()) else {
        return Ok(p);
    };
    if p.created_here {
        deactivate_at_stripe(app, tenant, &p).await?;
    }
    promotion_codes::deactivate(&app.store, tenant, &after).await?;
    Ok(after)
}

/// The integration's Stripe key, opened (409 INVALID_STATE without one).
async fn stripe_key(app: &App, integration: &Integration) -> Result<String> {
    let sealed = integration.api_key.as_deref().ok_or(Error::state(
        "integration",
        "WITHOUT_API_KEY",
        "manage promotion codes at Stripe",
    ))?;
    sealing::open(&app.signing, sealed).await
}
