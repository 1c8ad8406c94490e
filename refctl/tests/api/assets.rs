//! Assets: swipe-copy create, PATCH with metadata merge, soft delete to
//! ARCHIVED, lists that hide archived assets, state and type rules.

use api::domain::asset::{Asset, AssetStatus, AssetType};
use api::domain::edit::Stamps;
use api::domain::tenant::{Mode, Tenant};
use api::domain::timestamp;
use api::store::assets;
use serde_json::{json, Map, Value};

use crate::support::{app_for, call, campaign, merchant, server, Merchant};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

fn ids(r: &crate::support::Resp) -> Vec<String> {
    r.data().as_array().unwrap().iter().map(id).collect()
}

async fn swipe(key: &str, body: Value) -> crate::support::Resp {
    call("POST", "/api/v1/assets/swipe-copy", Some(key), Some(body)).await
}

fn many_keys(n: usize) -> Value {
    Value::Object(
        (0..n)
            .map(|i| (format!("k{i}"), json!("v")))
            .collect::<Map<String, Value>>(),
    )
}

#[tokio::test]
async fn swipe_copy_create_get_and_patch() {
    let m = merchant().await;
    let k = Some(m.test_key.as_str());
    let c = id(&campaign(&m.test_key, json!({})).await);
    let r = swipe(
        &m.test_key,
        json!({"name": "Launch mail", "body": "Try it: {{link}}", "campaignId": c,
            "metadata": {"channel": "email", "lang": "en"}}),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let a = r.data().clone();
    assert!(id(&a).starts_with("ast_"));
    assert_eq!(a["object"], "asset");
    assert_eq!(a["type"], "SWIPE_COPY");
    assert_eq!(a["status"], "FINALIZED");
    assert_eq!(a["campaignId"], c.as_str());
    assert_eq!(a["archivedAt"], Value::Null);
    assert!(a.get("version").is_none());
    let path = format!("/api/v1/assets/{}", id(&a));
    assert_eq!(call("GET", &path, k, None).await.data(), &a);

    let r = call(
        "PATCH",
        &path,
        k,
        Some(json!({"body": "Now 60 days free: {{link}}", "metadata": {"lang": null, "season": "spring"}})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["body"], "Now 60 days free: {{link}}");
    assert_eq!(r.data()["name"], "Launch mail");
    assert_eq!(
        r.data()["metadata"],
        json!({"channel": "email", "season": "spring"})
    );
    assert_eq!(call("GET", &path, k, None).await.data(), r.data());
    let r = call("PATCH", &path, k, Some(json!({"name": "Renamed"}))).await;
    assert_eq!(r.data()["name"], "Renamed");
    assert_eq!(r.data()["body"], "Now 60 days free: {{link}}");

    // Metadata limits: 51 keys on create, or 51 after a merge, are refused.
    let r = swipe(
        &m.test_key,
        json!({"name": "N", "body": "B", "metadata": many_keys(51)}),
    )
    .await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert_eq!(r.body["error"]["details"][0]["path"], json!(["metadata"]));
    call("PATCH", &path, k, Some(json!({"metadata": many_keys(49)})))
        .await
        .assert_error(400, "VALIDATION_FAILED");
    let r = call("PATCH", &path, k, Some(json!({"metadata": many_keys(48)}))).await;
    assert_eq!(r.status, 200, "50 keys is the limit: {:?}", r.body);
    let r = call("PATCH", &path, k, Some(json!({"metadata": null}))).await;
    assert_eq!(r.data()["metadata"], json!({}));

    // Field rules.
    for body in [
        json!({"name": null}),
        json!({"body": null}),
        json!({"body": ""}),
        json!({"name": "x".repeat(201)}),
        json!({"body": "x".repeat(20_001)}),
        json!({"metadata": {"k": "x".repeat(501)}}),
    ] {
        call("PATCH", &path, k, Some(body.clone()))
            .await
            .assert_error(400, "VALIDATION_FAILED");
    }
    for body in [
        json!({"name": "", "body": "B"}),
        json!({"name": "N"}),
        json!({"name": "N", "body": "B", "campaignId": "cmp_01JD0000000000000000000000"}),
    ] {
        let r = swipe(&m.test_key, body.clone()).await;
        assert!([400, 404].contains(&r.status), "{body} -> {:?}", r.body);
    }
    call("GET", "/api/v1/assets/ast_nope", k, None)
        .await
        .assert_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn delete_archives_once_and_lists_hide_archived() {
    let m = merchant().await;
    let k = Some(m.test_key.as_str());
    let c = id(&campaign(&m.test_key, json!({})).await);
    let keep = id(swipe(
        &m.test_key,
        json!({"name": "Keep", "body": "K", "campaignId": c}),
    )
    .await
    .data());
    let gone = id(swipe(
        &m.test_key,
        json!({"name": "Gone", "body": "G", "campaignId": c}),
    )
    .await
    .data());
    let path = format!("/api/v1/assets/{gone}");
    let r = call("GET", "/api/v1/assets", k, None).await;
    assert_eq!(ids(&r), [gone.clone(), keep.clone()]);

    let r = call("DELETE", &path, k, None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["status"], "ARCHIVED");
    assert!(r.data()["archivedAt"].is_string());
    assert_eq!(r.data()["name"], "Gone");
    assert_eq!(r.data()["body"], "G");
    let r = call("DELETE", &path, k, None).await;
    r.assert_error(409, "INVALID_STATE");
    assert_eq!(r.body["error"]["details"]["currentState"], "ARCHIVED");
    let r = call("PATCH", &path, k, Some(json!({"name": "Back"}))).await;
    r.assert_error(409, "INVALID_STATE");
    assert_eq!(r.body["error"]["details"]["currentState"], "ARCHIVED");
    // Still readable by id.
    let r = call("GET", &path, k, None).await;
    assert_eq!(r.data()["status"], "ARCHIVED");
    assert_eq!(r.data()["name"], "Gone");

    let r = call("GET", "/api/v1/assets", k, None).await;
    assert_eq!(ids(&r), [keep.as_str()]);
    let r = call("GET", &format!("/api/v1/assets?campaign_id={c}"), k, None).await;
    assert_eq!(ids(&r), [keep.as_str()]);
    let r = call("GET", "/api/v1/assets?status=archived", k, None).await;
    assert_eq!(ids(&r), [gone.as_str()]);
    let r = call(
        "GET",
        &format!("/api/v1/assets?status=ARCHIVED&campaign_id={c}&type=swipe_copy"),
        k,
        None,
    )
    .await;
    assert_eq!(ids(&r), [gone.as_str()]);
    let r = call("GET", "/api/v1/assets?status=finalized", k, None).await;
    assert_eq!(ids(&r), [keep.as_str()]);
    let r = call("GET", "/api/v1/assets?type=IMAGE", k, None).await;
    assert_eq!(ids(&r), Vec::<String>::new());
    call("GET", "/api/v1/assets?status=deleted", k, None)
        .await
        .assert_error(400, "VALIDATION_FAILED");
}

/// An asset of another type or state, as the dashboard's upload flow makes them.
async fn stored(m: &Merchant, kind: AssetType, status: AssetStatus) -> String {
    let app = app_for(server()).await;
    let now = timestamp::now();
    let a = Asset {
        id: api::domain::ids::new_id(api::domain::ids::IdKind::Asset),
        kind,
        name: "Banner".into(),
        body: None,
        campaign_id: None,
        metadata: Default::default(),
        status,
        stamps: Stamps::new(now),
        archived_at: None,
    };
    let tenant = Tenant::new(m.account_id.clone(), Mode::Test);
    assets::insert(&app.store, &tenant, &a).await.unwrap();
    a.id
}

#[tokio::test]
async fn body_is_for_swipe_copy_and_drafts_cannot_change() {
    let m = merchant().await;
    let k = Some(m.test_key.as_str());
    let image = stored(&m, AssetType::Image, AssetStatus::Finalized).await;
    let path = format!("/api/v1/assets/{image}");
    let r = call("PATCH", &path, k, Some(json!({"body": "text"}))).await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert_eq!(r.body["error"]["details"][0]["path"], json!(["body"]));
    let r = call(
        "PATCH",
        &path,
        k,
        Some(json!({"name": "Hero banner", "metadata": {"w": "1200"}})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["type"], "IMAGE");
    assert_eq!(r.data()["body"], Value::Null);

    let draft = stored(&m, AssetType::File, AssetStatus::Draft).await;
    let path = format!("/api/v1/assets/{draft}");
    let r = call("PATCH", &path, k, Some(json!({"name": "x"}))).await;
    r.assert_error(409, "INVALID_STATE");
    assert_eq!(r.body["error"]["details"]["currentState"], "DRAFT");
    call("DELETE", &path, k, None)
        .await
        .assert_error(409, "INVALID_STATE");
    // Drafts are listed (only archived assets are hidden).
    let r = call("GET", "/api/v1/assets", k, None).await;
    assert_eq!(ids(&r), [draft.clone(), image.clone()]);
    let r = call("GET", "/api/v1/assets?status=draft", k, None).await;
    assert_eq!(ids(&r), [draft]);
}

#[tokio::test]
async fn other_accounts_and_the_other_mode_see_404() {
    let m = merchant().await;
    let other = merchant().await;
    let c = id(&campaign(&m.test_key, json!({})).await);
    let a = id(swipe(
        &m.test_key,
        json!({"name": "Mine", "body": "B", "campaignId": c}),
    )
    .await
    .data());
    let path = format!("/api/v1/assets/{a}");
    for key in [&m.live_key, &other.test_key, &other.live_key] {
        let k = Some(key.as_str());
        call("GET", &path, k, None)
            .await
            .assert_error(404, "NOT_FOUND");
        call("PATCH", &path, k, Some(json!({"name": "Hijacked"})))
            .await
            .assert_error(404, "NOT_FOUND");
        call("DELETE", &path, k, None)
            .await
            .assert_error(404, "NOT_FOUND");
        // Another tenant's campaign cannot be attached to.
        swipe(key, json!({"name": "N", "body": "B", "campaignId": c}))
            .await
            .assert_error(404, "NOT_FOUND");
        let r = call("GET", "/api/v1/assets", k, None).await;
        assert_eq!(r.data().as_array().unwrap().len(), 0);
    }
    let r = call("GET", &path, Some(&m.test_key), None).await;
    assert_eq!(r.data()["name"], "Mine");
    assert_eq!(r.data()["status"], "FINALIZED");
}

#[tokio::test]
async fn asset_bodies_refuse_unknown_fields() {
    let m = merchant().await;
    let k = Some(m.test_key.as_str());
    for (field, value) in [
        ("status", json!("ARCHIVED")),
        ("type", json!("IMAGE")),
        ("id", json!("ast_01JD0000000000000000000000")),
    ] {
        let mut body = json!({"name": "N", "body": "B"});
        body[field] = value;
        let r = swipe(&m.test_key, body).await;
        r.assert_error(400, "VALIDATION_FAILED");
        assert_eq!(r.body["error"]["details"][0]["path"], json!([field]));
    }
    let a = id(swipe(&m.test_key, json!({"name": "N", "body": "B"}))
        .await
        .data());
    let path = format!("/api/v1/assets/{a}");
    for (field, value) in [
        ("status", json!("ARCHIVED")),
        ("campaignId", json!("cmp_01JD0000000000000000000000")),
        ("type", json!("LINK")),
    ] {
        let r = call("PATCH", &path, k, Some(json!({ field: value }))).await;
        r.assert_error(400, "VALIDATION_FAILED");
        assert_eq!(r.body["error"]["details"][0]["path"], json!([field]));
    }
    let r = call("GET", &path, k, None).await;
    assert_eq!(r.data()["status"], "FINALIZED");
    assert_eq!(r.data()["type"], "SWIPE_COPY");
}
