//! Configuration, read once from the environment at start-up.

use std::collections::BTreeMap;
use std::env;
use std::time::Duration;

use crate::webhook_settings::WebhookSettings;

/// Why the configuration could not be loaded. Reported at init, never per request.
#[derive(Debug, thiserror::Error)]
#[error("configuration error: {0}")]
pub struct ConfigError(String);

/// Local defaults shared by `make run`, `refctl` and the tests.
pub mod defaults {
    /// DynamoDB Local.
    pub const DYNAMODB_ENDPOINT: &str = "http://127.0.0.1:8000";
    /// The S3 emulator.
    pub const S3_ENDPOINT: &str = "http://127.0.0.1:9000";
    /// The single table.
    pub const TABLE_NAME: &str = "referrals";
    /// The private bucket.
    pub const BUCKET_NAME: &str = "referrals-local";
    /// Signing secret used only outside Lambda.
    pub const LOCAL_API_KEY_SECRET: &str = "local-development-secret-not-for-production";
    /// Client-address salt used only outside Lambda.
    pub const LOCAL_CLIENT_IP_SALT: &str = "local-client-address-salt-not-for-production";
    /// Version id of the local stack's signing secret in the moto server:
    /// fixed, with a fixed value, so keys issued before the (in-memory)
    /// emulator restarted keep their version.
    pub const LOCAL_API_KEY_SECRET_VERSION: &str = "00000000-0000-4000-8000-00000000a11e";
    /// Monthly live-mode conversion caps per plan when
    /// `PLAN_CONVERSION_QUOTAS` is not set.
    pub const PLAN_CONVERSION_QUOTAS: &str =
        "free=1000,starter=10000,growth=100000,enterprise=unlimited";
    /// Region used when none is configured.
    pub const REGION: &str = "us-east-1";
    /// Longest wait for a TCP/TLS connection to DynamoDB or S3, in milliseconds.
    pub const SDK_CONNECT_TIMEOUT_MS: u64 = 1_000;
    /// Longest wait for one attempt of an SDK call, in milliseconds.
    pub const SDK_ATTEMPT_TIMEOUT_MS: u64 = 2_000;
    /// Longest wait for an SDK call with its retries, in milliseconds; well
    /// inside the Lambda timeout so the 503 still reaches the client.
    pub const SDK_OPERATION_TIMEOUT_MS: u64 = 5_000;
    /// Attempts per SDK call, the first included.
    pub const SDK_MAX_ATTEMPTS: u64 = 3;
    /// Stripe's API.
    pub const STRIPE_API_BASE: &str = "https://api.stripe.com";
    /// PayPal's API for live integrations.
    pub const PAYPAL_LIVE_API_BASE: &str = "https://api-m.paypal.com";
    /// PayPal's API for test integrations.
    pub const PAYPAL_SANDBOX_API_BASE: &str = "https://api-m.sandbox.paypal.com";
}

/// Where the payout rails' providers are reached (contract section 14).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderBases {
    /// `STRIPE_API_BASE`.
    pub stripe: String,
    /// `PAYPAL_API_BASE` for both modes when set, else PayPal's live address.
    pub paypal_live: String,
    /// `PAYPAL_API_BASE` for both modes when set, else PayPal's sandbox.
    pub paypal_test: String,
}

impl Default for ProviderBases {
    fn default() -> Self {
        ProviderBases {
            stripe: defaults::STRIPE_API_BASE.to_string(),
            paypal_live: defaults::PAYPAL_LIVE_API_BASE.to_string(),
            paypal_test: defaults::PAYPAL_SANDBOX_API_BASE.to_string(),
        }
    }
}

impl ProviderBases {
    /// Reads `STRIPE_API_BASE` and `PAYPAL_API_BASE` (a trailing `/` is dropped).
    fn from_env() -> ProviderBases {
        let set = |name: &str| {
            env::var(name)
                .ok()
                .map(|v| v.trim().trim_end_matches('/').to_string())
                .filter(|v| !v.is_empty())
        };
        let mut bases = ProviderBases::default();
        if let Some(stripe) = set("STRIPE_API_BASE") {
            bases.stripe = stripe;
        }
        if let Some(paypal) = set("PAYPAL_API_BASE") {
            bases.paypal_live = paypal.clone();
            bases.paypal_test = paypal;
        }
        bases
    }

    /// Every provider at one address (the local stand-in).
    pub fn all_at(base: &str) -> ProviderBases {
        let base = base.trim_end_matches('/').to_string();
        ProviderBases {
            stripe: base.clone(),
            paypal_live: base.clone(),
            paypal_test: base,
        }
    }
}

