//! The affiliate portal over HTTP: portal sessions, the token as a third
//! kind of access (refused on every merchant route, as a merchant key is on
//! every portal route), the affiliate's own reads and edits, the invoice
//! upload, and no read of another affiliate's or tenant's records.

use api::domain::tenant::Mode;
use serde_json::{json, Value};

use crate::payouts::Fx;
use crate::support::{call_on, raw, Resp};

const PDF: &[u8] = b"%PDF-1.4\n% portal invoice\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n";
/// Another invoice file (another size).
const PDF_AGAIN: &[u8] =
    b"%PDF-1.4\n% portal invoice, sent again\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n";

/// The storage key of a payout's invoice (private: read from the table).
async fn stored_key(fx: &Fx, payout: &str) -> String {
    let p = api::store::payouts::get(&fx.app.store, &fx.tenant(Mode::Test), payout)
        .await
        .unwrap();
    p.invoice_key.unwrap()
}

/// Removes an object from the test bucket, as a lifecycle rule or a hand would.
async fn delete_object(fx: &Fx, key: &str) {
    let config = &fx.app.config;
    let mut s3 = aws_sdk_s3::config::Builder::from(&api::store::sdk::config(config).await);
    if let Some(ep) = &config.s3_endpoint {
        s3 = s3.endpoint_url(ep).force_path_style(true);
    }
    aws_sdk_s3::Client::from_conf(s3.build())
        .delete_object()
        .bucket(&config.bucket_name)
        .key(key)
        .send()
        .await
        .unwrap();
}

/// How many `payout.invoice_uploaded` events a payout has.
async fn invoice_events(fx: &Fx, payout: &str) -> usize {
    let t = "payout.invoice_uploaded";
    crate::support::events_about(&fx.server.base, &fx.m.test_key, t, payout)
        .await
        .len()
}

fn unique(prefix: &str) -> String {
    let id = ulid::Ulid::new().to_string();
    format!("{prefix}{}", &id[id.len() - 10..])
}

/// An ACTIVE affiliate of the fixture's test campaign; its id and code.
async fn affiliate(fx: &Fx) -> (String, String) {
    let code = unique("PT");
    let body = json!({"campaignId": fx.test_campaign, "name": "Ann", "code": code,
        "email": format!("{}@partners.example.com", code.to_lowercase()), "payoutMethod": "PAYPAL"});
    let r = fx.call("POST", "/api/v1/affiliates", Some(body)).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    (r.data()["id"].as_str().unwrap().to_string(), code)
}

/// A portal session of an affiliate: its token.
async fn session(fx: &Fx, affiliate: &str) -> String {
    let path = format!("/api/v1/affiliates/{affiliate}/portal-sessions");
    let r = fx.call("POST", &path, Some(json!({}))).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let token = r.data()["token"].as_str().unwrap().to_string();
    assert!(token.starts_with("pt_test_"));
    assert_eq!(
        r.data()["url"],
        json!(format!(
            "{}/portal?account={}#token={token}",
            fx.server.base, fx.m.account_id
        ))
    );
    token
}

async fn as_portal(fx: &Fx, token: &str, method: &str, path: &str, body: Option<Value>) -> Resp {
    call_on(&fx.server.base, method, path, Some(token), body).await
}

