//! Field-level validation issues, collected and reported together.

use serde_json::Value;

use crate::error::Error;
use crate::field::is_refused_control;
pub use crate::issue::Issue;

/// Collects issues so a caller hears about every bad field at once.
#[derive(Debug, Default)]
pub struct Issues(Vec<Issue>);

impl Issues {
    /// An empty collection.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one issue.
    pub fn add(&mut self, path: &[&str], code: &str, message: impl Into<String>) {
        self.0.push(Issue::new(path, code, message));
    }

    /// Records one issue at a path of keys and indexes.
    pub fn add_at(&mut self, path: Vec<Value>, code: &str, message: impl Into<String>) {
        self.0.push(Issue {
            path,
            code: code.to_string(),
            message: message.into(),
        });
    }

    /// Records an issue made elsewhere.
    pub fn push(&mut self, issue: Issue) {
        self.0.push(issue);
    }

    /// Records another collection's issues after these.
    pub fn append(&mut self, mut other: Issues) {
        self.0.append(&mut other.0);
    }

    /// Records an issue from a `Result`, keeping the value when there is none.
    pub fn check<T>(&mut self, result: Result<T, Issue>) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(issue) => {
                self.0.push(issue);
                None
            }
        }
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `Ok` when nothing was recorded, otherwise VALIDATION_FAILED with every issue.
    pub fn finish(self) -> Result<(), Error> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(Error::Validation(self.0))
        }
    }
}

/// Long free-text fields, where tab, line feed and carriage return are allowed.
pub const FREE_TEXT_FIELDS: &[&str] = &["body", "description", "message", "note"];

/// The issue of a string holding a refused control character, if it does.
pub fn check_control(path: &[Value], value: &str, free_text: bool) -> Option<Issue> {
    if !value.chars().any(|c| is_refused_control(c, free_text)) {
        return None;
    }
    let message = if free_text {
        "must not contain control characters other than tab, line feed and carriage return"
    } else {
        "must not contain control characters"
    };
    Some(Issue {
        path: path.to_vec(),
        code: "invalid_string".into(),
        message: message.into(),
    })
}

/// Every string of a request body, object keys included, that holds a refused
/// control character. The one check for every body field: free text is a
/// top-level field named in `FREE_TEXT_FIELDS`.
pub fn control_issues(body: &Value) -> Vec<Issue> {
    let mut issues = Vec::new();
    walk_strings(body, &mut Vec::new(), &mut issues);
    issues
}

fn walk_strings(value: &Value, path: &mut Vec<Value>, issues: &mut Vec<Issue>) {
    match value {
        Value::String(s) => {
            let free_text = path.len() == 1
                && path[0]
                    .as_str()
                    .is_some_and(|f| FREE_TEXT_FIELDS.contains(&f));
            issues.extend(check_control(path, s, free_text));
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Value::from(i));
                walk_strings(item, path, issues);
                path.pop();
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                path.push(Value::String(k.clone()));
                issues.extend(check_control(path, k, false));
                walk_strings(v, path, issues);
                path.pop();
            }
        }
        _ => {}
    }
}

/// A bulk call's ids: 1-`max` as sent (checked before duplicates are
/// removed), each kept once in first-seen order.
pub fn distinct_ids(path: &str, ids: Vec<String>, max: usize) -> Result<Vec<String>, Issue> {
    let n = ids.len();
    if n == 0 || n > max {
        return Err(Issue::new(
            &[path],
            if n == 0 { "too_small" } else { "too_big" },
            format!("{path} must hold 1-{max} ids"),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    Ok(ids
        .into_iter()
        .filter(|id| seen.insert(id.clone()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_body_string_is_checked_with_its_path() {
        let body = json!({
            "name": "a\u{0}b",
            "body": "line\tone\r\nline two",
            "description": "bell\u{7}",
            "metadata": {"k\u{1}": "v", "note": "x\ty"},
            "items": ["ok", "tab\there"],
        });
        let paths: Vec<Value> = control_issues(&body)
            .into_iter()
            .map(|i| json!(i.path))
            .collect();
        assert_eq!(
            paths,
            vec![
                json!(["name"]),
                json!(["description"]),
                json!(["metadata", "k\u{1}"]),
                json!(["metadata", "note"]),
                json!(["items", 1]),
            ]
        );
        assert!(control_issues(&json!({"name": "plain", "body": "a\tb"})).is_empty());
        // C1 controls (U+0080-U+009F) too, in one-line strings and free text alike.
        let c1 = json!({"externalId": "a\u{85}", "note": "b\u{9b}", "name": "c\u{a0}"});
        let paths: Vec<Value> = control_issues(&c1)
            .into_iter()
            .map(|i| json!(i.path))
            .collect();
        assert_eq!(paths, vec![json!(["externalId"]), json!(["note"])]);
    }
}
