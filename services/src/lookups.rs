//! In-process caches of lookups whose answers rarely change: a campaign by
//! id, an affiliate code's owner, an affiliate's attribution facts. A click
//! costs its rate-limit count and its one write. Entries live at most
//! [`STALENESS`]: a campaign made private or a code given up keeps working
//! for that long in clicks. Postbacks read campaigns and affiliates through
//! here too, but their commit checks that what they used is unchanged (the
//! campaign's `updatedAt`, the affiliate's status) and reads again when it
//! is not, so a postback never uses stale terms or a stale status. Only found
//! records are cached, so a new campaign or code works at once.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use domain::affiliate::AffiliateStatus;
use domain::affiliate_code::CodeOwner;
use domain::attribution::AffiliateFacts;
use domain::campaign::Campaign;
use domain::error::Result;
use domain::tenant::Tenant;
use store::{affiliates, campaigns, Store};

/// How stale a cached lookup may be.
pub const STALENESS: Duration = Duration::from_secs(60);
/// Entries a cache holds at most; past that, expired ones go, then all.
const CAPACITY: usize = 10_000;

/// A map whose entries expire.
#[derive(Debug)]
pub struct TtlCache<K, V> {
    ttl: Duration,
    entries: Mutex<HashMap<K, (Instant, V)>>,
}

impl<K: Eq + Hash + Clone, V: Clone> TtlCache<K, V> {
    /// An empty cache whose entries live `ttl`.
    pub fn new(ttl: Duration) -> Self {
        TtlCache {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The live entry of `key`.
    pub fn get(&self, key: &K) -> Option<V> {
        let entries = self.entries.lock().ok()?;
        entries
            .get(key)
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, v)| v.clone())
    }

    /// Stores `value` under `key` from now on.
    pub fn put(&self, key: K, value: V) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= CAPACITY {
            let ttl = self.ttl;
            entries.retain(|_, (at, _)| at.elapsed() < ttl);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(key, (Instant::now(), value));
    }
}

/// An affiliate as a postback uses it: its attribution facts, the status
/// they were read with and its tenant key.
pub type AffiliateSeen = (AffiliateFacts, AffiliateStatus, String);

/// The cached lookups, one set per process.
#[derive(Debug)]
pub struct Lookups {
    campaigns: TtlCache<String, (Campaign, String)>,
    codes: TtlCache<(String, String), CodeOwner>,
    affiliates: TtlCache<String, AffiliateSeen>,
}

impl Default for Lookups {
    fn default() -> Self {
        Lookups {
            campaigns: TtlCache::new(STALENESS),
            codes: TtlCache::new(STALENESS),
            affiliates: TtlCache::new(STALENESS),
        }
    }
}

impl Lookups {
    /// A cached campaign and its tenant key, without reading on a miss.
    pub fn cached_campaign(&self, id: &str) -> Option<(Campaign, String)> {
        self.campaigns.get(&id.to_string())
    }

    /// Remembers a campaign just read.
    pub fn keep_campaign(&self, c: &Campaign, tenant_key: &str) {
        self.campaigns
            .put(c.id.clone(), (c.clone(), tenant_key.to_string()));
    }

    /// A cached affiliate, without reading on a miss.
    pub fn cached_affiliate(&self, id: &str) -> Option<AffiliateSeen> {
        self.affiliates.get(&id.to_string())
    }

    /// Remembers an affiliate just read.
    pub fn keep_affiliate(&self, id: &str, seen: AffiliateSeen) {
        self.affiliates.put(id.to_string(), seen);
    }

    /// A campaign and its tenant key by id (any tenant: the public path).
    pub async fn campaign(&self, store: &Store, id: &str) -> Result<Option<(Campaign, String)>> {
        if let Some(hit) = self.campaigns.get(&id.to_string()) {
            return Ok(Some(hit));
        }
        let found = campaigns::get_with_tenant(store, id).await?;
        if let Some(f) = &found {
            self.campaigns.put(id.to_string(), f.clone());
        }
        Ok(found)
    }

    /// The owner of an affiliate code (any letter case) in a tenant.
    pub async fn code_owner(
        &self,
        store: &Store,
        tenant: &Tenant,
        code: &str,
    ) -> Result<Option<CodeOwner>> {
        let key = (tenant.key(), code.to_ascii_lowercase());
        if let Some(hit) = self.codes.get(&key) {
            return Ok(Some(hit));
        }
        let found = affiliates::resolve_code(store, tenant, code).await?;
        if let Some(o) = &found {
            self.codes.put(key, o.clone());
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_the_cache_stays_bounded() {
        let c = TtlCache::new(Duration::from_millis(30));
        c.put("a", 1);
        assert_eq!(c.get(&"a"), Some(1));
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(c.get(&"a"), None, "expired");
        let big = TtlCache::new(Duration::from_secs(60));
        for i in 0..(CAPACITY + 5) {
            big.put(i, i);
        }
        assert!(big.entries.lock().unwrap().len() <= CAPACITY);
        assert_eq!(big.get(&(CAPACITY + 4)), Some(CAPACITY + 4));
    }
}
