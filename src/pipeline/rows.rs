//! One row per commit of a test's history, assembled from its samples, as `show`, `detect`,
//! `report`, `find` and the site see it (its values and records, its status, the identical
//! build it shares), and what
//! the detector reads of the rows: their runs, the change points over them, and each point's
//! size read from the runs taken side by side across it.

use serde::Serialize;

use crate::git::CommitInfo;
use crate::pipeline::workspace::Workspace;
use crate::stats;
use crate::store::{Run, Sample};

/// Status of one commit in `show`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Ok,
    BuildFailed,
    /// Runs were made but none produced a value.
    RunFailed,
    Missing,
}

/// One commit with its samples (`R`: what is kept of each run, the whole [`Sample`] unless
/// only statistics are wanted).
pub struct CommitRow<R = Sample> {
    pub commit: CommitInfo,
    pub values: Vec<f64>,
    pub records: Vec<R>,
    pub status: Status,
    /// A commit whose build is byte-identical to this one's, whose samples these include.
    pub same_build_as: Option<gix::ObjectId>,
    /// The first `own` of `records` are this commit's own runs; the rest are runs of
    /// byte-identical builds, shown here but counted where they were made.
    pub own: usize,
    /// The build is byte-identical to the previous row's: the two are one unit of evidence.
    pub joins_previous: bool,
}

impl<R: Run> CommitRow<R> {
    /// One value per independent measurement of the commit (runs taken back to back count
    /// once): what change points and p-values over commits are computed from.
    pub fn moments(&self) -> Vec<f64> {
        crate::store::moment_values(&self.records)
    }

    /// How many of the records were imported (cron rounds), not measured here.
    pub fn imported(&self) -> usize {
        self.records.iter().filter(|s| s.imported()).count()
    }

    /// The commit's own runs (not those of identical builds it shows).
    pub fn own_records(&self) -> &[R] {
        &self.records[..self.own.min(self.records.len())]
    }

    /// Values of the commit's own successful runs.
    pub fn own_values(&self) -> Vec<f64> {
        self.own_records()
            .iter()
            .filter_map(|s| s.value())
            .collect()
    }
}

