//! The portal token: `pt_<mode>_` + an HS256 JWT naming one affiliate, its
//! account and mode, valid for an hour. It opens the affiliate's own portal
//! routes and nothing else: its prefix is no API key's, and it is signed
//! with a key derived from the signing secret for portal tokens alone, so
//! neither kind of token can stand for the other.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Duration, TimeZone, Utc};
use hmac::Mac;
use serde::{Deserialize, Serialize};

use crate::auth::api_key::mac;
use domain::ids::{self, IdKind};
use domain::tenant::{Mode, Tenant};

/// How long a portal session lasts.
pub const LIFETIME_MINUTES: i64 = 60;

/// What a portal token says about itself.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PortalClaims {
    /// The affiliate.
    pub aff: String,
    /// Its account.
    pub acct: String,
    pub mode: Mode,
    /// Issued at, and expiry (epoch seconds).
    pub iat: i64,
    pub exp: i64,
    /// The merchant's page the portal's "Back" link leads to: signed with
    /// the rest, so no one but the merchant can set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ret: Option<String>,
}

impl PortalClaims {
    /// Claims for one affiliate of `tenant`, valid for [`LIFETIME_MINUTES`] from `now`.
    pub fn new(tenant: &Tenant, affiliate_id: &str, now: DateTime<Utc>) -> PortalClaims {
        PortalClaims {
            aff: affiliate_id.to_string(),
            acct: tenant.account_id.clone(),
            mode: tenant.mode,
            iat: now.timestamp(),
            exp: (now + Duration::minutes(LIFETIME_MINUTES)).timestamp(),
            ret: None,
        }
    }

    /// The same claims with the page's "Back" link.
    pub fn returning_to(mut self, url: Option<&str>) -> PortalClaims {
        self.ret = url.map(str::to_string);
        self
    }

    /// The tenant the token names.
    pub fn tenant(&self) -> Tenant {
        Tenant::new(self.acct.clone(), self.mode)
    }

    /// When the token was issued (to the second).
    pub fn issued_at(&self) -> DateTime<Utc> {
        DateTime::from_timestamp(self.iat, 0).unwrap_or_default()
    }

    /// When the token stops working.
    pub fn expires_at(&self) -> DateTime<Utc> {
        Utc.timestamp_opt(self.exp, 0).single().unwrap_or_default()
    }
}

/// The prefix of a mode's portal tokens.
pub fn prefix(mode: Mode) -> &'static str {
    match mode {
        Mode::Live => "pt_live_",
        Mode::Test => "pt_test_",
    }
}

/// The key portal tokens are signed with: derived from the signing secret,
/// so an API key's signature never checks as a portal token's.
fn portal_key(secret: &str) -> String {
    let mut m = mac(secret, "portal", "token");
    m.update(b"v1");
    hex::encode(m.finalize().into_bytes())
}

/// The JOSE header every portal token carries.
const HEADER: &str = r#"{"alg":"HS256","typ":"JWT"}"#;

/// Issues a portal token for `claims`, signed with `secret`.
pub fn issue(secret: &str, claims: &PortalClaims) -> String {
    let header = URL_SAFE_NO_PAD.encode(HEADER);
    // A struct of strings and numbers serializes.
    let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).expect("claims serialize"));
    let key = portal_key(secret);
    let signature = URL_SAFE_NO_PAD.encode(mac(&key, &header, &body).finalize().into_bytes());
    format!("{}{header}.{body}.{signature}", prefix(claims.mode))
}

/// Whether a bearer value is a portal token (by its prefix alone).
pub fn is_portal_token(raw: &str) -> bool {
    raw.starts_with(prefix(Mode::Test)) || raw.starts_with(prefix(Mode::Live))
}

