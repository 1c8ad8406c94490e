//! Routing, authentication, rate limiting and response mapping around handlers.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use http::{HeaderValue, Method, Response};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tracing::Instrument;

use crate::app::App;
use crate::auth::{self, Principal};
use crate::domain::tenant::Tenant;
use crate::error::{Error, Result};
use crate::http::envelope::{self, ListMeta};
use crate::http::query::Query;
use crate::http::request::ApiRequest;
use crate::rate_limit::{self, RateState};
use crate::routes::{self, Access, RouteSpec};
use crate::store::page::{Page, PageRequest};

/// What a handler produces.
#[derive(Debug)]
pub struct Reply {
    status: u16,
    body: ReplyBody,
    headers: Vec<(&'static str, String)>,
}

#[derive(Debug)]
enum ReplyBody {
    Data(Value, Option<ListMeta>),
    Raw(&'static str, Vec<u8>),
}

impl Reply {
    /// 200 with `data`.
    pub fn ok<T: Serialize>(data: T) -> Result<Reply> {
        Self::with_status(200, data)
    }

    /// 201 with `data`.
    pub fn created<T: Serialize>(data: T) -> Result<Reply> {
        Self::with_status(201, data)
    }

    /// Any status with `data`.
    pub fn with_status<T: Serialize>(status: u16, data: T) -> Result<Reply> {
        Ok(Reply {
            status,
            body: ReplyBody::Data(serde_json::to_value(data).map_err(Error::internal)?, None),
            headers: Vec::new(),
        })
    }

    /// 200 with a page of records.
    pub fn list<T: Serialize>(page: Page<T>, req: &PageRequest) -> Result<Reply> {
        let meta = ListMeta {
            limit: req.limit,
            offset: req.offset,
            has_more: page.has_more,
            next_cursor: page.next_cursor,
        };
        Ok(Reply {
            status: 200,
            body: ReplyBody::Data(
                serde_json::to_value(page.items).map_err(Error::internal)?,
                Some(meta),
            ),
            headers: Vec::new(),
        })
    }

    /// 200 with a page of records shown through `view`.
    pub fn list_with<'a, T, V: Serialize>(
        page: &'a Page<T>,
        view: impl Fn(&'a T) -> V,
        req: &PageRequest,
    ) -> Result<Reply> {
        let items: Vec<V> = page.items.iter().map(view).collect();
        Self::list(
            Page {
                items,
                has_more: page.has_more,
                next_cursor: page.next_cursor.clone(),
            },
            req,
        )
    }

    /// A non-enveloped body (documents, scripts, pages).
    pub fn raw(status: u16, content_type: &'static str, body: Vec<u8>) -> Reply {
        Reply {
            status,
            body: ReplyBody::Raw(content_type, body),
            headers: Vec::new(),
        }
    }

    /// Adds a response header.
    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Reply {
        self.headers.push((name, value.into()));
        self
    }
}

/// Everything a handler gets for one call; `A` is what the route's access
/// established: [`Anonymous`] (public and static routes) or the caller's
/// [`Principal`] (merchant routes). Only the latter has a tenant, so a public
/// handler asking for one does not compile.
pub struct Call<A = Principal> {
    pub app: Arc<App>,
    pub req: ApiRequest,
    params: Vec<(&'static str, String)>,
    access: A,
}

/// The access of a public or static route: nobody in particular.
#[derive(Debug, Clone, Copy)]
pub struct Anonymous;

impl<A> Call<A> {
    /// A path parameter (`{id}`); a name the route does not have is an error.
    pub fn param(&self, name: &str) -> Result<&str> {
        self.params
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
            .ok_or_else(|| Error::internal(format!("the route has no {{{name}}} parameter")))
    }

    /// The JSON body as `T`.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T> {
        crate::http::body::parse(&self.req)
    }

    /// The query, restricted to `allowed` names.
    pub fn query(&self, allowed: &[&str]) -> Query<'_> {
        Query::new(&self.req.query, allowed)
    }
}

impl Call<Principal> {
    /// The authenticated tenant.
    pub fn tenant(&self) -> &Tenant {
        &self.access.tenant
    }