/// How long the API waits on DynamoDB and S3 before it answers 503.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SdkTimeouts {
    /// Establishing a connection.
    pub connect: Duration,
    /// One attempt (request sent to response read).
    pub attempt: Duration,
    /// The whole call, retries included.
    pub operation: Duration,
    /// Attempts per call, the first included.
    pub max_attempts: u32,
}

impl Default for SdkTimeouts {
    fn default() -> Self {
        SdkTimeouts {
            connect: Duration::from_millis(defaults::SDK_CONNECT_TIMEOUT_MS),
            attempt: Duration::from_millis(defaults::SDK_ATTEMPT_TIMEOUT_MS),
            operation: Duration::from_millis(defaults::SDK_OPERATION_TIMEOUT_MS),
            max_attempts: defaults::SDK_MAX_ATTEMPTS as u32,
        }
    }
}

impl SdkTimeouts {
    /// Reads `SDK_CONNECT_TIMEOUT_MS`, `SDK_ATTEMPT_TIMEOUT_MS`,
    /// `SDK_OPERATION_TIMEOUT_MS` and `SDK_MAX_ATTEMPTS`.
    fn from_env() -> Result<SdkTimeouts, ConfigError> {
        let ms = |name, default| number(name, default).map(Duration::from_millis);
        let t = SdkTimeouts {
            connect: ms("SDK_CONNECT_TIMEOUT_MS", defaults::SDK_CONNECT_TIMEOUT_MS)?,
            attempt: ms("SDK_ATTEMPT_TIMEOUT_MS", defaults::SDK_ATTEMPT_TIMEOUT_MS)?,
            operation: ms(
                "SDK_OPERATION_TIMEOUT_MS",
                defaults::SDK_OPERATION_TIMEOUT_MS,
            )?,
            max_attempts: u32::try_from(number("SDK_MAX_ATTEMPTS", defaults::SDK_MAX_ATTEMPTS)?)
                .map_err(|_| ConfigError("SDK_MAX_ATTEMPTS is too large".into()))?,
        };
        if t.attempt > t.operation || t.connect > t.operation {
            return Err(ConfigError(
                "SDK_CONNECT_TIMEOUT_MS and SDK_ATTEMPT_TIMEOUT_MS must not exceed SDK_OPERATION_TIMEOUT_MS"
                    .into(),
            ));
        }
        Ok(t)
    }
}

/// Everything a function needs to know about its environment.
#[derive(Debug, Clone)]
pub struct Config {
    /// DynamoDB endpoint override (DynamoDB Local); `None` means AWS.
    pub dynamodb_endpoint: Option<String>,
    /// S3 endpoint override (the emulator); `None` means AWS.
    pub s3_endpoint: Option<String>,
    /// AWS region.
    pub region: String,
    /// The single DynamoDB table.
    pub table_name: String,
    /// The private S3 bucket (invoices, asset files).
    pub bucket_name: String,
    /// HMAC secret that signs API keys when no Secrets Manager secret is
    /// named (`API_KEY_SECRET`, or the local default).
    pub api_key_secret: String,
    /// The Secrets Manager secret (ARN or name) whose versions sign API keys
    /// (`API_KEY_SECRET_ARN`); `API_KEY_SECRET`, when set, overrides it.
    pub api_key_secret_arn: Option<String>,
    /// The key the client address's daily hash derives from
    /// (`CLIENT_IP_SALT`, at least 32 bytes; required in Lambda). Apart from
    /// the signing secret so the public routes never wait for a secret read.
    pub client_ip_salt: String,
    /// Secrets Manager endpoint override (`SECRETS_ENDPOINT`, else the S3
    /// emulator's, as the moto server serves both); `None` means AWS.
    pub secrets_endpoint: Option<String>,
    /// Requests per minute per client IP per public endpoint.
    pub public_rate_per_minute: u64,
    /// Requests per minute per account on authenticated endpoints.
    pub account_rate_per_minute: u64,
    /// Monthly live-mode conversion cap per plan; `None` is unlimited.
    pub plan_quotas: BTreeMap<String, Option<u64>>,
    /// Bounded waits on DynamoDB and S3.
    pub sdk_timeouts: SdkTimeouts,
    /// How live-mode payouts are paid (`PAYMENT_PROVIDER`); test mode always
    /// uses the sandbox.
    pub payment_provider: ProviderKind,
    /// How many first attempts per payout the sandbox refuses
    /// (`SANDBOX_PAYMENT_FAILURES`, default 0), to try failure handling.
    pub sandbox_failures: u32,
    /// Webhook deliveries: retry schedule, local URLs, timeout
    /// (`WEBHOOK_RETRY_SCHEDULE`, `WEBHOOK_ALLOW_LOCAL`, `WEBHOOK_TIMEOUT_MS`).
    pub webhooks: WebhookSettings,
    /// The payout rails' API addresses.
    pub providers: ProviderBases,
}

