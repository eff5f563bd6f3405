//! How reports show why the culprit moved ([`crate::pipeline::profile::Why`]): the functions whose
//! instructions changed most, in text, JSON and Markdown.

use std::fmt::Write as _;

use crate::pipeline::profile::{Change, Why};

use super::md;
use crate::base::text::fmt_rel;

/// Instructions, short: 1.23 M, 45.6 k.
fn count(n: i64) -> String {
    let a = n.unsigned_abs() as f64;
    let sign = if n < 0 { "-" } else { "" };
    if a >= 1e9 {
        format!("{sign}{:.2} G", a / 1e9)
    } else if a >= 1e6 {
        format!("{sign}{:.2} M", a / 1e6)
    } else if a >= 1e3 {
        format!("{sign}{:.1} k", a / 1e3)
    } else {
        format!("{sign}{a}")
    }
}

fn signed(n: i64) -> String {
    if n > 0 {
        format!("+{}", count(n))
    } else {
        count(n)
    }
}

fn place(c: &Change) -> String {
    match (c.file.as_str(), c.line) {
        ("???" | "", _) => String::new(),
        (f, Some(l)) => format!("{f}:{l}"),
        (f, None) => f.to_string(),
    }
}

/// The function's own change, `, +20.0 % of its own`; nothing for a new function.
fn own(c: &Change) -> String {
    c.pct_of_function
        .map(|p| format!(", {} of its own", fmt_rel(p / 100.0, 1)))
        .unwrap_or_default()
}

/// What share of the run's change the list accounts for: the sum of the listed changes, signs
/// kept, over the change of the run's total.
fn explained(w: &Why) -> String {
    let step = w.total_after as i64 - w.total_before as i64;
    let sum: i64 = w.changes.iter().map(|c| c.delta).sum();
    match w.explained {
        Some(e) if w.changes.len() == 1 => format!(
            "the function listed accounts for {:.0} % of the run's change ({} of {})",
            e * 100.0,
            signed(sum),
            signed(step)
        ),
        Some(e) => format!(
            "the {} functions listed add up to {:.0} % of the run's change (their changes \
             summed with their signs, {}, over the run's {})",
            w.changes.len(),
            e * 100.0,
            signed(sum),
            signed(step)
        ),
        None => "the run's total did not change".to_string(),
    }
}

fn header(w: &Why) -> String {
    let short = |s: &str| s.chars().take(10).collect::<String>();
    format!(
        "{} → {} instructions under Cachegrind, one run each of {} and {}",
        count(w.total_before as i64),
        count(w.total_after as i64),
        short(&w.parent),
        short(&w.culprit)
    )
}

/// The run's instructions moved by less than a thousandth: the functions' small moves are
/// noise of the run, not where the step is (a step in a printed number or in time spent
/// waiting does not show in the code's work).
pub(crate) fn flat(w: &Why) -> bool {
    let (b, a) = (w.total_before as f64, w.total_after as f64);
    b > 0.0 && ((a - b) / b).abs() < 1e-3
}

/// What every view says of a step the instructions did not move.
pub(crate) fn flat_line(w: &Why) -> String {
    format!(
        "the instructions did not move ({}): the step is not in the work the code does",
        header(w)
    )
}

/// Lines for the terminal, after the culprit's.
pub fn text(why: &Result<Why, String>) -> String {
    let mut o = String::new();
    match why {
        Err(e) => {
            let _ = writeln!(o, "why: not profiled: {}", e.lines().next().unwrap_or(e));
        }
        Ok(w) if flat(w) => {
            let _ = writeln!(o, "why: {}", flat_line(w));
        }
        Ok(w) if w.changes.is_empty() => {
            let _ = writeln!(o, "why: no function's instructions changed ({})", header(w));
        }
        Ok(w) => {
            let _ = writeln!(
                o,
                "why: the functions whose cost changed most ({}):",
                header(w)
            );
            for c in &w.changes {
                let _ = writeln!(
                    o,
                    "  {:>10}  {:>9}  {}  {}  ({} → {}{})",
                    signed(c.delta),
                    fmt_rel(c.pct_of_total / 100.0, 2),
                    c.function,
                    place(c),
                    count(c.before as i64),
                    count(c.after as i64),
                    own(c)
                );
            }
            let _ = writeln!(
                o,
                "  {}; profiles (cg_annotate, cg_diff): {} and {}",
                explained(w),
                w.parent_profile,
                w.culprit_profile
            );
        }
    }
    o
}

