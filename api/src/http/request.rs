//! Facts read off an incoming request before any route runs.

use http::HeaderMap;

use ::domain::ids::{new_id, IdKind};

/// The request id: a well-formed incoming `X-Request-Id` is echoed,
/// anything else (or none) is replaced by a generated id.
pub fn request_id(headers: &HeaderMap) -> String {
    headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| is_valid_request_id(v))
        .map(str::to_string)
        .unwrap_or_else(|| new_id(IdKind::Request))
}

/// 1-128 characters of `[A-Za-z0-9._-]`: echoed; anything else is replaced.
pub fn is_valid_request_id(v: &str) -> bool {
    (1..=128).contains(&v.len())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_echoed_only_when_well_formed() {
        assert!(is_valid_request_id("abc-123_x.y"));
        assert!(!is_valid_request_id(""));
        assert!(!is_valid_request_id("has space"));
        assert!(!is_valid_request_id(&"a".repeat(129)));
        let mut h = HeaderMap::new();
        h.insert("x-request-id", "trace-1".parse().unwrap());
        assert_eq!(request_id(&h), "trace-1");
        h.insert("x-request-id", "bad id".parse().unwrap());
        assert!(request_id(&h).starts_with("req_"));
    }
}