/// The payment providers shipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// Nothing is sent anywhere: a processed payout stays PROCESSING until
    /// the merchant marks it paid.
    Manual,
    /// Pays at once, with the payout id as idempotency key; never real money.
    Sandbox,
}

impl ProviderKind {
    fn parse(s: &str) -> Result<ProviderKind, ConfigError> {
        match s {
            "manual" => Ok(ProviderKind::Manual),
            "sandbox" => Ok(ProviderKind::Sandbox),
            other => Err(ConfigError(format!(
                "PAYMENT_PROVIDER must be manual or sandbox, not {other:?}"
            ))),
        }
    }
}

impl Config {
    /// Reads the environment. Inside Lambda the endpoints default to AWS and the
    /// secret is required; elsewhere everything defaults to the local stack.
    pub fn from_env() -> Result<Config, ConfigError> {
        let in_lambda = env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
        let (api_key_secret, api_key_secret_arn) = signing_secret(in_lambda)?;
        let client_ip_salt = client_ip_salt(in_lambda)?;
        let s3_endpoint = endpoint(in_lambda, "S3_ENDPOINT", defaults::S3_ENDPOINT);
        let secrets_endpoint = env::var("SECRETS_ENDPOINT")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .or_else(|| s3_endpoint.clone());
        let table_name = required_or(in_lambda, "TABLE_NAME", defaults::TABLE_NAME)?;
        let bucket_name = required_or(in_lambda, "BUCKET_NAME", defaults::BUCKET_NAME)?;
        Ok(Config {
            dynamodb_endpoint: endpoint(
                in_lambda,
                "DYNAMODB_ENDPOINT",
                defaults::DYNAMODB_ENDPOINT,
            ),
            s3_endpoint,
            region: env::var("AWS_REGION")
                .or_else(|_| env::var("AWS_DEFAULT_REGION"))
                .unwrap_or_else(|_| defaults::REGION.to_string()),
            table_name,
            bucket_name,
            api_key_secret,
            api_key_secret_arn,
            client_ip_salt,
            secrets_endpoint,
            public_rate_per_minute: number("RATE_LIMIT_PUBLIC_PER_MINUTE", 120)?,
            account_rate_per_minute: number("RATE_LIMIT_ACCOUNT_PER_MINUTE", 1200)?,
            plan_quotas: parse_quotas(
                &env::var("PLAN_CONVERSION_QUOTAS")
                    .unwrap_or_else(|_| defaults::PLAN_CONVERSION_QUOTAS.into()),
            )?,
            sdk_timeouts: SdkTimeouts::from_env()?,
            payment_provider: ProviderKind::parse(
                &env::var("PAYMENT_PROVIDER").unwrap_or_else(|_| "manual".into()),
            )?,
            sandbox_failures: u32::try_from(number("SANDBOX_PAYMENT_FAILURES", 0)?)
                .map_err(|_| ConfigError("SANDBOX_PAYMENT_FAILURES is too large".into()))?,
            webhooks: WebhookSettings::from_env().map_err(|e| ConfigError(e.to_string()))?,
            providers: ProviderBases::from_env(),
        })
    }

    /// A configuration for the local stack with the given table and endpoints (tests, bench).
    pub fn local(
        dynamodb_endpoint: &str,
        s3_endpoint: &str,
        table_name: &str,
        bucket_name: &str,
    ) -> Config {
        Config {
            dynamodb_endpoint: Some(dynamodb_endpoint.to_string()),
            s3_endpoint: Some(s3_endpoint.to_string()),
            region: defaults::REGION.to_string(),
            table_name: table_name.to_string(),
            bucket_name: bucket_name.to_string(),
            api_key_secret: defaults::LOCAL_API_KEY_SECRET.to_string(),
            api_key_secret_arn: None,
            client_ip_salt: defaults::LOCAL_CLIENT_IP_SALT.to_string(),
            secrets_endpoint: Some(s3_endpoint.to_string()),
            public_rate_per_minute: 120,
            account_rate_per_minute: 1200,
            plan_quotas: parse_quotas(defaults::PLAN_CONVERSION_QUOTAS)
                .expect("default quotas parse"),
            sdk_timeouts: SdkTimeouts::default(),
            payment_provider: ProviderKind::Manual,
            sandbox_failures: 0,
            webhooks: WebhookSettings::default(),
            providers: ProviderBases::default(),
        }
    }

