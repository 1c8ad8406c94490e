//! Conversion routes: the postback, the list, the summary, one conversion and
//! its reversal.

use api::domain::summary::{self, GroupBy, Period, Window, MAX_SERIES_DAYS};
use api::domain::timestamp;
use api::domain::validation::Issue;
use api::http::Answer;
use api::http::{ApiRouter, FromQuery, Json, Listing, Merchant, Params, PathId, Query, Reply};
use api::routes;
use api::services::app::App;
use api::services::postback::{self, Recorded};
use api::services::{holds, reverse};
use api::store::conversions::{self, ConversionFilter};
use api::store::page::PageRequest;
use api::store::rollups;
use api::wire::conversion::ConversionView;
use api::wire::conversion::PostbackBody;
use api::wire::conversion::ReleaseBody;
use api::wire::conversion::ReverseBody;
use api::wire::summary::SummaryView;
use axum::extract::State;
use std::sync::Arc;

/// Header set on the answer to a repeated postback.
pub const REPLAYED_HEADER: &str = "idempotent-replayed";

/// The routes this function serves.
pub fn routes() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(postback))
        .routes(routes!(list))
        .routes(routes!(summary))
        .routes(routes!(get))
        .routes(routes!(reverse))
        .routes(routes!(release))
}

/// Report a conversion (postback)
///
/// Records a payment, attributes it and computes its commission, exactly once per `externalId`.
///
/// **Attribution** (first usable signal wins): `clickId`, then `sessionId`, then
/// `affiliateCode`, then the customer's referral (customers bound earlier through
/// `track/identify` or an earlier attributed payment) by `customerId`, then by e-mail hash; a
/// postback naming no customer is matched by the referral of its session or click. A signal
/// counts only when its affiliate and campaign exist in this account and mode and, when
/// `campaignId` is given, belong to that campaign. The affiliate's status does not affect
/// attribution, only earning.
///
/// **Commission**: only ACTIVE affiliates earn. The customer's first attributed payment earns;
/// later payments of the same customer (any of the identities the postback names) earn only
/// when the campaign is `commissionRecurring`, and with `recurringMonthsLimit = N` only while
/// `occurredAt < firstPaymentAt + N` calendar months (31 January + 1 month = 28/29 February).
/// `firstPaymentAt` is the `occurredAt` of the first attributed payment recorded for the
/// customer, never the click. PERCENTAGE: `amount × value / 100` rounded half-even to the
/// currency's minor unit (19.99 USD at 10% = 2.00). FIXED: the campaign's amount when the
/// payment is in the campaign's currency, else 0 with `CURRENCY_MISMATCH`. A payment that earns
/// nothing is recorded with commission 0 and `commissionReason`.
///
/// **Referrals**: the first attributed payment of a customer creates the referral of each
/// identity it names (`customerId`, e-mail hash; else its session or click) with `source:
/// PAYMENT`, or sets `firstPaymentAt` on a referral bound earlier by identify. An identity
/// already bound keeps its affiliate (first touch); a new identity of a customer already bound
/// under another identity joins that binding. An explicit click, session or code still
/// attributes the payment itself to its own affiliate.
///
/// **Idempotency and limits**: the `externalId` guard, the conversion, the referral, the quota
/// counter, the affiliate's `earned` total and the summary rollups are written in one DynamoDB
/// transaction: all or nothing. Concurrent duplicates produce exactly one conversion; every
/// duplicate answers 200 with it. The monthly quota counts live-mode conversions per calendar
/// month (UTC) of recording; test mode is never capped. Status: PENDING when attributed (with
/// `payableAt = occurredAt + holdDays`), UNATTRIBUTED otherwise.
#[utoipa::path(
    post,
    path = "/api/v1/conversions/postback",
    operation_id = "postConversion",
    tag = "Conversions",
    request_body = api::wire::conversion::PostbackBody,
    responses(
        (status = 200, description = "A repeated postback of this account and mode: the original conversion (as it is now), nothing written.", body = api::wire::conversion::ConversionView),
        (status = 201, description = "The conversion recorded.", body = api::wire::conversion::ConversionView),
        (status = 404, response = api::http::openapi::NotFound),
        (status = 409, response = api::http::openapi::Conflict),
        (status = 429, response = inline(api::http::openapi::QuotaReached))
    )
)]
async fn postback(
    m: Merchant,
    State(app): State<Arc<App>>,
    Json(body): Json<PostbackBody>,
) -> Answer {
    let now = timestamp::now();
    let input = body.validate(now)?;
    let principal = m.principal();
    match postback::record_for(&app, m.tenant(), &principal.account, &input, now).await? {
        Recorded::Created(c) => Reply::created(ConversionView::from(&c)),
        Recorded::Replayed(c) => {
            Ok(Reply::ok(ConversionView::from(&c))?.header(REPLAYED_HEADER, "true"))
        }
    }
}

