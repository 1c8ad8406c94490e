//! A change's events as the domain plans them: what happened, when, and the
//! record after it (the subject), which is rendered to the record's API
//! view where the event is written (`wire::event`). It sits above the
//! records, so no record module names an event: the records' own events
//! are made here, and the changes that plan events (a postback, a reversal,
//! a payout's moves) are modules above it.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::affiliate::{Affiliate, Enrollment};
use crate::application::Application;
use crate::asset::{Asset, AssetStatus};
use crate::campaign::Campaign;
use crate::commission_tiers::TierMark;
use crate::conversion::{Adjustment, Conversion};
use crate::event::{stamp, EventType};
use crate::payout::Payout;

/// What an event is about: the record after the change. It is rendered to
/// the record's API view where the event is written (`wire::event`), so the
/// domain decides what happened and never how it reads on the wire. Shared:
/// two events of one change about the same record hold one copy of it.
#[derive(Debug, Clone, PartialEq)]
pub enum Subject {
    Campaign(Arc<Campaign>),
    Affiliate(Arc<Affiliate>),
    Application(Arc<Application>),
    Conversion(Arc<Conversion>),
    Payout(Arc<Payout>),
    Adjustment(Arc<Adjustment>),
    Asset(Arc<Asset>),
    TierChange(Arc<TierChange>),
}

impl Subject {
    /// Whether both are the one copy of a record that events of the same
    /// change share ([`Event::also`]), so its rendering can be shared too.
    pub fn is(&self, other: &Subject) -> bool {
        std::ptr::eq(self.address(), other.address())
    }

    /// Where the record's copy is.
    fn address(&self) -> *const () {
        match self {
            Subject::Campaign(r) => Arc::as_ptr(r).cast(),
            Subject::Affiliate(r) => Arc::as_ptr(r).cast(),
            Subject::Application(r) => Arc::as_ptr(r).cast(),
            Subject::Conversion(r) => Arc::as_ptr(r).cast(),
            Subject::Payout(r) => Arc::as_ptr(r).cast(),
            Subject::Adjustment(r) => Arc::as_ptr(r).cast(),
            Subject::Asset(r) => Arc::as_ptr(r).cast(),
            Subject::TierChange(r) => Arc::as_ptr(r).cast(),
        }
    }
}

/// An affiliate's move to another commission tier, caused by a conversion.
#[derive(Debug, Clone, PartialEq)]
pub struct TierChange {
    pub affiliate_id: String,
    pub campaign_id: String,
    /// The tier now; `None`: none reached (after the campaign's tiers changed).
    pub tier: Option<TierMark>,
    /// The name of the tier before; `None`: none.
    pub previous_tier: Option<String>,
    /// Distinct paying customers referred, the crossing payment's customer included.
    pub customers_referred: u32,
    /// The conversion whose payment moved the affiliate.
    pub conversion_id: String,
}

/// One event as a change plans it: what happened, when, and the record after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: String,
    pub event_type: EventType,
    pub created_at: DateTime<Utc>,
    pub subject: Subject,
}

impl Event {
    /// A new event of `event_type` about `subject`, made at `now` to the
    /// millisecond: its id's time is its `createdAt`, so the id alone finds
    /// it where it is stored (by time).
    pub fn new(event_type: EventType, subject: impl Into<Subject>, now: DateTime<Utc>) -> Event {
        let (id, created_at) = stamp(now);
        Event {
            id,
            event_type,
            created_at,
            subject: subject.into(),
        }
    }

    /// Another event of the same change about the same record (one copy of
    /// it for both), made at `now`.
    pub fn also(&self, event_type: EventType, now: DateTime<Utc>) -> Event {
        Event::new(event_type, self.subject.clone(), now)
    }
}

/// Each record an event can be about, as its subject.
macro_rules! subjects {
    ($($variant:ident: $record:ty),* $(,)?) => {$(
        impl From<&$record> for Subject {
            fn from(r: &$record) -> Subject {
                Subject::$variant(Arc::new(r.clone()))
            }
        }

        impl From<$record> for Subject {
            fn from(r: $record) -> Subject {
                Subject::$variant(Arc::new(r))
            }
        }
    )*};
}

subjects! {
    Campaign: Campaign,
    Affiliate: Affiliate,
    Application: Application,
    Conversion: Conversion,
    Payout: Payout,
    Adjustment: Adjustment,
    Asset: Asset,
    TierChange: TierChange,
}

/// The events each record's own changes record.
impl Campaign {
    /// An event of `event_type` about this record.
    pub fn event(&self, event_type: EventType, now: DateTime<Utc>) -> Event {
        Event::new(event_type, self, now)
    }

    /// Its `campaign.created` event.
    pub fn created_event(&self) -> Event {
        self.event(EventType::CampaignCreated, self.created_at)
    }

    /// The event of the change that made it what it is: `campaign.updated`.
    pub fn changed_event(&self) -> Event {
        self.event(EventType::CampaignUpdated, self.updated_at)
    }
}

impl Asset {
    /// An event of `event_type` about this record.
    pub fn event(&self, event_type: EventType, now: DateTime<Utc>) -> Event {
        Event::new(event_type, self, now)
    }

    /// Its `asset.created` event.
    pub fn created_event(&self) -> Event {
        self.event(EventType::AssetCreated, self.stamps.created_at)
    }

    /// The event of the change that made it what it is: its archiving, or
    /// an edit.
    pub fn changed_event(&self) -> Event {
        let event_type = match self.status {
            AssetStatus::Archived => EventType::AssetArchived,
            _ => EventType::AssetUpdated,
        };
        self.event(event_type, self.stamps.updated_at)
    }
}

impl Application {
    /// An event of `event_type` about this record.
    pub fn event(&self, event_type: EventType, now: DateTime<Utc>) -> Event {
        Event::new(event_type, self, now)
    }
}

impl Affiliate {
    /// An event of `event_type` about this record.
    pub fn event(&self, event_type: EventType, now: DateTime<Utc>) -> Event {
        Event::new(event_type, self, now)
    }

    /// The event of the change that made it what it is: `affiliate.updated`.
    pub fn changed_event(&self) -> Event {
        self.event(EventType::AffiliateUpdated, self.stamps.updated_at)
    }
}

impl Enrollment {
    /// The events its transaction records: `application.created` (and
    /// `application.flagged` when the sign-up carries risk flags) for an
    /// application, and `affiliate.created`.
    pub fn events(&self) -> Vec<Event> {
        let mut events = Vec::with_capacity(3);
        if let Some(app) = &self.application {
            events.push(app.event(EventType::ApplicationCreated, app.created_at));
            if !app.risk.is_clear() {
                events.push(app.event(EventType::ApplicationFlagged, app.created_at));
            }
        }
        let a = &self.affiliate;
        events.push(a.event(EventType::AffiliateCreated, a.stamps.created_at));
        events
    }
}
