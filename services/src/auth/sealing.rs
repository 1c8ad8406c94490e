//! Provider credentials at rest: sealed with AES-256-GCM under a key derived
//! from the API-key signing secret (HKDF-SHA256), so a table export alone
//! reveals none of them. The sealed form names the secret's version, so a
//! rotation of the signing secret keeps every sealed value readable: it is
//! opened with the version it was sealed under.
//!
//! Sealed form: `sealed:v1:<version or ->:<base64(nonce ‖ ciphertext)>`. A
//! stored value without the prefix was written before sealing existed and
//! is read as it is.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::engine::general_purpose::STANDARD_NO_PAD as B64;
use base64::Engine;
use hkdf::Hkdf;
use rand::RngCore;
use sha2::Sha256;

use crate::auth::signing::{Signer, SigningKeys};
use domain::error::{Error, Result};
use domain::integration::Integration;

/// What every sealed value starts with.
const PREFIX: &str = "sealed:v1:";
/// Binds the derived key to this use of the signing secret.
const INFO: &[u8] = b"referrals/provider-credentials/v1";
/// The version part of a value sealed under a plain (unversioned) secret.
const NO_VERSION: &str = "-";

/// True when `stored` is a sealed value (and not one kept from before).
pub fn is_sealed(stored: &str) -> bool {
    stored.starts_with(PREFIX)
}

fn cipher(secret: &str) -> Result<Aes256Gcm> {
    let mut key = [0u8; 32];
    Hkdf::<Sha256>::new(None, secret.as_bytes())
        .expand(INFO, &mut key)
        .map_err(|_| Error::internal("key derivation failed"))?;
    Aes256Gcm::new_from_slice(&key).map_err(|_| Error::internal("bad sealing key"))
}

/// Seals `plain` with the current signing secret; a value already sealed is
/// returned as it is.
pub async fn seal(keys: &SigningKeys, plain: &str) -> Result<String> {
    if is_sealed(plain) {
        return Ok(plain.to_string());
    }
    seal_with(&keys.current().await?, plain)
}

/// Seals `plain` with `signer` (the current signing secret, read before);
/// a value already sealed is returned as it is.
pub fn seal_with(signer: &Signer, plain: &str) -> Result<String> {
    if is_sealed(plain) {
        return Ok(plain.to_string());
    }
    let mut nonce = [0u8; 12];
    rand::rng().fill_bytes(&mut nonce);
    let sealed = cipher(&signer.secret)?
        .encrypt(&Nonce::from(nonce), plain.as_bytes())
        .map_err(|_| Error::internal("sealing failed"))?;
    let mut blob = nonce.to_vec();
    blob.extend_from_slice(&sealed);
    let version = signer.version.as_deref().unwrap_or(NO_VERSION);
    Ok(format!("{PREFIX}{version}:{}", B64.encode(blob)))
}

/// Seals an integration's provider secrets (its signing secrets, its
/// Stripe key, its PayPal app secret); those already sealed stay as they are.
pub fn seal_credentials(signer: &Signer, i: &mut Integration) -> Result<()> {
    if !i.signing_secret.is_empty() {
        i.signing_secret = seal_with(signer, &i.signing_secret)?;
    }
    let optional = [
        &mut i.connect_signing_secret,
        &mut i.api_key,
        &mut i.client_secret,
    ];
    for secret in optional {
        if let Some(plain) = secret.as_deref() {
            *secret = Some(seal_with(signer, plain)?);
        }
    }
    Ok(())
}

/// Opens a stored value: a sealed one with the secret version it names, one
/// kept from before sealing as it is.
pub async fn open(keys: &SigningKeys, stored: &str) -> Result<String> {
    let Some(rest) = stored.strip_prefix(PREFIX) else {
        return Ok(stored.to_string());
    };
    let (version, blob) = rest
        .split_once(':')
        .ok_or_else(|| Error::internal("a sealed value is malformed"))?;
    let version = (version != NO_VERSION).then_some(version);
    let secret = keys
        .verifier(version)
        .await?
        .ok_or_else(|| Error::internal("a sealed value names an unknown secret version"))?;
    let blob = B64
        .decode(blob)
        .map_err(|_| Error::internal("a sealed value is malformed"))?;
    if blob.len() < 12 {
        return Err(Error::internal("a sealed value is malformed"));
    }
    let (nonce, sealed) = blob.split_at(12);
    let nonce: [u8; 12] = nonce
        .try_into()
        .map_err(|_| Error::internal("a sealed value is malformed"))?;
    let plain = cipher(&secret)?
        .decrypt(&Nonce::from(nonce), sealed)
        .map_err(|_| Error::internal("a sealed value does not open"))?;
    String::from_utf8(plain).map_err(|_| Error::internal("a sealed value is not text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_sealed_value_opens_to_itself_and_shows_nothing_of_it() {
        let keys = SigningKeys::plain("a-signing-secret-of-at-least-32-bytes-long");
        let sealed = seal(&keys, "sk_test_51Habc").await.unwrap();
        assert!(
            is_sealed(&sealed) && !sealed.contains("sk_test"),
            "{sealed}"
        );
        assert_ne!(
            sealed,
            seal(&keys, "sk_test_51Habc").await.unwrap(),
            "fresh nonce"
        );
        assert_eq!(open(&keys, &sealed).await.unwrap(), "sk_test_51Habc");
        assert_eq!(
            seal(&keys, &sealed).await.unwrap(),
            sealed,
            "not sealed twice"
        );
        // A value kept from before sealing reads as it is.
        assert_eq!(open(&keys, "whsec_plain").await.unwrap(), "whsec_plain");
        // Another secret does not open it, nor does a tampered blob.
        let other = SigningKeys::plain("another-signing-secret-of-32-bytes-at-least");
        assert!(open(&other, &sealed).await.is_err());
        let mut tampered = sealed.clone();
        tampered.pop();
        tampered.push(if sealed.ends_with('A') { 'B' } else { 'A' });
        assert!(open(&keys, &tampered).await.is_err());
    }
}
