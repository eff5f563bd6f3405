//! `find --format json`: one object, the shape src/guide/json.md gives (`culprits`, the
//! evidence, the time and what the runs were), for `find`, `report` and their readers.

use serde::Serialize;

use crate::bisect::Outcome;

use super::find::{FindReport, ImportedGap, SearchFacts};
use super::finding::Finding;

#[derive(Serialize)]
struct JsonNoChange {
    before: f64,
    after: f64,
    p_value: f64,
    min_detectable: f64,
}

#[derive(Serialize)]
struct JsonFind<'a> {
    test: String,
    range: String,
    verdict: &'static str,
    culprit: Option<Finding<'a>>,
    culprits: Vec<Finding<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    no_change: Option<JsonNoChange>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    best_guess: Option<Finding<'a>>,
    /// Builds performed, the pristine rebuilds that checked the verdict's builds included.
    builds: usize,
    /// Of `builds`, the pristine rebuilds.
    pristine_checks: usize,
    runs: usize,
    /// Cachegrind runs made to profile culprits (kept ones reused are not counted).
    profiles: usize,
    reused_samples: usize,
    /// Wall time in seconds from the command's start: total, building, checking, measuring,
    /// profiling and the rest (waiting, loading, analysis).
    time: JsonTime,
    skipped: Vec<String>,
    /// `skipped` with the reason of each (src/guide/json.md).
    skipped_why: Vec<JsonSkip>,
    probed: Vec<String>,
    notes: Vec<String>,
    /// Exact comparisons: the p-values are 0 or 1 by construction.
    deterministic: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    imported: Option<ImportedGap>,
    /// Windows side by side, drift, what could have been seen, counter.
    measured: SearchFacts,
    /// The functions whose cost changed from the parent to the first culprit (or
    /// `{"unavailable": why}`), when profiled; each of `culprits` carries its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<serde_json::Value>,
}

#[derive(Serialize)]
struct JsonTime {
    total_s: f64,
    building_s: f64,
    measuring_s: f64,
    /// The rest of `total_s`: loading samples, waiting for the lock, analysis.
    waiting_s: f64,
    build_rounds: usize,
    most_parallel_builds: usize,
    /// Pristine rebuilds of the verdict's builds.
    checking_s: f64,
    /// Cachegrind runs of the culprits and their parents.
    profiling_s: f64,
    /// Builds beside measurements (in both `building_s` and `measuring_s`).
    both_s: f64,
}

#[derive(Serialize)]
struct JsonSkip {
    commit: String,
    reason: String,
}

/// `--format json`: one object, the shape src/guide/json.md gives (`culprits`, the evidence).
pub fn json(r: &FindReport<'_>) -> anyhow::Result<String> {
    Ok(super::json::json_pretty(&json_value(r)?)?)
}

/// The object `--format json` prints, for reports that carry it.
pub fn json_value<'a>(r: &FindReport<'a>) -> anyhow::Result<serde_json::Value> {
    let (culprits, no_change, reason, best_guess) = match r.outcome {
        Outcome::Culprits(cs) => (
            cs.iter().map(|c| r.finding(c)).collect::<Vec<_>>(),
            None,
            None,
            None,
        ),
        Outcome::NoChange {
            before,
            after,
            p_value,
            min_detectable,
        } => (
            Vec::new(),
            Some(JsonNoChange {
                before: *before,
                after: *after,
                p_value: *p_value,
                min_detectable: *min_detectable,
            }),
            None,
            None,
        ),
        Outcome::Inconclusive { reason, best_guess } => (
            Vec::new(),
            None,
            Some(reason.clone()),
            best_guess.as_ref().map(|c| r.finding(c)),
        ),
    };
    let culprit = match r.outcome {
        Outcome::Culprits(cs) => cs.first().map(|c| r.finding(c)),
        _ => None,
    };
    let out = JsonFind {
        test: r.test.name.clone(),
        range: r.range.to_string(),
        verdict: r.outcome.verdict(),
        culprit,
        culprits,
        no_change,
        reason,
        best_guess,
        builds: r.builds,
        pristine_checks: r.time.checks,
        runs: r.runs,
        profiles: r.time.profiles,
        reused_samples: r.reused,
        time: JsonTime {
            total_s: r.seconds,
            building_s: r.time.building,
            measuring_s: r.time.measuring,
            waiting_s: r.time.other(r.seconds),
            build_rounds: r.time.build_rounds,
            most_parallel_builds: r.time.most_parallel,
            checking_s: r.time.checking,
            profiling_s: r.time.profiling,
            both_s: r.time.both,
        },
        skipped: r
            .skipped
            .iter()
            .map(|s| r.commits[s.pos].id.to_string())
            .collect(),
        skipped_why: r
            .skipped
            .iter()
            .map(|s| JsonSkip {
                commit: r.commits[s.pos].id.to_string(),
                reason: s.reason.clone(),
            })
            .collect(),
        probed: r
            .probed
            .iter()
            .map(|&p| r.commits[p].id.to_string())
            .collect(),
        notes: r.notes.to_vec(),
        deterministic: r.deterministic,
        imported: r.imported.cloned(),
        measured: r.facts.clone(),
        why: match r.outcome {
            Outcome::Culprits(cs) => cs.first().and_then(|c| r.why_of(c.pos)),
            _ => None,
        }
        .map(super::why::json),
    };
    Ok(serde_json::to_value(&out)?)
}
