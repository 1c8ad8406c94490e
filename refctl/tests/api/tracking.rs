//! Public tracking: clicks, sessions, first-touch referrals, CORS, and the
//! browser script's files on the local host.

use api::domain::referral::{email_hash, CustomerKey};
use api::domain::tenant::{Mode, Tenant};
use api::domain::timestamp;
use api::domain::tracking::{self, Click, ClickIds};
use api::store::keys::{self, RECORD_SK};
use api::store::{clicks, Item};
use serde_json::{json, Value};

use crate::support::{
    affiliate_with_code, app_for, call, campaign, merchant, raw, server, Merchant,
};

const CLICK: &str = "/api/v1/track/click";
const IDENTIFY: &str = "/api/v1/track/identify";

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// A public campaign with one affiliate: (merchant, campaign id, affiliate id).
async fn setup(code: &str, extra: Value) -> (Merchant, String, String) {
    let m = merchant().await;
    let mut body = json!({"isPublic": true});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let c = id(&campaign(&m.test_key, body).await);
    let a = id(&affiliate_with_code(&m.test_key, &c, code).await);
    (m, c, a)
}

async fn click(campaign_id: &str, code: &str) -> Value {
    let r = call(
        "POST",
        CLICK,
        None,
        Some(json!({"campaignId": campaign_id, "ref": code})),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    r.data().clone()
}

async fn identify(body: Value) -> crate::support::Resp {
    call("POST", IDENTIFY, None, Some(body)).await
}

fn test_tenant(m: &Merchant) -> Tenant {
    Tenant::new(m.account_id.clone(), Mode::Test)
}

async fn stored(pk: &str) -> Option<Item> {
    let app = app_for(server()).await;
    app.store.get_item(pk, RECORD_SK).await.unwrap()
}

fn attr<'a>(item: &'a Item, name: &str) -> &'a str {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
        .unwrap_or_else(|| panic!("{name} missing in {item:?}"))
}

