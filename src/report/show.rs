//! What `show` prints: per commit rows and a range summary like curl's performance page.

use std::fmt::Write as _;

use serde::Serialize;

use crate::config::{Direction, Test};
use crate::git::CommitInfo;
use crate::stats::{self, Summary};
use crate::store::{Run, Sample};

use crate::base::text::{fmt_num, fmt_signed};

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
                .map(|(value, window)| Obs { value, window })
                .collect()
        })
        .collect();
    // Rows that show the same runs (one build's, whichever commit made them) share them:
    // each counts 1/k of them, so the build's runs count once over its k rows. The same runs
    // are the same records (value, window and moment: commits of a cron round that printed
    // equal values are still runs of their own), in any order: a sum of each record's hash
    // (no sort of millions of cron rows).
    let key = |r: &CommitRow<R>| {
        use std::hash::BuildHasher;
        let h = foldhash::fast::FixedState::with_seed(37);
        let values = r.records.iter().filter_map(|s| {
            let v = s.value().filter(|v| v.is_finite())?;
            Some(h.hash_one((v.to_bits(), s.moment_key())))
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
    d
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
/// A rank test's fewest runs a side to reach α = 0.01 (and what `find`'s verification of a
/// culprit takes at least): the runs of a change point's commit and the one before it, taken
/// side by side, from which their own step is its size; below it a step is "too few runs".
pub const RANK_RUNS: usize = 5;

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
        let parent = rows[..k.min(rows.len())]
            .iter()
            .rposition(|r| !r.values.is_empty());
        let pair = parent
            .filter(|_| k < rows.len())
            .and_then(|q| pair_step(&rows[q], &rows[k], params))
            // A pair that does not differ at α is no statement of this confirmed step.
            .filter(|(c, det)| *det || c.p_value < params.alpha);
        if let Some((c, det)) = pair {
            cp.before = c.before;
            cp.after = c.after;
            cp.rel_change = c.rel_change;
            cp.interval = c.interval;
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
        let runs = (lo..hi).flat_map(|j| rows[j].own_records().iter().map(move |r| (j >= k, r)));
        if let Some(step) = windowed_step(runs) {
            (cp.before, cp.after) = step.levels();
            cp.rel_change = step.rel_change;
            cp.interval = step.interval;
            cp.windows = step.windows;
        }
    }
}

/// Row `b` against its parent's row `a`, as `find` states a culprit against its parent
/// ([`crate::bisect::Search::pair`]): every run of each (an identical build's runs a row shows
/// included) in the windows of time holding both, and whether they compared as exact values;
/// `None` below [`RANK_RUNS`] such runs a side.
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
            .filter_map(|(i, r)| {
                Some(crate::bisect::Stored {
                    value: r.value().filter(|v| v.is_finite())?,
                    window: r.window(),
                    moment: u32::try_from(r.moment_key().1).unwrap_or(u32::MAX),
                    shared: i >= row.own,
                })
            })
            .collect()
    };
    let (sa, sb) = (stored(a), stored(b));
    let windows = |x: &[crate::bisect::Stored]| -> std::collections::HashSet<u64> {
        x.iter().map(|s| s.window).collect()
    };
    let (wa, wb) = (windows(&sa), windows(&sb));
    let na = sa.iter().filter(|s| wb.contains(&s.window)).count();
    let nb = sb.iter().filter(|s| wa.contains(&s.window)).count();
    if na < RANK_RUNS || nb < RANK_RUNS {
        return None;
    }
    crate::bisect::Search::pair(*params, &sa, &sb)
}

/// The stake verdict, worded like curl's page.
#[derive(Debug, Clone, Serialize)]
pub struct StakeVerdict {
    pub stake: f64,
    pub vs_mean: f64,
    pub vs_mean_pct: f64,
    pub vs_p50: f64,
    pub vs_p50_pct: f64,
    /// Median of the newest measured commit.
    pub current: f64,
    /// "better", "worse" or "equal" by the test's direction.
    pub verdict: &'static str,
}

/// Mann-Kendall over the per-commit medians, in commit order.
#[derive(Debug, Clone, Serialize)]
pub struct TrendSummary {
    pub p_value: f64,
    pub tau: f64,
    /// Sen's slope: change per commit, in the metric's unit.
    pub sen_slope: f64,
    /// Sen's slope as % of the median, per commit.
    pub sen_slope_pct: f64,
    pub direction: stats::TrendDirection,
    /// "better", "worse" or "none" by the test's direction.
    pub verdict: &'static str,
}

