//! A function's routes and the one service that serves them, on Lambda and
//! on the local host alike.
//!
//! Each route is stated once, on its handler (`#[utoipa::path(method, path
//! = ...)]`), and registered with `utoipa_axum::routes!`: the same statement
//! routes the request and describes the operation.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::Request;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::options;
use axum::Router;
use http::{HeaderValue, Method, StatusCode, Uri};
use tower::{Layer, ServiceExt};
use utoipa_axum::router::OpenApiRouter;

use crate::http::idempotency::idempotent;
use crate::http::layer::{envelope, record_route};
use crate::http::reply::Reply;
use ::domain::error::Error;
use ::services::app::App;

/// The routes of one function (or of the whole API), with their description.
pub type ApiRouter = OpenApiRouter<Arc<App>>;

/// Whether `routes!` builds each operation's whole description (the
/// generator asks for it) or only routes (a function answering requests:
/// its description is the file it serves, so its start-up builds none).
static DESCRIBE: AtomicBool = AtomicBool::new(false);

/// Makes every later `routes!` build the whole description.
pub fn describe_routes() {
    DESCRIBE.store(true, Ordering::Relaxed);
}

/// Whether `routes!` builds the whole description.
pub fn describing() -> bool {
    DESCRIBE.load(Ordering::Relaxed)
}

/// Registers handlers by their own statements (`#[utoipa::path]`), for
/// `ApiRouter::routes`: `routes!(list, create)` (handlers of one path, by
/// name). Routing takes only each statement's method and path; the whole
/// operation and its schemas are built when [`describing`].
#[macro_export]
macro_rules! routes {
    ($($handler:ident),+ $(,)?) => {{
        if $crate::http::router::describing() {
            ::utoipa_axum::routes!($($handler),+)
        } else {
            let mut paths = ::utoipa::openapi::path::Paths::new();
            let mut router = ::axum::routing::MethodRouter::new();
            $(
                ::utoipa_axum::paste! {
                    let path = <[<__path_ $handler>] as ::utoipa::Path>::path();
                    let methods = <[<__path_ $handler>] as ::utoipa::Path>::methods();
                }
                for method in &methods {
                    router = router.on(::utoipa_axum::PathItemExt::to_method_filter(method), $handler);
                }
                paths.add_path_operation(&path, methods, ::utoipa::openapi::path::Operation::new());
            )+
            (Vec::new(), paths, router)
        }
    }};
}

/// `Cache-Control` of static documents: shared caches may keep them briefly.
pub const STATIC_CACHE_CONTROL: &str = "public, max-age=300";

/// The service for `routes`: unknown paths answer 404, a trailing slash is
/// ignored, and every answer passes the outer layer (`http::layer`).
pub fn service(routes: ApiRouter, app: Arc<App>) -> Router {
    let (router, _) = routes.split_for_parts();
    let inner = router
        .route_layer(from_fn_with_state(app.clone(), idempotent))
        .route_layer(from_fn(record_route))
        .fallback(not_found)
        .with_state(app);
    let svc = from_fn(envelope).layer(inner.map_request(normalise));
    Router::new().fallback_service(svc)
}

async fn not_found(method: Method, uri: Uri) -> crate::http::reply::Failure {
    Error::RouteNotFound(format!("{method} {}", uri.path())).into()
}

/// `/a/b/` is `/a/b`.
fn normalise(mut req: Request) -> Request {
    let path = req.uri().path();
    if path.len() > 1 && path.ends_with('/') {
        let trimmed = path.trim_end_matches('/');
        let trimmed = if trimmed.is_empty() { "/" } else { trimmed };
        let rebuilt = match req.uri().query() {
            Some(q) => format!("{trimmed}?{q}"),
            None => trimmed.to_string(),
        };
        if let Ok(uri) = rebuilt.parse::<Uri>() {
            *req.uri_mut() = uri;
        }
    }
    req
}

/// Browser-facing routes: each path answers CORS preflight (`OPTIONS`) for
/// the methods it has, and every answer allows any origin, without
/// credentials.
pub fn with_cors(routes: ApiRouter) -> ApiRouter {
    let paths: Vec<(String, Vec<&'static str>)> = routes
        .get_openapi()
        .paths
        .paths
        .iter()
        .map(|(path, item)| (path.clone(), methods_of(item)))
        .collect();
    let mut routes = routes;
    for (path, methods) in paths {
        let allow = methods.join(", ");
        routes = routes.route(&path, options(move || preflight(allow.clone())));
    }
    routes.route_layer(from_fn(allow_any_origin))
}

/// The methods a path has, sorted, with the OPTIONS of its preflight.
fn methods_of(item: &utoipa::openapi::PathItem) -> Vec<&'static str> {
    let mut methods = vec!["OPTIONS"];
    methods.extend(operations(item));
    methods.sort_unstable();
    methods
}

/// The methods a described path has operations for.
pub fn operations(item: &utoipa::openapi::PathItem) -> Vec<&'static str> {
    let ops = [
        ("GET", &item.get),
        ("POST", &item.post),
        ("PUT", &item.put),
        ("PATCH", &item.patch),
        ("DELETE", &item.delete),
    ];
    ops.iter()
        .filter(|(_, op)| op.is_some())
        .map(|(m, _)| *m)
        .collect()
}

async fn preflight(allow: String) -> Response {
    Reply::raw(StatusCode::NO_CONTENT, "text/plain", Vec::new())
        .header("access-control-allow-methods", allow)
        .header("access-control-allow-headers", "Content-Type, X-Request-Id")
        .header("access-control-max-age", "600")
        .into_response()
}

/// The answer headers a browser script may read besides the safelisted
/// ones: the request id and the rate limit's (`Retry-After` on a 429).
const EXPOSED: &str =
    "X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset";

async fn allow_any_origin(req: Request, next: axum::middleware::Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert("access-control-allow-origin", HeaderValue::from_static("*"));
    h.insert(
        "access-control-expose-headers",
        HeaderValue::from_static(EXPOSED),
    );
    resp
}

/// `Cache-Control` of a document that varies per account: browsers keep it,
/// but ask again each time (a 304 when unchanged); shared caches never.
pub const PRIVATE_CACHE_CONTROL: &str = "private, no-cache";

/// A fixed document served with what makes it vary (`varies`: an account's
/// headers), private to the browser and revalidated by its `ETag` (of the
/// body and `varies`): 304 with no body when `if_none_match` names it.
pub fn varying_document(
    content_type: &'static str,
    body: &'static str,
    varies: &str,
    if_none_match: Option<&str>,
) -> Response {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(body.as_bytes())
        .chain_update([0])
        .chain_update(varies.as_bytes())
        .finalize();
    let etag = format!("\"{}\"", hex::encode(&digest[..16]));
    let fresh = if_none_match.is_some_and(|given| {
        given.split(',').any(|t| {
            let t = t.trim();
            t == "*" || t.trim_start_matches("W/") == etag
        })
    });
    let reply = match fresh {
        true => Reply::raw(StatusCode::NOT_MODIFIED, content_type, Vec::new()),
        false => Reply::raw(StatusCode::OK, content_type, body.as_bytes().to_vec()),
    };
    reply
        .header("cache-control", PRIVATE_CACHE_CONTROL)
        .header("etag", &etag)
        .into_response()
}

/// A fixed document built into the binary: no key, no rate limit, cached briefly.
pub fn document(content_type: &'static str, body: &'static str) -> Response {
    Reply::raw(StatusCode::OK, content_type, body.as_bytes().to_vec())
        .header("cache-control", STATIC_CACHE_CONTROL)
        .into_response()
}
