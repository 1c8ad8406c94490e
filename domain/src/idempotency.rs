//! `Idempotency-Key` on the merchant's POSTs (Stripe's convention): a
//! request sent again with the same key and the same body within
//! [`KEEP_HOURS`] is answered the first answer again, without running; the
//! same key with another request is refused; a copy arriving while the
//! first runs waits for it. Keys are per account and mode.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::timestamp::serde_ts;

/// Longest key, in characters.
pub const MAX_KEY_LEN: usize = 255;
/// How long a key and its answer are kept.
pub const KEEP_HOURS: i64 = 24;
/// How long a running request holds its key: a copy arriving meanwhile
/// waits; past it (the first request died), a copy runs instead.
pub const LEASE_SECS: i64 = 30;

/// A client's idempotency key: 1 to 255 visible ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// The key of a header value; 400 INVALID_REQUEST for any other.
    pub fn parse(raw: &[u8]) -> Result<IdempotencyKey, Error> {
        let visible = raw.iter().all(|b| (0x20..0x7f).contains(b));
        match (visible, raw.len()) {
            (true, 1..=MAX_KEY_LEN) => {
                Ok(IdempotencyKey(String::from_utf8_lossy(raw).into_owned()))
            }
            _ => Err(Error::InvalidRequest(format!(
                "Idempotency-Key must be 1-{MAX_KEY_LEN} visible ASCII characters"
            ))),
        }
    }

    /// The key as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What identifies a request under its key: its method, path and body.
pub fn fingerprint(method: &str, path: &str, body: &[u8]) -> String {
    let digest = Sha256::new()
        .chain_update(method.as_bytes())
        .chain_update([0])
        .chain_update(path.as_bytes())
        .chain_update([0])
        .chain_update(body)
        .finalize();
    hex::encode(digest)
}

/// A key as kept: the request it was first sent with, who runs it, and,
/// once it ran, its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptRequest {
    pub fingerprint: String,
    /// The running request's claim (a fresh id per run).
    pub claim: String,
    #[serde(with = "serde_ts")]
    pub lease_until: DateTime<Utc>,
    /// The answer, once kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<KeptAnswer>,
    /// When the key is forgotten (epoch seconds; the table's TTL).
    pub ttl: i64,
}

/// A successful answer, replayed as it was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptAnswer {
    pub status: u16,
    /// The answer's `data`, as JSON text.
    pub data: String,
}

impl KeptRequest {
    /// A key claimed now by a request with `fingerprint`.
    pub fn claimed(fingerprint: &str, now: DateTime<Utc>) -> KeptRequest {
        KeptRequest {
            fingerprint: fingerprint.to_string(),
            claim: ulid::Ulid::new().to_string(),
            lease_until: now + Duration::seconds(LEASE_SECS),
            answer: None,
            ttl: (now + Duration::hours(KEEP_HOURS)).timestamp(),
        }
    }
}

/// What a request does about a key kept already.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Answer what the first request answered.
    Replay(KeptAnswer),
    /// Another request used the key: 409.
    Mismatch,
    /// The first request still runs: wait for it.
    InProgress,
    /// The first request died holding it: run instead of it.
    TakeOver,
}

/// Decides about `kept` for a request with `fingerprint` at `now`.
pub fn decide(kept: &KeptRequest, fingerprint: &str, now: DateTime<Utc>) -> Decision {
    match (&kept.answer, kept.fingerprint == fingerprint) {
        (_, false) => Decision::Mismatch,
        (Some(answer), true) => Decision::Replay(answer.clone()),
        (None, true) if kept.lease_until <= now => Decision::TakeOver,
        (None, true) => Decision::InProgress,
    }
}

/// Whether an answer is kept for replay: a success. A failure is not (the
/// request did nothing, or nothing the same request would not do again),
/// so the key is released and the request may be sent again.
pub fn keeps(status: u16) -> bool {
    (200..300).contains(&status)
}

/// The 409 of a key used with another request.
pub fn mismatch(key: &IdempotencyKey) -> Error {
    Error::AlreadyExists(format!(
        "Idempotency-Key {:?} was used with another request (method, path or body)",
        key.as_str()
    ))
}

/// The 409 of a key whose first request still runs.
pub fn in_progress(key: &IdempotencyKey) -> Error {
    Error::AlreadyExists(format!(
        "a request with Idempotency-Key {:?} is still running; send it again shortly",
        key.as_str()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn keys_are_one_to_255_visible_ascii_characters() {
        assert!(IdempotencyKey::parse(b"a").is_ok());
        assert!(IdempotencyKey::parse(&[b'k'; 255]).is_ok());
        assert!(IdempotencyKey::parse("order 42 / retry".as_bytes()).is_ok());
        for bad in [
            &b""[..],
            &[b'k'; 256],
            b"tab\there",
            "é".as_bytes(),
            b"nul\0",
        ] {
            assert!(IdempotencyKey::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_fingerprint_tells_method_path_and_body_apart() {
        let one = fingerprint("POST", "/api/v1/campaigns", b"{}");
        assert_eq!(one, fingerprint("POST", "/api/v1/campaigns", b"{}"));
        assert_ne!(one, fingerprint("POST", "/api/v1/assets", b"{}"));
        assert_ne!(one, fingerprint("POST", "/api/v1/campaigns", b"{ }"));
        assert_ne!(one, fingerprint("PUT", "/api/v1/campaigns", b"{}"));
    }

    #[test]
    fn a_kept_key_replays_refuses_waits_or_is_taken_over() {
        let now = at("2026-11-28T10:00:00Z");
        let mut kept = KeptRequest::claimed("fp", now);
        assert_eq!(kept.ttl, at("2026-11-29T10:00:00Z").timestamp());
        assert_eq!(decide(&kept, "fp", now), Decision::InProgress);
        let lease_end = now + Duration::seconds(LEASE_SECS);
        assert_eq!(decide(&kept, "fp", lease_end), Decision::TakeOver);
        assert_eq!(decide(&kept, "other", now), Decision::Mismatch);
        let answer = KeptAnswer {
            status: 201,
            data: "{}".into(),
        };
        kept.answer = Some(answer.clone());
        assert_eq!(decide(&kept, "fp", lease_end), Decision::Replay(answer));
        assert_eq!(decide(&kept, "other", now), Decision::Mismatch);
    }

    #[test]
    fn only_successes_are_kept() {
        assert!(keeps(200) && keeps(201));
        for status in [400, 401, 404, 409, 429, 500, 503] {
            assert!(!keeps(status), "{status}");
        }
    }
}