async fn sale(fx: &Fx, code: &str, amount: u32) -> String {
    let body = json!({"amount": amount, "currency": "USD", "externalId": unique("ord"),
        "conversionType": "SALE", "affiliateCode": code,
        "customerEmail": format!("{}@buyers.example.com", unique("b").to_lowercase()),
        "customerId": unique("cus_"), "metadata": {"merchantNote": "secret-margin"}});
    let r = fx
        .call("POST", "/api/v1/conversions/postback", Some(body))
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    r.data()["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn an_affiliate_reads_its_own_numbers_and_nothing_else() {
    let fx = Fx::new().await;
    let body = json!({"landingUrl": "https://shop.example.com/pricing?plan=pro", "isPublic": true});
    let path = format!("/api/v1/campaigns/{}", fx.test_campaign);
    let r = fx.call("PUT", &path, Some(body)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let (ann, ann_code) = affiliate(&fx).await;
    let (bob, bob_code) = affiliate(&fx).await;
    let token = session(&fx, &ann).await;
    // Two clicks and three sales for Ann; one sale for Bob.
    for _ in 0..2 {
        let click = json!({"campaignId": fx.test_campaign, "ref": ann_code});
        let r = call_on(
            &fx.server.base,
            "POST",
            "/api/v1/track/click",
            None,
            Some(click),
        )
        .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
    }
    let mut mine = Vec::new();
    for amount in [100, 200, 300] {
        mine.push(sale(&fx, &ann_code, amount).await);
    }
    let theirs = sale(&fx, &bob_code, 50).await;

    let me = as_portal(&fx, &token, "GET", "/api/v1/portal/me", None).await;
    assert_eq!(me.status, 200, "{:?}", me.body);
    assert_eq!(me.data()["affiliate"]["id"], json!(ann));
    assert_eq!(me.data()["campaign"]["commissionValue"], json!(10));
    assert_eq!(
        me.data()["referralLink"],
        json!(format!(
            "https://shop.example.com/pricing?plan=pro&ref={ann_code}"
        ))
    );
    let stats = as_portal(&fx, &token, "GET", "/api/v1/portal/stats?period=7d", None).await;
    assert_eq!(stats.status, 200, "{:?}", stats.body);
    assert_eq!(stats.data()["clicks"], json!(2));
    assert_eq!(
        stats.data()["totals"],
        json!([{"currency": "USD", "revenue": 600, "commission": 60, "count": 3}])
    );
    assert_eq!(stats.data()["byStatus"][0]["status"], "PENDING");
    assert_eq!(stats.data()["series"], Value::Null, "only when asked");
    // The daily series: every day of the period, adding up to the totals.
    let path = "/api/v1/portal/stats?period=7d&series=day";
    let daily = as_portal(&fx, &token, "GET", path, None).await;
    assert_eq!(daily.status, 200, "{:?}", daily.body);
    let days = daily.data()["series"].as_array().unwrap().clone();
    assert_eq!(days.len(), 7, "today and the 6 days before: {days:?}");
    let clicks: i64 = days.iter().map(|d| d["clicks"].as_i64().unwrap()).sum();
    let sales: i64 = days
        .iter()
        .flat_map(|d| d["totals"].as_array().unwrap().clone())
        .map(|t| t["count"].as_i64().unwrap())
        .sum();
    assert_eq!((clicks, sales), (2, 3));
    assert!(days
        .windows(2)
        .all(|w| w[0]["date"].as_str() < w[1]["date"].as_str()));
    let path = "/api/v1/portal/stats?period=all&series=day";
    as_portal(&fx, &token, "GET", path, None)
        .await
        .assert_error(400, "VALIDATION_FAILED");
    let all = as_portal(&fx, &token, "GET", "/api/v1/portal/stats?period=all", None).await;
    assert_eq!(
        (&all.data()["clicks"], &all.data()["totals"][0]["count"]),
        (&json!(2), &json!(3))
    );

    // Lists and reads: Ann's only, no customer identity, no merchant metadata.
    let list = as_portal(
        &fx,
        &token,
        "GET",
        "/api/v1/portal/conversions?limit=2",
        None,
    )
    .await;
    assert_eq!(list.status, 200, "{:?}", list.body);
    assert_eq!(list.data().as_array().unwrap().len(), 2);
    assert_eq!(list.body["meta"]["hasMore"], json!(true));
    let cursor = list.body["meta"]["nextCursor"].as_str().unwrap();
    let rest = as_portal(
        &fx,
        &token,
        "GET",
        &format!("/api/v1/portal/conversions?limit=2&cursor={cursor}"),
        None,
    )
    .await;
    assert_eq!(rest.data().as_array().unwrap().len(), 1);
    let text = format!("{}{}{}", list.body, rest.body, me.body);
    for private in [
        "buyers.example.com",
        "cus_",
        // No customer identity (a count of customers referred is its own).
        "\"customerRef\"",
        "\"customerId\"",
        "\"customerEmail",
        "secret-margin",
        "metadata",
        "email:",
    ] {
        assert!(!text.contains(private), "{private} in {text}");
    }
    let one = as_portal(
        &fx,
        &token,
        "GET",
        &format!("/api/v1/portal/conversions/{}", mine[0]),
        None,
    )
    .await;
    assert_eq!((one.status, &one.data()["amount"]), (200, &json!(100)));
    // Bob's conversion, another tenant's: 404 as unknown.
    let bola = as_portal(
        &fx,
        &token,
        "GET",
        &format!("/api/v1/portal/conversions/{theirs}"),
        None,
    )
    .await;
    bola.assert_error(404, "NOT_FOUND");
    let other = Fx::new().await;
    let (carl, carl_code) = affiliate(&other).await;
    let carls = sale(&other, &carl_code, 70).await;
    let bola = as_portal(
        &fx,
        &token,
        "GET",
        &format!("/api/v1/portal/conversions/{carls}"),
        None,
    )
    .await;
    bola.assert_error(404, "NOT_FOUND");
    // Carl's own token sees its one sale, never Ann's.
    let carl_token = session(&other, &carl).await;
    let list = as_portal(
        &other,
        &carl_token,
        "GET",
        "/api/v1/portal/conversions",
        None,
    )
    .await;
    assert_eq!(list.each("id"), vec![json!(carls)]);
    let _ = bob;
}

#[tokio::test]
async fn payout_details_invoices_and_a_suspension_that_ends_the_session() {
    let fx = Fx::new().await;
    let (ann, code) = affiliate(&fx).await;
    let (bob, bob_code) = affiliate(&fx).await;
    sale(&fx, &code, 100).await;
    sale(&fx, &bob_code, 100).await;
    fx.run_job().await;
    let token = session(&fx, &ann).await;
    // The affiliate's own payout details, by the merchant's rules.
    let r = as_portal(
        &fx,
        &token,
        "PATCH",
        "/api/v1/portal/me",
        Some(json!({"payoutMethod": "BANK_TRANSFER", "payoutEmail": "ann@bank.example.com"})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["affiliate"]["payoutMethod"], "BANK_TRANSFER");
    let r = as_portal(
        &fx,
        &token,
        "PATCH",
        "/api/v1/portal/me",
        Some(json!({"payoutEmail": "nope"})),
    )
    .await;
    r.assert_error(400, "VALIDATION_FAILED");
    let r = as_portal(
        &fx,
        &token,
        "PATCH",
        "/api/v1/portal/me",
        Some(json!({"status": "ACTIVE"})),
    )
    .await;
    r.assert_error(400, "VALIDATION_FAILED");
    let r = as_portal(
        &fx,
        &token,
        "PATCH",
        "/api/v1/portal/me",
        Some(json!({"code": "MINE"})),
    )
    .await;
    r.assert_error(400, "VALIDATION_FAILED");

    let payouts = as_portal(&fx, &token, "GET", "/api/v1/portal/payouts", None).await;
    assert_eq!(payouts.status, 200, "{:?}", payouts.body);
    assert_eq!(
        payouts.data().as_array().map(Vec::len),
        Some(1),
        "{:?} {:?}",
        payouts.body,
        fx.payouts_of(Mode::Test, &ann).await
    );
    let mine = payouts.data()[0]["id"].as_str().unwrap().to_string();
    assert_eq!(payouts.data()[0]["status"], "PENDING");
    let theirs = fx.payouts_of(Mode::Test, &bob).await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let upload = |id: String, bytes: &'static [u8]| {
        let (base, token) = (fx.server.base.clone(), token.clone());
        async move {
            raw(
                &base,
                "PUT",
                &format!("/api/v1/portal/payouts/{id}/invoice"),
                Some(&token),
                &[
                    ("content-type", "application/pdf"),
                    ("x-file-name", "march invoice.pdf"),
                ],
                Some(bytes.to_vec()),
            )
            .await
        }
    };
    upload(theirs.clone(), PDF)
        .await
        .assert_error(404, "NOT_FOUND");
    let path = format!("/api/v1/portal/payouts/{theirs}");
    let r = as_portal(&fx, &token, "GET", &path, None).await;
    r.assert_error(404, "NOT_FOUND");
    let path = format!("/api/v1/portal/payouts/{mine}");
    let own = as_portal(&fx, &token, "GET", &path, None).await;
    assert_eq!((own.status, &own.data()["id"]), (200, &json!(mine)));
    upload(mine.clone(), b"<html>not an invoice</html>")
        .await
        .assert_error(400, "INVALID_REQUEST");
    let r = upload(mine.clone(), PDF).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["status"], "INVOICE_UPLOADED");
    assert_eq!(r.data()["invoice"]["fileName"], "marchinvoice.pdf");
    assert!(!r.body.to_string().contains("invoices/"), "no storage key");
    assert_eq!(fx.status_of(Mode::Test, &mine).await, "INVOICE_UPLOADED");
    // The merchant reads the file the affiliate sent.
    let file = raw(
        &fx.server.base,
        "GET",
        &format!("/api/v1/payouts/{mine}/invoice"),
        Some(&fx.m.test_key),
        &[],
        None,
    )
    .await;
    assert_eq!(file.status, 200);
    assert_eq!(invoice_events(&fx, &mine).await, 1);
    // The file gone from storage: approval says so, and a new upload
    // (replacing it, as its own object) makes the payout approvable.
    let first = stored_key(&fx, &mine).await;
    assert!(first.ends_with("/marchinvoice.pdf"), "{first}");
    delete_object(&fx, &first).await;
    let approve = format!("/api/v1/payouts/{mine}/approve");
    let r = fx.call("POST", &approve, None).await;
    r.assert_error(409, "INVALID_STATE");
    assert!(r.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("missing from storage"));
    let r = upload(mine.clone(), PDF_AGAIN).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["invoice"]["size"], PDF_AGAIN.len());
    assert_eq!(r.data()["invoice"]["fileName"], "marchinvoice.pdf");
    assert_eq!(invoice_events(&fx, &mine).await, 2);
    assert_ne!(stored_key(&fx, &mine).await, first, "its own object");
    let r = fx.call("POST", &approve, None).await;
    assert_eq!(r.data()["status"], "APPROVED", "{:?}", r.body);
    // Approved: its invoice is settled.
    upload(mine.clone(), PDF)
        .await
        .assert_error(409, "INVALID_STATE");

    // Suspended: the token stops at once and no session opens. Active
    // again: the token the suspension ended stays ended; a new session
    // opens the portal. (Tokens tell their time to the second: the
    // suspension falls in a later second than the token's.)
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let path = format!("/api/v1/affiliates/{ann}");
    let sessions = format!("/api/v1/affiliates/{ann}/portal-sessions");
    let mut opened = None;
    for status in ["SUSPENDED", "ACTIVE"] {
        let r = fx.call("PUT", &path, Some(json!({"status": status}))).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        as_portal(&fx, &token, "GET", "/api/v1/portal/me", None)
            .await
            .assert_error(401, "UNAUTHORIZED");
        opened = Some(fx.call("POST", &sessions, None).await);
        if status == "SUSPENDED" {
            opened.take().unwrap().assert_error(409, "INVALID_STATE");
        }
    }
    let r = opened.unwrap();
    assert_eq!(r.status, 201, "{:?}", r.body);
    let fresh = r.data()["token"].as_str().unwrap().to_string();
    let r = as_portal(&fx, &fresh, "GET", "/api/v1/portal/me", None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
}

/// Every operation of the description with its security and a concrete path.
fn operations() -> Vec<(String, String, bool)> {
    let doc = refctl::openapi::document();
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if !["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                continue;
            }
            // No `security` of its own: the document's, an API key.
            let (portal, merchant) = match op.get("security").and_then(Value::as_array) {
                None => (false, true),
                Some(s) => (
                    s.iter().any(|s| s.get("portalToken").is_some()),
                    s.iter().any(|s| s.get("apiKey").is_some()),
                ),
            };
            if !(portal || merchant) {
                continue;
            }
            let concrete = path.replace("{id}", "aff_01JD9A7C2E4G6J8M0P2R4T6V8X");
            out.push((method.to_uppercase(), concrete, portal));
        }
    }
    out
}

