//! Click tracking for the browser script: click and session ids, the
//! attribution window, hashing of client addresses, and what the two
//! public requests ask for (their bodies are `wire::tracking`'s).
//!
//! A click is one record, `clk_<ULID>`; its session is `ses_<ULID>` with the
//! same ULID, so a session resolves to its click with one GetItem and needs no
//! record of its own. A click counts until `expiresAt` (`cookieDays` after it
//! was made); DynamoDB's TTL removes it some time later, and readers treat an
//! expired click as absent before that happens.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use ulid::Ulid;

use crate::affiliate_code::AffiliateCode;
use crate::campaign::Campaign;
use crate::error::Error;
use crate::field;
use crate::ids::{self, IdKind};
use crate::timestamp::serde_ts;
use crate::validation::Issues;

/// A click and the session derived from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClickIds {
    /// `clk_<ULID>`.
    pub click_id: String,
    /// `ses_<ULID>`, the same ULID.
    pub session_id: String,
}

impl ClickIds {
    /// Fresh ids for a new click.
    pub fn generate() -> Self {
        let ulid = Ulid::new();
        ClickIds {
            click_id: format!("{}_{ulid}", IdKind::Click.prefix()),
            session_id: format!("{}_{ulid}", IdKind::Session.prefix()),
        }
    }
}

/// The click id a session id stands for; `None` when the session id is malformed.
pub fn click_id_of_session(session_id: &str) -> Option<String> {
    ids::is_valid(IdKind::Session, session_id).then(|| swap_prefix(session_id, IdKind::Click))
}

/// The session id of a click id; `None` when the click id is malformed.
pub fn session_id_of_click(click_id: &str) -> Option<String> {
    ids::is_valid(IdKind::Click, click_id).then(|| swap_prefix(click_id, IdKind::Session))
}

fn swap_prefix(id: &str, to: IdKind) -> String {
    let body = id.split_once('_').map_or(id, |(_, b)| b);
    format!("{}_{body}", to.prefix())
}

/// When a click made at `now` stops counting: `cookie_days` later.
pub fn expires_at(now: DateTime<Utc>, cookie_days: u32) -> DateTime<Utc> {
    now + Duration::days(i64::from(cookie_days))
}

/// A stored click (`pk = clk_<ULID>`, `sk = "R"`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Click {
    /// The click id; it is the record's key, not an attribute.
    #[serde(skip)]
    pub id: String,
    /// The owner's tenant key (`acct_…#live`).
    pub tenant: String,
    pub campaign_id: String,
    pub affiliate_id: String,
    /// The affiliate code as the link carried it.
    pub code: String,
    #[serde(with = "serde_ts")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "serde_ts")]
    pub expires_at: DateTime<Utc>,
    /// `expiresAt` in epoch seconds, for DynamoDB's TTL.
    pub ttl: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landing_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub referrer: Option<String>,
    /// `client_ip::hash_ip` of the client address; never the address itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_hash: Option<String>,
    /// The session the browser held before this click, when it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_session_id: Option<String>,
    /// CLICK_FLOOD: beyond the campaign's hourly clicks for its code from its
    /// network; recorded, never used for attribution.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flooded: bool,
    /// Customers its session bound through identify (each identify that
    /// bound something new counts one), up to [`MAX_CUSTOMERS_PER_SESSION`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub customers_bound: u32,
}

