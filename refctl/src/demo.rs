//! `refctl demo seed`: a demo account to try the API with, seeded once.

use std::path::Path;

use api::domain::affiliate::{Affiliate, AffiliateStatus};
use api::domain::asset::Asset;
use api::domain::campaign::Campaign;
use api::domain::signup;
use api::domain::tenant::{Mode, Tenant};
use api::domain::timestamp;
use api::domain::validation::Issues;
use api::services::app::App;
use api::services::enrollments;
use api::services::postback::{self, Recorded};
use api::store::keys::{DEMO_MARKER, RECORD_SK};
use api::store::{accounts, assets, campaigns, item_key, string_value, Item};
use api::wire::affiliate::NewAffiliate;
use api::wire::asset::NewSwipeCopy;
use api::wire::campaign::NewCampaign;
use api::wire::conversion::PostbackBody;
use api::wire::integration::NewIntegration;
use api::wire::signup::SignUp;
use api::Error;
use serde_json::{json, Value};

/// Seeds the demo data unless a previous run did; the key values are kept in
/// `keys_file` (git-ignored) because the store keeps only their hashes.
pub async fn seed(app: &App, keys_file: &Path, base_url: &str) -> Result<Value, Error> {
    if let Some(marker) = app.store.get_item(DEMO_MARKER, RECORD_SK).await? {
        return seeded_before(app, &marker, keys_file, base_url).await;
    }
    let account = accounts::create_account(&app.store, "Demo Store", "growth").await?;
    let secret = &app.signing;
    let (_, test_key) = api::services::auth::keys::create_key(
        &app.store,
        secret,
        &account.id,
        "demo test key",
        Mode::Test,
    )
    .await?;
    let (_, live_key) = api::services::auth::keys::create_key(
        &app.store,
        secret,
        &account.id,
        "demo live key",
        Mode::Live,
    )
    .await?;
    let mut campaign_ids = Vec::new();
    let mut programme = Value::Null;
    let mut conversions = Value::Null;
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
        let mut c = Campaign::create(input.into(), timestamp::now())?;
        // The demo landing page, where the portal's referral link leads.
        c.landing_url = Some(format!("{base_url}/demo/landing?campaign={}", c.id));
        campaigns::insert(&app.store, &tenant, &c).await?;
        if mode == Mode::Test {
            programme = seed_programme(app, &tenant, &c).await?;
            let code = programme["activeAffiliate"]["code"].as_str();
            conversions = seed_conversions(app, &tenant, &c, code).await?;
            programme["payouts"] = seed_payouts(app, &tenant, &c).await?;
        }
        campaign_ids.push((mode, c.id));
    }
    let stripe = seed_stripe(app, &Tenant::new(account.id.clone(), Mode::Test)).await?;
    let saved = json!({
        "accountId": account.id,
        "testKey": test_key,
        "liveKey": live_key,
        "campaigns": campaign_ids.iter().map(|(m, id)| json!({"mode": m, "id": id})).collect::<Vec<_>>(),
        "testProgramme": programme,
        "testConversions": conversions,
        "stripeIntegration": stripe,
    });
    save(keys_file, &saved)?;
    mark_seeded(app, &account.id).await?;
    let mut out = summary(true, &account.id, &saved, base_url);
    out["portal"] = portal_url(app, &account.id, base_url).await?;
    Ok(out)
}

/// What a later run shows: the keys saved at the first seed (or a note
/// when their file is gone), and the Stripe integration.
async fn seeded_before(
    app: &App,
    marker: &Item,
    keys_file: &Path,
    base_url: &str,
) -> Result<Value, Error> {
    let saved: Value = std::fs::read(keys_file)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| json!({ "note": format!("key values were shown at first seed; {} is missing", keys_file.display()) }));
    let account = api::store::string_of(marker, ACCOUNT_ID)
        .unwrap_or_default()
        .to_string();
    let saved = with_stripe(app, keys_file, &account, saved).await?;
    let mut out = summary(false, &account, &saved, base_url);
    out["portal"] = portal_url(app, &account, base_url).await?;
    Ok(out)
}

/// The marker's attribute naming the demo account.
const ACCOUNT_ID: &str = "accountId";

/// Writes the seed's key values to their git-ignored file, readable by its owner only.
fn save(keys_file: &Path, saved: &Value) -> Result<(), Error> {
    if let Some(dir) = keys_file.parent() {
        std::fs::create_dir_all(dir).map_err(Error::internal)?;
    }
    std::fs::write(
        keys_file,
        serde_json::to_vec_pretty(saved).map_err(Error::internal)?,
    )
    .map_err(Error::internal)?;
    restrict(keys_file);
    Ok(())
}