/// The JSON value of `why`: the profile's answer, or `{"unavailable": reason}`.
pub fn json(why: &Result<Why, String>) -> serde_json::Value {
    match why {
        Ok(w) => serde_json::to_value(w).unwrap_or(serde_json::Value::Null),
        Err(e) => serde_json::json!({ "unavailable": e }),
    }
}

/// A compact table for a bug tracker (function names in code spans).
pub fn markdown(why: &Result<Why, String>) -> String {
    let mut o = String::new();
    match why {
        Err(e) => {
            let _ = writeln!(
                o,
                "Not profiled: {}\n",
                md::text(e.lines().next().unwrap_or(e))
            );
        }
        Ok(w) if flat(w) => {
            let _ = writeln!(o, "**Why**: {}.\n", md::text(&flat_line(w)));
        }
        Ok(w) if w.changes.is_empty() => {
            let _ = writeln!(
                o,
                "No function's instructions changed ({}).\n",
                md::text(&header(w))
            );
        }
        Ok(w) => {
            let _ = writeln!(
                o,
                "**Why**: the functions whose cost changed most ({}):\n",
                md::text(&header(w))
            );
            let _ = writeln!(
                o,
                "| function | where | parent | culprit | change | of the total |\n|---|---|---:|---:|---:|---:|"
            );
            for c in &w.changes {
                let at = place(c);
                let cells = [
                    md::code(&c.function),
                    if at.is_empty() {
                        String::new()
                    } else {
                        md::code(&at)
                    },
                    count(c.before as i64),
                    count(c.after as i64),
                    format!(
                        "{}{}",
                        signed(c.delta),
                        c.pct_of_function
                            .map(|p| format!(" ({})", fmt_rel(p / 100.0, 1)))
                            .unwrap_or_default()
                    ),
                    fmt_rel(c.pct_of_total / 100.0, 2),
                ];
                let _ = writeln!(o, "{}", md::row(&cells));
            }
            let _ = writeln!(o, "\n{}.\n", md::text(&explained(w)));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_beyond_a_thousand_percent_read_as_ratios() {
        assert_eq!(fmt_rel(0.102, 1), "+10.2 %");
        assert_eq!(fmt_rel(-0.5, 2), "-50.00 %");
        assert_eq!(fmt_rel(9.99, 1), "+999.0 %");
        assert_eq!(fmt_rel(19.0, 1), "×20");
        // 9 → 180 M instructions: a function's own cost.
        assert_eq!(fmt_rel(180e6 / 9.0 - 1.0, 1), "×2.0e7");
        assert_eq!(fmt_rel(11.25, 1), "×12.3");
    }

    fn why(before: u64, after: u64) -> Why {
        Why {
            parent: "a".repeat(40),
            culprit: "b".repeat(40),
            total_before: before,
            total_after: after,
            changes: vec![Change {
                function: "hack_digit".into(),
                file: "printf_fp.c".into(),
                line: Some(170),
                before: 510,
                after: 562,
                delta: 52,
                pct_of_total: 0.0,
                pct_of_function: Some(10.2),
            }],
            explained: Some(0.99),
            parent_profile: "p".into(),
            culprit_profile: "c".into(),
        }
    }

    #[test]
    fn a_run_whose_instructions_did_not_move_lists_no_functions() {
        let t = text(&Ok(why(63_320_000, 63_320_200)));
        assert!(
            t.contains("did not move") && !t.contains("hack_digit"),
            "{t}"
        );
        let t = text(&Ok(why(1_000_000, 1_200_000)));
        assert!(
            t.contains("hack_digit") && t.contains("+10.2 % of its own"),
            "{t}"
        );
        let m = markdown(&Ok(why(1_000_000, 1_200_000)));
        assert!(m.contains("| `hack_digit` | `printf_fp.c:170` |"), "{m}");
        assert!(text(&Err("Valgrind is not installed".into())).contains("not profiled"));
    }

    #[test]
    fn the_share_is_said_as_the_signed_sum_over_the_runs_change() {
        let mut w = why(1_000_000, 1_010_000);
        let mut cheaper = w.changes[0].clone();
        cheaper.function = "cheaper".into();
        cheaper.delta = -2_600;
        w.changes[0].delta = 12_500;
        w.changes.push(cheaper);
        w.explained = Some(0.99);
        let t = text(&Ok(w));
        assert!(
            t.contains(
                "the 2 functions listed add up to 99 % of the run's change (their changes summed \
                 with their signs, +9.9 k, over the run's +10.0 k)"
            ),
            "{t}"
        );
    }
}
