//! Risk over HTTP (contract section 12): for each code a case that flags and
//! a near miss that does not; floods that never attribute; holds, release
//! and the filters; and no response that carries an e-mail, an address or a
//! hash. Different client networks are different loopback addresses.

use std::net::IpAddr;
use std::sync::Mutex;

use api::domain::tenant::Mode;
use api::store::keys::{self, RECORD_SK};
use serde_json::{json, Value};

use crate::support::{app_for, campaign, merchant, raw_from, server, Resp};

/// Every response body the tests saw, for the sweep.
static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Sends JSON from a client at `ip` (a loopback address) to the shared
/// server, and keeps the answer for the sweep.
async fn from(ip: &str, method: &str, path: &str, key: Option<&str>, body: Option<Value>) -> Resp {
    let local = ip.parse::<IpAddr>().ok();
    let json = [("content-type", "application/json")];
    let (headers, bytes): (&[(&str, &str)], _) = match body {
        Some(b) => (&json, Some(serde_json::to_vec(&b).unwrap())),
        None => (&[], None),
    };
    let r = raw_from(local, &server().base, method, path, key, headers, bytes).await;
    SEEN.lock().unwrap().push(r.body.to_string());
    r
}

/// A merchant call (from the default address).
async fn api(key: &str, method: &str, path: &str, body: Option<Value>) -> Resp {
    from("127.0.0.1", method, path, Some(key), body).await
}