/// Significance level of the trend test (as on curl's page).
const TREND_ALPHA: f64 = 0.05;

/// The range as a whole.
#[derive(Debug, Clone, Serialize)]
pub struct RangeSummary {
    pub samples: usize,
    pub commits_measured: usize,
    pub p0: f64,
    pub p25: f64,
    pub p50: f64,
    pub p75: f64,
    pub p100: f64,
    pub mean: f64,
    pub std_dev: f64,
    pub std_dev_pct: f64,
    pub span: f64,
    pub trend: Option<TrendSummary>,
    pub stake: Option<StakeVerdict>,
}

/// Summarise the whole range; `None` when nothing was measured.
pub fn summarize(test: &Test, rows: &[CommitRow]) -> Option<RangeSummary> {
    // Each real run once: identical builds show one build's runs on several commits.
    let all: Vec<f64> = rows.iter().flat_map(|r| r.own_values()).collect();
    let s: Summary = stats::summarize(&all)?;
    let stake = test.stake.map(|stake| {
        let current = rows
            .iter()
            .rev()
            .find_map(|r| stats::median(&r.values))
            .unwrap_or(s.median);
        // Relative to the stake with the one definition of a relative change, so the sign is
        // the side of the stake the value is on, also for a negative stake.
        let pct = |v: f64| {
            if stake != 0.0 {
                stats::rel_change(stake, v) * 100.0
            } else {
                0.0
            }
        };
        let better = match test.direction {
            Direction::Lower => current < stake,
            Direction::Higher => current > stake,
        };
        StakeVerdict {
            stake,
            vs_mean: s.mean - stake,
            vs_mean_pct: pct(s.mean),
            vs_p50: s.median - stake,
            vs_p50_pct: pct(s.median),
            current,
            verdict: if current == stake {
                "equal"
            } else if better {
                "better"
            } else {
                "worse"
            },
        }
    });
    // Medians of each commit's own runs: copies of one build's runs are no trend.
    let medians: Vec<f64> = rows
        .iter()
        .map(|r| stats::median(&r.own_values()).unwrap_or(f64::NAN))
        .collect();
    let trend = stats::mann_kendall(&medians, TREND_ALPHA)
        .filter(|_| medians.iter().filter(|m| !m.is_nan()).count() >= 3)
        .map(|t| TrendSummary {
            p_value: t.p_value,
            tau: t.tau,
            sen_slope: t.sen_slope,
            sen_slope_pct: if s.median != 0.0 {
                t.sen_slope / s.median.abs() * 100.0
            } else {
                0.0
            },
            direction: t.direction,
            verdict: match (t.direction, test.direction) {
                (stats::TrendDirection::None, _) => "none",
                (stats::TrendDirection::Increasing, Direction::Lower)
                | (stats::TrendDirection::Decreasing, Direction::Higher) => "worse",
                _ => "better",
            },
        });
    Some(RangeSummary {
        samples: s.n,
        commits_measured: rows.iter().filter(|r| !r.values.is_empty()).count(),
        p0: s.min,
        p25: s.p25,
        p50: s.median,
        p75: s.p75,
        p100: s.max,
        mean: s.mean,
        std_dev: s.std_dev,
        std_dev_pct: s.cv_percent(),
        span: s.span(),
        trend,
        stake,
    })
}

/// The metric and its unit, "wall, s", or the metric alone when the unit is its own name
/// ("instructions", not "instructions, instructions") or there is none.
pub fn metric_and_unit(test: &Test) -> String {
    let (metric, unit) = (test.metric.describe(), test.unit());
    if unit.is_empty() || unit == metric {
        metric
    } else {
        format!("{metric}, {unit}")
    }
}

