//! Running a function's routes as a Lambda function behind an HTTP API.

use std::sync::Arc;

use axum::body::Body as AxumBody;
use lambda_http::{service_fn, Body, Request, Response};
use tower::ServiceExt;

use crate::http::{service, ApiRouter};
use ::services::app::{init_tracing, App};
use ::store::config::Config;

/// An API Gateway (or local host) request as the router takes it; the
/// request context (the client address) stays in its extensions.
pub fn to_axum_request(req: Request) -> http::Request<AxumBody> {
    req.map(|body| match body {
        Body::Empty => AxumBody::empty(),
        Body::Text(t) => AxumBody::from(t),
        Body::Binary(b) => AxumBody::from(b),
        _ => AxumBody::empty(),
    })
}

/// The router's answer, read whole, for the Lambda runtime.
pub async fn to_lambda_response(resp: axum::response::Response) -> Response<Body> {
    let (parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let text = parts
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json") || ct.starts_with("text/"));
    let body = if bytes.is_empty() {
        Body::Empty
    } else if text {
        Body::Text(String::from_utf8_lossy(&bytes).into_owned())
    } else {
        Body::Binary(bytes.to_vec())
    };
    Response::from_parts(parts, body)
}

/// Answers one API Gateway request through `router` (the Lambda entry
/// point's work, also run in process by the tests).
pub async fn answer(router: &axum::Router, req: Request) -> Response<Body> {
    let resp = router
        .clone()
        .oneshot(to_axum_request(req))
        .await
        .unwrap_or_else(|never| match never {});
    to_lambda_response(resp).await
}

/// Entry point of every HTTP function: configuration and clients are built
/// once, before the first event, and a bad configuration fails the init.
pub async fn run(routes: ApiRouter) -> Result<(), lambda_http::Error> {
    init_tracing();
    let config = Config::from_env()?;
    let app = App::init(config).await?;
    // The signing secret is not read here: a cold start's event is normally
    // waiting when init ends, and the first request that needs the secret
    // reads it beside its own reads, while a read started now would take
    // the start's CPU.
    let router = Arc::new(service(routes, app));
    lambda_http::run(service_fn(move |event: Request| {
        let router = router.clone();
        async move { Ok::<_, std::convert::Infallible>(answer(&router, event).await) }
    }))
    .await
}
