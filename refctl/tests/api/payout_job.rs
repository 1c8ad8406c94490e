//! The payout job and the exactly-once work of payouts, on a table of their
//! own: hold periods, minimums, currencies, modes, repeated and concurrent
//! runs, crashes in the middle of a claim and of the paid side effects, and
//! clawbacks.

use api::domain::conversion::{Conversion, ConversionStatus};
use api::domain::payout::{Payout, PayoutStatus, PayoutWork, PoolEntry};
use api::domain::payout_command::{Command, Outcome};
use api::domain::payout_work::{AtOnce, TransitionPlan};
use api::domain::tenant::{Mode, Tenant};
use api::domain::timestamp;
use api::services::app::App;
use api::services::payout_job::{self as job, Budget};
use api::services::payouts;
use api::store::page::PageRequest;
use api::store::payouts::{self as store_payouts, ClaimChunk, PayoutFilter};
use api::store::work::WorkRange;
use api::store::{affiliates, campaigns, keys};
use chrono::{DateTime, Duration, Utc};
use rust_decimal::Decimal;
use serde_json::{json, Value};

use crate::support::{app_for, call_on, fresh_server, merchant_on, payouts_server, Merchant};

fn dec(v: &Value) -> Decimal {
    v.to_string().parse().unwrap()
}

fn unique(prefix: &str) -> String {
    format!("{prefix}_{}", ulid::Ulid::new())
}

/// A campaign and an ACTIVE affiliate on the payout server; their ids and code.
async fn programme(key: &str, terms: Value) -> (String, String, String) {
    programme_on(&payouts_server().base, key, terms).await
}

/// A campaign and an ACTIVE affiliate on a server; their ids and code.
async fn programme_on(base: &str, key: &str, terms: Value) -> (String, String, String) {
    let mut body =
        json!({"name": "Payouts", "commissionType": "PERCENTAGE", "commissionValue": 10});
    for (k, v) in terms.as_object().unwrap() {
        body[k] = v.clone();
    }
    let c = call_on(base, "POST", "/api/v1/campaigns", Some(key), Some(body)).await;
    assert_eq!(c.status, 201, "{:?}", c.body);
    let cmp = c.data()["id"].as_str().unwrap().to_string();
    let code = unique("P").replace('_', "");
    let code = code[..code.len().min(20)].to_string();
    let a = call_on(
        base,
        "POST",
        "/api/v1/affiliates",
        Some(key),
        Some(
            json!({"campaignId": cmp, "email": format!("{}@pay.example.com", code.to_lowercase()),
            "name": "Payee", "code": code, "payoutMethod": "PAYPAL"}),
        ),
    )
    .await;
    assert_eq!(a.status, 201, "{:?}", a.body);
    (cmp, a.data()["id"].as_str().unwrap().to_string(), code)
}

/// A postback of `amount` in `currency` at `at` through `code`; the conversion.
async fn sale(key: &str, code: &str, amount: u32, currency: &str, at: DateTime<Utc>) -> Value {
    sale_on(&payouts_server().base, key, code, amount, currency, at).await
}

