//! Report and switching routes: the referrals list, bulk import of
//! affiliates and referrals, the conversions export and the yearly payments
//! report.

use api::domain::error::Error;
use api::domain::import::{AffiliateRow, ReferralImport};
use api::domain::summary::{self, MAX_SERIES_DAYS};
use api::domain::timestamp;
use api::domain::validation::Issue;
use api::http::csv;
use api::http::import::Import;
use api::http::query::with_param;
use api::http::Answer;
use api::http::{ApiRouter, FromQuery, Listing, Merchant, Params, Query, Reply};
use api::routes;
use api::services::app::App;
use api::services::conversion_export::{self, Next, Position, ROWS_PER_ANSWER};
use api::services::{imports, payments_report};
use api::store::conversions::ConversionFilter;
use api::store::page::PageRequest;
use api::store::referrals::{self, ReferralFilter};
use api::wire::conversion::ConversionView;
use api::wire::import::ImportResult;
use api::wire::payments_report::PaymentsReportRow;
use api::wire::referral::ReferralView;
use axum::extract::State;
use chrono::Datelike;
use http::HeaderMap;
use http::{StatusCode, Uri};
use std::sync::{Arc, OnceLock};

/// The routes this function serves.
pub fn routes() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(list_referrals))
        .routes(routes!(export_conversions))
        .routes(routes!(import_affiliates))
        .routes(routes!(import_referrals))
        .routes(routes!(payments_report))
}

/// List referrals (ext)
///
/// The customers each affiliate brought, newest first: one row per customer (its first binding,
/// under its best identity: customer id, else e-mail, session or click), never an e-mail or its
/// hash. Customers bound before the list existed are not listed.
#[utoipa::path(
    get,
    path = "/api/v1/referrals",
    operation_id = "listReferrals",
    tag = "Reports",
    params(
        PageRequest,
        ("affiliate_id" = inline(Option<api::http::openapi::Line>), Query, description = "Only this affiliate's referrals."),
        ("campaign_id" = inline(Option<api::http::openapi::Line>), Query, description = "Only this campaign's referrals.")
    ),
    responses(
        (status = 200, description = "A page of referrals.", body = [api::wire::referral::ReferralView])
    )
)]
async fn list_referrals(
    m: Merchant,
    State(app): State<Arc<App>>,
    Params(Listing { page, filter }): Params<Listing<ReferralFilter>>,
) -> Answer {
    let found = referrals::list(&app.store, m.tenant(), &filter, &page).await?;
    let views = found.try_map(|r| {
        ReferralView::of(&r).ok_or_else(|| Error::internal("a listed referral without an id"))
    })?;
    Reply::list_with(&views, Clone::clone, &page)
}

/// The export's query: the list's filters (`from` required) and where the
/// export continues.
struct ExportQuery {
    filter: ConversionFilter,
    at: Position,
    rows: usize,
}

impl FromQuery for ExportQuery {
    fn read(q: &mut Query<'_>) -> Self {
        let filter = ConversionFilter::read(q);
        match (filter.from, filter.to.unwrap_or_else(timestamp::now)) {
            (None, _) => q.issue(Issue::new(&["from"], "required", "from is required")),
            (Some(from), to)
                if summary::days_spanned(from.date_naive(), to.date_naive()) > MAX_SERIES_DAYS =>
            {
                q.issue(Issue::new(
                    &["to"],
                    "too_big",
                    format!("an export's window spans at most {MAX_SERIES_DAYS} days"),
                ));
            }
            _ => {}
        }
        let at = match q.str("cursor").map(Position::decode) {
            None => Position::start(),
            Some(Ok(p)) => p,
            Some(Err(_)) => {
                q.issue(Issue::new(
                    &["cursor"],
                    "invalid_cursor",
                    "cursor is not valid",
                ));
                Position::start()
            }
        };
        let rows = match q.str("limit").map(str::parse::<usize>) {
            None => ROWS_PER_ANSWER,
            // Above the most, the most (as the lists' `limit`).
            Some(Ok(n)) if n >= 1 => n.min(ROWS_PER_ANSWER),
            Some(_) => {
                q.issue(Issue::new(
                    &["limit"],
                    "too_small",
                    "limit must be an integer >= 1",
                ));
                ROWS_PER_ANSWER
            }
        };
        ExportQuery { filter, at, rows }
    }
}

