//! Conversion routes: the postback, the list, the summary, one conversion and
//! its reversal.

use http::Method;
use shared::domain::conversion::{ConversionStatus, ConversionView, PostbackBody, ReverseBody};
use shared::domain::postback::Quota;
use shared::domain::summary::{self, GroupBy, Period};
use shared::domain::tenant::Mode;
use shared::http::query::Query;
use shared::http::{Reply, Router};
use shared::money::Currency;
use shared::store::conversions::{self, ConversionFilter, Recorded};
use shared::store::rollups;
use shared::validation::Issue;
use shared::{handler, timestamp};

/// Header set on the answer to a repeated postback.
pub const REPLAYED_HEADER: &str = "idempotent-replayed";

/// The routes this function serves.
pub fn router() -> Router {
    Router::new(vec![
        (Method::POST, "/api/v1/conversions/postback", postback),
        (Method::GET, "/api/v1/conversions", list),
        (Method::GET, "/api/v1/conversions/summary", summary),
        (Method::GET, "/api/v1/conversions/{id}", get),
        (Method::POST, "/api/v1/conversions/{id}/reverse", reverse),
    ])
}

handler!(postback, |call| {
    let now = timestamp::now();
    let input = call.json::<PostbackBody>()?.validate(now)?;
    let principal = call.principal();
    // Test-mode conversions never count against the live quota.
    let quota = (principal.tenant.mode == Mode::Live).then(|| Quota {
        account_id: principal.account.id.clone(),
        plan: principal.account.plan.clone(),
        cap: call.app.config.conversion_quota(&principal.account.plan),
    });
    match conversions::record(
        &call.app.store,
        &call.app.lookups,
        call.tenant(),
        &input,
        quota.as_ref(),
        now,
    )
    .await?
    {
        Recorded::Created(c) => Reply::created(ConversionView::from(&c)),
        Recorded::Replayed(c) => {
            Ok(Reply::ok(ConversionView::from(&c))?.header(REPLAYED_HEADER, "true"))
        }
    }
});

handler!(list, |call| {
    let mut q = call.query(&LIST_PARAMS);
    let page = q.page();
    let filter = list_filter(&mut q);
    q.finish()?;
    let found = conversions::list(&call.app.store, call.tenant(), &filter, &page).await?;
    Reply::list_with(&found, ConversionView::from, &page)
});

/// Query parameters of the conversion list.
const LIST_PARAMS: [&str; 12] = [
    "limit",
    "offset",
    "cursor",
    "payout_id",
    "affiliate_id",
    "campaign_id",
    "status",
    "currency",
    "from",
    "to",
    "min_amount",
    "max_amount",
];

/// The list's filters; problems are recorded on the query.
fn list_filter(q: &mut Query<'_>) -> ConversionFilter {
    let status = q
        .one_of("status", &ConversionStatus::NAMES)
        .and_then(ConversionStatus::parse);
    let currency = match q.str("currency").map(|c| Currency::parse("currency", c)) {
        Some(Ok(c)) => Some(c),
        Some(Err(issue)) => {
            q.issue(issue);
            None
        }
        None => None,
    };
    let (from, to) = q.range();
    let min_amount = q.amount("min_amount");
    let max_amount = q.amount("max_amount");
    if let (Some(lo), Some(hi)) = (min_amount, max_amount) {
        if lo > hi {
            q.issue(Issue::new(
                &["min_amount"],
                "invalid_range",
                "min_amount must not be greater than max_amount",
            ));
        }
    }
    ConversionFilter {
        payout_id: q.str("payout_id").map(str::to_string),
        affiliate_id: q.str("affiliate_id").map(str::to_string),
        campaign_id: q.str("campaign_id").map(str::to_string),
        status,
        currency,
        from: from.map(|b| b.start()),
        to: to.map(|b| b.end()),
        min_amount,
        max_amount,
    }
}

handler!(summary, |call| {
    let mut q = call.query(&["period", "group_by", "campaign_id"]);
    let period = match q.str("period") {
        None => Some(Period::Days30),
        Some(_) => q.one_of("period", &Period::NAMES).and_then(Period::parse),
    };
    let group_by = q
        .one_of("group_by", &GroupBy::NAMES)
        .and_then(GroupBy::parse);
    let campaign_id = q.str("campaign_id").map(str::to_string);
    q.finish()?;
    let period = period.unwrap_or(Period::Days30);
    let window = summary::window(period, timestamp::now());
    let rows = rollups::read(
        &call.app.store,
        call.tenant(),
        &window,
        campaign_id.as_deref(),
    )
    .await?;
    Reply::ok(summary::summarise(
        period,
        &window,
        group_by,
        campaign_id,
        &rows,
    ))
});

handler!(get, |call| {
    let c = conversions::get(&call.app.store, call.tenant(), call.param("id")?).await?;
    Reply::ok(ConversionView::from(&c))
});

handler!(reverse, |call| {
    let reason = call.json::<ReverseBody>()?.validate()?;
    let c = conversions::reverse(
        &call.app.store,
        call.tenant(),
        call.param("id")?,
        reason,
        timestamp::now(),
    )
    .await?;
    Reply::ok(ConversionView::from(&c))
});
