//! The local host: every function's routes on one HTTP server, through the
//! same handler code the Lambdas run.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext;
use lambda_http::request::RequestContext;
use shared::http::Router;
use shared::App;
use tokio::net::TcpListener;

/// Largest body the local host reads (API Gateway's own cap is 10 MB).
const MAX_READ_BYTES: usize = 10 * 1024 * 1024;

/// The browser script and its demo pages: files of the local host only, not
/// API routes (a deployment serves `tracker.js` from a CDN or the merchant's site).
/// Served from the binary, never through DynamoDB; the script may be cached
/// like the OpenAPI document, the demo pages are revalidated.
const STATIC_FILES: &[(&str, &str, &str, &str)] = &[
    (
        "/tracker.js",
        "application/javascript; charset=utf-8",
        shared::routes::STATIC_CACHE_CONTROL,
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

/// A static file of the local host, for GET and HEAD (hyper drops the body of
/// a HEAD answer and keeps its length).
fn static_file(method: &http::Method, path: &str) -> Option<hyper::Response<Full<Bytes>>> {
    if method != http::Method::GET && method != http::Method::HEAD {
        return None;
    }
    let (_, content_type, cache_control, body) =
        STATIC_FILES.iter().find(|(p, _, _, _)| *p == path)?;
    let body = Bytes::from_static(body.as_bytes());
    Some(
        hyper::Response::builder()
            .status(200)
            .header("content-type", *content_type)
            .header("cache-control", *cache_control)
            .header("x-content-type-options", "nosniff")
            .body(Full::new(body))
            .expect("static response"),
    )
}

/// Every function's router, merged.
pub fn router() -> Router {
    Router::merge(vec![
        affiliates::router(),
        applications::router(),
        assets::router(),
        campaigns::router(),
        conversions::router(),
        payouts::router(),
        public::router(),
        webhooks::router(),
    ])
}

/// Serves until the listener fails, with the webhook workers (the stream
/// consumer and the retry sweep) running beside the routes, as the stream
/// event source and the scheduled sweep do on AWS.
pub async fn serve(
    listener: TcpListener,
    app: Arc<App>,
    router: Arc<Router>,
) -> std::io::Result<()> {
    shared::webhooks::local::spawn(app.clone());
    loop {
        let (stream, peer) = listener.accept().await?;
        let app = app.clone();
        let router = router.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| handle(req, peer, app.clone(), router.clone()));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

async fn handle(
    req: hyper::Request<Incoming>,
    peer: SocketAddr,
    app: Arc<App>,
    router: Arc<Router>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    if let Some(resp) = static_file(req.method(), req.uri().path()) {
        return Ok(resp);
    }
    let (parts, body) = req.into_parts();
    let bytes = match Limited::new(body, MAX_READ_BYTES).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return Ok(hyper::Response::builder()
                .status(413)
                .header("x-content-type-options", "nosniff")
                .body(Full::new(Bytes::from_static(b"payload too large")))
                .expect("static response"))
        }
    };
    // Build the request as API Gateway would hand it over: the client address
    // sits in the request context, where the Lambda adapter reads it.
    let mut ctx = ApiGatewayV2httpRequestContext::default();
    ctx.stage = Some("$default".into());
    ctx.http.method = parts.method.clone();
    ctx.http.path = Some(parts.uri.path().to_string());
    ctx.http.source_ip = Some(peer.ip().to_string());
    let mut builder = http::Request::builder()
        .method(parts.method)
        .uri(parts.uri)
        .extension(RequestContext::ApiGatewayV2(ctx));
    for (k, v) in &parts.headers {
        builder = builder.header(k, v);
    }
    let lambda_req = builder
        .body(if bytes.is_empty() {
            lambda_http::Body::Empty
        } else {
            lambda_http::Body::Binary(bytes.to_vec())
        })
        .expect("request parts are valid");
    let resp = router
        .handle(app, shared::lambda::to_api_request(lambda_req))
        .await;
    Ok(resp.map(|b| Full::new(Bytes::from(b))))
}
