//! The application context: configuration and SDK clients, built once per process.

use std::sync::Arc;
#[cfg(feature = "files")]
use std::sync::OnceLock;

#[cfg(feature = "files")]
use aws_types::SdkConfig;

use crate::auth::signing::SigningKeys;
use crate::lookups::Lookups;
#[cfg(feature = "files")]
use crate::paying::provider::Payments;
use crate::rails::Rails;
use crate::webhook_delivery::Webhooks;
use store::config::Config;
#[cfg(feature = "files")]
use store::files::Files;
use store::metrics::{CallCounter, CallMetrics};
use store::secrets::Secrets;
use store::Store;

/// Everything a handler needs, shared across invocations.
#[derive(Debug, Clone)]
pub struct App {
    pub config: Config,
    pub store: Store,
    /// The private bucket (payout invoices), its client built on first use:
    /// only the functions that touch S3 ever build one.
    #[cfg(feature = "files")]
    files: Arc<OnceLock<Files>>,
    /// The SDK settings the lazily built clients start from.
    #[cfg(feature = "files")]
    sdk: SdkConfig,
    /// How payouts are paid, per mode.
    #[cfg(feature = "files")]
    pub payments: Arc<Payments>,
    /// The payout rails' provider APIs (Stripe Connect).
    pub rails: Arc<Rails>,
    /// The public tracking path's cached lookups.
    pub lookups: Arc<Lookups>,
    /// Webhook deliveries: the HTTP client, the retry schedule, the URL rule.
    pub webhooks: Arc<Webhooks>,
    /// The secrets that sign and verify API keys.
    pub signing: Arc<SigningKeys>,
}

impl App {
    /// Builds the clients for a configuration (see [`store::sdk::config`]).
    pub async fn new(config: Config) -> Arc<App> {
        let sdk = store::sdk::config(&config).await;

        let metrics = Arc::new(CallMetrics::default());
        let mut ddb = aws_sdk_dynamodb::config::Builder::from(&sdk)
            .interceptor(CallCounter(metrics.clone()))
            .retry_partition(store::sdk::retry_partition("dynamodb"));
        if let Some(ep) = &config.dynamodb_endpoint {
            ddb = ddb.endpoint_url(ep);
        }
        let signing = match &config.api_key_secret_arn {
            Some(arn) => SigningKeys::manager(Secrets::new(
                &sdk,
                config.secrets_endpoint.clone(),
                arn.clone(),
            )),
            None => SigningKeys::plain(&config.api_key_secret),
        };
        let store = Store::new(
            aws_sdk_dynamodb::Client::from_conf(ddb.build()),
            config.table_name.clone(),
            metrics,
        );
        Arc::new(App {
            store,
            #[cfg(feature = "files")]
            files: Arc::new(OnceLock::new()),
            #[cfg(feature = "files")]
            sdk,
            #[cfg(feature = "files")]
            payments: Arc::new(Payments::new(&config)),
            rails: Arc::new(Rails::new(&config)),
            lookups: Arc::new(Lookups::default()),
            webhooks: Arc::new(Webhooks::new(&config.webhooks)),
            signing: Arc::new(signing),
            config,
        })
    }

    /// Builds the clients. The signing secret is not read here: the first
    /// request that needs it reads it beside its own reads (see
    /// `lambda::run`), and a read that fails is that request's 503, tried
    /// again by the next.
    pub async fn init(config: Config) -> Result<Arc<App>, domain::Error> {
        Ok(App::new(config).await)
    }
}

#[cfg(feature = "files")]
impl App {
    /// The private bucket; its S3 client is built the first time it is needed.
    pub fn files(&self) -> &Files {
        self.files.get_or_init(|| {
            let mut s3 = aws_sdk_s3::config::Builder::from(&self.sdk)
                .retry_partition(store::sdk::retry_partition("s3"));
            if let Some(ep) = &self.config.s3_endpoint {
                s3 = s3.endpoint_url(ep).force_path_style(true);
            }
            Files::new(
                aws_sdk_s3::Client::from_conf(s3.build()),
                self.config.bucket_name.clone(),
            )
        })
    }
}

/// Installs the JSON log subscriber once. `RUST_LOG` filters it by level and
/// target (`warn`, `info,services=debug`); a value that does not parse, or
/// none, means `info`.
pub fn init_tracing() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .and_then(|v| v.parse::<tracing_subscriber::filter::Targets>().ok())
        .unwrap_or_else(|| {
            tracing_subscriber::filter::Targets::new()
                .with_default(tracing_subscriber::filter::LevelFilter::INFO)
        });
    let _ = tracing_subscriber::fmt()
        .json()
        .with_current_span(true)
        .with_span_list(false)
        .with_target(false)
        .finish()
        .with(filter)
        .try_init();
}
