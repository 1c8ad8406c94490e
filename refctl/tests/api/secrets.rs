//! The signing secret in Secrets Manager (the moto server): keys name the
//! version that signed them, so a rotation leaves older keys working.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use api::domain::tenant::Mode;
use api::services::app::App;
use api::services::auth::{api_key, portal};
use api::store::accounts;

use crate::support::{call_on, merchant_in, start, test_config};

/// A proxy to the secrets emulator that can be down (every connection is
/// closed at once, as by a stopped service) or up (everything forwarded).
fn switchable_proxy(upstream: &str, up: Arc<AtomicBool>) -> String {
    let upstream = upstream
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            if !up.load(Ordering::SeqCst) {
                continue; // dropped: the connection closes unanswered
            }
            let Ok(server) = TcpStream::connect(&upstream) else {
                continue;
            };
            let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            std::thread::spawn(move || pipe(client, server));
            std::thread::spawn(move || pipe(s2, c2));
        }
    });
    format!("http://{addr}")
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 || to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}

async fn status(base: &str, key: &str) -> u16 {
    call_on(base, "GET", "/api/v1/campaigns", Some(key), None)
        .await
        .status
}

/// A configuration of a table of its own whose signing secret is in the
/// secrets emulator (made by the tables create).
fn with_secret_manager() -> api::store::config::Config {
    let mut config = test_config();
    config.api_key_secret_arn = Some(format!("{}/api-key-secret", config.table_name));
    config
}

#[tokio::test]
async fn keys_of_the_old_and_new_secret_versions_work_after_a_rotation() {
    let config = with_secret_manager();
    // The server's tables create makes the secret in the emulator.
    let server = start(config.clone(), true);
    let before = App::init(config.clone()).await.unwrap();
    let v1 = before.signing.current().await.unwrap();
    let old = merchant_in(&before).await;
    assert_eq!(
        api_key::secret_version(&old.test_key),
        Some(v1.version.clone()),
        "a key names the version that signed it"
    );
    assert_eq!(status(&server.base, &old.test_key).await, 200);

    let secrets = before.signing.secrets().expect("backed by Secrets Manager");
    let v2 = secrets
        .put_version("the-second-version-of-the-signing-secret-0123456789")
        .await
        .unwrap();
    assert_ne!(Some(v2.clone()), v1.version);
    // A process started after the rotation signs with the new version.
    let after = App::init(config.clone()).await.unwrap();
    let new = merchant_in(&after).await;
    assert_eq!(
        api_key::secret_version(&new.live_key),
        Some(Some(v2.clone()))
    );

    // The server started before the rotation: the new version is looked up,
    // the old one still verifies.
    assert_eq!(status(&server.base, &new.live_key).await, 200);
    assert_eq!(status(&server.base, &new.test_key).await, 200);
    assert_eq!(status(&server.base, &old.test_key).await, 200);
    assert_eq!(status(&server.base, &old.live_key).await, 200);

    // The version a key names decides its secret: the old secret under the
    // new version's name is a forgery.
    let forged = api_key::issue_signed(
        &v1.secret,
        Some(&v2),
        &old.test_key_id,
        &old.account_id,
        Mode::Test,
    );
    assert_eq!(status(&server.base, &forged).await, 401);
    let unknown_version = api_key::issue_signed(
        &v1.secret,
        Some("0f6e2d3c-1b2a-4c5d-8e9f-a0b1c2d3e4f5"),
        &old.test_key_id,
        &old.account_id,
        Mode::Test,
    );
    assert_eq!(status(&server.base, &unknown_version).await, 401);

    // Revocation still holds for keys of either version.
    accounts::revoke_key(&after.store, &old.test_key_id)
        .await
        .unwrap();
    assert_eq!(status(&server.base, &old.test_key).await, 401);
    accounts::revoke_key(&after.store, &new.test_key_id)
        .await
        .unwrap();
    assert_eq!(status(&server.base, &new.test_key).await, 401);
    assert_eq!(status(&server.base, &new.live_key).await, 200);
}

