//! What the API, the events and the portal show of a marketing asset.

use chrono::{DateTime, Utc};
use domain::asset::{Asset, AssetStatus, AssetType};
use domain::metadata::Metadata;
use domain::timestamp::{serde_ts, serde_ts_opt};
use serde::Serialize;

/// A marketing asset.
#[derive(utoipa::ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Asset)]
pub struct AssetView<'a> {
    #[schema(pattern = "^ast_[0-9A-HJKMNP-TV-Z]{26}$", example = json!("ast_01JD9B3D5F7H9K1N3Q5S7T9W1Y"))]
    id: &'a str,
    object: &'static str,
    #[serde(rename = "type")]
    kind: AssetType,
    #[schema(min_length = 1, max_length = 200)]
    name: &'a str,
    /// The text of a SWIPE_COPY asset; null for other types.
    #[schema(max_length = 20000)]
    body: Option<&'a str>,
    campaign_id: Option<&'a str>,
    #[schema(value_type = domain::metadata::MetadataSchema)]
    metadata: &'a Metadata,
    status: AssetStatus,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime, example = json!("2026-11-22T10:00:00.000Z"))]
    created_at: DateTime<Utc>,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime, example = json!("2026-11-22T10:00:00.000Z"))]
    updated_at: DateTime<Utc>,
    #[serde(with = "serde_ts_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    archived_at: Option<DateTime<Utc>>,
}

impl<'a> From<&'a Asset> for AssetView<'a> {
    fn from(a: &'a Asset) -> Self {
        AssetView {
            id: &a.id,
            object: "asset",
            kind: a.kind,
            name: &a.name,
            body: a.body.as_deref(),
            campaign_id: a.campaign_id.as_deref(),
            metadata: &a.metadata,
            status: a.status,
            created_at: a.created_at,
            updated_at: a.updated_at,
            archived_at: a.archived_at,
        }
    }
}