/// Export conversions as CSV (ext)
///
/// The conversions of a window (`from` required, at most 366 days; the list's filters apply) as
/// `text/csv`: a header row naming the conversion's API fields (`id` first, nested objects
/// flattened with dots, `metadata` and lists as JSON), amounts as exact decimals, no customer
/// e-mail nor its hash (`customerRef` is empty for a customer known by e-mail only); newest
/// first, as the list. One answer holds `limit` rows (at most 5,000); when more follow, a
/// `Link: <…&cursor=…>; rel="next"` header names the next answer. An export holds at most
/// 100,000 rows (past them the last answer carries `Export-Truncated: true`: narrow the window).
#[utoipa::path(
    get,
    path = "/api/v1/conversions/export",
    operation_id = "exportConversions",
    tag = "Reports",
    params(
        ("from" = inline(api::http::openapi::DateOrTime), Query, description = "The window's start (an ISO-8601 date or date-time), required."),
        ("to" = inline(Option<api::http::openapi::DateOrTime>), Query, description = "The window's end (a date covers its whole day); default now. At most 366 days after `from`."),
        ("affiliate_id" = inline(Option<api::http::openapi::Line>), Query, description = "As the list."),
        ("campaign_id" = inline(Option<api::http::openapi::Line>), Query, description = "As the list."),
        ("payout_id" = inline(Option<api::http::openapi::Line>), Query, description = "As the list."),
        ("status" = Option<api::domain::conversion::ConversionStatus>, Query, description = "As the list."),
        ("currency" = Option<api::domain::money::Currency>, Query, description = "As the list (ISO 4217, any letter case)."),
        ("min_amount" = inline(Option<api::http::openapi::FilterAmount>), Query, description = "As the list."),
        ("max_amount" = inline(Option<api::http::openapi::FilterAmount>), Query, description = "As the list."),
        ("risk_level" = Option<api::domain::risk::RiskLevel>, Query, description = "As the list."),
        ("limit" = Option<u32>, Query, description = "Rows per answer, at least 1 (default and most 5000; more counts as 5000).", minimum = 1),
        ("cursor" = Option<String>, Query, description = "Where the export continues: from the previous answer's `Link` header.")
    ),
    responses(
        (status = 200, description = "CSV rows of conversions.", content_type = "text/csv", body = String)
    )
)]
async fn export_conversions(
    m: Merchant,
    State(app): State<Arc<App>>,
    uri: Uri,
    Params(q): Params<ExportQuery>,
) -> Answer {
    let columns = conversion_columns();
    let mut out = csv::Writer::new(columns)?;
    let next = conversion_export::answer(&app, m.tenant(), &q.filter, q.at, q.rows, |c| {
        let view = ConversionView::from(c).without_email_hash();
        let value = serde_json::to_value(view).map_err(Error::internal)?;
        out.write(&csv::row(&value, columns))
    })
    .await?;
    let reply = Reply::raw(StatusCode::OK, csv::CSV, out.finish()?).header(
        "content-disposition",
        "attachment; filename=\"conversions.csv\"",
    );
    Ok(match next {
        Next::More(at) => {
            let query = with_param(uri.query(), "cursor", &at.encode());
            reply.header("link", format!("<{}?{query}>; rel=\"next\"", uri.path()))
        }
        Next::Done => reply,
        Next::Truncated => reply.header("export-truncated", "true"),
    })
}

/// The export's columns, read once from the conversion's schema.
fn conversion_columns() -> &'static [String] {
    static COLUMNS: OnceLock<Vec<String>> = OnceLock::new();
    COLUMNS.get_or_init(csv::columns::<ConversionView<'static>>)
}

