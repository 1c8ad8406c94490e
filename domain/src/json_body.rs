//! A JSON value read into a typed body, with the failing field's path in
//! the issue (serde reports some failures at the parent).

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::Error;
use crate::validation::{self, Issue};

/// Deserialises a JSON value, reporting the failing field's path. Every
/// string in it, keys included, is first checked for control characters.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    if !value.is_object() {
        return Err(Error::Validation(vec![Issue {
            path: vec![],
            code: "invalid_type".into(),
            message: "request body must be a JSON object".into(),
        }]));
    }
    let control = validation::control_issues(&value);
    if !control.is_empty() {
        return Err(Error::Validation(control));
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
    } else if msg.starts_with("invalid number") {
        // A number kept as sent that a whole-number field cannot take
        // (`1.5`, `1e2`, or one past the field's range).
        (
            "invalid_type",
            "expected a whole number in range".to_string(),
        )
    } else {
        ("invalid_value", strip_position(&msg))
    };
    Issue {
        path,
        code: code.to_string(),
        message,
    }
}

/// An error message without serde_json's " at line …" suffix.
pub fn strip_position(msg: &str) -> String {
    match msg.find(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}