/// List conversions
///
/// The conversions of the key's account and mode, newest first by `occurredAt` (then id). Every
/// filter is served by one DynamoDB Query on the most selective index partition (affiliate,
/// else campaign, else status, else all); `from`/`to` are key ranges, the other filters filter
/// that Query. `cursor` costs the same at any depth; `offset` reads the skipped records.
/// Unknown or repeated query parameters give 400 VALIDATION_FAILED; an unknown affiliate or
/// campaign id gives an empty list.
#[utoipa::path(
    get,
    path = "/api/v1/conversions",
    operation_id = "listConversions",
    tag = "Conversions",
    params(
        PageRequest,
        ("payout_id" = inline(Option<api::http::openapi::Line>), Query, description = "(ext) Only the conversions a payout holds (`po_…`): while it is open, and once it is PAID. Another account's or mode's payout gives an empty list."),
        ("affiliate_id" = inline(Option<api::http::openapi::Line>), Query, description = "Only conversions of this affiliate."),
        ("campaign_id" = inline(Option<api::http::openapi::Line>), Query, description = "Only conversions of this campaign."),
        ("status" = Option<api::domain::conversion::ConversionStatus>, Query, description = "Only conversions in this status (any letter case)."),
        ("risk_level" = Option<api::domain::risk::RiskLevel>, Query, description = "Only conversions of this risk level (any letter case; NONE: unflagged)."),
        ("currency" = Option<api::domain::money::Currency>, Query, description = "(ext) Only conversions in this currency (ISO 4217, any letter case)."),
        ("from" = inline(Option<api::http::openapi::DateOrTime>), Query, description = "Lower bound on `occurredAt`: a date (`2026-01-31`, from its start, UTC) or a date-time. After `to`: 400."),
        ("to" = inline(Option<api::http::openapi::DateOrTime>), Query, description = "Upper bound on `occurredAt`: a date (the whole UTC day) or a date-time, inclusive."),
        ("min_amount" = inline(Option<api::http::openapi::FilterAmount>), Query, description = "Amount at least this (major units, any currency; combine with `currency` to compare like with like). A number >= 0 in plain or exponent notation (values below 10^-28 count as 0; at most 79228162514264337593543950335, the largest 96-bit decimal). `min_amount` above `max_amount` is 400."),
        ("max_amount" = inline(Option<api::http::openapi::FilterAmount>), Query, description = "Amount at most this. Below `min_amount`: 400. A number >= 0 in plain or exponent notation (values below 10^-28 count as 0; at most 79228162514264337593543950335, the largest 96-bit decimal). `min_amount` above `max_amount` is 400.")
    ),
    responses(
        (status = 200, description = "A page of conversions.", body = [api::wire::conversion::ConversionView])
    )
)]
async fn list(
    m: Merchant,
    State(app): State<Arc<App>>,
    Params(Listing { page, filter }): Params<Listing<ConversionFilter>>,
) -> Answer {
    let found = conversions::list(&app.store, m.tenant(), &filter, &page).await?;
    Reply::list_with(&found, ConversionView::from, &page)
}

/// The summary's query.
struct SummaryQuery {
    period: Option<Period>,
    window: Window,
    group_by: Option<GroupBy>,
    campaign_id: Option<String>,
}

impl FromQuery for SummaryQuery {
    fn read(q: &mut Query<'_>) -> Self {
        let period = q.variant::<Period>("period");
        let group_by = q.variant::<GroupBy>("group_by");
        let (window, period) = match q.days() {
            Some(_) if period.is_some() => {
                q.issue(Issue::new(
                    &["period"],
                    "invalid_combination",
                    "give either period or from/to, not both",
                ));
                (summary::window(Period::Days30, timestamp::now()), None)
            }
            Some((first, last)) => (summary::window_between(first, last), None),
            None => {
                let period = period.unwrap_or(Period::Days30);
                (summary::window(period, timestamp::now()), Some(period))
            }
        };
        if period == Some(Period::All) && group_by.is_some_and(GroupBy::is_series) {
            q.issue(Issue::new(
                &["group_by"],
                "invalid_combination",
                format!(
                    "a series needs a window of at most {MAX_SERIES_DAYS} days: give another period, or from/to"
                ),
            ));
        }
        SummaryQuery {
            period,
            window,
            group_by,
            campaign_id: q.str("campaign_id").map(str::to_string),
        }
    }
}

