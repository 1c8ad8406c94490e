//! The payout job's cost per due conversion, on a table of its own that
//! already holds many conversions that are not due: it must grow with the
//! due work, not with the table.

use chrono::{Duration, Utc};
use rust_decimal::Decimal;
use serde_json::json;
use shared::config::Config;
use shared::domain::conversion::{AttributionMethod, Conversion, ConversionStatus, ConversionType};
use shared::domain::tenant::{Mode, Tenant};
use shared::ids::{new_id, IdKind};
use shared::money::Currency;
use shared::payouts::job::{self, Budget};
use shared::store::conversions;
use shared::App;

use crate::{env, put_batch, Bench};

/// Affiliates the due conversions are spread over (one payout each per run).
const AFFILIATES: usize = 10;

struct Programme {
    tenant: Tenant,
    campaign: String,
    affiliates: Vec<String>,
}

/// A campaign and its affiliates in the bench table, through the domain and store.
async fn programme(app: &App) -> Programme {
    let account = shared::store::accounts::create_account(&app.store, "Job bench", "enterprise")
        .await
        .unwrap();
    let tenant = Tenant::new(account.id, Mode::Test);
    let now = Utc::now();
    let input = serde_json::from_value(json!({"name": "Job", "commissionType": "PERCENTAGE", "commissionValue": 10, "holdDays": 0}))
        .unwrap();
    let c = shared::domain::campaign::Campaign::create(input, now).unwrap();
    shared::store::campaigns::insert(&app.store, &tenant, &c)
        .await
        .unwrap();
    let mut affiliates = Vec::new();
    for i in 0..AFFILIATES {
        let input = serde_json::from_value(
            json!({"campaignId": c.id, "email": format!("job-{i}@example.com"),
            "name": format!("Job {i}"), "code": format!("JOB{i}")}),
        )
        .unwrap();
        let mut e = shared::domain::affiliate::Affiliate::enroll(
            input,
            shared::domain::affiliate::AffiliateStatus::Active,
            now,
            shared::validation::Issues::new(),
        )
        .unwrap();
        shared::store::enrollments::enroll(&app.store, &tenant, &mut e)
            .await
            .unwrap();
        affiliates.push(e.affiliate.id);
    }
    Programme {
        tenant,
        campaign: c.id,
        affiliates,
    }
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
            affiliate_id: Some(p.affiliates[i % AFFILIATES].clone()),
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
async fn measured_run(b: &mut Bench, app: &App, label: &str) {
    let before = app.store.metrics().snapshot();
    let report = job::run(app, Utc::now(), Budget::default()).await.unwrap();
    let d = app.store.metrics().snapshot().since(&before);
    assert!(!report.cut_short, "{label}: {report:?}");
    b.rows.push((
        format!(
            "{label} ({} approved, {} payouts)",
            report.approved, report.payouts_created
        ),
        d.calls,
        d.round_trips,
        d.read_units,
        d.write_units,
    ));
}

/// The job at 1,000 and at 10,000 due conversions, in a table holding
/// 20,000 that are not due.
pub async fn rows(b: &mut Bench) {
    let suffix = ulid::Ulid::new().to_string().to_lowercase();
    let config = Config::local(
        &env("DYNAMODB_ENDPOINT", "http://127.0.0.1:18000"),
        &env("S3_ENDPOINT", "http://127.0.0.1:19000"),
        &format!("bench-job-{suffix}"),
        &format!("bench-job-{suffix}"),
    );
    let app = App::new(config).await;
    refctl::setup::tables_create(&app).await.expect("tables");
    let p = programme(&app).await;
    seed(&app, &p, 20_000, false).await;
    seed(&app, &p, 1_000, true).await;
    measured_run(
        b,
        &app,
        "payout job: 1,000 due conversions in a table of 21,000",
    )
    .await;
    seed(&app, &p, 10_000, true).await;
    measured_run(
        b,
        &app,
        "payout job: 10,000 due conversions in a table of 31,000",
    )
    .await;
    measured_run(b, &app, "payout job: nothing due (a second run)").await;
    app.store.delete_table().await.ok();
}
