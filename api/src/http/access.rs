//! Who may call a route, as extractor types: a handler that takes
//! [`Merchant`] runs only for a valid API key and gets its tenant; one that
//! takes [`Public`] is counted per client address and has no tenant to ask
//! for. Path parameters and the client address are read here too.

use std::sync::Arc;

use axum::extract::{FromRequestParts, MatchedPath, RawPathParams};
use http::request::Parts;
use lambda_http::request::RequestContext;

use crate::domain::tenant::Tenant;
use crate::http::layer::FactsSlot;
use ::domain::error::{Error, Result};
use ::services::app::App;
use ::services::auth::{self, Principal};
use ::services::rate_limit;

/// The caller of a merchant route: the principal behind a valid API key,
/// counted against its account's rate limit.
#[derive(Debug, Clone)]
pub struct Merchant(pub Principal);

impl Merchant {
    /// The authenticated tenant.
    pub fn tenant(&self) -> &Tenant {
        &self.0.tenant
    }

    /// The authenticated principal.
    pub fn principal(&self) -> &Principal {
        &self.0
    }
}

impl FromRequestParts<Arc<App>> for Merchant {
    type Rejection = crate::http::reply::Failure;

    /// The signature names the account: its key record and its rate-limit
    /// counter are read and written at once (one round trip).
    async fn from_request_parts(
        parts: &mut Parts,
        app: &Arc<App>,
    ) -> Result<Self, Self::Rejection> {
        // Authenticated (and counted) once, by the idempotency layer.
        if let Some(m) = parts.extensions.get::<Merchant>() {
            return Ok(m.clone());
        }
        let slot = authenticated(parts);
        let header = authorization(parts);
        let limit = app.config.account_rate_per_minute;
        let (token, records, rate) = if app.signing.is_ready() {
            let token = auth::verify(&app.signing, header).await?;
            let (ids, scope) = (token.ids(), format!("acct:{}", token.account_id()));
            let (records, rate) = tokio::join!(
                auth::read_records(&app.store, &ids),
                rate_limit::hit(&app.store, &scope, limit)
            );
            (token, records, rate)
        } else {
            // The first request of a process: the secret is read now (or,
            // on the local host, may still be under way). Its records and its
            // count are read meanwhile, by the ids the key claims; nothing is
            // trusted until the signature checks (a forged key is 401 all the
            // same).
            let ids = auth::claimed_ids(header)?;
            let scope = format!("acct:{}", ids.account_id);
            let (token, records, rate) = tokio::join!(
                auth::verify(&app.signing, header),
                auth::read_records(&app.store, &ids),
                rate_limit::hit(&app.store, &scope, limit)
            );
            (token?, records, rate)
        };
        let principal = auth::check(&token, records?)?;
        let account = principal.tenant.key();
        slot.update(|f| f.account = Some(account));
        let rate = rate?;
        slot.update(|f| f.rate = Some(rate));
        rate.check()?;
        Ok(Merchant(principal))
    }
}

/// The request's facts, marked as an authenticated route's (never cached).
fn authenticated(parts: &Parts) -> FactsSlot {
    let slot = parts
        .extensions
        .get::<FactsSlot>()
        .cloned()
        .unwrap_or_default();
    slot.update(|f| f.merchant = true);
    slot
}

/// The `Authorization` header, when it is text.
fn authorization(parts: &Parts) -> Option<&str> {
    parts
        .headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
}

/// The caller of a public route: anyone, counted per client address and
/// route (the address hashed with the day's salt).
#[derive(Debug, Clone)]
pub struct Public {
    /// The client's network: its address hashed with the day's salt (none
    /// when API Gateway named no address). Never the address itself.
    pub network: Option<String>,
}

impl FromRequestParts<Arc<App>> for Public {
    type Rejection = crate::http::reply::Failure;

    async fn from_request_parts(
        parts: &mut Parts,
        app: &Arc<App>,
    ) -> Result<Self, Self::Rejection> {
        let (network, admission) = PublicCount::from_request_parts(parts, app).await?.split();
        admission.admit().await?;
        Ok(Public { network })
    }
}

/// The caller of a public route that sends its count itself, at once with
/// its own first reads and writes, so counting adds no round trip:
/// [`Admission::admit`] must be awaited before anything is written.
pub struct PublicCount {
    /// As [`Public::network`].
    pub network: Option<String>,
    admission: Admission,
}

impl PublicCount {
    /// The network, and the count still to be sent.
    pub fn split(self) -> (Option<String>, Admission) {
        (self.network, self.admission)
    }
}

/// A public request's count in its address's rate-limit window, not sent yet.
pub struct Admission {
    app: Arc<App>,
    scope: String,
    slot: Option<FactsSlot>,
}

impl Admission {
    /// Counts the request: RATE_LIMIT_EXCEEDED past the limit.
    pub async fn admit(self) -> Result<()> {
        let limit = self.app.config.public_rate_per_minute;
        let rate = rate_limit::hit(&self.app.store, &self.scope, limit).await?;
        if let Some(slot) = &self.slot {
            slot.update(|f| f.rate = Some(rate));
        }
        rate.check()
    }
}

impl FromRequestParts<Arc<App>> for PublicCount {
    type Rejection = crate::http::reply::Failure;

