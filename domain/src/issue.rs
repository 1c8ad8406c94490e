//! One field-level validation problem, as `VALIDATION_FAILED` reports it in
//! `error.details` (collected by `validation::Issues`).

use serde::Serialize;
use serde_json::Value;

/// One field-level problem of a VALIDATION_FAILED response.
#[derive(utoipa::ToSchema, Debug, Clone, Serialize, PartialEq)]
#[schema(as = ValidationIssue)]
pub struct Issue {
    /// Where the problem is: object keys (strings) and array indexes (integers) from the root
    /// of the body, or the query parameter name. Empty when the body as a whole is wrong.
    #[schema(example = json!(["metadata", "plan"]))]
    pub path: Vec<Value>,
    /// Kind of problem. Known values: `unrecognized_keys`, `required`, `invalid_type`,
    /// `invalid_value`, `invalid_string`, `invalid_enum_value`, `invalid_number`,
    /// `invalid_date`, `invalid_range`, `invalid_combination`, `invalid_cursor`, `invalid_key`,
    /// `too_small`, `too_big`.
    pub code: String,
    /// Human-readable explanation.
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
