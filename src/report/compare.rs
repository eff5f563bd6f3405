//! What `compare` prints: the two sides' medians and ranges per metric, failed runs, and the
//! verdict with its evidence.

use std::fmt::Write as _;

use serde::Serialize;

use crate::report::find::judge_with_article;
use crate::stats;

use crate::base::text::{count, fmt_num};

/// One side of a comparison: its commit and the summaries of its runs.
#[derive(Serialize)]
pub struct Side {
    pub commit: String,
    pub subject: String,
    pub n: usize,
    pub failed: usize,
    pub metric: Option<stats::Summary>,
    pub wall: Option<stats::Summary>,
    pub user: Option<stats::Summary>,
    pub sys: Option<stats::Summary>,
    pub max_rss: Option<stats::Summary>,
    /// No run gave the metric: `wall`, `user`, `sys` and `max_rss` are those of the failed
    /// runs (the ones that ran: a failed `setup` measures nothing).
    pub times_of_failed_runs: bool,
    /// Why the first failed run failed (the first line of its record).
    pub first_failure: Option<String>,
    /// The side got no more runs after its test failed this many runs in a row.
    pub stopped_after: Option<usize>,
}

/// `compare`'s result, as the text and the JSON say it.
#[derive(Serialize)]
pub struct Comparison {
    pub test: String,
    pub unit: String,
    pub direction: &'static str,
    pub runs: usize,
    pub a: Side,
    pub b: Side,
    /// median(B) / median(A)
    pub ratio: Option<f64>,
    /// 95 % bootstrap interval of the ratio of medians.
    pub ratio_ci: Option<(f64, f64)>,
    pub p_value: Option<f64>,
    /// Relative change of the medians, `(B - A) / |A|`.
    pub rel_change: Option<f64>,
    /// Both sides have zero spread: compared exactly, `p_value` (0 or 1) is no test's result.
    pub deterministic: bool,
    /// Mann-Whitney at the test's alpha and the threshold both say the sides differ.
    pub differs: bool,
    /// Smallest relative change these runs could have seen (80 % power at alpha); 0 for a
    /// deterministic comparison, `null` when too few runs could see any.
    pub min_detectable: Option<f64>,
    /// Whether they could have seen a change of the threshold: a "no difference" means
    /// something only then.
    pub could_see_threshold: Option<bool>,
    /// Runs were doubled while the sides were not told apart (no `--runs`).
    pub adaptive: bool,
    /// Without `--runs`: the most runs a side could get while the sides straddled the
    /// threshold (`max_repeats`, then the budget: one build's time, or `--max-runs`).
    pub budget: Option<usize>,
    /// Not told apart: the runs a side that would show a change of the threshold (80 % of
    /// the time) at this noise; `--max-runs` that many decides.
    pub deciding_runs: Option<usize>,
    /// When the sides differ: the functions whose cost changed from A to B (or
    /// `{"unavailable": why}`), when profiled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<serde_json::Value>,
}

/// `2 %` or `12 units`.
fn threshold_text(test: &crate::config::Test) -> String {
    match test.threshold {
        stats::Threshold::Relative(r) => format!("{} %", fmt_num(r * 100.0)),
        stats::Threshold::Absolute(a) => {
            let u = test.unit();
            format!(
                "{}{}",
                fmt_num(a),
                if u.is_empty() {
                    String::new()
                } else {
                    format!(" {u}")
                }
            )
        }
    }
}

/// The text `compare` prints.
pub fn text(c: &Comparison, test: &crate::config::Test) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}: A = {} {}, B = {} {}; {} interleaved run{} each",
        c.test,
        &c.a.commit[..10],
        c.a.subject,
        &c.b.commit[..10],
        c.b.subject,
        c.runs,
        if c.runs == 1 { "" } else { "s" }
    );
    table(&mut o, c);
    failures(&mut o, c);
    verdict(&mut o, c, test);
    o
}

