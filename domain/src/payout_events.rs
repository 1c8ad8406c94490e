//! The events of a payout's changes.

use crate::change::Event;
use crate::event::EventType;
use crate::payout::Payout;
use chrono::{DateTime, Utc};

impl Payout {
    /// An event of `event_type` about this payout.
    pub fn event(&self, event_type: EventType, now: DateTime<Utc>) -> Event {
        Event::new(event_type, self, now)
    }

    /// The events of a transition to this payout: `payout.approved` of the
    /// payout as approved in passing, when it was, then `event`, made in
    /// that order (so their ids list them in it).
    pub fn transition_events(
        &self,
        event: Option<EventType>,
        approval: Option<&Payout>,
        now: DateTime<Utc>,
    ) -> Vec<Event> {
        let mut events = Vec::new();
        if let Some(a) = approval {
            events.push(a.event(EventType::PayoutApproved, now));
        }
        if let Some(event) = event {
            events.push(self.event(event, now));
        }
        events
    }

    /// Its `payout.created` event, once its claim is complete.
    pub fn created_event(&self) -> Event {
        self.event(EventType::PayoutCreated, self.updated_at)
    }
}
