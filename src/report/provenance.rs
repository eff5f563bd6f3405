//! Which numbers of a test were imported, from what, and which were measured here: the line
//! `show`, `report` and the site print under a test's numbers, the mark of a commit's imported
//! numbers, and where another tool's benchmark code changed inside a series (asv's
//! `version`: a step there is the benchmark's, not the project's).

use std::collections::BTreeMap;

use crate::pipeline::rows::CommitRow;
use crate::store::Sample;

/// Where a range's numbers came from.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// Runs measured here.
    pub measured: usize,
    /// Imported rows without a tool (a cron's rows, an export's runs).
    pub rows: usize,
    /// Imported from other tools' histories: (tool, series) and how many.
    pub foreign: BTreeMap<(String, String), usize>,
}

impl Provenance {
    /// The provenance of the commits' own runs (each real run once).
    pub fn of(rows: &[CommitRow]) -> Provenance {
        let mut p = Provenance::default();
        for s in rows.iter().flat_map(|r| r.own_records()) {
            if s.value.is_none() {
                continue;
            }
            match &s.import {
                None => p.measured += 1,
                Some(i) => match &i.origin {
                    Some(o) => {
                        *p.foreign
                            .entry((o.source.to_string(), o.series.to_string()))
                            .or_default() += 1
                    }
                    None => p.rows += 1,
                },
            }
        }
        p
    }

    /// Whether any number was imported.
    pub fn any_imported(&self) -> bool {
        self.rows > 0 || !self.foreign.is_empty()
    }

    /// "imported: 588 from benchmark-action (series `end_to_end/http2_get`); measured here: 10
    /// runs", or `None` when every number was measured here.
    pub fn sentence(&self) -> Option<String> {
        if !self.any_imported() {
            return None;
        }
        let mut parts: Vec<String> = self
            .foreign
            .iter()
            .map(|((tool, series), n)| format!("{n} from {tool} (series `{series}`)"))
            .collect();
        if self.rows > 0 {
            parts.push(format!("{} from rows of `perfbisect import`", self.rows));
        }
        Some(format!(
            "imported: {}; measured here: {}",
            parts.join(", "),
            crate::base::text::count(self.measured, "run")
        ))
    }
}

/// A commit's mark for its imported numbers: `2 imported`, or for another tool's numbers
/// `1 imported from asv, ci99 0.22..0.23`.
pub fn mark(records: &[Sample]) -> Option<String> {
    let imported: Vec<&Sample> = records.iter().filter(|s| s.import.is_some()).collect();
    let first = imported.first()?;
    let i = first.import.as_ref()?;
    let Some(o) = &i.origin else {
        return Some(format!("{} imported", imported.len()));
    };
    let spread = i
        .spread
        .first()
        .map(|s| format!(", {}", s.describe()))
        .unwrap_or_default();
    Some(format!(
        "{} imported from {}{spread}",
        imported.len(),
        o.source
    ))
}

/// The version of the benchmark's code the commit's imported numbers were measured with,
/// when the tool records one.
pub fn version(records: &[Sample]) -> Option<&str> {
    records
        .iter()
        .filter_map(|s| s.import.as_ref()?.origin.as_ref()?.version.as_deref())
        .next()
}
