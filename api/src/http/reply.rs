//! What handlers answer: data for the envelope, a page of records, or a raw
//! document. The envelope itself (with the request id) is written by the
//! outer layer (`http::layer`), the one place every answer passes.

use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderName, HeaderValue, StatusCode};
use serde::Serialize;
use serde_json::Value;

use crate::http::envelope::ListMeta;
use crate::store::page::{Page, PageRequest};
use ::domain::error::Error;

/// What a handler produces.
#[derive(Debug)]
pub struct Reply {
    status: StatusCode,
    body: ReplyBody,
    headers: Vec<(&'static str, String)>,
}

#[derive(Debug)]
enum ReplyBody {
    Data(Value, Option<ListMeta>),
    Raw(&'static str, Vec<u8>),
}

/// An answer the outer layer still has to put in the envelope; it travels
/// as a response extension from the handler (or a failed extractor) to it.
#[derive(Debug, Clone)]
pub enum Pending {
    /// `data` (and list paging) of a success.
    Data(Arc<(Value, Option<ListMeta>)>),
    /// A failure, rendered by `envelope::failure`.
    Failure(Arc<Error>),
}

/// Marks a response whose body is final (documents, files, preflight).
#[derive(Debug, Clone, Copy)]
pub struct RawBody;

impl Reply {
    /// 200 with `data`.
    pub fn ok<T: Serialize>(data: T) -> Answer {
        Self::with_status(StatusCode::OK, data)
    }

    /// 201 with `data`.
    pub fn created<T: Serialize>(data: T) -> Answer {
        Self::with_status(StatusCode::CREATED, data)
    }

    fn with_status<T: Serialize>(status: StatusCode, data: T) -> Answer {
        Ok(Reply {
            status,
            body: ReplyBody::Data(serde_json::to_value(data).map_err(Error::internal)?, None),
            headers: Vec::new(),
        })
    }

    /// `status` with `data` as it is (an answer kept for replay).
    pub fn with_data(status: StatusCode, data: Value) -> Reply {
        Reply {
            status,
            body: ReplyBody::Data(data, None),
            headers: Vec::new(),
        }
    }

    /// 200 with a page of records.
    pub fn list<T: Serialize>(page: Page<T>, req: &PageRequest) -> Answer {
        let meta = ListMeta {
            limit: req.limit,
            offset: req.offset,
            has_more: page.has_more,
            next_cursor: page.next_cursor,
        };
        Ok(Reply {
            status: StatusCode::OK,
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
    ) -> Answer {
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

    /// A non-enveloped body (documents, scripts, pages, files).
    pub fn raw(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Reply {
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

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let mut resp = match self.body {
            ReplyBody::Data(data, list) => {
                let mut r = Response::new(Body::empty());
                r.extensions_mut()
                    .insert(Pending::Data(Arc::new((data, list))));
                r
            }
            ReplyBody::Raw(content_type, bytes) => {
                let mut r = Response::new(Body::from(bytes));
                r.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    HeaderValue::from_static(content_type),
                );
                r.extensions_mut().insert(RawBody);
                r
            }
        };
        *resp.status_mut() = self.status;
        for (name, value) in self.headers {
            if let Ok(v) = HeaderValue::from_str(&value) {
                resp.headers_mut().append(HeaderName::from_static(name), v);
            }
        }
        resp
    }
}

/// An API error on its way out: every failure, whether a handler's or an
/// extractor's, reaches the outer layer as itself and is rendered there.
#[derive(Debug)]
pub struct Failure(pub Error);

/// What a handler or an extractor answers: a reply, or the failure.
pub type Answer<T = Reply> = std::result::Result<T, Failure>;

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure(e)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Failure {}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let e = self.0;
        let mut r = Response::new(Body::empty());
        *r.status_mut() =
            StatusCode::from_u16(e.code().status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        r.extensions_mut().insert(Pending::Failure(Arc::new(e)));
        r
    }
}
