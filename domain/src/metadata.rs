//! Merchant metadata: a small map of strings on any record.

use std::collections::BTreeMap;

use crate::validation::Issues;

/// Metadata as stored and returned.
pub type Metadata = BTreeMap<String, String>;
/// A metadata update: a key set to null is removed.
pub type MetadataPatch = BTreeMap<String, Option<String>>;

/// Most keys a map may hold.
pub const MAX_KEYS: usize = 50;
/// Longest key.
pub const MAX_KEY_LEN: usize = 40;
/// Longest value.
pub const MAX_VALUE_LEN: usize = 500;

/// The description of [`Metadata`], from the limits above.
pub struct MetadataSchema;

crate::described!(
    MetadataSchema,
    "Metadata",
    serde_json::json!({
        "type": "object",
        "description": format!("Merchant metadata: string keys (1-{MAX_KEY_LEN} characters) to string values (at most {MAX_VALUE_LEN} characters), at most {MAX_KEYS} keys."),
        "maxProperties": MAX_KEYS,
        "propertyNames": {"minLength": 1, "maxLength": MAX_KEY_LEN, "pattern": crate::field::LINE_PATTERN},
        "additionalProperties": {"type": "string", "maxLength": MAX_VALUE_LEN, "pattern": crate::field::LINE_PATTERN},
    })
);

/// The description of [`MetadataPatch`], from the limits above.
pub struct MetadataPatchSchema;

crate::described!(
    MetadataPatchSchema,
    "MetadataPatch",
    serde_json::json!({
        "type": "object",
        "description": "A metadata update, merged into the stored map: a key set to a string is set, a key set to null is removed, keys not sent are kept. The merged map must satisfy `Metadata`'s limits.",
        "propertyNames": {"minLength": 1, "maxLength": MAX_KEY_LEN, "pattern": crate::field::LINE_PATTERN},
        "additionalProperties": {"type": ["string", "null"], "maxLength": MAX_VALUE_LEN, "pattern": crate::field::LINE_PATTERN},
    })
);

/// Records every rule the map breaks.
pub fn validate(meta: &Metadata, issues: &mut Issues) {
    if meta.len() > MAX_KEYS {
        issues.add(
            &["metadata"],
            "too_big",
            format!("metadata may hold at most {MAX_KEYS} keys"),
        );
    }
    for (k, v) in meta {
        let n = k.chars().count();
        if n == 0 || n > MAX_KEY_LEN {
            issues.add(
                &["metadata", k],
                "invalid_key",
                format!("metadata keys must be 1-{MAX_KEY_LEN} characters"),
            );
        }
        if v.chars().count() > MAX_VALUE_LEN {
            issues.add(
                &["metadata", k],
                "too_big",
                format!("metadata values must be at most {MAX_VALUE_LEN} characters"),
            );
        }
    }
}

/// Merges an update into a map.
pub fn merge(mut meta: Metadata, patch: MetadataPatch) -> Metadata {
    for (k, v) in patch {
        match v {
            Some(v) => {
                meta.insert(k, v);
            }
            None => {
                meta.remove(&k);
            }
        }
    }
    meta
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_merge() {
        let mut m: Metadata = (0..51)
            .map(|i| (format!("k{i}"), "v".to_string()))
            .collect();
        let mut issues = Issues::new();
        validate(&m, &mut issues);
        assert!(!issues.is_empty());
        m = merge(
            m,
            MetadataPatch::from([
                ("k0".to_string(), None),
                ("new".to_string(), Some("x".into())),
            ]),
        );
        assert!(!m.contains_key("k0"));
        assert_eq!(m.get("new").map(String::as_str), Some("x"));
        let mut issues = Issues::new();
        validate(&Metadata::from([("a".repeat(41), "v".into())]), &mut issues);
        assert!(!issues.is_empty());
    }
}
