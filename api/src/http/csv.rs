//! CSV in and out, through the `csv` crate: the columns of a wire type (its
//! schema's properties, nested objects flattened with dots), a record's
//! row, and CSV documents read as one JSON object per line (see
//! `http::import`).

use serde_json::{Map, Value};

use crate::domain::import::MAX_ROWS;
use ::domain::error::Error;

/// The media type of CSV answers and bodies.
pub const CSV: &str = "text/csv; charset=utf-8";

/// The largest row of an import (its CSV line, or its JSON element).
pub const MAX_ROW_BYTES: usize = 64 * 1024;

/// The columns of `T`: its schema's properties in order, an object of fixed
/// properties flattened as `parent.child`; free-form objects (metadata) and
/// lists are one column each.
pub fn columns<T: utoipa::ToSchema>() -> Vec<String> {
    let mut nested = Vec::new();
    T::schemas(&mut nested);
    let named: Map<String, Value> = nested
        .into_iter()
        .filter_map(|(name, s)| Some((name, serde_json::to_value(s).ok()?)))
        .collect();
    let root = serde_json::to_value(<T as utoipa::PartialSchema>::schema()).unwrap_or_default();
    let mut out = Vec::new();
    flatten_schema(&root, "", &named, &mut out);
    out
}

fn resolve<'a>(schema: &'a Value, named: &'a Map<String, Value>) -> &'a Value {
    let reference = schema["$ref"].as_str().or_else(|| {
        // `Option<Ref>` is `oneOf: [null, {$ref}]`.
        schema["oneOf"]
            .as_array()?
            .iter()
            .find_map(|s| s["$ref"].as_str())
    });
    reference
        .and_then(|r| r.rsplit('/').next())
        .and_then(|name| named.get(name))
        .unwrap_or(schema)
}

fn flatten_schema(schema: &Value, prefix: &str, named: &Map<String, Value>, out: &mut Vec<String>) {
    let schema = resolve(schema, named);
    match schema["properties"].as_object() {
        Some(props) if !props.is_empty() => {
            for (name, prop) in props {
                let path = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}.{name}")
                };
                flatten_schema(prop, &path, named, out);
            }
        }
        _ => out.push(prefix.to_string()),
    }
}

/// The cell of one value: a string as is, a number as written (exact
/// decimals), null as empty, a list of strings as its items joined by `;`,
/// any other list or object as compact JSON.
fn cell(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => inert(s),
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => inert(
            &items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(";"),
        ),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        Some(other) => other.to_string(),
    }
}

/// A text cell a spreadsheet would not run: one starting with `=`, `+`,
/// `-`, `@`, a tab or a carriage return (a formula, to Excel and its
/// kin) is written after a `'` (OWASP's advice against CSV injection).
/// Numbers are no text and keep their sign.
fn inert(s: &str) -> String {
    match s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        true => format!("'{s}"),
        false => s.to_string(),
    }
}

/// The row of a serialised record under `columns` (dotted paths).
pub fn row(record: &Value, columns: &[String]) -> Vec<String> {
    columns
        .iter()
        .map(|c| cell(c.split('.').try_fold(record, |v, k| v.get(k))))
        .collect()
}

/// A CSV document written row by row into memory.
pub struct Writer(csv::Writer<Vec<u8>>);

impl Writer {
    /// A document that starts with its header row (none when `header` is empty).
    pub fn new(header: &[String]) -> Result<Writer, Error> {
        let mut w = Writer(csv::Writer::from_writer(Vec::new()));
        if !header.is_empty() {
            w.write(header)?;
        }
        Ok(w)
    }

    /// Appends one row; the document's size so far, in bytes.
    pub fn write(&mut self, cells: &[String]) -> Result<usize, Error> {
        self.0.write_record(cells).map_err(Error::internal)?;
        self.0.flush().map_err(Error::internal)?;
        Ok(self.0.get_ref().len())
    }

    /// The bytes written.
    pub fn finish(self) -> Result<Vec<u8>, Error> {
        self.0.into_inner().map_err(Error::internal)
    }
}

/// A row over [`MAX_ROW_BYTES`].
pub fn too_long(i: usize) -> Error {
    Error::invalid(
        &[],
        "too_big",
        format!("row {i} is larger than {MAX_ROW_BYTES} bytes"),
    )
}

