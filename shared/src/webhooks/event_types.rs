//! The event types of contract section 10, each spelled once, and the
//! subscription rule of an endpoint's `eventTypes`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What an endpoint's `eventTypes` holds to receive every type.
pub const WILDCARD: &str = "*";

/// Declares the enum, its wire names, `ALL`, `as_str` and `parse` from one
/// list, so a type cannot be added in one place and forgotten in another.
macro_rules! event_types {
    ($($variant:ident => $name:literal),+ $(,)?) => {
        /// The type of an event (`evt_`), as it appears on the wire.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum EventType {
            $(
                #[doc = concat!("`", $name, "`")]
                $variant,
            )+
        }

        impl EventType {
            /// Every type, in the contract's order.
            pub const ALL: &'static [EventType] = &[$(EventType::$variant),+];

            /// The wire name, e.g. `payout.paid`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(EventType::$variant => $name,)+
                }
            }

            /// Reads a wire name; `None` for an unknown type.
            pub fn parse(s: &str) -> Option<EventType> {
                match s {
                    $($name => Some(EventType::$variant),)+
                    _ => None,
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

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EventType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EventType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<str>::deserialize(deserializer)?;
        EventType::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown event type {s:?}")))
    }
}

/// Whether an endpoint subscribed to `event_types` receives events of type `t`.
/// `["*"]` (or any list containing `*`) matches every type. The `webhook.test`
/// event is sent to one endpoint on request and does not go through this rule.
pub fn subscribed(event_types: &[String], t: EventType) -> bool {
    event_types.iter().any(|s| s == WILDCARD || s == t.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_round_trips_through_its_name_and_serde() {
        assert_eq!(EventType::ALL.len(), 22);
        for &t in EventType::ALL {
            assert_eq!(EventType::parse(t.as_str()), Some(t));
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{}\"", t.as_str()));
            assert_eq!(serde_json::from_str::<EventType>(&json).unwrap(), t);
            assert_eq!(t.to_string(), t.as_str());
        }
    }

    #[test]
    fn names_are_unique_and_unknown_names_are_refused() {
        let mut names: Vec<_> = EventType::ALL.iter().map(|t| t.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), EventType::ALL.len());
        for bad in [
            "",
            "*",
            "payout",
            "Payout.paid",
            "payout.paid ",
            "payout.unknown",
        ] {
            assert_eq!(EventType::parse(bad), None, "{bad:?}");
        }
        assert!(serde_json::from_str::<EventType>("\"payout.unknown\"").is_err());
    }

    #[test]
    fn subscription_matches_listed_types_or_the_wildcard() {
        let list = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let cases: &[(&[&str], EventType, bool)] = &[
            (&["*"], EventType::PayoutPaid, true),
            (&["*"], EventType::WebhookTest, true),
            (&["payout.paid"], EventType::PayoutPaid, true),
            (&["payout.paid"], EventType::PayoutApproved, false),
            (
                &["conversion.created", "payout.paid"],
                EventType::PayoutPaid,
                true,
            ),
            (&[], EventType::PayoutPaid, false),
            (&["payout.*"], EventType::PayoutPaid, false),
        ];
        for (types, t, expected) in cases {
            assert_eq!(subscribed(&list(types), *t), *expected, "{types:?} {t}");
        }
    }
}