fn unique(prefix: &str) -> String {
    format!("{prefix}{}", &ulid::Ulid::new().to_string()[16..])
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// An ACTIVE affiliate of `campaign` with its code and e-mail.
async fn affiliate(key: &str, campaign: &str) -> (String, String, String) {
    let code = unique("R");
    let email = format!("{}@partners.example.com", code.to_lowercase());
    let r = api(
        key,
        "POST",
        "/api/v1/affiliates",
        Some(json!({"campaignId": campaign, "email": email, "name": "Risky", "code": code})),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    (id(r.data()), code, email)
}

/// A postback; the conversion.
async fn postback(key: &str, extra: Value) -> Value {
    let mut body = json!({"amount": 100, "currency": "USD", "externalId": unique("ord_"),
        "conversionType": "SALE"});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let r = api(key, "POST", "/api/v1/conversions/postback", Some(body)).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    r.data().clone()
}

/// A click from `ip`; its click id.
async fn click(ip: &str, campaign: &str, code: &str) -> String {
    let r = from(
        ip,
        "POST",
        "/api/v1/track/click",
        None,
        Some(json!({"campaignId": campaign, "ref": code})),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let mut keys: Vec<&String> = r.data().as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        ["clickId", "expiresAt", "sessionId"],
        "every click answers alike"
    );
    r.data()["clickId"].as_str().unwrap().to_string()
}

fn codes(record: &Value) -> Vec<String> {
    record["risk"]["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

fn risk_of(record: &Value) -> (String, Vec<String>, String) {
    (
        record["risk"]["level"].as_str().unwrap().to_string(),
        codes(record),
        record["status"].as_str().unwrap().to_string(),
    )
}

fn flagged(level: &str, code: &str, status: &str) -> (String, Vec<String>, String) {
    (level.into(), vec![code.into()], status.into())
}

fn clear(status: &str) -> (String, Vec<String>, String) {
    ("NONE".into(), vec![], status.into())
}

/// The ids of the events of a type about `object_id`.
async fn events_about(key: &str, kind: &str, object_id: &str) -> usize {
    let r = api(
        key,
        "GET",
        &format!("/api/v1/events?type={kind}&limit=100"),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["data"]["object"]["id"] == object_id || e["data"]["id"] == object_id)
        .count()
}

#[tokio::test]
async fn campaign_risk_settings_default_validate_and_update_in_part() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({})).await;
    assert_eq!(
        c["risk"],
        json!({"holdFlagged": true, "reviewAbove": null, "maxClicksPerHour": 30,
            "maxConversionsPerHour": 10})
    );
    for bad in [
        json!({"maxClicksPerHour": 0}),
        json!({"maxConversionsPerHour": 100001}),
        json!({"reviewAbove": 0}),
        json!({"holdFlagged": null}),
        json!({"unknown": 1}),
    ] {
        let r = api(
            k,
            "POST",
            "/api/v1/campaigns",
            Some(
                json!({"name": "x", "commissionType": "PERCENTAGE", "commissionValue": 1,
                "risk": bad}),
            ),
        )
        .await;
        r.assert_error(400, "VALIDATION_FAILED");
        let path = &r.body["error"]["details"][0]["path"];
        assert_eq!(path[0], "risk", "{bad}: {:?}", r.body);
    }
    let r = api(
        k,
        "PUT",
        &format!("/api/v1/campaigns/{}", id(&c)),
        Some(json!({"risk": {"reviewAbove": 250.5}})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["risk"]["reviewAbove"], json!(250.5));
    assert_eq!(
        r.data()["risk"]["maxClicksPerHour"],
        json!(30),
        "the rest stays"
    );
}

#[tokio::test]
async fn self_referral_is_held_released_and_filtered_and_a_near_miss_is_not() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"holdDays": 30})).await;
    let (_, code, email) = affiliate(k, &id(&c)).await;
    let own = postback(
        k,
        json!({"affiliateCode": code, "customerEmail": email.to_uppercase()}),
    )
    .await;
    assert_eq!(risk_of(&own), flagged("HIGH", "SELF_REFERRAL", "ON_HOLD"));
    let other = postback(
        k,
        json!({"affiliateCode": code, "customerEmail": format!("x{email}")}),
    )
    .await;
    assert_eq!(risk_of(&other), clear("PENDING"), "near miss");
    assert_eq!(events_about(k, "conversion.flagged", &id(&own)).await, 1);
    assert_eq!(events_about(k, "conversion.flagged", &id(&other)).await, 0);

    // Filters: status and risk level in any letter case.
    for (query, want) in [
        ("status=on_hold", vec![id(&own)]),
        ("risk_level=High", vec![id(&own)]),
        ("risk_level=none", vec![id(&other)]),
        ("status=pending", vec![id(&other)]),
    ] {
        let r = api(
            k,
            "GET",
            &format!("/api/v1/conversions?campaign_id={}&{query}", id(&c)),
            None,
        )
        .await;
        assert_eq!(r.status, 200, "{query}: {:?}", r.body);
        let got: Vec<String> = r.data().as_array().unwrap().iter().map(id).collect();
        assert_eq!(got, want, "{query}");
    }
    let summary = api(
        k,
        "GET",
        "/api/v1/conversions/summary?group_by=status",
        None,
    )
    .await;
    assert!(
        summary.body.to_string().contains("ON_HOLD"),
        "{:?}",
        summary.body
    );

    // Release: PENDING (its hold period is not over), flags kept; twice is 409.
    let path = format!("/api/v1/conversions/{}/release", id(&own));
    let r = api(k, "POST", &path, Some(json!({}))).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        risk_of(r.data()),
        flagged("HIGH", "SELF_REFERRAL", "PENDING")
    );
    api(k, "POST", &path, None)
        .await
        .assert_error(409, "INVALID_STATE");
    let path = format!("/api/v1/conversions/{}/release", id(&other));
    api(k, "POST", &path, None)
        .await
        .assert_error(409, "INVALID_STATE");
    assert_eq!(events_about(k, "conversion.released", &id(&own)).await, 1);
    let affiliate_hash = api::domain::referral::email_hash(&email);
    sweep(&["127.0.0."]);
    for text in SEEN
        .lock()
        .unwrap()
        .iter()
        .filter(|t| t.contains("\"flags\""))
    {
        let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let mut messages = Vec::new();
        collect_messages(&v, &mut messages);
        assert!(messages
            .iter()
            .all(|m| !m.contains(&affiliate_hash) && !m.contains(&email)));
    }
}

