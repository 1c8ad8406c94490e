//! The settings every AWS SDK client of a process starts from: the region,
//! the one HTTP client (`store::tls`), credentials, and the configured
//! timeouts and retry bound, so a stalled store fails a call instead of
//! holding it until the Lambda dies.
//!
//! The functions take the credentials Lambda puts in their environment (the
//! execution role's keys and session token) and nothing else, so they leave
//! `aws-config` and its whole provider chain out of their binaries. The
//! operator CLI, on an engineer's machine, enables the `credential-chain`
//! feature: profiles, SSO, web identity and instance metadata. Endpoint
//! overrides mean the local stack, which takes static credentials either way.

use aws_credential_types::provider::SharedCredentialsProvider;
use aws_credential_types::Credentials;
use aws_sdk_dynamodb::config::retry::{RetryPartition, TokenBucket};
use aws_sdk_dynamodb::config::BehaviorVersion;
use aws_smithy_types::retry::RetryConfig;
use aws_smithy_types::timeout::TimeoutConfig;
use aws_types::region::Region;
use aws_types::SdkConfig;

use crate::config::Config;

/// The SDK settings of this process (see the module's documentation).
pub async fn config(config: &Config) -> SdkConfig {
    #[cfg(feature = "credential-chain")]
    return chain_config(config).await;
    #[cfg(not(feature = "credential-chain"))]
    return plain_config(config, |name| std::env::var(name).ok());
}

/// The settings without `aws-config`: credentials from `var` (the process
/// environment), or the local stack's static ones.
pub fn plain_config(config: &Config, var: impl Fn(&str) -> Option<String>) -> SdkConfig {
    let mut builder = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .http_client(crate::tls::sdk_http_client())
        .region(Region::new(config.region.clone()))
        .timeout_config(timeouts(config))
        .retry_config(retries(config));
    if let Some(credentials) = local_credentials(config).or_else(|| lambda_credentials(var)) {
        builder = builder.credentials_provider(SharedCredentialsProvider::new(credentials));
    }
    builder.build()
}

/// The settings with the whole credential chain of `aws-config`.
#[cfg(feature = "credential-chain")]
async fn chain_config(config: &Config) -> SdkConfig {
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(crate::tls::sdk_http_client())
        .region(Region::new(config.region.clone()))
        .timeout_config(timeouts(config))
        .retry_config(retries(config));
    if let Some(local) = local_credentials(config) {
        loader = loader.credentials_provider(local);
    }
    loader.load().await
}

fn timeouts(config: &Config) -> TimeoutConfig {
    let t = config.sdk_timeouts;
    TimeoutConfig::builder()
        .connect_timeout(t.connect)
        .operation_attempt_timeout(t.attempt)
        .operation_timeout(t.operation)
        .build()
}

fn retries(config: &Config) -> RetryConfig {
    RetryConfig::standard().with_max_attempts(config.sdk_timeouts.max_attempts)
}

/// A client's retry partition: retries are bounded per call (at most
/// `SDK_MAX_ATTEMPTS` attempts within the operation timeout), under no
/// process-wide quota. The SDK's standard quota (500 tokens, a retry taking
/// 5 to 10, refilled only by successes) stayed drained for minutes after an
/// outage, so a short stall right after one got no retries at all.
pub fn retry_partition(client: &'static str) -> RetryPartition {
    RetryPartition::custom(client)
        .token_bucket(TokenBucket::unlimited())
        .build()
}

/// Static credentials for the local stack (any endpoint override).
fn local_credentials(config: &Config) -> Option<Credentials> {
    (config.dynamodb_endpoint.is_some() || config.s3_endpoint.is_some())
        .then(|| Credentials::new("local", "local", None, None, "local"))
}

/// The credentials Lambda sets for the execution role; `None` when the
/// key id or the secret is missing (every call then fails, saying so).
fn lambda_credentials(var: impl Fn(&str) -> Option<String>) -> Option<Credentials> {
    let var = |name: &str| var(name).filter(|v| !v.is_empty());
    Some(Credentials::new(
        var("AWS_ACCESS_KEY_ID")?,
        var("AWS_SECRET_ACCESS_KEY")?,
        var("AWS_SESSION_TOKEN"),
        None,
        "environment",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn lambda_credentials_come_from_the_execution_role_variables() {
        let full = [
            ("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_SESSION_TOKEN", "token"),
        ];
        let c = lambda_credentials(vars(&full)).unwrap();
        assert_eq!(
            (c.access_key_id(), c.secret_access_key(), c.session_token()),
            ("ASIAEXAMPLE", "secret", Some("token"))
        );
        let no_token = lambda_credentials(vars(&full[..2])).unwrap();
        assert_eq!(no_token.session_token(), None);
        assert!(lambda_credentials(vars(&full[1..])).is_none());
        assert!(lambda_credentials(vars(&[
            ("AWS_ACCESS_KEY_ID", "A"),
            ("AWS_SECRET_ACCESS_KEY", "")
        ]))
        .is_none());
    }

    #[test]
    fn the_local_stack_takes_static_credentials_before_the_environment() {
        let env = [
            ("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
        ];
        let mut config = Config::local("http://127.0.0.1:1", "http://127.0.0.1:2", "t", "b");
        assert_eq!(local_credentials(&config).unwrap().access_key_id(), "local");
        config.dynamodb_endpoint = None;
        config.s3_endpoint = None;
        assert!(local_credentials(&config).is_none());
        let sdk = plain_config(&config, vars(&env));
        assert!(sdk.credentials_provider().is_some());
        assert!(plain_config(&config, vars(&[]))
            .credentials_provider()
            .is_none());
        assert_eq!(
            sdk.region().map(|r| r.as_ref()),
            Some(config.region.as_str())
        );
        let t = sdk.timeout_config().unwrap();
        assert_eq!(
            t.operation_attempt_timeout(),
            Some(config.sdk_timeouts.attempt)
        );
    }
}
