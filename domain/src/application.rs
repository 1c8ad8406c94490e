//! Affiliate applications: a sign-up waiting for the merchant's decision.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::enums::wire_enum;
use crate::error::Error;
use crate::event::EventType;
use crate::ids::{new_id, sibling, IdKind};
use crate::risk::Risk;
use crate::timestamp::{serde_ts, serde_ts_opt};

wire_enum! {
    /// Where an application stands.
    pub enum ApplicationStatus {
        Pending = "PENDING",
        Accepted = "ACCEPTED",
        Rejected = "REJECTED",
    }
}

crate::status::statuses!(ApplicationStatus);

/// An application as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Application {
    pub id: String,
    pub affiliate_id: String,
    pub campaign_id: String,
    pub status: ApplicationStatus,
    /// What the applicant wrote to the merchant at sign-up.
    pub message: Option<String>,
    /// Why it was rejected, when the merchant said.
    pub reason: Option<String>,
    #[serde(with = "serde_ts")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "serde_ts")]
    pub updated_at: DateTime<Utc>,
    #[serde(with = "serde_ts_opt", default)]
    pub decided_at: Option<DateTime<Utc>>,
    /// Risk flags of the sign-up (not stored while there are none).
    #[serde(default, skip_serializing_if = "Risk::is_clear")]
    pub risk: Risk,
}

/// What the merchant decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Accept,
    Reject { reason: Option<String> },
}

impl Decision {
    /// The application's state afterwards.
    pub fn status(&self) -> ApplicationStatus {
        match self {
            Decision::Accept => ApplicationStatus::Accepted,
            Decision::Reject { .. } => ApplicationStatus::Rejected,
        }
    }

    /// The event that records the decision.
    pub fn event_type(&self) -> EventType {
        match self {
            Decision::Accept => EventType::ApplicationAccepted,
            Decision::Reject { .. } => EventType::ApplicationRejected,
        }
    }

    /// The operation's name in error messages.
    pub fn action(&self) -> &'static str {
        match self {
            Decision::Accept => "accept",
            Decision::Reject { .. } => "reject",
        }
    }
}

impl Application {
    /// A pending application for a newly signed-up affiliate. Its id shares
    /// the affiliate's ULID, so a decision reads both at once.
    pub fn pending(
        affiliate_id: &str,
        campaign_id: &str,
        message: Option<String>,
        now: DateTime<Utc>,
    ) -> Self {
        Application {
            id: sibling(affiliate_id, IdKind::Application)
                .unwrap_or_else(|| new_id(IdKind::Application)),
            affiliate_id: affiliate_id.to_string(),
            campaign_id: campaign_id.to_string(),
            status: ApplicationStatus::Pending,
            message,
            reason: None,
            created_at: now,
            updated_at: now,
            decided_at: None,
            risk: Risk::default(),
        }
    }

    /// The application after `decision`; only a pending one can be decided.
    pub fn decide(&self, decision: &Decision, now: DateTime<Utc>) -> Result<Application, Error> {
        if self.status != ApplicationStatus::Pending {
            return Err(self.refusal(decision));
        }
        let mut a = self.clone();
        a.status = decision.status();
        if let Decision::Reject { reason } = decision {
            a.reason = reason.clone();
        }
        a.updated_at = now;
        a.decided_at = Some(now);
        Ok(a)
    }

    /// The 409 for deciding this application in its status (one that
    /// stopped being PENDING: a decision raced it).
    pub fn refusal(&self, decision: &Decision) -> Error {
        Error::state("application", self.status.as_str(), decision.action())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app() -> Application {
        Application {
            id: "app_1".into(),
            affiliate_id: "aff_1".into(),
            campaign_id: "cmp_1".into(),
            status: ApplicationStatus::Pending,
            message: None,
            reason: None,
            created_at: Utc::now(),
            updated_at: Utc::now(),
            decided_at: None,
            risk: Default::default(),
        }
    }

    #[test]
    fn only_pending_applications_are_decided() {
        let reject = Decision::Reject {
            reason: Some("no".into()),
        };
        let r = app().decide(&reject, Utc::now()).unwrap();
        assert_eq!(r.status, ApplicationStatus::Rejected);
        assert_eq!(r.reason.as_deref(), Some("no"));
        assert!(r.decided_at.is_some());
        match r.decide(&Decision::Accept, Utc::now()) {
            Err(Error::InvalidState { current, .. }) => assert_eq!(current, "REJECTED"),
            other => panic!("{other:?}"),
        }
    }
}
