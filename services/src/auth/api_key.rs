//! The key value: `rk_<mode>_` + an HS256 JWT naming the key, its account and mode.
//!
//! The token is a compact JWS (RFC 7515) signed with HMAC-SHA256, built here
//! from `hmac` and `sha2` rather than a JWT library: keys only ever use one
//! algorithm, and a library that can verify any algorithm links RSA and
//! elliptic-curve code into every function. A test checks tokens both ways
//! against the reference JWT library, PyJWT (refctl's `auth` tests).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use domain::ids::{self, IdKind};
use domain::tenant::Mode;

/// What a key's token says about itself.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Claims {
    /// Key id.
    pub kid: String,
    /// Account id.
    pub acct: String,
    /// Mode.
    pub mode: Mode,
    /// Issued at (epoch seconds).
    pub iat: i64,
}

/// The prefix of a mode's keys.
pub fn prefix(mode: Mode) -> &'static str {
    match mode {
        Mode::Live => "rk_live_",
        Mode::Test => "rk_test_",
    }
}

/// Issues a key value for a key record, signed by a plain (unversioned) secret.
pub fn issue(secret: &str, key_id: &str, account_id: &str, mode: Mode) -> String {
    issue_signed(secret, None, key_id, account_id, mode)
}

/// Issues a key value signed by a secret version, which the JWT header's
/// `kid` names (the claims' `kid` is the API key's own id).
pub fn issue_signed(
    secret: &str,
    version: Option<&str>,
    key_id: &str,
    account_id: &str,
    mode: Mode,
) -> String {
    let header = TokenHeader {
        typ: Some("JWT".to_string()),
        alg: ALGORITHM.to_string(),
        kid: version.map(str::to_string),
    };
    let claims = Claims {
        kid: key_id.to_string(),
        acct: account_id.to_string(),
        mode,
        iat: chrono::Utc::now().timestamp(),
    };
    // Serializing structs of strings and numbers cannot fail.
    let header = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&header).expect("a header serializes"));
    let claims = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).expect("claims serialize"));
    let signature = URL_SAFE_NO_PAD.encode(mac(secret, &header, &claims).finalize().into_bytes());
    format!("{}{header}.{claims}.{signature}", prefix(mode))
}

/// The one signing algorithm of key tokens.
const ALGORITHM: &str = "HS256";

/// A key token's JOSE header.
#[derive(Debug, Serialize, Deserialize)]
struct TokenHeader {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    typ: Option<String>,
    alg: String,
    /// The signing secret's version (absent for a plain secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kid: Option<String>,
}

/// A key value taken apart once: its mode, its token's three parts and the
/// decoded header. Nothing in it is trusted until [`KeyToken::verify`].
#[derive(Debug)]
pub struct KeyToken<'a> {
    mode: Mode,
    header: &'a str,
    claims: &'a str,
    signature: &'a str,
    decoded: TokenHeader,
}

impl<'a> KeyToken<'a> {
    /// `None` unless `raw` has a mode's prefix and a token of exactly three
    /// parts whose header is JSON naming an algorithm.
    pub fn parse(raw: &'a str) -> Option<KeyToken<'a>> {
        let (mode, token) = if let Some(t) = raw.strip_prefix(prefix(Mode::Live)) {
            (Mode::Live, t)
        } else {
            (Mode::Test, raw.strip_prefix(prefix(Mode::Test))?)
        };
        let mut parts = token.split('.');
        let (header, claims, signature) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let decoded = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).ok()?).ok()?;
        Some(KeyToken {
            mode,
            header,
            claims,
            signature,
            decoded,
        })
    }

    /// The secret version the token names (its header's `kid`), read before
    /// the signature is checked; `None` for a token naming no version.
    pub fn secret_version(&self) -> Option<&str> {
        self.decoded.kid.as_deref()
    }

    /// The key and account ids the claims name, read *before* the signature
    /// is checked and trusted for nothing but starting their reads (the
    /// first request of a process reads the key record while the secret is
    /// still being read). Ids that cannot exist give `None`.
    pub fn claimed_ids(&self) -> Option<(String, String)> {
        let c: Claims = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(self.claims).ok()?).ok()?;
        let well_formed =
            ids::is_valid(IdKind::Key, &c.kid) && ids::is_valid(IdKind::Account, &c.acct);
        well_formed.then_some((c.kid, c.acct))
    }

    /// Checks the pinned algorithm, the signature and the shape of the ids
    /// the claims name. Keys do not expire, so no `exp` is required;
    /// revocation is checked against the store. Ids that cannot exist are
    /// refused here, so no odd claim (empty, oversized, swapped) ever
    /// reaches a store lookup.
    pub fn verify(&self, secret: &str) -> Option<Claims> {
        // The algorithm is pinned: `none` or any other is refused unverified.
        if self.decoded.alg != ALGORITHM {
            return None;
        }
        let signature = URL_SAFE_NO_PAD.decode(self.signature).ok()?;
        // Constant-time comparison.
        mac(secret, self.header, self.claims)
            .verify_slice(&signature)
            .ok()?;
        let c: Claims = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(self.claims).ok()?).ok()?;
        let well_formed =
            ids::is_valid(IdKind::Key, &c.kid) && ids::is_valid(IdKind::Account, &c.acct);
        (c.mode == self.mode && well_formed).then_some(c)
    }
}

