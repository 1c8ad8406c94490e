//! Running a router as a Lambda function behind an HTTP API.

use std::sync::Arc;

use lambda_http::request::RequestContext;
use lambda_http::{service_fn, Body, Request, RequestExt, Response};

use crate::app::{init_tracing, App};
use crate::config::Config;
use crate::http::{ApiRequest, Router};

/// Converts an API Gateway (or local host) request into the API's request.
/// The client address comes from the request context, never from a header.
pub fn to_api_request(req: Request) -> ApiRequest {
    let source_ip = match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx.http.source_ip.clone(),
        _ => None,
    };
    let (parts, body) = req.into_parts();
    let body = match body {
        Body::Empty => Vec::new(),
        Body::Text(t) => t.into_bytes(),
        Body::Binary(b) => b,
        _ => Vec::new(),
    };
    ApiRequest::new(
        parts.method,
        parts.uri.path(),
        parts.uri.query(),
        parts.headers,
        body,
        source_ip,
    )
}

/// Converts the router's response for the Lambda runtime.
pub fn to_lambda_response(resp: Response<Vec<u8>>) -> Response<Body> {
    let (parts, body) = resp.into_parts();
    let text = parts
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json") || ct.starts_with("text/"));
    let body = if body.is_empty() {
        Body::Empty
    } else if text {
        Body::Text(String::from_utf8_lossy(&body).into_owned())
    } else {
        Body::Binary(body)
    };
    Response::from_parts(parts, body)
}

/// Entry point of every HTTP function: configuration and clients are built
/// once, before the first event, and a bad configuration fails the init.
pub async fn run(router: Router) -> Result<(), lambda_http::Error> {
    init_tracing();
    let config = Config::from_env()?;
    let app = App::init(config).await?;
    let router = Arc::new(router);
    lambda_http::run(service_fn(move |event: Request| {
        let app = app.clone();
        let router = router.clone();
        async move {
            let resp = router.handle(app, to_api_request(event)).await;
            Ok::<_, std::convert::Infallible>(to_lambda_response(resp))
        }
    }))
    .await
}
