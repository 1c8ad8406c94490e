//! The payout job's cost per due conversion, on a table of its own that
//! already holds many conversions that are not due: it must grow with the
//! due work, not with the table.

use api::domain::conversion::{AttributionMethod, Conversion, ConversionStatus, ConversionType};
use api::domain::ids::{new_id, IdKind};
use api::domain::money::Currency;
use api::domain::tenant::{Mode, Tenant};
use api::services::app::App;
use api::services::payout_job::{self as job, Budget};
use api::store::conversions;
use chrono::{Duration, Utc};
use rust_decimal::Decimal;
use serde_json::json;

use http::Method;

use crate::{put_batch, Bench};

/// Affiliates the due conversions are spread over (one payout each per run).
const AFFILIATES: usize = 10;

pub(crate) struct Programme {
    pub(crate) tenant: Tenant,
    pub(crate) campaign: String,
    pub(crate) affiliates: Vec<String>,
}

/// A campaign and its affiliates in the bench table, through the domain and store.
pub(crate) async fn programme(app: &App) -> Programme {
    let account = api::store::accounts::create_account(&app.store, "Job bench", "enterprise")
        .await
        .unwrap();
    let tenant = Tenant::new(account.id, Mode::Test);
    let now = Utc::now();
    let input: api::wire::campaign::NewCampaign = serde_json::from_value(json!({"name": "Job", "commissionType": "PERCENTAGE", "commissionValue": 10, "holdDays": 0}))
        .unwrap();
    let c = api::domain::campaign::Campaign::create(input.into(), now).unwrap();
    api::store::campaigns::insert(&app.store, &tenant, &c)
        .await
        .unwrap();
    let affiliates = enroll(app, &tenant, &c.id, AFFILIATES).await;
    Programme {
        tenant,
        campaign: c.id,
        affiliates,
    }
}

/// `n` ACTIVE affiliates of a campaign, through the domain and store.
pub(crate) async fn enroll(app: &App, tenant: &Tenant, campaign: &str, n: usize) -> Vec<String> {
    let mut affiliates = Vec::new();
    for _ in 0..n {
        let code = ulid::Ulid::new().to_string()[14..].to_string();
        let input: api::wire::affiliate::NewAffiliate =
            serde_json::from_value(json!({"campaignId": campaign,
            "email": format!("job-{code}@example.com"), "name": "Job", "code": code}))
            .unwrap();
        let mut e = api::domain::affiliate::Affiliate::enroll(
            input.into(),
            api::domain::affiliate::AffiliateStatus::Active,
            Utc::now(),
            api::domain::validation::Issues::new(),
        )
        .unwrap();
        api::services::enrollments::enroll(app, tenant, &mut e)
            .await
            .unwrap();
        affiliates.push(e.affiliate.id);
    }
    affiliates
}

/// One due conversion per affiliate of `p`.
pub(crate) async fn seed_spread(app: &App, p: &Programme) {
    seed(app, p, p.affiliates.len(), true).await;
}

/// Writes `n` PENDING conversions, due now when `due`, else in a year.
async fn seed(app: &App, p: &Programme, n: usize, due: bool) {
    let now = Utc::now();
    let usd = Currency::parse("c", "USD").unwrap();
    let occurred = now - Duration::days(2);
    let payable = if due {
        occurred
    } else {
        now + Duration::days(365)
    };
    let all: Vec<Conversion> = (0..n)
        .map(|i| Conversion {
            id: new_id(IdKind::Conversion),
            external_id: format!("job-bench-{}", ulid::Ulid::new()),
            campaign_id: Some(p.campaign.clone()),
            affiliate_id: Some(p.affiliates[i % p.affiliates.len()].clone()),
            amount: Decimal::from(100),
            currency: usd,
            conversion_type: ConversionType::Sale,
            commission: Decimal::new(1000, 2),
            commission_reason: None,
            status: ConversionStatus::Pending,
            attribution: AttributionMethod::Code,
            customer_ref: None,
            is_recurring: false,
            click_id: None,
            session_id: None,
            customer_id: None,
            hold_days: 0,
            payable_at: payable,
            payout_id: None,
            metadata: Default::default(),
            occurred_at: occurred,
            created_at: now,
            updated_at: now,
            reversed_at: None,
            reversal_reason: None,
            reversed_amount: Decimal::ZERO,
            commission_reversed: Decimal::ZERO,
            commission_clawed_back: Decimal::ZERO,
            risk: Default::default(),
            product_id: None,
            plan_id: None,
            commission_source: None,
            payment_number: None,
        })
        .collect();
    let mut set = tokio::task::JoinSet::new();
    for chunk in all.chunks(25) {
        let items: Vec<_> = chunk
            .iter()
            .map(|c| conversions::item(&p.tenant, c).unwrap())
            .collect();
        let store = app.store.clone();
        set.spawn(async move { put_batch(&store, items).await });
        while set.len() >= 8 {
            set.join_next().await.unwrap().unwrap();
        }
    }
    while let Some(r) = set.join_next().await {
        r.unwrap();
    }
}