    /// The authenticated principal.
    pub fn principal(&self) -> &Principal {
        &self.access
    }
}

/// A boxed handler future.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Reply>> + Send>>;

/// A route handler, typed by the access its route requires.
#[derive(Clone, Copy)]
pub enum Handler {
    /// A public or static route's handler.
    Public(fn(Call<Anonymous>) -> HandlerFuture),
    /// A merchant route's handler.
    Merchant(fn(Call<Principal>) -> HandlerFuture),
}

impl Handler {
    /// Whether it fits a route of `access`.
    fn serves(&self, access: Access) -> bool {
        matches!(
            (self, access),
            (Handler::Public(_), Access::Public | Access::Static)
                | (Handler::Merchant(_), Access::Merchant)
        )
    }
}

struct Bound {
    spec: &'static RouteSpec,
    handler: Handler,
}

/// The routes one function serves.
pub struct Router {
    routes: Vec<Bound>,
}

impl Router {
    /// Binds handlers to catalogue routes. Panics at start-up on a route the
    /// catalogue does not list, or a handler of the wrong access kind, so
    /// neither can ship.
    pub fn new(handlers: Vec<(Method, &'static str, Handler)>) -> Router {
        let routes = handlers
            .into_iter()
            .map(|(m, p, handler)| {
                let spec = routes::find(&m, p)
                    .unwrap_or_else(|| panic!("{m} {p} is not in the route catalogue"));
                assert!(
                    handler.serves(spec.access),
                    "{m} {p}: a {:?} route needs a handler of that kind",
                    spec.access
                );
                Bound { spec, handler }
            })
            .collect();
        Router { routes }
    }

    /// Joins several functions' routers (the local host).
    pub fn merge(routers: Vec<Router>) -> Router {
        Router {
            routes: routers.into_iter().flat_map(|r| r.routes).collect(),
        }
    }

    /// The (method, path) pairs this router serves.
    pub fn served(&self) -> Vec<(&'static str, &'static str)> {
        self.routes
            .iter()
            .map(|b| (b.spec.method, b.spec.path))
            .collect()
    }

    /// Handles one request end to end and never fails: errors become envelopes.
    pub async fn handle(&self, app: Arc<App>, req: ApiRequest) -> Response<Vec<u8>> {
        let span = tracing::info_span!("request", request_id = %req.request_id);
        self.handle_inner(app, req).instrument(span).await
    }

    async fn handle_inner(&self, app: Arc<App>, req: ApiRequest) -> Response<Vec<u8>> {
        let started = Instant::now();
        let request_id = req.request_id.clone();
        let method = req.method.clone();
        let sent_key = req.headers.contains_key("authorization");
        let mut facts = Facts::default();
        let result = self.dispatch(app, req, &mut facts).await;
        let Facts {
            rate,
            cors,
            route,
            access,
            account,
        } = facts;
        let route_name = route.unwrap_or("unmatched");

        let mut builder = Response::builder();
        let (status, body, content_type) = match result {
            Ok(reply) => {
                for (k, v) in reply.headers {
                    builder = builder.header(k, v);
                }
                match reply.body {
                    ReplyBody::Data(data, list) => (
                        reply.status,
                        envelope::success(data, list.as_ref(), &request_id)
                            .to_string()
                            .into_bytes(),
                        "application/json",
                    ),
                    ReplyBody::Raw(ct, bytes) => (reply.status, bytes, ct),
                }
            }
            Err(err) => {
                let (status, body, headers) = envelope::failure(&err, &request_id);
                for (k, v) in headers {
                    builder = builder.header(k, v);
                }
                (status, body.to_string().into_bytes(), "application/json")
            }
        };
        if let Some(r) = rate {
            builder = builder
                .header("ratelimit-limit", r.limit.to_string())
                .header("ratelimit-remaining", r.remaining.to_string())
                .header("ratelimit-reset", r.reset_seconds.to_string());
        }
        if cors {
            builder = builder.header("access-control-allow-origin", "*");
        }
        // Anything a key could unlock stays out of shared and browser caches.
        if access == Some(Access::Merchant) || sent_key {
            builder = builder.header("cache-control", "no-store");
        } else if access == Some(Access::Static) && status == 200 {
            builder = builder.header("cache-control", routes::STATIC_CACHE_CONTROL);
        }
        tracing::info!(
            method = %method,
            route = route_name,
            status,
            account = account.as_deref().unwrap_or("-"),
            duration_ms = started.elapsed().as_millis() as u64,
            "request"
        );
        let mut resp = builder
            .status(status)
            .header("content-type", content_type)
            .header("x-content-type-options", "nosniff")
            .body(body)
            .expect("response parts are valid");
        if let Ok(v) = HeaderValue::from_str(&request_id) {
            resp.headers_mut().insert("x-request-id", v);
        }
        resp
    }

    /// Routes, limits, authenticates and runs the handler, recording what the
    /// response headers and the log line need in `facts`.
    async fn dispatch(&self, app: Arc<App>, req: ApiRequest, facts: &mut Facts) -> Result<Reply> {
        let path = normalise(&req.path);
        let Some(mut matched) = routes::match_path(path) else {
            return Err(Error::RouteNotFound(format!("{} {}", req.method, req.path)));
        };
        facts.cors = matched.iter().any(|(spec, _)| spec.cors);
        let Some(pos) = matched
            .iter()
            .position(|(s, _)| s.method == req.method.as_str())
        else {
            if req.method == Method::OPTIONS && facts.cors {
                return Ok(Reply::raw(204, "text/plain", Vec::new())
                    .header(
                        "access-control-allow-methods",
                        allow_list(&matched).join(", "),
                    )
                    .header("access-control-allow-headers", "Content-Type, X-Request-Id")
                    .header("access-control-max-age", "600"));
            }
            return Err(Error::MethodNotAllowed {
                allow: allow_list(&matched),
            });
        };
        let (spec, params) = matched.swap_remove(pos);
        facts.route = Some(spec.path);
        facts.access = Some(spec.access);
        let Some(bound) = self.routes.iter().find(|b| std::ptr::eq(b.spec, spec)) else {
            return Err(Error::RouteNotFound(format!("{} {}", req.method, req.path)));
        };
        let principal = match spec.access {
            Access::Public => {
                let ip = req.source_ip.as_deref().unwrap_or("unknown");
                let secret = app.signing.current().await?.secret;
                let ip_hash = crate::client_ip::hash_ip(&secret, ip, chrono::Utc::now());
                let scope = format!("ip:{ip_hash}:{}", spec.path);
                let rate =
                    rate_limit::hit(&app.store, &scope, app.config.public_rate_per_minute).await?;
                facts.rate = Some(rate);
                rate.check()?;
                None
            }
            Access::Static => None,
            Access::Merchant => Some(merchant(&app, &req, facts).await?),
        };
        match (bound.handler, principal) {
            (Handler::Merchant(h), Some(access)) => {
                h(Call {
                    app,
                    req,
                    params,
                    access,
                })
                .await
            }
            (Handler::Public(h), None) => {
                h(Call {
                    app,
                    req,
                    params,
                    access: Anonymous,
                })
                .await
            }
            _ => Err(Error::internal("route and handler access differ")),
        }
    }
}

/// Authenticates a merchant call and counts it against its account's limit.
/// The signature names the account: its key record and its rate-limit
/// counter are read and written at once (one round trip).
async fn merchant(app: &App, req: &ApiRequest, facts: &mut Facts) -> Result<Principal> {
    let token = auth::verify(app, req.header("authorization")).await?;
    let scope = format!("acct:{}", token.account_id());
    let limit = app.config.account_rate_per_minute;
    let (p, rate) = tokio::join!(
        auth::principal(app, &token),
        rate_limit::hit(&app.store, &scope, limit)
    );
    let p = p?;
    facts.account = Some(p.tenant.key());
    let rate = rate?;
    facts.rate = Some(rate);
    rate.check()?;
    Ok(p)
}

/// What one request's handling learnt that the response and the log need.
#[derive(Default)]
struct Facts {
    rate: Option<RateState>,
    cors: bool,
    route: Option<&'static str>,
    access: Option<Access>,
    account: Option<String>,
}

fn normalise(path: &str) -> &str {
    if path.len() > 1 {
        path.strip_suffix('/').unwrap_or(path)
    } else {
        path
    }
}

fn allow_list(matched: &[(&'static RouteSpec, Vec<(&'static str, String)>)]) -> Vec<String> {
    let mut allow: Vec<String> = matched.iter().map(|(s, _)| s.method.to_string()).collect();
    if matched.iter().any(|(s, _)| s.cors) {
        allow.push("OPTIONS".into());
    }
    allow.sort();
    allow.dedup();
    allow
}

/// Declares a merchant route's handler: `handler!(name, |call| { ... })`;
/// `call.tenant()` is the authenticated tenant.
#[macro_export]
macro_rules! handler {
    ($name:ident, |$call:ident| $body:block) => {
        #[allow(non_upper_case_globals)]
        const $name: $crate::http::router::Handler = $crate::http::router::Handler::Merchant({
            fn handle(
                $call: $crate::http::Call<$crate::auth::Principal>,
            ) -> $crate::http::router::HandlerFuture {
                Box::pin(async move $body)
            }
            handle
        });
    };
}

/// Declares a public or static route's handler: `public_handler!(name, |call| { ... })`;
/// it has no tenant to ask for.
#[macro_export]
macro_rules! public_handler {
    ($name:ident, |$call:ident| $body:block) => {
        #[allow(non_upper_case_globals)]
        const $name: $crate::http::router::Handler = $crate::http::router::Handler::Public({
            fn handle(
                $call: $crate::http::Call<$crate::http::router::Anonymous>,
            ) -> $crate::http::router::HandlerFuture {
                Box::pin(async move $body)
            }
            handle
        });
    };
}
