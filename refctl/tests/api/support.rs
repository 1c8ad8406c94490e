//! Shared test fixtures: one server per test binary, fresh accounts per test.

use std::sync::{Arc, OnceLock};

use api::domain::tenant::Mode;
use api::services::app::App;
use api::store::accounts;
use api::store::config::Config;
use reqwest::header::HeaderMap;
use serde_json::Value;

/// A running local host.
pub struct Server {
    pub base: String,
    pub app: Arc<App>,
}

/// A plan whose monthly live-mode conversion cap is tiny (quota tests).
pub const TINY_PLAN: &str = "tiny";
/// Its cap.
pub const TINY_QUOTA: u64 = 3;

/// A configuration with its own table on the test stack.
pub fn test_config() -> Config {
    let mut config = refctl::setup::test_stack_config("test");
    config
        .plan_quotas
        .insert(TINY_PLAN.to_string(), Some(TINY_QUOTA));
    // Webhooks to receivers on loopback, retried within seconds.
    config.webhooks.allow_local = true;
    config.webhooks.retry_schedule =
        api::services::webhook_delivery::RetrySchedule::parse(TEST_RETRY_SCHEDULE)
            .expect("schedule");
    config.webhooks.timeout = std::time::Duration::from_millis(1500);
    config
}

/// The retry schedule of the test servers: three retries a second apart.
pub const TEST_RETRY_SCHEDULE: &str = "1s,1s,1s";

/// Starts a server on its own thread and runtime, so it outlives each test's runtime.
pub fn start(config: Config, create_tables: bool) -> Server {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let app = App::new(config).await;
            if create_tables {
                refctl::setup::tables_create(&app)
                    .await
                    .expect("tables create");
            }
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let base = format!("http://{}", listener.local_addr().expect("addr"));
            tx.send(Server {
                base,
                app: app.clone(),
            })
            .expect("send");
            refctl::serve::serve(listener, app).await.expect("serve");
        });
    });
    rx.recv().expect("server started")
}

static SERVER: OnceLock<Server> = OnceLock::new();
static LIMITED: OnceLock<Server> = OnceLock::new();
static STRICT: OnceLock<Server> = OnceLock::new();

/// The shared server with the default configuration.
pub fn server() -> &'static Server {
    SERVER.get_or_init(|| start(test_config(), true))
}

/// A server with its own table whose rate limits are tiny, so no other test
/// spends its budget.
pub fn limited_server() -> &'static Server {
    LIMITED.get_or_init(|| {
        let mut config = test_config();
        config.public_rate_per_minute = 3;
        config.account_rate_per_minute = 4;
        start(config, true)
    })
}

static PAYOUTS: OnceLock<Server> = OnceLock::new();
static RAILS: OnceLock<Server> = OnceLock::new();
static RAILS_LATER: OnceLock<Server> = OnceLock::new();
static FAILING_PAYMENTS: OnceLock<Server> = OnceLock::new();

/// A server with its own table for the payout tests: the payout job they
/// run works on every tenant of a table, so it stays off the other tests'
/// data. Its account rate limit is out of the way of the race trials.
pub fn payouts_server() -> &'static Server {
    PAYOUTS.get_or_init(|| {
        let mut config = test_config();
        config.account_rate_per_minute = 100_000;
        start(config, true)
    })
}

/// A server with its own table for the tests that pay through the provider
/// stand-in: a payout job run at a later time (as the payout tests make)
/// asks the provider again for every payout of its table left PROCESSING,
/// which would send another test's payment again while it is under way.
pub fn rails_server() -> &'static Server {
    RAILS.get_or_init(|| {
        let mut config = test_config();
        config.account_rate_per_minute = 100_000;
        start(config, true)
    })
}

/// One more such server, for the rails test that runs the job at a later
/// time itself.
pub fn rails_later_server() -> &'static Server {
    RAILS_LATER.get_or_init(|| {
        let mut config = test_config();
        config.account_rate_per_minute = 100_000;
        start(config, true)
    })
}

/// A payouts server whose sandbox refuses the first payment attempt of
/// every payout (`SANDBOX_PAYMENT_FAILURES=1`).
pub fn failing_payments_server() -> &'static Server {
    FAILING_PAYMENTS.get_or_init(|| {
        let mut config = test_config();
        config.sandbox_failures = 1;
        start(config, true)
    })
}

/// A server with its own table whose webhook endpoints must be public
/// `https` URLs, as in the template (`WEBHOOK_ALLOW_LOCAL` off).
pub fn strict_webhooks_server() -> &'static Server {
    STRICT.get_or_init(|| {
        let mut config = test_config();
        config.webhooks.allow_local = false;
        start(config, true)
    })
}

/// A server with a table of its own for one test (leaked: it lives as long
/// as the test binary).
pub fn fresh_server() -> &'static Server {
    Box::leak(Box::new(start(test_config(), true)))
}

/// A fresh merchant account with a test and a live key.
pub struct Merchant {
    pub account_id: String,
    pub test_key: String,
    pub live_key: String,
    pub test_key_id: String,
}

/// Creates a merchant on the shared server's table.
pub async fn merchant() -> Merchant {
    merchant_on(server()).await
}

