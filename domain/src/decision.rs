//! An application's decision: what accepting or rejecting it changes (the
//! application, its affiliate) and the events that say so.

use chrono::{DateTime, Utc};

use crate::affiliate::Affiliate;
use crate::application::{Application, ApplicationStatus, Decision};
use crate::change::Event;
use crate::error::Error;

/// What a decision commits, all or nothing: the application as decided
/// (only while it is still in `from`), its affiliate after it, and the two
/// events (`application.accepted` or `.rejected`, `affiliate.updated`).
#[derive(Debug, Clone)]
pub struct DecisionPlan {
    pub from: ApplicationStatus,
    pub application: Application,
    pub affiliate: Affiliate,
    pub events: Vec<Event>,
}

impl DecisionPlan {
    /// Plans `decision` on `app` as read, with its affiliate as read; only a
    /// PENDING application can be decided (409 otherwise).
    pub fn new(
        app: &Application,
        affiliate: &Affiliate,
        decision: &Decision,
        now: DateTime<Utc>,
    ) -> Result<Self, Error> {
        let application = app.decide(decision, now)?;
        let affiliate = affiliate.decided(decision, now);
        let events = vec![
            application.event(decision.event_type(), now),
            affiliate.changed_event(),
        ];
        Ok(DecisionPlan {
            from: app.status,
            application,
            affiliate,
            events,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::affiliate::{AffiliateDraft, AffiliateStatus};
    use crate::application::ApplicationStatus;
    use crate::change::Subject;
    use crate::event::EventType;
    use crate::timestamp::parse_datetime;
    use crate::validation::Issues;

    /// A signed-up affiliate (PENDING) and its pending application.
    fn signed_up() -> (Affiliate, Application) {
        let at = parse_datetime("2026-01-01T00:00:00Z").unwrap();
        let input = AffiliateDraft::from_json(
            &serde_json::json!({"campaignId": "cmp_1", "email": "a@x.io", "name": "A"}),
        );
        let e = Affiliate::enroll(input, AffiliateStatus::Pending, at, Issues::new()).unwrap();
        let app = Application::pending(&e.affiliate.id, "cmp_1", None, at);
        (e.affiliate, app)
    }

    #[test]
    fn a_decision_changes_the_application_and_its_affiliate_with_both_events() {
        let now = parse_datetime("2026-01-02T00:00:00Z").unwrap();
        let (affiliate, app) = signed_up();
        let rejected = Decision::Reject {
            reason: Some("no".into()),
        };
        for (decision, status, became, event) in [
            (
                Decision::Accept,
                ApplicationStatus::Accepted,
                AffiliateStatus::Active,
                EventType::ApplicationAccepted,
            ),
            (
                rejected,
                ApplicationStatus::Rejected,
                AffiliateStatus::Rejected,
                EventType::ApplicationRejected,
            ),
        ] {
            let plan = DecisionPlan::new(&app, &affiliate, &decision, now).unwrap();
            assert_eq!(plan.from, ApplicationStatus::Pending);
            assert_eq!(
                (plan.application.status, plan.application.decided_at),
                (status, Some(now))
            );
            assert_eq!(
                (plan.affiliate.status, plan.affiliate.stamps.version),
                (became, affiliate.stamps.version + 1)
            );
            let types: Vec<EventType> = plan.events.iter().map(|e| e.event_type).collect();
            assert_eq!(types, [event, EventType::AffiliateUpdated]);
            let Subject::Application(decided) = &plan.events[0].subject else {
                panic!("not about the application");
            };
            assert_eq!(decided.status, status);
        }
    }

    #[test]
    fn only_a_pending_application_is_decided() {
        let now = parse_datetime("2026-01-02T00:00:00Z").unwrap();
        let (affiliate, app) = signed_up();
        let accepted = DecisionPlan::new(&app, &affiliate, &Decision::Accept, now)
            .unwrap()
            .application;
        let again = DecisionPlan::new(&accepted, &affiliate, &Decision::Accept, now);
        assert!(
            matches!(again, Err(Error::InvalidState { ref current, .. }) if current == "ACCEPTED"),
            "{again:?}"
        );
    }
}
