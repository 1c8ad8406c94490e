//! Partial-update fields that tell "absent" from "null".

use serde::{Deserialize, Deserializer};

use crate::validation::Issues;

/// A field of a partial update: not sent, sent as null, or sent with a value.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Patch<T> {
    #[default]
    Absent,
    Null,
    Value(T),
}

impl<T> Patch<T> {
    /// The new value of an optional field, or `current` when absent.
    pub fn apply_opt(self, current: Option<T>) -> Option<T> {
        match self {
            Patch::Absent => current,
            Patch::Null => None,
            Patch::Value(v) => Some(v),
        }
    }

    /// The new value of a field that cannot be null: `None` when absent, and
    /// an `invalid_type` issue at `path` when sent as null.
    pub fn required(self, path: &str, issues: &mut Issues) -> Option<T> {
        match self {
            Patch::Absent => None,
            Patch::Null => {
                issues.add(&[path], "invalid_type", format!("{path} cannot be null"));
                None
            }
            Patch::Value(v) => Some(v),
        }
    }

    /// True when the field was sent.
    pub fn is_present(&self) -> bool {
        !matches!(self, Patch::Absent)
    }

    /// The same change, its value mapped.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Patch<U> {
        match self {
            Patch::Absent => Patch::Absent,
            Patch::Null => Patch::Null,
            Patch::Value(v) => Patch::Value(f(v)),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(d)? {
            None => Patch::Null,
            Some(v) => Patch::Value(v),
        })
    }
}

/// Test inputs written as the JSON bodies that carry them.
#[cfg(test)]
pub(crate) mod from_json {
    use serde::de::DeserializeOwned;
    use serde_json::Value;

    use super::Patch;

    /// A change as a body's `key` states it: absent, null or a value.
    pub fn patch<T: DeserializeOwned>(body: &Value, key: &str) -> Patch<T> {
        match body.get(key) {
            None => Patch::Absent,
            Some(Value::Null) => Patch::Null,
            Some(v) => Patch::Value(
                serde_json::from_value(v.clone()).expect("a value of the field's type"),
            ),
        }
    }

    /// A body's optional `key` (null or absent: none).
    pub fn field<T: DeserializeOwned>(body: &Value, key: &str) -> Option<T> {
        body.get(key)
            .filter(|v| !v.is_null())
            .map(|v| serde_json::from_value(v.clone()).expect("a value of the field's type"))
    }
}
