//! The affiliate portal's routes (contract section 13): the affiliate a
//! portal token names reads its own terms, numbers, conversions, payouts
//! and swipe copy, promotion codes and adjustments, edits its payout details
//! and sends a payout's invoice.
//! A merchant key is 401 on every one of them. The use cases run in
//! `api::services::portal`.

use api::domain::error::Error;
use api::domain::summary::{Period, SeriesBy};
use api::domain::tax_form::{self, TaxFormType};
use api::domain::timestamp;
use api::domain::validation::Issue;
use api::http::body::file_bytes;
use api::http::Answer;
use api::http::{ApiRouter, BaseUrl, FromQuery, Json, Params, PathId, Portal, Query, Reply};
use api::routes;
use api::services::app::App;
use api::services::paying::invoice::MAX_BYTES;
use api::services::portal as service;
use api::services::tax_forms;
use api::services::{adjustments, payout_accounts, promotion_codes};
use api::store::page::PageRequest;
use api::wire::adjustment::PortalAdjustment;
use api::wire::payout_account::AccountLink;
use api::wire::portal::PortalAsset;
use api::wire::portal::PortalConversion;
use api::wire::portal::PortalMe;
use api::wire::portal::PortalMePatch;
use api::wire::portal::PortalPayout;
use api::wire::promotion_code::PortalPromotionCode;
use api::wire::summary::PortalStats;
use api::wire::tax_form::TaxFormView;
use axum::body::Body;
use axum::extract::State;
use http::HeaderMap;
use std::sync::Arc;

/// The routes this function serves.
pub fn routes() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(me, update_me))
        .routes(routes!(payout_account))
        .routes(routes!(stats))
        .routes(routes!(conversions))
        .routes(routes!(conversion))
        .routes(routes!(payouts))
        .routes(routes!(payout))
        .routes(routes!(invoice))
        .routes(routes!(tax_form))
        .routes(routes!(assets))
        .routes(routes!(promotion_codes))
        .routes(routes!(adjustments))
}

/// Your adjustments
///
/// What the merchant added to your balance (a bonus, positive) or took back from it (negative),
/// newest first, with why: each is netted into your next payout in its currency (`payoutId`
/// once it is).
#[utoipa::path(
    get,
    path = "/api/v1/portal/adjustments",
    operation_id = "listPortalAdjustments",
    tag = "Portal",
    security(("portalToken" = [])),
    params(PageRequest),
    responses((status = 200, description = "A page of your adjustments.", body = [PortalAdjustment]))
)]
async fn adjustments(
    p: Portal,
    State(app): State<Arc<App>>,
    Params(page): Params<PageRequest>,
) -> Answer {
    let found = adjustments::of(&app, p.tenant(), p.affiliate(), &page).await?;
    Reply::list_with(&found, PortalAdjustment::from, &page)
}

/// Your promotion codes
///
/// The promotion codes the merchant gave you, newest first: a customer who pays with an active
/// one is yours, as if they came through your link.
#[utoipa::path(
    get,
    path = "/api/v1/portal/promotion-codes",
    operation_id = "listPortalPromotionCodes",
    tag = "Portal",
    security(("portalToken" = [])),
    params(PageRequest),
    responses((status = 200, description = "A page of your promotion codes.", body = [PortalPromotionCode]))
)]
async fn promotion_codes(
    p: Portal,
    State(app): State<Arc<App>>,
    Params(page): Params<PageRequest>,
) -> Answer {
    let codes = promotion_codes::list(&app, p.tenant(), &p.affiliate().id, &page).await?;
    Reply::list_with(&codes, PortalPromotionCode::from, &page)
}

/// Your profile and terms
///
/// The affiliate the portal token names, its campaign's terms and its referral link.
#[utoipa::path(
    get,
    path = "/api/v1/portal/me",
    operation_id = "getPortalMe",
    tag = "Portal",
    security(("portalToken" = [])),
    responses((status = 200, description = "The affiliate and its terms.", body = PortalMe))
)]
async fn me(p: Portal, State(app): State<Arc<App>>) -> Answer {
    let campaign = service::campaign(&app, p.tenant(), p.affiliate()).await?;
    Reply::ok(PortalMe::of(p.affiliate(), &campaign, p.return_url()))
}

/// Set up payouts
///
/// Your Stripe Connect account's onboarding link (the merchant must pay through Stripe): the
/// account is created the first time, and each call answers a fresh link for it. Open `url`;
/// Stripe sends you back to this page. `payoutAccount` on `GET /api/v1/portal/me` shows when
/// payouts are enabled (ACTIVE).
#[utoipa::path(
    post,
    path = "/api/v1/portal/payout-account",
    operation_id = "createPortalPayoutAccountLink",
    tag = "Portal",
    security(("portalToken" = [])),
    responses(
        (status = 201, description = "The onboarding link.", body = AccountLink),
        (status = 409, response = api::http::openapi::Conflict),
        (status = 503, response = api::http::openapi::ServiceUnavailable)
    )
)]
async fn payout_account(p: Portal, State(app): State<Arc<App>>, BaseUrl(base): BaseUrl) -> Answer {
    let back = payout_accounts::Return::portal(&base, &p.tenant().account_id);
    let link = payout_accounts::onboard(
        &app,
        p.tenant(),
        p.affiliate().clone(),
        &back,
        timestamp::now(),
    )
    .await?;
    Reply::created(AccountLink::new(link.url, link.expires_at))
}

