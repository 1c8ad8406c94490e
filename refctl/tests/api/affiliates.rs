//! Affiliates: merchant create, get, list filters, partial update with the
//! e-mail and code guards, tenant isolation and the demo seed.

use api::domain::tenant::{Mode, Tenant};
use api::store::keys::{self, GUARD_SK};
use api::store::string_of;
use serde_json::{json, Value};

use crate::applications::pending;
use crate::support::{app_for, call, call_on, campaign, fresh_server, merchant, server};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

async fn create(key: &str, body: Value) -> crate::support::Resp {
    call("POST", "/api/v1/affiliates", Some(key), Some(body)).await
}

fn ids(r: &crate::support::Resp) -> Vec<String> {
    r.data().as_array().unwrap().iter().map(id).collect()
}

#[tokio::test]
async fn create_get_list_and_update() {
    let m = merchant().await;
    let k = Some(m.test_key.as_str());
    let c = id(&campaign(&m.test_key, json!({})).await);
    let c2 = id(&campaign(&m.test_key, json!({})).await);

    let r = create(
        &m.test_key,
        json!({"campaignId": c, "email": "Ann@Example.com", "name": "Ann", "code": "ANN10",
            "payoutMethod": "PAYPAL", "payoutEmail": "pay@example.com", "metadata": {"crm": "1"}}),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let ann = r.data().clone();
    assert!(id(&ann).starts_with("aff_"));
    assert_eq!(ann["object"], "affiliate");
    assert_eq!(ann["status"], "ACTIVE");
    assert_eq!(ann["code"], "ANN10");
    assert_eq!(ann["email"], "Ann@Example.com");
    assert_eq!(ann["earned"], json!({}));
    assert_eq!(ann["paid"], json!({}));
    for hidden in ["version", "tenant", "pk", "gsi1pk"] {
        assert!(ann.get(hidden).is_none(), "{hidden} leaked");
    }
    let ann_id = id(&ann);
    let path = format!("/api/v1/affiliates/{ann_id}");
    let got = call("GET", &path, k, None).await;
    assert_eq!(got.data(), &ann);

    // Without a code one is generated.
    let r = create(
        &m.test_key,
        json!({"campaignId": c, "email": "ben@example.com", "name": "Ben"}),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let ben_id = id(r.data());
    assert_eq!(r.data()["code"].as_str().unwrap().len(), 8);
    let r = create(
        &m.test_key,
        json!({"campaignId": c2, "email": "ann@example.com", "name": "Ann again"}),
    )
    .await;
    assert_eq!(r.status, 201, "same e-mail, other campaign");
    let ann2_id = id(r.data());

    // Uniqueness: e-mail per campaign, code per tenant, in any letter case.
    create(
        &m.test_key,
        json!({"campaignId": c, "email": "ANN@example.COM", "name": "X"}),
    )
    .await
    .assert_error(409, "ALREADY_EXISTS");
    create(
        &m.test_key,
        json!({"campaignId": c2, "email": "new@example.com", "name": "X", "code": "ann10"}),
    )
    .await
    .assert_error(409, "ALREADY_EXISTS");
    create(
        &m.test_key,
        json!({"campaignId": "cmp_01JD0000000000000000000000", "email": "z@example.com", "name": "Z"}),
    )
    .await
    .assert_error(404, "NOT_FOUND");

    // Lists and filters.
    let all = call("GET", "/api/v1/affiliates", k, None).await;
    assert_eq!(ids(&all), [ann2_id.clone(), ben_id.clone(), ann_id.clone()]);
    let r = call(
        "GET",
        &format!("/api/v1/affiliates?campaign_id={c}"),
        k,
        None,
    )
    .await;
    assert_eq!(ids(&r), [ben_id.clone(), ann_id.clone()]);
    let r = call("GET", "/api/v1/affiliates?email=ANN@example.com", k, None).await;
    assert_eq!(ids(&r), [ann2_id.clone(), ann_id.clone()]);
    let r = call(
        "GET",
        &format!("/api/v1/affiliates?email=ann@example.com&campaign_id={c2}&status=active"),
        k,
        None,
    )
    .await;
    assert_eq!(ids(&r), [ann2_id.as_str()]);
    call("GET", "/api/v1/affiliates?email=nope", k, None)
        .await
        .assert_error(400, "VALIDATION_FAILED");
    call("GET", "/api/v1/affiliates?status=gone", k, None)
        .await
        .assert_error(400, "VALIDATION_FAILED");

    // Partial update: only the fields sent change.
    let r = call(
        "PUT",
        &path,
        k,
        Some(json!({"name": "Ann Lee", "metadata": {"crm": null, "tier": "gold"}, "payoutEmail": null})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["name"], "Ann Lee");
    assert_eq!(r.data()["metadata"], json!({"tier": "gold"}));
    assert_eq!(r.data()["payoutEmail"], Value::Null);
    assert_eq!(r.data()["payoutMethod"], "PAYPAL");
    assert_eq!(r.data()["code"], "ANN10");
    assert_eq!(call("GET", &path, k, None).await.data(), r.data());

    // Status: ACTIVE <-> SUSPENDED only, and the status index follows.
    let r = call("PUT", &path, k, Some(json!({"status": "SUSPENDED"}))).await;
    assert_eq!(r.data()["status"], "SUSPENDED");
    let r = call("GET", "/api/v1/affiliates?status=suspended", k, None).await;
    assert_eq!(ids(&r), [ann_id.as_str()]);
    let r = call(
        "GET",
        &format!("/api/v1/affiliates?campaign_id={c}&status=ACTIVE"),
        k,
        None,
    )
    .await;
    assert_eq!(ids(&r), [ben_id.as_str()]);
    for bad in ["PENDING", "REJECTED", "DELETED"] {
        call("PUT", &path, k, Some(json!({"status": bad})))
            .await
            .assert_error(400, "VALIDATION_FAILED");
    }
    let r = call("PUT", &path, k, Some(json!({"status": "ACTIVE"}))).await;
    assert_eq!(r.data()["status"], "ACTIVE");

    // Changing e-mail or code keeps the rules and frees the old value.
    call("PUT", &path, k, Some(json!({"email": "BEN@example.com"})))
        .await
        .assert_error(409, "ALREADY_EXISTS");
    let r = call(
        "PUT",
        &format!("/api/v1/affiliates/{ben_id}"),
        k,
        Some(json!({"code": "Ann10"})),
    )
    .await;
    r.assert_error(409, "ALREADY_EXISTS");
    let r = call(
        "PUT",
        &path,
        k,
        Some(json!({"email": "ann.lee@example.com", "code": "ANNLEE"})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["email"], "ann.lee@example.com");
    assert_eq!(r.data()["code"], "ANNLEE");
    let r = create(
        &m.test_key,
        json!({"campaignId": c, "email": "ann@example.com", "name": "New Ann", "code": "ANN10"}),
    )
    .await;
    assert_eq!(
        r.status, 201,
        "old e-mail and code are free again: {:?}",
        r.body
    );
    // A letter-case change of one's own code or e-mail is not a clash.
    let r = call(
        "PUT",
        &path,
        k,
        Some(json!({"email": "Ann.Lee@Example.com", "code": "annlee"})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["code"], "annlee");
    let r = call(
        "GET",
        "/api/v1/affiliates?email=ann.lee@example.com",
        k,
        None,
    )
    .await;
    assert_eq!(ids(&r), [ann_id.as_str()]);

    call("GET", "/api/v1/affiliates/aff_nope", k, None)
        .await
        .assert_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn guards_hold_the_lookup_attributes_and_move_with_changes() {
    let app = app_for(server()).await;
    let m = merchant().await;
    let tenant = Tenant::new(m.account_id.clone(), Mode::Test);
    let c = id(&campaign(&m.test_key, json!({})).await);
    let r = create(
        &m.test_key,
        json!({"campaignId": c, "email": "Gail@Example.com", "name": "G", "code": "GailCode"}),
    )
    .await;
    let aff = id(r.data());
    let code_guard = app
        .store
        .get_item(&keys::code_guard(&tenant, "GAILCODE"), GUARD_SK)
        .await
        .unwrap()
        .expect("code guard");
    assert_eq!(string_of(&code_guard, "affiliateId"), Some(aff.as_str()));
    assert_eq!(string_of(&code_guard, "campaignId"), Some(c.as_str()));
    assert_eq!(
        string_of(&code_guard, "tenant"),
        Some(tenant.key().as_str())
    );
    let email_guard = keys::email_guard(&tenant, &c, "gail@example.com");
    assert!(app
        .store
        .get_item(&email_guard, GUARD_SK)
        .await
        .unwrap()
        .is_some());

    let r = call(
        "PUT",
        &format!("/api/v1/affiliates/{aff}"),
        Some(&m.test_key),
        Some(json!({"code": "Gail2", "email": "g2@example.com"})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let gone = |pk: String| {
        let store = app.store.clone();
        async move { store.get_item(&pk, GUARD_SK).await.unwrap().is_none() }
    };
    assert!(gone(keys::code_guard(&tenant, "gailcode")).await);
    assert!(gone(email_guard).await);
    assert!(!gone(keys::code_guard(&tenant, "gail2")).await);
    assert!(!gone(keys::email_guard(&tenant, &c, "g2@example.com")).await);
}

#[tokio::test]
async fn pending_affiliates_change_status_only_through_their_application() {
    let app = app_for(server()).await;
    let m = merchant().await;
    let k = Some(m.test_key.as_str());
    let c = id(&campaign(&m.test_key, json!({"isPublic": true})).await);
    let (aff, _) = pending(&app, &m, &c).await;
    let path = format!("/api/v1/affiliates/{aff}");
    let r = call("PUT", &path, k, Some(json!({"status": "ACTIVE"}))).await;
    r.assert_error(409, "INVALID_STATE");
    assert_eq!(r.body["error"]["details"]["currentState"], "PENDING");
    let r = call(
        "PUT",
        &path,
        k,
        Some(json!({"name": "Renamed", "payoutMethod": "WISE"})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["status"], "PENDING");
}

#[tokio::test]
async fn other_accounts_and_the_other_mode_see_404() {
    let m = merchant().await;
    let other = merchant().await;
    let c = id(&campaign(&m.test_key, json!({})).await);
    let r = create(
        &m.test_key,
        json!({"campaignId": c, "email": "iso@example.com", "name": "Iso"}),
    )
    .await;
    let aff = id(r.data());
    let path = format!("/api/v1/affiliates/{aff}");
    for key in [&m.live_key, &other.test_key, &other.live_key] {
        let k = Some(key.as_str());
        call("GET", &path, k, None)
            .await
            .assert_error(404, "NOT_FOUND");
        call("PUT", &path, k, Some(json!({"name": "Hijacked"})))
            .await
            .assert_error(404, "NOT_FOUND");
        // The campaign of another tenant cannot receive affiliates either.
        create(
            key,
            json!({"campaignId": c, "email": "x@example.com", "name": "X"}),
        )
        .await
        .assert_error(404, "NOT_FOUND");
        let r = call("GET", "/api/v1/affiliates?email=iso@example.com", k, None).await;
        assert_eq!(r.data().as_array().unwrap().len(), 0);
        let r = call(
            "GET",
            &format!("/api/v1/affiliates?campaign_id={c}"),
            k,
            None,
        )
        .await;
        assert_eq!(r.data().as_array().unwrap().len(), 0);
    }
    let got = call("GET", &path, Some(&m.test_key), None).await;
    assert_eq!(got.data()["name"], "Iso");
    // Codes are unique per tenant: the other mode may use the same one.
    let live_c = id(&campaign(&m.live_key, json!({})).await);
    let code = got.data()["code"].as_str().unwrap();
    let r = create(
        &m.live_key,
        json!({"campaignId": live_c, "email": "iso@example.com", "name": "Iso", "code": code}),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
}

#[tokio::test]
async fn affiliate_bodies_refuse_unknown_fields() {
    let m = merchant().await;
    let k = Some(m.test_key.as_str());
    let c = id(&campaign(&m.test_key, json!({})).await);
    for (field, value) in [
        ("status", json!("SUSPENDED")),
        ("id", json!("aff_01JD0000000000000000000000")),
        ("earned", json!({"USD": 100})),
    ] {
        let mut body = json!({"campaignId": c, "email": "u@example.com", "name": "U"});
        body[field] = value;
        let r = create(&m.test_key, body).await;
        r.assert_error(400, "VALIDATION_FAILED");
        assert_eq!(r.body["error"]["details"][0]["path"], json!([field]));
    }
    let r = create(
        &m.test_key,
        json!({"campaignId": c, "email": "u@example.com", "name": "U"}),
    )
    .await;
    let path = format!("/api/v1/affiliates/{}", id(r.data()));
    for (field, value) in [
        ("campaignId", json!(c)),
        ("id", json!("aff_x")),
        ("paid", json!({})),
        ("createdAt", json!("2020-01-01T00:00:00Z")),
    ] {
        let r = call("PUT", &path, k, Some(json!({ field: value }))).await;
        r.assert_error(400, "VALIDATION_FAILED");
        assert_eq!(r.body["error"]["details"][0]["path"], json!([field]));
    }
}

#[tokio::test]
async fn demo_seed_adds_affiliates_an_application_swipe_copy_and_payouts() {
    // The seed runs the payout job, which acts on its whole table: a table of its own.
    let server = fresh_server();
    let app = app_for(server).await;
    let keys_file = std::env::temp_dir().join(format!("refctl-demo-{}.json", ulid::Ulid::new()));
    let out = refctl::demo::seed(&app, &keys_file, &server.base)
        .await
        .unwrap();
    let _ = std::fs::remove_file(&keys_file);
    assert_eq!(out["seeded"], true, "{out}");
    let key = out["keys"]["testKey"].as_str().unwrap();
    let k = Some(key);
    let base = &server.base;
    let r = call_on(base, "GET", "/api/v1/affiliates?status=active", k, None).await;
    let mut codes: Vec<_> = r
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["code"].as_str().unwrap().to_string())
        .collect();
    codes.sort();
    assert_eq!(codes, ["DANA20", "DEMO10", "ERIN20", "FRANK20", "GRACE20"]);
    let r = call_on(base, "GET", "/api/v1/applications?status=pending", k, None).await;
    assert_eq!(r.data().as_array().unwrap().len(), 1);
    let r = call_on(base, "GET", "/api/v1/assets", k, None).await;
    assert_eq!(r.data()[0]["type"], "SWIPE_COPY");
    // Payouts in four states, one per partner.
    let mut states: Vec<_> = out["keys"]["testProgramme"]["payouts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["status"].as_str().unwrap().to_string())
        .collect();
    states.sort();
    assert_eq!(states, ["APPROVED", "INVOICE_UPLOADED", "PAID", "PENDING"]);
    // Live mode holds none of it.
    let live = out["keys"]["liveKey"].as_str();
    let r = call_on(base, "GET", "/api/v1/affiliates", live, None).await;
    assert_eq!(r.data().as_array().unwrap().len(), 0);
    // Seeding again changes nothing.
    let again = refctl::demo::seed(&app, &keys_file, &server.base)
        .await
        .unwrap();
    assert_eq!(again["seeded"], false);
    let _ = std::fs::remove_file(&keys_file);
}
