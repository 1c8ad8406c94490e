//! Referrals: which affiliate brought a customer, keyed by the customer's
//! identity within a tenant. The first binding wins (first-touch) and is
//! never overwritten.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::email::Email;
use crate::enums::wire_enum;
use crate::ids::{new_id, IdKind};
use crate::timestamp::{serde_ts, serde_ts_opt};
use crate::validation::Issue;

use crate::field::is_email_hash;

wire_enum! {
    /// How a referral's binding came about.
    pub enum ReferralSource {
        /// `POST /api/v1/track/identify` bound the browser session's customer.
        Identify = "IDENTIFY",
        /// An attributed payment bound an identity not bound before.
        Payment = "PAYMENT",
        /// A payment provider's checkout named the affiliate (a connector).
        Checkout = "CHECKOUT",
        /// The merchant imported it (`POST /api/v1/referrals/import`).
        Import = "IMPORT",
    }
}

/// A customer identity a referral is keyed by. Its string form
/// (`cid:<customerId>`, `email:<sha256 hex>`, `session:<ses_…>`,
/// `click:<clk_…>`) is the `customerKey` stored on referrals.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CustomerKey {
    /// The merchant's own customer id, as given (case-sensitive).
    CustomerId(String),
    /// Lowercase hex SHA-256 of the trimmed, lowercased e-mail.
    EmailHash(String),
    /// A browser session, when nothing better identifies the customer.
    Session(String),
    /// A click, when nothing better identifies the customer.
    Click(String),
}

impl CustomerKey {
    /// From a `customerId`: 1-256 characters, not blank, no control characters.
    pub fn from_id(id: &str) -> Result<CustomerKey, Issue> {
        crate::field::CustomerRef::parse("customerId", id)?;
        Ok(CustomerKey::CustomerId(id.to_string()))
    }

    /// From a `customerEmail`: validated, then hashed; the address itself is never kept.
    pub fn from_email(email: &str) -> Result<CustomerKey, Issue> {
        let email = Email::parse("customerEmail", email)?;
        Ok(CustomerKey::EmailHash(email_hash(email.as_str())))
    }

    /// From a `customerEmailHash`: 64 hex characters in either letter case
    /// (surrounding spaces aside), kept lowercase.
    pub fn from_email_hash(hash: &str) -> Result<CustomerKey, Issue> {
        crate::field::EmailHash::parse(hash).map(CustomerKey::EmailHash)
    }

    /// From a session id (`ses_…`).
    pub fn from_session(session_id: &str) -> CustomerKey {
        CustomerKey::Session(session_id.to_string())
    }

    /// From a click id (`clk_…`).
    pub fn from_click(click_id: &str) -> CustomerKey {
        CustomerKey::Click(click_id.to_string())
    }

    /// How well the identity names a customer (lower is better): the one a
    /// new customer is listed under.
    fn rank(&self) -> u8 {
        match self {
            CustomerKey::CustomerId(_) => 0,
            CustomerKey::EmailHash(_) => 1,
            CustomerKey::Session(_) => 2,
            CustomerKey::Click(_) => 3,
        }
    }

    /// The merchant's customer id, when the identity is one.
    pub fn customer_id(&self) -> Option<&str> {
        match self {
            CustomerKey::CustomerId(id) => Some(id),
            _ => None,
        }
    }

    /// Reads the string form back (`cid:…`, `email:…`, `session:…`, `click:…`).
    pub fn parse(s: &str) -> Option<CustomerKey> {
        let (kind, value) = s.split_once(':')?;
        if value.is_empty() {
            return None;
        }
        Some(match kind {
            "cid" => CustomerKey::CustomerId(value.to_string()),
            "email" if is_email_hash(value) => CustomerKey::EmailHash(value.to_string()),
            "session" => CustomerKey::Session(value.to_string()),
            "click" => CustomerKey::Click(value.to_string()),
            _ => return None,
        })
    }
}

impl fmt::Display for CustomerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CustomerKey::CustomerId(v) => write!(f, "cid:{v}"),
            CustomerKey::EmailHash(v) => write!(f, "email:{v}"),
            CustomerKey::Session(v) => write!(f, "session:{v}"),
            CustomerKey::Click(v) => write!(f, "click:{v}"),
        }
    }
}

/// Lowercase hex SHA-256 of the trimmed, lowercased e-mail.
pub fn email_hash(email: &str) -> String {
    hex::encode(Sha256::digest(email.trim().to_lowercase().as_bytes()))
}