/// Update your name and payout details
///
/// Only `name`, `payoutMethod` and `payoutEmail`, by the same rules as the merchant's update.
/// A body that changes nothing changes nothing: no `affiliate.updated` event is sent.
#[utoipa::path(
    patch,
    path = "/api/v1/portal/me",
    operation_id = "updatePortalMe",
    tag = "Portal",
    security(("portalToken" = [])),
    request_body = Option<PortalMePatch>,
    responses((status = 200, description = "The affiliate after the change.", body = PortalMe))
)]
async fn update_me(
    p: Portal,
    State(app): State<Arc<App>>,
    Json(patch): Json<PortalMePatch>,
) -> Answer {
    let (a, c) = service::update_me(&app, p.tenant(), p.affiliate(), &patch.into()).await?;
    Reply::ok(PortalMe::of(&a, &c, p.return_url()))
}

/// The stats query: the period, and whether to add the daily series.
struct StatsQuery {
    period: Period,
    daily: bool,
}

impl FromQuery for StatsQuery {
    fn read(q: &mut Query<'_>) -> Self {
        let period = match q.str("period") {
            None => Some(Period::Days30),
            Some(_) => q.variant::<Period>("period"),
        };
        let period = period.unwrap_or(Period::Days30);
        let daily = q.one_of("series", &SeriesBy::NAMES).is_some();
        if daily && period == Period::All {
            q.issue(Issue::new(
                &["series"],
                "invalid_combination",
                "a daily series needs a period other than all",
            ));
        }
        StatsQuery { period, daily }
    }
}

/// Your numbers
///
/// Clicks, conversions, revenue and commission per currency and per status over a period (the
/// summary's periods), read from the affiliate's rollups and click counts: the cost is flat
/// in the number of conversions. `series=day` adds every day's clicks and figures (not with
/// `period=all`).
#[utoipa::path(
    get,
    path = "/api/v1/portal/stats",
    operation_id = "getPortalStats",
    tag = "Portal",
    security(("portalToken" = [])),
    params(
        ("period" = inline(Option<api::http::openapi::PeriodParam>), Query, description = "Default `30d`."),
        ("series" = Option<api::domain::summary::SeriesBy>, Query, description = "`day`: add the daily series.")
    ),
    responses((status = 200, description = "The affiliate's figures.", body = PortalStats))
)]
async fn stats(p: Portal, State(app): State<Arc<App>>, Params(q): Params<StatsQuery>) -> Answer {
    let now = timestamp::now();
    let st = service::stats(&app, p.tenant(), p.affiliate(), q.period, q.daily, now).await?;
    let days = st.days.as_deref();
    Reply::ok(PortalStats::of(q.period, &st.summary, st.clicks, days))
}

/// Your conversions
///
/// The affiliate's conversions, newest first: no customer identity, no merchant metadata.
#[utoipa::path(
    get,
    path = "/api/v1/portal/conversions",
    operation_id = "listPortalConversions",
    tag = "Portal",
    security(("portalToken" = [])),
    params(PageRequest),
    responses((status = 200, description = "A page of conversions.", body = [PortalConversion]))
)]
async fn conversions(
    p: Portal,
    State(app): State<Arc<App>>,
    Params(page): Params<PageRequest>,
) -> Answer {
    let found = service::conversions(&app, p.tenant(), p.affiliate(), &page).await?;
    Reply::list_with(&found, PortalConversion::from, &page)
}

/// One of your conversions
///
/// Another affiliate's conversion is 404.
#[utoipa::path(
    get,
    path = "/api/v1/portal/conversions/{id}",
    operation_id = "getPortalConversion",
    tag = "Portal",
    security(("portalToken" = [])),
    responses((status = 200, description = "The conversion.", body = PortalConversion))
)]
async fn conversion(p: Portal, State(app): State<Arc<App>>, PathId(id): PathId) -> Answer {
    let c = service::conversion(&app, p.tenant(), p.affiliate(), &id).await?;
    Reply::ok(PortalConversion::from(&c))
}

/// Your payouts
///
/// The affiliate's payouts, newest first, as the affiliate sees them.
#[utoipa::path(
    get,
    path = "/api/v1/portal/payouts",
    operation_id = "listPortalPayouts",
    tag = "Portal",
    security(("portalToken" = [])),
    params(PageRequest),
    responses((status = 200, description = "A page of payouts.", body = [PortalPayout]))
)]
async fn payouts(
    p: Portal,
    State(app): State<Arc<App>>,
    Params(page): Params<PageRequest>,
) -> Answer {
    let found = service::payouts(&app, p.tenant(), p.affiliate(), &page).await?;
    Reply::list_with(&found, PortalPayout::from, &page)
}