/// The rows of a CSV document: each line after the header as an object of
/// the header's names (empty cells left out). A header that repeats or
/// leaves a name empty, or a line with another number of cells, is refused
/// whole.
pub fn csv_rows(bytes: &[u8]) -> Result<Vec<Result<Value, Error>>, Error> {
    let bad =
        |e: csv::Error| Error::invalid(&[], "invalid_csv", format!("the CSV is not valid: {e}"));
    let mut reader = csv::ReaderBuilder::new().flexible(false).from_reader(bytes);
    let header: Vec<String> = reader
        .headers()
        .map_err(bad)?
        .iter()
        .map(|h| h.trim().to_string())
        .collect();
    let unique: std::collections::BTreeSet<&String> = header.iter().collect();
    if header.iter().any(String::is_empty) || unique.len() != header.len() {
        return Err(Error::invalid(
            &[],
            "invalid_csv",
            "the CSV's first line must name each column once",
        ));
    }
    let mut rows = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let record = record.map_err(bad)?;
        if rows.len() >= MAX_ROWS {
            // Past an import's most, rows are counted, not parsed: the
            // whole body is refused anyway.
            rows.push(Ok(Value::Null));
            continue;
        }
        if record.as_slice().len() > MAX_ROW_BYTES {
            rows.push(Err(too_long(i)));
            continue;
        }
        let object: Map<String, Value> = header
            .iter()
            .zip(record.iter())
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.clone(), Value::String(v.to_string())))
            .collect();
        rows.push(Ok(Value::Object(object)));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conversion_s_columns_flatten_its_fixed_objects() {
        let cols = columns::<crate::wire::conversion::ConversionView<'static>>();
        assert_eq!(cols[0], "id");
        for c in [
            "commissionSource.kind",
            "commissionSource.name",
            "risk.level",
            "risk.flags",
            "metadata",
            "amount",
        ] {
            assert!(cols.iter().any(|x| x == c), "{c} in {cols:?}");
        }
        assert!(
            !cols.iter().any(|x| x == "risk" || x == "commissionSource"),
            "{cols:?}"
        );
    }

    #[test]
    fn csv_rows_are_objects_of_the_header_s_names() {
        let text = "externalId,name,code\nx1,\"Ann, Ltd\",ANN\nx2,Bob,\n";
        let rows = csv_rows(text.as_bytes()).unwrap();
        let rows: Vec<Value> = rows.into_iter().map(Result::unwrap).collect();
        assert_eq!(
            rows,
            [
                serde_json::json!({"externalId": "x1", "name": "Ann, Ltd", "code": "ANN"}),
                serde_json::json!({"externalId": "x2", "name": "Bob"}),
            ]
        );
        for bad in ["a,a\n1,2\n", "a,,b\n1,2,3\n", "a,b\n1,2,3\n"] {
            assert!(csv_rows(bad.as_bytes()).is_err(), "{bad}");
        }
        let long = format!("a\n{}\n", "x".repeat(MAX_ROW_BYTES + 1));
        assert!(csv_rows(long.as_bytes()).unwrap()[0].is_err());
    }

    #[test]
    fn rows_flatten_nested_objects_and_write_exact_numbers() {
        let cols: Vec<String> = ["id", "risk.level", "risk.flags", "amount", "note"]
            .map(String::from)
            .to_vec();
        let v: Value = serde_json::from_str(
            r#"{"id":"cnv_1","risk":{"level":"LOW","flags":[{"code":"X"}]},"amount":-19.990,"note":"=HYPERLINK(\"x\")"}"#,
        )
        .unwrap();
        assert_eq!(
            row(&v, &cols),
            [
                "cnv_1",
                "LOW",
                r#"[{"code":"X"}]"#,
                "-19.990",
                "'=HYPERLINK(\"x\")"
            ]
        );
        let mut w = Writer::new(&cols[..2]).unwrap();
        w.write(&["a,b".into(), "c\"d".into()]).unwrap();
        assert_eq!(
            String::from_utf8(w.finish().unwrap()).unwrap(),
            "id,risk.level\n\"a,b\",\"c\"\"d\"\n"
        );
    }
}
