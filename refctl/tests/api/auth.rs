//! Authentication: every bad key looks the same; account state gives 403.

use api::domain::tenant::Mode;
use api::services::auth::api_key;
use api::store::accounts;
use serde_json::json;

use crate::support::{app_for, call, campaign, merchant, raw, server};

#[tokio::test]
async fn every_bad_key_gets_the_same_401() {
    let m = merchant().await;
    let base = &server().base;
    let secret = &server().app.config.api_key_secret; // plain config, no client
    let good = m.test_key.clone();
    let mut tampered = good.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    let other_secret = api_key::issue(
        "another-secret-that-is-at-least-32-bytes",
        &m.test_key_id,
        &m.account_id,
        Mode::Test,
    );
    let unknown_key = api_key::issue(
        secret,
        "key_01JD0000000000000000000000",
        &m.account_id,
        Mode::Test,
    );
    let wrong_prefix = good.replacen("rk_test_", "rk_live_", 1);
    let no_prefix = good.trim_start_matches("rk_test_").to_string();
    let cases: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("missing header", vec![]),
        (
            "basic scheme",
            vec![("authorization", "Basic dXNlcjpwYXNz".to_string())],
        ),
        (
            "empty bearer",
            vec![("authorization", "Bearer ".to_string())],
        ),
        (
            "garbage",
            vec![("authorization", "Bearer not-a-key".to_string())],
        ),
        (
            "tampered signature",
            vec![("authorization", format!("Bearer {tampered}"))],
        ),
        (
            "other secret",
            vec![("authorization", format!("Bearer {other_secret}"))],
        ),
        (
            "unknown key id",
            vec![("authorization", format!("Bearer {unknown_key}"))],
        ),
        (
            "prefix of the other mode",
            vec![("authorization", format!("Bearer {wrong_prefix}"))],
        ),
        (
            "no prefix",
            vec![("authorization", format!("Bearer {no_prefix}"))],
        ),
    ];
    let mut messages = Vec::new();
    for (name, headers) in cases {
        let hs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = raw(base, "GET", "/api/v1/campaigns", None, &hs, None).await;
        r.assert_error(401, "UNAUTHORIZED");
        assert_eq!(
            r.body["error"]["details"],
            serde_json::Value::Null,
            "{name}"
        );
        messages.push(r.body["error"]["message"].as_str().unwrap().to_string());
    }
    assert!(
        messages
            .iter()
            .all(|msg| msg == "invalid or expired API key"),
        "{messages:?}"
    );
    // The good key works, so the failures above were the key's fault; the
    // scheme's name in any letter case.
    assert_eq!(
        call("GET", "/api/v1/campaigns", Some(&good), None)
            .await
            .status,
        200
    );
    for scheme in ["bearer", "BEARER", "BeArEr"] {
        let h = format!("{scheme} {good}");
        let r = raw(
            base,
            "GET",
            "/api/v1/campaigns",
            None,
            &[("authorization", &h)],
            None,
        )
        .await;
        assert_eq!(r.status, 200, "{scheme}: {:?}", r.body);
    }
}