#[tokio::test]
async fn a_click_is_one_record_with_a_session_and_no_plain_ip() {
    let (m, c, a) = setup("Alice_1", json!({"cookieDays": 7})).await;
    // At the millisecond precision `expiresAt` is written with.
    let before = timestamp::parse_datetime(&timestamp::format(&timestamp::now())).unwrap();
    let r = call(
        "POST",
        CLICK,
        None,
        Some(json!({
            "campaignId": c, "ref": "alice_1",
            "url": "https://shop.example.com/?ref=alice_1", "referrer": "https://blog.example.org/",
        })),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert!(r.header("ratelimit-limit").is_some());
    // A browser script may read the request id and the rate limit's headers.
    let exposed = r
        .header("access-control-expose-headers")
        .unwrap_or_default();
    for name in ["X-Request-Id", "Retry-After", "RateLimit-Remaining"] {
        assert!(exposed.contains(name), "{exposed}");
    }
    let d = r.data();
    assert_eq!(
        d.as_object().unwrap().len(),
        3,
        "only the ids and expiry: {d}"
    );
    let click_id = d["clickId"].as_str().unwrap();
    let session_id = d["sessionId"].as_str().unwrap();
    assert!(click_id.starts_with("clk_") && session_id.starts_with("ses_"));
    assert_eq!(click_id[4..], session_id[4..], "one ULID");
    let expires = timestamp::parse_datetime(d["expiresAt"].as_str().unwrap()).unwrap();
    let window = expires - before;
    assert!(
        window >= chrono::Duration::days(7)
            && window < chrono::Duration::days(7) + chrono::Duration::minutes(1),
        "{window}"
    );

    let item = stored(click_id).await.expect("click stored under its id");
    assert_eq!(attr(&item, "tenant"), test_tenant(&m).key());
    assert_eq!(attr(&item, "campaignId"), c);
    assert_eq!(attr(&item, "affiliateId"), a);
    assert_eq!(attr(&item, "code"), "alice_1");
    assert_eq!(attr(&item, "expiresAt"), d["expiresAt"].as_str().unwrap());
    assert!(timestamp::parse_datetime(attr(&item, "createdAt")).is_some());
    assert_eq!(
        item["ttl"].as_n().unwrap(),
        &expires.timestamp().to_string(),
        "TTL in epoch seconds"
    );
    assert_eq!(
        attr(&item, "landingUrl"),
        "https://shop.example.com/?ref=alice_1"
    );
    assert_eq!(attr(&item, "referrer"), "https://blog.example.org/");
    let ip_hash = attr(&item, "ipHash");
    assert!(ip_hash.len() == 64 && ip_hash.bytes().all(|b| b.is_ascii_hexdigit()));
    for (name, value) in &item {
        let text = format!("{value:?}");
        assert!(
            !text.contains("127.0.0.1"),
            "{name} holds the plain IP: {text}"
        );
    }
    assert!(
        stored(session_id).await.is_none(),
        "a session is not a record of its own"
    );
}

#[tokio::test]
async fn clicks_need_a_public_campaign_and_one_of_its_codes() {
    let (m, c, _) = setup("Bob_1", json!({})).await;
    let k = &m.test_key;
    // Another campaign of the same merchant, with its own affiliate.
    let other = id(&campaign(k, json!({"isPublic": true})).await);
    affiliate_with_code(k, &other, "Carol_1").await;
    let private = id(&campaign(k, json!({"isPublic": false})).await);
    affiliate_with_code(k, &private, "Dave_1").await;

    click(&c, "BOB_1").await;
    for (campaign_id, code, why) in [
        (c.as_str(), "nobody", "unknown ref"),
        (c.as_str(), "Carol_1", "ref of another campaign"),
        (private.as_str(), "Dave_1", "campaign not public"),
        (
            "cmp_01JD3Q5W6X7Y8Z9A0B1C2D3E4F",
            "Bob_1",
            "unknown campaign",
        ),
        ("nope", "Bob_1", "malformed campaign id"),
        (c.as_str(), "b ob", "malformed code"),
    ] {
        call(
            "POST",
            CLICK,
            None,
            Some(json!({"campaignId": campaign_id, "ref": code})),
        )
        .await
        .assert_error(404, "NOT_FOUND");
        let _ = why;
    }
    // The same code in another tenant (the live mode of the same account) is another affiliate.
    let live = id(&campaign(&m.live_key, json!({"isPublic": true})).await);
    call(
        "POST",
        CLICK,
        None,
        Some(json!({"campaignId": live, "ref": "Bob_1"})),
    )
    .await
    .assert_error(404, "NOT_FOUND");

    // Malformed bodies.
    for body in [
        json!({"campaignId": c, "ref": "Bob_1", "extra": true}),
        json!({"campaignId": c}),
        json!({"campaignId": c, "ref": "Bob_1", "url": "x".repeat(2049)}),
        json!({"campaignId": c, "ref": "Bob_1", "referrer": "x".repeat(2049)}),
        json!({"campaignId": c, "ref": "Bob_1", "sessionId": "ses_nope"}),
        json!({"campaignId": 5, "ref": "Bob_1"}),
    ] {
        call("POST", CLICK, None, Some(body))
            .await
            .assert_error(400, "VALIDATION_FAILED");
    }
    let ok = call(
        "POST",
        CLICK,
        None,
        Some(json!({"campaignId": c, "ref": "Bob_1", "url": "x".repeat(2048)})),
    )
    .await;
    assert_eq!(ok.status, 201, "{:?}", ok.body);
}

#[tokio::test]
async fn tracking_routes_answer_cors_preflight() {
    for path in [CLICK, IDENTIFY] {
        let r = raw(
            &server().base,
            "OPTIONS",
            path,
            None,
            &[
                ("origin", "https://shop.example.com"),
                ("access-control-request-method", "POST"),
                ("access-control-request-headers", "content-type"),
            ],
            None,
        )
        .await;
        assert_eq!(r.status, 204, "{path}");
        assert_eq!(r.header("access-control-allow-origin"), Some("*"));
        assert!(r
            .header("access-control-allow-methods")
            .unwrap()
            .contains("POST"));
        assert!(r
            .header("access-control-allow-headers")
            .unwrap()
            .to_lowercase()
            .contains("content-type"));
        assert!(r.header("access-control-allow-credentials").is_none());
        // Errors carry the header too, so the browser can read them.
        let e = call("POST", path, None, Some(json!({}))).await;
        assert_eq!(e.status, 400);
        assert_eq!(e.header("access-control-allow-origin"), Some("*"));
    }
}

#[tokio::test]
async fn identify_binds_the_first_affiliate_and_keeps_it() {
    let (m, c, first) = setup("First_1", json!({})).await;
    let second = id(&affiliate_with_code(&m.test_key, &c, "Second_1").await);
    let s1 = click(&c, "First_1").await["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let s2 = click(&c, "second_1").await["sessionId"]
        .as_str()
        .unwrap()
        .to_string();

    let r = identify(json!({"sessionId": s1, "customerEmail": "Ann@Example.com"})).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert_eq!(
        r.data(),
        &json!({"sessionId": s1, "bound": true}),
        "no affiliate ids"
    );
    let r = identify(json!({"sessionId": s1, "customerEmail": "ann@example.com"})).await;
    assert_eq!(r.data()["bound"], false, "already bound");

    // The second affiliate's visitor turns out to be the same customer.
    let r = identify(json!({"sessionId": s2, "customerEmail": "  ANN@example.com "})).await;
    assert_eq!(r.data(), &json!({"sessionId": s2, "bound": false}));
    let hash = email_hash("ann@example.com");
    let r = identify(json!({"sessionId": s2, "customerEmailHash": hash})).await;
    assert_eq!(r.data()["bound"], false);
    // In capitals it is the same hash, bound already (as a postback reads it).
    let r = identify(json!({"sessionId": s2, "customerEmailHash": hash.to_uppercase()})).await;
    assert_eq!(r.data()["bound"], false, "{:?}", r.body);

    let tenant = test_tenant(&m);
    let email_key = CustomerKey::from_email_hash(&hash).unwrap();
    let item = stored(&keys::referral(&tenant, &email_key))
        .await
        .expect("referral stored");
    assert_eq!(attr(&item, "affiliateId"), first, "first touch kept");
    assert_ne!(first, second);
    assert_eq!(attr(&item, "campaignId"), c);
    assert_eq!(attr(&item, "tenant"), tenant.key());
    assert_eq!(attr(&item, "customerKey"), format!("email:{hash}"));
    assert_eq!(attr(&item, "source"), "IDENTIFY");
    assert_eq!(attr(&item, "sessionId"), s1);
    assert!(timestamp::parse_datetime(attr(&item, "boundAt")).is_some());
    for (name, value) in &item {
        let text = format!("{value:?}").to_lowercase();
        assert!(!text.contains("ann@"), "{name} holds the plain e-mail");
    }

    // A customer id the second visitor brings joins the e-mail's earlier binding.
    let r = identify(
        json!({"sessionId": s2, "customerId": "cus_42", "customerEmail": "ann@example.com"}),
    )
    .await;
    assert_eq!(r.data()["bound"], true);
    let cid = stored(&keys::referral(
        &tenant,
        &CustomerKey::from_id("cus_42").unwrap(),
    ))
    .await
    .unwrap();
    assert_eq!(attr(&cid, "affiliateId"), first);
    assert_eq!(attr(&cid, "linkedFrom"), format!("email:{hash}"));

    // A new customer known by two identities is bound to the session's affiliate once.
    let r = identify(
        json!({"sessionId": s2, "customerId": "cus_77", "customerEmail": "bea@example.com"}),
    )
    .await;
    assert_eq!(r.data()["bound"], true);
    // The id is linked from the e-mail bound with it (SELF_REFERRAL reads it).
    let email = CustomerKey::from_email("bea@example.com").unwrap();
    for (key, linked) in [
        (
            CustomerKey::from_id("cus_77").unwrap(),
            Some(email.to_string()),
        ),
        (email.clone(), None),
    ] {
        let item = stored(&keys::referral(&tenant, &key)).await.unwrap();
        assert_eq!(attr(&item, "affiliateId"), second);
        let got = item.get("linkedFrom").map(|v| v.as_s().unwrap().clone());
        assert_eq!(got, linked, "{key}");
    }
    // Both bound now: nothing new, whichever session names them.
    let r = identify(
        json!({"sessionId": s1, "customerId": "cus_77", "customerEmail": "bea@example.com"}),
    )
    .await;
    assert_eq!(r.data()["bound"], false);
    let item = stored(&keys::referral(
        &tenant,
        &CustomerKey::from_id("cus_77").unwrap(),
    ))
    .await
    .unwrap();
    assert_eq!(attr(&item, "affiliateId"), second, "first touch kept");
    // The same customer id in the live mode is another customer.
    let live = Tenant::new(m.account_id.clone(), Mode::Live);
    assert!(stored(&keys::referral(
        &live,
        &CustomerKey::from_id("cus_42").unwrap()
    ))
    .await
    .is_none());
}

#[tokio::test]
async fn identify_rejects_bad_bodies_and_unknown_or_expired_sessions() {
    let (m, c, a) = setup("Erin_1", json!({})).await;
    let s = click(&c, "Erin_1").await["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    for body in [
        json!({"sessionId": s}),
        json!({"sessionId": s, "customerEmail": "not-an-email"}),
        json!({"sessionId": s, "customerEmailHash": "abc"}),
        json!({"sessionId": s, "customerId": ""}),
        json!({"sessionId": s, "customerEmail": "a@b.co", "customerEmailHash": email_hash("c@d.co")}),
        json!({"sessionId": s, "customerId": "x", "affiliateId": a}),
        json!({"customerId": "x"}),
    ] {
        identify(body).await.assert_error(400, "VALIDATION_FAILED");
    }
    let r = identify(json!({"sessionId": s})).await;
    assert_eq!(r.body["error"]["details"][0]["code"], "required");

    for session in [
        "ses_01JD3Q5W6X7Y8Z9A0B1C2D3E4F".to_string(),
        "ses_nope".to_string(),
        // A click id is not a session id.
        s.replacen("ses_", "clk_", 1),
    ] {
        identify(json!({"sessionId": session, "customerId": "x"}))
            .await
            .assert_error(404, "NOT_FOUND");
    }

    // A session past its window is unknown, even before TTL removes the click.
    let app = app_for(server()).await;
    let now = timestamp::now();
    let ids = ClickIds::generate();
    let expired = Click {
        id: ids.click_id.clone(),
        tenant: test_tenant(&m).key(),
        campaign_id: c.clone(),
        affiliate_id: a.clone(),
        code: "Erin_1".into(),
        created_at: now - chrono::Duration::days(31),
        expires_at: now - chrono::Duration::seconds(1),
        ttl: (now - chrono::Duration::seconds(1)).timestamp(),
        landing_url: None,
        referrer: None,
        ip_hash: None,
        previous_session_id: None,
        flooded: false,
        customers_bound: 0,
    };
    clicks::insert(&app.store, &expired).await.unwrap();
    assert!(
        clicks::get_live(&app.store, &ids.click_id, now - chrono::Duration::days(1))
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        clicks::get_live_by_session(&app.store, &ids.session_id, now)
            .await
            .unwrap()
            .is_none()
    );
    identify(json!({"sessionId": ids.session_id, "customerId": "x"}))
        .await
        .assert_error(404, "NOT_FOUND");
    assert_eq!(
        tracking::click_id_of_session(&ids.session_id).as_deref(),
        Some(ids.click_id.as_str())
    );
}

#[tokio::test]
async fn the_local_host_serves_the_browser_script_and_demo_pages() {
    let client = crate::support::http_client();
    for (path, ct, needle) in [
        ("/tracker.js", "application/javascript", "consent"),
        ("/demo/landing", "text/html", "tracker.js"),
        ("/demo/checkout", "text/html", "identify"),
    ] {
        let r = client
            .get(format!("{}{path}", server().base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let got = r.headers()["content-type"].to_str().unwrap().to_string();
        assert!(got.starts_with(ct), "{path}: {got}");
        assert!(r.headers().contains_key("x-request-id"), "{path}");
        assert!(r.text().await.unwrap().contains(needle), "{path}");
    }
    // Not API routes: other methods fall through to the router.
    let r = raw(&server().base, "POST", "/tracker.js", None, &[], None).await;
    r.assert_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn click_counts_add_the_month_items_days_and_earlier_day_items() {
    use api::domain::summary::{window, Period};
    let (m, c, a) = setup("Counted_1", json!({})).await;
    for _ in 0..3 {
        click(&c, "Counted_1").await;
    }
    let app = app_for(server()).await;
    let tenant = test_tenant(&m);
    let now = chrono::Utc::now();
    // A day item as clicks were counted before (yesterday: 5; today: 2).
    let pk = keys::affiliate_clicks(&tenant, &a);
    for (day, n) in [(now - chrono::Duration::days(1), 5), (now, 2)] {
        let mut item = Item::new();
        item.insert("pk".into(), api::store::string_value(pk.clone()));
        let sk = format!("D#{}", day.format("%Y-%m-%d"));
        item.insert("sk".into(), api::store::string_value(sk));
        item.insert("count".into(), api::store::number_value(n));
        app.store.put(item).await.unwrap();
    }
    let count = |p| {
        let (app, tenant, a) = (app.clone(), tenant.clone(), a.clone());
        async move {
            clicks::count(&app.store, &tenant, &a, &window(p, now))
                .await
                .unwrap()
        }
    };
    assert_eq!(
        count(Period::Days7).await,
        3 + 5 + 2,
        "month days and old day items"
    );
    assert_eq!(count(Period::Days30).await, 10);
    // `all` reads month totals only: the old day items were in them already.
    assert_eq!(count(Period::All).await, 3);
}

#[tokio::test]
async fn one_session_binds_at_most_its_share_of_customers() {
    use api::domain::tracking::MAX_CUSTOMERS_PER_SESSION;
    let code = format!("S{}", &ulid::Ulid::new().to_string()[18..]);
    let (m, c, a) = setup(&code, json!({})).await;
    let s = click(&c, &code).await["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let customer = |n: u32| format!("cus_share_{s}_{n}");
    for n in 0..MAX_CUSTOMERS_PER_SESSION {
        let r = identify(json!({"sessionId": s, "customerId": customer(n)})).await;
        assert_eq!(r.data()["bound"], true, "{n}: {:?}", r.body);
        // The same customer again binds nothing and takes no place.
        let r = identify(json!({"sessionId": s, "customerId": customer(n)})).await;
        assert_eq!(r.data()["bound"], false, "{n}: {:?}", r.body);
    }
    // One more customer is not bound: its payment is not the affiliate's.
    let extra = customer(MAX_CUSTOMERS_PER_SESSION);
    let r = identify(json!({"sessionId": s, "customerId": extra})).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["bound"], false, "{:?}", r.body);
    let paid = |who: String| {
        call(
            "POST",
            "/api/v1/conversions/postback",
            Some(&m.test_key),
            Some(
                json!({"amount": 10, "currency": "USD", "externalId": format!("ord_{who}"),
                "conversionType": "SALE", "customerId": who}),
            ),
        )
    };
    let r = paid(extra).await;
    assert_eq!(r.data()["affiliateId"], Value::Null, "{:?}", r.body);
    let r = paid(customer(0)).await;
    assert_eq!(r.data()["affiliateId"], json!(a), "{:?}", r.body);
}
