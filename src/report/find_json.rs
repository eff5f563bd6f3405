//! `find --format json`: one object, the shape src/guide/json.md gives (`culprits`, the
//! evidence, the time and what the runs were), for `find`, `report` and their readers.

use serde::Serialize;

use crate::bisect::{Culprit, Outcome};

use super::find::{judge, FindReport, ImportedGap, SearchFacts};
use crate::base::text::date;

#[derive(Serialize)]
struct Level {
    median: f64,
    n: usize,
}

#[derive(Serialize)]
struct JsonCulprit {
    commit: String,
    subject: String,
    author: String,
    date: String,
    parent: String,
    before: Level,
    after: Level,
    rel_change: f64,
    /// The 95 % interval of `rel_change`, when the runs allow one.
    #[serde(skip_serializing_if = "Option::is_none")]
    rel_change_interval: Option<[f64; 2]>,
    /// Windows of time in which the `before` and `after` runs were taken side by side (0:
    /// every sample pooled, or exact values); the change is estimated window by window.
    windows: usize,
    p_value: f64,
    candidates: Vec<String>,
    verified: bool,
    /// Runs of parent and culprit taken interleaved to confirm the step (both sides, each
    /// run once; 0: confirmed by exact values, or not confirmed) and their windows of time.
    reruns: usize,
    rerun_windows: usize,
    kind: &'static str,
    /// The merge commit that brought this culprit into the searched range's first-parent chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    merge: Option<String>,
    /// Why this culprit moved (the profile's answer, or `{"unavailable": why}`), when profiled.
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<serde_json::Value>,
}

#[derive(Serialize)]
struct JsonNoChange {
    before: f64,
    after: f64,
    p_value: f64,
    min_detectable: f64,
}

#[derive(Serialize)]
struct JsonFind {
    test: String,
    range: String,
    verdict: &'static str,
    culprit: Option<JsonCulprit>,
    culprits: Vec<JsonCulprit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    no_change: Option<JsonNoChange>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    best_guess: Option<JsonCulprit>,
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

fn json_culprit(r: &FindReport<'_>, c: &Culprit) -> JsonCulprit {
    let at = &r.commits[c.pos];
    JsonCulprit {
        commit: at.id.to_string(),
        subject: at.subject.clone(),
        author: at.author.clone(),
        date: date(at.time),
        parent: r.commits[c.parent].id.to_string(),
        before: Level {
            median: c.before,
            n: c.n_before,
        },
        after: Level {
            median: c.after,
            n: c.n_after,
        },
        rel_change: c.rel_change,
        rel_change_interval: c.interval.map(|(lo, hi)| [lo, hi]),
        windows: c.windows,
        p_value: c.p_value,
        candidates: c
            .candidates
            .iter()
            .map(|&p| r.commits[p].id.to_string())
            .collect(),
        verified: c.verified,
        reruns: c.reruns,
        rerun_windows: c.rerun_windows,
        kind: judge(r.test.direction, c.rel_change),
        merge: r.merge_of(c.pos).map(|m| r.commits[m].id.to_string()),
        why: r.why_of(c.pos).map(super::why::json),
    }
}

/// `--format json`: one object, the shape src/guide/json.md gives (`culprits`, the evidence).
pub fn json(r: &FindReport<'_>) -> anyhow::Result<String> {
    Ok(super::json::json_pretty(&json_value(r)?)?)
}

/// The object `--format json` prints, for reports that carry it.
pub fn json_value(r: &FindReport<'_>) -> anyhow::Result<serde_json::Value> {
    let (culprits, no_change, reason, best_guess) = match r.outcome {
        Outcome::Culprits(cs) => (
            cs.iter().map(|c| json_culprit(r, c)).collect::<Vec<_>>(),
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
            best_guess.as_ref().map(|c| json_culprit(r, c)),
        ),
    };
    let culprit = match r.outcome {
        Outcome::Culprits(cs) => cs.first().map(|c| json_culprit(r, c)),
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