/// The HMAC-SHA256 of a token's signing input (`header.claims`).
pub(crate) fn mac(secret: &str, header: &str, claims: &str) -> Hmac<Sha256> {
    // HMAC takes a key of any length.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(header.as_bytes());
    mac.update(b".");
    mac.update(claims.as_bytes());
    mac
}

/// The secret version a key value names: `None` for a value that is no
/// token, `Some(None)` for a token naming no version.
pub fn secret_version(raw: &str) -> Option<Option<String>> {
    KeyToken::parse(raw).map(|t| t.secret_version().map(str::to_string))
}

/// Takes `raw` apart and verifies it (see [`KeyToken::verify`]).
pub fn verify(secret: &str, raw: &str) -> Option<Claims> {
    KeyToken::parse(raw)?.verify(secret)
}

/// SHA-256 of the whole key value, hex: the only form the store keeps.
pub fn hash(raw: &str) -> String {
    hex::encode(Sha256::digest(raw.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::ids::new_id;

    const SECRET: &str = "a-test-secret-that-is-long-enough-123";

    #[test]
    fn issued_keys_verify_and_tampering_fails() {
        let (kid, acct) = (new_id(IdKind::Key), new_id(IdKind::Account));
        let k = issue(SECRET, &kid, &acct, Mode::Test);
        assert!(k.starts_with("rk_test_"));
        let c = verify(SECRET, &k).unwrap();
        assert_eq!(c.kid, kid);
        assert_eq!(c.mode, Mode::Test);
        assert!(verify("another-secret-that-is-long-enough-1", &k).is_none());
        // Prefix must match the mode inside the token.
        let swapped = k.replacen("rk_test_", "rk_live_", 1);
        assert!(verify(SECRET, &swapped).is_none());
        assert!(verify(SECRET, "rk_test_garbage").is_none());
        assert!(verify(SECRET, &k[8..]).is_none());
    }

    #[test]
    fn versioned_keys_name_their_secret_version() {
        let (kid, acct) = (new_id(IdKind::Key), new_id(IdKind::Account));
        let k = issue_signed(SECRET, Some("v-1"), &kid, &acct, Mode::Live);
        assert_eq!(secret_version(&k), Some(Some("v-1".to_string())));
        assert_eq!(verify(SECRET, &k).unwrap().kid, kid);
        let plain = issue(SECRET, &kid, &acct, Mode::Live);
        assert_eq!(secret_version(&plain), Some(None));
        assert_eq!(secret_version("rk_live_garbage"), None);
        assert_eq!(secret_version("no-prefix"), None);
    }

    #[test]
    fn unsigned_tokens_are_refused() {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
        let body =
            URL_SAFE_NO_PAD.encode(br#"{"kid":"key_1","acct":"acct_1","mode":"test","iat":1}"#);
        let forged = format!("rk_test_{header}.{body}.");
        assert!(verify(SECRET, &forged).is_none());
        let hs512 = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS512","typ":"JWT"}"#);
        let forged = format!("rk_test_{hs512}.{body}.xxxx");
        assert!(verify(SECRET, &forged).is_none());
    }

    #[test]
    fn signed_tokens_naming_impossible_ids_are_refused() {
        let (kid, acct) = (new_id(IdKind::Key), new_id(IdKind::Account));
        let long = format!("key_{}", "A".repeat(3000));
        for (k, a) in [
            ("", acct.as_str()),
            (acct.as_str(), acct.as_str()),
            (long.as_str(), acct.as_str()),
            (acct.as_str(), kid.as_str()),
            (kid.as_str(), ""),
            (kid.as_str(), kid.as_str()),
            ("key_1", acct.as_str()),
        ] {
            assert!(
                verify(SECRET, &issue(SECRET, k, a, Mode::Live)).is_none(),
                "{k:.40} {a}"
            );
        }
        assert!(verify(SECRET, &issue(SECRET, &kid, &acct, Mode::Live)).is_some());
    }

    #[test]
    fn a_token_naming_another_algorithm_is_refused_even_when_hs256_signed() {
        let (kid, acct) = (new_id(IdKind::Key), new_id(IdKind::Account));
        let good = issue(SECRET, &kid, &acct, Mode::Live);
        let claims = good.split('.').nth(1).unwrap();
        for alg in ["HS512", "none", "RS256"] {
            let header = URL_SAFE_NO_PAD.encode(format!(r#"{{"typ":"JWT","alg":"{alg}"}}"#));
            let sig = URL_SAFE_NO_PAD.encode(mac(SECRET, &header, claims).finalize().into_bytes());
            let forged = format!("rk_live_{header}.{claims}.{sig}");
            assert!(verify(SECRET, &forged).is_none(), "{alg}");
        }
        assert!(verify(SECRET, &good).is_some());
    }
}