/// The same on a given server.
async fn sale_on(
    base: &str,
    key: &str,
    code: &str,
    amount: u32,
    currency: &str,
    at: DateTime<Utc>,
) -> Value {
    let r = call_on(
        base,
        "POST",
        "/api/v1/conversions/postback",
        Some(key),
        Some(
            json!({"amount": amount, "currency": currency, "externalId": unique("ord"),
            "conversionType": "SALE", "affiliateCode": code,
            "occurredAt": timestamp::format(&at)}),
        ),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    r.data().clone()
}

async fn payouts_of(app: &App, tenant: &Tenant, affiliate: &str) -> Vec<Payout> {
    let f = PayoutFilter {
        affiliate_id: Some(affiliate.to_string()),
        ..Default::default()
    };
    let page = PageRequest {
        limit: 100,
        ..Default::default()
    };
    store_payouts::list(&app.store, tenant, &f, &page)
        .await
        .unwrap()
        .items
}

async fn conversion(m: &Merchant, id: &str) -> Value {
    let r = call_on(
        &payouts_server().base,
        "GET",
        &format!("/api/v1/conversions/{id}"),
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.data().clone()
}

/// One payout job run, while no other test records an earner or runs it.
/// Holds every other payout job on the shared table off until it drops:
/// a test's sales are then paid by its own runs only, never half by a run
/// another test makes between two of them.
async fn quiet() -> tokio::sync::MutexGuard<'static, ()> {
    crate::payouts::JOBS.lock().await
}

/// One payout job run; on the shared table the caller holds [`quiet`].
async fn run_job(app: &App, now: DateTime<Utc>) {
    job::run(app, now, Budget::default()).await.unwrap();
}

#[tokio::test]
async fn the_job_respects_holds_minimums_currencies_and_modes_and_creates_nothing_twice() {
    let _quiet = quiet().await;
    let m = merchant_on(payouts_server()).await;
    let app = app_for(payouts_server()).await;
    let test = Tenant::new(&m.account_id, Mode::Test);
    let now = Utc::now();
    let terms = json!({"holdDays": 10, "minimumPayout": 50});
    let (_, aff, code) = programme(&m.test_key, terms.clone()).await;
    let old = now - Duration::days(20);
    let usd1 = sale(&m.test_key, &code, 300, "USD", old).await;
    let usd2 = sale(&m.test_key, &code, 400, "USD", old).await;
    let eur = sale(&m.test_key, &code, 600, "EUR", old).await;
    let held = sale(&m.test_key, &code, 1000, "USD", now).await;
    // A second affiliate below the minimum; and live-mode data of the same account.
    let (_, small, small_code) = programme(&m.test_key, terms.clone()).await;
    sale(&m.test_key, &small_code, 200, "USD", old).await;
    let (_, live_aff, live_code) = programme(&m.live_key, terms).await;
    sale(&m.live_key, &live_code, 900, "USD", old).await;

    // Two runs at once, then a third: nothing is created twice.
    tokio::join!(run_job(&app, now), run_job(&app, now));
    run_job(&app, now).await;

    let mut got = payouts_of(&app, &test, &aff).await;
    got.sort_by_key(|p| p.currency.code());
    let summary: Vec<(&str, String, u64, PayoutStatus)> = got
        .iter()
        .map(|p| {
            (
                p.currency.code(),
                p.amount.to_string(),
                p.conversion_count,
                p.status,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("EUR", "60.00".to_string(), 1, PayoutStatus::Pending),
            ("USD", "70.00".to_string(), 2, PayoutStatus::Pending),
        ]
    );
    assert_eq!(got[1].method.as_str(), "PAYPAL");
    let usd = &got[1];
    for c in [&usd1, &usd2] {
        let c = conversion(&m, c["id"].as_str().unwrap()).await;
        assert_eq!(c["status"], "APPROVED");
        assert_eq!(c["payoutId"].as_str(), Some(usd.id.as_str()));
    }
    assert_eq!(
        conversion(&m, eur["id"].as_str().unwrap()).await["payoutId"].as_str(),
        Some(got[0].id.as_str())
    );
    let inside = conversion(&m, held["id"].as_str().unwrap()).await;
    assert_eq!(
        (inside["status"].as_str(), inside["payoutId"].is_null()),
        (Some("PENDING"), true)
    );
    assert!(
        payouts_of(&app, &test, &small).await.is_empty(),
        "below the minimum"
    );
    // Test-mode data makes test-mode payouts only; live data live ones.
    assert!(payouts_of(&app, &test, &live_aff).await.is_empty());
    let live = payouts_of(&app, &Tenant::new(&m.account_id, Mode::Live), &live_aff).await;
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].amount.to_string(), "90.00");

    // The small balance carries over: with 40 more it reaches 60.
    sale(&m.test_key, &small_code, 400, "USD", old).await;
    run_job(&app, now).await;
    let small_payouts = payouts_of(&app, &test, &small).await;
    assert_eq!(small_payouts.len(), 1);
    assert_eq!(small_payouts[0].amount.to_string(), "60.00");
    assert_eq!(small_payouts[0].conversion_count, 2);
    // Once the hold is over, the held conversion makes a payout of its own.
    run_job(&app, now + Duration::days(11)).await;
    assert_eq!(payouts_of(&app, &test, &aff).await.len(), 3);
}

