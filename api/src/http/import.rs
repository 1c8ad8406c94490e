//! Import bodies: 1-[`MAX_ROWS`] rows as a JSON array of objects, or
//! as CSV with a header row (each line an object of the header's names),
//! each row read by the same type and rules as the single-record route's
//! body.

use axum::extract::{FromRequest, Request};
use serde_json::Value;

use crate::domain::import::{AffiliateRow, ReferralImport, MAX_ROWS};
use crate::domain::timestamp;
use crate::http::{body, csv};
use crate::wire::import::ReferralRow;
use ::domain::error::Error;

/// The largest import body.
pub const MAX_IMPORT_BYTES: usize = 5 * 1024 * 1024;

/// A row type of an import, read from one JSON object.
pub trait FromRow: Sized {
    /// Reads the row; its problems with their field paths.
    fn from_row(v: Value) -> Result<Self, Error>;
}

/// A referrals row, read as its body and judged at once (its first payment
/// no later than now).
impl FromRow for ReferralImport {
    fn from_row(v: Value) -> Result<Self, Error> {
        body::from_value::<ReferralRow>(v)?.validate(timestamp::now())
    }
}

impl FromRow for AffiliateRow {
    fn from_row(v: Value) -> Result<Self, Error> {
        crate::wire::import::affiliate_row(v)
    }
}

/// One row of an import: its 0-based index and what it read as (or why not).
pub type ImportRow<T> = (usize, Result<T, Error>);

/// An import's body: 1-[`MAX_ROWS`] rows, as a JSON array of objects
/// or as `text/csv` with a header row naming the fields (an empty cell is an
/// absent field). Each row is judged on its own; a body that is none of
/// these, or has no row or too many, is refused whole (400).
#[derive(Debug)]
pub struct Import<T>(pub Vec<ImportRow<T>>);

impl<T: FromRow, S: Send + Sync> FromRequest<S> for Import<T> {
    type Rejection = crate::http::reply::Failure;

    async fn from_request(req: Request, _: &S) -> Result<Self, Self::Rejection> {
        let (parts, raw) = req.into_parts();
        let bytes = body::read(raw, MAX_IMPORT_BYTES).await?;
        let content_type = parts
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok());
        let rows = if body::is_json_content_type(content_type) {
            json_rows(&bytes)?
        } else if is_csv(content_type) {
            csv::csv_rows(&bytes)?
        } else {
            return Err(Error::InvalidRequest(
                "Content-Type must be application/json (an array of rows) or text/csv (a header row, then one row per line)".into(),
            )
            .into());
        };
        if rows.is_empty() || rows.len() > MAX_ROWS {
            return Err(Error::invalid(
                &[],
                "invalid_length",
                format!("an import takes 1-{MAX_ROWS} rows"),
            )
            .into());
        }
        let judged = rows
            .into_iter()
            .enumerate()
            .map(|(i, r)| (i, r.and_then(object).and_then(T::from_row)))
            .collect();
        Ok(Import(judged))
    }
}

/// A row that is a JSON object; any other value fails alone.
fn object(v: Value) -> Result<Value, Error> {
    match v {
        Value::Object(_) => Ok(v),
        _ => Err(Error::invalid(
            &[],
            "invalid_type",
            "a row must be a JSON object",
        )),
    }
}

/// Whether a content type is CSV (`text/csv`, any parameters).
fn is_csv(content_type: Option<&str>) -> bool {
    content_type
        .and_then(|c| c.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("text/csv"))
}

/// The rows of a JSON array (each element its own row).
pub fn json_rows(bytes: &[u8]) -> Result<Vec<Result<Value, Error>>, Error> {
    let Value::Array(all) = body::parse_json(bytes)? else {
        return Err(Error::invalid(
            &[],
            "invalid_type",
            "the body must be a JSON array of rows",
        ));
    };
    Ok(all
        .into_iter()
        .enumerate()
        .map(|(i, v)| match v.to_string().len() > csv::MAX_ROW_BYTES {
            true => Err(csv::too_long(i)),
            false => Ok(v),
        })
        .collect())
}
