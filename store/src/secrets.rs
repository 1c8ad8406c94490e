//! The API key signing secret in AWS Secrets Manager (locally: the moto server).

use std::sync::{Arc, OnceLock};

use aws_sdk_secretsmanager::Client;
use aws_types::SdkConfig;

use domain::error::{Error, Result};

/// One version of the secret: its id and its value. The value is never logged.
#[derive(Clone)]
pub struct SecretVersion {
    /// Secrets Manager's version id.
    pub id: String,
    /// The secret string.
    pub value: String,
}

impl std::fmt::Debug for SecretVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretVersion")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// A secret (by ARN or name) and its client, built on first use: a
/// function's start-up builds no Secrets Manager client.
#[derive(Debug, Clone)]
pub struct Secrets {
    sdk: SdkConfig,
    endpoint: Option<String>,
    client: Arc<OnceLock<Client>>,
    id: String,
}

impl Secrets {
    /// The secret's ARN or name, reached with these SDK settings (and an
    /// endpoint override: the local emulator).
    pub fn new(sdk: &SdkConfig, endpoint: Option<String>, id: String) -> Self {
        Secrets {
            sdk: sdk.clone(),
            endpoint,
            client: Arc::new(OnceLock::new()),
            id,
        }
    }

    fn client(&self) -> &Client {
        self.client.get_or_init(|| {
            let mut conf = aws_sdk_secretsmanager::config::Builder::from(&self.sdk)
                .retry_partition(crate::sdk::retry_partition("secretsmanager"));
            if let Some(ep) = &self.endpoint {
                conf = conf.endpoint_url(ep);
            }
            Client::from_conf(conf.build())
        })
    }

    /// The version labelled `AWSCURRENT`.
    pub async fn current(&self) -> Result<SecretVersion> {
        let out = self
            .client()
            .get_secret_value()
            .secret_id(&self.id)
            .send()
            .await
            .map_err(crate::storage_error::sdk)?;
        version_of(out.version_id(), out.secret_string())
            .ok_or_else(|| Error::internal("the signing secret has no string value"))
    }

    /// A version by id; `None` when the secret has no such version.
    pub async fn version(&self, version_id: &str) -> Result<Option<SecretVersion>> {
        match self
            .client()
            .get_secret_value()
            .secret_id(&self.id)
            .version_id(version_id)
            .send()
            .await
        {
            Ok(out) => Ok(version_of(out.version_id(), out.secret_string())),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_resource_not_found_exception()) =>
            {
                Ok(None)
            }
            Err(e) => Err(crate::storage_error::sdk(e)),
        }
    }

    /// Creates the secret with a first version of a given id and value,
    /// unless it exists; true when created. Only the local stack uses it (the
    /// template generates the deployed secret).
    pub async fn create_if_missing(&self, version_id: &str, value: &str) -> Result<bool> {
        match self
            .client()
            .create_secret()
            .name(&self.id)
            .client_request_token(version_id)
            .secret_string(value)
            .description("HMAC secret that signs API keys")
            .send()
            .await
        {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_resource_exists_exception()) =>
            {
                Ok(false)
            }
            Err(e) => Err(crate::storage_error::sdk(e)),
        }
    }

    /// Puts a new version, which becomes `AWSCURRENT` (rotation); returns its id.
    pub async fn put_version(&self, value: &str) -> Result<String> {
        let out = self
            .client()
            .put_secret_value()
            .secret_id(&self.id)
            .secret_string(value)
            .send()
            .await
            .map_err(crate::storage_error::sdk)?;
        out.version_id()
            .map(str::to_string)
            .ok_or_else(|| Error::internal("the new secret version has no id"))
    }
}

fn version_of(id: Option<&str>, value: Option<&str>) -> Option<SecretVersion> {
    Some(SecretVersion {
        id: id?.to_string(),
        value: value?.to_string(),
    })
}
