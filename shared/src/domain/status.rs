//! A record's status as the condition of a write. The domain decides the
//! status a change applies from (the one it decided on, or a transition's
//! `from`); the store writes that typed value as the write's condition and
//! never compares or sets a status of its own.

use crate::domain::affiliate::AffiliateStatus;
use crate::domain::application::ApplicationStatus;
use crate::domain::asset::AssetStatus;
use crate::domain::conversion::ConversionStatus;
use crate::domain::integration::IntegrationStatus;
use crate::domain::payout::PayoutStatus;
use crate::domain::webhook::{DeliveryStatus, EndpointStatus};

/// A status enum a record keeps in its `status` attribute.
pub trait Status: Copy {
    /// The stored name.
    fn name(self) -> &'static str;
}

macro_rules! statuses {
    ($($t:ty),+) => {
        $(impl Status for $t {
            fn name(self) -> &'static str {
                self.as_str()
            }
        })+
    };
}

statuses!(
    AffiliateStatus,
    ApplicationStatus,
    AssetStatus,
    ConversionStatus,
    IntegrationStatus,
    PayoutStatus,
    EndpointStatus,
    DeliveryStatus
);

/// A status change the domain decided: the record moves to `to`, and only
/// while it is still in `from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition<S> {
    pub from: S,
    pub to: S,
}
