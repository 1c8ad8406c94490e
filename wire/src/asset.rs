//! What the API, the events and the portal show of a marketing asset, and
//! the bodies that create and change one.

use domain::asset::AssetChanges;
use domain::asset::SwipeCopyDraft;
use domain::asset::{Asset, AssetStatus, AssetType};
use domain::field;
use domain::metadata::Metadata;
use domain::metadata::MetadataPatch;
use domain::patch::Patch;
use domain::timestamp::Timestamp;
use serde::{Deserialize, Serialize};

/// A marketing asset.
#[derive(utoipa::ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Asset)]
pub struct AssetView<'a> {
    #[schema(value_type = domain::ids::AssetId)]
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
    created_at: Timestamp,
    updated_at: Timestamp,
    archived_at: Option<Timestamp>,
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
            created_at: a.stamps.created_at.into(),
            updated_at: a.stamps.updated_at.into(),
            archived_at: a.archived_at.map(Timestamp),
        }
    }
}

/// Body of `POST /api/v1/assets/swipe-copy`. Unknown fields (such as `type` or `status`) are
/// rejected.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = SwipeCopyCreate)]
pub struct NewSwipeCopy {
    #[schema(value_type = field::Name)]
    pub name: String,
    #[schema(value_type = field::SwipeBody)]
    pub body: String,
    /// A campaign of the key's account and mode; another one is 404.
    #[schema(value_type = Option<field::IdRef>)]
    pub campaign_id: Option<String>,
    #[schema(value_type = Option<domain::metadata::MetadataSchema>)]
    pub metadata: Option<Metadata>,
}

impl From<NewSwipeCopy> for SwipeCopyDraft {
    fn from(b: NewSwipeCopy) -> Self {
        moved! { b => SwipeCopyDraft {
            name, body, campaign_id, metadata,
        } }
    }
}

/// Body of `PATCH /api/v1/assets/{id}`: only the fields sent change. `metadata` is merged (a
/// key set to null is removed; null clears all); the merged map must keep to the metadata
/// limits. `body` is accepted for SWIPE_COPY assets only (400 otherwise). `type`, `status` and
/// `campaignId` cannot change.
#[derive(utoipa::ToSchema, Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = AssetUpdate)]
pub struct AssetPatch {
    #[serde(default)]
    #[schema(value_type = field::Name)]
    pub name: Patch<String>,
    #[serde(default)]
    #[schema(value_type = field::SwipeBody)]
    pub body: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<domain::metadata::MetadataPatchSchema>)]
    pub metadata: Patch<MetadataPatch>,
}

impl From<AssetPatch> for AssetChanges {
    fn from(b: AssetPatch) -> Self {
        moved! { b => AssetChanges {
            name, body, metadata,
        } }
    }
}
