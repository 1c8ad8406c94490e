//! How the description is written out: prose as one line per paragraph
//! (the line breaks of doc comments are not the text's), and the keys of
//! every schema in one order, so the file is the same on every run (schemas
//! written as JSON keep their keys in hash order) and reads naturally.

use serde_json::Value;

/// Lays out the description `doc` (its introduction keeps its own lines).
pub fn complete(doc: &mut Value) {
    for part in ["paths", "webhooks", "components"] {
        reflow(&mut doc[part]);
    }
    canonical(&mut doc["components"]["schemas"], false);
}

/// Recursively, every description (but in examples and defaults) as one
/// line per paragraph.
fn reflow(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                match (key.as_str(), child) {
                    ("description", Value::String(d)) => *d = unwrap_lines(d),
                    ("example" | "examples" | "default", _) => {}
                    (_, child) => reflow(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(reflow),
        _ => {}
    }
}

/// A doc comment's text as one line per paragraph (list items and table
/// rows keep their breaks).
fn unwrap_lines(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let keeps_break = line.is_empty()
            || line.starts_with("- ")
            || line.starts_with('|')
            || out.ends_with('\n')
            || out.is_empty();
        if !keeps_break {
            out.push(' ');
        } else if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        if line.is_empty() {
            out.push('\n');
        }
        out.push_str(line);
    }
    out
}

/// The order keys are written in; others follow, alphabetically.
const KEY_ORDER: &str = "$ref title type const enum format description required properties \
    additionalProperties propertyNames maxProperties items minItems maxItems oneOf anyOf allOf \
    minLength maxLength pattern minimum maximum example";

/// Sorts the keys of every schema object by [`KEY_ORDER`]; property maps
/// keep the order the types declare.
fn canonical(v: &mut Value, in_properties: bool) {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            if !in_properties {
                entries.sort_by_key(|(key, _)| {
                    let rank = KEY_ORDER.split_whitespace().position(|k| k == key);
                    (rank.unwrap_or(usize::MAX), key.clone())
                });
            }
            for (key, child) in entries.iter_mut() {
                if key != "example" && key != "examples" {
                    canonical(child, key == "properties" && !in_properties);
                }
            }
            *map = entries.into_iter().collect();
        }
        Value::Array(items) => items.iter_mut().for_each(|i| canonical(i, false)),
        _ => {}
    }
}
