//! The signing secret in Secrets Manager (the moto server): keys name the
//! version that signed them, so a rotation leaves older keys working.

use shared::app::App;
use shared::auth::api_key;
use shared::domain::tenant::Mode;
use shared::store::accounts;

use crate::support::{call_on, merchant_in, start, test_config};

async fn status(base: &str, key: &str) -> u16 {
    call_on(base, "GET", "/api/v1/campaigns", Some(key), None)
        .await
        .status
}

#[tokio::test]
async fn keys_of_the_old_and_new_secret_versions_work_after_a_rotation() {
    let mut config = test_config();
    config.api_key_secret_arn = Some(format!("{}/api-key-secret", config.table_name));
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