#[tokio::test]
async fn a_click_from_the_signup_network_is_held_and_one_from_another_is_not() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"isPublic": true, "autoApproveAffiliates": true})).await;
    let code = unique("N");
    let r = from(
        "127.0.0.7",
        "POST",
        "/api/v1/affiliates/signup",
        None,
        Some(
            json!({"campaignId": id(&c), "email": format!("{code}@example.org"), "name": "N",
            "code": code}),
        ),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let same = click("127.0.0.7", &id(&c), &code).await;
    let other = click("127.0.0.8", &id(&c), &code).await;
    let by_same = postback(k, json!({"clickId": same})).await;
    assert_eq!(
        risk_of(&by_same),
        flagged("HIGH", "SAME_NETWORK", "ON_HOLD")
    );
    assert_eq!(by_same["attribution"], "CLICK");
    let by_other = postback(k, json!({"clickId": other})).await;
    assert_eq!(risk_of(&by_other), clear("PENDING"), "near miss");
    // The network is stored as a salted hash only, and shown nowhere.
    let app = app_for(server()).await;
    let item = app.store.get_item(&same, RECORD_SK).await.unwrap().unwrap();
    let hash = item["ipHash"].as_s().unwrap().clone();
    let affiliate = api(
        k,
        "GET",
        &format!(
            "/api/v1/affiliates/{}",
            by_same["affiliateId"].as_str().unwrap()
        ),
        None,
    )
    .await;
    assert!(!affiliate.body.to_string().contains(&hash));
    sweep(&[&hash, "127.0.0."]);
}

#[tokio::test]
async fn a_click_for_a_campaign_not_found_counts_nothing() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"isPublic": true})).await;
    let (_, code, _) = affiliate(k, &id(&c)).await;
    let ip = "127.0.0.31";
    let before = chrono::Utc::now();
    let counted = click(ip, &id(&c), &code).await;
    let unknown = format!("cmp_{}", ulid::Ulid::new());
    let r = from(
        ip,
        "POST",
        "/api/v1/track/click",
        None,
        Some(json!({"campaignId": unknown, "ref": code})),
    )
    .await;
    r.assert_error(404, "NOT_FOUND");
    click(ip, &id(&c), &code).await;
    let after = chrono::Utc::now();
    let app = app_for(server()).await;
    let network = app
        .store
        .get_item(&counted, RECORD_SK)
        .await
        .unwrap()
        .unwrap()["ipHash"]
        .as_s()
        .unwrap()
        .clone();
    let code = code.to_uppercase();
    let mut hours: Vec<String> = [before, after]
        .iter()
        .map(|t| api::store::counters::hour_window(*t, *t).0)
        .collect();
    hours.dedup();
    let (mut known, mut unknown_items) = (0, 0);
    for hour in &hours {
        let count_at = |campaign: &str| keys::click_flood(campaign, &code, &network, hour);
        if let Some(item) = app
            .store
            .get_item(&count_at(&id(&c)), RECORD_SK)
            .await
            .unwrap()
        {
            known += item[api::store::attrs::COUNT]
                .as_n()
                .unwrap()
                .parse::<u64>()
                .unwrap();
        }
        if app
            .store
            .get_item(&count_at(&unknown), RECORD_SK)
            .await
            .unwrap()
            .is_some()
        {
            unknown_items += 1;
        }
    }
    assert_eq!(
        (known, unknown_items),
        (2, 0),
        "the two clicks counted, the one not found nothing"
    );
}