/// One of your payouts
///
/// Another affiliate's payout is 404.
#[utoipa::path(
    get,
    path = "/api/v1/portal/payouts/{id}",
    operation_id = "getPortalPayout",
    tag = "Portal",
    security(("portalToken" = [])),
    responses((status = 200, description = "The payout.", body = PortalPayout))
)]
async fn payout(p: Portal, State(app): State<Arc<App>>, PathId(id): PathId) -> Answer {
    let found = service::payout(&app, p.tenant(), p.affiliate(), &id).await?;
    Reply::ok(PortalPayout::from(&found))
}

/// An invoice file's bytes.
#[derive(utoipa::ToSchema)]
#[schema(value_type = String, format = Binary)]
#[allow(dead_code)]
struct InvoiceFile(Vec<u8>);

/// Send a payout's invoice
///
/// The file itself as the body (PDF, PNG or JPEG, at most 4 MiB, known by its first bytes;
/// `X-File-Name` names it). A PENDING payout becomes INVOICE_UPLOADED at once; until it is
/// approved, a new file replaces the one sent; each upload is its own object, so none
/// overwrites another. Any other status is 409 and nothing is applied.
#[utoipa::path(
    put,
    path = "/api/v1/portal/payouts/{id}/invoice",
    operation_id = "uploadPortalInvoice",
    tag = "Portal",
    security(("portalToken" = [])),
    request_body(content = InvoiceFile, content_type = "application/octet-stream", description = "The PDF, PNG or JPEG file's bytes (its type is read from them; any `Content-Type` is accepted)."),
    params(("X-File-Name" = Option<String>, Header, description = "The file's name (letters, digits, `.`, `-`, `_` are kept).")),
    responses(
        (status = 200, description = "The payout, INVOICE_UPLOADED.", body = PortalPayout),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn invoice(
    p: Portal,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    headers: HeaderMap,
    body: Body,
) -> Answer {
    let limit = usize::try_from(MAX_BYTES).unwrap_or(usize::MAX);
    let bytes = file_bytes(body, limit, "an invoice").await?;
    let name = headers.get("x-file-name").and_then(|v| v.to_str().ok());
    let now = timestamp::now();
    let (tenant, affiliate) = (p.tenant(), p.affiliate());
    let updated =
        service::upload_invoice(&app, tenant, affiliate, &id, name, bytes.to_vec(), now).await?;
    Reply::ok(PortalPayout::from(&updated))
}

/// The tax form's query: its type.
struct TaxFormQuery(TaxFormType);

impl FromQuery for TaxFormQuery {
    fn read(q: &mut Query<'_>) -> Self {
        let found = q.variant::<TaxFormType>("formType");
        if q.str("formType").is_none() {
            q.issue(Issue::new(
                &["formType"],
                "required",
                "formType is required",
            ));
        }
        TaxFormQuery(found.unwrap_or(TaxFormType::W9))
    }
}

/// A tax form file's bytes.
#[derive(utoipa::ToSchema)]
#[schema(value_type = String, format = Binary)]
#[allow(dead_code)]
struct TaxFormFile(Vec<u8>);

/// Send your tax form
///
/// The W-9, W-8BEN or W-8BEN-E as a PDF (at most 4 MiB, known by its first bytes), its type in
/// `formType`. It replaces the one sent before; the merchant reads it, and while the campaign
/// requires a form, payouts wait for it.
#[utoipa::path(
    put,
    path = "/api/v1/portal/tax-form",
    operation_id = "uploadPortalTaxForm",
    tag = "Portal",
    security(("portalToken" = [])),
    request_body(content = TaxFormFile, content_type = "application/octet-stream", description = "The PDF's bytes (its type is read from them, so any `Content-Type` is accepted: `application/pdf` as well)."),
    params(("formType" = api::domain::tax_form::TaxFormType, Query, description = "The form's type (any letter case).")),
    responses((status = 200, description = "The form as recorded.", body = api::wire::tax_form::TaxFormView))
)]
async fn tax_form(
    p: Portal,
    State(app): State<Arc<App>>,
    Params(TaxFormQuery(form_type)): Params<TaxFormQuery>,
    body: Body,
) -> Answer {
    let bytes = file_bytes(body, tax_form::MAX_BYTES, "a tax form").await?;
    let now = timestamp::now();
    let (tenant, affiliate) = (p.tenant(), p.affiliate());
    let a = tax_forms::upload(&app, tenant, affiliate, form_type, bytes.to_vec(), now).await?;
    let form = a
        .tax_form
        .as_ref()
        .map(TaxFormView::from)
        .ok_or_else(|| Error::internal("the tax form was not recorded"))?;
    Reply::ok(form)
}

/// Your campaign's swipe copy
///
/// The finalized assets of the affiliate's campaign, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/portal/assets",
    operation_id = "listPortalAssets",
    tag = "Portal",
    security(("portalToken" = [])),
    params(PageRequest),
    responses((status = 200, description = "A page of assets.", body = [PortalAsset]))
)]
async fn assets(
    p: Portal,
    State(app): State<Arc<App>>,
    Params(page): Params<PageRequest>,
) -> Answer {
    let found = service::assets(&app, p.tenant(), p.affiliate(), &page).await?;
    Reply::list_with(&found, PortalAsset::from, &page)
}
