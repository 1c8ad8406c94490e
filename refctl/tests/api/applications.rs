//! Applications: accept and reject move the affiliate in the same transaction,
//! racing decisions have exactly one winner, bulk accept answers per id.

use api::domain::signup;
use api::domain::tenant::{Mode, Tenant};
use api::domain::timestamp;
use api::services::app::App;
use api::services::enrollments;
use api::store::campaigns;
use api::wire::signup::SignUp;
use serde_json::{json, Value};

use crate::support::{app_for, call, campaign, merchant, server, Merchant};

/// A PENDING affiliate and its application, made by the sign-up rules straight
/// in the store (HTTP sign-ups share one per-IP budget across the suite).
/// Returns (affiliate id, application id).
pub async fn pending(app: &App, m: &Merchant, campaign_id: &str) -> (String, String) {
    let tenant = Tenant::new(m.account_id.clone(), Mode::Test);
    let c = campaigns::get(&app.store, &tenant, campaign_id)
        .await
        .unwrap();
    let input: SignUp = serde_json::from_value(json!({
        "campaignId": campaign_id,
        "email": format!("{}@example.com", ulid::Ulid::new().to_string().to_lowercase()),
        "name": "Applicant",
    }))
    .unwrap();
    let mut e = signup::enroll(input.into(), &c, None, timestamp::now()).unwrap();
    enrollments::enroll(app, &tenant, &mut e).await.unwrap();
    (e.affiliate.id, e.application.unwrap().id)
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

async fn status_of(key: &str, path: String) -> String {
    let r = call("GET", &path, Some(key), None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.data()["status"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn accept_and_reject_move_application_and_affiliate() {
    let app = app_for(server()).await;
    let m = merchant().await;
    let k = Some(m.test_key.as_str());
    let c = id(&campaign(&m.test_key, json!({"isPublic": true})).await);
    let (aff1, app1) = pending(&app, &m, &c).await;
    let (aff2, app2) = pending(&app, &m, &c).await;

    let r = call("GET", "/api/v1/applications?status=pending", k, None).await;
    let listed: Vec<_> = r.data().as_array().unwrap().iter().map(id).collect();
    assert_eq!(listed, [app2.clone(), app1.clone()], "newest first");

    let r = call(
        "POST",
        &format!("/api/v1/applications/{app1}/accept"),
        k,
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["status"], "ACCEPTED");
    assert_eq!(r.data()["object"], "application");
    assert!(r.data()["decidedAt"].is_string());
    assert_eq!(
        status_of(&m.test_key, format!("/api/v1/affiliates/{aff1}")).await,
        "ACTIVE"
    );
    // Decided once: both decisions are now 409 with the current state.
    for action in ["accept", "reject"] {
        let r = call(
            "POST",
            &format!("/api/v1/applications/{app1}/{action}"),
            k,
            Some(json!({})),
        )
        .await;
        r.assert_error(409, "INVALID_STATE");
        assert_eq!(r.body["error"]["details"]["currentState"], "ACCEPTED");
    }

    // A reason longer than 1000 characters is refused before anything changes.
    call(
        "POST",
        &format!("/api/v1/applications/{app2}/reject"),
        k,
        Some(json!({"reason": "x".repeat(1001)})),
    )
    .await
    .assert_error(400, "VALIDATION_FAILED");
    let r = call(
        "POST",
        &format!("/api/v1/applications/{app2}/reject"),
        k,
        Some(json!({"reason": "Audience does not fit"})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["status"], "REJECTED");
    assert_eq!(r.data()["reason"], "Audience does not fit");
    assert_eq!(
        status_of(&m.test_key, format!("/api/v1/affiliates/{aff2}")).await,
        "REJECTED"
    );

    // The status index follows the change.
    let r = call("GET", "/api/v1/applications?status=PENDING", k, None).await;
    assert_eq!(r.data().as_array().unwrap().len(), 0);
    let r = call("GET", "/api/v1/applications?status=accepted", k, None).await;
    let listed: Vec<_> = r.data().as_array().unwrap().iter().map(id).collect();
    assert_eq!(listed, [app1.as_str()]);
    let r = call("GET", "/api/v1/affiliates?status=rejected", k, None).await;
    let listed: Vec<_> = r.data().as_array().unwrap().iter().map(id).collect();
    assert_eq!(listed, [aff2.as_str()]);
    let r = call(
        "GET",
        &format!("/api/v1/applications?campaign_id={c}&status=rejected"),
        k,
        None,
    )
    .await;
    let listed: Vec<_> = r.data().as_array().unwrap().iter().map(id).collect();
    assert_eq!(listed, [app2.as_str()]);
    call("GET", "/api/v1/applications?status=maybe", k, None)
        .await
        .assert_error(400, "VALIDATION_FAILED");
    // A rejected affiliate cannot be switched on behind its application's back.
    call(
        "PUT",
        &format!("/api/v1/affiliates/{aff2}"),
        k,
        Some(json!({"status": "ACTIVE"})),
    )
    .await
    .assert_error(409, "INVALID_STATE");
}

#[tokio::test]
async fn racing_accept_and_reject_have_exactly_one_winner() {
    let app = app_for(server()).await;
    let m = merchant().await;
    let c = id(&campaign(&m.test_key, json!({"isPublic": true})).await);
    for trial in 0..20 {
        let (aff, application) = pending(&app, &m, &c).await;
        let spawn = |action: &'static str| {
            let key = m.test_key.clone();
            let path = format!("/api/v1/applications/{application}/{action}");
            tokio::spawn(async move { call("POST", &path, Some(&key), Some(json!({}))).await })
        };
        let (accept, reject) = (spawn("accept"), spawn("reject"));
        let (accept, reject) = (accept.await.unwrap(), reject.await.unwrap());
        let (winner, loser, expected) = match (accept.status, reject.status) {
            (200, _) => (&accept, &reject, ("ACCEPTED", "ACTIVE")),
            (_, 200) => (&reject, &accept, ("REJECTED", "REJECTED")),
            _ => panic!(
                "trial {trial}: no winner: {:?} / {:?}",
                accept.body, reject.body
            ),
        };
        loser.assert_error(409, "INVALID_STATE");
        assert_eq!(winner.data()["status"], expected.0, "trial {trial}");
        assert_eq!(
            loser.body["error"]["details"]["currentState"], expected.0,
            "trial {trial}"
        );
        assert_eq!(
            status_of(&m.test_key, format!("/api/v1/applications/{application}")).await,
            expected.0
        );
        assert_eq!(
            status_of(&m.test_key, format!("/api/v1/affiliates/{aff}")).await,
            expected.1,
            "trial {trial}: the affiliate follows the winner"
        );
    }
}

#[tokio::test]
async fn bulk_accept_answers_per_id_and_refuses_oversized_lists() {
    let app = app_for(server()).await;
    let m = merchant().await;
    let other = merchant().await;
    let k = Some(m.test_key.as_str());
    let c = id(&campaign(&m.test_key, json!({"isPublic": true})).await);
    let oc = id(&campaign(&other.test_key, json!({"isPublic": true})).await);
    let (aff_a, a) = pending(&app, &m, &c).await;
    let (_, b) = pending(&app, &m, &c).await;
    let (_, done) = pending(&app, &m, &c).await;
    let (_, foreign) = pending(&app, &other, &oc).await;
    let r = call(
        "POST",
        &format!("/api/v1/applications/{done}/accept"),
        k,
        None,
    )
    .await;
    assert_eq!(r.status, 200);

    // 101 ids: 400 and nothing changes, even though valid ids are among them.
    let mut many: Vec<String> = (0..99)
        .map(|_| format!("app_{}", ulid::Ulid::new()))
        .collect();
    many.extend([a.clone(), b.clone()]);
    let r = call(
        "POST",
        "/api/v1/applications/bulk-accept",
        k,
        Some(json!({ "applicationIds": many })),
    )
    .await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert_eq!(
        r.body["error"]["details"][0]["path"],
        json!(["applicationIds"])
    );
    for id in [&a, &b] {
        assert_eq!(
            status_of(&m.test_key, format!("/api/v1/applications/{id}")).await,
            "PENDING"
        );
    }
    call(
        "POST",
        "/api/v1/applications/bulk-accept",
        k,
        Some(json!({ "applicationIds": [] })),
    )
    .await
    .assert_error(400, "VALIDATION_FAILED");
    call(
        "POST",
        "/api/v1/applications/bulk-accept",
        k,
        Some(json!({ "applicationIds": [a, 5] })),
    )
    .await
    .assert_error(400, "VALIDATION_FAILED");

    let unknown = format!("app_{}", ulid::Ulid::new());
    let ids = json!([a, done, unknown, foreign, b, a, "garbage"]);
    let r = call(
        "POST",
        "/api/v1/applications/bulk-accept",
        k,
        Some(json!({ "applicationIds": ids })),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let accepted: Vec<_> = r.data()["accepted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (id(x), x["status"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        accepted,
        [
            (a.clone(), "ACCEPTED".to_string()),
            (b.clone(), "ACCEPTED".to_string())
        ],
        "the duplicate is handled once"
    );
    let failed: Vec<_> = r.data()["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert!(f["message"].is_string());
            (
                f["id"].as_str().unwrap().to_string(),
                f["code"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        failed,
        [
            (done.clone(), "INVALID_STATE".to_string()),
            (unknown.clone(), "NOT_FOUND".to_string()),
            (foreign.clone(), "NOT_FOUND".to_string()),
            ("garbage".to_string(), "NOT_FOUND".to_string()),
        ]
    );
    assert_eq!(
        status_of(&m.test_key, format!("/api/v1/affiliates/{aff_a}")).await,
        "ACTIVE"
    );
    // The other account's application is untouched.
    assert_eq!(
        status_of(&other.test_key, format!("/api/v1/applications/{foreign}")).await,
        "PENDING"
    );
}

#[tokio::test]
async fn bulk_accept_of_one_hundred() {
    let app = app_for(server()).await;
    let m = merchant().await;
    let c = id(&campaign(&m.test_key, json!({"isPublic": true})).await);
    let mut ids = Vec::new();
    for _ in 0..100 {
        ids.push(pending(&app, &m, &c).await.1);
    }
    let r = call(
        "POST",
        "/api/v1/applications/bulk-accept",
        Some(&m.test_key),
        Some(json!({ "applicationIds": ids })),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        r.data()["accepted"].as_array().unwrap().len(),
        100,
        "{:?}",
        r.data()["failed"][0]
    );
    assert_eq!(r.data()["failed"].as_array().unwrap().len(), 0);
    let order: Vec<_> = r.data()["accepted"]
        .as_array()
        .unwrap()
        .iter()
        .map(id)
        .collect();
    assert_eq!(order, ids, "results follow the request order");
    let r = call(
        "GET",
        "/api/v1/affiliates?status=active&limit=100",
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(r.data().as_array().unwrap().len(), 100);
}

#[tokio::test]
async fn other_accounts_and_the_other_mode_see_404() {
    let app = app_for(server()).await;
    let m = merchant().await;
    let other = merchant().await;
    let c = id(&campaign(&m.test_key, json!({"isPublic": true})).await);
    let (aff, application) = pending(&app, &m, &c).await;
    for key in [&m.live_key, &other.test_key, &other.live_key] {
        let k = Some(key.as_str());
        call(
            "GET",
            &format!("/api/v1/applications/{application}"),
            k,
            None,
        )
        .await
        .assert_error(404, "NOT_FOUND");
        for action in ["accept", "reject"] {
            call(
                "POST",
                &format!("/api/v1/applications/{application}/{action}"),
                k,
                Some(json!({})),
            )
            .await
            .assert_error(404, "NOT_FOUND");
        }
        let r = call(
            "POST",
            "/api/v1/applications/bulk-accept",
            k,
            Some(json!({ "applicationIds": [application] })),
        )
        .await;
        assert_eq!(r.data()["failed"][0]["code"], "NOT_FOUND");
        let r = call("GET", "/api/v1/applications", k, None).await;
        assert_eq!(r.data().as_array().unwrap().len(), 0);
    }
    assert_eq!(
        status_of(&m.test_key, format!("/api/v1/applications/{application}")).await,
        "PENDING"
    );
    assert_eq!(
        status_of(&m.test_key, format!("/api/v1/affiliates/{aff}")).await,
        "PENDING"
    );
}

#[tokio::test]
async fn decision_bodies_refuse_unknown_fields() {
    let app = app_for(server()).await;
    let m = merchant().await;
    let k = Some(m.test_key.as_str());
    let c = id(&campaign(&m.test_key, json!({"isPublic": true})).await);
    let (_, application) = pending(&app, &m, &c).await;
    let cases = [
        ("accept", json!({"status": "ACCEPTED"}), "status"),
        (
            "reject",
            json!({"reason": "x", "status": "ACCEPTED"}),
            "status",
        ),
        ("reject", json!({"affiliateId": "aff_x"}), "affiliateId"),
    ];
    for (action, body, field) in cases {
        let r = call(
            "POST",
            &format!("/api/v1/applications/{application}/{action}"),
            k,
            Some(body),
        )
        .await;
        r.assert_error(400, "VALIDATION_FAILED");
        assert_eq!(r.body["error"]["details"][0]["path"], json!([field]));
    }
    let r = call(
        "POST",
        "/api/v1/applications/bulk-accept",
        k,
        Some(json!({"applicationIds": [application], "status": "ACCEPTED"})),
    )
    .await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert_eq!(
        status_of(&m.test_key, format!("/api/v1/applications/{application}")).await,
        "PENDING"
    );
}

/// DynamoDB calls (and capacity, as DynamoDB Local reports it) of the store
/// work behind sign-up, accept, bulk accept of 100 and asset create. The HTTP
/// layer adds one rate-limit UpdateItem per call and, on merchant routes, one
/// BatchGetItem for the key and account.
#[tokio::test]
async fn dynamodb_calls_per_operation() {
    use api::domain::application::Decision;
    use api::domain::asset::Asset;
    use api::services::applications;
    use api::store::assets;
    use api::wire::asset::NewSwipeCopy;

    // Its own clients, so its counters see only this test's calls.
    let app = app_for(server()).await;
    let m = merchant().await;
    let tenant = Tenant::new(m.account_id.clone(), Mode::Test);
    let c = id(&campaign(&m.test_key, json!({"isPublic": true})).await);
    let metrics = || app.store.metrics().snapshot();

    let before = metrics();
    let (found, _) = campaigns::get_with_tenant(&app.store, &c)
        .await
        .unwrap()
        .unwrap();
    let input: SignUp = serde_json::from_value(
        json!({"campaignId": c, "email": "cost@example.com", "name": "Cost"}),
    )
    .unwrap();
    let mut e = signup::enroll(input.into(), &found, None, timestamp::now()).unwrap();
    enrollments::enroll(&app, &tenant, &mut e).await.unwrap();
    let signup_cost = metrics().since(&before);
    assert_eq!(signup_cost.calls, 2, "campaign GetItem + one transaction");

    let before = metrics();
    let application = e.application.unwrap().id;
    applications::decide(&app, &tenant, &application, &Decision::Accept)
        .await
        .unwrap();
    let accept_cost = metrics().since(&before);
    // The affiliate is read too: its affiliate.updated event carries its view.
    assert_eq!(
        accept_cost.calls, 3,
        "GetItem + the affiliate's Query + one transaction"
    );

    let mut ids = Vec::new();
    for _ in 0..100 {
        ids.push(pending(&app, &m, &c).await.1);
    }
    let before = metrics();
    let results = applications::bulk_accept(&app, &tenant, ids).await.unwrap();
    let bulk_cost = metrics().since(&before);
    assert!(results.iter().all(|(_, r)| r.is_ok()));
    assert_eq!(
        bulk_cost.calls, 7,
        "BatchGetItem + the affiliates' records and totals (2 batches at once) + 4 transactions of 25 accepts and their events"
    );

    let before = metrics();
    let input: NewSwipeCopy = serde_json::from_value(json!({"name": "N", "body": "B"})).unwrap();
    let asset = Asset::swipe_copy(input.into(), timestamp::now()).unwrap();
    assets::insert(&app.store, &tenant, &asset).await.unwrap();
    let asset_cost = metrics().since(&before);
    assert_eq!(
        asset_cost.calls, 1,
        "one transaction: the asset and its event"
    );

    for (name, cost) in [
        ("sign-up", signup_cost),
        ("accept", accept_cost),
        ("bulk-accept of 100", bulk_cost),
        ("asset create", asset_cost),
    ] {
        eprintln!(
            "cost {name}: {} calls, {} RCU, {} WCU (store work only)",
            cost.calls, cost.read_units, cost.write_units
        );
    }
}

#[tokio::test]
async fn bulk_accept_racing_single_rejects_gives_each_application_one_winner() {
    // Rejects land while the bulk transactions run: a chunk that no longer
    // applies as a whole falls back to one transaction per application.
    let app = app_for(server()).await;
    let m = merchant().await;
    let c = id(&campaign(&m.test_key, json!({"isPublic": true})).await);
    let mut apps = Vec::new();
    for _ in 0..60 {
        apps.push(pending(&app, &m, &c).await);
    }
    let ids: Vec<String> = apps.iter().map(|(_, a)| a.clone()).collect();
    let key = m.test_key.clone();
    let bulk_ids = ids.clone();
    let bulk = tokio::spawn(async move {
        call(
            "POST",
            "/api/v1/applications/bulk-accept",
            Some(&key),
            Some(json!({ "applicationIds": bulk_ids })),
        )
        .await
    });
    let mut rejects = Vec::new();
    for a in ids.iter().step_by(6) {
        let key = m.test_key.clone();
        let path = format!("/api/v1/applications/{a}/reject");
        rejects.push((
            a.clone(),
            tokio::spawn(async move { call("POST", &path, Some(&key), None).await }),
        ));
    }
    let bulk = bulk.await.unwrap();
    assert_eq!(bulk.status, 200, "{:?}", bulk.body);
    let accepted: std::collections::BTreeSet<String> = bulk.data()["accepted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_string())
        .collect();
    let mut rejected = std::collections::BTreeSet::new();
    for (a, t) in rejects {
        let r = t.await.unwrap();
        match r.status {
            200 => {
                rejected.insert(a);
            }
            409 => assert_eq!(r.code(), "INVALID_STATE"),
            other => panic!("reject answered {other}: {:?}", r.body),
        }
    }
    for f in bulk.data()["failed"].as_array().unwrap() {
        assert_eq!(f["code"], "INVALID_STATE", "{f}");
        assert!(rejected.contains(f["id"].as_str().unwrap()), "{f}");
    }
    assert_eq!(
        accepted.len() + rejected.len(),
        60,
        "every application has exactly one winner"
    );
    for (aff, a) in &apps {
        let (want_app, want_aff) = if rejected.contains(a) {
            ("REJECTED", "REJECTED")
        } else {
            assert!(accepted.contains(a));
            ("ACCEPTED", "ACTIVE")
        };
        assert_eq!(
            status_of(&m.test_key, format!("/api/v1/applications/{a}")).await,
            want_app
        );
        assert_eq!(
            status_of(&m.test_key, format!("/api/v1/affiliates/{aff}")).await,
            want_aff
        );
    }
}