#[tokio::test]
async fn a_portal_token_opens_portal_routes_only_and_a_key_never_does() {
    let fx = Fx::new().await;
    let (ann, _) = affiliate(&fx).await;
    let token = session(&fx, &ann).await;
    let ops = operations();
    assert!(ops.iter().filter(|o| o.2).count() >= 9, "{ops:?}");
    assert!(ops.iter().filter(|o| !o.2).count() >= 40, "{ops:?}");
    for (method, path, portal) in &ops {
        let bearer = if *portal { &fx.m.test_key } else { &token };
        let body = (method != "GET").then(|| json!({}));
        let r = call_on(&fx.server.base, method, path, Some(bearer), body).await;
        assert_eq!(
            (r.status, r.code()),
            (401, "UNAUTHORIZED"),
            "{method} {path} with a {} answered {:?}",
            if *portal {
                "merchant key"
            } else {
                "portal token"
            },
            r.body
        );
    }
    // An expired or forged token is 401 too.
    let secret = &fx.server.app.config.api_key_secret;
    let claims = api::services::auth::portal::PortalClaims::new(
        &fx.tenant(Mode::Test),
        &ann,
        chrono::Utc::now() - chrono::Duration::hours(2),
    );
    let expired = api::services::auth::portal::issue(secret, &claims);
    let r = as_portal(&fx, &expired, "GET", "/api/v1/portal/me", None).await;
    r.assert_error(401, "UNAUTHORIZED");
    let fresh = api::services::auth::portal::PortalClaims::new(
        &fx.tenant(Mode::Test),
        &ann,
        chrono::Utc::now(),
    );
    let forged =
        api::services::auth::portal::issue("another-secret-that-is-long-enough-0123", &fresh);
    as_portal(&fx, &forged, "GET", "/api/v1/portal/me", None)
        .await
        .assert_error(401, "UNAUTHORIZED");
    // The live-mode twin of a test token names the same affiliate in the other mode: 401.
    let live = api::services::auth::portal::PortalClaims::new(
        &fx.tenant(Mode::Live),
        &ann,
        chrono::Utc::now(),
    );
    let live = api::services::auth::portal::issue(secret, &live);
    as_portal(&fx, &live, "GET", "/api/v1/portal/me", None)
        .await
        .assert_error(401, "UNAUTHORIZED");
    // The page itself is public and fenced by its policy.
    let page = raw(&fx.server.base, "GET", "/portal", None, &[], None).await;
    assert_eq!(page.status, 200);
    let csp = page
        .header("content-security-policy")
        .unwrap_or_default()
        .to_string();
    assert!(
        csp.contains("connect-src 'self'") && csp.contains("frame-ancestors"),
        "{csp}"
    );
}

