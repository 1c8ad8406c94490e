//! JSON bodies: content type, size cap, syntax, then schema with field paths.

use axum::extract::{FromRequest, Request};
use http::HeaderMap;
use serde::de::{self, DeserializeOwned, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use ::domain::error::Error;

/// Largest accepted body.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A request body parsed as `T` by the contract's rules (the extractor of
/// every route that takes a body; no framework rejection reaches a client).
#[derive(Debug)]
pub struct Json<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Json<T> {
    type Rejection = crate::http::reply::Failure;

    async fn from_request(req: Request, _: &S) -> Result<Self, Self::Rejection> {
        let (parts, body) = req.into_parts();
        let bytes = read(body, MAX_BODY_BYTES).await?;
        Ok(parse(&parts.headers, &bytes).map(Json)?)
    }
}

/// Largest provider event accepted (Stripe's and Paddle's events are tens
/// of kilobytes; an invoice with many lines stays far below).
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// A provider event's raw body, read whole up to [`MAX_EVENT_BYTES`]: the
/// same limit on the local host and in Lambda (the framework's own, and
/// API Gateway's, are larger), answered 400 in the envelope past it.
#[derive(Debug)]
pub struct EventBody(pub bytes::Bytes);

impl<S: Send + Sync> FromRequest<S> for EventBody {
    type Rejection = crate::http::reply::Failure;

    async fn from_request(req: Request, _: &S) -> Result<Self, Self::Rejection> {
        Ok(read(req.into_body(), MAX_EVENT_BYTES)
            .await
            .map(EventBody)?)
    }
}

/// A request body read whole, up to `max` bytes (400 in the envelope past it).
pub async fn read(body: axum::body::Body, max: usize) -> Result<bytes::Bytes, Error> {
    axum::body::to_bytes(body, max)
        .await
        .map_err(|_| Error::InvalidRequest(format!("request body is larger than {max} bytes")))
}

/// A file sent as the raw body (an invoice, a tax form): at most `max`
/// bytes, else 400 saying `what` is at most that many bytes.
pub async fn file_bytes(
    body: axum::body::Body,
    max: usize,
    what: &str,
) -> Result<bytes::Bytes, Error> {
    axum::body::to_bytes(body, max)
        .await
        .map_err(|_| Error::InvalidRequest(format!("{what} is at most {max} bytes")))
}

/// Parses a body into `T`. An empty body counts as `{}` so that operations
/// whose fields are all optional need no body; anything sent must be
/// declared JSON.
pub fn parse<T: DeserializeOwned>(headers: &HeaderMap, body: &[u8]) -> Result<T, Error> {
    if body.len() > MAX_BODY_BYTES {
        return Err(Error::InvalidRequest(format!(
            "request body is larger than {MAX_BODY_BYTES} bytes"
        )));
    }
    // JSON's white space only (RFC 8259): a form feed is no empty body.
    let value: Value = if body
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        Value::Object(Default::default())
    } else {
        let content_type = headers.get("content-type").and_then(|v| v.to_str().ok());
        if !is_json_content_type(content_type) {
            return Err(Error::InvalidRequest(
                "Content-Type must be application/json".into(),
            ));
        }
        parse_json(body)?
    };
    from_value(value)
}

/// Parses JSON text in one pass, refusing an object that has the same key
/// twice (at any depth): which of the two a reader would keep is not defined,
/// so neither is guessed.
pub fn parse_json(bytes: &[u8]) -> Result<Value, Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = NoDuplicateKeys::deserialize(&mut de).and_then(|v| de.end().map(|()| v.0));
    parsed.map_err(|e| {
        if e.is_data() {
            Error::InvalidRequest(format!(
                "request body {}",
                ::domain::json_body::strip_position(&e.to_string())
            ))
        } else {
            Error::InvalidRequest(format!("request body is not valid JSON: {e}"))
        }
    })
}

/// A JSON value whose objects were read without a repeated key.
struct NoDuplicateKeys(Value);

impl<'de> Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDuplicateKeysVisitor)
            .map(NoDuplicateKeys)
    }
}

struct NoDuplicateKeysVisitor;