/// The table of the two sides: the metric, wall, user and sys time, and peak memory when
/// it was measured, each as median [min .. max], with B's median over A's.
fn table(o: &mut String, c: &Comparison) {
    // Each cell in the unit's prefixes, as `find` writes numbers ("166.0 M it/s"); the range
    // repeats the unit only once when both ends share it.
    // Exact values (the metric's row of an exact comparison) keep every digit.
    let cell = |s: Option<stats::Summary>, u: &str, exact: bool| match s {
        Some(s) => {
            let q = |v: f64| super::units::level(v, u, exact);
            let (lo, hi) = (q(s.min), q(s.max));
            let lo = match (lo.split_once(' '), hi.split_once(' ')) {
                (Some((n, a)), Some((_, b))) if a == b => n.to_string(),
                _ => lo,
            };
            format!("{} [{lo} .. {hi}]", q(s.median))
        }
        None => "-".into(),
    };
    let mut rows: Vec<(&str, Option<stats::Summary>, Option<stats::Summary>, &str)> = vec![
        (&c.test, c.a.metric, c.b.metric, &c.unit),
        ("wall", c.a.wall, c.b.wall, "s"),
        ("user", c.a.user, c.b.user, "s"),
        ("sys", c.a.sys, c.b.sys, "s"),
    ];
    // Peak memory is measured only by runs made through the launcher (max-rss tests): for
    // the others there is no number, and no row (a number there would be perfbisect's own).
    if c.a.max_rss.is_some() || c.b.max_rss.is_some() {
        rows.push(("max-rss", c.a.max_rss, c.b.max_rss, "bytes"));
    }
    let cells: Vec<(String, String)> = rows
        .iter()
        .enumerate()
        .map(|(i, (_, a, b, u))| {
            let exact = i == 0 && c.deterministic;
            (cell(*a, u, exact), cell(*b, u, exact))
        })
        .collect();
    let width = cells
        .iter()
        .flat_map(|(a, b)| [a.chars().count(), b.chars().count()])
        .chain([21])
        .max()
        .unwrap_or(21);
    let _ = writeln!(
        o,
        "{:<8} {:>width$} {:>width$} {:>9}",
        "", "A median [min .. max]", "B median [min .. max]", "B/A"
    );
    for ((name, a, b, _), (ca, cb)) in rows.into_iter().zip(cells) {
        let ratio = match (a, b) {
            (Some(a), Some(b)) if a.median != 0.0 => {
                format!("{:.1} %", b.median / a.median * 100.0)
            }
            _ => "-".into(),
        };
        let _ = writeln!(o, "{:<8} {:>width$} {:>width$} {:>9}", name, ca, cb, ratio);
    }
}

/// How many runs failed on each side, and the first failure of each.
fn failures(o: &mut String, c: &Comparison) {
    if c.a.failed + c.b.failed > 0 {
        let _ = writeln!(o, "failed runs: A {}, B {}", c.a.failed, c.b.failed);
        for (name, s) in [("A", &c.a), ("B", &c.b)] {
            let Some(why) = &s.first_failure else {
                continue;
            };
            let mut notes = Vec::new();
            if let Some(k) = s.stopped_after {
                notes.push(format!(
                    "stopped after {k} failed run{} in a row",
                    if k == 1 { "" } else { "s" }
                ));
            }
            if s.times_of_failed_runs {
                notes.push("wall, user, sys and max-rss are of its failed runs".to_string());
            }
            let notes = if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join("; "))
            };
            let _ = writeln!(o, "  {name}: {why}{notes}");
        }
    }
}

