//! The providers' webhook signatures, checked on the raw body before it is
//! parsed: HMAC-SHA256 keyed with the endpoint's secret string, over the
//! timestamp and the body, compared in constant time.
//!
//! - Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…]` over
//!   `"{t}.{body}"`; any `v1` may match (a secret being rolled).
//! - Paddle: `Paddle-Signature: ts=<unix>;h1=<hex>[;h1=…]` over
//!   `"{ts}:{body}"`.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::{Provider, SignatureError};

/// How far a signature's timestamp may be from now, in seconds.
pub const TOLERANCE_SECS: i64 = 300;

impl Provider {
    /// The header that carries the signature.
    pub fn signature_header(&self) -> &'static str {
        match self {
            Provider::Stripe => "stripe-signature",
            Provider::Paddle => "paddle-signature",
            Provider::Paypal => "paypal-transmission-sig",
        }
    }

    /// Checks a delivery's signature header against its raw body and the
    /// endpoint's secret, at `now` (unix seconds).
    pub fn verify(
        &self,
        header: Option<&str>,
        body: &[u8],
        secret: &str,
        now: i64,
    ) -> Result<(), SignatureError> {
        if *self == Provider::Paypal {
            // PayPal's events are verified by PayPal's own API
            // (`services::provider_events`), never with a shared secret.
            return Err(SignatureError::Mismatch);
        }
        let header = header.ok_or(SignatureError::Missing)?;
        let (ts, signatures) = self
            .parse_signature(header)
            .ok_or(SignatureError::Malformed)?;
        if signatures.is_empty() {
            return Err(SignatureError::Malformed);
        }
        // Any i64 may be sent: the distance is taken without overflow.
        if now.abs_diff(ts) > TOLERANCE_SECS.unsigned_abs() {
            return Err(SignatureError::Stale);
        }
        let expected = self.mac(secret, ts, body);
        let matches = signatures.iter().any(|s| {
            hex::decode(s).is_ok_and(|given| expected.clone().verify_slice(&given).is_ok())
        });
        matches.then_some(()).ok_or(SignatureError::Mismatch)
    }

    /// The signature header for a body, as the provider would send it (the
    /// local demo's sample events; tests check it against the providers'
    /// own libraries).
    pub fn sign(&self, body: &[u8], secret: &str, ts: i64) -> String {
        let hex = hex::encode(self.mac(secret, ts, body).finalize().into_bytes());
        match self {
            Provider::Stripe | Provider::Paypal => format!("t={ts},v1={hex}"),
            Provider::Paddle => format!("ts={ts};h1={hex}"),
        }
    }

    fn mac(&self, secret: &str, ts: i64, body: &[u8]) -> Hmac<Sha256> {
        // HMAC takes a key of any length.
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
        let separator: &[u8] = match self {
            Provider::Stripe | Provider::Paypal => b".",
            Provider::Paddle => b":",
        };
        mac.update(ts.to_string().as_bytes());
        mac.update(separator);
        mac.update(body);
        mac
    }

    /// The timestamp and the signatures of the provider's scheme (`v1`,
    /// `h1`); other schemes are skipped, as the providers' libraries do.
    fn parse_signature<'h>(&self, header: &'h str) -> Option<(i64, Vec<&'h str>)> {
        let (pairs, ts_key, sig_key) = match self {
            Provider::Stripe | Provider::Paypal => (header.split(','), "t", "v1"),
            Provider::Paddle => (header.split(';'), "ts", "h1"),
        };
        let mut ts = None;
        let mut signatures = Vec::new();
        for pair in pairs {
            let (k, v) = pair.trim().split_once('=')?;
            if k == ts_key {
                ts = Some(v.parse::<i64>().ok()?);
            } else if k == sig_key {
                signatures.push(v);
            }
        }
        Some((ts?, signatures))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_test_secret_0123456789";

    /// (header, body, secret, now, the refusal)
    type Case<'a> = (Option<String>, &'a [u8], &'a str, i64, SignatureError);
    const BODY: &[u8] = br#"{"id":"evt_1","type":"invoice.paid"}"#;

    #[test]
    fn signatures_are_checked_on_the_raw_body_within_five_minutes() {
        for p in [Provider::Stripe, Provider::Paddle] {
            let now = 1_764_000_000;
            let good = p.sign(BODY, SECRET, now);
            assert_eq!(p.verify(Some(&good), BODY, SECRET, now), Ok(()), "{p:?}");
            assert_eq!(p.verify(Some(&good), BODY, SECRET, now + 300), Ok(()));
            assert_eq!(p.verify(Some(&good), BODY, SECRET, now - 300), Ok(()));
            let cases: [Case; 6] = [
                (None, BODY, SECRET, now, SignatureError::Missing),
                (
                    Some("v1=abc".into()),
                    BODY,
                    SECRET,
                    now,
                    SignatureError::Malformed,
                ),
                (
                    Some(good.clone()),
                    BODY,
                    SECRET,
                    now + 301,
                    SignatureError::Stale,
                ),
                (
                    Some(good.clone()),
                    BODY,
                    "whsec_other",
                    now,
                    SignatureError::Mismatch,
                ),
                (
                    Some(good.clone()),
                    br#"{"id":"evt_1","type":"invoice.paid" }"#,
                    SECRET,
                    now,
                    SignatureError::Mismatch,
                ),
                (
                    Some(p.sign(BODY, SECRET, now - 1)),
                    BODY,
                    SECRET,
                    now,
                    SignatureError::Mismatch,
                ),
            ];
            for (i, (header, body, secret, at, want)) in cases.into_iter().enumerate() {
                // The last case: a valid signature of another timestamp, sent with this one.
                let header = match i {
                    5 => header.map(|h| h.replace(&(now - 1).to_string(), &now.to_string())),
                    _ => header,
                };
                assert_eq!(
                    p.verify(header.as_deref(), body, secret, at),
                    Err(want),
                    "{p:?} case {i}"
                );
            }
            // Timestamps at the ends of the range are stale, never an overflow.
            for ts in [i64::MIN, i64::MAX] {
                let header = p.sign(BODY, SECRET, ts);
                assert_eq!(
                    p.verify(Some(&header), BODY, SECRET, now),
                    Err(SignatureError::Stale),
                    "{p:?} at {ts}"
                );
            }
        }
    }

    #[test]
    fn any_listed_signature_may_match() {
        let now = 1_764_000_000;
        let good = Provider::Stripe.sign(BODY, SECRET, now);
        let v1 = good.split_once(",v1=").unwrap().1;
        let rolled = format!("t={now},v1={},v0=ignored,v1={v1}", "0".repeat(64));
        assert_eq!(
            Provider::Stripe.verify(Some(&rolled), BODY, SECRET, now),
            Ok(())
        );
        let good = Provider::Paddle.sign(BODY, SECRET, now);
        let h1 = good.split_once(";h1=").unwrap().1;
        let rolled = format!("ts={now};h1={};h1={h1}", "ab".repeat(32));
        assert_eq!(
            Provider::Paddle.verify(Some(&rolled), BODY, SECRET, now),
            Ok(())
        );
    }
}
