//! Standard Webhooks signing (standardwebhooks.com): endpoint secrets, the
//! `v1` HMAC-SHA256 signature and the headers a delivery carries.

use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use rand::RngCore;
use sha2::Sha256;

/// The text prefix of a secret, as the Standard Webhooks libraries expect it.
const PREFIX: &str = "whsec_";
/// How many random bytes a secret holds.
pub const SECRET_LEN: usize = 32;

/// An endpoint's signing secret: 32 random bytes. Its `Debug` form hides the
/// bytes so a secret never reaches a log by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret([u8; SECRET_LEN]);

impl Secret {
    /// A new secret from the thread's cryptographically secure generator
    /// (seeded, and reseeded, from the operating system's random source).
    pub fn generate() -> Secret {
        let mut bytes = [0u8; SECRET_LEN];
        rand::rng().fill_bytes(&mut bytes);
        Secret(bytes)
    }

    /// The text form shown to the merchant: `whsec_` + standard base64.
    pub fn to_text(&self) -> String {
        format!("{PREFIX}{}", STANDARD.encode(self.0))
    }

    /// Reads the text form back; `None` unless it is `whsec_` + base64 of
    /// exactly 32 bytes.
    pub fn parse(text: &str) -> Option<Secret> {
        let encoded = text.strip_prefix(PREFIX)?;
        let bytes = STANDARD.decode(encoded).ok()?;
        Some(Secret(bytes.try_into().ok()?))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// The `webhook-signature` value for one secret:
/// `v1,<base64 HMAC-SHA256 of "{msg_id}.{timestamp}.{body}">`.
pub fn sign(secret: &Secret, msg_id: &str, timestamp_secs: i64, body: &[u8]) -> String {
    sign_with_key(&secret.0, msg_id, timestamp_secs, body)
}

/// The signature with raw key bytes: the spec allows keys of other lengths,
/// and its published example uses one.
fn sign_with_key(key: &[u8], msg_id: &str, timestamp_secs: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(msg_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp_secs.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// The headers of one delivery. With several secrets (the 24 hours after a
/// rotation) the signatures are space-separated, one per secret, so the
/// receiver accepts the message whichever secret it holds.
pub fn headers(
    msg_id: &str,
    timestamp_secs: i64,
    body: &[u8],
    secrets: &[&Secret],
) -> Vec<(&'static str, String)> {
    let signatures = secrets
        .iter()
        .map(|secret| sign(secret, msg_id, timestamp_secs, body))
        .collect::<Vec<_>>()
        .join(" ");
    vec![
        ("webhook-id", msg_id.to_string()),
        ("webhook-timestamp", timestamp_secs.to_string()),
        ("webhook-signature", signatures),
        ("content-type", "application/json".to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use standardwebhooks::Webhook;

    const BODY: &[u8] =
        br#"{"id":"evt_1","type":"payout.paid","timestamp":"2026-11-22T10:00:00.000Z","data":{}}"#;

    fn now() -> i64 {
        chrono::Utc::now().timestamp()
    }

    fn header_map(pairs: &[(&'static str, String)]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    /// Verifies with the official library, as a merchant would.
    fn verifies(secret: &Secret, body: &[u8], pairs: &[(&'static str, String)]) -> bool {
        let webhook = Webhook::new(&secret.to_text()).unwrap();
        webhook.verify(body, &header_map(pairs)).is_ok()
    }

    #[test]
    fn matches_the_published_example() {
        // The example of the official libraries (secret of 24 bytes).
        let key = STANDARD.decode("C2FVsBQIhrscChlQIMV+b5sSYspob7oD").unwrap();
        let signature = sign_with_key(
            &key,
            "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
            1649367553,
            br#"{"email":"test@example.com","username":"test_user"}"#,
        );
        assert_eq!(signature, "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=");
    }

    #[test]
    fn secrets_round_trip_through_text_and_hide_in_debug() {
        let secret = Secret::generate();
        let text = secret.to_text();
        assert!(text.starts_with("whsec_"));
        assert_eq!(STANDARD.decode(&text[6..]).unwrap().len(), SECRET_LEN);
        assert_eq!(Secret::parse(&text), Some(secret.clone()));
        assert_ne!(Secret::generate(), secret);
        assert_eq!(format!("{secret:?}"), "Secret(..)");
        assert!(!format!("{:?}", Some(&secret)).contains(&text[6..]));
    }

    #[test]
    fn malformed_secret_texts_are_refused() {
        let short = format!("whsec_{}", STANDARD.encode([7u8; 24]));
        let bare = STANDARD.encode([7u8; 32]);
        for bad in ["", "whsec_", "whsec_!!!!", short.as_str(), bare.as_str()] {
            assert_eq!(Secret::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_headers_carry_id_timestamp_signature_and_content_type() {
        let secret = Secret::generate();
        let ts = now();
        let pairs = headers("evt_1", ts, BODY, &[&secret]);
        let names: Vec<_> = pairs.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "webhook-id",
                "webhook-timestamp",
                "webhook-signature",
                "content-type"
            ]
        );
        assert_eq!(pairs[0].1, "evt_1");
        assert_eq!(pairs[1].1, ts.to_string());
        assert_eq!(pairs[2].1, sign(&secret, "evt_1", ts, BODY));
        assert_eq!(pairs[3].1, "application/json");
    }

    #[test]
    fn the_official_library_verifies_a_signed_message() {
        let secret = Secret::generate();
        let pairs = headers("evt_1", now(), BODY, &[&secret]);
        assert!(verifies(&secret, BODY, &pairs));
    }

    #[test]
    fn the_official_library_refuses_a_wrong_secret_or_a_changed_body() {
        let secret = Secret::generate();
        let pairs = headers("evt_1", now(), BODY, &[&secret]);
        assert!(!verifies(&Secret::generate(), BODY, &pairs));
        let changed = String::from_utf8(BODY.to_vec())
            .unwrap()
            .replace("payout.paid", "payout.cancelled");
        assert!(!verifies(&secret, changed.as_bytes(), &pairs));
    }

    #[test]
    fn the_official_library_refuses_a_timestamp_outside_five_minutes() {
        let secret = Secret::generate();
        for ts in [now() - 6 * 60, now() + 6 * 60] {
            let pairs = headers("evt_1", ts, BODY, &[&secret]);
            assert!(!verifies(&secret, BODY, &pairs), "{ts}");
        }
        let pairs = headers("evt_1", now() - 4 * 60, BODY, &[&secret]);
        assert!(verifies(&secret, BODY, &pairs));
    }

    #[test]
    fn after_a_rotation_either_secret_alone_verifies() {
        let (old, new) = (Secret::generate(), Secret::generate());
        let pairs = headers("evt_1", now(), BODY, &[&new, &old]);
        assert_eq!(pairs[2].1.split(' ').count(), 2);
        assert!(verifies(&new, BODY, &pairs));
        assert!(verifies(&old, BODY, &pairs));
        assert!(!verifies(&Secret::generate(), BODY, &pairs));
    }
}
