//! The imported rounds' part of a search: the gap between two imported rounds across which
//! the imported numbers step, which the search is narrowed to.

use crate::bisect::Params;
use crate::config::Test;
use crate::git::CommitInfo;
use crate::pipeline::samples::Samples;
use crate::report::find::{GapEnd, ImportedGap};

/// Imported points on either side of a boundary compared by a noisy test: enough for a rank
/// test to reach α = 0.01 with one sample per round (5 vs 5).
const STEP_WINDOW: usize = 5;

/// The index of the first imported point of a new level: among the boundaries where the
/// points before and after (up to [`STEP_WINDOW`] on each side for a noisy test, the two
/// neighbours for a deterministic one) differ by the test's rule (significant and at least the
/// threshold), the one with the largest change. Cron series are short and sparse, too short
/// for change-point detection's minimum segments, and only one gap is needed.
fn step(series: &[Vec<f64>], test: &Test, deterministic: bool) -> Option<usize> {
    let w = if deterministic { 1 } else { STEP_WINDOW };
    let mut best: Option<(usize, f64)> = None;
    for k in 1..series.len() {
        let left: Vec<f64> = series[k.saturating_sub(w)..k].concat();
        let right: Vec<f64> = series[k..(k + w).min(series.len())].concat();
        // The nearest neighbours must differ too, or a window would place the step early.
        let near = crate::stats::differ_declared(
            &series[k - 1],
            &series[k],
            1.0,
            test.threshold,
            deterministic,
        );
        let Some(d) =
            crate::stats::differ_declared(&left, &right, test.alpha, test.threshold, deterministic)
        else {
            continue;
        };
        if d.differs
            && near.is_some_and(|n| n.rel_change.signum() == d.rel_change.signum())
            && test.threshold.reached(
                crate::stats::median(&series[k - 1]).unwrap_or(0.0),
                crate::stats::median(&series[k]).unwrap_or(0.0),
            )
            && best.is_none_or(|(_, r)| d.rel_change.abs() > r)
        {
            best = Some((k, d.rel_change.abs()));
        }
    }
    best.map(|(k, _)| k)
}

/// The gap between two imported rounds (positions `lo < hi` of `commits`) across which the
/// imported numbers of `test` step, when they do: the change point of the imported series
/// (per commit, in range order) with the largest effect. `None` when fewer than two commits
/// of the range have imported samples or the imported numbers show no step.
pub(super) fn gap(
    test: &Test,
    stored: &Samples,
    commits: &[CommitInfo],
    params: Params,
) -> Option<(usize, usize, ImportedGap)> {
    let mut at = Vec::new();
    let mut series = Vec::new();
    for (pos, c) in commits.iter().enumerate() {
        let v: Vec<f64> = stored
            .own(&c.id)
            .iter()
            .filter(|s| s.import.is_some())
            .filter_map(|s| s.value)
            .collect();
        if !v.is_empty() {
            at.push(pos);
            series.push(v);
        }
    }
    if at.len() < 2 {
        return None;
    }
    let k = step(&series, test, params.deterministic)?;
    let (lo, hi) = (at[k - 1], at[k]);
    let end = |pos: usize| {
        let recs: Vec<&crate::store::Sample> = stored
            .own(&commits[pos].id)
            .iter()
            .filter(|s| s.import.is_some() && s.value.is_some())
            .collect();
        let vals: Vec<f64> = recs.iter().filter_map(|s| s.value).collect();
        let mut rounds: Vec<String> = recs
            .iter()
            .filter_map(|s| s.import.as_ref()?.round.as_deref().map(str::to_string))
            .collect();
        rounds.sort_by(|a, b| crate::base::text::natural_cmp(a, b));
        rounds.dedup();
        let mut machines: Vec<String> = recs
            .iter()
            .filter_map(|s| s.import.as_ref()?.machine.as_deref().map(str::to_string))
            .collect();
        machines.sort();
        machines.dedup();
        GapEnd {
            commit: commits[pos].id.to_string(),
            median: crate::stats::median(&vals).unwrap_or(f64::NAN),
            n: vals.len(),
            rounds,
            machines,
        }
    };
    Some((
        lo,
        hi,
        ImportedGap {
            samples: series.iter().map(Vec::len).sum(),
            commits: at.len(),
            old: end(lo),
            new: end(hi),
            inside: hi - lo - 1,
            trusted_ends: params.deterministic,
            fell_back: false,
            here: None,
        },
    ))
}

/// An end `c` of an imported gap as a note says it: its median, samples, rounds, machines.
pub(super) fn gap_end(e: &GapEnd, c: &CommitInfo) -> String {
    format!(
        "{} {} (median {} of {} imported sample{}{}{})",
        c.short(),
        c.subject,
        crate::base::text::fmt_num(e.median),
        e.n,
        if e.n == 1 { "" } else { "s" },
        if e.rounds.is_empty() {
            String::new()
        } else {
            format!(
                ", {} {}",
                if e.rounds.len() == 1 {
                    "round"
                } else {
                    "rounds"
                },
                crate::base::text::some_of(&e.rounds)
            )
        },
        if e.machines.is_empty() {
            String::new()
        } else {
            format!(", from {}", e.machines.join(", "))
        }
    )
}
