//! The private bucket: invoice files of payouts (`invoices/…`).

use aws_sdk_s3::primitives::ByteStream;

use domain::error::Result;

/// The bucket and its client.
#[derive(Debug, Clone)]
pub struct Files {
    client: aws_sdk_s3::Client,
    bucket: String,
}

/// What storage says about an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectFacts {
    pub size: u64,
    pub content_type: Option<String>,
}

impl Files {
    /// Wraps a client and a bucket name.
    pub fn new(client: aws_sdk_s3::Client, bucket: String) -> Self {
        Files { client, bucket }
    }

    /// The bucket name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// Size and content type of an object; `None` when there is none.
    pub async fn head(&self, key: &str) -> Result<Option<ObjectFacts>> {
        match self
            .client
            .head_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => Ok(Some(ObjectFacts {
                size: out
                    .content_length()
                    .and_then(|n| u64::try_from(n).ok())
                    .unwrap_or(0),
                content_type: out.content_type().map(str::to_string),
            })),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => Ok(None),
            Err(e) => Err(crate::storage_error::sdk(e)),
        }
    }

    /// The bytes and content type of an object; `None` when there is none.
    pub async fn get(&self, key: &str) -> Result<Option<(Vec<u8>, Option<String>)>> {
        let out = match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => return Ok(None),
            Err(e) => return Err(crate::storage_error::sdk(e)),
        };
        let content_type = out.content_type().map(str::to_string);
        let bytes = out
            .body
            .collect()
            .await
            .map_err(crate::storage_error::body)?
            .into_bytes();
        Ok(Some((bytes.to_vec(), content_type)))
    }

    /// Stores an object (the operator CLI's invoice attach; the emulator's bucket).
    pub async fn put(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<()> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map_err(crate::storage_error::sdk)?;
        Ok(())
    }

    /// Creates the bucket when missing and blocks public access to it, as
    /// the template declares it; true when it was created.
    pub async fn create_private_bucket(&self) -> Result<bool> {
        let created = if self
            .client
            .head_bucket()
            .bucket(&self.bucket)
            .send()
            .await
            .is_ok()
        {
            false
        } else {
            self.client
                .create_bucket()
                .bucket(&self.bucket)
                .send()
                .await
                .map_err(crate::storage_error::sdk)?;
            true
        };
        let block = aws_sdk_s3::types::PublicAccessBlockConfiguration::builder()
            .block_public_acls(true)
            .block_public_policy(true)
            .ignore_public_acls(true)
            .restrict_public_buckets(true)
            .build();
        self.client
            .put_public_access_block()
            .bucket(&self.bucket)
            .public_access_block_configuration(block)
            .send()
            .await
            .map_err(crate::storage_error::sdk)?;
        Ok(created)
    }
}
