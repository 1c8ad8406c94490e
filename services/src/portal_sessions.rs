//! Portal sessions: a merchant opens the affiliate portal for one of its
//! affiliates (contract section 13); the token is signed, never stored.

use chrono::{DateTime, Utc};

use crate::app::App;
use crate::auth::portal::{self as token, PortalClaims};
use domain::error::{Error, Result};
use domain::tenant::Tenant;
use store::affiliates;

/// A session just opened: the portal's address, its bearer token and when
/// it ends.
#[derive(Debug)]
pub struct Opened {
    pub url: String,
    pub token: String,
    pub expires_at: DateTime<Utc>,
}

/// Opens a one-hour portal session for an ACTIVE affiliate of the tenant
/// (404 for another tenant's, 409 for one that is not ACTIVE).
pub async fn open_session(
    app: &App,
    tenant: &Tenant,
    affiliate_id: &str,
    return_url: Option<&str>,
    base: &str,
    now: DateTime<Utc>,
) -> Result<Opened> {
    let (affiliate, signer) = tokio::join!(
        affiliates::get(&app.store, tenant, affiliate_id),
        app.signing.current()
    );
    let affiliate = affiliate?;
    if !affiliate.opens_portal() {
        return Err(Error::state(
            "affiliate",
            affiliate.status.as_str(),
            "open a portal session",
        ));
    }
    let claims = PortalClaims::new(tenant, &affiliate.id, now).returning_to(return_url);
    let token = token::issue(&signer?.secret, &claims);
    Ok(Opened {
        url: format!("{base}/portal?account={}#token={token}", tenant.account_id),
        token,
        expires_at: claims.expires_at(),
    })
}
