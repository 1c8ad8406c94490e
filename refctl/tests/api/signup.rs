//! Public sign-up: 201 with a pending application, 409 for a duplicate e-mail
//! in any letter case, 404 for campaigns that are not public, and exactly one
//! affiliate when twenty sign-ups with one e-mail race.

use serde_json::{json, Value};

use crate::support::{call, campaign, merchant};

const SIGNUP: &str = "/api/v1/affiliates/signup";

async fn sign_up(body: Value) -> crate::support::Resp {
    call("POST", SIGNUP, None, Some(body)).await
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn signup_creates_a_pending_affiliate_and_refuses_duplicates() {
    let m = merchant().await;
    let k = Some(m.test_key.as_str());
    let a = id(&campaign(&m.test_key, json!({"isPublic": true})).await);
    let b = id(&campaign(&m.test_key, json!({"isPublic": true})).await);

    let r = sign_up(
        json!({"campaignId": a, "email": "Casey.Doe@Example.com", "name": "Casey",
        "website": "https://casey.example.com", "message": "Hello"}),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert!(r.header("ratelimit-remaining").is_some());
    let d = r.data();
    let mut keys: Vec<_> = d.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["affiliate", "applicationId"]);
    let aff = id(&d["affiliate"]);
    assert!(aff.starts_with("aff_"));
    assert_eq!(d["affiliate"]["status"], "PENDING");
    assert_eq!(d["affiliate"]["code"].as_str().unwrap().len(), 8);
    let app = d["applicationId"].as_str().unwrap().to_string();
    assert!(app.starts_with("app_"));

    // The merchant sees both, the e-mail as it was typed.
    let got = call("GET", &format!("/api/v1/affiliates/{aff}"), k, None).await;
    assert_eq!(got.data()["email"], "Casey.Doe@Example.com");
    assert_eq!(got.data()["status"], "PENDING");
    assert_eq!(got.data()["website"], "https://casey.example.com");
    let got = call("GET", &format!("/api/v1/applications/{app}"), k, None).await;
    assert_eq!(got.data()["status"], "PENDING");
    assert_eq!(got.data()["affiliateId"], aff.as_str());
    assert_eq!(got.data()["campaignId"], a.as_str());
    assert_eq!(got.data()["message"], "Hello");

    // Same e-mail in another letter case, same campaign: 409.
    sign_up(json!({"campaignId": a, "email": "casey.doe@EXAMPLE.COM", "name": "Casey"}))
        .await
        .assert_error(409, "ALREADY_EXISTS");
    // Same e-mail on another campaign: a new affiliate.
    let r =
        sign_up(json!({"campaignId": b, "email": "casey.doe@example.com", "name": "Casey"})).await;
    assert_eq!(r.status, 201, "{:?}", r.body);

    // A chosen code is kept, and unique per tenant in any letter case.
    let r = sign_up(
        json!({"campaignId": a, "email": "dana@example.com", "name": "Dana", "code": "Dana_2026"}),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(r.data()["affiliate"]["code"], "Dana_2026");
    sign_up(
        json!({"campaignId": b, "email": "erin@example.com", "name": "Erin", "code": "dana_2026"}),
    )
    .await
    .assert_error(409, "ALREADY_EXISTS");
    // Nothing of the refused sign-up was kept: the e-mail is still free.
    let r = sign_up(json!({"campaignId": b, "email": "erin@example.com", "name": "Erin"})).await;
    assert_eq!(r.status, 201, "{:?}", r.body);

    // Field rules.
    let r = sign_up(json!({"campaignId": a, "email": "not-an-email", "name": "X"})).await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert_eq!(r.body["error"]["details"][0]["path"], json!(["email"]));
    let r = sign_up(json!({"campaignId": a, "email": "x@example.com", "name": "X", "code": "a b"}))
        .await;
    r.assert_error(400, "VALIDATION_FAILED");
    assert_eq!(r.body["error"]["details"][0]["path"], json!(["code"]));
}

#[tokio::test]
async fn signup_answers_only_for_public_campaigns_with_signup_open() {
    let m = merchant().await;
    let private = id(&campaign(&m.test_key, json!({})).await);
    sign_up(json!({"campaignId": private, "email": "x@example.com", "name": "X"}))
        .await
        .assert_error(404, "NOT_FOUND");
    for unknown in ["cmp_01JD0000000000000000000000", "nope"] {
        sign_up(json!({"campaignId": unknown, "email": "x@example.com", "name": "X"}))
            .await
            .assert_error(404, "NOT_FOUND");
    }
    let closed = id(&campaign(&m.test_key, json!({"isPublic": true, "signupOpen": false})).await);
    let r = sign_up(json!({"campaignId": closed, "email": "x@example.com", "name": "X"})).await;
    r.assert_error(409, "INVALID_STATE");
    assert_eq!(r.body["error"]["details"]["currentState"], "SIGNUP_CLOSED");

    // Auto-approval: an ACTIVE affiliate and no application.
    let auto = id(&campaign(
        &m.test_key,
        json!({"isPublic": true, "autoApproveAffiliates": true}),
    )
    .await);
    let r = sign_up(json!({"campaignId": auto, "email": "x@example.com", "name": "X"})).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(r.data()["affiliate"]["status"], "ACTIVE");
    assert_eq!(r.data()["applicationId"], Value::Null);
    let apps = call(
        "GET",
        &format!("/api/v1/applications?campaign_id={auto}"),
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(apps.data().as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn signup_refuses_unknown_fields() {
    let m = merchant().await;
    let c = id(&campaign(&m.test_key, json!({"isPublic": true})).await);
    for (field, value) in [
        ("status", json!("ACTIVE")),
        ("id", json!("aff_01JD0000000000000000000000")),
        ("payoutMethod", json!("PAYPAL")),
        ("metadata", json!({"a": "b"})),
    ] {
        let mut body = json!({"campaignId": c, "email": "x@example.com", "name": "X"});
        body[field] = value;
        let r = sign_up(body).await;
        r.assert_error(400, "VALIDATION_FAILED");
        assert_eq!(r.body["error"]["details"][0]["path"], json!([field]));
    }
    // None of them created anything.
    let list = call(
        "GET",
        "/api/v1/affiliates?email=x@example.com",
        Some(&m.test_key),
        None,
    )
    .await;
    assert_eq!(list.data().as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn twenty_concurrent_signups_with_one_email_make_one_affiliate() {
    let m = merchant().await;
    let c = id(&campaign(&m.test_key, json!({"isPublic": true})).await);
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            // Letter case varies too: it is one mailbox.
            let email = if i % 2 == 0 {
                "race@example.com"
            } else {
                "RACE@example.com"
            };
            let body = json!({"campaignId": c, "email": email, "name": format!("R{i}")});
            tokio::spawn(async move { sign_up(body).await })
        })
        .collect();
    let mut statuses = Vec::new();
    for t in tasks {
        let r = t.await.unwrap();
        if r.status != 201 {
            r.assert_error(409, "ALREADY_EXISTS");
        }
        statuses.push(r.status);
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    let k = Some(m.test_key.as_str());
    let list = call(
        "GET",
        &format!("/api/v1/affiliates?campaign_id={c}"),
        k,
        None,
    )
    .await;
    assert_eq!(list.data().as_array().unwrap().len(), 1, "{:?}", list.body);
    let apps = call(
        "GET",
        &format!("/api/v1/applications?campaign_id={c}"),
        k,
        None,
    )
    .await;
    assert_eq!(apps.data().as_array().unwrap().len(), 1);
}