/// One job run over `due` due conversions, recorded as a row.
async fn measured_run(b: &mut Bench, label: &str) {
    let before = b.begin().await;
    let report = job::run(&b.app, Utc::now(), Budget::default())
        .await
        .unwrap();
    assert!(!report.cut_short, "{label}: {report:?}");
    let name = format!(
        "{label} ({} approved, {} payouts)",
        report.approved, report.payouts_created
    );
    b.end(&name, before).await;
}

/// Whether the 10,000-conversion run was asked for (`REFBENCH_LARGE=1`).
fn large() -> bool {
    std::env::var("REFBENCH_LARGE").is_ok_and(|v| v == "1")
}

/// The job at 1,000 (and, with `REFBENCH_LARGE=1`, 10,000) due
/// conversions, in a table holding 20,000 that are not due; then, metered
/// on a table of their own (DynamoDB Local slows down to a crawl writing a
/// large table with its stream read), the write units billed by the job
/// over 100 due conversions and by the payout endpoints on its payouts.
pub async fn rows(b: &mut Bench) {
    let (app, p) = job_table("bench-job").await;
    seed(&app, &p, 20_000, false).await;
    seed(&app, &p, 1_000, true).await;
    let (mut jb, _) = Bench::with_key(app.clone(), &p.tenant.account_id).await;
    measured_run(
        &mut jb,
        "payout job: 1,000 due conversions in a table of 21,000",
    )
    .await;
    // DynamoDB Local slows down as its table grows, so the 10,000 run takes
    // most of the job's 12-minute budget on a busy machine: asked for alone.
    if large() {
        seed(&app, &p, 10_000, true).await;
        measured_run(
            &mut jb,
            "payout job: 10,000 due conversions in a table of 31,000",
        )
        .await;
    }
    measured_run(&mut jb, "payout job: nothing due (a second run)").await;
    b.rows.append(&mut jb.rows);
    crate::drop_table(&app.store).await;

    let (app, p) = job_table("bench-pay").await;
    seed(&app, &p, METERED_DUE, true).await;
    let (app, meter) = crate::metered(app).await;
    let (mut jb, key) = Bench::with_key(app.clone(), &p.tenant.account_id).await;
    jb.meter = Some(meter);
    measured_run(
        &mut jb,
        &format!("payout job: {METERED_DUE} due conversions in a table of {METERED_DUE}"),
    )
    .await;
    endpoint_rows(&mut jb, app.clone(), &p, &key).await;
    b.rows.append(&mut jb.rows);
    crate::drop_table(&app.store).await;
}

/// Due conversions of the metered job run: 10 payouts of 10.
const METERED_DUE: usize = 100;

/// A table of its own with a campaign and its affiliates.
pub(crate) async fn job_table(name: &str) -> (std::sync::Arc<App>, Programme) {
    let mut config = refctl::setup::test_stack_config(name);
    crate::bench_timeouts(&mut config);
    let app = App::new(config).await;
    refctl::setup::tables_create(&app).await.expect("tables");
    let p = programme(&app).await;
    (app, p)
}

/// An invoice for a payout, attached as the storage event would.
pub(crate) async fn attach(app: &App, t: &Tenant, payout_id: &str) {
    let key = api::services::paying::invoice::key(t, payout_id, "inv.pdf");
    app.files()
        .put(&key, b"%PDF-1.4\n%%EOF\n".to_vec(), "application/pdf")
        .await
        .unwrap();
    api::services::invoices::on_object_created(app, &key, Utc::now())
        .await
        .unwrap();
}

/// The payouts of a tenant, newest first (up to 100).
pub(crate) async fn payout_ids(b: &mut Bench, key: &str, query: &str) -> Vec<String> {
    let (_, v) = b
        .send(
            Method::GET,
            &format!("/api/v1/payouts?limit=100{query}"),
            Some(key),
            None,
        )
        .await;
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect()
}