/// Records that the demo account was seeded, so later runs leave it be.
async fn mark_seeded(app: &App, account_id: &str) -> Result<(), Error> {
    let mut marker = item_key(DEMO_MARKER, RECORD_SK);
    marker.extend([
        (ACCOUNT_ID.to_string(), string_value(account_id)),
        (
            "seededAt".to_string(),
            string_value(timestamp::format(&timestamp::now())),
        ),
    ]);
    app.store.put(marker).await
}

/// Test-mode affiliates (one ACTIVE with code DEMO10, one PENDING through a
/// sign-up with its application) and a swipe-copy asset, through the same
/// domain rules and store calls the API uses.
async fn seed_programme(app: &App, tenant: &Tenant, campaign: &Campaign) -> Result<Value, Error> {
    let now = timestamp::now();
    let input: NewAffiliate = serde_json::from_value(json!({
        "campaignId": campaign.id, "email": "alice@partners.example.com",
        "name": "Alice Partner", "code": "DEMO10",
        "payoutMethod": "PAYPAL", "payoutEmail": "alice@partners.example.com",
        "website": "https://alice.example.com",
    }))
    .map_err(Error::internal)?;
    let mut active = Affiliate::enroll(input.into(), AffiliateStatus::Active, now, Issues::new())?;
    enrollments::enroll(app, tenant, &mut active).await?;
    let input: SignUp = serde_json::from_value(json!({
        "campaignId": campaign.id, "email": "bob@reviews.example.net",
        "name": "Bob Reviewer", "website": "https://reviews.example.net",
        "message": "I review SaaS tools for 40k monthly readers.",
    }))
    .map_err(Error::internal)?;
    let mut pending = signup::enroll(input.into(), campaign, None, now)?;
    enrollments::enroll(app, tenant, &mut pending).await?;
    let input: NewSwipeCopy = serde_json::from_value(json!({
        "name": "Launch week e-mail", "campaignId": campaign.id,
        "body": "Tired of spreadsheets? Try Demo SaaS free for 30 days: https://demo.example.com/?ref=DEMO10",
        "metadata": {"channel": "email"},
    }))
    .map_err(Error::internal)?;
    let asset = Asset::swipe_copy(input.into(), now)?;
    assets::insert(&app.store, tenant, &asset).await?;
    Ok(json!({
        "activeAffiliate": {"id": active.affiliate.id, "code": active.affiliate.code.as_str()},
        "pendingAffiliate": {
            "id": pending.affiliate.id,
            "applicationId": pending.application.as_ref().map(|a| a.id.clone()),
        },
        "swipeCopyAssetId": asset.id,
    }))
}

/// Test-mode conversions in two currencies through the postback's own rules
/// and store calls: a customer's first payment by affiliate code (which
/// creates the customer's referral), a recurring payment of that customer
/// recognised by `customerId`, a EUR sale by e-mail, and an unattributed EUR
/// sale filed under the campaign. Without an affiliate code they are all
/// unattributed.
pub async fn seed_conversions(
    app: &App,
    tenant: &Tenant,
    campaign: &Campaign,
    affiliate_code: Option<&str>,
) -> Result<Value, Error> {
    let now = timestamp::now();
    let days_ago = |d: i64| timestamp::format(&(now - chrono::Duration::days(d)));
    let code = affiliate_code.map_or(Value::Null, |c| json!(c));
    let payments = [
        json!({"amount": 49.00, "currency": "USD", "affiliateCode": code, "customerId": "cus_demo_1",
               "occurredAt": days_ago(40), "metadata": {"plan": "pro-monthly"}}),
        json!({"amount": 49.00, "currency": "USD", "customerId": "cus_demo_1",
               "occurredAt": days_ago(10), "metadata": {"plan": "pro-monthly"}}),
        json!({"amount": 120.00, "currency": "EUR", "affiliateCode": code,
               "customerEmail": "carol@customers.example.org", "occurredAt": days_ago(5)}),
        json!({"amount": 15.50, "currency": "EUR", "campaignId": campaign.id, "occurredAt": days_ago(1)}),
    ];
    let mut ids = Vec::new();
    for (i, mut body) in payments.into_iter().enumerate() {
        // External ids are unique across every account: make them this account's.
        body["externalId"] = json!(format!("demo-{}-order-{}", tenant.account_id, 1001 + i));
        body["conversionType"] = json!("SALE");
        if let Some(o) = body.as_object_mut() {
            o.retain(|_, v| !v.is_null());
        }
        let c = postback(app, tenant, body, now).await?;
        ids.push(
            json!({"id": c.id, "amount": c.amount.to_string(), "currency": c.currency,
                        "commission": c.commission.to_string(), "status": c.status}),
        );
    }
    Ok(json!(ids))
}

