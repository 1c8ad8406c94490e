//! Operator operations: tables, accounts and keys.

use api::domain::tenant::Mode;
use api::services::app::App;
use api::store::accounts;
use api::store::config::{defaults, Config, ProviderBases};
use api::Error;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

/// Creates the table and the private bucket as template.yaml declares them,
/// A configuration on the test stack (`DYNAMODB_ENDPOINT`, `S3_ENDPOINT`,
/// else its default ports) with a table and bucket of its own,
/// `<prefix>-<ulid>`: for the tests and the benchmark.
pub fn test_stack_config(prefix: &str) -> Config {
    let endpoint = |var: &str, default: &str| std::env::var(var).unwrap_or(default.to_string());
    let name = format!("{prefix}-{}", ulid::Ulid::new().to_string().to_lowercase());
    let mut config = Config::local(
        &endpoint("DYNAMODB_ENDPOINT", "http://127.0.0.1:18000"),
        &endpoint("S3_ENDPOINT", "http://127.0.0.1:19000"),
        &name,
        &name,
    );
    // The test stack's stand-in of Stripe's and PayPal's APIs.
    config.providers =
        ProviderBases::all_at(&endpoint("STRIPE_API_BASE", "http://127.0.0.1:18070"));
    config
}

/// and on the local stack the signing secret the configuration names.
pub async fn tables_create(app: &App) -> Result<Value, Error> {
    let table_created = app.store.create_table().await?;
    let bucket = app.files().bucket();
    let bucket_created = app.files().create_private_bucket().await?;
    let secret_created = local_secret_create(app).await?;
    Ok(json!({
        "table": app.config.table_name, "tableCreated": table_created,
        "bucket": bucket, "bucketCreated": bucket_created,
        "secretCreated": secret_created,
    }))
}

/// The local stack's signing secret, made in the emulator when missing. Its
/// value and version id are fixed: the emulator keeps nothing on disk, and
/// keys stored in DynamoDB Local must still verify after a restart. Never
/// against AWS, where the template generates the secret.
async fn local_secret_create(app: &App) -> Result<bool, Error> {
    let (Some(secrets), Some(_)) = (app.signing.secrets(), &app.config.secrets_endpoint) else {
        return Ok(false);
    };
    secrets
        .create_if_missing(
            defaults::LOCAL_API_KEY_SECRET_VERSION,
            defaults::LOCAL_API_KEY_SECRET,
        )
        .await
}

/// `account create`.
pub async fn account_create(app: &App, name: &str, plan: &str) -> Result<Value, Error> {
    let a = accounts::create_account(&app.store, name, plan).await?;
    Ok(json!({ "accountId": a.id, "account": a }))
}

/// `account lock` / `account unlock`.
pub async fn account_lock(app: &App, id: &str, locked: bool) -> Result<Value, Error> {
    Ok(json!({ "account": accounts::set_locked(&app.store, id, locked).await? }))
}

/// `account set-subscription`.
pub async fn account_subscription(
    app: &App,
    id: &str,
    expires: Option<DateTime<Utc>>,
) -> Result<Value, Error> {
    Ok(json!({ "account": accounts::set_subscription(&app.store, id, expires).await? }))
}

/// `account set-portal-frame-ancestors`.
pub async fn account_frame_ancestors(
    app: &App,
    id: &str,
    origins: &[String],
) -> Result<Value, Error> {
    Ok(json!({ "account": accounts::set_frame_ancestors(&app.store, id, origins).await? }))
}

/// `key create`: the value is printed once and never again.
pub async fn key_create(app: &App, account: &str, name: &str, mode: Mode) -> Result<Value, Error> {
    let (k, value) =
        api::services::auth::keys::create_key(&app.store, &app.signing, account, name, mode)
            .await?;
    Ok(json!({ "keyId": k.id, "key": value, "mode": mode, "name": k.name }))
}

/// `key revoke`.
pub async fn key_revoke(app: &App, key_id: &str) -> Result<Value, Error> {
    Ok(json!({ "key": accounts::revoke_key(&app.store, key_id).await? }))
}

/// `key list`: names and ids, never values.
pub async fn key_list(app: &App, account: &str) -> Result<Value, Error> {
    Ok(json!({ "keys": accounts::list_keys(&app.store, account).await? }))
}
