//! What the API and the events show of an application, and of a bulk acceptance.

use domain::application::Decision;
use domain::application::{Application, ApplicationStatus};
use domain::error::{Error, ErrorCode};
use domain::field;
use domain::risk::Risk;
use domain::timestamp::Timestamp;
use domain::validation::distinct_ids;
use domain::validation::Issues;
use serde::Deserialize;
use serde::Serialize;

/// An affiliate application.
#[derive(utoipa::ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Application)]
pub struct ApplicationView<'a> {
    #[schema(value_type = domain::ids::ApplicationId)]
    id: &'a str,
    object: &'static str,
    #[schema(value_type = domain::ids::AffiliateId)]
    affiliate_id: &'a str,
    #[schema(value_type = domain::ids::CampaignId)]
    campaign_id: &'a str,
    status: ApplicationStatus,
    /// What the applicant wrote at sign-up.
    message: Option<&'a str>,
    /// The rejection reason, when one was given.
    reason: Option<&'a str>,
    created_at: Timestamp,
    updated_at: Timestamp,
    decided_at: Option<Timestamp>,
    /// Risk flags of the sign-up, and their level (see `docs/risk.md`).
    risk: &'a Risk,
}

impl<'a> From<&'a Application> for ApplicationView<'a> {
    fn from(a: &'a Application) -> Self {
        ApplicationView {
            id: &a.id,
            object: "application",
            affiliate_id: &a.affiliate_id,
            campaign_id: &a.campaign_id,
            status: a.status,
            message: a.message.as_deref(),
            reason: a.reason.as_deref(),
            created_at: a.created_at.into(),
            updated_at: a.updated_at.into(),
            decided_at: a.decided_at.map(Timestamp),
            risk: &a.risk,
        }
    }
}

/// `code` is NOT_FOUND (unknown, malformed, another account's or the other mode's id) or
/// INVALID_STATE (not PENDING); SERVER_ERROR or SERVICE_UNAVAILABLE for a transient failure of
/// that id (retry it).
#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct BulkFailure {
    pub id: String,
    pub code: ErrorCode,
    pub message: String,
}

impl BulkFailure {
    /// The failure of `id` with `err`'s code and message. An internal cause is
    /// logged and replaced, as the envelope does for a whole call.
    pub fn new(id: String, err: &Error) -> Self {
        let message = err.item_message(&id);
        BulkFailure {
            id,
            code: err.code(),
            message,
        }
    }
}

/// Every distinct id lands in exactly one list, in request order.
#[derive(utoipa::ToSchema, Serialize)]
#[schema(as = BulkAcceptResult)]
pub struct BulkAcceptView<'a> {
    pub accepted: Vec<ApplicationView<'a>>,
    pub failed: Vec<BulkFailure>,
}

/// Body of accept: an empty object (or no body). Any field is rejected.
#[derive(utoipa::ToSchema, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[schema(as = ApplicationAccept)]
pub struct AcceptApplication {}

/// Body of `POST /api/v1/applications/{id}/reject`.
#[derive(utoipa::ToSchema, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[schema(as = ApplicationReject)]
pub struct RejectApplication {
    /// Optional; a blank reason counts as none.
    #[schema(value_type = Option<field::RejectReason>)]
    pub reason: Option<String>,
}

impl RejectApplication {
    /// The decision, with a blank reason counted as none.
    pub fn into_decision(self) -> Result<Decision, Error> {
        let mut issues = Issues::new();
        let reason = self.reason.filter(|r| !r.trim().is_empty());
        if let Some(r) = &reason {
            issues.check(field::RejectReason::parse("reason", r));
        }
        issues.finish()?;
        Ok(Decision::Reject { reason })
    }
}

/// Body of `POST /api/v1/applications/bulk-accept`.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = BulkAcceptRequest)]
pub struct BulkAccept {
    /// 1-100 ids (more, or none: 400 VALIDATION_FAILED and nothing changes). A repeated id is
    /// handled once.
    #[schema(min_items = 1, max_items = 100)]
    pub application_ids: Vec<String>,
}

impl BulkAccept {
    /// 1-100 ids as sent, each kept once in first-seen order.
    pub fn ids(self) -> Result<Vec<String>, Error> {
        distinct_ids(
            "applicationIds",
            self.application_ids,
            domain::limits!(BulkAccept, "applicationIds").max_items,
        )
        .map_err(|issue| Error::Validation(vec![issue]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_ids_are_bounded_and_deduplicated() {
        let ids = |n: usize| BulkAccept {
            application_ids: (0..n).map(|i| format!("app_{}", i % 3)).collect(),
        };
        assert!(ids(0).ids().is_err());
        assert!(ids(101).ids().is_err());
        assert_eq!(ids(100).ids().unwrap(), ["app_0", "app_1", "app_2"]);
        let long = RejectApplication {
            reason: Some("x".repeat(1001)),
        };
        assert!(long.into_decision().is_err());
        let blank = RejectApplication {
            reason: Some("  ".into()),
        };
        assert_eq!(
            blank.into_decision().unwrap(),
            Decision::Reject { reason: None }
        );
    }
}
