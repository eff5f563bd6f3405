//! What an import says about the rows it did not take: where each one is (a line of a CSV or
//! JSON file, or a place in another tool's history: a suite's entry, a results file), why it
//! was skipped, and the rows that stop the whole import.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Problems listed one by one before the rest are only counted (`-v` lists all).
pub const LISTED: usize = 50;

/// Why rows were skipped, for the counts at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Why {
    UnknownCommit,
    UnknownTest,
    BadRow,
    /// In a unit other than the test's (or than the series' own).
    OtherUnit,
    /// Measured on a checkout with uncommitted changes (pytest-benchmark's `dirty`): not the
    /// commit it names.
    Uncommitted,
}

impl Why {
    pub fn label(self) -> &'static str {
        match self {
            Why::UnknownCommit => "unknown commit",
            Why::UnknownTest => "unknown test",
            Why::BadRow => "unparsable",
            Why::OtherUnit => "another unit",
            Why::Uncommitted => "uncommitted changes",
        }
    }
}

/// Where a row is: a line of a file of rows, or a place in another tool's history
/// (`end_to_end entry 812`, `ubuntu-latest/00174507-conda-py3.12.json`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Place {
    Line(usize),
    At(Arc<str>),
}

impl Place {
    /// After a file's name: `rounds.csv:12`, `data.js: end_to_end entry 812`.
    pub fn after(&self, file: &str) -> String {
        match self {
            Place::Line(n) => format!("{file}:{n}"),
            Place::At(at) => format!("{file}: {at}"),
        }
    }
}

/// What an import found, and said.
#[derive(Default)]
pub struct Report {
    /// Rows skipped, with their place and why: the first [`LISTED`] (all with `keep_all`).
    pub problems: Vec<(Place, Why, String)>,
    /// Rows skipped, by why (all of them).
    pub skipped: BTreeMap<Why, usize>,
    /// Skipped rows that [`Report::problems`] lists (several per problem where one place's
    /// rows were skipped for one reason).
    pub listed: usize,
    /// Keep every problem, not only the first [`LISTED`] (`-v`).
    pub keep_all: bool,
    /// Rows that stop the import: they could only be stored wrong (place, why).
    pub(crate) fatal: Vec<(Place, String)>,
    /// Records that never became a row (the rows read are these and the rows parsed).
    pub unparsed: usize,
    /// Rows parsed.
    pub rows: usize,
    /// Failed runs of an export (no value), or results another tool recorded without a number
    /// (asv's `null` for a failure, `NaN` for a benchmark its suite skipped): no number to
    /// import.
    pub failed_runs: usize,
}

/// Why a row is not imported: it is skipped, or it stops the import.
#[derive(Debug, Clone)]
pub(crate) enum Refusal {
    Skip(String),
    Fatal(String),
}

impl Report {
    pub(crate) fn refuse(&mut self, place: Place, why: Why, r: Refusal) {
        match r {
            Refusal::Skip(reason) => self.skip(place, why, reason),
            Refusal::Fatal(reason) => self.fatal.push((place, reason)),
        }
    }

    /// A row skipped at `place`. Rows of one place skipped for one reason (the benches of an
    /// entry whose commit is unknown) are listed once, and each counted.
    pub(crate) fn skip(&mut self, place: Place, why: Why, reason: String) {
        *self.skipped.entry(why).or_default() += 1;
        if let (Place::At(_), Some((p, w, r))) = (&place, self.problems.last()) {
            if *p == place && *w == why && *r == reason {
                self.listed += 1;
                return;
            }
        }
        if self.keep_all || self.problems.len() < LISTED {
            self.problems.push((place, why, reason));
            self.listed += 1;
        }
    }

    /// Rows skipped, in all.
    pub fn skipped_rows(&self) -> usize {
        self.skipped.values().sum()
    }

    /// A record that is no row at all.
    pub(crate) fn unparsable(&mut self, place: Place, reason: String) {
        self.unparsed += 1;
        self.skip(place, Why::BadRow, reason);
    }
}

/// What an import did.
#[derive(Default)]
pub struct Outcome {
    pub report: Report,
    /// Samples added, and of how many tests.
    pub imported: usize,
    pub tests: usize,
    /// Commits that got samples.
    pub commits: usize,
    /// Rows found already stored.
    pub already: usize,
}

impl Outcome {
    /// Rows read: parsed or not, failed runs included.
    pub fn read(&self) -> usize {
        self.report.rows + self.report.unparsed + self.report.failed_runs
    }
}
