//! Request-body rules of the contract: content type, syntax, schema, size.

use serde_json::json;

use crate::support::{call, merchant, raw, server};

#[tokio::test]
async fn content_type_syntax_and_size_give_invalid_request() {
    let m = merchant().await;
    let base = &server().base;
    let body = br#"{"name":"A","commissionType":"PERCENTAGE","commissionValue":5}"#.to_vec();
    let post = |headers: Vec<(&'static str, &'static str)>, body: Vec<u8>| {
        let key = m.test_key.clone();
        async move {
            raw(
                base,
                "POST",
                "/api/v1/campaigns",
                Some(&key),
                &headers,
                Some(body),
            )
            .await
        }
    };
    post(vec![], body.clone())
        .await
        .assert_error(400, "INVALID_REQUEST");
    post(vec![("content-type", "text/plain")], body.clone())
        .await
        .assert_error(400, "INVALID_REQUEST");
    post(
        vec![("content-type", "application/json")],
        b"{\"name\": ".to_vec(),
    )
    .await
    .assert_error(400, "INVALID_REQUEST");
    let mut big =
        br#"{"name":"A","commissionType":"PERCENTAGE","commissionValue":5,"description":""#
            .to_vec();
    big.extend(std::iter::repeat_n(b'x', 65 * 1024));
    big.extend(br#""}"#);
    post(vec![("content-type", "application/json")], big)
        .await
        .assert_error(400, "INVALID_REQUEST");
    // Parameters on the media type are fine.
    let ok = post(
        vec![("content-type", "application/json; charset=utf-8")],
        body,
    )
    .await;
    assert_eq!(ok.status, 201, "{:?}", ok.body);
}

#[tokio::test]
async fn schema_problems_give_validation_failed_with_paths() {
    let m = merchant().await;
    let k = Some(m.test_key.as_str());
    let cases = [
        (
            json!({"name": "A", "commissionType": "PERCENTAGE", "commissionValue": 5, "id": "cmp_x"}),
            json!(["id"]),
            "unrecognized_keys",
        ),
        (
            json!({"name": "A", "commissionType": "PERCENTAGE", "commissionValue": "5"}),
            json!(["commissionValue"]),
            "invalid_type",
        ),
        (
            json!({"name": 7, "commissionType": "PERCENTAGE", "commissionValue": 5}),
            json!(["name"]),
            "invalid_type",
        ),
        (
            json!({"commissionType": "PERCENTAGE", "commissionValue": 5}),
            json!(["name"]),
            "required",
        ),
        (
            json!({"name": "A", "commissionType": "BOGUS", "commissionValue": 5}),
            json!(["commissionType"]),
            "invalid_value",
        ),
        (
            json!({"name": "A", "commissionType": "PERCENTAGE", "commissionValue": 5, "metadata": {"a": 1}}),
            json!(["metadata", "a"]),
            "invalid_type",
        ),
        // A fraction where a whole number is due.
        (
            json!({"name": "A", "commissionType": "PERCENTAGE", "commissionValue": 5, "cookieDays": 1.5}),
            json!(["cookieDays"]),
            "invalid_type",
        ),
    ];
    for (body, path, code) in cases {
        let r = call("POST", "/api/v1/campaigns", k, Some(body.clone())).await;
        r.assert_error(400, "VALIDATION_FAILED");
        let issue = &r.body["error"]["details"][0];
        assert_eq!(issue["path"], path, "{body} -> {:?}", r.body);
        assert_eq!(issue["code"], code, "{body} -> {:?}", r.body);
        assert!(issue["message"].is_string());
    }
    // An array where an object is due.
    let r = call("POST", "/api/v1/campaigns", k, Some(json!([1, 2]))).await;
    r.assert_error(400, "VALIDATION_FAILED");
    // Domain rules report every broken field at once.
    let r = call(
        "POST",
        "/api/v1/campaigns",
        k,
        Some(json!({"name": "", "commissionType": "PERCENTAGE", "commissionValue": 500, "cookieDays": 0})),
    )
    .await;
    r.assert_error(400, "VALIDATION_FAILED");
    let paths: Vec<_> = r.body["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"][0].clone())
        .collect();
    for p in ["name", "commissionValue", "cookieDays"] {
        assert!(paths.contains(&json!(p)), "{p} missing from {paths:?}");
    }
    // Nothing was created by any of it.
    let list = call("GET", "/api/v1/campaigns", k, None).await;
    assert_eq!(list.data().as_array().unwrap().len(), 0);
    // A whole number written as `54.0` or `1e1` is that number.
    let body = json!({"name": "A", "commissionType": "PERCENTAGE", "commissionValue": 5,
        "cookieDays": 54.0, "holdDays": serde_json::Value::Number("1e1".parse().unwrap())});
    let r = call("POST", "/api/v1/campaigns", k, Some(body)).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(
        (&r.data()["cookieDays"], &r.data()["holdDays"]),
        (&json!(54), &json!(10))
    );
}