#[tokio::test]
async fn clicks_beyond_the_flood_limit_are_recorded_and_never_attribute() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(
        k,
        json!({"isPublic": true, "risk": {"maxClicksPerHour": 3}}),
    )
    .await;
    let (aff, code, _) = affiliate(k, &id(&c)).await;
    let mut clicks = Vec::new();
    for _ in 0..4 {
        clicks.push(click("127.0.0.9", &id(&c), &code).await);
    }
    let app = app_for(server()).await;
    let flooded: Vec<bool> = {
        let mut v = Vec::new();
        for clk in &clicks {
            let item = app.store.get_item(clk, RECORD_SK).await.unwrap().unwrap();
            v.push(
                item.get("flooded")
                    .is_some_and(|f| f.as_bool() == Ok(&true)),
            );
        }
        v
    };
    assert_eq!(
        flooded,
        [false, false, false, true],
        "only the one beyond 3"
    );
    // The third (at the limit) attributes; the fourth does not, and names
    // its flag on the payment it was sent with.
    let third = postback(k, json!({"clickId": clicks[2]})).await;
    assert_eq!(
        (third["affiliateId"].as_str(), risk_of(&third)),
        (Some(aff.as_str()), clear("PENDING"))
    );
    let fourth = postback(k, json!({"clickId": clicks[3]})).await;
    assert_eq!(fourth["status"], "UNATTRIBUTED");
    assert!(fourth["affiliateId"].is_null());
    let session = clicks[3].replacen("clk_", "ses_", 1);
    let by_session = postback(k, json!({"sessionId": session})).await;
    assert_eq!(by_session["status"], "UNATTRIBUTED");
    // Attributed by its code, a payment naming the flooded click is flagged (LOW, not held).
    let by_code = postback(k, json!({"clickId": clicks[3], "affiliateCode": code})).await;
    assert_eq!(risk_of(&by_code), flagged("LOW", "CLICK_FLOOD", "PENDING"));
    // Its session binds no one.
    let r = from(
        "127.0.0.9",
        "POST",
        "/api/v1/track/identify",
        None,
        Some(json!({"sessionId": session, "customerId": unique("cus_")})),
    )
    .await;
    assert_eq!((r.status, &r.data()["bound"]), (200, &json!(false)));
    // Another network's click still attributes.
    let elsewhere = click("127.0.0.10", &id(&c), &code).await;
    let ok = postback(k, json!({"clickId": elsewhere})).await;
    assert_eq!(ok["affiliateId"].as_str(), Some(aff.as_str()));
    sweep(&["127.0.0."]);
}

#[tokio::test]
async fn rapid_conversions_beyond_the_hourly_limit_are_flagged() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(
        k,
        json!({"isPublic": true, "risk": {"maxConversionsPerHour": 2, "holdFlagged": false}}),
    )
    .await;
    let (aff, code, _) = affiliate(k, &id(&c)).await;
    // One customer, three payments within one hour of occurredAt.
    let customer = unique("cus_");
    let mut got = Vec::new();
    for minute in [1, 20, 59] {
        let at = format!("2026-11-20T10:{minute:02}:00Z");
        let cnv = postback(
            k,
            json!({"affiliateCode": code, "customerId": customer, "occurredAt": at}),
        )
        .await;
        got.push(risk_of(&cnv));
    }
    assert_eq!(
        got,
        [
            clear("PENDING"),
            clear("PENDING"),
            flagged("HIGH", "RAPID_CONVERSIONS", "PENDING")
        ]
    );
    // The first payment is counted by the referral it bound; the hourly
    // counter holds the two after it.
    let tenant = api::domain::tenant::Tenant::new(m.account_id.clone(), Mode::Test);
    let key = api::domain::referral::CustomerKey::from_id(&customer).unwrap();
    let store = &server().app.store;
    let item = |pk: String| async move { store.get_item(&pk, RECORD_SK).await.unwrap().unwrap() };
    let referral = item(keys::referral(&tenant, &key)).await;
    assert_eq!(
        referral.get("firstPaymentCounted"),
        Some(&aws_sdk_dynamodb::types::AttributeValue::Bool(true))
    );
    let counter = keys::customer_hour_count(&tenant, &aff, &key.to_string(), "2026-11-20T10");
    assert_eq!(
        item(counter).await.get("count"),
        Some(&aws_sdk_dynamodb::types::AttributeValue::N("2".into()))
    );
    // Near miss: the next hour starts again.
    let next = postback(
        k,
        json!({"affiliateCode": code, "customerId": customer, "occurredAt": "2026-11-20T11:00:00Z"}),
    )
    .await;
    assert_eq!(risk_of(&next), clear("PENDING"));
    // Three customers through clicks from one network.
    let mut got = Vec::new();
    for _ in 0..3 {
        let clk = click("127.0.0.11", &id(&c), &code).await;
        got.push(risk_of(
            &postback(k, json!({"clickId": clk, "customerId": unique("cus_")})).await,
        ));
    }
    assert_eq!(
        got,
        [
            clear("PENDING"),
            clear("PENDING"),
            flagged("HIGH", "RAPID_CONVERSIONS", "PENDING")
        ]
    );
}