    async fn from_request_parts(
        parts: &mut Parts,
        app: &Arc<App>,
    ) -> Result<Self, Self::Rejection> {
        let client_ip = client_ip(parts);
        let route = parts
            .extensions
            .get::<MatchedPath>()
            .map(|p| p.as_str().to_string())
            .unwrap_or_default();
        // Its own salt, not the signing secret: a public request never waits
        // for a secret read.
        let salt = &app.config.client_ip_salt;
        let now = chrono::Utc::now();
        let network = client_ip
            .as_deref()
            .map(|ip| crate::client_ip::hash_ip(salt, ip, now));
        let ip_hash = network
            .clone()
            .unwrap_or_else(|| crate::client_ip::hash_ip(salt, "unknown", now));
        Ok(PublicCount {
            network,
            admission: Admission {
                app: app.clone(),
                scope: format!("ip:{ip_hash}:{route}"),
                slot: parts.extensions.get::<FactsSlot>().cloned(),
            },
        })
    }
}

/// The client address: API Gateway's `requestContext.http.sourceIp`, never
/// a header a client can set.
pub fn client_ip(parts: &Parts) -> Option<String> {
    match parts.extensions.get::<RequestContext>() {
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx.http.source_ip.clone(),
        _ => None,
    }
}

/// The `{id}` of the route's path, as sent (not decoded: an id is plain ASCII).
#[derive(Debug, Clone)]
pub struct PathId(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PathId {
    type Rejection = crate::http::reply::Failure;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let params = path_params(parts, state).await?;
        params
            .iter()
            .find(|(name, _)| name == "id")
            .map(|(_, v)| PathId(v.clone()))
            .ok_or_else(|| Error::internal("the route has no {id} parameter").into())
    }
}

/// The `{id}` of the route's path and the record under it (its other
/// parameter: `/affiliates/{id}/promotion-codes/{codeId}`), as sent.
#[derive(Debug, Clone)]
pub struct PathIds(pub String, pub String);

impl<S: Send + Sync> FromRequestParts<S> for PathIds {
    type Rejection = crate::http::reply::Failure;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let params = path_params(parts, state).await?;
        let id = params.iter().find(|(name, _)| name == "id");
        let other = params.iter().find(|(name, _)| name != "id");
        match (id, other) {
            (Some((_, id)), Some((_, other))) => Ok(PathIds(id.clone(), other.clone())),
            _ => Err(Error::internal("the route has no {id} and second parameter").into()),
        }
    }
}

/// The route's path parameters, by name.
async fn path_params<S: Send + Sync>(
    parts: &mut Parts,
    state: &S,
) -> Result<Vec<(String, String)>> {
    use axum::extract::rejection::RawPathParamsRejection;
    match RawPathParams::from_request_parts(parts, state).await {
        Ok(params) => Ok(params
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()),
        // An id that is no text names no record: 404, as any malformed id.
        Err(RawPathParamsRejection::InvalidUtf8InPathParam(_)) => Err(Error::NotFound("record")),
        Err(_) => Err(Error::internal("the route has no path parameters")),
    }
}

/// The API's own base URL, as the caller reached it: API Gateway's domain
/// name (`https://…`), else the `Host` header (the local host, `http://…`).
#[derive(Debug, Clone)]
pub struct BaseUrl(pub String);

impl<S: Send + Sync> FromRequestParts<S> for BaseUrl {
    type Rejection = crate::http::reply::Failure;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        if let Some(RequestContext::ApiGatewayV2(ctx)) = parts.extensions.get::<RequestContext>() {
            if let Some(domain) = ctx.domain_name.as_deref().filter(|d| !d.is_empty()) {
                return Ok(BaseUrl(format!("https://{domain}")));
            }
        }
        let host = parts
            .headers
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("localhost");
        Ok(BaseUrl(format!("http://{host}")))
    }
}

/// The caller of a portal route: the affiliate behind a valid portal token
/// (`pt_…`; an API key is 401 here, as a portal token is on every merchant
/// route), counted against a per-affiliate rate limit.
#[derive(Debug, Clone)]
pub struct Portal(pub auth::PortalPrincipal);

impl Portal {
    /// The affiliate's tenant.
    pub fn tenant(&self) -> &Tenant {
        &self.0.tenant
    }

    /// The affiliate, as read for this request.
    pub fn affiliate(&self) -> &crate::domain::affiliate::Affiliate {
        &self.0.affiliate
    }

    /// The page's "Back" link the token carries.
    pub fn return_url(&self) -> Option<&str> {
        self.0.return_url.as_deref()
    }
}

impl FromRequestParts<Arc<App>> for Portal {
    type Rejection = crate::http::reply::Failure;

    /// The affiliate and account are read while the request is counted.
    async fn from_request_parts(
        parts: &mut Parts,
        app: &Arc<App>,
    ) -> Result<Self, Self::Rejection> {
        let slot = authenticated(parts);
        let header = authorization(parts);
        let now = chrono::Utc::now();
        let limit = app.config.account_rate_per_minute;
        let (principal, rate) = if app.signing.is_ready() {
            let claims = auth::verify_portal(&app.signing, header, now).await?;
            let scope = format!("aff:{}", claims.aff);
            tokio::join!(
                auth::portal_principal(&app.store, &claims),
                rate_limit::hit(&app.store, &scope, limit)
            )
        } else {
            // The first request of a process: the records the token claims
            // are read while the secret is, and nothing is trusted until
            // the signature checks.
            let claimed = auth::claimed_portal(header)?;
            let scope = format!("aff:{}", claimed.aff);
            let (verified, principal, rate) = tokio::join!(
                auth::verify_portal(&app.signing, header, now),
                auth::portal_principal(&app.store, &claimed),
                rate_limit::hit(&app.store, &scope, limit)
            );
            // The claims read are the token's own bytes: once its signature
            // checks, they are the verified claims.
            verified?;
            (principal, rate)
        };
        let principal = principal?;
        let rate = rate?;
        let account = principal.tenant.key();
        slot.update(|f| {
            f.account = Some(account);
            f.rate = Some(rate);
        });
        rate.check()?;
        Ok(Portal(principal))
    }
}