/// Commits a claim chunk of the conversions `read` into `p`.
async fn claim_read(app: &App, t: &Tenant, p: &Payout, read: &[Conversion]) -> ClaimChunk {
    let claiming = p.claiming(read, &[]);
    store_payouts::claim_chunk(&app.store, t, p, &claiming)
        .await
        .unwrap()
}

/// The APPROVED ones among the first `limit` members of payout `po`, each
/// beside itself paid at `now`.
async fn paying(
    app: &App,
    t: &Tenant,
    po: &str,
    limit: usize,
    now: DateTime<Utc>,
) -> Vec<(Conversion, Conversion)> {
    let partition = keys::payout_members(po);
    let (members, _) = store_payouts::members(&app.store, t, &partition, WorkRange::All, limit)
        .await
        .unwrap();
    members
        .into_iter()
        .filter(|c| c.status == ConversionStatus::Approved)
        .map(|c| {
            let after = c.pay(po, now).unwrap();
            (c, after)
        })
        .collect()
}

/// Settles a payout by the merchant's PUT mark-paid, without driving its work.
async fn mark_paid_without_work(app: &App, t: &Tenant, p: &Payout) -> Payout {
    let Outcome::Changed {
        payout,
        from,
        event,
        ..
    } = p
        .apply(
            Command::Settle {
                payment_reference: Some("wire-1".into()),
                note: None,
            },
            Utc::now(),
        )
        .unwrap()
    else {
        panic!("changed");
    };
    let recorded = payout.event(event.expect("an event"), Utc::now());
    let plan = TransitionPlan::new(*payout, from, vec![recorded], AtOnce::Nothing);
    assert!(store_payouts::commit_transition(&app.store, t, &plan)
        .await
        .unwrap());
    plan.payout
}

