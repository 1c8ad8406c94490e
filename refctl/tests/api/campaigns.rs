//! Campaigns: create, get, list pages, partial update, public profile.

use serde_json::{json, Value};

use crate::support::{call, campaign, merchant};

#[tokio::test]
async fn create_get_and_partial_update_with_recurring_rules() {
    let m = merchant().await;
    let k = Some(m.test_key.as_str());
    let c = campaign(
        &m.test_key,
        json!({"commissionRecurring": true, "recurringMonthsLimit": 12, "minimumPayout": 25.5}),
    )
    .await;
    assert!(c["id"].as_str().unwrap().starts_with("cmp_"));
    assert_eq!(c["recurringMonthsLimit"], 12);
    assert_eq!(c["minimumPayout"], 25.5);
    assert_eq!(c["cookieDays"], 30);
    assert_eq!(c["holdDays"], 30);
    let path = format!("/api/v1/campaigns/{}", c["id"].as_str().unwrap());

    // Only the fields sent change.
    let r = call("PUT", &path, k, Some(json!({"name": "Renamed"}))).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["name"], "Renamed");
    assert_eq!(r.data()["recurringMonthsLimit"], 12);
    assert_eq!(r.data()["commissionValue"], 10);

    // The combination is validated after the merge.
    let r = call("PUT", &path, k, Some(json!({"commissionRecurring": false}))).await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert_eq!(
        r.body["error"]["details"][0]["path"],
        json!(["recurringMonthsLimit"])
    );
    let r = call("PUT", &path, k, Some(json!({"recurringMonthsLimit": null}))).await;
    assert_eq!(
        r.data()["recurringMonthsLimit"],
        Value::Null,
        "null means lifetime"
    );
    assert_eq!(r.data()["commissionRecurring"], true);
    let r = call("PUT", &path, k, Some(json!({"commissionRecurring": false}))).await;
    assert_eq!(r.status, 200);
    let r = call("PUT", &path, k, Some(json!({"recurringMonthsLimit": 6}))).await;
    r.assert_error(400, "VALIDATION_FAILED");

    let got = call("GET", &path, k, None).await;
    assert_eq!(got.data()["name"], "Renamed");
    assert_eq!(got.data()["commissionRecurring"], false);
    call("GET", "/api/v1/campaigns/cmp_nope", k, None)
        .await
        .assert_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn lists_page_newest_first_by_offset_and_cursor() {
    let m = merchant().await;
    let k = Some(m.test_key.as_str());
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(
            campaign(&m.test_key, json!({"name": format!("c{i}")})).await["id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    ids.reverse();
    let r = call("GET", "/api/v1/campaigns?limit=2", k, None).await;
    assert_eq!(r.body["meta"]["limit"], 2);
    assert_eq!(r.body["meta"]["hasMore"], true);
    let page1: Vec<_> = r
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(page1, ids[..2]);
    let mut seen = page1;
    let mut cursor = r.body["meta"]["nextCursor"].as_str().unwrap().to_string();
    // Opaque: no internal partition key (the account's, the layout's) in it.
    let shown = {
        use base64::Engine;
        let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        String::from_utf8(engine.decode(&cursor).unwrap()).unwrap()
    };
    assert!(
        !shown.contains("acct_") && !shown.contains("#CMP"),
        "{shown}"
    );
    loop {
        let r = call(
            "GET",
            &format!("/api/v1/campaigns?limit=2&cursor={cursor}"),
            k,
            None,
        )
        .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        seen.extend(
            r.data()
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_str().unwrap().to_string()),
        );
        match r.body["meta"]["nextCursor"].as_str() {
            Some(c) => cursor = c.to_string(),
            None => {
                assert_eq!(r.body["meta"]["hasMore"], false);
                break;
            }
        }
    }
    assert_eq!(seen, ids);
    let r = call("GET", "/api/v1/campaigns?limit=2&offset=3", k, None).await;
    let by_offset: Vec<_> = r
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(by_offset, ids[3..5]);
    assert_eq!(r.body["meta"]["offset"], 3);

    // Clamp, reject, and refuse mixed paging.
    let r = call("GET", "/api/v1/campaigns?limit=500", k, None).await;
    assert_eq!(r.body["meta"]["limit"], 100);
    call("GET", "/api/v1/campaigns?limit=0", k, None)
        .await
        .assert_error(400, "VALIDATION_FAILED");
    call("GET", "/api/v1/campaigns?limit=abc", k, None)
        .await
        .assert_error(400, "VALIDATION_FAILED");
    call("GET", "/api/v1/campaigns?offset=-1", k, None)
        .await
        .assert_error(400, "VALIDATION_FAILED");
    call(
        "GET",
        &format!("/api/v1/campaigns?offset=1&cursor={cursor}"),
        k,
        None,
    )
    .await
    .assert_error(400, "VALIDATION_FAILED");
    call("GET", "/api/v1/campaigns?cursor=bogus", k, None)
        .await
        .assert_error(400, "VALIDATION_FAILED");
    call("GET", "/api/v1/campaigns?colour=red", k, None)
        .await
        .assert_error(400, "VALIDATION_FAILED");
    // Another tenant's cursor positions nothing of ours.
    let other = merchant().await;
    call(
        "GET",
        &format!("/api/v1/campaigns?cursor={cursor}"),
        Some(&other.test_key),
        None,
    )
    .await
    .assert_error(400, "VALIDATION_FAILED");
}

#[tokio::test]
async fn public_profile_shows_terms_and_hides_the_rest() {
    let m = merchant().await;
    let c = campaign(
        &m.test_key,
        json!({"isPublic": true, "description": "Earn 10%", "metadata": {"internal": "secret"}, "minimumPayout": 100}),
    )
    .await;
    let r = call(
        "GET",
        &format!("/api/v1/campaigns/{}/public", c["id"].as_str().unwrap()),
        None,
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let mut keys: Vec<_> = r.data().as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "commissionRecurring",
            "commissionType",
            "commissionValue",
            "cookieDays",
            "currency",
            "description",
            "id",
            "name",
            "recurringMonthsLimit",
            "signupOpen"
        ]
    );
    assert_eq!(r.data()["signupOpen"], true);
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));

    let private = campaign(&m.test_key, json!({})).await;
    call(
        "GET",
        &format!(
            "/api/v1/campaigns/{}/public",
            private["id"].as_str().unwrap()
        ),
        None,
        None,
    )
    .await
    .assert_error(404, "NOT_FOUND");
    call(
        "GET",
        "/api/v1/campaigns/cmp_01JD0000000000000000000000/public",
        None,
        None,
    )
    .await
    .assert_error(404, "NOT_FOUND");
}