#[tokio::test]
async fn a_secret_store_down_at_start_up_is_503_per_request_until_it_is_back() {
    let config = with_secret_manager();
    // The table and the secret exist; keys are issued while the store is up.
    let healthy = start(config.clone(), true);
    let issuer = App::init(config.clone()).await.unwrap();
    issuer.signing.current().await.unwrap();
    let m = merchant_in(&issuer).await;
    assert_eq!(status(&healthy.base, &m.test_key).await, 200);
    let body = serde_json::json!({"name": "Public", "commissionType": "PERCENTAGE",
        "commissionValue": 10, "isPublic": true});
    let c = call_on(
        &healthy.base,
        "POST",
        "/api/v1/campaigns",
        Some(&m.test_key),
        Some(body),
    )
    .await;
    assert_eq!(c.status, 201, "{:?}", c.body);
    let campaign = c.data()["id"].as_str().unwrap().to_string();
    let body = serde_json::json!({"campaignId": campaign, "email": "pub@partners.example.com",
        "name": "Pub", "code": "PUBSECRET"});
    let a = call_on(
        &healthy.base,
        "POST",
        "/api/v1/affiliates",
        Some(&m.test_key),
        Some(body),
    )
    .await;
    assert_eq!(a.status, 201, "{:?}", a.body);

    // A process that starts while the secret store is down: its start-up
    // does not wait for the secret (nor fail).
    let up = Arc::new(AtomicBool::new(false));
    let mut cut_off = config.clone();
    let upstream = config
        .secrets_endpoint
        .clone()
        .expect("the emulator's endpoint");
    cut_off.secrets_endpoint = Some(switchable_proxy(&upstream, up.clone()));
    let started = std::time::Instant::now();
    let app = App::init(cut_off.clone())
        .await
        .expect("init does not wait for the secret");
    assert!(!app.signing.is_ready());
    let server = start(cut_off, false);

    // Each request that needs the secret is 503 with Retry-After, never a
    // 500 and never let through unchecked; the next one reads again.
    for path in ["/api/v1/campaigns", "/api/v1/conversions"] {
        let r = call_on(&server.base, "GET", path, Some(&m.test_key), None).await;
        r.assert_error(503, "SERVICE_UNAVAILABLE");
        assert!(r.header("retry-after").is_some(), "{:?}", r.headers);
    }
    let forged = format!("{}x", m.test_key);
    let r = call_on(
        &server.base,
        "GET",
        "/api/v1/campaigns",
        Some(&forged),
        None,
    )
    .await;
    assert!(matches!(r.status, 401 | 503), "{:?}", r.body);
    // The public routes never wait for the secret: their client-address
    // hash has its own key, from the configuration.
    let profile = format!("/api/v1/campaigns/{campaign}/public");
    let r = call_on(&server.base, "GET", &profile, None, None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let click = serde_json::json!({"campaignId": campaign, "ref": "PUBSECRET"});
    let r = call_on(
        &server.base,
        "POST",
        "/api/v1/track/click",
        None,
        Some(click),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));

    // The store is back: the next request reads the secret and goes through.
    up.store(true, Ordering::SeqCst);
    assert_eq!(status(&server.base, &m.test_key).await, 200);
    let r = call_on(
        &server.base,
        "GET",
        "/api/v1/campaigns",
        Some(&forged),
        None,
    )
    .await;
    r.assert_error(401, "UNAUTHORIZED");
    // Once read, the secret is kept: the store going away again changes nothing.
    up.store(false, Ordering::SeqCst);
    assert_eq!(status(&server.base, &m.test_key).await, 200);
}

/// A process's first portal request reads the records its token claims
/// while the secret is read, and trusts none of it until the signature
/// checks: a token forged for a real affiliate is 401, a true one 200.
#[tokio::test]
async fn a_first_portal_request_is_checked_though_its_records_are_read_beside_the_secret() {
    let config = with_secret_manager();
    let healthy = start(config.clone(), true);
    let issuer = App::init(config.clone()).await.unwrap();
    let (secret, m) = (
        issuer.signing.current().await.unwrap().secret,
        merchant_in(&issuer).await,
    );
    let body = serde_json::json!({"name": "Portal", "commissionType": "PERCENTAGE",
        "commissionValue": 10});
    let key = Some(m.test_key.as_str());
    let c = call_on(&healthy.base, "POST", "/api/v1/campaigns", key, Some(body)).await;
    assert_eq!(c.status, 201, "{:?}", c.body);
    let body = serde_json::json!({"campaignId": c.data()["id"], "name": "Ann",
        "email": "ann@partners.example.com"});
    let a = call_on(&healthy.base, "POST", "/api/v1/affiliates", key, Some(body)).await;
    assert_eq!(a.status, 201, "{:?}", a.body);
    let affiliate = a.data()["id"].as_str().unwrap();
    let tenant = api::domain::tenant::Tenant::new(m.account_id.clone(), Mode::Test);
    let claims = portal::PortalClaims::new(&tenant, affiliate, chrono::Utc::now());
    let true_token = portal::issue(&secret, &claims);
    let forged = portal::issue("another-secret-that-is-long-enough-0123", &claims);
    let sample = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../events/portal-me.json"),
    )
    .unwrap();
    for (token, expected) in [(&forged, 401), (&true_token, 200)] {
        // A process of its own, whose start read no secret.
        let app = App::init(config.clone()).await.unwrap();
        assert!(!app.signing.is_ready());
        let router = refctl::serve::service(app.clone());
        let event = sample.replace("pt_test_REPLACE_WITH_A_PORTAL_TOKEN", token);
        let req = lambda_http::request::from_str(&event).unwrap();
        let resp = api::lambda::answer(&router, req).await;
        assert_eq!(resp.status().as_u16(), expected, "{:?}", resp.body());
        assert!(app.signing.is_ready(), "the request read the secret");
    }
}