/// A stored referral (`pk = keys::referral(tenant, customerKey)`, `sk = "R"`;
/// the tenant key is stored beside it as `tenant`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Referral {
    /// Set on the one binding of a customer that the referrals list shows
    /// (the first bound, by its best identity: customer id, e-mail,
    /// session, click); the customer's other identities have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub affiliate_id: String,
    pub campaign_id: String,
    /// The string form of the `CustomerKey`.
    pub customer_key: String,
    #[serde(with = "serde_ts")]
    pub bound_at: DateTime<Utc>,
    /// How the binding came about.
    pub source: ReferralSource,
    /// The session that identified the customer, when bound by identify.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Another identity of the same customer this one is known with: the
    /// earlier binding it joined, else the e-mail identity it was bound
    /// with (so a payment naming only the customer id still finds the
    /// customer's e-mail, for SELF_REFERRAL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linked_from: Option<String>,
    /// The `occurredAt` of the customer's first attributed payment, once
    /// there was one: the start of a limited recurring window.
    #[serde(
        with = "serde_ts_opt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub first_payment_at: Option<DateTime<Utc>>,
    /// Whether this binding's first payment (at `first_payment_at`, to
    /// `affiliate_id`) is counted here rather than on the customer's hourly
    /// conversion counter (RAPID_CONVERSIONS): set on a binding made by the
    /// customer's first attributed payment, which then writes no counter.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub first_payment_counted: bool,
    /// The customer's attributed payments recorded so far (0 before the
    /// first; a referral from before payments were counted reads 0 with a
    /// `first_payment_at`: see [`Referral::payments_seen`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub payments: u32,
    /// When the customer's first LEAD was recorded: a lead is paid once.
    #[serde(
        with = "serde_ts_opt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub lead_at: Option<DateTime<Utc>>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Referral {
    /// The customer's attributed payments so far, as this identity knows
    /// them: at least 1 once it has a first payment.
    pub fn payments_seen(&self) -> u32 {
        self.payments
            .max(u32::from(self.first_payment_at.is_some()))
    }
}

/// Who a binding names and where it came from.
#[derive(Debug, Clone)]
pub struct Binding<'a> {
    pub affiliate_id: &'a str,
    pub campaign_id: &'a str,
    pub source: ReferralSource,
    pub session_id: Option<&'a str>,
    pub at: DateTime<Utc>,
    /// The click whose session binds by identify: new bindings take one of
    /// its places (`tracking::MAX_CUSTOMERS_PER_SESSION`).
    pub counted_click: Option<&'a str>,
}

/// The writes that bind a customer's identities.
#[derive(Debug, Clone, PartialEq)]
pub struct BindingPlan {
    /// Bindings of the identities not bound yet.
    pub new: Vec<Referral>,
    /// Bindings of the customer that learn its e-mail identity, and that
    /// e-mail: each one's `linkedFrom` is set to it when it has none.
    pub links: Vec<(CustomerKey, String)>,
    /// The click whose session's places the new bindings take one of (none
    /// when nothing new is bound): refused when its places are taken.
    pub counted_click: Option<String>,
}

impl BindingPlan {
    /// The plan of a session with no place left: nothing new is bound, but
    /// its bindings still learn the customer's e-mail (a link binds no
    /// customer and takes no place).
    pub fn links_only(self) -> BindingPlan {
        BindingPlan {
            new: Vec::new(),
            links: self.links,
            counted_click: None,
        }
    }
}

