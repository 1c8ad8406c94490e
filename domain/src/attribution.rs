//! Attribution: which affiliate a postback's payment belongs to.
//!
//! The postback's signals are tried in the contract's order and the first
//! usable one wins:
//!
//! 1. `clickId`: a click of the tenant whose window covers `occurredAt`;
//! 2. `sessionId`: the click the session stands for, same rule;
//! 3. `affiliateCode`: the tenant's affiliate with that code (any letter case);
//! 4. the customer's referral (customers bound earlier through identify or an
//!    earlier attributed payment), looked up by `customerId` (method
//!    `CUSTOMER`, ext), then by the e-mail hash (`EMAIL`), then, when the
//!    postback names no customer, by its session or click (`SESSION`/`CLICK`).
//!
//! A signal is usable when its affiliate and campaign exist in the tenant, the
//! affiliate belongs to that campaign, and, when the postback names a
//! `campaignId`, it is that campaign. An unusable signal (unknown, expired,
//! another campaign) is skipped, never an error: the payment is still recorded.
//! The affiliate's status does not matter here; only ACTIVE affiliates earn,
//! which the commission rules decide.

use chrono::{DateTime, Duration, Utc};

use crate::affiliate::{Affiliate, AffiliateStatus};
use crate::commission_plan::Pay;
use crate::commission_tiers::Referred;
use crate::conversion::AttributionMethod;

/// How much earlier than its click a payment may be dated (clock skew).
pub const CLICK_SKEW_MINUTES: i64 = 5;

/// One candidate affiliate named by a postback signal, in the order tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    pub method: AttributionMethod,
    pub affiliate_id: String,
    pub campaign_id: String,
}

/// What attribution needs to know about an affiliate of the tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AffiliateFacts {
    pub campaign_id: String,
    pub active: bool,
    /// The hash of its e-mail, as customers' e-mails are hashed (SELF_REFERRAL).
    pub email_hash: String,
    /// The network its public sign-up came from (SAME_NETWORK).
    pub signup_network: Option<String>,
    /// What its merchant pays it, before any rule.
    pub commission_override: Option<Pay>,
    /// Its distinct paying customers and tier.
    pub referred: Referred,
}

impl From<&Affiliate> for AffiliateFacts {
    fn from(a: &Affiliate) -> Self {
        AffiliateFacts {
            campaign_id: a.campaign_id.clone(),
            active: a.status == AffiliateStatus::Active,
            email_hash: crate::referral::email_hash(a.email.as_str()),
            signup_network: a.signup_network.clone(),
            commission_override: a.commission_override.clone(),
            referred: a.referred.clone(),
        }
    }
}

/// The outcome: the affiliate, its campaign and how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribution {
    pub method: AttributionMethod,
    pub affiliate_id: String,
    pub campaign_id: String,
    pub affiliate_active: bool,
    pub commission_override: Option<Pay>,
    pub referred: Referred,
}

/// Whether a click made at `created_at`, counting until `expires_at` (its
/// campaign's `cookieDays` later), covers a payment at `occurred_at`. A payment
/// dated a few minutes before its click (clock skew) still counts.
pub fn click_covers(
    created_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
    occurred_at: DateTime<Utc>,
) -> bool {
    occurred_at >= created_at - Duration::minutes(CLICK_SKEW_MINUTES) && occurred_at < expires_at
}

/// Picks the first usable signal.
///
/// `affiliate` answers for affiliates of the tenant (`None`: unknown);
/// `campaign_exists` for campaigns of the tenant; `only_campaign` is the
/// postback's `campaignId`, when given.
pub fn attribute<'a>(
    signals: &[Signal],
    affiliate: impl Fn(&str) -> Option<&'a AffiliateFacts>,
    campaign_exists: impl Fn(&str) -> bool,
    only_campaign: Option<&str>,
) -> Option<Attribution> {
    signals.iter().find_map(|s| {
        if only_campaign.is_some_and(|c| c != s.campaign_id) {
            return None;
        }
        let facts = affiliate(&s.affiliate_id)?;
        if facts.campaign_id != s.campaign_id || !campaign_exists(&s.campaign_id) {
            return None;
        }
        Some(Attribution {
            method: s.method,
            affiliate_id: s.affiliate_id.clone(),
            campaign_id: s.campaign_id.clone(),
            affiliate_active: facts.active,
            commission_override: facts.commission_override.clone(),
            referred: facts.referred.clone(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    use crate::timestamp::parse_datetime;

    fn sig(method: AttributionMethod, aff: &str, cmp: &str) -> Signal {
        Signal {
            method,
            affiliate_id: aff.into(),
            campaign_id: cmp.into(),
        }
    }

    fn facts() -> HashMap<String, AffiliateFacts> {
        HashMap::from([
            (
                "aff_a".to_string(),
                AffiliateFacts {
                    campaign_id: "cmp_1".into(),
                    active: true,
                    email_hash: String::new(),
                    signup_network: None,
                    commission_override: None,
                    referred: Referred::default(),
                },
            ),
            (
                "aff_b".to_string(),
                AffiliateFacts {
                    campaign_id: "cmp_2".into(),
                    active: false,
                    email_hash: String::new(),
                    signup_network: None,
                    commission_override: None,
                    referred: Referred::default(),
                },
            ),
        ])
    }

    fn run(signals: &[Signal], only: Option<&str>) -> Option<Attribution> {
        let f = facts();
        attribute(
            signals,
            |id| f.get(id),
            |c| c == "cmp_1" || c == "cmp_2",
            only,
        )
    }

    #[test]
    fn the_first_usable_signal_wins() {
        let signals = [
            sig(AttributionMethod::Click, "aff_b", "cmp_2"),
            sig(AttributionMethod::Code, "aff_a", "cmp_1"),
        ];
        let a = run(&signals, None).unwrap();
        assert_eq!(a.method, AttributionMethod::Click);
        assert_eq!(a.affiliate_id, "aff_b");
        assert!(!a.affiliate_active, "status is reported, not filtered");
    }

    #[test]
    fn unknown_mismatched_and_other_campaign_signals_are_skipped() {
        let signals = [
            sig(AttributionMethod::Click, "aff_gone", "cmp_1"),
            sig(AttributionMethod::Session, "aff_a", "cmp_2"),
            sig(AttributionMethod::Code, "aff_b", "cmp_2"),
            sig(AttributionMethod::Email, "aff_a", "cmp_1"),
        ];
        assert_eq!(run(&signals, None).unwrap().method, AttributionMethod::Code);
        let a = run(&signals, Some("cmp_1")).unwrap();
        assert_eq!(a.method, AttributionMethod::Email);
        assert_eq!(run(&signals, Some("cmp_9")), None);
        assert_eq!(run(&[], None), None);
    }

    #[test]
    fn clicks_cover_their_window_only() {
        let t = |s: &str| parse_datetime(s).unwrap();
        let created = t("2026-01-01T00:00:00Z");
        let expires = t("2026-01-31T00:00:00Z");
        assert!(click_covers(created, expires, t("2026-01-15T00:00:00Z")));
        assert!(click_covers(created, expires, t("2025-12-31T23:56:00Z")));
        assert!(!click_covers(created, expires, t("2025-12-31T23:54:00Z")));
        assert!(click_covers(created, expires, t("2026-01-30T23:59:59Z")));
        assert!(!click_covers(created, expires, t("2026-01-31T00:00:00Z")));
    }
}
