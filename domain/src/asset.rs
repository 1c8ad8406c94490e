//! Marketing assets affiliates use: swipe copy (text), images, files, links.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::edit::{self, Stamped, Stamps};
use crate::enums::wire_enum;
use crate::error::Error;
use crate::field;
use crate::ids::{new_id, IdKind};
use crate::metadata::{self, Metadata, MetadataPatch};
use crate::patch::Patch;
use crate::timestamp::serde_ts_opt;
use crate::validation::Issues;

wire_enum! {
    /// What an asset holds. Only swipe copy is created through the API; the other
    /// types come from the upload flow of the dashboard.
    pub enum AssetType {
        /// Ready-made text an affiliate pastes into a mail or a post.
        SwipeCopy = "SWIPE_COPY",
        Image = "IMAGE",
        File = "FILE",
        Link = "LINK",
    }
}

wire_enum! {
    /// DRAFT: an upload not finalized yet (dashboard). FINALIZED: usable. ARCHIVED:
    /// soft-deleted, kept and readable by id, hidden from lists.
    pub enum AssetStatus {
        Draft = "DRAFT",
        Finalized = "FINALIZED",
        Archived = "ARCHIVED",
    }
}

crate::status::statuses!(AssetStatus);

/// An asset as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Asset {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: AssetType,
    pub name: String,
    /// The text of a SWIPE_COPY asset.
    pub body: Option<String>,
    pub campaign_id: Option<String>,
    #[serde(default)]
    pub metadata: Metadata,
    pub status: AssetStatus,
    /// Its version and times.
    #[serde(flatten)]
    pub stamps: Stamps,
    #[serde(with = "serde_ts_opt", default)]
    pub archived_at: Option<DateTime<Utc>>,
}

/// A new swipe-copy asset as the merchant asks for it
/// (`wire::asset::NewSwipeCopy` is its body).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SwipeCopyDraft {
    pub name: String,
    pub body: String,
    pub campaign_id: Option<String>,
    pub metadata: Option<Metadata>,
}

/// An asset's changes: only what is given changes (`wire::asset::AssetPatch`
/// is their body).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssetChanges {
    pub name: Patch<String>,
    pub body: Patch<String>,
    pub metadata: Patch<MetadataPatch>,
}

fn required(path: &str, issues: &mut Issues) {
    issues.add(&[path], "invalid_type", format!("{path} cannot be null"));
}

impl Stamped for Asset {
    fn stamp(&mut self, now: DateTime<Utc>) {
        self.stamps.stamp(now);
    }
}

impl Asset {
    /// Whether the asset appears in lists that do not ask for a status:
    /// archived assets leave them.
    pub fn in_default_lists(&self) -> bool {
        self.status != AssetStatus::Archived
    }

    /// A swipe-copy asset, FINALIZED at once (text needs no upload step).
    pub fn swipe_copy(input: SwipeCopyDraft, now: DateTime<Utc>) -> Result<Asset, Error> {
        let mut issues = Issues::new();
        issues.check(field::Name::parse("name", &input.name));
        issues.check(field::SwipeBody::parse("body", &input.body));
        let metadata = input.metadata.unwrap_or_default();
        metadata::validate(&metadata, &mut issues);
        issues.finish()?;
        Ok(Asset {
            id: new_id(IdKind::Asset),
            kind: AssetType::SwipeCopy,
            name: input.name,
            body: Some(input.body),
            campaign_id: input.campaign_id,
            metadata,
            status: AssetStatus::Finalized,
            stamps: Stamps::new(now),
            archived_at: None,
        })
    }

    /// Applies a partial update. Field problems come first (400); then only a
    /// FINALIZED asset may change (409 otherwise).
    pub fn apply(&self, patch: AssetChanges, now: DateTime<Utc>) -> Result<Asset, Error> {
        let mut issues = Issues::new();
        let mut a = self.clone();
        match patch.name {
            Patch::Value(v) => {
                issues.check(field::Name::parse("name", &v));
                a.name = v;
            }
            Patch::Null => required("name", &mut issues),
            Patch::Absent => {}
        }
        match patch.body {
            _ if patch.body.is_present() && a.kind != AssetType::SwipeCopy => issues.add(
                &["body"],
                "invalid_value",
                "body can be changed on SWIPE_COPY assets only",
            ),
            Patch::Value(v) => {
                issues.check(field::SwipeBody::parse("body", &v));
                a.body = Some(v);
            }
            Patch::Null => required("body", &mut issues),
            Patch::Absent => {}
        }
        match patch.metadata {
            Patch::Value(m) => a.metadata = metadata::merge(a.metadata, m),
            Patch::Null => a.metadata.clear(),
            Patch::Absent => {}
        }
        metadata::validate(&a.metadata, &mut issues);
        issues.finish()?;
        self.require_finalized("update")?;
        Ok(edit::stamped(self, a, now))
    }

    /// FINALIZED -> ARCHIVED (kept, hidden from default lists); another state is 409.
    pub fn archive(&self, now: DateTime<Utc>) -> Result<Asset, Error> {
        self.require_finalized("archive")?;
        let mut a = self.clone();
        a.status = AssetStatus::Archived;
        a.archived_at = Some(now);
        a.stamps.stamp(now);
        Ok(a)
    }

    /// 409 unless the asset is FINALIZED, the one state that allows `action`.
    pub fn require_finalized(&self, action: &'static str) -> Result<(), Error> {
        if self.status == AssetStatus::Finalized {
            Ok(())
        } else {
            Err(Error::state("asset", self.status.as_str(), action))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy() -> Asset {
        let input = SwipeCopyDraft {
            name: "Launch".into(),
            body: "Try it".into(),
            ..Default::default()
        };
        Asset::swipe_copy(input, Utc::now()).unwrap()
    }

    /// The changes a body names, by their JSON names.
    fn patch(json: serde_json::Value) -> AssetChanges {
        use crate::patch::from_json::patch;
        AssetChanges {
            name: patch(&json, "name"),
            body: patch(&json, "body"),
            metadata: patch(&json, "metadata"),
        }
    }

    #[test]
    fn patches_merge_metadata_and_respect_type_and_state() {
        let a = copy();
        assert_eq!(a.status, AssetStatus::Finalized);
        let b = a
            .apply(
                patch(serde_json::json!({"body": "New", "metadata": {"k": "v", "gone": null}})),
                Utc::now(),
            )
            .unwrap();
        assert_eq!(b.body.as_deref(), Some("New"));
        assert_eq!(b.metadata.get("k").map(String::as_str), Some("v"));
        assert_eq!(b.stamps.version, 1);
        let mut image = a.clone();
        image.kind = AssetType::Image;
        image.body = None;
        assert!(matches!(
            image.apply(patch(serde_json::json!({"body": "x"})), Utc::now()),
            Err(Error::Validation(_))
        ));
        let mut archived = a.clone();
        archived.status = AssetStatus::Archived;
        assert!(matches!(
            archived.apply(patch(serde_json::json!({"name": "x"})), Utc::now()),
            Err(Error::InvalidState { .. })
        ));
        let many: serde_json::Map<String, serde_json::Value> =
            (0..51).map(|i| (format!("k{i}"), "v".into())).collect();
        assert!(matches!(
            a.apply(patch(serde_json::json!({ "metadata": many })), Utc::now()),
            Err(Error::Validation(_))
        ));
    }
}
