//! The local host: every function's routes on one HTTP server, through the
//! same router and layers the Lambdas run.

use std::net::IpAddr;
use std::sync::Arc;

use api::http::router::STATIC_CACHE_CONTROL;
use api::http::ApiRouter;
use api::services::app::App;
use axum::extract::Request;
use axum::middleware::{from_fn, Next};
use axum::response::{IntoResponse, Response};
use http::header;
use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext;
use lambda_http::request::RequestContext;
use tokio::net::TcpListener;
use tower::ServiceExt as _;

/// The browser script and its demo pages: files of the local host only, not
/// API routes (a deployment serves `tracker.js` from a CDN or the merchant's site).
/// Served from the binary, never through DynamoDB; the script may be cached
/// like the OpenAPI document, the demo pages are revalidated.
const STATIC_FILES: &[(&str, &str, &str, &str)] = &[
    (
        "/tracker.js",
        "application/javascript; charset=utf-8",
        STATIC_CACHE_CONTROL,
        include_str!("../../tracker/src/tracker.js"),
    ),
    (
        "/demo/landing",
        "text/html; charset=utf-8",
        "no-cache",
        include_str!("../../tracker/demo/landing.html"),
    ),
    (
        "/demo/checkout",
        "text/html; charset=utf-8",
        "no-cache",
        include_str!("../../tracker/demo/checkout.html"),
    ),
];

/// Every HTTP function, by the name of its crate and binary, with its routes.
pub fn functions() -> Vec<(&'static str, ApiRouter)> {
    vec![
        ("affiliates", affiliates::routes()),
        ("applications", applications::routes()),
        ("assets", assets::routes()),
        ("campaigns", campaigns::routes()),
        ("conversions", conversions::routes()),
        ("integrations", integrations::routes()),
        ("payouts", payouts::routes()),
        ("portal", portal::routes()),
        ("public", public::routes()),
        ("reports", reports::routes()),
        ("webhooks", webhooks::routes()),
    ]
}

/// Every function's routes, merged: the whole API.
pub fn routes() -> ApiRouter {
    functions()
        .into_iter()
        .fold(ApiRouter::new(), |all, (_, routes)| all.merge(routes))
}

/// The local host's service: the whole API, and the browser script and its
/// demo pages for GET and HEAD (other methods fall through to the API).
pub fn service(app: Arc<App>) -> axum::Router {
    api::http::service(routes(), app).layer(from_fn(static_files))
}

async fn static_files(req: Request, next: Next) -> Response {
    let readable = matches!(*req.method(), http::Method::GET | http::Method::HEAD);
    let found = STATIC_FILES.iter().find(|(p, ..)| *p == req.uri().path());
    let Some(&(_, content_type, cache_control, body)) = found.filter(|_| readable) else {
        return next.run(req).await;
    };
    // Every answer of the host names its request, as the API's do.
    let request_id = api::http::request::request_id(req.headers());
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, cache_control),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::HeaderName::from_static("x-request-id"), &request_id),
        ],
        body,
    )
        .into_response()
}

/// Serves until the listener fails, with the webhook workers (the stream
/// consumer and the retry sweep) running beside the routes, as the stream
/// event source and the scheduled sweep do on AWS.
pub async fn serve(listener: TcpListener, app: Arc<App>) -> std::io::Result<()> {
    api::services::local_webhooks::spawn(app.clone());
    app.signing.prefetch();
    let router = service(app);
    // A header line the parser cannot take (a control character in its
    // value) is dropped rather than answered with the parser's bare 400, so
    // the request still gets an answer in the envelope (a key with a
    // control character is no key: 401).
    let mut http = hyper::server::conn::http1::Builder::new();
    http.ignore_invalid_headers(true);
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            // A connection that failed before it was accepted (too many open files, reset).
            Err(_) => continue,
        };
        let router = router.clone();
        let svc = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
            let mut req = req.map(axum::body::Body::new);
            let ctx = gateway_context(&req, peer.ip());
            req.extensions_mut().insert(ctx);
            router.clone().oneshot(req)
        });
        let conn = http.serve_connection(hyper_util::rt::TokioIo::new(stream), svc);
        tokio::spawn(async move {
            // A client that goes away mid-request is not the server's failure.
            let _ = conn.await;
        });
    }
}

/// The request context API Gateway would hand over: the client address
/// sits there, where the Lambda adapter reads it.
pub fn gateway_context<B>(req: &http::Request<B>, ip: IpAddr) -> RequestContext {
    let mut ctx = ApiGatewayV2httpRequestContext::default();
    ctx.stage = Some("$default".into());
    ctx.http.method = req.method().clone();
    ctx.http.path = Some(req.uri().path().to_string());
    ctx.http.source_ip = Some(ip.to_string());
    RequestContext::ApiGatewayV2(ctx)
}

/// Answers one request in process, as the local host would for a client at `ip`.
pub async fn answer(router: &axum::Router, mut req: Request, ip: IpAddr) -> Response {
    let ctx = gateway_context(&req, ip);
    req.extensions_mut().insert(ctx);
    router
        .clone()
        .oneshot(req)
        .await
        .unwrap_or_else(|never| match never {})
}