/// Text for the terminal; `scope` says which commits these are (a range, or every commit
/// with results when none was given) and is printed under the test's line. `old_end`: the
/// first row is the range's old end (marked so).
pub fn text(test: &Test, scope: &str, rows: &[CommitRow], old_end: bool) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} ({}, {} is better){}",
        test.name,
        metric_and_unit(test),
        test.direction.as_str(),
        test.description
            .as_deref()
            .map(|d| format!(": {d}"))
            .unwrap_or_default()
    );
    if !scope.is_empty() {
        let _ = writeln!(o, "{scope}");
    }
    let _ = writeln!(
        o,
        "{:<10}  {:>4}  {:>12}  {:>12}  {:>12}  subject",
        "commit", "n", "min", "median", "max"
    );
    for (i, r) in rows.iter().enumerate() {
        let (n, min, med, max) = match stats::summarize(&r.values) {
            Some(s) => (
                s.n.to_string(),
                fmt_num(s.min),
                fmt_num(s.median),
                fmt_num(s.max),
            ),
            None => {
                let what = match r.status {
                    Status::BuildFailed => "build failed",
                    Status::RunFailed => "runs failed",
                    _ => "-",
                };
                ("0".into(), String::new(), what.into(), String::new())
            }
        };
        let mut marks = Vec::new();
        if old_end && i == 0 {
            marks.push("old end".to_string());
        }
        let imported = r.imported();
        if imported > 0 {
            marks.push(format!("{imported} imported"));
        }
        if let Some(t) = &r.same_build_as {
            marks.push(format!("same build as {}", crate::git::short(t)));
        }
        let _ = writeln!(
            o,
            "{:<10}  {:>4}  {:>12}  {:>12}  {:>12}  {}{}",
            r.commit.short(),
            n,
            min,
            med,
            max,
            r.commit.subject,
            if marks.is_empty() {
                String::new()
            } else {
                format!(" [{}]", marks.join("; "))
            }
        );
    }
    match summarize(test, rows) {
        None => {
            let _ = writeln!(o, "\nno samples in this range");
        }
        Some(s) => {
            let borrowed = rows
                .iter()
                .filter(|r| r.own_values().len() < r.values.len())
                .count();
            let _ = writeln!(
                o,
                "\n{} sample{} over {} of {} commit{}{}",
                s.samples,
                if s.samples == 1 { "" } else { "s" },
                s.commits_measured,
                rows.len(),
                if rows.len() == 1 { "" } else { "s" },
                match borrowed {
                    0 => String::new(),
                    1 => " (1 shows the runs of an identical build, counted once)".to_string(),
                    n => format!(" ({n} show the runs of identical builds, counted once)"),
                }
            );
            let _ = writeln!(
                o,
                "P0 {}  P25 {}  P50 {}  P75 {}  P100 {}",
                fmt_num(s.p0),
                fmt_num(s.p25),
                fmt_num(s.p50),
                fmt_num(s.p75),
                fmt_num(s.p100)
            );
            let _ = writeln!(
                o,
                "mean {}  std dev {} ({:.2}% of mean)  span {}",
                fmt_num(s.mean),
                fmt_num(s.std_dev),
                s.std_dev_pct,
                fmt_num(s.span)
            );
            if let Some(t) = &s.trend {
                let what = match t.verdict {
                    "none" => "no significant trend".to_string(),
                    v => format!(
                        "{} trend: getting {v}",
                        if t.sen_slope > 0.0 {
                            "upward"
                        } else {
                            "downward"
                        }
                    ),
                };
                let _ = writeln!(
                    o,
                    "Mann-Kendall over commit medians: {what} (p = {:.3}, Sen's slope {} per commit, {:+.3}%)",
                    t.p_value,
                    fmt_signed(t.sen_slope),
                    t.sen_slope_pct
                );
            }
            if let Some(k) = &s.stake {
                let word = match k.verdict {
                    "better" => "current results are BETTER",
                    "worse" => "current results are worse",
                    _ => "current results equal the stake",
                };
                let _ = writeln!(
                    o,
                    "stake {}: mean {} ({:+.2}%), P50 {} ({:+.2}%); newest median {}: {word}",
                    fmt_num(k.stake),
                    fmt_signed(k.vs_mean),
                    k.vs_mean_pct,
                    fmt_signed(k.vs_p50),
                    k.vs_p50_pct,
                    fmt_num(k.current)
                );
            }
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_names_a_unit_that_is_the_metrics_own_name_once() {
        let cfg = crate::config::parse(
            "[build]\ncommand = \"true\"\n[tests.i]\ncommand = \"./app\"\nmetric = \"instructions\"\n[tests.w]\ncommand = \"./app\"\n",
            std::path::Path::new("/tmp/perfbisect.toml"),
        )
        .unwrap();
        let t = text(cfg.test("i").unwrap(), "", &[], false);
        assert!(t.starts_with("i (instructions, lower is better)"), "{t}");
        assert_eq!(metric_and_unit(cfg.test("w").unwrap()), "wall, s");
    }
}