/// The referrals that bind the identities of one customer (`keys`) not bound
/// in `existing`: to the earliest existing binding's affiliate and campaign
/// (recorded in `linkedFrom`), so a customer never ends up with different
/// affiliates under different identities; to `binding`'s when none is bound.
pub fn plan_bindings(
    keys: &[CustomerKey],
    binding: &Binding<'_>,
    existing: &[Referral],
) -> BindingPlan {
    let owner = existing.iter().min_by_key(|r| r.bound_at);
    let unbound: Vec<&CustomerKey> = keys
        .iter()
        .filter(|k| !existing.iter().any(|r| r.customer_key == k.to_string()))
        .collect();
    // A new customer is listed once, under its best identity.
    let listed = unbound
        .iter()
        .min_by_key(|k| k.rank())
        .filter(|_| owner.is_none())
        .map(ToString::to_string);
    let new: Vec<Referral> = unbound
        .iter()
        .map(ToString::to_string)
        .map(|customer_key| Referral {
            id: (listed.as_ref() == Some(&customer_key)).then(|| new_id(IdKind::Referral)),
            linked_from: linked_from(owner, keys, &customer_key),
            affiliate_id: owner
                .map_or(binding.affiliate_id, |r| &r.affiliate_id)
                .to_string(),
            campaign_id: owner
                .map_or(binding.campaign_id, |r| &r.campaign_id)
                .to_string(),
            customer_key,
            bound_at: binding.at,
            source: binding.source,
            session_id: binding.session_id.map(str::to_string),
            first_payment_at: None,
            first_payment_counted: false,
            payments: 0,
            lead_at: None,
        })
        .collect();
    let links = links(keys, existing);
    let counted_click = binding
        .counted_click
        .filter(|_| !new.is_empty())
        .map(str::to_string);
    BindingPlan {
        new,
        links,
        counted_click,
    }
}

/// What the customer's existing bindings learn when its identities are seen
/// together: each that is no e-mail and has no `linkedFrom` learns the
/// customer's e-mail identity (the first among `keys`, bound now or
/// before), so a payment naming only that identity still finds the
/// customer's e-mail (SELF_REFERRAL), whichever identity was bound first.
fn links(keys: &[CustomerKey], existing: &[Referral]) -> Vec<(CustomerKey, String)> {
    let Some(email) = keys.iter().find(|k| matches!(k, CustomerKey::EmailHash(_))) else {
        return Vec::new();
    };
    existing
        .iter()
        .filter(|r| r.linked_from.is_none())
        .filter(|r| keys.iter().any(|k| k.to_string() == r.customer_key))
        .filter_map(|r| CustomerKey::parse(&r.customer_key))
        .filter(|k| !matches!(k, CustomerKey::EmailHash(_)))
        .map(|k| (k, email.to_string()))
        .collect()
}

