//! Events: every change of a merchant-visible record, recorded in the same
//! transaction as the change (an outbox), with the record's API view after
//! it. Webhook endpoints receive them; `GET /api/v1/events` lists them.

use chrono::{DateTime, SubsecRound, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::enums::wire_enum;
use crate::error::Error;
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
    /// A new event of `event_type` whose data is `view`, made at `now` to
    /// the millisecond: its id's time is its `createdAt`, so the id alone
    /// finds it where it is stored (by time).
    pub fn new<V: Serialize>(
        event_type: EventType,
        view: V,
        now: DateTime<Utc>,
    ) -> Result<Event, Error> {
        let created_at = now.trunc_subsecs(3);
        Ok(Event {
            id: new_id_at(IdKind::Event, created_at),
            event_type,
            created_at,
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