/// The verdict with its evidence, or why there is none.
fn verdict(o: &mut String, c: &Comparison, test: &crate::config::Test) {
    match (c.ratio, c.p_value) {
        (Some(r), Some(p)) => {
            // Exact values have no interval to give.
            let ci = c
                .ratio_ci
                .filter(|_| !c.deterministic)
                .map(|(lo, hi)| format!(" (95 % CI {:.1} .. {:.1} %)", lo * 100.0, hi * 100.0))
                .unwrap_or_default();
            let verdict = if c.differs {
                format!(
                    "B differs from A: {} ({} is better)",
                    judge_with_article(test.direction, c.rel_change.unwrap_or(r - 1.0)),
                    c.direction
                )
            } else if c.could_see_threshold == Some(false) || c.min_detectable.is_none() {
                let seen = match c.min_detectable {
                    Some(m) => format!(
                        "{} each show a change reliably (80 % of the time) only from {} %, while the threshold is {}",
                        count(c.runs, "run"),
                        fmt_num(m * 100.0),
                        threshold_text(test)
                    ),
                    None => format!(
                        "{} each {} too few for a rank test to reach alpha {}",
                        count(c.runs, "run"),
                        if c.runs == 1 { "is" } else { "are" },
                        test.alpha
                    ),
                };
                format!(
                    "not told apart: {seen}{}",
                    if c.adaptive {
                        let spent = format!(
                            " (every run of the budget spent: {} a side",
                            c.budget.unwrap_or(c.runs)
                        );
                        match c.deciding_runs {
                            Some(n) => format!(
                                "{spent}; about {n} a side would decide it: `--max-runs {n}`)"
                            ),
                            None => format!("{spent}; the noise is too large here)"),
                        }
                    } else {
                        " (give more --runs, or none to let them grow)".to_string()
                    }
                )
            } else {
                "no difference that passes the test's threshold and alpha".into()
            };
            let spread = |s: &Side| s.metric.as_ref().is_some_and(|m| m.max > m.min);
            let evidence = if c.deterministic && (spread(&c.a) || spread(&c.b)) {
                "exact (a count whose runs spread by less than a tenth of the threshold, as `find` \
                 compares them)"
                    .to_string()
            } else if c.deterministic {
                "exact (no spread on either side)".to_string()
            } else {
                crate::base::text::fmt_p(p)
            };
            let _ = writeln!(
                o,
                "B is at {:.1} % of A{ci}, {evidence}: {verdict}",
                r * 100.0
            );
        }
        _ => {
            let none: Vec<&str> = [("A", &c.a), ("B", &c.b)]
                .iter()
                .filter(|(_, s)| s.n == 0)
                .map(|(n, _)| *n)
                .collect();
            let _ = writeln!(
                o,
                "no comparison: {}",
                match none.as_slice() {
                    [one] => format!("{one} has no successful run"),
                    [] => "too few successful runs to compare".to_string(),
                    _ => "neither side has a successful run".to_string(),
                }
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Side;
    use super::*;

    fn side(commit: &str, vals: &[f64]) -> Side {
        Side {
            commit: commit.repeat(40),
            subject: "s".into(),
            n: vals.len(),
            failed: 0,
            metric: stats::summarize(vals),
            wall: stats::summarize(&[0.0123, 0.0125]),
            user: stats::summarize(&[0.01]),
            sys: stats::summarize(&[0.001]),
            max_rss: stats::summarize(&[13_300_000.0]),
            times_of_failed_runs: false,
            first_failure: None,
            stopped_after: None,
        }
    }

    #[test]
    fn cells_use_the_units_prefixes_as_find_does() {
        let cfg = crate::config::parse(
            "[build]\ncommand = \"true\"\n[tests.speed]\ncommand = \"./app\"\nunit = \"it/s\"\ndirection = \"higher\"\nrepeats = 1\n",
            std::path::Path::new("/tmp/perfbisect.toml"),
        )
        .unwrap();
        let test = cfg.test("speed").unwrap();
        let c = Comparison {
            test: "speed".into(),
            unit: "it/s".into(),
            direction: "higher",
            runs: 1,
            a: side("a", &[165_969_758.0]),
            b: side("b", &[160_000_000.0, 170_200_000.0]),
            ratio: None,
            ratio_ci: None,
            p_value: None,
            rel_change: None,
            deterministic: false,
            differs: false,
            min_detectable: None,
            could_see_threshold: None,
            adaptive: false,
            budget: None,
            deciding_runs: None,
            why: None,
        };
        let t = text(&c, test);
        assert!(t.contains("1 interleaved run each"), "{t}");
        assert!(t.contains("166.0 M it/s [166.0 .. 166.0 M it/s]"), "{t}");
        assert!(t.contains("165.1 M it/s [160.0 .. 170.2 M it/s]"), "{t}");
        assert!(!t.contains("165969758"), "{t}");
        assert!(t.contains("12.40 ms"), "{t}");
        assert!(t.contains("13.30 MB"), "{t}");
        let mut unmeasured = c;
        unmeasured.a.max_rss = None;
        unmeasured.b.max_rss = None;
        let t = text(&unmeasured, test);
        assert!(
            !t.contains("max-rss"),
            "no row for a peak not measured: {t}"
        );
    }
}
