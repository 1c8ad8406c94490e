//! `refctl demo seed`: a demo account to try the API with, seeded once.

use std::path::Path;

use serde_json::{json, Value};
use shared::domain::campaign::{Campaign, NewCampaign};
use shared::domain::tenant::{Mode, Tenant};
use shared::store::keys::{DEMO_MARKER, RECORD_SK};
use shared::store::{accounts, campaigns, s, Item};
use shared::{timestamp, App, Error};

/// Seeds the demo data unless a previous run did; the key values are kept in
/// `keys_file` (git-ignored) because the store keeps only their hashes.
pub async fn seed(app: &App, keys_file: &Path, base_url: &str) -> Result<Value, Error> {
    if let Some(marker) = app.store.get_item(DEMO_MARKER, RECORD_SK).await? {
        let saved: Value = std::fs::read(keys_file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_else(|| json!({ "note": format!("key values were shown at first seed; {} is missing", keys_file.display()) }));
        let account = shared::store::get_s(&marker, "accountId")
            .unwrap_or_default()
            .to_string();
        return Ok(summary(false, &account, &saved, base_url));
    }
    let account = accounts::create_account(&app.store, "Demo Store", "growth").await?;
    let secret = &app.config.api_key_secret;
    let (_, test_key) =
        accounts::create_key(&app.store, secret, &account.id, "demo test key", Mode::Test).await?;
    let (_, live_key) =
        accounts::create_key(&app.store, secret, &account.id, "demo live key", Mode::Live).await?;
    let mut campaign_ids = Vec::new();
    for mode in [Mode::Test, Mode::Live] {
        let tenant = Tenant::new(account.id.clone(), mode);
        let input: NewCampaign = serde_json::from_value(json!({
            "name": "Demo SaaS partner programme",
            "description": "20% of every payment for the first 12 months.",
            "commissionType": "PERCENTAGE", "commissionValue": 20,
            "commissionRecurring": true, "recurringMonthsLimit": 12,
            "cookieDays": 30, "holdDays": 14, "minimumPayout": 50,
            "isPublic": true, "autoApproveAffiliates": false,
        }))
        .map_err(Error::internal)?;
        let c = Campaign::create(input, timestamp::now())?;
        campaigns::insert(&app.store, &tenant, &c).await?;
        campaign_ids.push((mode, c.id));
    }
    let saved = json!({
        "accountId": account.id,
        "testKey": test_key,
        "liveKey": live_key,
        "campaigns": campaign_ids.iter().map(|(m, id)| json!({"mode": m, "id": id})).collect::<Vec<_>>(),
    });
    if let Some(dir) = keys_file.parent() {
        std::fs::create_dir_all(dir).map_err(Error::internal)?;
    }
    std::fs::write(
        keys_file,
        serde_json::to_vec_pretty(&saved).map_err(Error::internal)?,
    )
    .map_err(Error::internal)?;
    restrict(keys_file);
    let marker: Item = [
        ("pk".to_string(), s(DEMO_MARKER)),
        ("sk".to_string(), s(RECORD_SK)),
        ("accountId".to_string(), s(account.id.clone())),
        (
            "seededAt".to_string(),
            s(timestamp::format(&timestamp::now())),
        ),
    ]
    .into_iter()
    .collect();
    app.store.put(marker).await?;
    Ok(summary(true, &account.id, &saved, base_url))
}

fn summary(seeded: bool, account: &str, saved: &Value, base_url: &str) -> Value {
    let key = saved
        .get("testKey")
        .and_then(Value::as_str)
        .unwrap_or("<test key>");
    json!({
        "seeded": seeded,
        "accountId": account,
        "keys": saved,
        "try": format!("curl -s {base_url}/api/v1/campaigns -H 'Authorization: Bearer {key}'"),
    })
}

#[cfg(unix)]
fn restrict(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
}

#[cfg(not(unix))]
fn restrict(_path: &Path) {}
