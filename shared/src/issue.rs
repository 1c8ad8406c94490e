//! One field-level validation problem, as `VALIDATION_FAILED` reports it in
//! `error.details` (collected by `validation::Issues`).

use serde::Serialize;
use serde_json::Value;

/// One field-level problem: where, what kind, and a readable message.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Issue {
    pub path: Vec<Value>,
    pub code: String,
    pub message: String,
}

impl Issue {
    /// An issue at a path of object keys.
    pub fn new(path: &[&str], code: &str, message: impl Into<String>) -> Self {
        Issue {
            path: path
                .iter()
                .map(|p| Value::String((*p).to_string()))
                .collect(),
            code: code.to_string(),
            message: message.into(),
        }
    }
}
