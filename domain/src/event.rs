//! Events: every change of a merchant-visible record, recorded in the same
//! transaction as the change (an outbox), with the record's API view after
//! it. Webhook endpoints receive them; `GET /api/v1/events` lists them.
//! Here: their types, and an event as it is stored, listed and sent; a
//! change plans its events in `domain::change`.

use chrono::{DateTime, SubsecRound, Utc};
use serde_json::Value;

use crate::enums::wire_enum;
use crate::ids::{new_id_at, IdKind};

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

/// A new event's id and time: `now` to the millisecond, and the id made at
/// that time.
pub(crate) fn stamp(now: DateTime<Utc>) -> (String, DateTime<Utc>) {
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