/// What the detector reads of `rows`: each row's runs (one value per independent moment,
/// with its window of time), those of identical builds it shows included, each run's weight
/// shared among the rows of the range that show the same runs (so it counts once), and which
/// rows are the previous row's build (no step between them). A revert to an earlier build is then a
/// level of its own, held by that build's runs.
pub fn detector_input<R: Run>(rows: &[CommitRow<R>]) -> stats::changepoint::Runs {
    use rayon::prelude::*;
    use stats::changepoint::Obs;
    let commits: Vec<Vec<Obs>> = rows
        .par_iter()
        .map(|r| {
            crate::store::moments(&r.records)
                .into_iter()
                .map(|(value, window, machine)| Obs {
                    value,
                    window,
                    machine,
                })
                .collect()
        })
        .collect();
    // Rows that show the same runs (one build's, whichever commit made them) share them:
    // each counts 1/k of them, so the build's runs count once over its k rows. The same runs
    // are the same records (value, window and moment: commits of a cron round that printed
    // equal values are still runs of their own), in any order: a sum of each record's hash
    // (no sort of millions of cron rows).
    // A run with no moment of its own (imported without a round or a time) is told from an
    // equal value of another commit by the commit it was measured on: this row's, or for
    // the runs of an identical build it shows, that build's.
    let key = |r: &CommitRow<R>| {
        use std::hash::BuildHasher;
        let h = foldhash::fast::FixedState::with_seed(37);
        let origin = |i: usize| {
            if i < r.own {
                Some(r.commit.id)
            } else {
                r.same_build_as
            }
        };
        let values = r.records.iter().enumerate().filter_map(|(i, s)| {
            let v = s.value().filter(|v| v.is_finite())?;
            let m = s.moment_key();
            let salt = (m == crate::store::INDEPENDENT)
                .then(|| origin(i))
                .flatten();
            Some(h.hash_one((v.to_bits(), m, salt)))
        });
        let (sum, n) = values.fold((0u64, 0u64), |(s, n), x| (s.wrapping_add(x), n + 1));
        sum.wrapping_add(n.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    };
    let keys: Vec<Option<u64>> = rows
        .par_iter()
        .zip(&commits)
        .map(|(r, c)| (!c.is_empty()).then(|| key(r)))
        .collect();
    let mut size: std::collections::HashMap<u64, usize> = Default::default();
    for k in keys.iter().flatten() {
        *size.entry(*k).or_default() += 1;
    }
    let share = keys
        .iter()
        .map(|k| 1.0 / k.and_then(|k| size.get(&k).copied()).unwrap_or(1) as f64)
        .collect();
    stats::changepoint::Runs {
        commits,
        share,
        joined: rows.iter().map(|r| r.joins_previous).collect(),
    }
}

/// Change points over `rows`, and the steps too few runs leave undecided, by the one detector
/// ([`stats::changepoint`]) on [`detector_input`]; each non-exact point's size is then read
/// from the runs taken side by side across it where there are any ([`side_by_side`], with the
/// search's rules `pair`).
pub fn detection<R: Run>(
    rows: &[CommitRow<R>],
    opts: &stats::changepoint::Options,
    pair: &crate::bisect::Params,
) -> stats::Detection {
    let mut d = stats::changepoint::detect_runs(detector_input(rows), opts);
    side_by_side(rows, &mut d.points, pair);
    disputed(rows, &mut d);
    d
}

/// Moves the change points whose runs taken side by side do not tell the sides apart (their
/// interval of the change holds none) to the undecided steps: a step is never certain where
/// the runs compared on one machine state say it may be nothing.
fn disputed<R: Run>(rows: &[CommitRow<R>], d: &mut stats::Detection) {
    let (kept, moved): (Vec<stats::ChangePoint>, Vec<stats::ChangePoint>) =
        std::mem::take(&mut d.points).into_iter().partition(|c| {
            c.deterministic || c.interval.is_none_or(|(lo, hi)| lo > 0.0 || hi < 0.0)
        });
    d.points = kept;
    for c in moved {
        let runs = |j: usize| rows.get(j).map_or(0, |r| r.values.len());
        let seen = (runs(c.last_before), runs(c.index));
        d.undecided.push(stats::Undecided {
            index: c.index,
            last_before: c.last_before,
            why: stats::changepoint::Reason::SideBySide,
            before: c.before,
            after: c.after,
            rel_change: c.rel_change,
            p_value: c.p_value,
            runs: seen,
            runs_needed: (2 * seen.0.max(seen.1)).max(RANK_RUNS),
            interval: c.interval,
        });
    }
    d.undecided.sort_by_key(|u| u.index);
}

/// The step from row `a` to row `b` on the runs of each taken side by side (in the windows
/// of time holding both; an identical build's runs a row shows count for it, as they do in
/// the search), as a culprit's is read; `None` when they share no window.
pub fn step_between<R: Run>(a: &CommitRow<R>, b: &CommitRow<R>) -> Option<stats::Step> {
    let sides = [a, b].into_iter().enumerate();
    windowed_step(sides.flat_map(|(side, row)| row.records.iter().map(move |r| (side == 1, r))))
}

/// The step from the runs marked `false` (old side) to those marked `true`, window by window
/// ([`stats::step`]): runs without a window of time or a value left out, windows holding only
/// one side skipped; `None` when no window holds both.
fn windowed_step<'r, R: Run + 'r>(
    runs: impl Iterator<Item = (bool, &'r R)>,
) -> Option<stats::Step> {
    let mut windows: std::collections::BTreeMap<u64, (Vec<f64>, Vec<f64>)> = Default::default();
    for (new, rec) in runs {
        let (w, Some(v)) = (rec.window(), rec.value()) else {
            continue;
        };
        if w != 0 && v.is_finite() {
            let e = windows.entry(w).or_default();
            if new { &mut e.1 } else { &mut e.0 }.push(v);
        }
    }
    let strata: Vec<(&[f64], &[f64])> = windows
        .values()
        .map(|(x, y)| (x.as_slice(), y.as_slice()))
        .filter(|(x, y)| !x.is_empty() && !y.is_empty())
        .collect();
    stats::step::estimate_with_interval(&strata)
}

/// Commits on each side of a change point whose runs taken side by side give its size (as
/// the detector's levels are taken next to the boundary).
const SIDE_SPAN: usize = 10;
/// The runs of a change point's commit and the one before it, taken side by side, from which
/// their own step is its size: [`stats::step::RANK_RUNS`] a side at least.
pub use crate::stats::step::RANK_RUNS;

/// Each change point's numbers from the runs taken side by side across it, where there are
/// any. The runs of its commit and the one before it, where they hold [`RANK_RUNS`] a side,
/// are compared as `find` compares a culprit and its parent ([`crate::bisect::Search::restate`]
/// with `params`): levels, change, interval, p-value and its test are then the culprit's, one
/// set of numbers in `find`, `report` and `detect`. Else the windows of time holding runs of
/// commits on both sides (up to [`SIDE_SPAN`] commits a side, not past the neighbouring change
/// points) give the levels and the change ([`stats::step`]), and the p-value stays the
/// detector's. Without such runs (imported rounds, commits measured apart) the detector's
/// levels stand.
pub fn side_by_side<R: Run>(
    rows: &[CommitRow<R>],
    found: &mut [stats::ChangePoint],
    params: &crate::bisect::Params,
) {
    let starts: Vec<usize> = found.iter().map(|c| c.index).collect();
    for (i, cp) in found.iter_mut().enumerate() {
        if cp.deterministic {
            continue;
        }
        let k = cp.index;
        // The parent as `find` has it: the last commit before with runs (not a broken build).
        // Where the two differ side by side, the step is between them, whatever span the
        // levels measured apart left it.
        let parent = rows[..k.min(rows.len())]
            .iter()
            .rposition(|r| !r.values.is_empty());
        let pair = parent
            .filter(|_| k < rows.len())
            .and_then(|q| pair_step(&rows[q], &rows[k], params))
            // A pair that does not differ at α is no statement of this confirmed step; nor,
            // where the levels left the step a span before the parent, one below the
            // threshold (the step may lie before the parent: these two differ by jitter).
            .filter(|(c, det)| *det || c.p_value < params.alpha)
            .filter(|(c, det)| {
                *det || parent.is_none_or(|q| q <= cp.last_before)
                    || params.threshold.reached(c.before, c.after)
            })
            // Nor where a commit of the span before the parent, measured beside `k`, does not
            // differ from it the same way: that commit may already be at the new level, and
            // the pair's difference be one build's jitter (a rank test of runs sees none).
            .filter(|(c, _)| {
                let up = c.after > c.before;
                parent.is_none_or(|q| {
                    (cp.last_before + 1..q).all(|j| differs(&rows[j], &rows[k], up, params))
                })
            })
            // Nor where the parent, inside the span, was measured beside a commit placed at
            // the old level: the detector read those runs and could not place the parent (it
            // may be between the levels, or past the step already); the span stands.
            .filter(|_| {
                let first = if i == 0 { 0 } else { starts[i - 1] };
                parent.is_none_or(|q| {
                    q <= cp.last_before
                        || (first.max((cp.last_before + 1).saturating_sub(SIDE_SPAN))
                            ..=cp.last_before)
                            .all(|j| apart(&rows[j], &rows[q]))
                })
            });
        if let (Some((c, det)), Some(q)) = (pair, parent) {
            cp.last_before = cp.last_before.max(q);
            cp.before = c.before;
            cp.after = c.after;
            cp.rel_change = c.rel_change;
            cp.interval = c.interval;
            // Exact values compare exactly between measured neighbours only: across commits
            // not measured, the change is the span's, and this commit's own share any part.
            if det && parent.is_some_and(|q| k > q + 1) {
                cp.interval = Some(stats::changepoint::across_unmeasured(c.rel_change));
            }
            cp.windows = c.windows;
            cp.deterministic = det;
            (cp.p_value, cp.test) = if det {
                (0.0, stats::step::StepTest::Exact)
            } else {
                (
                    c.p_value,
                    stats::step::StepTest::of_pair(params.counted, c.windows),
                )
            };
            continue;
        }
        let lo = k
            .saturating_sub(SIDE_SPAN)
            .max(if i == 0 { 0 } else { starts[i - 1] });
        let hi = (k + SIDE_SPAN)
            .min(starts.get(i + 1).copied().unwrap_or(rows.len()))
            .min(rows.len());
        // The commits of the span between the last placed at the old level and `k` are at
        // neither level as far as the detector tells: on no side.
        let old_end = cp.last_before.min(k.saturating_sub(1));
        let runs = (lo..hi)
            .filter(|&j| j <= old_end || j >= k)
            .flat_map(|j| rows[j].own_records().iter().map(move |r| (j >= k, r)));
        if let Some(step) = windowed_step(runs) {
            (cp.before, cp.after) = step.levels();
            cp.rel_change = step.rel_change;
            cp.interval = step.interval;
            cp.windows = step.windows;
        }
    }
}

/// Whether rows `a` and `b` share no window of time: nothing compares them side by side.
fn apart<R: Run>(a: &CommitRow<R>, b: &CommitRow<R>) -> bool {
    let windows = |row: &CommitRow<R>| -> std::collections::HashSet<u64> {
        row.records
            .iter()
            .map(|r| r.window())
            .filter(|&w| w != 0)
            .collect()
    };
    a.values.is_empty() || b.values.is_empty() || windows(a).is_disjoint(&windows(b))
}

/// Whether row `b` differs from row `a` side by side at α in the direction `up` (higher when
/// `up`); rows never measured side by side count as differing (no run says otherwise), rows
/// that share a window with too few runs to tell as not.
fn differs<R: Run>(
    a: &CommitRow<R>,
    b: &CommitRow<R>,
    up: bool,
    params: &crate::bisect::Params,
) -> bool {
    apart(a, b)
        || pair_step(a, b, params)
            .is_some_and(|(c, det)| (det || c.p_value < params.alpha) && (c.after > c.before) == up)
}

/// The rows strictly between `last` and `first` with results: commits a step's span holds
/// that were measured, on machine states that placed them at neither level.
pub fn measured_between<R: Run>(rows: &[CommitRow<R>], last: usize, first: usize) -> usize {
    rows.get(last + 1..first.min(rows.len()))
        .map_or(0, |r| r.iter().filter(|r| !r.values.is_empty()).count())
}

/// Row `b` against its parent's row `a`, as `find` states a culprit against its parent
/// ([`crate::bisect::Search::pair`]): every run of each (an identical build's runs a row shows
/// included) in the windows of time holding both, and whether they compared as exact values;
/// `None` below [`RANK_RUNS`] such runs a side unless their values compare exactly, and
/// `None` for exact values that do not differ (the step is not between these two).
fn pair_step<R: Run>(
    a: &CommitRow<R>,
    b: &CommitRow<R>,
    params: &crate::bisect::Params,
) -> Option<(crate::bisect::Culprit, bool)> {
    let stored = |row: &CommitRow<R>| -> Vec<crate::bisect::Stored> {
        row.records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.window() != 0)
            .filter_map(|(i, r)| stored_run(r, i >= row.own))
            .collect()
    };
    let (sa, sb) = (stored(a), stored(b));
    let pair = crate::bisect::Search::pair(*params, &sa, &sb)?;
    // Exact values (the search's own rule, [`crate::bisect::Search::pair`]) need no more
    // runs than showed them exact: `find` calls such a step exact on two runs a side.
    if pair.1 {
        return (pair.0.before != pair.0.after).then_some(pair);
    }
    let windows = |x: &[crate::bisect::Stored]| -> std::collections::HashSet<u64> {
        x.iter().map(|s| s.window).collect()
    };
    let (wa, wb) = (windows(&sa), windows(&sb));
    let na = sa.iter().filter(|s| wb.contains(&s.window)).count();
    let nb = sb.iter().filter(|s| wa.contains(&s.window)).count();
    (na >= RANK_RUNS && nb >= RANK_RUNS).then_some(pair)
}

/// A run as a search compares it ([`crate::bisect::Stored`]); `None` without a finite value.
/// `shared`: the run of a byte-identical build, shown for this commit.
pub fn stored_run(r: &impl Run, shared: bool) -> Option<crate::bisect::Stored> {
    Some(crate::bisect::Stored {
        value: r.value().filter(|v| v.is_finite())?,
        window: r.window(),
        moment: u32::try_from(r.moment_key().1).unwrap_or(u32::MAX),
        shared,
    })
}

/// Per-commit rows of `test` for `commits`: the values and records stored, and whether a
/// commit without values failed to build, failed every run, or was never measured.
pub(crate) fn rows(
    ws: &Workspace,
    samples: &crate::pipeline::samples::Samples,
    commits: Vec<crate::git::CommitInfo>,
) -> Vec<crate::pipeline::rows::CommitRow> {
    let known = Known::of(samples, &commits);
    let records = commits
        .iter()
        .map(|c| samples.records(&c.id).into_iter().cloned().collect())
        .collect();
    build(ws, samples, commits, records, known)
}

/// [`rows`], moving each commit's own records out of `samples` instead of copying them (a
/// store of millions of samples is not held twice): afterwards `samples` keeps its counts,
/// fingerprints and identical builds, and no records of these commits.
pub(crate) fn take_rows<R: Run + Clone>(
    ws: &Workspace,
    samples: &mut crate::pipeline::samples::Samples<R>,
    commits: Vec<crate::git::CommitInfo>,
) -> Vec<crate::pipeline::rows::CommitRow<R>> {
    let known = Known::of(samples, &commits);
    // The runs of identical builds a row shows are copies, taken before any list is moved.
    let shared: Vec<Vec<R>> = commits
        .iter()
        .map(|c| {
            let mut all = samples.records(&c.id);
            all.drain(..samples.own(&c.id).len().min(all.len()));
            all.into_iter().cloned().collect()
        })
        .collect();
    let rows_of: Vec<Vec<R>> = commits
        .iter()
        .zip(shared)
        .map(|(c, shared)| {
            let mut own = samples
                .by_commit
                .get_mut(&crate::store::commit_key(&c.id))
                .map(std::mem::take)
                .unwrap_or_default();
            own.extend(shared);
            own
        })
        .collect();
    build(ws, samples, commits, rows_of, known)
}

/// What a row says about its commit's samples that moving them would lose: how many are its
/// own, and the identical build whose samples it shows.
struct Known {
    own: Vec<usize>,
    same: Vec<Option<gix::ObjectId>>,
}

impl Known {
    fn of<R>(
        samples: &crate::pipeline::samples::Samples<R>,
        commits: &[crate::git::CommitInfo],
    ) -> Known {
        Known {
            own: commits.iter().map(|c| samples.own(&c.id).len()).collect(),
            same: commits
                .iter()
                .map(|c| samples.shared_from(&c.id).first().copied())
                .collect(),
        }
    }
}

fn build<R: Run>(
    ws: &Workspace,
    samples: &crate::pipeline::samples::Samples<R>,
    commits: Vec<crate::git::CommitInfo>,
    records: Vec<Vec<R>>,
    known: Known,
) -> Vec<crate::pipeline::rows::CommitRow<R>> {
    use self::{CommitRow, Status};
    use crate::build::State;
    let mut previous: Option<[u8; 20]> = None;
    commits
        .into_iter()
        .zip(records)
        .zip(known.own.into_iter().zip(known.same))
        .map(|((c, records), (own, same_build_as))| {
            let key = crate::store::commit_key(&c.id);
            let joins_previous =
                previous.is_some_and(|p| samples.twins.get(&key).is_some_and(|t| t.contains(&p)));
            previous = Some(key);
            let values: Vec<f64> = records.iter().filter_map(|s| s.value()).collect();
            let status = if !values.is_empty() {
                Status::Ok
            } else if matches!(ws.build_state(&c.id), State::Failed(_)) {
                Status::BuildFailed
            } else if !records.is_empty() {
                Status::RunFailed
            } else {
                Status::Missing
            };
            CommitRow {
                same_build_as,
                own,
                joins_previous,
                commit: c,
                values,
                records,
                status,
            }
        })
        .collect()
}
