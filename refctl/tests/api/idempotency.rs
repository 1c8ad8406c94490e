//! `Idempotency-Key` on the merchant's POSTs: a create sent again after a
//! lost answer is answered the first answer (`Idempotent-Replayed: true`)
//! and writes nothing; the same key with another request is 409; two at
//! once make one record; keys are per account and mode.

use serde_json::{json, Value};

use crate::support::{call, campaign, merchant, raw, server, Merchant, Resp};

/// POSTs `body` to `path` with `key` (the API key) and `idem` (the header).
async fn post(path: &str, key: &str, idem: &str, body: &Value) -> Resp {
    let headers = [
        ("content-type", "application/json"),
        ("idempotency-key", idem),
    ];
    let bytes = Some(body.to_string().into_bytes());
    raw(&server().base, "POST", path, Some(key), &headers, bytes).await
}

fn fresh_key() -> String {
    format!("retry-{}", ulid::Ulid::new())
}

/// How many records of `list` the merchant's test mode has with `field` = `value`.
async fn count(m: &Merchant, list: &str, field: &str, value: &Value) -> usize {
    let r = call("GET", &format!("{list}?limit=100"), Some(&m.test_key), None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.each(field).iter().filter(|v| *v == value).count()
}

/// Sends a create twice under one key: one record, the same answer again.
async fn replays(m: &Merchant, path: &str, list: &str, field: &str, body: Value) {
    let idem = fresh_key();
    let first = post(path, &m.test_key, &idem, &body).await;
    assert_eq!(first.status, 201, "{path}: {:?}", first.body);
    assert_eq!(first.header("idempotent-replayed"), None);
    let again = post(path, &m.test_key, &idem, &body).await;
    assert_eq!(again.status, 201, "{path}: {:?}", again.body);
    assert_eq!(again.header("idempotent-replayed"), Some("true"), "{path}");
    assert_eq!(again.data(), first.data(), "{path}");
    assert_eq!(count(m, list, field, &body[field]).await, 1, "{path}");
}

#[tokio::test]
async fn each_kind_of_create_sent_twice_under_one_key_makes_one_record() {
    let m = merchant().await;
    let c = campaign(&m.test_key, json!({"isPublic": true})).await;
    let cid = c["id"].as_str().unwrap();
    let unique = || ulid::Ulid::new().to_string();
    let name = format!("Spring {}", unique());
    let campaign_body =
        json!({"name": name, "commissionType": "PERCENTAGE", "commissionValue": 10});
    replays(
        &m,
        "/api/v1/campaigns",
        "/api/v1/campaigns",
        "name",
        campaign_body,
    )
    .await;
    let email = format!("a{}@example.com", unique().to_lowercase());
    let affiliate = json!({"campaignId": cid, "email": email, "name": "Ann"});
    replays(
        &m,
        "/api/v1/affiliates",
        "/api/v1/affiliates",
        "email",
        affiliate,
    )
    .await;
    let asset = json!({"campaignId": cid, "name": format!("Copy {}", unique()), "body": "Try it"});
    let assets = "/api/v1/assets";
    replays(&m, "/api/v1/assets/swipe-copy", assets, "name", asset).await;
    let url = format!("http://127.0.0.1:9/hooks/{}", unique());
    let endpoint = json!({"url": url, "description": "receiver"});
    let endpoints = "/api/v1/webhook-endpoints";
    replays(&m, endpoints, endpoints, "url", endpoint).await;
    let integration = json!({"provider": "STRIPE", "description": format!("billing {}", unique()),
                             "signingSecret": "whsec_5f1a2b3c4d5e6f708192a3b4c5d6e7f8"});
    let integrations = "/api/v1/integrations";
    replays(&m, integrations, integrations, "description", integration).await;
    let order = json!({"externalId": format!("o-{}", unique()), "amount": 10, "currency": "USD",
                       "conversionType": "SALE"});
    let idem = fresh_key();
    let postback = "/api/v1/conversions/postback";
    let first = post(postback, &m.test_key, &idem, &order).await;
    let again = post(postback, &m.test_key, &idem, &order).await;
    assert_eq!((first.status, again.status), (201, 201), "{:?}", again.body);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
}

#[tokio::test]
async fn the_same_key_with_another_request_is_refused_naming_it() {
    let m = merchant().await;
    let idem = fresh_key();
    let body = |n: &str| json!({"name": n, "commissionType": "PERCENTAGE", "commissionValue": 10});
    let first = post("/api/v1/campaigns", &m.test_key, &idem, &body("One")).await;
    assert_eq!(first.status, 201);
    let other = post("/api/v1/campaigns", &m.test_key, &idem, &body("Two")).await;
    other.assert_error(409, "ALREADY_EXISTS");
    let message = other.body["error"]["message"].as_str().unwrap();
    assert!(message.contains(&idem), "{message}");
    // Another path under the same key is another request too.
    let url = json!({"url": "http://127.0.0.1:9/hooks/x"});
    post("/api/v1/webhook-endpoints", &m.test_key, &idem, &url)
        .await
        .assert_error(409, "ALREADY_EXISTS");
    assert_eq!(
        count(&m, "/api/v1/campaigns", "name", &json!("Two")).await,
        0
    );
}

#[tokio::test]
async fn two_at_once_under_one_key_make_one_record() {
    let m = merchant().await;
    for _ in 0..3 {
        let idem = fresh_key();
        let name = format!("Race {}", ulid::Ulid::new());
        let body = json!({"name": name, "commissionType": "PERCENTAGE", "commissionValue": 10});
        let (a, b) = tokio::join!(
            post("/api/v1/campaigns", &m.test_key, &idem, &body),
            post("/api/v1/campaigns", &m.test_key, &idem, &body)
        );
        for r in [&a, &b] {
            assert!(matches!(r.status, 201 | 409), "{:?}", r.body);
        }
        let made: Vec<&Resp> = [&a, &b].into_iter().filter(|r| r.status == 201).collect();
        assert!(!made.is_empty());
        let ids: Vec<&Value> = made.iter().map(|r| &r.data()["id"]).collect();
        assert!(ids.windows(2).all(|w| w[0] == w[1]), "{ids:?}");
        assert_eq!(
            count(&m, "/api/v1/campaigns", "name", &json!(name)).await,
            1
        );
    }
}

#[tokio::test]
async fn keys_are_per_mode_a_failure_frees_its_key_and_bad_keys_are_refused() {
    let m = merchant().await;
    let idem = fresh_key();
    let body = json!({"name": "Modes", "commissionType": "PERCENTAGE", "commissionValue": 10});
    let test = post("/api/v1/campaigns", &m.test_key, &idem, &body).await;
    let live = post("/api/v1/campaigns", &m.live_key, &idem, &body).await;
    assert_eq!((test.status, live.status), (201, 201), "{:?}", live.body);
    assert_ne!(test.data()["id"], live.data()["id"]);
    assert_eq!(live.header("idempotent-replayed"), None);

    // A request refused is not kept: corrected, it runs under the same key.
    let idem = fresh_key();
    let bad = json!({"name": "", "commissionType": "PERCENTAGE", "commissionValue": 10});
    let refused = post("/api/v1/campaigns", &m.test_key, &idem, &bad).await;
    refused.assert_error(400, "VALIDATION_FAILED");
    let good = json!({"name": "Fixed", "commissionType": "PERCENTAGE", "commissionValue": 10});
    let fixed = post("/api/v1/campaigns", &m.test_key, &idem, &good).await;
    assert_eq!(fixed.status, 201, "{:?}", fixed.body);

    for bad_key in ["k".repeat(256), "tab\there".to_string()] {
        post("/api/v1/campaigns", &m.test_key, &bad_key, &good)
            .await
            .assert_error(400, "INVALID_REQUEST");
    }
    // Without a key, each request runs.
    let plain = json!({"name": "Twice", "commissionType": "PERCENTAGE", "commissionValue": 10});
    for _ in 0..2 {
        let r = call(
            "POST",
            "/api/v1/campaigns",
            Some(&m.test_key),
            Some(plain.clone()),
        )
        .await;
        assert_eq!(r.status, 201);
    }
    assert_eq!(
        count(&m, "/api/v1/campaigns", "name", &json!("Twice")).await,
        2
    );
}
