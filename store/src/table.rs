//! The table definition, shared by `refctl tables create` and the template check.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, CreateGlobalSecondaryIndexAction, GlobalSecondaryIndex,
    GlobalSecondaryIndexUpdate, KeySchemaElement, KeyType, Projection, ProjectionType,
    ScalarAttributeType, StreamSpecification, StreamViewType, TableDescription,
    TimeToLiveSpecification,
};

use crate::attrs;
use crate::keys::Index;
use crate::Store;
use domain::error::{Error, Result};

/// What the table's stream carries: the new image of each change (the
/// webhook consumer reads event items from it).
pub const STREAM_VIEW: StreamViewType = StreamViewType::NewImage;

fn stream() -> Result<StreamSpecification> {
    StreamSpecification::builder()
        .stream_enabled(true)
        .stream_view_type(STREAM_VIEW)
        .build()
        .map_err(Error::internal)
}

/// Names of the key attributes, table then indexes.
pub fn key_attributes() -> Vec<&'static str> {
    let mut names = vec![attrs::PK, attrs::SK];
    for idx in Index::ALL {
        names.push(idx.pk());
        names.push(idx.sk());
    }
    names
}

fn key(name: &str, kind: KeyType) -> KeySchemaElement {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .expect("key schema fields set")
}

fn index(idx: Index) -> Result<GlobalSecondaryIndex> {
    GlobalSecondaryIndex::builder()
        .index_name(idx.name())
        .set_key_schema(Some(index_keys(idx)))
        .projection(all_attributes())
        .build()
        .map_err(Error::internal)
}

/// An index's keys: its partition key, then its sort key.
fn index_keys(idx: Index) -> Vec<KeySchemaElement> {
    vec![key(idx.pk(), KeyType::Hash), key(idx.sk(), KeyType::Range)]
}

/// Every index projects the whole item.
fn all_attributes() -> Projection {
    Projection::builder()
        .projection_type(ProjectionType::All)
        .build()
}

fn string_attribute(name: &str) -> Result<AttributeDefinition> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .map_err(Error::internal)
}

impl Store {
    /// Adds the indexes a table made by an earlier version lacks (a local
    /// table kept across runs), one at a time as DynamoDB requires.
    async fn add_missing_indexes(&self, have: &[String]) -> Result<()> {
        for idx in Index::ALL {
            if have.iter().any(|n| n == idx.name()) {
                continue;
            }
            let create = CreateGlobalSecondaryIndexAction::builder()
                .index_name(idx.name())
                .set_key_schema(Some(index_keys(idx)))
                .projection(all_attributes())
                .build()
                .map_err(Error::internal)?;
            self.client()
                .update_table()
                .table_name(self.table())
                .attribute_definitions(string_attribute(idx.pk())?)
                .attribute_definitions(string_attribute(idx.sk())?)
                .global_secondary_index_updates(
                    GlobalSecondaryIndexUpdate::builder().create(create).build(),
                )
                .send()
                .await
                .map_err(crate::storage_error::sdk)?;
        }
        Ok(())
    }

    /// Creates the table, its indexes, stream and TTL when missing (and adds
    /// indexes or the stream an older table lacks); returns true when created.
    pub async fn create_table(&self) -> Result<bool> {
        let exists = self
            .client()
            .describe_table()
            .table_name(self.table())
            .send()
            .await;
        if let Ok(out) = exists {
            self.bring_up_to_date(out.table()).await?;
            return Ok(false);
        }
        self.create_new_table().await?;
        Ok(true)
    }

    /// Adds what an existing table made by an earlier version lacks: its
    /// missing indexes, then its stream.
    async fn bring_up_to_date(&self, table: Option<&TableDescription>) -> Result<()> {
        let have: Vec<String> = table
            .map(|t| {
                t.global_secondary_indexes()
                    .iter()
                    .filter_map(|i| i.index_name().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        self.add_missing_indexes(&have).await?;
        let streaming = table
            .and_then(|t| t.stream_specification())
            .is_some_and(|s| s.stream_enabled());
        if !streaming {
            // A table made before webhooks: turn its stream on.
            self.client()
                .update_table()
                .table_name(self.table())
                .stream_specification(stream()?)
                .send()
                .await
                .map_err(crate::storage_error::sdk)?;
        }
        Ok(())
    }

    /// Creates the table with its indexes and stream, then turns on its TTL.
    async fn create_new_table(&self) -> Result<()> {
        let mut req = self
            .client()
            .create_table()
            .table_name(self.table())
            .billing_mode(BillingMode::PayPerRequest)
            .key_schema(key(attrs::PK, KeyType::Hash))
            .key_schema(key(attrs::SK, KeyType::Range))
            .stream_specification(stream()?);
        for name in key_attributes() {
            req = req.attribute_definitions(string_attribute(name)?);
        }
        for idx in Index::ALL {
            req = req.global_secondary_indexes(index(idx)?);
        }
        req.send().await.map_err(crate::storage_error::sdk)?;
        self.client()
            .update_time_to_live()
            .table_name(self.table())
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .enabled(true)
                    .attribute_name(attrs::TTL)
                    .build()
                    .expect("ttl fields set"),
            )
            .send()
            .await
            .map_err(crate::storage_error::sdk)?;
        Ok(())
    }

    /// Deletes the table (test clean-up).
    pub async fn delete_table(&self) -> Result<()> {
        self.client()
            .delete_table()
            .table_name(self.table())
            .send()
            .await
            .map_err(crate::storage_error::sdk)?;
        Ok(())
    }
}