/// Customers one session may bind through identify: a browser is one
/// customer, or a few on a shared computer; a session that names more is
/// claiming customers that are not its own (first touch would keep them).
pub const MAX_CUSTOMERS_PER_SESSION: u32 = 5;

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Click {
    /// A click recorded at `now` for a resolved campaign and affiliate; the
    /// client address is kept only as its hash.
    pub fn record(
        request: ClickDraft,
        ids: &ClickIds,
        tenant_key: String,
        campaign: &Campaign,
        affiliate_id: String,
        ip_hash: Option<String>,
        now: DateTime<Utc>,
    ) -> Click {
        let expires_at = expires_at(now, campaign.cookie_days);
        Click {
            id: ids.click_id.clone(),
            tenant: tenant_key,
            campaign_id: campaign.id.clone(),
            affiliate_id,
            code: request.code,
            created_at: now,
            expires_at,
            ttl: expires_at.timestamp(),
            landing_url: request.url.filter(|u| !u.is_empty()),
            referrer: request.referrer.filter(|r| !r.is_empty()),
            ip_hash,
            previous_session_id: request.session_id,
            flooded: false,
            customers_bound: 0,
        }
    }

    /// The session id derived from this click.
    pub fn session_id(&self) -> String {
        swap_prefix(&self.id, IdKind::Session)
    }

    /// Whether the click still counts at `now`.
    pub fn is_live(&self, now: DateTime<Utc>) -> bool {
        now < self.expires_at
    }

    /// Whether it may attribute at all: a flooded click (CLICK_FLOOD)
    /// never does, by id, by session, or through a binding.
    pub fn attributes(&self) -> bool {
        !self.flooded
    }

    /// Whether its session may bind another customer through identify.
    pub fn binds_another_customer(&self) -> bool {
        self.attributes() && self.customers_bound < MAX_CUSTOMERS_PER_SESSION
    }

    /// Whether this click may bind a customer of `tenant_key` to its
    /// affiliate: `None` when it is another account's or mode's (as if
    /// unknown), `Some(false)` when it may not attribute.
    pub fn binds_for(&self, tenant_key: &str) -> Option<bool> {
        (self.tenant == tenant_key).then_some(self.attributes())
    }
}

/// A click as the browser script reports it (`wire::tracking::ClickRequest`
/// is its body).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClickDraft {
    pub campaign_id: String,
    pub code: String,
    pub url: Option<String>,
    pub referrer: Option<String>,
    pub session_id: Option<String>,
}

impl ClickDraft {
    /// Checks lengths and shapes. A campaign id or code that cannot exist is not
    /// a validation error: the caller answers 404 for it, as for unknown ones.
    pub fn validate(&self) -> Result<(), Error> {
        let mut issues = Issues::new();
        issues.check(field::ClickKey::parse("campaignId", &self.campaign_id));
        issues.check(field::ClickKey::parse("ref", &self.code));
        for (name, v) in [("url", &self.url), ("referrer", &self.referrer)] {
            if let Some(v) = v {
                issues.check(field::PageUrl::parse(name, v));
            }
        }
        if let Some(s) = &self.session_id {
            if !ids::is_valid(IdKind::Session, s) {
                issues.add(
                    &["sessionId"],
                    "invalid_string",
                    "sessionId must be a session id returned by this API (ses_…)",
                );
            }
        }
        issues.finish()
    }

    /// Whether `ref` has the shape of an affiliate code (`[A-Za-z0-9_-]{3,32}`).
    pub fn code_is_well_formed(&self) -> bool {
        AffiliateCode::parse("ref", &self.code).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_and_clicks_share_one_ulid() {
        let ids = ClickIds::generate();
        assert!(ids::is_valid(IdKind::Click, &ids.click_id));
        assert!(ids::is_valid(IdKind::Session, &ids.session_id));
        assert_eq!(ids.click_id[4..], ids.session_id[4..]);
        assert_eq!(
            click_id_of_session(&ids.session_id).as_deref(),
            Some(ids.click_id.as_str())
        );
        assert_eq!(
            session_id_of_click(&ids.click_id).as_deref(),
            Some(ids.session_id.as_str())
        );
        assert_eq!(click_id_of_session(&ids.click_id), None);
        assert_eq!(click_id_of_session("ses_nope"), None);
    }

    #[test]
    fn clicks_expire_after_cookie_days() {
        let now = crate::timestamp::parse_datetime("2026-01-31T12:00:00Z").unwrap();
        let exp = expires_at(now, 30);
        assert_eq!(crate::timestamp::format(&exp), "2026-03-02T12:00:00.000Z");
        let ids = ClickIds::generate();
        let c = Click {
            id: ids.click_id,
            tenant: "acct_x#test".into(),
            campaign_id: "cmp_x".into(),
            affiliate_id: "aff_x".into(),
            code: "abc".into(),
            created_at: now,
            expires_at: exp,
            ttl: exp.timestamp(),
            landing_url: None,
            referrer: None,
            ip_hash: None,
            previous_session_id: None,
            flooded: false,
            customers_bound: 0,
        };
        assert!(c.is_live(now));
        assert!(!c.is_live(exp));
        assert_eq!(c.session_id(), ids.session_id);
        // It binds for its own tenant only, and never once flooded.
        assert_eq!(c.binds_for("acct_x#test"), Some(true));
        assert_eq!(c.binds_for("acct_x#live"), None);
        let flooded = Click { flooded: true, ..c };
        assert_eq!(flooded.binds_for("acct_x#test"), Some(false));
    }
}
