//! Affiliate routes: list, merchant create, get and partial update, portal
//! sessions, payout accounts, promotion codes and manual adjustments.
use api::domain::timestamp;
use api::http::idempotency::REPLAYED;
use api::http::Answer;
use api::http::{ApiRouter, BaseUrl, Json, Listing, Merchant, Params, PathId, PathIds, Reply};
use api::routes;
use api::services::adjustments::{self, Booked};
use api::services::app::App;
use api::services::enrollments;
use api::services::{self, payout_accounts, portal_sessions, promotion_codes};
use api::store::affiliates::{self, AffiliateFilter};
use api::store::page::PageRequest;
use api::wire::adjustment::AdjustmentView;
use api::wire::adjustment::NewAdjustment;
use api::wire::affiliate::AffiliatePatch;
use api::wire::affiliate::AffiliateView;
use api::wire::affiliate::NewAffiliate;
use api::wire::payout_account::AccountLink;
use api::wire::portal::PortalSession;
use api::wire::promotion_code::NewPromotionCode;
use api::wire::promotion_code::PromotionCodeView;
use axum::extract::State;
use std::sync::Arc;

/// The routes this function serves.
pub fn routes() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get, update))
        .routes(routes!(portal_session))
        .routes(routes!(payout_account))
        .routes(routes!(list_promotion_codes, create_promotion_code))
        .routes(routes!(deactivate_promotion_code))
        .routes(routes!(list_adjustments, create_adjustment))
}

/// Create an adjustment (ext)
///
/// Books a manual adjustment on the affiliate's balance in one currency: a positive `amount` is
/// a bonus, a negative one a manual clawback. It waits in the affiliate's payable pool beside
/// the clawbacks of reversed paid conversions, and the payout job nets it into the affiliate's
/// next payout in that currency (`adjustmentTotal`); a bonus alone becomes a payout once the pool
/// reaches the campaign's `minimumPayout`. The affiliate's `earned` moves by the amount at once
/// (a bonus grows it, a manual clawback lowers it); event `adjustment.created`. The adjustment,
/// its pool entry, `earned`, the event and the `externalId` guard are one transaction. Only an
/// ACTIVE or SUSPENDED affiliate: PENDING or REJECTED is 409 INVALID_STATE. The same
/// `externalId` with the same body again: 200 with the original (`Idempotent-Replayed: true`),
/// nothing written; with another body: 409 ALREADY_EXISTS naming it.
#[utoipa::path(
    post,
    path = "/api/v1/affiliates/{id}/adjustments",
    operation_id = "createAffiliateAdjustment",
    tag = "Affiliates",
    request_body = api::wire::adjustment::NewAdjustment,
    responses(
        (status = 200, description = "The same `externalId` and body again: the original adjustment (as it is now), nothing written.", body = api::wire::adjustment::AdjustmentView),
        (status = 201, description = "The adjustment booked.", body = api::wire::adjustment::AdjustmentView),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn create_adjustment(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(body): Json<NewAdjustment>,
) -> Answer {
    match adjustments::create(&app, m.tenant(), &id, &body.validate()?).await? {
        Booked::Created(a) => Reply::created(AdjustmentView::from(&a)),
        Booked::Replayed(a) => Ok(Reply::ok(AdjustmentView::from(&a))?.header(REPLAYED, "true")),
    }
}

/// List an affiliate's adjustments (ext)
///
/// The affiliate's manual adjustments (bonuses and manual clawbacks), newest first, each with
/// the payout it was netted into (`payoutId`, null while it waits). The clawbacks of reversed
/// conversions are not listed here: they show in their payout's `adjustmentTotal`.
#[utoipa::path(
    get,
    path = "/api/v1/affiliates/{id}/adjustments",
    operation_id = "listAffiliateAdjustments",
    tag = "Affiliates",
    params(PageRequest),
    responses(
        (status = 200, description = "A page of the affiliate's adjustments.", body = [api::wire::adjustment::AdjustmentView])
    )
)]
async fn list_adjustments(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Params(page): Params<PageRequest>,
) -> Answer {
    let found = adjustments::list(&app, m.tenant(), &id, &page).await?;
    Reply::list_with(&found, AdjustmentView::from, &page)
}