impl<'de> Visitor<'de> for NoDuplicateKeysVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(NoDuplicateKeys(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // A number, its digits kept as sent (serde_json hands it over as
            // a one-entry map under its private key).
            if out.is_empty() && key == NUMBER_TOKEN {
                return number(map.next_value::<String>()?).map_err(de::Error::custom);
            }
            if out.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "has the key {key:?} twice in one object"
                )));
            }
            let NoDuplicateKeys(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// The key serde_json hands a number's text under (`arbitrary_precision`).
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// A number as sent; one past a binary float's range is refused, as before
/// numbers kept their digits.
fn number(text: String) -> Result<Value, String> {
    use rust_decimal::prelude::ToPrimitive;
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => {}
        _ => return Err("has a number out of range".into()),
    }
    // A whole number written with a fraction or an exponent (`54.0`, `1e2`)
    // is that integer, as JSON Schema's `integer` has it.
    if text.contains(['.', 'e', 'E']) {
        let whole = ::domain::money::decimal_from_json(&text)
            .ok()
            .filter(|d| d.fract().is_zero());
        if let Some(i) = whole.and_then(|d| d.to_i64()) {
            return Ok(Value::from(i));
        }
    }
    text.parse::<serde_json::Number>()
        .map(Value::Number)
        .map_err(|e| e.to_string())
}

pub use ::domain::json_body::from_value;

/// `application/json`, with parameters such as `; charset=utf-8` allowed.
pub fn is_json_content_type(v: Option<&str>) -> bool {
    v.and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::domain::validation::Issue;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Body {
        name: String,
        items: Option<Vec<u32>>,
    }

    fn issue(v: Value) -> Issue {
        match from_value::<Body>(v) {
            Err(Error::Validation(mut i)) => i.remove(0),
            other => panic!("expected validation error, got {other:?}"),
        }
    }

    #[test]
    fn issues_point_at_the_field() {
        let i = issue(serde_json::json!({"name": "x", "extra": 1}));
        assert_eq!(i.code, "unrecognized_keys");
        assert_eq!(i.path, vec![Value::from("extra")]);
        let i = issue(serde_json::json!({}));
        assert_eq!(i.code, "required");
        assert_eq!(i.path, vec![Value::from("name")]);
        let i = issue(serde_json::json!({"name": 5}));
        assert_eq!(i.code, "invalid_type");
        assert_eq!(i.path, vec![Value::from("name")]);
        let i = issue(serde_json::json!({"name": "x", "items": [1, "a"]}));
        assert_eq!(i.path, vec![Value::from("items"), Value::from(1)]);
        let i = issue(serde_json::json!([1]));
        assert_eq!(i.code, "invalid_type");
    }

    #[test]
    fn repeated_keys_are_refused_at_any_depth() {
        for dup in [
            r#"{"name": "a", "name": "b"}"#,
            r#"{"metadata": {"k": "1", "k": "2"}}"#,
            r#"{"items": [{"a": 1}, {"b": 1, "b": 2}]}"#,
        ] {
            match parse_json(dup.as_bytes()) {
                Err(Error::InvalidRequest(m)) => assert!(m.contains("twice"), "{m}"),
                other => panic!("{dup} gave {other:?}"),
            }
        }
        let ok = r#"{"a": {"x": 1}, "b": {"x": 1.5}, "c": [{"x": null}, {"x": true}], "d": -3}"#;
        let v = parse_json(ok.as_bytes()).unwrap();
        assert_eq!(v, serde_json::from_str::<Value>(ok).unwrap());
        match parse_json(b"{\"a\": 1} x") {
            Err(Error::InvalidRequest(m)) => assert!(m.contains("not valid JSON"), "{m}"),
            other => panic!("trailing characters gave {other:?}"),
        }
        assert!(parse_json(b"{\"a\": ").is_err());
    }

    #[test]
    fn control_characters_fail_validation_before_the_schema() {
        let i = issue(serde_json::json!({"name": "a\u{0}b"}));
        assert_eq!(i.code, "invalid_string");
        assert_eq!(i.path, vec![Value::from("name")]);
    }

    #[test]
    fn content_types() {
        assert!(is_json_content_type(Some("application/json")));
        assert!(is_json_content_type(Some(
            "Application/JSON; charset=utf-8"
        )));
        assert!(!is_json_content_type(Some("text/plain")));
        assert!(!is_json_content_type(None));
    }

    #[tokio::test]
    async fn a_body_is_read_up_to_its_limit_and_refused_past_it() {
        let body = |n: usize| axum::body::Body::from(vec![b'x'; n]);
        assert_eq!(read(body(8), 8).await.unwrap().len(), 8);
        let past = read(body(9), 8).await.unwrap_err();
        assert_eq!(past.to_string(), "request body is larger than 8 bytes");
        assert_eq!(file_bytes(body(8), 8, "a file").await.unwrap().len(), 8);
        let past = file_bytes(body(9), 8, "a file").await.unwrap_err();
        assert_eq!(past.to_string(), "a file is at most 8 bytes");
    }
}