/// The `linkedFrom` of a new binding of `key`, one of the customer's
/// `keys`: the earliest existing binding's identity, else the first e-mail
/// identity among `keys` (not `key` itself).
fn linked_from(owner: Option<&Referral>, keys: &[CustomerKey], key: &str) -> Option<String> {
    owner.map(|r| r.customer_key.clone()).or_else(|| {
        keys.iter()
            .find(|k| matches!(k, CustomerKey::EmailHash(_)))
            .map(ToString::to_string)
            .filter(|email| email != key)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn email_hashes_ignore_case_and_surrounding_space() {
        let h = email_hash("  Ann@Example.COM\n");
        assert_eq!(h, email_hash("ann@example.com"));
        // sha256("ann@example.com")
        assert_eq!(
            h,
            "71d4f55f72fa128dfb468a1a3901507c804b74316488744d769d7f4b16696476"
        );
        assert!(is_email_hash(&h));
        assert!(!is_email_hash(&h.to_uppercase()));
        assert!(!is_email_hash(&h[1..]));
    }

    #[test]
    fn customer_keys_round_trip() {
        let keys = [
            CustomerKey::from_id("cus_42").unwrap(),
            CustomerKey::from_email("ann@example.com").unwrap(),
            CustomerKey::from_session("ses_01JD3Q5W6X7Y8Z9A0B1C2D3E4F"),
            CustomerKey::from_click("clk_01JD3Q5W6X7Y8Z9A0B1C2D3E4F"),
        ];
        for k in keys {
            assert_eq!(CustomerKey::parse(&k.to_string()), Some(k));
        }
        assert_eq!(
            CustomerKey::from_id("cus_42").unwrap().to_string(),
            "cid:cus_42"
        );
        assert_eq!(
            CustomerKey::from_email("ann@example.com").unwrap(),
            CustomerKey::from_email_hash(&email_hash("ann@example.com")).unwrap()
        );
        assert!(CustomerKey::from_id("  ").is_err());
        assert!(CustomerKey::from_id(&"x".repeat(257)).is_err());
        assert!(CustomerKey::from_id("a\nb").is_err());
        assert!(CustomerKey::parse("nope").is_none());
        assert!(CustomerKey::parse("email:zz").is_none());
    }

    fn binding(at: &str) -> Binding<'static> {
        Binding {
            affiliate_id: "aff_new",
            campaign_id: "cmp_new",
            source: ReferralSource::Identify,
            session_id: Some("ses_1"),
            at: crate::timestamp::parse_datetime(at).unwrap(),
            counted_click: Some("clk_1"),
        }
    }

    fn bound(key: &CustomerKey, affiliate: &str, at: &str) -> Referral {
        Referral {
            id: None,
            affiliate_id: affiliate.into(),
            campaign_id: format!("cmp_{affiliate}"),
            customer_key: key.to_string(),
            bound_at: crate::timestamp::parse_datetime(at).unwrap(),
            source: ReferralSource::Payment,
            session_id: None,
            linked_from: None,
            first_payment_at: None,
            first_payment_counted: false,
            payments: 0,
            lead_at: None,
        }
    }

    #[test]
    fn unbound_identities_join_the_earliest_binding_or_the_new_one() {
        let id = CustomerKey::from_id("cus_1").unwrap();
        let mail = CustomerKey::from_email("ann@example.com").unwrap();
        let hash = CustomerKey::from_email("bob@example.com").unwrap();
        let keys = [id.clone(), mail.clone(), hash.clone()];
        let b = binding("2026-03-01T00:00:00Z");

        let fresh = plan_bindings(&keys, &b, &[]);
        assert_eq!(fresh.links, []);
        let fresh_counted = fresh.counted_click.clone();
        let fresh = fresh.new;
        assert_eq!(fresh.len(), 3);
        assert!(fresh.iter().all(|r| r.affiliate_id == "aff_new"));
        // Listed once, under the customer id.
        let listed: Vec<&str> = fresh
            .iter()
            .filter(|r| r.id.as_deref().is_some_and(|i| i.starts_with("ref_")))
            .map(|r| r.customer_key.as_str())
            .collect();
        assert_eq!(listed, ["cid:cus_1"]);
        // Bound together, the others are linked from the first e-mail.
        let links: Vec<Option<&str>> = fresh.iter().map(|r| r.linked_from.as_deref()).collect();
        let first_mail = mail.to_string();
        assert_eq!(
            links,
            [Some(first_mail.as_str()), None, Some(first_mail.as_str())]
        );

        let existing = [
            bound(&mail, "aff_late", "2026-02-01T00:00:00Z"),
            bound(&id, "aff_early", "2026-01-01T00:00:00Z"),
        ];
        let joined = plan_bindings(&keys, &b, &existing);
        // The bound id learns the customer's first e-mail.
        assert_eq!(joined.links, [(id.clone(), mail.to_string())]);
        let joined = joined.new;
        assert_eq!(joined.len(), 1);
        assert_eq!(joined[0].id, None, "a known customer is listed already");
        assert_eq!(joined[0].customer_key, hash.to_string());
        assert_eq!(joined[0].affiliate_id, "aff_early");
        assert_eq!(joined[0].campaign_id, "cmp_aff_early");
        assert_eq!(
            joined[0].linked_from.as_deref(),
            Some(id.to_string().as_str())
        );
        assert_eq!(joined[0].bound_at, b.at);

        let all = [
            bound(&id, "a", "2026-01-01T00:00:00Z"),
            bound(&mail, "a", "2026-01-01T00:00:00Z"),
            bound(&hash, "a", "2026-01-01T00:00:00Z"),
        ];
        // All bound, each on its own: nothing to bind, and the id learns the
        // e-mail, whichever was bound first.
        let none = plan_bindings(&keys, &b, &all);
        assert!(none.new.is_empty());
        // Nothing new bound takes no place of the session's.
        assert_eq!(none.counted_click, None);
        assert_eq!(fresh_counted, Some("clk_1".to_string()));
        assert_eq!(none.links, [(id.clone(), mail.to_string())]);
        let mail_first = [
            bound(&mail, "a", "2026-01-01T00:00:00Z"),
            bound(&id, "a", "2026-02-01T00:00:00Z"),
        ];
        let later = plan_bindings(&keys, &b, &mail_first);
        assert_eq!(later.links, [(id.clone(), mail.to_string())]);

        // An e-mail, a binding linked already, or a customer seen without an
        // e-mail learns nothing.
        let mut linked = bound(&id, "a", "2026-01-01T00:00:00Z");
        linked.linked_from = Some(mail.to_string());
        for owner in [bound(&mail, "a", "2026-01-01T00:00:00Z"), linked] {
            assert_eq!(plan_bindings(&keys, &b, &[owner]).links, []);
        }
        let no_mail = plan_bindings(std::slice::from_ref(&id), &b, &all);
        assert_eq!(no_mail.links, []);
    }
}