/// Summarise conversions
///
/// Revenue, commission and count per currency over a period, optionally grouped by status or by
/// campaign, or as a series by day, ISO week or month, read from rollups kept in the same
/// transaction as every conversion write: the cost depends on the window and the number of
/// (currency, status, campaign) combinations, never on the number of conversions.
///
/// Periods are whole UTC days ending today (by `occurredAt`): `7d` is today and the 6 days
/// before, `30d` and `90d` likewise, `12m` every day since the same date 12 months ago, `24h`
/// today and yesterday (so at least the last 24 hours, at most 48); `all` reads monthly
/// rollups. Instead of a period, `from` and `to` name the first and last UTC day (at most 366
/// days; `to` defaults to today). Totals exclude REVERSED conversions; `group_by=status` shows
/// them as their own group, `group_by=campaign` and the series leave them out. Sums are exact
/// decimals.
#[utoipa::path(
    get,
    path = "/api/v1/conversions/summary",
    operation_id = "summarizeConversions",
    tag = "Conversions",
    params(
        ("period" = inline(Option<api::http::openapi::PeriodParam>), Query, description = "Default `30d` (without `from`)."),
        ("from" = inline(Option<api::http::openapi::DateOrTime>), Query, description = "The window's first UTC day (an ISO-8601 date, or a date-time whose UTC day counts), instead of `period`. With `to`, at most 366 days."),
        ("to" = inline(Option<api::http::openapi::DateOrTime>), Query, description = "The window's last UTC day (an ISO-8601 date or date-time); default today. Needs `from`."),
        ("group_by" = Option<api::domain::summary::GroupBy>, Query, description = "Extra grouping (any letter case): `status` or `campaign` fill `groups`; `day`, `week` (ISO, from Monday) or `month` fill `series` (not with `period=all`)."),
        ("campaign_id" = inline(Option<api::http::openapi::Line>), Query, description = "Only this campaign's conversions (an unknown id gives zero totals).")
    ),
    responses(
        (status = 200, description = "The summary.", body = SummaryView)
    )
)]
async fn summary(
    m: Merchant,
    State(app): State<Arc<App>>,
    Params(q): Params<SummaryQuery>,
) -> Answer {
    let rows = rollups::read(&app.store, m.tenant(), &q.window, q.campaign_id.as_deref()).await?;
    let s = summary::summarise(q.period, &q.window, q.group_by, q.campaign_id, &rows);
    Reply::ok(SummaryView::from(s))
}

/// Retrieve a conversion (ext)
///
/// One conversion of the key's account and mode. Another account's or mode's is 404.
#[utoipa::path(
    get,
    path = "/api/v1/conversions/{id}",
    operation_id = "getConversion",
    tag = "Conversions",
    responses(
        (status = 200, description = "The conversion.", body = api::wire::conversion::ConversionView)
    )
)]
async fn get(m: Merchant, State(app): State<Arc<App>>, PathId(id): PathId) -> Answer {
    let c = conversions::get(&app.store, m.tenant(), &id).await?;
    Reply::ok(ConversionView::from(&c))
}

/// Reverse a conversion, in full or in part (ext)
///
/// Refund a conversion, all of what is left of it or `amount` of it (a partial refund). The
/// commission is cut in proportion: `commissionReversed` becomes `commission * reversedAmount /
/// amount`, rounded half-even to the minor unit, and the whole commission once the whole amount
/// is reversed, so partial cuts always add up to it. Fully reversed, the conversion becomes
/// REVERSED; partly, it keeps its status. In one transaction: the conversion, the summary
/// rollups, the affiliate's `earned` total and a `conversion.reversed` event carrying the
/// amounts.
///
/// In no payout (PENDING, APPROVED or UNATTRIBUTED): the cut leaves `earned` at once. PAID in a
/// PAID payout: `earned` drops, `paid` stays, and a negative adjustment (clawback) of the cut
/// is netted against the affiliate's next payout. In a payout not yet paid: 409
/// INVALID_STATE naming it (`details.payoutId`). REVERSED: 409 INVALID_STATE with
/// `details.currentState`. An `amount` above what is left, not above 0, or with more decimals
/// than the currency has: 400 VALIDATION_FAILED, nothing changes. The customer's
/// `firstPaymentAt` is not changed by a reversal.
#[utoipa::path(
    post,
    path = "/api/v1/conversions/{id}/reverse",
    operation_id = "reverseConversion",
    tag = "Conversions",
    request_body = Option<api::wire::conversion::ReverseBody>,
    responses(
        (status = 200, description = "The reversed conversion.", body = api::wire::conversion::ConversionView),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn reverse(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(body): Json<ReverseBody>,
) -> Answer {
    let request = body.validate()?;
    let c = reverse::reverse(&app, m.tenant(), &id, &request, timestamp::now()).await?;
    Reply::ok(ConversionView::from(&c))
}

/// Release a held conversion (ext)
///
/// Ends the hold of an ON_HOLD conversion (one with a HIGH risk flag on a campaign that holds
/// flagged conversions; see `risk`): it becomes PENDING, or APPROVED when its `payableAt` has
/// passed, and from then on moves to a payout like any other. Its flags stay as history. In
/// one transaction: the status, the summary rollups, a `conversion.released` event (and
/// `conversion.approved` when it is payable at once). Any other status: 409 INVALID_STATE with
/// `details.currentState`. To refuse a held conversion instead, reverse it.
#[utoipa::path(
    post,
    path = "/api/v1/conversions/{id}/release",
    operation_id = "releaseConversion",
    tag = "Conversions",
    request_body = Option<api::wire::conversion::ReleaseBody>,
    responses(
        (status = 200, description = "The released conversion.", body = api::wire::conversion::ConversionView),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
async fn release(
    m: Merchant,
    State(app): State<Arc<App>>,
    PathId(id): PathId,
    Json(_): Json<ReleaseBody>,
) -> Answer {
    let c = holds::release(&app, m.tenant(), &id, timestamp::now()).await?;
    Reply::ok(ConversionView::from(&c))
}
