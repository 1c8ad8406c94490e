//! Field-level validation issues, collected and reported together.

use crate::error::Error;
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

/// Checks a string's length in characters.
pub fn check_len(path: &str, value: &str, min: usize, max: usize) -> Result<(), Issue> {
    let n = value.chars().count();
    if n < min {
        return Err(Issue::new(
            &[path],
            "too_small",
            format!("{path} must be at least {min} characters"),
        ));
    }
    if n > max {
        return Err(Issue::new(
            &[path],
            "too_big",
            format!("{path} must be at most {max} characters"),
        ));
    }
    Ok(())
}

/// Checks an integer range.
pub fn check_range(path: &str, value: i64, min: i64, max: i64) -> Result<(), Issue> {
    if value < min {
        return Err(Issue::new(
            &[path],
            "too_small",
            format!("{path} must be at least {min}"),
        ));
    }
    if value > max {
        return Err(Issue::new(
            &[path],
            "too_big",
            format!("{path} must be at most {max}"),
        ));
    }
    Ok(())
}
