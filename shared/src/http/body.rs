//! JSON bodies: content type, size cap, syntax, then schema with field paths.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::Error;
use crate::http::request::ApiRequest;
use crate::validation::Issue;

/// Largest accepted body.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Parses the body into `T`. An empty body counts as `{}` so that operations whose
/// fields are all optional need no body; anything sent must be declared JSON.
pub fn parse<T: DeserializeOwned>(req: &ApiRequest) -> Result<T, Error> {
    if req.body.len() > MAX_BODY_BYTES {
        return Err(Error::InvalidRequest(format!(
            "request body is larger than {MAX_BODY_BYTES} bytes"
        )));
    }
    let value: Value = if req.body.iter().all(u8::is_ascii_whitespace) {
        Value::Object(Default::default())
    } else {
        if !is_json_content_type(req.header("content-type")) {
            return Err(Error::InvalidRequest(
                "Content-Type must be application/json".into(),
            ));
        }
        serde_json::from_slice(&req.body)
            .map_err(|e| Error::InvalidRequest(format!("request body is not valid JSON: {e}")))?
    };
    from_value(value)
}

/// Deserialises a JSON value, reporting the failing field's path.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    if !value.is_object() {
        return Err(Error::Validation(vec![Issue {
            path: vec![],
            code: "invalid_type".into(),
            message: "request body must be a JSON object".into(),
        }]));
    }
    serde_path_to_error::deserialize(value).map_err(|e| Error::Validation(vec![issue_from(&e)]))
}

fn issue_from(err: &serde_path_to_error::Error<serde_json::Error>) -> Issue {
    use serde_path_to_error::Segment;
    let mut path: Vec<Value> = err
        .path()
        .iter()
        .filter_map(|seg| match seg {
            Segment::Map { key } => Some(Value::String(key.clone())),
            Segment::Seq { index } => Some(Value::from(*index)),
            _ => None,
        })
        .collect();
    let msg = err.inner().to_string();
    // serde reports these at the parent; point at the field itself.
    let quoted = msg.split('`').nth(1).map(str::to_string);
    let mut point_at = |field: &Option<String>| {
        if let Some(f) = field {
            if path.last().and_then(Value::as_str) != Some(f.as_str()) {
                path.push(Value::String(f.clone()));
            }
        }
    };
    let (code, message) = if msg.starts_with("unknown field") {
        point_at(&quoted);
        (
            "unrecognized_keys",
            format!("unknown field {}", quoted.unwrap_or_default()),
        )
    } else if msg.starts_with("missing field") {
        point_at(&quoted);
        (
            "required",
            format!("{} is required", quoted.unwrap_or_default()),
        )
    } else if msg.starts_with("invalid type") {
        ("invalid_type", strip_position(&msg))
    } else {
        ("invalid_value", strip_position(&msg))
    };
    Issue {
        path,
        code: code.to_string(),
        message,
    }
}

fn strip_position(msg: &str) -> String {
    match msg.find(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// `application/json`, with parameters such as `; charset=utf-8` allowed.
pub fn is_json_content_type(v: Option<&str>) -> bool {
    v.and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn content_types() {
        assert!(is_json_content_type(Some("application/json")));
        assert!(is_json_content_type(Some(
            "Application/JSON; charset=utf-8"
        )));
        assert!(!is_json_content_type(Some("text/plain")));
        assert!(!is_json_content_type(None));
    }
}