/// Clients for a server's table, built on the calling test's runtime (SDK
/// clients must not be shared across runtimes: their pooled connections die
/// with the runtime that opened them).
pub async fn app_for(server: &Server) -> Arc<App> {
    App::new(server.app.config.clone()).await
}

/// Creates a merchant on a given server's table.
pub async fn merchant_on(server: &Server) -> Merchant {
    let app = app_for(server).await;
    merchant_in(&app).await
}

/// Creates a merchant through given clients.
pub async fn merchant_in(app: &App) -> Merchant {
    let a = accounts::create_account(&app.store, "Test merchant", "growth")
        .await
        .unwrap();
    let secret = &app.signing;
    let (tk, test_key) =
        api::services::auth::keys::create_key(&app.store, secret, &a.id, "test", Mode::Test)
            .await
            .unwrap();
    let (_, live_key) =
        api::services::auth::keys::create_key(&app.store, secret, &a.id, "live", Mode::Live)
            .await
            .unwrap();
    Merchant {
        account_id: a.id,
        test_key,
        live_key,
        test_key_id: tk.id,
    }
}

/// A response, decoded.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Resp {
    /// `error.code` of a failure envelope.
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }

    /// `data` of a success envelope.
    pub fn data(&self) -> &Value {
        &self.body["data"]
    }

    /// `field` of each record of a list's `data` (none when it is no list).
    pub fn each(&self, field: &str) -> Vec<Value> {
        self.data()
            .as_array()
            .map(|all| all.iter().map(|r| r[field].clone()).collect())
            .unwrap_or_default()
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts the failure envelope's shape and code.
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "status of {:?}", self.body);
        assert_eq!(self.body["success"], Value::Bool(false), "{:?}", self.body);
        assert_eq!(self.code(), code, "{:?}", self.body);
        assert!(self.body["error"]["message"].is_string());
        assert!(self.body["error"].get("details").is_some());
        assert!(self.body["meta"]["timestamp"].is_string());
        assert_eq!(
            self.body["meta"]["requestId"].as_str(),
            self.header("x-request-id"),
            "meta.requestId equals X-Request-Id"
        );
    }
}

/// Sends a request with an optional key and raw body.
pub async fn raw(
    base: &str,
    method: &str,
    path: &str,
    key: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Resp {
    raw_from(None, base, method, path, key, headers, body).await
}

/// As [`raw`], from a client at `local` (a loopback address other than
/// 127.0.0.1 is another network to the server) when given.
pub async fn raw_from(
    local: Option<std::net::IpAddr>,
    base: &str,
    method: &str,
    path: &str,
    key: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Resp {
    let client = match local {
        Some(ip) => client_builder().local_address(ip).build().unwrap(),
        None => http_client(),
    };
    let mut req = client.request(method.parse().unwrap(), format!("{base}{path}"));
    if let Some(k) = key {
        req = req.header("authorization", format!("Bearer {k}"));
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some(b) = body {
        req = req.body(b);
    }
    let resp = req.send().await.expect("request sent");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.bytes().await.expect("body read");
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Resp {
        status,
        headers,
        body,
    }
}

/// Sends JSON (or nothing) to the shared server.
pub async fn call(method: &str, path: &str, key: Option<&str>, body: Option<Value>) -> Resp {
    call_on(&server().base, method, path, key, body).await
}

/// The events of `event_type` whose data is the record `record_id`, newest
/// first (one page of 100), as a server lists them to `key`.
pub async fn events_about(base: &str, key: &str, event_type: &str, record_id: &str) -> Vec<Value> {
    let path = format!("/api/v1/events?type={event_type}&limit=100");
    let r = call_on(base, "GET", &path, Some(key), None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let all = r.data().as_array().cloned().unwrap_or_default();
    all.into_iter()
        .filter(|e| e["data"]["id"] == record_id)
        .collect()
}

/// Sends JSON (or nothing) to a given server.
pub async fn call_on(
    base: &str,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> Resp {
    match body {
        Some(b) => {
            raw(
                base,
                method,
                path,
                key,
                &[("content-type", "application/json")],
                Some(serde_json::to_vec(&b).unwrap()),
            )
            .await
        }
        None => raw(base, method, path, key, &[], None).await,
    }
}

/// Creates a campaign and returns its JSON.
pub async fn campaign(key: &str, extra: Value) -> Value {
    let mut body = serde_json::json!({
        "name": "Campaign", "commissionType": "PERCENTAGE", "commissionValue": 10,
    });
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    let r = call("POST", "/api/v1/campaigns", Some(key), Some(body)).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    r.data().clone()
}

/// Adds an ACTIVE affiliate with a given code through the API and returns it.
pub async fn affiliate_with_code(key: &str, campaign_id: &str, code: &str) -> Value {
    let r = call(
        "POST",
        "/api/v1/affiliates",
        Some(key),
        Some(serde_json::json!({
            "campaignId": campaign_id,
            "email": format!("{}@partners.example.com", code.to_lowercase()),
            "name": code,
            "code": code,
        })),
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    r.data().clone()
}

/// A reqwest client on the workspace's one TLS set-up (reqwest is built
/// without a crypto provider of its own).
pub fn http_client() -> reqwest::Client {
    client_builder().build().unwrap()
}

fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder().use_preconfigured_tls(api::store::tls::webhook_client_config())
}
