//! The route catalogue: every (method, path) of the API, which function serves
//! it and who may call it. Routers, the template check and the OpenAPI check
//! all read this one list.

use http::Method;

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No key; rate-limited per client IP.
    Public,
    /// Bearer API key; rate-limited per account.
    Merchant,
    /// No key and no rate limit: a fixed document built into the binary,
    /// served with caching headers, so it never touches DynamoDB.
    Static,
}

/// `Cache-Control` of static documents: shared caches may keep them briefly.
pub const STATIC_CACHE_CONTROL: &str = "public, max-age=300";

/// One route of the API.
#[derive(Debug)]
pub struct RouteSpec {
    pub method: &'static str,
    pub path: &'static str,
    /// The Lambda function (crate under `functions/`) that serves it.
    pub function: &'static str,
    pub access: Access,
    /// Answers CORS preflight and allows any origin (browser-facing routes).
    pub cors: bool,
}

const fn merchant(method: &'static str, path: &'static str, function: &'static str) -> RouteSpec {
    RouteSpec {
        method,
        path,
        function,
        access: Access::Merchant,
        cors: false,
    }
}

const fn public(method: &'static str, path: &'static str, cors: bool) -> RouteSpec {
    RouteSpec {
        method,
        path,
        function: "public",
        access: Access::Public,
        cors,
    }
}

const fn document(path: &'static str) -> RouteSpec {
    RouteSpec {
        method: "GET",
        path,
        function: "public",
        access: Access::Static,
        cors: true,
    }
}

/// Every route of the API.
pub static CATALOGUE: &[RouteSpec] = &[
    merchant("GET", "/api/v1/campaigns", "campaigns"),
    merchant("POST", "/api/v1/campaigns", "campaigns"),
    merchant("GET", "/api/v1/campaigns/{id}", "campaigns"),
    merchant("PUT", "/api/v1/campaigns/{id}", "campaigns"),
    merchant("POST", "/api/v1/conversions/postback", "conversions"),
    merchant("GET", "/api/v1/conversions", "conversions"),
    merchant("GET", "/api/v1/conversions/summary", "conversions"),
    merchant("GET", "/api/v1/conversions/{id}", "conversions"),
    merchant("POST", "/api/v1/conversions/{id}/reverse", "conversions"),
    public("GET", "/api/v1/campaigns/{id}/public", true),
    document("/api/v1/openapi.json"),
    merchant("GET", "/api/v1/affiliates", "affiliates"),
    merchant("POST", "/api/v1/affiliates", "affiliates"),
    merchant("GET", "/api/v1/affiliates/{id}", "affiliates"),
    merchant("PUT", "/api/v1/affiliates/{id}", "affiliates"),
    public("POST", "/api/v1/affiliates/signup", true),
    merchant("GET", "/api/v1/applications", "applications"),
    merchant("GET", "/api/v1/applications/{id}", "applications"),
    merchant("POST", "/api/v1/applications/{id}/accept", "applications"),
    merchant("POST", "/api/v1/applications/{id}/reject", "applications"),
    merchant("POST", "/api/v1/applications/bulk-accept", "applications"),
    merchant("GET", "/api/v1/assets", "assets"),
    merchant("POST", "/api/v1/assets/swipe-copy", "assets"),
    merchant("GET", "/api/v1/assets/{id}", "assets"),
    merchant("PATCH", "/api/v1/assets/{id}", "assets"),
    merchant("DELETE", "/api/v1/assets/{id}", "assets"),
    merchant("GET", "/api/v1/payouts", "payouts"),
    merchant("GET", "/api/v1/payouts/{id}", "payouts"),
    merchant("GET", "/api/v1/payouts/{id}/invoice", "payouts"),
    merchant("POST", "/api/v1/payouts/{id}/approve", "payouts"),
    merchant("POST", "/api/v1/payouts/{id}/reject", "payouts"),
    merchant("POST", "/api/v1/payouts/{id}/mark-paid", "payouts"),
    merchant("PUT", "/api/v1/payouts/{id}/mark-paid", "payouts"),
    merchant("POST", "/api/v1/payouts/batch-process", "payouts"),
    merchant("POST", "/api/v1/payouts/bulk-cancel", "payouts"),
    public("POST", "/api/v1/track/click", true),
    public("POST", "/api/v1/track/identify", true),
    merchant("GET", "/api/v1/events", "webhooks"),
    merchant("GET", "/api/v1/events/{id}", "webhooks"),
    merchant("POST", "/api/v1/events/{id}/redeliver", "webhooks"),
    merchant("GET", "/api/v1/webhook-endpoints", "webhooks"),
    merchant("POST", "/api/v1/webhook-endpoints", "webhooks"),
    merchant("GET", "/api/v1/webhook-endpoints/{id}", "webhooks"),
    merchant("PATCH", "/api/v1/webhook-endpoints/{id}", "webhooks"),
    merchant("DELETE", "/api/v1/webhook-endpoints/{id}", "webhooks"),
    merchant(
        "POST",
        "/api/v1/webhook-endpoints/{id}/rotate-secret",
        "webhooks",
    ),
    merchant("POST", "/api/v1/webhook-endpoints/{id}/test", "webhooks"),
    merchant(
        "GET",
        "/api/v1/webhook-endpoints/{id}/deliveries",
        "webhooks",
    ),
    merchant("POST", "/api/v1/webhook-endpoints/{id}/replay", "webhooks"),
];

/// The catalogue entry for a method and path pattern.
pub fn find(method: &Method, path: &str) -> Option<&'static RouteSpec> {
    CATALOGUE
        .iter()
        .find(|r| r.method == method.as_str() && r.path == path)
}

/// Path parameters captured by a match.
pub type Params = Vec<(&'static str, String)>;

/// Every route whose pattern matches `path` (any method), preferring literal
/// segments over parameters; `None` when no route has this path.
pub fn match_path(path: &str) -> Option<Vec<(&'static RouteSpec, Params)>> {
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let mut best: Vec<(&'static RouteSpec, Params)> = Vec::new();
    let mut best_score = 0usize;
    for spec in CATALOGUE {
        let pat: Vec<&str> = spec.path.trim_start_matches('/').split('/').collect();
        if pat.len() != segs.len() {
            continue;
        }
        let mut params = Vec::new();
        let mut score = 0;
        let ok = pat.iter().zip(&segs).all(|(p, s)| {
            if let Some(name) = p.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                if s.is_empty() {
                    return false;
                }
                params.push((name, (*s).to_string()));
                true
            } else {
                score += 1;
                p == s
            }
        });
        if !ok {
            continue;
        }
        if score > best_score {
            best.clear();
            best_score = score;
        }
        if score == best_score {
            best.push((spec, params));
        }
    }
    (!best.is_empty()).then_some(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_segments_win_and_params_are_captured() {
        let m = match_path("/api/v1/campaigns/cmp_1/public").unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].1, vec![("id", "cmp_1".to_string())]);
        let m = match_path("/api/v1/campaigns/cmp_1").unwrap();
        let methods: Vec<_> = m.iter().map(|(s, _)| s.method).collect();
        assert_eq!(methods, vec!["GET", "PUT"]);
        assert!(match_path("/api/v1/nothing").is_none());
        assert!(match_path("/api/v1/campaigns//public").is_none());
    }

    #[test]
    fn catalogue_has_no_duplicates() {
        for (i, a) in CATALOGUE.iter().enumerate() {
            for b in &CATALOGUE[i + 1..] {
                assert!(
                    !(a.method == b.method && a.path == b.path),
                    "{} {}",
                    a.method,
                    a.path
                );
            }
        }
    }
}