/// Create a promotion code (ext)
///
/// Registers a discount code at the payment provider for the affiliate: an existing Stripe
/// promotion code or Paddle discount by its `providerId`, or, with `code` and `couponId`, a new
/// Stripe promotion code created through the integration's `apiKey` (none: 409 INVALID_STATE).
/// A payment that carries an active code, and no stronger hint, is attributed to the affiliate
/// (`attribution: PROMOTION_CODE`). A provider id or code another active code of the account and
/// mode holds: 409 ALREADY_EXISTS. A SUSPENDED or REJECTED affiliate: 409 INVALID_STATE.
#[utoipa::path(
    post,
    path = "/api/v1/affiliates/{id}/promotion-codes",
    operation_id = "createPromotionCode",
    tag = "Affiliates",
    request_body = api::wire::promotion_code::NewPromotionCode,
    responses(
        (status = 201, description = "The promotion code.", body = api::wire::promotion_code::PromotionCodeView),
        (status = 409, response = api::http::openapi::Conflict),
        (status = 503, response = api::http::openapi::ServiceUnavailable)
    )
)]
async fn create_promotion_code(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(body): Json<NewPromotionCode>,
) -> Answer {
    let p = promotion_codes::create(&app, m.tenant(), &id, &body.into()).await?;
    Reply::created(PromotionCodeView::from(&p))
}

/// List an affiliate's promotion codes (ext)
///
/// The promotion codes of the affiliate, active or not, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/affiliates/{id}/promotion-codes",
    operation_id = "listPromotionCodes",
    tag = "Affiliates",
    params(PageRequest),
    responses(
        (status = 200, description = "A page of the affiliate's promotion codes.", body = [api::wire::promotion_code::PromotionCodeView])
    )
)]
async fn list_promotion_codes(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Params(page): Params<PageRequest>,
) -> Answer {
    let codes = promotion_codes::list(&app, m.tenant(), &id, &page).await?;
    Reply::list_with(&codes, PromotionCodeView::from, &page)
}

/// Deactivate a promotion code (ext)
///
/// The code stops attributing payments, and its code and provider id may be registered again; a
/// code created at Stripe here is deactivated there first (Stripe's refusal: 409 naming its
/// code; no answer: 503, nothing changed). An inactive code is answered as it is.
#[utoipa::path(
    delete,
    path = "/api/v1/affiliates/{id}/promotion-codes/{codeId}",
    operation_id = "deactivatePromotionCode",
    tag = "Affiliates",
    params(("codeId" = String, Path, description = "The promotion code's id (`prc_…`).")),
    responses(
        (status = 200, description = "The promotion code, inactive.", body = api::wire::promotion_code::PromotionCodeView),
        (status = 409, response = api::http::openapi::Conflict),
        (status = 503, response = api::http::openapi::ServiceUnavailable)
    )
)]
async fn deactivate_promotion_code(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathIds(id, code_id): PathIds,
) -> Answer {
    let p = promotion_codes::deactivate(&app, m.tenant(), &id, &code_id).await?;
    Reply::ok(PromotionCodeView::from(&p))
}

/// Open a portal session (ext)
///
/// A one-hour portal token for one ACTIVE affiliate (409 otherwise) and the URL of its hosted
/// portal page, `{base}/portal#token=…` (the fragment keeps the token out of server logs). The
/// token opens the `/api/v1/portal/*` routes for that affiliate alone and is refused on every
/// merchant route; it stops working at once when the affiliate is suspended.
#[utoipa::path(
    post,
    path = "/api/v1/affiliates/{id}/portal-sessions",
    operation_id = "createPortalSession",
    tag = "Affiliates",
    request_body = Option<api::wire::portal::NewPortalSession>,
    responses(
        (status = 201, description = "The session.", body = PortalSession),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn portal_session(
    m: Merchant,
    State(app): State<Arc<App>>,
    BaseUrl(base): BaseUrl,
    PathId(id): PathId,
    Json(body): Json<api::wire::portal::NewPortalSession>,
) -> Answer {
    let now = timestamp::now();
    let return_url = body.return_url()?;
    let s = portal_sessions::open_session(&app, m.tenant(), &id, return_url.as_deref(), &base, now)
        .await?;
    Reply::created(PortalSession::new(s.url, s.token, s.expires_at))
}

/// Create a payout account onboarding link
///
/// With the account and mode's paying STRIPE integration (one with an `apiKey`): creates the
/// affiliate's Stripe Connect Express account once (`payoutAccount` on the affiliate, PENDING
/// until Stripe's `account.updated` says payouts are enabled), then answers a fresh onboarding
/// link for it; calling again makes a new link for the same account. Without a paying Stripe
/// integration: 409 INVALID_STATE. Stripe's refusal: 409 naming its code; no answer: 503.
#[utoipa::path(
    post,
    path = "/api/v1/affiliates/{id}/payout-account",
    operation_id = "createAffiliatePayoutAccountLink",
    tag = "Affiliates",
    responses(
        (status = 201, description = "The onboarding link.", body = AccountLink),
        (status = 409, response = api::http::openapi::Conflict),
        (status = 503, response = api::http::openapi::ServiceUnavailable)
    )
)]
async fn payout_account(
    m: Merchant,
    State(app): State<Arc<App>>,
    BaseUrl(base): BaseUrl,
    PathId(id): PathId,
) -> Answer {
    let affiliate = affiliates::get(&app.store, m.tenant(), &id).await?;
    let back = payout_accounts::Return::portal(&base, &m.tenant().account_id);
    let link =
        payout_accounts::onboard(&app, m.tenant(), affiliate, &back, timestamp::now()).await?;
    Reply::created(AccountLink::new(link.url, link.expires_at))
}

