//! Rate limits: counters in DynamoDB, 429 with Retry-After past the burst.

use crate::support::{call_on, limited_server, merchant_on, raw};

#[tokio::test]
async fn public_routes_are_limited_per_ip() {
    let base = &limited_server().base;
    let m = merchant_on(limited_server()).await;
    let c = call_on(
        base,
        "POST",
        "/api/v1/campaigns",
        Some(&m.test_key),
        Some(serde_json::json!({"name": "A", "commissionType": "PERCENTAGE", "commissionValue": 5, "isPublic": true})),
    )
    .await;
    let c = c.data();
    let path = format!("/api/v1/campaigns/{}/public", c["id"].as_str().unwrap());
    let mut statuses = Vec::new();
    // Seven requests against a limit of 3: however one window boundary
    // splits them, one window holds at least four.
    for i in 0..7 {
        // A spoofable header must not buy a fresh budget: the address is the
        // connection's, as API Gateway's request context gives it.
        let forwarded = format!("198.51.100.{i}");
        let r = raw(
            base,
            "GET",
            &path,
            None,
            &[("x-forwarded-for", forwarded.as_str())],
            None,
        )
        .await;
        statuses.push(r.status);
        if r.status == 429 {
            r.assert_error(429, "RATE_LIMIT_EXCEEDED");
            let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
            assert!((1..=60).contains(&retry));
            assert_eq!(r.header("ratelimit-limit"), Some("3"));
            assert_eq!(r.header("ratelimit-remaining"), Some("0"));
        } else {
            assert!(r.header("ratelimit-remaining").is_some());
        }
    }
    assert!(
        statuses.iter().filter(|s| **s == 429).count() >= 1,
        "{statuses:?}"
    );
    assert_eq!(statuses[0], 200);
    // The portal page reads the account it names: it is counted too, while
    // a page naming none reads nothing and is a document.
    let page = format!("/portal?account={}", m.account_id);
    let mut statuses = Vec::new();
    for _ in 0..7 {
        let r = raw(base, "GET", &page, None, &[], None).await;
        if r.status == 429 {
            r.assert_error(429, "RATE_LIMIT_EXCEEDED");
        }
        statuses.push(r.status);
        let r = raw(base, "GET", "/portal", None, &[], None).await;
        assert_eq!(r.status, 200);
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    assert_eq!(statuses[0], 200);
}

#[tokio::test]
async fn authenticated_routes_are_limited_per_account() {
    let base = &limited_server().base;
    let m = merchant_on(limited_server()).await;
    let other = merchant_on(limited_server()).await;
    let mut statuses = Vec::new();
    // 8 calls at 3 a minute: however a minute's end splits them, one side
    // holds at least 4.
    for _ in 0..8 {
        statuses.push(
            call_on(base, "GET", "/api/v1/campaigns", Some(&m.test_key), None)
                .await
                .status,
        );
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    // Another account has its own budget.
    assert_eq!(
        call_on(
            base,
            "GET",
            "/api/v1/campaigns",
            Some(&other.test_key),
            None
        )
        .await
        .status,
        200
    );
}
