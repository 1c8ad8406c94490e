//! The key value: `rk_<mode>_` + an HS256 JWT naming the key, its account and mode.

use jsonwebtoken::{
    decode, decode_header, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::domain::tenant::Mode;
use crate::ids::{self, IdKind};

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
    let mut header = Header::new(Algorithm::HS256);
    header.kid = version.map(str::to_string);
    let claims = Claims {
        kid: key_id.to_string(),
        acct: account_id.to_string(),
        mode,
        iat: chrono::Utc::now().timestamp(),
    };
    let token = encode(
        &header,
        &claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .expect("HS256 signing cannot fail");
    format!("{}{}", prefix(mode), token)
}

/// The secret version a key value names (its JWT header's `kid`), read
/// before the signature is checked: `None` for a value that is no token,
/// `Some(None)` for a token naming no version.
pub fn secret_version(raw: &str) -> Option<Option<String>> {
    let token = raw
        .strip_prefix(prefix(Mode::Live))
        .or_else(|| raw.strip_prefix(prefix(Mode::Test)))?;
    decode_header(token).ok().map(|h| h.kid)
}

/// Verifies the prefix, the pinned algorithm, the signature and the shape of
/// the ids it names. Keys do not expire, so no `exp` is required; revocation
/// is checked against the store. Ids that cannot exist are refused here, so
/// no odd claim (empty, oversized, swapped) ever reaches a store lookup.
pub fn verify(secret: &str, raw: &str) -> Option<Claims> {
    let (mode, token) = if let Some(t) = raw.strip_prefix(prefix(Mode::Live)) {
        (Mode::Live, t)
    } else {
        (Mode::Test, raw.strip_prefix(prefix(Mode::Test))?)
    };
    let mut validation = Validation::new(Algorithm::HS256);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_aud = false;
    let data = decode::<Claims>(
        token,
        &DecodingKey::from_secret(secret.as_bytes()),
        &validation,
    )
    .ok()?;
    let c = data.claims;
    let well_formed = ids::is_valid(IdKind::Key, &c.kid) && ids::is_valid(IdKind::Account, &c.acct);
    (c.mode == mode && well_formed).then_some(c)
}

/// SHA-256 of the whole key value, hex: the only form the store keeps.
pub fn hash(raw: &str) -> String {
    hex::encode(Sha256::digest(raw.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::new_id;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;

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
}
