//! Events: every change of a merchant-visible record, recorded in the same
//! transaction as the change (an outbox), with the record's API view after
//! it. Webhook endpoints receive them; `GET /api/v1/events` lists them.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::error::Error;
use crate::ids::{new_id, IdKind};

macro_rules! event_types {
    ($($variant:ident => $name:literal),+ $(,)?) => {
        /// The kinds of event.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum EventType {
            $($variant),+
        }

        impl EventType {
            /// Every type, in the documented order.
            pub const ALL: &'static [EventType] = &[$(EventType::$variant),+];

            /// The wire name (`payout.paid`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(EventType::$variant => $name),+
                }
            }
        }
    };
}

event_types! {
    CampaignCreated => "campaign.created",
    CampaignUpdated => "campaign.updated",
    AffiliateCreated => "affiliate.created",
    AffiliateUpdated => "affiliate.updated",
    ApplicationCreated => "application.created",
    ApplicationAccepted => "application.accepted",
    ApplicationRejected => "application.rejected",
    ConversionCreated => "conversion.created",
    ConversionApproved => "conversion.approved",
    ConversionReversed => "conversion.reversed",
    PayoutCreated => "payout.created",
    PayoutInvoiceUploaded => "payout.invoice_uploaded",
    PayoutApproved => "payout.approved",
    PayoutProcessing => "payout.processing",
    PayoutPaid => "payout.paid",
    PayoutRejected => "payout.rejected",
    PayoutCancelled => "payout.cancelled",
    PayoutPaymentFailed => "payout.payment_failed",
    AssetCreated => "asset.created",
    AssetUpdated => "asset.updated",
    AssetArchived => "asset.archived",
    WebhookTest => "webhook.test",
}

impl EventType {
    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<EventType> {
        Self::ALL.iter().copied().find(|t| t.as_str() == s)
    }

    /// Whether an endpoint subscribed to `event_types` (`["*"]`: all) gets it.
    pub fn subscribed(self, event_types: &[String]) -> bool {
        event_types.iter().any(|t| t == "*" || t == self.as_str())
    }
}

impl Serialize for EventType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for EventType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        EventType::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown event type {s}")))
    }
}

/// One event: what happened, when, and the record's API view after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: String,
    pub event_type: EventType,
    pub created_at: DateTime<Utc>,
    /// The record's API view (never a private field).
    pub data: Value,
}

impl Event {
    /// A new event of `event_type` whose data is `view`.
    pub fn new<V: Serialize>(
        event_type: EventType,
        view: V,
        now: DateTime<Utc>,
    ) -> Result<Event, Error> {
        Ok(Event {
            id: new_id(IdKind::Event),
            event_type,
            created_at: now,
            data: serde_json::to_value(view).map_err(Error::internal)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_round_trip_and_subscriptions_match() {
        for t in EventType::ALL {
            assert_eq!(EventType::parse(t.as_str()), Some(*t));
        }
        assert_eq!(EventType::ALL.len(), 22);
        assert!(EventType::PayoutPaid.subscribed(&["*".into()]));
        assert!(EventType::PayoutPaid.subscribed(&["payout.paid".into()]));
        assert!(!EventType::PayoutPaid.subscribed(&["payout.approved".into()]));
        assert!(!EventType::PayoutPaid.subscribed(&[]));
        assert_eq!(EventType::parse("payout.nope"), None);
    }
}
