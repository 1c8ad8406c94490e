//! What an outside probe of the local host found, held over HTTP: every
//! answer in the envelope (the HTTP parser's included), numbers checked as
//! sent before any rounding, and required text that is only white space
//! refused everywhere.

use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::{json, Value};

use crate::support::{affiliate_with_code, call, campaign, merchant, server};

/// Sends raw bytes to the local host and returns its whole answer.
fn send_raw(request: &[u8]) -> String {
    let addr = server().base.trim_start_matches("http://").to_string();
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn a_control_character_in_a_header_still_gets_the_envelope() {
    server();
    let answer = send_raw(
        b"GET /api/v1/campaigns HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer rk_test_\x01\r\nConnection: close\r\n\r\n",
    );
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    let head = head.to_ascii_lowercase();
    assert!(head.contains("\r\nx-request-id: req_"), "{head}");
    assert!(head.contains("content-type: application/json"), "{head}");
    let body: Value = serde_json::from_str(body).unwrap();
    assert_eq!(body["success"], false);
    assert_eq!(body["error"]["code"], "UNAUTHORIZED");
    assert!(body["meta"]["requestId"].is_string());
}

fn message_at(r: &crate::support::Resp, field: &str) -> String {
    let details = r.body["error"]["details"].as_array().unwrap();
    let found = details.iter().find(|d| d["path"] == json!([field]));
    let found = found.unwrap_or_else(|| panic!("no issue at {field}: {:?}", r.body));
    found["message"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn numbers_are_checked_as_sent_before_any_rounding() {
    let m = merchant().await;
    let k = Some(m.test_key.as_str());
    let fixed = json!({"name": "Tiny", "commissionType": "FIXED", "commissionValue": 1e-30, "currency": "USD"});
    let r = call("POST", "/api/v1/campaigns", k, Some(fixed)).await;
    r.assert_error(400, "VALIDATION_FAILED");
    let said = message_at(&r, "commissionValue");
    assert!(said.contains("decimals"), "{said}");
    assert!(!said.contains("greater than 0"), "{said}");

    let c = campaign(&m.test_key, json!({})).await;
    let path = format!("/api/v1/campaigns/{}", c["id"].as_str().unwrap());
    for (field, value) in [("commissionValue", 1e-30), ("minimumPayout", 1e-29)] {
        let r = call("PUT", &path, k, Some(json!({ field: value }))).await;
        r.assert_error(400, "VALIDATION_FAILED");
        assert!(message_at(&r, field).contains("decimals"), "{:?}", r.body);
    }

    let postback = json!({"amount": 1e-30, "currency": "USD", "externalId": "tiny-1", "conversionType": "SALE"});
    let r = call("POST", "/api/v1/conversions/postback", k, Some(postback)).await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert!(
        message_at(&r, "amount").contains("decimals"),
        "{:?}",
        r.body
    );

    // 28 decimals is still a number; its own rule (USD has 2) answers.
    let postback = json!({"amount": 1e-28, "currency": "USD", "externalId": "tiny-2", "conversionType": "SALE"});
    let r = call("POST", "/api/v1/conversions/postback", k, Some(postback)).await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert!(
        message_at(&r, "amount").contains("at most 2 decimals"),
        "{:?}",
        r.body
    );
}

#[tokio::test]
async fn required_text_of_white_space_only_is_refused_everywhere() {
    let m = merchant().await;
    let k = Some(m.test_key.as_str());
    let blank = "   ";
    let cases = [
        (
            "/api/v1/campaigns".to_string(),
            json!({"name": blank, "commissionType": "PERCENTAGE", "commissionValue": 10}),
            "name",
        ),
        (
            "/api/v1/assets/swipe-copy".to_string(),
            json!({"name": blank, "body": "Text"}),
            "name",
        ),
        (
            "/api/v1/assets/swipe-copy".to_string(),
            json!({"name": "Copy", "body": "\r\n "}),
            "body",
        ),
    ];
    for (path, body, field) in &cases {
        let r = call("POST", path, k, Some(body.clone())).await;
        r.assert_error(400, "VALIDATION_FAILED");
        assert!(
            message_at(&r, field).contains("blank"),
            "{path}: {:?}",
            r.body
        );
    }

    let c = campaign(&m.test_key, json!({"isPublic": true})).await;
    let cmp = c["id"].as_str().unwrap();
    let aff = json!({"campaignId": cmp, "email": "blank@partners.example.com", "name": blank});
    let r = call("POST", "/api/v1/affiliates", k, Some(aff)).await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert!(message_at(&r, "name").contains("blank"), "{:?}", r.body);
    let signup = json!({"campaignId": cmp, "email": "visitor@example.org", "name": blank});
    let r = call("POST", "/api/v1/affiliates/signup", None, Some(signup)).await;
    r.assert_error(400, "VALIDATION_FAILED");

    // Edits: nothing changes.
    let a = affiliate_with_code(&m.test_key, cmp, "BLANKY").await;
    let edits = [
        (format!("/api/v1/campaigns/{cmp}"), "name"),
        (
            format!("/api/v1/affiliates/{}", a["id"].as_str().unwrap()),
            "name",
        ),
    ];
    for (path, field) in &edits {
        let r = call("PUT", path, k, Some(json!({ *field: blank }))).await;
        r.assert_error(400, "VALIDATION_FAILED");
        let r = call("GET", path, k, None).await;
        assert_ne!(r.data()[*field], blank);
    }

    let postback = json!({"amount": 10, "currency": "USD", "externalId": "blank-reason", "conversionType": "SALE"});
    let r = call("POST", "/api/v1/conversions/postback", k, Some(postback)).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let reverse = format!(
        "/api/v1/conversions/{}/reverse",
        r.data()["id"].as_str().unwrap()
    );
    let r = call("POST", &reverse, k, Some(json!({"reason": "   "}))).await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert!(message_at(&r, "reason").contains("blank"), "{:?}", r.body);
    let r = call("POST", &reverse, k, Some(json!({"reason": " refunded "}))).await;
    assert_eq!(r.status, 200, "{:?}", r.body);

    // The description says so: the pattern needs a character that is not white space.
    let doc = refctl::openapi::document();
    let schemas = &doc["components"]["schemas"];
    let name = crate::contract::rule_of(schemas, &schemas["CampaignCreate"]["properties"]["name"]);
    let pattern = name["pattern"].as_str().unwrap().to_string();
    assert!(pattern.contains(r"[^\s"), "{pattern}");
}

#[tokio::test]
async fn a_body_of_a_form_feed_is_no_empty_body() {
    let m = merchant().await;
    let c = campaign(&m.test_key, json!({})).await;
    let path = format!("/api/v1/campaigns/{}", c["id"].as_str().unwrap());
    for (body, empty) in [("\u{c}", false), (" \t\r\n", true)] {
        let r = crate::support::raw(
            &server().base,
            "PUT",
            &path,
            Some(&m.test_key),
            &[("content-type", "application/json")],
            Some(body.as_bytes().to_vec()),
        )
        .await;
        if empty {
            assert_eq!(r.status, 200, "{body:?}: {:?}", r.body);
        } else {
            assert_eq!(r.status, 400, "{body:?}: {:?}", r.body);
            assert!(r.header("x-request-id").is_some());
        }
    }
}