#[tokio::test]
async fn large_amounts_above_the_review_threshold_are_held() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"risk": {"reviewAbove": 1000}})).await;
    let (_, code, _) = affiliate(k, &id(&c)).await;
    let at = postback(k, json!({"affiliateCode": code, "amount": 1000})).await;
    assert_eq!(risk_of(&at), clear("PENDING"), "at the threshold");
    let above = postback(k, json!({"affiliateCode": code, "amount": 1000.01})).await;
    assert_eq!(risk_of(&above), flagged("HIGH", "LARGE_AMOUNT", "ON_HOLD"));
    // Held, it can still be reversed.
    let r = api(
        k,
        "POST",
        &format!("/api/v1/conversions/{}/reverse", id(&above)),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        risk_of(r.data()),
        flagged("HIGH", "LARGE_AMOUNT", "REVERSED")
    );
}

#[tokio::test]
async fn a_disposable_email_flags_an_application_and_a_near_miss_does_not() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"isPublic": true})).await;
    let mut apps = Vec::new();
    for domain in ["mailinator.com", "mailinator.com.example.org"] {
        let r = from(
            "127.0.0.12",
            "POST",
            "/api/v1/affiliates/signup",
            None,
            Some(
                json!({"campaignId": id(&c), "email": format!("{}@{domain}", unique("a")),
                "name": "Applicant"}),
            ),
        )
        .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
        let app_id = r.data()["applicationId"].as_str().unwrap().to_string();
        let r = api(k, "GET", &format!("/api/v1/applications/{app_id}"), None).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        apps.push(r.data().clone());
    }
    assert_eq!(
        (&apps[0]["risk"]["level"], codes(&apps[0])),
        (&json!("LOW"), vec!["DISPOSABLE_EMAIL".to_string()])
    );
    assert_eq!(apps[1]["risk"], json!({"level": "NONE", "flags": []}));
    assert_eq!(
        events_about(k, "application.flagged", &id(&apps[0])).await,
        1
    );
    assert_eq!(
        events_about(k, "application.flagged", &id(&apps[1])).await,
        0
    );
    let r = api(k, "GET", "/api/v1/applications?risk_level=LOW", None).await;
    let got: Vec<String> = r.data().as_array().unwrap().iter().map(id).collect();
    assert_eq!(got, vec![id(&apps[0])]);
    let message = apps[0]["risk"]["flags"][0]["message"].as_str().unwrap();
    assert!(
        !message.contains('@') && !message.contains("mailinator"),
        "{message}"
    );
}

/// No response seen so far holds any of `needles`, an e-mail address in a
/// risk message, or a 64-hex hash in a risk message.
fn sweep(needles: &[&str]) {
    for text in SEEN.lock().unwrap().iter() {
        for n in needles {
            assert!(!text.contains(n), "a response holds {n}: {text}");
        }
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            continue;
        };
        let mut messages = Vec::new();
        collect_messages(&v, &mut messages);
        for m in messages {
            assert!(!m.contains('@'), "{m}");
            assert!(
                !m.split(|c: char| !c.is_ascii_hexdigit())
                    .any(|w| w.len() >= 32),
                "{m}"
            );
        }
    }
}

fn collect_messages(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            if let Some(Value::Array(flags)) = map.get("flags") {
                out.extend(
                    flags
                        .iter()
                        .filter_map(|f| f["message"].as_str().map(String::from)),
                );
            }
            map.values().for_each(|x| collect_messages(x, out));
        }
        Value::Array(items) => items.iter().for_each(|x| collect_messages(x, out)),
        _ => {}
    }
}

#[tokio::test]
async fn a_customer_identified_by_id_first_and_by_the_affiliates_e_mail_later_is_held() {
    use api::domain::tracking::session_id_of_click;
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"isPublic": true})).await;
    let (aff, code, email) = affiliate(k, &id(&c)).await;
    let customer = unique("cus_");
    // The id alone first, then the id with the affiliate's own e-mail.
    for extra in [json!({}), json!({"customerEmail": email})] {
        let clk = click("127.0.0.11", &id(&c), &code).await;
        let mut body = json!({"customerId": customer});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let session = session_id_of_click(&clk).unwrap();
        let r = identify_in("127.0.0.11", &session, body).await;
        assert_eq!(r.data()["bound"], true, "{:?}", r.body);
    }
    // A payment naming the id alone finds the e-mail through the id's binding.
    let paid = postback(k, json!({"customerId": customer})).await;
    assert_eq!(paid["affiliateId"].as_str(), Some(aff.as_str()));
    assert_eq!(risk_of(&paid), flagged("HIGH", "SELF_REFERRAL", "ON_HOLD"));
    sweep(&["127.0.0."]);
}