/// Import affiliates (ext)
///
/// Brings affiliates from another platform: 1-500 rows, as a JSON array or as `text/csv` with a
/// header row naming the fields. Each row is the create's body (the same rules) with its
/// `externalId` and an optional `status` (ACTIVE, or PENDING with an application); it is
/// answered on its own: `created`, `existing` (its `externalId` was imported before: nothing
/// changes, so a re-run is safe) or `failed` with the reason (a bad field, an unknown campaign,
/// an e-mail taken in the campaign, a code taken in the account). `row` is the 0-based index of
/// the array element, or of the CSV line after the header. A body that is no such array or CSV,
/// has no row or more than 500, or a CSV whose header repeats a name: 400, and nothing is
/// written.
#[utoipa::path(
    post,
    path = "/api/v1/affiliates/import",
    operation_id = "importAffiliates",
    tag = "Reports",
    request_body(content(
        (api::wire::import::AffiliateRows = "application/json"),
        (String = "text/csv")
    )),
    responses(
        (status = 200, description = "Each row's outcome.", body = ImportResult)
    )
)]
async fn import_affiliates(
    m: Merchant,
    State(app): State<Arc<App>>,
    Import(rows): Import<AffiliateRow>,
) -> Answer {
    let outcome = imports::affiliates(&app, m.tenant(), rows).await?;
    Reply::ok(ImportResult::from(&outcome))
}

/// Import referrals (ext)
///
/// Brings which customer belongs to which affiliate since when: 1-500 rows, as a JSON array or
/// as `text/csv`. A row names the affiliate (`affiliateCode` or `affiliateId`, in
/// `campaignId`), the customer (`customerId`, `customerEmail` or `customerEmailHash`, as a
/// postback does) and optionally `firstPaymentAt`: the customer's later payments earn as
/// recurring, within the campaign's recurring window counted from then. First touch holds: a
/// customer bound to an affiliate already fails ALREADY_EXISTS. Answered per row as the
/// affiliates import, idempotent by `externalId`.
#[utoipa::path(
    post,
    path = "/api/v1/referrals/import",
    operation_id = "importReferrals",
    tag = "Reports",
    request_body(content(
        (api::wire::import::ReferralRows = "application/json"),
        (String = "text/csv")
    )),
    responses(
        (status = 200, description = "Each row's outcome.", body = ImportResult)
    )
)]
async fn import_referrals(
    m: Merchant,
    State(app): State<Arc<App>>,
    Import(rows): Import<ReferralImport>,
) -> Answer {
    let outcome = imports::referrals(&app, m.tenant(), rows).await?;
    Reply::ok(ImportResult::from(&outcome))
}

/// The report's query: its calendar year.
struct YearQuery(i32);

impl FromQuery for YearQuery {
    fn read(q: &mut Query<'_>) -> Self {
        let now = timestamp::now().year();
        match q.str("year").map(str::parse::<i32>) {
            None => YearQuery(now),
            Some(Ok(y)) if (2000..=9999).contains(&y) => YearQuery(y),
            Some(_) => {
                q.issue(Issue::new(
                    &["year"],
                    "invalid_number",
                    "year must be an integer 2000-9999",
                ));
                YearQuery(now)
            }
        }
    }
}

/// Payments report (ext)
///
/// What each affiliate was paid in a calendar year (UTC, by `paidAt`), per currency, from the
/// year's PAID payouts: its total and count, the payout methods, and the tax form it sent. As
/// JSON (the usual envelope, `data` the rows) or, with `Accept: text/csv`, as CSV (a header row
/// of the same fields; methods joined by `;`). Sorted by affiliate id, then currency.
#[utoipa::path(
    get,
    path = "/api/v1/reports/payments",
    operation_id = "getPaymentsReport",
    tag = "Reports",
    params(
        ("year" = Option<i32>, Query, description = "The calendar year (2000-9999); default this year.", minimum = 2000, maximum = 9999)
    ),
    responses(
        (status = 200, description = "The rows.", content(
            (api::wire::payments_report::Rows = "application/json"),
            (String = "text/csv")
        ))
    )
)]
async fn payments_report(
    m: Merchant,
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Params(YearQuery(year)): Params<YearQuery>,
) -> Answer {
    let rows = payments_report::year(&app, m.tenant(), year).await?;
    let rows: Vec<_> = rows.iter().map(PaymentsReportRow::from).collect();
    let wants_csv = headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains("text/csv"));
    if !wants_csv {
        return Reply::ok(rows);
    }
    let columns = csv::columns::<PaymentsReportRow>();
    let mut out = csv::Writer::new(&columns)?;
    for r in &rows {
        let value = serde_json::to_value(r).map_err(Error::internal)?;
        out.write(&csv::row(&value, &columns))?;
    }
    Ok(Reply::raw(StatusCode::OK, csv::CSV, out.finish()?).header(
        "content-disposition",
        format!("attachment; filename=\"payments-{year}.csv\""),
    ))
}