    /// The monthly conversion cap of a plan; unknown plans get the smallest cap.
    pub fn conversion_quota(&self, plan: &str) -> Option<u64> {
        match self.plan_quotas.get(plan) {
            Some(q) => *q,
            None => self.plan_quotas.values().flatten().min().copied(),
        }
    }
}

/// An endpoint override: the variable when set, else AWS's inside Lambda
/// and the local stack's elsewhere.
fn endpoint(in_lambda: bool, name: &str, local: &str) -> Option<String> {
    match env::var(name) {
        Ok(v) if !v.trim().is_empty() => Some(v),
        _ if in_lambda => None,
        _ => Some(local.to_string()),
    }
}

/// The API keys' signing secret and the Secrets Manager secret naming its
/// versions: `API_KEY_SECRET` (at least 32 bytes) overrides
/// `API_KEY_SECRET_ARN`; inside Lambda one of them is required, elsewhere
/// the local secret serves.
fn signing_secret(in_lambda: bool) -> Result<(String, Option<String>), ConfigError> {
    let arn = env::var("API_KEY_SECRET_ARN")
        .ok()
        .filter(|v| !v.trim().is_empty());
    match env::var("API_KEY_SECRET") {
        Ok(v) if v.len() >= 32 => Ok((v, None)),
        Ok(_) => Err(ConfigError(
            "API_KEY_SECRET must be at least 32 bytes".into(),
        )),
        Err(_) if in_lambda && arn.is_none() => {
            Err(ConfigError("API_KEY_SECRET_ARN is not set".into()))
        }
        Err(_) => Ok((defaults::LOCAL_API_KEY_SECRET.to_string(), arn)),
    }
}

/// `CLIENT_IP_SALT` (at least 32 bytes): required inside Lambda, the local
/// salt elsewhere.
fn client_ip_salt(in_lambda: bool) -> Result<String, ConfigError> {
    match env::var("CLIENT_IP_SALT") {
        Ok(v) if v.len() >= 32 => Ok(v),
        Ok(_) => Err(ConfigError(
            "CLIENT_IP_SALT must be at least 32 bytes".into(),
        )),
        Err(_) if in_lambda => Err(ConfigError("CLIENT_IP_SALT is not set".into())),
        Err(_) => Ok(defaults::LOCAL_CLIENT_IP_SALT.to_string()),
    }
}

fn required_or(in_lambda: bool, name: &str, local: &str) -> Result<String, ConfigError> {
    match env::var(name) {
        Ok(v) if !v.trim().is_empty() => Ok(v),
        _ if in_lambda => Err(ConfigError(format!("{name} is not set"))),
        _ => Ok(local.to_string()),
    }
}

fn number(name: &str, default: u64) -> Result<u64, ConfigError> {
    match env::var(name) {
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| ConfigError(format!("{name} must be a positive integer, got {v:?}"))),
        Err(_) => Ok(default),
    }
}

/// Parses `plan=N,plan=unlimited`.
pub fn parse_quotas(s: &str) -> Result<BTreeMap<String, Option<u64>>, ConfigError> {
    let mut out = BTreeMap::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (plan, value) = part.split_once('=').ok_or_else(|| {
            ConfigError(format!(
                "PLAN_CONVERSION_QUOTAS entry {part:?} is not plan=N"
            ))
        })?;
        let value = match value.trim() {
            "unlimited" => None,
            n => Some(n.parse::<u64>().map_err(|_| {
                ConfigError(format!(
                    "PLAN_CONVERSION_QUOTAS value {n:?} is not a number or 'unlimited'"
                ))
            })?),
        };
        out.insert(plan.trim().to_string(), value);
    }
    if out.is_empty() {
        return Err(ConfigError("PLAN_CONVERSION_QUOTAS names no plan".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotas_parse_and_unknown_plans_get_the_smallest_cap() {
        let mut c = Config::local("a", "b", "t", "b");
        c.plan_quotas = parse_quotas("free=10, pro=unlimited").unwrap();
        assert_eq!(c.conversion_quota("free"), Some(10));
        assert_eq!(c.conversion_quota("pro"), None);
        assert_eq!(c.conversion_quota("mystery"), Some(10));
        assert!(parse_quotas("free").is_err());
        assert!(parse_quotas("free=lots").is_err());
    }
}
