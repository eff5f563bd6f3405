//! What `show` prints: per commit rows and a range summary like curl's performance page.

use std::fmt::Write as _;

use serde::Serialize;

use crate::config::{Direction, Test};
use crate::pipeline::rows::{CommitRow, Status};
use crate::stats::{self, Summary};

use crate::base::text::{fmt_num, fmt_signed};

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
    /// Sen's slope: change per measured commit, in the metric's unit.
    pub sen_slope: f64,
    /// Sen's slope as % of the median, per measured commit.
    pub sen_slope_pct: f64,
    /// The measured commits whose medians the test saw (commits without runs of their own
    /// are left out, not counted as positions: every view of the same commits says the same).
    pub commits: usize,
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
    // Medians of each commit's own runs: copies of one build's runs are no trend. Commits
    // without runs are no positions: `show` over a range (which lists them) and the site
    // (which holds only commits with results) see the same series.
    // Each median with the named machine most of its runs were measured on: a machine
    // handed over is no trend (each machine's series is read on its own).
    let (medians, machines): (Vec<f64>, Vec<u64>) = rows
        .iter()
        .filter_map(|r| {
            let m = stats::median(&r.own_values()).filter(|m| m.is_finite())?;
            Some((m, main_machine(r.own_records())))
        })
        .unzip();
    let trend = stats::mann_kendall_by(&medians, &machines, TREND_ALPHA)
        .filter(|_| medians.len() >= 3)
        .map(|t| TrendSummary {
            commits: medians.len(),
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

/// The machine most of `records`' runs were measured on (the first of equals), 0 for none.
fn main_machine(records: &[crate::store::Sample]) -> u64 {
    let mut count: Vec<(u64, usize)> = Vec::new();
    for (_, _, m) in crate::store::moments(records) {
        match count.iter_mut().find(|c| c.0 == m) {
            Some(c) => c.1 += 1,
            None => count.push((m, 1)),
        }
    }
    count
        .iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map_or(0, |c| c.0)
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
    // The benchmark code's version of the numbers last shown (another tool's, asv's).
    let mut version: Option<&str> = None;
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
        marks.extend(super::provenance::mark(r.own_records()));
        if let Some(v) = super::provenance::version(r.own_records()) {
            if version.is_some_and(|old| old != v) {
                marks.push(format!(
                    "benchmark code changed here ({} to {v}): a step here is the benchmark's",
                    version.unwrap_or_default()
                ));
            }
            version = Some(v);
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
            if let Some(p) = super::provenance::Provenance::of(rows).sentence() {
                let _ = writeln!(o, "{p}");
            }
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
            trend_and_stake(&mut o, &s);
        }
    }
    o
}

/// The trend and stake lines of `show`'s text, where the summary has them.
fn trend_and_stake(o: &mut String, s: &RangeSummary) {
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
            "Mann-Kendall over the medians of {} measured commits: {what} (p = {:.3}, Sen's slope {} per measured commit, {:+.3}%)",
            t.commits,
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