#[tokio::test]
async fn a_revoked_key_fails_on_the_next_call() {
    let m = merchant().await;
    assert_eq!(
        call("GET", "/api/v1/campaigns", Some(&m.test_key), None)
            .await
            .status,
        200
    );
    accounts::revoke_key(&app_for(server()).await.store, &m.test_key_id)
        .await
        .unwrap();
    call("GET", "/api/v1/campaigns", Some(&m.test_key), None)
        .await
        .assert_error(401, "UNAUTHORIZED");
    // The account's other key is unaffected.
    assert_eq!(
        call("GET", "/api/v1/campaigns", Some(&m.live_key), None)
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn locked_accounts_and_expired_subscriptions_get_403() {
    let m = merchant().await;
    let app = app_for(server()).await;
    let store = &app.store;
    accounts::set_locked(store, &m.account_id, true)
        .await
        .unwrap();
    call("GET", "/api/v1/campaigns", Some(&m.test_key), None)
        .await
        .assert_error(403, "PERMISSION_DENIED");
    accounts::set_locked(store, &m.account_id, false)
        .await
        .unwrap();
    assert_eq!(
        call("GET", "/api/v1/campaigns", Some(&m.test_key), None)
            .await
            .status,
        200
    );

    let past = chrono::Utc::now() - chrono::Duration::days(1);
    accounts::set_subscription(store, &m.account_id, Some(past))
        .await
        .unwrap();
    call("GET", "/api/v1/campaigns", Some(&m.live_key), None)
        .await
        .assert_error(403, "PERMISSION_DENIED");
    let future = chrono::Utc::now() + chrono::Duration::days(30);
    accounts::set_subscription(store, &m.account_id, Some(future))
        .await
        .unwrap();
    assert_eq!(
        call("GET", "/api/v1/campaigns", Some(&m.live_key), None)
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn modes_and_accounts_never_see_each_others_records() {
    let m = merchant().await;
    let other = merchant().await;
    let c = campaign(&m.test_key, json!({"name": "test-mode only"})).await;
    let id = c["id"].as_str().unwrap();
    let path = format!("/api/v1/campaigns/{id}");
    assert_eq!(
        call("GET", &path, Some(&m.test_key), None).await.status,
        200
    );
    for key in [&m.live_key, &other.test_key, &other.live_key] {
        call("GET", &path, Some(key), None)
            .await
            .assert_error(404, "NOT_FOUND");
        call("PUT", &path, Some(key), Some(json!({"name": "stolen"})))
            .await
            .assert_error(404, "NOT_FOUND");
        let list = call("GET", "/api/v1/campaigns?limit=100", Some(key), None).await;
        assert_eq!(list.status, 200);
        assert!(list
            .data()
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["id"] != id));
    }
    // Nothing changed for the owner.
    let r = call("GET", &path, Some(&m.test_key), None).await;
    assert_eq!(r.data()["name"], "test-mode only");
}

/// Runs the reference JWT library (PyJWT, `scripts/jwt_reference.py`):
/// its output, or `None` when it refuses.
fn reference_jwt(args: &[&str], stdin: &str) -> Option<String> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut child = Command::new(root.join(".local/venv/bin/python"))
        .arg(root.join("scripts/jwt_reference.py"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the venv's python (scripts/install.sh)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    out.status
        .success()
        .then(|| String::from_utf8(out.stdout).unwrap().trim().to_string())
}

#[test]
fn key_tokens_agree_with_the_reference_jwt_library_both_ways() {
    use api::domain::ids::{new_id, IdKind};
    const SECRET: &str = "a-test-signing-secret-of-enough-length-0123";
    let (kid, acct) = (new_id(IdKind::Key), new_id(IdKind::Account));
    // Ours, read by the reference.
    let ours = api_key::issue_signed(SECRET, Some("v-7"), &kid, &acct, Mode::Live);
    let token = ours.strip_prefix("rk_live_").unwrap();
    let read: serde_json::Value =
        serde_json::from_str(&reference_jwt(&["decode", SECRET, token], "").unwrap()).unwrap();
    assert_eq!(read["header"]["alg"], "HS256");
    assert_eq!(read["header"]["kid"], "v-7");
    assert_eq!(
        (
            &read["claims"]["kid"],
            &read["claims"]["acct"],
            &read["claims"]["mode"]
        ),
        (&json!(kid), &json!(acct), &json!("live"))
    );
    let other = "another-secret-that-is-long-enough-123456";
    assert_eq!(reference_jwt(&["decode", other, token], ""), None);

    // The reference's, read by ours.
    let claims = api_key::Claims {
        kid: kid.clone(),
        acct: acct.clone(),
        mode: Mode::Test,
        iat: 1,
    };
    let body = serde_json::to_string(&claims).unwrap();
    let theirs = reference_jwt(&["encode", SECRET, "HS256", "v-8"], &body).unwrap();
    let raw = format!("rk_test_{theirs}");
    assert_eq!(api_key::verify(SECRET, &raw), Some(claims.clone()));
    assert_eq!(api_key::secret_version(&raw), Some(Some("v-8".to_string())));
    // Another algorithm, even keyed with the secret, is refused.
    let hs384 = reference_jwt(&["encode", SECRET, "HS384", "-"], &body).unwrap();
    assert_eq!(api_key::verify(SECRET, &format!("rk_test_{hs384}")), None);
}