#[tokio::test]
async fn a_session_carries_its_back_link_and_a_locked_accounts_token_is_401() {
    use api::store::accounts;
    let fx = Fx::new().await;
    let (ann, _) = affiliate(&fx).await;
    let path = format!("/api/v1/affiliates/{ann}/portal-sessions");
    let back = "https://merchant.example/account?tab=partners&x=1";
    let r = fx
        .call("POST", &path, Some(json!({"returnUrl": back})))
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let token = r.data()["token"].as_str().unwrap().to_string();
    // Signed into the token, and shown to the page by `me` (never read from the address).
    let me = as_portal(&fx, &token, "GET", "/api/v1/portal/me", None).await;
    assert_eq!(me.data()["returnUrl"], back, "{:?}", me.body);
    // ASCII only, so the token fits a request header.
    let r = fx
        .call(
            "POST",
            &path,
            Some(json!({"returnUrl": "https://merchant.example/été"})),
        )
        .await;
    r.assert_error(400, "VALIDATION_FAILED");
    let plain = session(&fx, &ann).await;
    let me = as_portal(&fx, &plain, "GET", "/api/v1/portal/me", None).await;
    assert_eq!(me.data()["returnUrl"], Value::Null);

    // The affiliate learns only that the token stopped working.
    accounts::set_locked(&fx.app.store, &fx.m.account_id, true)
        .await
        .unwrap();
    let r = as_portal(&fx, &token, "GET", "/api/v1/portal/me", None).await;
    accounts::set_locked(&fx.app.store, &fx.m.account_id, false)
        .await
        .unwrap();
    r.assert_error(401, "UNAUTHORIZED");
    assert!(!r.body.to_string().contains("locked"), "{:?}", r.body);
    let r = as_portal(&fx, &token, "GET", "/api/v1/portal/me", None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
}