#[tokio::test]
async fn a_payout_of_250_conversions_survives_a_crash_mid_claim_and_mid_settle() {
    let server = fresh_server();
    let base = &server.base;
    let m = merchant_on(server).await;
    let app = app_for(server).await;
    let t = Tenant::new(&m.account_id, Mode::Test);
    let (cmp, aff, code) = programme_on(base, &m.test_key, json!({"holdDays": 0})).await;
    let then = Utc::now() - Duration::hours(1);
    let mut expected = Decimal::ZERO;
    for i in 0..250_u32 {
        let c = sale_on(base, &m.test_key, &code, 100 + i, "USD", then).await;
        expected += dec(&c["commission"]);
    }
    let now = Utc::now();
    // The job's first step by hand: the hold is over, all 250 are APPROVED.
    for shard in 0..keys::WORK_SHARDS {
        let due = store_payouts::due_conversions(&app.store, shard, now, 1000)
            .await
            .unwrap();
        let approved: Vec<_> = due
            .into_iter()
            .map(|(_, c)| {
                let a = c.approve(now).unwrap();
                (c, a)
            })
            .collect();
        for chunk in approved.chunks(store_payouts::STATUS_CHUNK) {
            assert!(store_payouts::approve_chunk(&app.store, &t, chunk, &[])
                .await
                .unwrap());
        }
    }
    // A crash after the first claim chunk: the payout is started, 98 claimed.
    let affiliate = affiliates::get(&app.store, &t, &aff).await.unwrap();
    let campaign = campaigns::get(&app.store, &t, &cmp).await.unwrap();
    let pool_key = keys::payable_pool(&t, &aff, "USD");
    let (all, _) = store_payouts::members(&app.store, &t, &pool_key, WorkRange::All, 1000)
        .await
        .unwrap();
    assert_eq!(all.len(), 250);
    let pool: Vec<PoolEntry> = all
        .into_iter()
        .map(|c| PoolEntry::Conversion(Box::new(c)))
        .collect();
    let currency = api::domain::money::Currency::parse("c", "USD").unwrap();
    let p = Payout::open(&affiliate, &campaign, currency, &pool, now).unwrap();
    assert!(store_payouts::start_claim(&app.store, &t, &p)
        .await
        .unwrap());
    let (first, _) = store_payouts::members(&app.store, &t, &pool_key, WorkRange::All, 98)
        .await
        .unwrap();
    let claim = |read| claim_read(&app, &t, &p, read);
    assert_eq!(claim(&first).await, ClaimChunk::Claimed);
    assert!(
        store_payouts::get(&app.store, &t, &p.id).await.is_err(),
        "invisible while assembled"
    );
    // The same members again: taken, while the payout is still assembled.
    assert_eq!(claim(&first).await, ClaimChunk::MemberChanged);
    // The next runs finish the claim: one payout holding all 250, exact.
    run_job(&app, now).await;
    run_job(&app, now).await;
    let got = payouts_of(&app, &t, &aff).await;
    assert_eq!(got.len(), 1, "{got:?}");
    // Finished: a chunk of a stale run is refused for the payout's sake,
    // with its members taken as well, or alone.
    assert_eq!(claim(&first).await, ClaimChunk::PayoutClosed);
    assert_eq!(claim(&[]).await, ClaimChunk::PayoutClosed);
    let p = &got[0];
    assert_eq!((p.conversion_count, p.amount), (250, expected));

    // A crash after part of the paid side effects: PAID, one settle chunk done.
    let paid = mark_paid_without_work(&app, &t, p).await;
    let chunk = paying(&app, &t, &p.id, 16, now).await;
    assert_eq!(chunk.len(), 16);
    let part = paid.chunk(PayoutWork::Settle, chunk.len(), now).unwrap();
    assert!(part.ended().is_none(), "16 of 250");
    assert!(
        store_payouts::settle_chunk(&app.store, &t, &paid, &chunk, &part)
            .await
            .unwrap()
    );
    // A chunk planned on the counter as it was before that one is refused
    // and moves nothing, so a committed chunk leaves the payout as planned.
    let stale = paying(&app, &t, &p.id, 40, now).await;
    assert!(!stale.is_empty());
    let planned_before = paid.chunk(PayoutWork::Settle, stale.len(), now).unwrap();
    assert!(
        !store_payouts::settle_chunk(&app.store, &t, &paid, &stale, &planned_before)
            .await
            .unwrap()
    );
    let between = store_payouts::get(&app.store, &t, &p.id).await.unwrap();
    let planned = part.into_after();
    assert_eq!(
        (&between.progress, between.work),
        (&planned.progress, planned.work)
    );
    assert_eq!(between.progress.settled, 16);
    run_job(&app, now).await;
    let done = store_payouts::get(&app.store, &t, &p.id).await.unwrap();
    assert_eq!((done.status, done.work), (PayoutStatus::Paid, None));
    assert_eq!(done.progress.settled, 250);
    let (all, _) = store_payouts::members(
        &app.store,
        &t,
        &keys::payout_members(&p.id),
        WorkRange::All,
        1000,
    )
    .await
    .unwrap();
    assert_eq!(all.len(), 250);
    assert!(all.iter().all(|c| c.status == ConversionStatus::Paid));
    // Totals equal the sum of their parts: paid, earned, and the PAID rollup.
    let a = call_on(
        base,
        "GET",
        &format!("/api/v1/affiliates/{aff}"),
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(dec(&a.data()["paid"]["USD"]), expected);
    assert_eq!(dec(&a.data()["earned"]["USD"]), expected);
    let path = format!("/api/v1/conversions/summary?period=all&group_by=status&campaign_id={cmp}");
    let s = call_on(base, "GET", &path, Some(&m.test_key), None).await;
    let groups = s.data()["groups"].as_array().unwrap();
    let paid_group = groups.iter().find(|g| g["status"] == "PAID").unwrap();
    assert_eq!(paid_group["count"], 250);
    assert_eq!(dec(&paid_group["commission"]), expected);
    assert!(groups.iter().all(|g| g["status"] == "PAID"), "{groups:?}");
}

/// A request whose payout moves more members than one transaction does
/// completes the work chunk after chunk, going on from the payout each
/// chunk planned, and answers with the payout as it is stored.
#[tokio::test]
async fn a_request_moves_a_large_payout_in_chunks_and_answers_it_as_stored() {
    let _quiet = quiet().await;
    let m = merchant_on(payouts_server()).await;
    let app = app_for(payouts_server()).await;
    let t = Tenant::new(&m.account_id, Mode::Test);
    let key = Some(m.test_key.as_str());
    let base = &payouts_server().base;
    let (_, aff, code) = programme(&m.test_key, json!({"holdDays": 0})).await;
    let then = Utc::now() - Duration::hours(1);
    // More than a transition releases (48) or pays (12) in its own.
    for i in 0..50_u32 {
        sale(&m.test_key, &code, 100 + i, "USD", then).await;
    }
    let answered_as_stored = |method: &'static str, path: String, body: Value| async move {
        let r = call_on(base, method, &path, key, Some(body)).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        let id = r.data()["id"].as_str().unwrap().to_string();
        let stored = call_on(base, "GET", &format!("/api/v1/payouts/{id}"), key, None).await;
        assert_eq!(r.data(), stored.data());
        let list = format!("/api/v1/conversions?payout_id={id}&limit=100");
        let held = call_on(base, "GET", &list, key, None).await;
        assert!(held.data().is_array(), "{:?}", held.body);
        (r.data().clone(), held.each("status"))
    };
    run_job(&app, Utc::now()).await;
    let first = payouts_of(&app, &t, &aff).await;
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].conversion_count, 50);
    let path = format!("/api/v1/payouts/{}/reject", first[0].id);
    let (rejected, held) = answered_as_stored("POST", path, json!({"reason": "again"})).await;
    assert_eq!(rejected["status"], "REJECTED");
    assert!(held.is_empty(), "all 50 back in the pool: {held:?}");
    // The next run pays them in a payout of their own.
    run_job(&app, Utc::now()).await;
    let again: Vec<_> = payouts_of(&app, &t, &aff)
        .await
        .into_iter()
        .filter(|p| p.id != first[0].id)
        .collect();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].conversion_count, 50);
    // PUT mark-paid settles it from PENDING (the merchant paid outside).
    let path = format!("/api/v1/payouts/{}/mark-paid", again[0].id);
    let (paid, held) = answered_as_stored("PUT", path, json!({})).await;
    assert_eq!(paid["status"], "PAID");
    assert_eq!(held.len(), 50);
    assert!(held.iter().all(|s| s == "PAID"), "{held:?}");
}