/// List affiliates
///
/// The affiliates of the key's account and mode, newest first. Filters combine; each list is
/// one DynamoDB Query. Unknown or repeated query parameters give 400 VALIDATION_FAILED.
#[utoipa::path(
    get,
    path = "/api/v1/affiliates",
    operation_id = "listAffiliates",
    tag = "Affiliates",
    params(
        PageRequest,
        ("campaign_id" = inline(Option<api::http::openapi::Line>), Query, description = "Only records of this campaign."),
        ("status" = Option<api::domain::affiliate::AffiliateStatus>, Query, description = "Only affiliates in this status (any letter case)."),
        ("email" = inline(Option<api::http::openapi::EmailLine>), Query, description = "Only affiliates with this e-mail (any letter case), across campaigns unless `campaign_id` is given."),
        ("tax_form" = Option<api::domain::tax_form::TaxFormFilter>, Query, description = "`missing`: only affiliates that have sent no tax form.")
    ),
    responses(
        (status = 200, description = "A page of affiliates.", body = [api::wire::affiliate::AffiliateView])
    )
)]
async fn list(
    m: Merchant,
    State(app): State<Arc<App>>,
    Params(Listing { page, filter }): Params<Listing<AffiliateFilter>>,
) -> Answer {
    let found = affiliates::list(&app.store, m.tenant(), &filter, &page).await?;
    Reply::list_with(&found, AffiliateView::from, &page)
}

/// Add an affiliate
///
/// The merchant adds an ACTIVE affiliate to one of its campaigns (no application). The e-mail
/// must be free in the campaign and the code in the account and mode (409 ALREADY_EXISTS); both
/// are claimed atomically with the record.
#[utoipa::path(
    post,
    path = "/api/v1/affiliates",
    operation_id = "createAffiliate",
    tag = "Affiliates",
    request_body = api::wire::affiliate::NewAffiliate,
    responses(
        (status = 201, description = "The affiliate created.", body = api::wire::affiliate::AffiliateView),
        (status = 404, response = api::http::openapi::NotFound),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn create(
    m: Merchant,
    State(app): State<Arc<App>>,
    Json(input): Json<NewAffiliate>,
) -> Answer {
    let affiliate = enrollments::add(&app, m.tenant(), input.into()).await?;
    Reply::created(AffiliateView::from(&affiliate))
}

/// Retrieve an affiliate
///
/// One affiliate of the key's account and mode. Another account's or the other mode's affiliate
/// is 404.
#[utoipa::path(
    get,
    path = "/api/v1/affiliates/{id}",
    operation_id = "getAffiliate",
    tag = "Affiliates",
    responses(
        (status = 200, description = "The affiliate.", body = api::wire::affiliate::AffiliateView)
    )
)]
async fn get(m: Merchant, State(app): State<Arc<App>>, PathId(id): PathId) -> Answer {
    let affiliate = affiliates::get(&app.store, m.tenant(), &id).await?;
    Reply::ok(AffiliateView::from(&affiliate))
}

/// Update an affiliate
///
/// Partial update (see `AffiliateUpdate`). Concurrent writers do not overwrite each other
/// (conditional write with retry; under persistent contention 503 and nothing changes). Totals
/// (`earned`, `paid`) are never touched by this call. A body that changes nothing answers the
/// affiliate as it is: `updatedAt` stays and no event is sent. A SUSPENDED or REJECTED
/// affiliate's active promotion codes are deactivated (at Stripe too, for those made there).
#[utoipa::path(
    put,
    path = "/api/v1/affiliates/{id}",
    operation_id = "updateAffiliate",
    tag = "Affiliates",
    request_body = Option<api::wire::affiliate::AffiliatePatch>,
    responses(
        (status = 200, description = "The updated affiliate.", body = api::wire::affiliate::AffiliateView),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn update(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(patch): Json<AffiliatePatch>,
) -> Answer {
    let updated = services::affiliates::update(&app, m.tenant(), &id, &patch.into()).await?;
    promotion_codes::follow_status(&app, m.tenant(), &updated).await?;
    Reply::ok(AffiliateView::from(&updated))
}
