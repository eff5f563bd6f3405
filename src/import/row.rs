//! A row of an import file as its reader gives it (CSV or JSON), before it is checked; the
//! columns a CSV may have; and where a reader puts what it reads.

use std::borrow::Cow;
use std::sync::Arc;

use super::report::Place;
use crate::store::origin::{Origin, Spread};

/// One row as read, before it is checked.
#[derive(Debug, Default)]
pub(crate) struct Row<'a> {
    pub(crate) line: usize,
    pub(crate) commit: Cow<'a, str>,
    pub(crate) test: Cow<'a, str>,
    pub(crate) value: Field<'a>,
    pub(crate) timestamp: Option<Field<'a>>,
    /// The column (or key) the timestamp was read from, for messages.
    pub(crate) time_column: &'static str,
    pub(crate) round: Option<Cow<'a, str>>,
    pub(crate) machine: Option<Cow<'a, str>>,
    /// A run listed by an export (`show --format json|csv`), with its window and moment.
    pub(crate) run: Option<ExportedRun>,
    /// Wall, user and sys seconds and the max RSS, when the file gives them (exports do).
    pub(crate) wall: Option<f64>,
    pub(crate) user: Option<f64>,
    pub(crate) sys: Option<f64>,
    pub(crate) max_rss: Option<u64>,
    /// Where the row is in another tool's history (for messages; `line` otherwise).
    pub(crate) at: Option<Arc<str>>,
    /// The tool and series it came from, and the spread the tool reported around it.
    pub(crate) origin: Option<Arc<Origin>>,
    pub(crate) spread: Vec<Spread>,
}

impl Row<'_> {
    /// Where the row is, for messages.
    pub(crate) fn place(&self) -> Place {
        match &self.at {
            Some(at) => Place::At(at.clone()),
            None => Place::Line(self.line),
        }
    }
}

/// What an export says about one run besides its value: the window it was measured in (`None`
/// for a sample that was itself imported) and its back-to-back group there.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ExportedRun {
    pub(crate) window: Option<u64>,
    pub(crate) moment: u32,
}

/// A cell that may hold a number or text (CSV cells are text; JSON may give either).
#[derive(Debug, Clone, Default)]
pub(crate) enum Field<'a> {
    #[default]
    Missing,
    Text(Cow<'a, str>),
    Number(f64),
}

/// Where a reader of a file format puts what it reads.
pub(crate) trait Rows {
    /// A row (`export`: a run of `show`'s export, compared as a run).
    fn row(&mut self, row: Row<'_>, export: bool) -> anyhow::Result<()>;
    /// A record that is no row at all.
    fn unparsable(&mut self, line: usize, why: String);
    /// A failed run of an export (no value): there is no number to import.
    fn failed_run(&mut self);
}

/// Empty cells are absent.
pub(crate) fn opt(s: &str) -> Option<&str> {
    let s = s.trim();
    (!s.is_empty()).then_some(s)
}

/// The columns a CSV may have: a cron's (the first six) and those `show --format csv` adds.
pub(crate) const COLUMNS: [&str; 17] = [
    "commit",
    "test",
    "value",
    "timestamp",
    "round",
    "machine",
    "time",
    "window",
    "moment",
    "wall",
    "user",
    "sys",
    "max_rss",
    "error",
    "unit",
    "fingerprint",
    // Which runs were of the old end `show` put first: read, and not needed.
    "old_end",
];

/// Position of a column in [`COLUMNS`].
pub(crate) fn column(name: &str) -> usize {
    // A match, not a search of the list: this runs for every cell of every row.
    let i = match name {
        "commit" => 0,
        "test" => 1,
        "value" => 2,
        "timestamp" => 3,
        "round" => 4,
        "machine" => 5,
        "time" => 6,
        "window" => 7,
        "moment" => 8,
        "wall" => 9,
        "user" => 10,
        "sys" => 11,
        "max_rss" => 12,
        _ => COLUMNS
            .iter()
            .position(|c| *c == name)
            .expect("a known column"),
    };
    debug_assert_eq!(COLUMNS[i], name);
    i
}