#[tokio::test]
async fn a_reversed_paid_conversion_is_clawed_back_from_the_next_payout() {
    let _quiet = quiet().await;
    let m = merchant_on(payouts_server()).await;
    let app = app_for(payouts_server()).await;
    let t = Tenant::new(&m.account_id, Mode::Test);
    let base = &payouts_server().base;
    let (_, aff, code) = programme(&m.test_key, json!({"holdDays": 0, "minimumPayout": 10})).await;
    let then = Utc::now() - Duration::hours(1);
    let big = sale(&m.test_key, &code, 500, "USD", then).await; // 50.00
    sale(&m.test_key, &code, 100, "USD", then).await; // 10.00
    let now = Utc::now();
    run_job(&app, now).await;
    let first = payouts_of(&app, &t, &aff).await;
    assert_eq!(first.len(), 1);
    // In an open payout, a reversal is refused and names the payout.
    let path = format!(
        "/api/v1/conversions/{}/reverse",
        big["id"].as_str().unwrap()
    );
    let r = call_on(base, "POST", &path, Some(&m.test_key), Some(json!({}))).await;
    r.assert_error(409, "INVALID_STATE");
    assert_eq!(
        r.body["error"]["details"]["payoutId"].as_str(),
        Some(first[0].id.as_str())
    );
    // Paid: the reversal claws the commission back.
    let settle = |_: &Payout| Command::Settle {
        payment_reference: None,
        note: None,
    };
    let paid = payouts::transition(&app, &t, &first[0].id, settle, now)
        .await
        .unwrap();
    assert_eq!((paid.status, paid.work), (PayoutStatus::Paid, None));
    let r = call_on(
        base,
        "POST",
        &path,
        Some(&m.test_key),
        Some(json!({"reason": "refund"})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["status"], "REVERSED");
    let a = call_on(
        base,
        "GET",
        &format!("/api/v1/affiliates/{aff}"),
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(dec(&a.data()["earned"]["USD"]), Decimal::new(1000, 2));
    assert_eq!(dec(&a.data()["paid"]["USD"]), Decimal::new(6000, 2));
    // 30.00 of new commission does not cover the 50.00 clawback: no payout.
    sale(&m.test_key, &code, 300, "USD", then).await;
    run_job(&app, now).await;
    assert_eq!(
        payouts_of(&app, &t, &aff).await.len(),
        1,
        "the balance carries over"
    );
    // 40.00 more: 70.00 - 50.00 = 20.00, above the minimum.
    sale(&m.test_key, &code, 400, "USD", then).await;
    run_job(&app, now).await;
    let all = payouts_of(&app, &t, &aff).await;
    assert_eq!(all.len(), 2);
    let next = all.iter().find(|p| p.id != first[0].id).unwrap();
    assert_eq!(next.amount.to_string(), "20.00");
    assert_eq!(next.adjustment_total.to_string(), "-50.00");
    assert_eq!(next.conversion_count, 2);
}

#[tokio::test]
async fn partial_reversals_are_paid_net_and_clawed_back_by_the_cut() {
    let _quiet = quiet().await;
    let m = merchant_on(payouts_server()).await;
    let app = app_for(payouts_server()).await;
    let t = Tenant::new(&m.account_id, Mode::Test);
    let base = &payouts_server().base;
    let (_, aff, code) = programme(&m.test_key, json!({"holdDays": 0, "minimumPayout": 1})).await;
    let then = Utc::now() - Duration::hours(1);
    let first = sale(&m.test_key, &code, 500, "USD", then).await; // commission 50.00
    let key = m.test_key.clone();
    let key = key.as_str();
    let reverse = |id: &Value, body: Value| {
        let path = format!("/api/v1/conversions/{}/reverse", id["id"].as_str().unwrap());
        async move { call_on(base, "POST", &path, Some(key), Some(body)).await }
    };
    // A fifth refunded before the payout: the payout owes the net 40.00.
    let r = reverse(&first, json!({"amount": 100})).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(dec(&r.data()["commissionReversed"]), Decimal::new(1000, 2));
    let now = Utc::now();
    run_job(&app, now).await;
    let payouts = payouts_of(&app, &t, &aff).await;
    assert_eq!(payouts.len(), 1);
    assert_eq!(payouts[0].amount.to_string(), "40.00");
    // In the open payout, a merchant's partial reversal is refused too.
    reverse(&first, json!({"amount": 10}))
        .await
        .assert_error(409, "INVALID_STATE");
    let settle = |_: &Payout| Command::Settle {
        payment_reference: None,
        note: None,
    };
    payouts::transition(&app, &t, &payouts[0].id, settle, now)
        .await
        .unwrap();
    // Paid: a quarter of what is left (100.00 of 400.00) claws back 10.00.
    let r = reverse(&first, json!({"amount": 100})).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["status"], "PAID");
    assert_eq!(dec(&r.data()["commissionReversed"]), Decimal::new(2000, 2));
    let a = call_on(
        base,
        "GET",
        &format!("/api/v1/affiliates/{aff}"),
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(dec(&a.data()["earned"]["USD"]), Decimal::new(3000, 2));
    assert_eq!(dec(&a.data()["paid"]["USD"]), Decimal::new(4000, 2));
    // The next payout nets the 10.00 clawback: 25.00 - 10.00.
    sale(&m.test_key, &code, 250, "USD", then).await;
    run_job(&app, now).await;
    let all = payouts_of(&app, &t, &aff).await;
    let next = all
        .iter()
        .find(|p| p.id != payouts[0].id)
        .expect("a second payout");
    assert_eq!(next.amount.to_string(), "15.00");
    assert_eq!(next.adjustment_total.to_string(), "-10.00");
}

#[tokio::test]
async fn a_held_conversion_is_never_paid_until_released_and_can_be_reversed() {
    let _quiet = quiet().await;
    let m = merchant_on(payouts_server()).await;
    let app = app_for(payouts_server()).await;
    let now = Utc::now();
    let terms = json!({"holdDays": 5, "risk": {"reviewAbove": 100}});
    let (_, _, code) = programme(&m.test_key, terms).await;
    let old = now - Duration::days(10);
    let fine = sale(&m.test_key, &code, 50, "USD", old).await;
    let held = sale(&m.test_key, &code, 500, "USD", old).await;
    let refused = sale(&m.test_key, &code, 400, "USD", old).await;
    assert_eq!(
        [&fine["status"], &held["status"], &refused["status"]],
        ["PENDING", "ON_HOLD", "ON_HOLD"]
    );
    let id = |v: &Value| v["id"].as_str().unwrap().to_string();
    run_job(&app, now).await;
    run_job(&app, now + Duration::days(60)).await;
    let paid = conversion(&m, &id(&fine)).await;
    assert!(paid["payoutId"].is_string(), "{paid}");
    for c in [&held, &refused] {
        let c = conversion(&m, &id(c)).await;
        assert_eq!(
            (&c["status"], &c["payoutId"]),
            (&json!("ON_HOLD"), &Value::Null)
        );
    }
    // Released after its hold period: APPROVED at once, then paid out.
    let r = call_on(
        &payouts_server().base,
        "POST",
        &format!("/api/v1/conversions/{}/release", id(&held)),
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["status"], "APPROVED");
    assert_eq!(
        r.data()["risk"]["flags"][0]["code"],
        "LARGE_AMOUNT",
        "kept as history"
    );
    run_job(&app, now).await;
    let released = conversion(&m, &id(&held)).await;
    let payout = released["payoutId"]
        .as_str()
        .expect("in a payout")
        .to_string();
    // The payout is paid: so is the released conversion.
    let t = Tenant::new(&m.account_id, Mode::Test);
    let settle = |_: &Payout| Command::Settle {
        payment_reference: None,
        note: None,
    };
    let paid_out = payouts::transition(&app, &t, &payout, settle, now)
        .await
        .unwrap();
    assert_eq!((paid_out.status, paid_out.work), (PayoutStatus::Paid, None));
    let released = conversion(&m, &id(&held)).await;
    assert_eq!(released["status"], "PAID", "{released}");
    // The other is refused: reversed from ON_HOLD.
    let r = call_on(
        &payouts_server().base,
        "POST",
        &format!("/api/v1/conversions/{}/reverse", id(&refused)),
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!((r.status, &r.data()["status"]), (200, &json!("REVERSED")));
}
