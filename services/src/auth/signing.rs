//! The secrets that sign API keys: one plain secret, or the versions of a
//! Secrets Manager secret. New keys are signed by the current version and
//! name it (the JWT header's `kid`); a key is verified with the version it
//! names, so keys signed before a rotation keep working.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use domain::error::{Error, Result};
use store::secrets::Secrets;

/// Shortest secret accepted, in bytes.
pub const MIN_SECRET_BYTES: usize = 32;

/// Lookups of versions not yet cached, per process and minute. A token's
/// header is read before its signature can be checked, so without a bound
/// anyone could make every request cost a Secrets Manager call.
const UNKNOWN_VERSION_LOOKUPS_PER_MINUTE: u32 = 10;

/// The secret a key is signed or verified with.
#[derive(Clone)]
pub struct Signer {
    /// The Secrets Manager version id; `None` for a plain secret.
    pub version: Option<String>,
    /// The HMAC secret.
    pub secret: Arc<str>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// The signing secrets of a process, read once and cached.
#[derive(Debug)]
pub struct SigningKeys {
    source: Source,
    current: RwLock<Option<Signer>>,
    /// Held while the current secret is read, so concurrent first requests
    /// share one read (and a failed read is tried again by the next one).
    reading: tokio::sync::Mutex<()>,
    versions: RwLock<HashMap<String, Arc<str>>>,
    lookups: Mutex<(Instant, u32)>,
}

#[derive(Debug)]
enum Source {
    Plain,
    Manager(Box<Secrets>),
}

impl SigningKeys {
    /// One plain secret (`API_KEY_SECRET`, or the local default): keys carry no version.
    pub fn plain(secret: &str) -> Self {
        Self::with(
            Source::Plain,
            Some(Signer {
                version: None,
                secret: Arc::from(secret),
            }),
        )
    }

    /// The versions of a Secrets Manager secret, read when first needed.
    pub fn manager(secrets: Secrets) -> Self {
        Self::with(Source::Manager(Box::new(secrets)), None)
    }

    /// The Secrets Manager secret behind the keys, if any (local set-up, rotation).
    pub fn secrets(&self) -> Option<&Secrets> {
        match &self.source {
            Source::Manager(s) => Some(s),
            Source::Plain => None,
        }
    }

    fn with(source: Source, current: Option<Signer>) -> Self {
        SigningKeys {
            source,
            current: RwLock::new(current),
            reading: tokio::sync::Mutex::new(()),
            versions: RwLock::new(HashMap::new()),
            lookups: Mutex::new((Instant::now(), 0)),
        }
    }

    /// True when the current secret is at hand (no read to wait for).
    pub fn is_ready(&self) -> bool {
        read(&self.current).is_some()
    }

    /// Starts reading the current secret without waiting for it: the local
    /// host calls it as it begins to serve, so the read runs while the first
    /// request arrives and that request waits for it together with its own
    /// reads. (A Lambda does not: see `lambda::run`.)
    pub fn prefetch(self: &Arc<Self>) {
        if self.is_ready() {
            return;
        }
        let keys = self.clone();
        tokio::spawn(async move {
            // A failure here is reported by the request that waits for it.
            let _ = keys.current().await;
        });
    }

    /// The secret new keys are signed with: the plain secret, or the
    /// version that was `AWSCURRENT` when this process first read it. A read
    /// that fails is 503 (the caller may retry; the next call reads again).
    pub async fn current(&self) -> Result<Signer> {
        if let Some(s) = read(&self.current).clone() {
            return Ok(s);
        }
        let Source::Manager(secrets) = &self.source else {
            return Err(Error::internal("no signing secret"));
        };
        let _reading = self.reading.lock().await;
        if let Some(s) = read(&self.current).clone() {
            return Ok(s);
        }
        let v = secrets.current().await.map_err(|e| {
            tracing::warn!(cause = %e, "the signing secret could not be read");
            Error::Unavailable("the signing secret could not be read; retry".into())
        })?;
        if v.value.len() < MIN_SECRET_BYTES {
            return Err(Error::Unavailable(
                "the signing secret is shorter than 32 bytes".into(),
            ));
        }
        let signer = Signer {
            version: Some(v.id.clone()),
            secret: Arc::from(v.value),
        };
        write(&self.versions).insert(v.id, signer.secret.clone());
        *write(&self.current) = Some(signer.clone());
        Ok(signer)
    }

    /// The secret that verifies a key naming `version`; `None` when no such
    /// version exists (the key is refused). A key naming no version is
    /// checked against the current secret (keys issued before versioning).
    pub async fn verifier(&self, version: Option<&str>) -> Result<Option<Arc<str>>> {
        let (Source::Manager(secrets), Some(version)) = (&self.source, version) else {
            return Ok(match (&self.source, version) {
                (Source::Plain, Some(_)) => None,
                _ => Some(self.current().await?.secret),
            });
        };
        self.current().await?;
        if let Some(s) = read(&self.versions).get(version) {
            return Ok(Some(s.clone()));
        }
        if !plausible_version_id(version) || !self.spend_lookup() {
            return Ok(None);
        }
        let Some(v) = secrets.version(version).await? else {
            return Ok(None);
        };
        if v.value.len() < MIN_SECRET_BYTES {
            return Ok(None);
        }
        let secret: Arc<str> = Arc::from(v.value);
        write(&self.versions).insert(v.id, secret.clone());
        Ok(Some(secret))
    }

    /// Takes one lookup of an uncached version from this minute's budget.
    fn spend_lookup(&self) -> bool {
        let mut guard = self.lookups.lock().unwrap_or_else(|e| e.into_inner());
        let (since, used) = &mut *guard;
        if since.elapsed() >= Duration::from_secs(60) {
            *since = Instant::now();
            *used = 0;
        }
        *used += 1;
        *used <= UNKNOWN_VERSION_LOOKUPS_PER_MINUTE
    }
}

/// Secrets Manager version ids are 32 to 64 characters (UUIDs in practice).
fn plausible_version_id(v: &str) -> bool {
    (32..=64).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

// A poisoned lock only means another thread panicked mid-insert of a
// complete value; the map or slot is still consistent.
fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_plain_secret_verifies_unversioned_keys_only() {
        let keys = SigningKeys::plain("a-test-secret-that-is-long-enough-123");
        let current = keys.current().await.unwrap();
        assert_eq!(current.version, None);
        assert_eq!(
            keys.verifier(None).await.unwrap().as_deref(),
            Some("a-test-secret-that-is-long-enough-123")
        );
        let uuid = "0f6e2d3c-1b2a-4c5d-8e9f-a0b1c2d3e4f5";
        assert!(keys.verifier(Some(uuid)).await.unwrap().is_none());
    }

    #[test]
    fn version_ids_of_odd_shape_are_never_looked_up() {
        assert!(plausible_version_id("0f6e2d3c-1b2a-4c5d-8e9f-a0b1c2d3e4f5"));
        assert!(!plausible_version_id("short"));
        assert!(!plausible_version_id(&"a".repeat(65)));
        assert!(!plausible_version_id(
            "0f6e2d3c/1b2a-4c5d-8e9f-a0b1c2d3e4f5"
        ));
    }
}
