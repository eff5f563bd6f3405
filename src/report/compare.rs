//! What `compare` prints: the two sides' medians and ranges per metric, failed runs, and the
//! verdict with its evidence.

use crate::comparison::Comparison;
use crate::report::find::judge_with_article;
use crate::stats;

use super::text::{count, fmt_num};

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
    use std::fmt::Write as _;
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
    let _ = writeln!(
        o,
        "{:<8} {:>34} {:>34} {:>9}",
        "", "A median [min .. max]", "B median [min .. max]", "B/A"
    );
    let unit = |u: &str| {
        if u.is_empty() {
            String::new()
        } else {
            format!(" {u}")
        }
    };
    let rows: [(&str, Option<stats::Summary>, Option<stats::Summary>, String); 5] = [
        (&c.test, c.a.metric, c.b.metric, unit(&c.unit)),
        ("wall", c.a.wall, c.b.wall, " s".into()),
        ("user", c.a.user, c.b.user, " s".into()),
        ("sys", c.a.sys, c.b.sys, " s".into()),
        ("max-rss", c.a.max_rss, c.b.max_rss, " B".into()),
    ];
    for (name, a, b, u) in rows {
        let cell = |s: Option<stats::Summary>| match s {
            Some(s) => format!(
                "{}{u} [{} .. {}]",
                fmt_num(s.median),
                fmt_num(s.min),
                fmt_num(s.max)
            ),
            None => "-".into(),
        };
        let ratio = match (a, b) {
            (Some(a), Some(b)) if a.median != 0.0 => {
                format!("{:.1} %", b.median / a.median * 100.0)
            }
            _ => "-".into(),
        };
        let _ = writeln!(
            o,
            "{:<8} {:>34} {:>34} {:>9}",
            name,
            cell(a),
            cell(b),
            ratio
        );
    }
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
    match (c.ratio, c.p_value) {
        (Some(r), Some(p)) => {
            let ci = c
                .ratio_ci
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
                        "{} each could only have seen a change of {} % or more, and the threshold is {}",
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
                        " (max_repeats reached; the noise is too large here)"
                    } else {
                        " (give more --runs, or none to let them grow)"
                    }
                )
            } else {
                "no difference that passes the test's threshold and alpha".into()
            };
            let evidence = if c.deterministic {
                "deterministic (no spread on either side)".to_string()
            } else {
                format!("p = {p:.2e}")
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
    o
}
