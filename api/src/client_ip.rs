//! Client addresses: kept only as keyed hashes whose key rotates daily.

use chrono::{DateTime, NaiveDate, Utc};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// Hashes a client address for storage (clicks, rate-limit counters):
/// HMAC-SHA256 keyed by a salt derived from `CLIENT_IP_SALT` and the UTC date,
/// so two days' hashes of one address cannot be linked, and without that key
/// the hash cannot be reversed by enumerating addresses. Within a day the same
/// address gives the same hash (enough to count a flood).
pub fn hash_ip(key: &str, ip: &str, now: DateTime<Utc>) -> String {
    let salt = daily_salt(key, now.date_naive());
    hex::encode(hmac_sha256(&salt, ip.trim().as_bytes()))
}

fn daily_salt(key: &str, day: NaiveDate) -> [u8; 32] {
    hmac_sha256(
        key.as_bytes(),
        format!("client-ip-salt:{}", day.format("%Y-%m-%d")).as_bytes(),
    )
}

/// HMAC-SHA256 (RFC 2104).
fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 2.
        assert_eq!(
            hex::encode(hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block is hashed first.
        assert_eq!(
            hex::encode(hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn ip_hashes_rotate_daily_and_never_contain_the_address() {
        let day1 = ::domain::timestamp::parse_datetime("2026-11-22T10:00:00Z").unwrap();
        let later = ::domain::timestamp::parse_datetime("2026-11-22T23:59:59Z").unwrap();
        let day2 = ::domain::timestamp::parse_datetime("2026-11-23T00:00:00Z").unwrap();
        let h = hash_ip("secret", "203.0.113.7", day1);
        assert_eq!(h.len(), 64);
        assert!(!h.contains("203.0.113.7"));
        assert_eq!(h, hash_ip("secret", "203.0.113.7", later));
        assert_ne!(h, hash_ip("secret", "203.0.113.7", day2));
        assert_ne!(h, hash_ip("other", "203.0.113.7", day1));
        assert_ne!(h, hash_ip("secret", "203.0.113.8", day1));
    }
}
