//! A transport-neutral request, built from API Gateway events or the local host.

use http::{HeaderMap, Method};

use crate::ids::{new_id, IdKind};

/// One incoming HTTP request.
#[derive(Debug, Clone)]
pub struct ApiRequest {
    pub method: Method,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    /// Client address from API Gateway's request context (never from a header).
    pub source_ip: Option<String>,
    pub request_id: String,
}

impl ApiRequest {
    /// Builds a request, parsing the query string and choosing the request id.
    pub fn new(
        method: Method,
        path: &str,
        raw_query: Option<&str>,
        headers: HeaderMap,
        body: Vec<u8>,
        source_ip: Option<String>,
    ) -> Self {
        let query = raw_query
            .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default();
        let request_id = headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .filter(|v| is_valid_request_id(v))
            .map(str::to_string)
            .unwrap_or_else(|| new_id(IdKind::Request));
        ApiRequest {
            method,
            path: path.to_string(),
            query,
            headers,
            body,
            source_ip,
            request_id,
        }
    }

    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
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
    }
}
