//! The conversions export: one answer of up to [`ROWS_PER_ANSWER`] rows
//! read page by page from the list's own Query, so memory stays flat
//! whatever the window holds, and a cursor to the next answer until the
//! window ends or [`MAX_ROWS`] were exported.

use crate::app::App;
use domain::conversion::Conversion;
use domain::error::{Error, Result};
use domain::tenant::Tenant;
use store::conversions::{self, ConversionFilter};
use store::page::PageRequest;

/// The most rows in one answer (a few MB of CSV, within Lambda's 6 MB),
/// and the default.
pub const ROWS_PER_ANSWER: usize = 5_000;
/// The most rows one export (all its answers) holds.
pub const MAX_ROWS: usize = 100_000;
/// An answer ends after the row that brings it to this many bytes, so it
/// stays within Lambda's 6 MB whatever its rows hold (a row is at most
/// some tens of KB; the answer travels JSON-escaped).
pub const BYTES_PER_ANSWER: usize = 2_500_000;
/// Rows read per Query page.
const ROWS_PER_READ: usize = 1_000;

/// Where an export continues: the rows exported so far and the list's cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub exported: usize,
    pub cursor: Option<String>,
}

impl Position {
    /// The start of an export.
    pub fn start() -> Position {
        Position {
            exported: 0,
            cursor: None,
        }
    }

    /// The opaque form an answer's `next` link carries (`e<rows>_<cursor>`).
    pub fn encode(&self) -> String {
        format!(
            "e{}_{}",
            self.exported,
            self.cursor.as_deref().unwrap_or_default()
        )
    }

    /// Reads [`Position::encode`]'s form back.
    pub fn decode(s: &str) -> Result<Position> {
        let bad = || Error::invalid(&["cursor"], "invalid_cursor", "cursor is not valid");
        let (n, cursor) = s
            .strip_prefix('e')
            .and_then(|r| r.split_once('_'))
            .ok_or_else(bad)?;
        let exported: usize = n.parse().map_err(|_| bad())?;
        if exported > MAX_ROWS || cursor.is_empty() {
            return Err(bad());
        }
        Ok(Position {
            exported,
            cursor: Some(cursor.to_string()),
        })
    }
}

/// How an answer ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// More rows follow from here.
    More(Position),
    /// The window's rows are all exported.
    Done,
    /// [`MAX_ROWS`] were exported and the window holds more.
    Truncated,
}

/// Hands the next `rows` (at most [`ROWS_PER_ANSWER`]) rows of an export to
/// `row`, which answers the answer's size so far in bytes, in the list's
/// order (newest first), and says how the answer ends: after `rows` rows,
/// or after the row that reaches [`BYTES_PER_ANSWER`] (the next answer then
/// starts after that row, within its page).
pub async fn answer(
    app: &App,
    tenant: &Tenant,
    filter: &ConversionFilter,
    at: Position,
    rows: usize,
    mut row: impl FnMut(&Conversion) -> Result<usize>,
) -> Result<Next> {
    let mut pos = at;
    let stop = (pos.exported + rows.clamp(1, ROWS_PER_ANSWER)).min(MAX_ROWS);
    while pos.exported < stop {
        let page = PageRequest {
            limit: ROWS_PER_READ.min(stop - pos.exported),
            offset: 0,
            cursor: pos.cursor.clone(),
        };
        let found = conversions::list(&app.store, tenant, filter, &page).await?;
        let last = found.items.len();
        for (i, c) in found.items.iter().enumerate() {
            pos.exported += 1;
            if row(c)? >= BYTES_PER_ANSWER && (i + 1 < last || found.has_more) {
                let after = conversions::cursor_after(tenant, filter, c)?;
                pos.cursor = Some(after.ok_or_else(|| Error::internal("no cursor after a row"))?);
                return Ok(Next::More(pos));
            }
        }
        match (found.has_more, found.next_cursor) {
            (true, Some(next)) => pos.cursor = Some(next),
            _ => return Ok(Next::Done),
        }
    }
    Ok(match pos.exported < MAX_ROWS {
        true => Next::More(pos),
        false => Next::Truncated,
    })
}