#[tokio::test]
async fn a_customer_whose_id_and_e_mail_were_bound_apart_is_held_once_seen_together() {
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"isPublic": true})).await;
    // Identify: the id and the affiliate's own e-mail each bound on their
    // own (in both orders), then seen together: nothing new is bound, and
    // the id learns the e-mail. Then the same through a payment naming both.
    for scenario in ["id first", "e-mail first", "payment"] {
        let (aff, code, email) = affiliate(k, &id(&c)).await;
        let identify = |body: Value| identify_after_click(id(&c), code.clone(), body);
        let customer = unique("cus_");
        let mut apart = vec![
            json!({"customerId": customer}),
            json!({"customerEmail": email}),
        ];
        if scenario == "e-mail first" {
            apart.reverse();
        }
        for body in apart {
            let r = identify(body).await;
            assert_eq!(r.data()["bound"], true, "{scenario}: {:?}", r.body);
        }
        let both = json!({"customerId": customer, "customerEmail": email});
        if scenario == "payment" {
            let paid = postback(k, both).await;
            assert_eq!(risk_of(&paid), flagged("HIGH", "SELF_REFERRAL", "ON_HOLD"));
        } else {
            let r = identify(both).await;
            assert_eq!(r.data()["bound"], false, "{scenario}: {:?}", r.body);
        }
        let paid = postback(k, json!({"customerId": customer})).await;
        assert_eq!(paid["affiliateId"].as_str(), Some(aff.as_str()));
        assert_eq!(
            risk_of(&paid),
            flagged("HIGH", "SELF_REFERRAL", "ON_HOLD"),
            "{scenario}"
        );
    }
    sweep(&["127.0.0."]);
}

/// Identifies a customer through the session of a fresh click on `code`.
async fn identify_after_click(campaign: String, code: String, body: Value) -> Resp {
    use api::domain::tracking::session_id_of_click;
    let clk = click("127.0.0.12", &campaign, &code).await;
    identify_in("127.0.0.12", &session_id_of_click(&clk).unwrap(), body).await
}

/// Identifies a customer in `session`, from `ip`.
async fn identify_in(ip: &str, session: &str, mut body: Value) -> Resp {
    body["sessionId"] = json!(session);
    from(ip, "POST", "/api/v1/track/identify", None, Some(body)).await
}

#[tokio::test]
async fn a_session_past_its_places_still_links_its_customer_to_the_affiliates_e_mail() {
    use api::domain::tracking::{session_id_of_click, MAX_CUSTOMERS_PER_SESSION};
    let m = merchant().await;
    let k = m.test_key.as_str();
    let c = campaign(k, json!({"isPublic": true})).await;
    let (aff, code, email) = affiliate(k, &id(&c)).await;
    let session = session_id_of_click(&click("127.0.0.13", &id(&c), &code).await).unwrap();
    let identify = |body: Value| identify_in("127.0.0.13", &session, body);
    // The affiliate's own customer id first, then the session's other places.
    let own = unique("cus_");
    for n in 0..MAX_CUSTOMERS_PER_SESSION {
        let who = if n == 0 { own.clone() } else { unique("cus_") };
        let r = identify(json!({"customerId": who})).await;
        assert_eq!(r.data()["bound"], true, "{n}: {:?}", r.body);
    }
    // Full: the e-mail is not bound, but the id learns it.
    let r = identify(json!({"customerId": own, "customerEmail": email})).await;
    assert_eq!(r.data()["bound"], false, "{:?}", r.body);
    let paid = postback(k, json!({"customerId": own})).await;
    assert_eq!(paid["affiliateId"].as_str(), Some(aff.as_str()));
    assert_eq!(risk_of(&paid), flagged("HIGH", "SELF_REFERRAL", "ON_HOLD"));
    sweep(&["127.0.0."]);
}