/// Records a postback body as the API would (no quota for the demo).
async fn postback(
    app: &App,
    tenant: &Tenant,
    body: Value,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<api::domain::conversion::Conversion, Error> {
    let input: PostbackBody = api::http::body::from_value(body)?;
    let p = input.validate(now)?;
    match postback::record(&app.store, &app.lookups, tenant, &p, None, now).await? {
        Recorded::Created(c) | Recorded::Replayed(c) => Ok(c),
    }
}

/// The demo Stripe integration's signing secret: local use only.
/// The demo integration's Stripe key: only the local stand-in takes it.
const DEMO_STRIPE_API_KEY: &str = "sk_test_demoLocalStandIn";
const DEMO_STRIPE_SECRET: &str = "whsec_demo_local_only_0123456789abcdef";

/// A tiny but well-formed PDF, the demo's invoice.
const DEMO_INVOICE: &[u8] = b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n";

/// Test-mode payouts in several states: four partners with paid-out sales
/// old enough to be past the hold, the payout job run once, then one payout
/// left PENDING, one with its invoice, one approved and one paid.
async fn seed_payouts(app: &App, tenant: &Tenant, campaign: &Campaign) -> Result<Value, Error> {
    let now = timestamp::now();
    let mut codes = Vec::new();
    for (name, code) in [
        ("Dana", "DANA20"),
        ("Erin", "ERIN20"),
        ("Frank", "FRANK20"),
        ("Grace", "GRACE20"),
    ] {
        let input: NewAffiliate = serde_json::from_value(json!({
            "campaignId": campaign.id, "email": format!("{}@partners.example.com", name.to_lowercase()),
            "name": format!("{name} Partner"), "code": code, "payoutMethod": "BANK_TRANSFER",
        }))
        .map_err(Error::internal)?;
        let mut e = Affiliate::enroll(input.into(), AffiliateStatus::Active, now, Issues::new())?;
        enrollments::enroll(app, tenant, &mut e).await?;
        for (i, days) in [60, 45, 30].into_iter().enumerate() {
            let body = json!({"amount": 150 + 50 * i, "currency": "USD", "affiliateCode": code,
                "externalId": format!("demo-{}-{code}-{i}", tenant.account_id), "conversionType": "SALE",
                "occurredAt": timestamp::format(&(now - chrono::Duration::days(days)))});
            postback(app, tenant, body, now).await?;
        }
        codes.push(e.affiliate.id);
    }
    api::services::payout_job::run(app, now, api::services::payout_job::Budget::default()).await?;
    let mut out = Vec::new();
    for (i, aff) in codes.iter().enumerate() {
        let filter = api::store::payouts::PayoutFilter {
            affiliate_id: Some(aff.clone()),
            ..Default::default()
        };
        let page = api::store::page::PageRequest::default();
        let Some(p) = api::store::payouts::list(&app.store, tenant, &filter, &page)
            .await?
            .items
            .pop()
        else {
            continue;
        };
        if i >= 1 {
            let key = api::services::paying::invoice::key(tenant, &p.id, "invoice-2026-001.pdf");
            app.files()
                .put(&key, DEMO_INVOICE.to_vec(), "application/pdf")
                .await?;
            api::services::invoices::on_object_created(app, &key, now).await?;
        }
        if i >= 2 {
            api::services::payouts::approve(app, tenant, &p.id, now).await?;
        }
        let p = if i >= 3 {
            let paid =
                |_: &api::domain::payout::Payout| api::domain::payout_command::Command::MarkPaid {
                    payment_date: now.date_naive(),
                    payment_method: "bank transfer".into(),
                };
            api::services::payouts::transition(app, tenant, &p.id, paid, now).await?
        } else {
            api::store::payouts::get(&app.store, tenant, &p.id).await?
        };
        out.push(json!({"id": p.id, "affiliateId": aff, "status": p.status, "amount": p.amount.to_string()}));
    }
    Ok(json!(out))
}

fn summary(seeded: bool, account: &str, saved: &Value, base_url: &str) -> Value {
    let key = saved
        .get("testKey")
        .and_then(Value::as_str)
        .unwrap_or("<test key>");
    // The test-mode campaign, whose affiliate DEMO10 the landing page can track.
    let campaign = saved
        .get("campaigns")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["mode"] == "test"))
        .and_then(|c| c["id"].as_str())
        .unwrap_or("<campaign id>");
    json!({
        "seeded": seeded,
        "accountId": account,
        "keys": saved,
        "try": format!("curl -s {base_url}/api/v1/campaigns -H 'Authorization: Bearer {key}'"),
        "landingPage": format!("{base_url}/demo/landing?ref=DEMO10&campaign={campaign}"),
        "stripeEvent": stripe_event_command(saved, base_url),
    })
}