/// The payout endpoints on the payouts the job made, and batch-process of 100.
async fn endpoint_rows(b: &mut Bench, app: std::sync::Arc<App>, p: &Programme, key: &str) {
    let k = Some(key);
    // The metered job run made one payout per affiliate.
    let held = METERED_DUE / AFFILIATES;
    b.measure(
        "GET /payouts?limit=20 (page 1)",
        Method::GET,
        "/api/v1/payouts?limit=20",
        k,
        None,
    )
    .await;
    let ids = payout_ids(b, key, "&status=pending").await;
    let (one, two, three) = (&ids[0], &ids[1], &ids[2]);
    b.measure(
        "GET /payouts/{id}",
        Method::GET,
        &format!("/api/v1/payouts/{one}"),
        k,
        None,
    )
    .await;
    attach(&app, &p.tenant, one).await;
    let path = format!("/api/v1/payouts/{one}/approve");
    b.measure_status(
        "POST /payouts/{id}/approve (invoice checked in storage)",
        200,
        Method::POST,
        &path,
        k,
        None,
    )
    .await;
    let body = json!({"paymentDate": "2026-11-23", "paymentMethod": "wire"});
    let path = format!("/api/v1/payouts/{one}/mark-paid");
    b.measure_status(
        &format!("POST /payouts/{{id}}/mark-paid ({held} conversions settled)"),
        200,
        Method::POST,
        &path,
        k,
        Some(&body),
    )
    .await;
    let path = format!("/api/v1/payouts/{two}/mark-paid");
    b.measure_status(
        &format!("PUT /payouts/{{id}}/mark-paid (from PENDING, {held} conversions)"),
        200,
        Method::PUT,
        &path,
        k,
        Some(&json!({})),
    )
    .await;
    let path = format!("/api/v1/payouts/{three}/reject");
    b.measure_status(
        &format!("POST /payouts/{{id}}/reject ({held} conversions back to the pool)"),
        200,
        Method::POST,
        &path,
        k,
        Some(&json!({"reason": "bench"})),
    )
    .await;
    let cancel = json!({"payoutIds": [ids[3]], "reason": "bench"});
    b.measure_status(
        &format!("POST /payouts/bulk-cancel (1 payout of {held} conversions)"),
        200,
        Method::POST,
        "/api/v1/payouts/bulk-cancel",
        k,
        Some(&cancel),
    )
    .await;
    batch_process_row(b, &app, p, key).await;
    chunked_rows(b, &app, p, key).await;
}

/// Conversions of each payout moved in chunks: more than a transition moves
/// in its own transaction, paid (chunks of 12) or released (chunks of 49).
const CHUNKED: usize = 60;

/// mark-paid and reject of payouts of [`CHUNKED`] conversions, whose work
/// the request completes chunk after chunk.
async fn chunked_rows(b: &mut Bench, app: &App, p: &Programme, key: &str) {
    let two = Programme {
        tenant: p.tenant.clone(),
        campaign: p.campaign.clone(),
        affiliates: enroll(app, &p.tenant, &p.campaign, 2).await,
    };
    seed(app, &two, 2 * CHUNKED, true).await;
    job::run(app, Utc::now(), Budget::default()).await.unwrap();
    let mut ids = Vec::new();
    for aff in &two.affiliates {
        ids.extend(payout_ids(b, key, &format!("&affiliate_id={aff}")).await);
    }
    assert_eq!(ids.len(), 2);
    let (paid, rejected) = (&ids[0], &ids[1]);
    let out = b
        .measure_status(
            &format!("PUT /payouts/{{id}}/mark-paid ({CHUNKED} conversions, in chunks)"),
            200,
            Method::PUT,
            &format!("/api/v1/payouts/{paid}/mark-paid"),
            Some(key),
            Some(&json!({})),
        )
        .await;
    assert_eq!(out["data"]["status"], "PAID", "{out}");
    let out = b
        .measure_status(
            &format!("POST /payouts/{{id}}/reject ({CHUNKED} conversions, in chunks)"),
            200,
            Method::POST,
            &format!("/api/v1/payouts/{rejected}/reject"),
            Some(key),
            Some(&json!({"reason": "bench"})),
        )
        .await;
    assert_eq!(out["data"]["status"], "REJECTED", "{out}");
}

/// batch-process of 100 invoiced payouts of one conversion each (sandbox).
async fn batch_process_row(b: &mut Bench, app: &App, p: &Programme, key: &str) {
    let hundred = Programme {
        tenant: p.tenant.clone(),
        campaign: p.campaign.clone(),
        affiliates: enroll(app, &p.tenant, &p.campaign, 100).await,
    };
    seed_spread(app, &hundred).await;
    job::run(app, Utc::now(), Budget::default()).await.unwrap();
    let mut ids = Vec::new();
    for aff in &hundred.affiliates {
        let found = payout_ids(b, key, &format!("&affiliate_id={aff}")).await;
        ids.extend(found);
    }
    assert_eq!(ids.len(), 100);
    for id in &ids {
        attach(app, &p.tenant, id).await;
    }
    let body = json!({"payoutIds": ids});
    let out = b
        .measure_status(
            "POST /payouts/batch-process (100 invoiced payouts, sandbox)",
            200,
            Method::POST,
            "/api/v1/payouts/batch-process",
            Some(key),
            Some(&body),
        )
        .await;
    assert_eq!(
        out["data"]["processed"].as_array().map(Vec::len),
        Some(100),
        "{out}"
    );
}