/// A token's parts: its header, body and signature (still encoded), and
/// the claims its body states, when it is shaped as a portal token (the
/// header every token carries, ids that can exist, the prefix's mode).
/// Nothing here is checked against the signature.
fn parts(raw: &str) -> Option<(&str, &str, &str, PortalClaims)> {
    let (mode, token) = match raw.strip_prefix(prefix(Mode::Live)) {
        Some(t) => (Mode::Live, t),
        None => (Mode::Test, raw.strip_prefix(prefix(Mode::Test))?),
    };
    let mut parts = token.split('.');
    let (header, body, signature) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || URL_SAFE_NO_PAD.decode(header).ok()? != HEADER.as_bytes() {
        return None;
    }
    let c: PortalClaims = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(body).ok()?).ok()?;
    let well_formed =
        ids::is_valid(IdKind::Affiliate, &c.aff) && ids::is_valid(IdKind::Account, &c.acct);
    (well_formed && c.mode == mode).then_some((header, body, signature, c))
}

/// What a token claims, unchecked: the records to read while its
/// signature waits for the secret. Trust nothing here before [`verify`].
pub fn claimed(raw: &str) -> Option<PortalClaims> {
    parts(raw).map(|(_, _, _, c)| c)
}

/// The claims of a token signed with `secret` and unexpired at `now`;
/// `None` for anything else (a bad signature, another header, ids that
/// cannot exist, a mode that disagrees with the prefix).
pub fn verify(secret: &str, raw: &str, now: DateTime<Utc>) -> Option<PortalClaims> {
    let (header, body, signature, c) = parts(raw)?;
    let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
    // Constant-time comparison.
    mac(&portal_key(secret), header, body)
        .verify_slice(&signature)
        .ok()?;
    (c.exp > now.timestamp()).then_some(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::api_key;
    use domain::ids::new_id;

    const SECRET: &str = "a-test-secret-that-is-long-enough-123";

    #[test]
    fn tokens_verify_until_they_expire_and_never_as_api_keys() {
        let now = Utc::now();
        let tenant = Tenant::new(new_id(IdKind::Account), Mode::Test);
        let aff = new_id(IdKind::Affiliate);
        let claims = PortalClaims::new(&tenant, &aff, now);
        let token = issue(SECRET, &claims);
        assert!(token.starts_with("pt_test_") && is_portal_token(&token));
        assert_eq!(verify(SECRET, &token, now), Some(claims.clone()));
        assert_eq!(claims.expires_at().timestamp(), now.timestamp() + 3600);
        // Expired, another secret, tampered, another mode's prefix.
        assert_eq!(verify(SECRET, &token, now + Duration::minutes(61)), None);
        assert_eq!(
            verify("another-secret-entirely-0123456789", &token, now),
            None
        );
        let mut tampered = token.clone();
        tampered.pop();
        tampered.push(if token.ends_with('A') { 'B' } else { 'A' });
        assert_eq!(verify(SECRET, &tampered, now), None);
        let live = token.replacen("pt_test_", "pt_live_", 1);
        assert_eq!(verify(SECRET, &live, now), None);
        // Neither kind of token passes for the other.
        assert_eq!(
            api_key::verify(SECRET, &token.replacen("pt_", "rk_", 1)),
            None
        );
        let key = api_key::issue(SECRET, &new_id(IdKind::Key), &tenant.account_id, Mode::Test);
        assert_eq!(verify(SECRET, &key.replacen("rk_", "pt_", 1), now), None);
        assert!(!is_portal_token(&key));
    }

    #[test]
    fn what_a_token_claims_is_read_without_its_signature_but_only_from_a_portal_token() {
        let now = Utc::now();
        let tenant = Tenant::new(new_id(IdKind::Account), Mode::Live);
        let claims = PortalClaims::new(&tenant, &new_id(IdKind::Affiliate), now);
        // Signed with any secret, expired or not: the claims as stated.
        let forged = issue("another-secret-entirely-0123456789", &claims);
        assert_eq!(claimed(&forged), Some(claims.clone()));
        assert_eq!(verify(SECRET, &forged, now), None);
        // Another mode's prefix, an API key, ids that cannot exist: nothing.
        assert_eq!(claimed(&forged.replacen("pt_live_", "pt_test_", 1)), None);
        let key = api_key::issue(SECRET, &new_id(IdKind::Key), &tenant.account_id, Mode::Live);
        assert_eq!(claimed(&key), None);
        let mut bad = claims;
        bad.aff = "aff_nope".into();
        assert_eq!(claimed(&issue(SECRET, &bad)), None);
    }
}