/// A fresh one-hour portal URL for the test-mode affiliate DEMO10 (minted on
/// every run: a portal session is never stored).
async fn portal_url(app: &App, account: &str, base_url: &str) -> Result<Value, Error> {
    let tenant = Tenant::new(account.to_string(), Mode::Test);
    let Some(owner) = app
        .lookups
        .code_owner(&app.store, &tenant, "DEMO10")
        .await?
    else {
        return Ok(Value::Null);
    };
    let claims = api::services::auth::portal::PortalClaims::new(
        &tenant,
        &owner.affiliate_id,
        timestamp::now(),
    );
    let token = api::services::auth::portal::issue(&app.signing.current().await?.secret, &claims);
    Ok(json!(format!(
        "{base_url}/portal?account={account}#token={token}"
    )))
}

/// A demo seeded before integrations existed gets its Stripe integration now.
async fn with_stripe(
    app: &App,
    keys_file: &Path,
    account: &str,
    mut saved: Value,
) -> Result<Value, Error> {
    if account.is_empty() || !saved["stripeIntegration"].is_null() || saved["testKey"].is_null() {
        return Ok(saved);
    }
    saved["stripeIntegration"] =
        seed_stripe(app, &Tenant::new(account.to_string(), Mode::Test)).await?;
    std::fs::write(
        keys_file,
        serde_json::to_vec_pretty(&saved).map_err(Error::internal)?,
    )
    .map_err(Error::internal)?;
    restrict(keys_file);
    Ok(saved)
}

/// The demo's test-mode Stripe integration, with a secret for local use
/// only and a key that pays through the local Stripe stand-in.
async fn seed_stripe(app: &App, tenant: &Tenant) -> Result<Value, Error> {
    let input: NewIntegration = serde_json::from_value(json!({
        "provider": "STRIPE", "signingSecret": DEMO_STRIPE_SECRET,
        "apiKey": DEMO_STRIPE_API_KEY,
        "description": "Demo Stripe account (local only)",
    }))
    .map_err(Error::internal)?;
    let integration = api::services::integrations::create(app, tenant, input.into()).await?;
    Ok(json!({"id": integration.id, "signingSecret": DEMO_STRIPE_SECRET}))
}

/// A shell command that posts a sample Stripe `invoice.paid` for the demo
/// affiliate DEMO10, signed at run time by Stripe's own library.
fn stripe_event_command(saved: &Value, base_url: &str) -> Value {
    let Some(id) = saved["stripeIntegration"]["id"].as_str() else {
        return Value::Null;
    };
    let body = json!({
        "id": "evt_demo_$(date +%s)", "object": "event", "type": "invoice.paid", "livemode": false,
        "created": 1_111_111_111, "data": {"object": {
            "id": "in_demo_$(date +%s)", "object": "invoice", "amount_paid": 5900, "total": 5900,
            "total_excluding_tax": 4900, "currency": "usd", "customer": "cus_demo",
            "metadata": {"referral": "DEMO10"}}}
    });
    let body = body
        .to_string()
        .replace("1111111111", "$(date +%s)")
        .replace('"', "\\\"");
    json!(format!(
        "body=\"{body}\"; curl -s {base_url}/api/v1/integrations/{id}/events -H 'content-type: application/json' -H \"Stripe-Signature: $(printf %s \"$body\" | .local/venv/bin/python scripts/provider_sign.py sign stripe {DEMO_STRIPE_SECRET})\" -d \"$body\""
    ))
}

#[cfg(unix)]
fn restrict(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
}

#[cfg(not(unix))]
fn restrict(_path: &Path) {}
