//! Events: every change of a merchant-visible record, recorded in the same
//! transaction as the change (an outbox), with the record's API view after
//! it. Webhook endpoints receive them; `GET /api/v1/events` lists them.

use chrono::{DateTime, SubsecRound, Utc};
use serde_json::Value;

use crate::affiliate::Affiliate;
use crate::application::Application;
use crate::asset::Asset;
use crate::campaign::Campaign;
use crate::commission_tiers::TierMark;
use crate::conversion::Adjustment;
use crate::conversion::Conversion;
use crate::enums::wire_enum;
use crate::ids::{new_id_at, IdKind};
use crate::payout::Payout;

wire_enum! {
    /// The kinds of event. `webhook.test` is sent only by `POST /webhook-endpoints/{id}/test`
    /// and cannot be subscribed to.
    #[derive(Hash)]
    pub enum EventType {
        CampaignCreated = "campaign.created",
        CampaignUpdated = "campaign.updated",
        AffiliateCreated = "affiliate.created",
        AffiliateUpdated = "affiliate.updated",
        AffiliateTierChanged = "affiliate.tier_changed",
        ApplicationCreated = "application.created",
        ApplicationAccepted = "application.accepted",
        ApplicationRejected = "application.rejected",
        ApplicationFlagged = "application.flagged",
        ConversionCreated = "conversion.created",
        ConversionAttributed = "conversion.attributed",
        ConversionFlagged = "conversion.flagged",
        ConversionReleased = "conversion.released",
        ConversionApproved = "conversion.approved",
        ConversionReversed = "conversion.reversed",
        ConversionRestored = "conversion.restored",
        PayoutCreated = "payout.created",
        PayoutInvoiceUploaded = "payout.invoice_uploaded",
        PayoutApproved = "payout.approved",
        PayoutProcessing = "payout.processing",
        PayoutPaid = "payout.paid",
        PayoutRejected = "payout.rejected",
        PayoutCancelled = "payout.cancelled",
        PayoutPaymentFailed = "payout.payment_failed",
        AdjustmentCreated = "adjustment.created",
        AssetCreated = "asset.created",
        AssetUpdated = "asset.updated",
        AssetArchived = "asset.archived",
        WebhookTest = "webhook.test",
    }
}

impl EventType {
    /// Whether an endpoint subscribed to `event_types` (`["*"]`: all) gets it.
    pub fn subscribed(self, event_types: &[String]) -> bool {
        event_types.iter().any(|t| t == "*" || t == self.as_str())
    }
}

/// What an event is about: the record after the change. It is rendered to
/// the record's API view where the event is written (`wire::event`), so the
/// domain decides what happened and never how it reads on the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum Subject {
    Campaign(Box<Campaign>),
    Affiliate(Box<Affiliate>),
    Application(Box<Application>),
    Conversion(Box<Conversion>),
    Payout(Box<Payout>),
    Adjustment(Box<Adjustment>),
    Asset(Box<Asset>),
    TierChange(Box<TierChange>),
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
}

/// A new event's id and time: `now` to the millisecond, and the id made at
/// that time.
fn stamp(now: DateTime<Utc>) -> (String, DateTime<Utc>) {
    let created_at = now.trunc_subsecs(3);
    (new_id_at(IdKind::Event, created_at), created_at)
}

/// One event as it is stored, listed and sent: its data is the record's API
/// view after the change (never a private field).
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    pub id: String,
    pub event_type: EventType,
    pub created_at: DateTime<Utc>,
    pub data: Value,
}

impl Published {
    /// An event sent as it is made, never stored (`webhook.test`).
    pub fn unstored(event_type: EventType, data: Value, now: DateTime<Utc>) -> Published {
        let (id, created_at) = stamp(now);
        Published {
            id,
            event_type,
            created_at,
            data,
        }
    }
}

/// Each record an event can be about, as its subject.
macro_rules! subjects {
    ($($variant:ident: $record:ty),* $(,)?) => {$(
        impl From<&$record> for Subject {
            fn from(r: &$record) -> Subject {
                Subject::$variant(Box::new(r.clone()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_round_trip_and_subscriptions_match() {
        for t in EventType::ALL {
            assert_eq!(EventType::parse(t.as_str()), Some(t));
        }
        assert_eq!(EventType::ALL.len(), 29);
        assert!(EventType::PayoutPaid.subscribed(&["*".into()]));
        assert!(EventType::PayoutPaid.subscribed(&["payout.paid".into()]));
        assert!(!EventType::PayoutPaid.subscribed(&["payout.approved".into()]));
        assert!(!EventType::PayoutPaid.subscribed(&[]));
        assert_eq!(EventType::parse("payout.nope"), None);
    }
}
