//! What `detect` says of a series: its change points and undecided steps, each named by its
//! commit (or a CSV's index) with its span, as JSON and as text.

use std::io::Write;

use serde::Serialize;

use crate::git::CommitInfo;
use crate::report::units::level_pair;
use crate::stats;

/// A decided change point as `detect` prints it (JSON: one of `change_points`).
#[derive(Serialize)]
pub struct Point {
    pub index: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    pub before: f64,
    pub after: f64,
    pub rel_change: f64,
    pub p_value: f64,
    /// The test `p_value` comes from ("exact" for a deterministic step).
    pub test: stats::step::StepTest,
    /// An exact change of a noiseless series: `p_value` is no test's result.
    pub deterministic: bool,
    /// 95 % interval of `rel_change` when runs taken side by side across the step gave it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<[f64; 2]>,
    /// Windows of time whose side-by-side runs gave `before`, `after` and `rel_change` (0:
    /// the stored runs' levels next to the step).
    pub windows: usize,
    /// Where the step may lie: after the last commit measured at the old level, up to
    /// `index` (the first measured at the new one).
    pub span: Span,
}

/// The commits a step between measured commits may lie on: after `last_old_index` (the last
/// commit measured at the old level), up to the step's `index`; `unmeasured` commits between
/// were not measured (0: the step is at its commit).
#[derive(Serialize)]
pub struct Span {
    pub last_old_index: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_old_commit: Option<String>,
    pub unmeasured: usize,
    /// Commits between that were measured, on machine states that place them at neither level.
    #[serde(skip_serializing_if = "crate::report::steps::is_zero")]
    pub measured: usize,
}

/// How [`Point`]s and [`Open`]s name positions of the series: the index (CSV) or the commit.
pub struct Names<'a> {
    /// Each position's index as printed.
    pub index: &'a dyn Fn(usize) -> i64,
    /// Each position's commit, where the series is a store's.
    pub commit: &'a dyn Fn(usize) -> Option<&'a CommitInfo>,
    /// The commits not measured between two positions, where the series holds only the
    /// measured ones (every commit with results): the repository's count. `None`: the
    /// positions (or indices) between.
    pub between: Option<&'a dyn Fn(usize, usize) -> Option<usize>>,
    /// The positions between two that hold results (commits measured on machine states that
    /// place them at neither level); `None`: none (a CSV's series).
    pub measured: Option<&'a dyn Fn(usize, usize) -> usize>,
}

impl Names<'_> {
    fn span(&self, last: usize, first: usize) -> Span {
        let (a, b) = ((self.index)(last), (self.index)(first));
        let measured = self.measured.map_or(0, |m| m(last, first));
        let between = match self.between {
            Some(between) => between(last, first).unwrap_or(0),
            None => usize::try_from(b - a - 1).unwrap_or(0),
        };
        Span {
            last_old_index: a,
            last_old_commit: (self.commit)(last).map(|k| k.id.to_string()),
            unmeasured: between.saturating_sub(measured),
            measured,
        }
    }
}

impl Point {
    /// The change point `c` as `names` name its positions.
    pub fn new(c: &stats::ChangePoint, names: &Names<'_>) -> Point {
        let commit = (names.commit)(c.index);
        Point {
            span: names.span(c.last_before, c.index),
            index: (names.index)(c.index),
            commit: commit.map(|k| k.id.to_string()),
            subject: commit.map(|k| k.subject.clone()),
            before: c.before,
            after: c.after,
            rel_change: c.rel_change,
            p_value: c.p_value,
            test: c.test,
            deterministic: c.deterministic,
            interval: c.interval.map(|(lo, hi)| [lo, hi]),
            windows: c.windows,
        }
    }
}

/// A step too few runs leave undecided, and what would decide it.
#[derive(Serialize)]
pub struct Open {
    pub index: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    pub before: f64,
    pub after: f64,
    pub rel_change: f64,
    pub p_value: f64,
    /// Independent runs on each side, and the runs a side the test needs.
    pub runs: [usize; 2],
    pub runs_needed: usize,
    /// The command that measures them (`run` tops up both sides of an undecided step).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measure: Option<String>,
    /// What leaves it undecided: `few-runs`, `measured-apart` (no window of time holds runs of
    /// both sides: the machine's state may explain the move), `machines`, `one-run` (a side
    /// stands on one run), `side-by-side`, `nights` (the machine's nights contradict the runs
    /// taken side by side).
    pub why: stats::changepoint::Reason,
    /// Where the step may lie, as a change point's.
    pub span: Span,
    /// Why it is undecided, in words.
    #[serde(skip)]
    pub reason: String,
}

impl Open {
    /// The undecided step `u` as `names` name its positions (no command to measure it yet).
    pub fn new(u: &stats::Undecided, names: &Names<'_>) -> Open {
        let commit = (names.commit)(u.index);
        Open {
            reason: crate::report::steps::undecided_reason(u),
            why: u.why,
            span: names.span(u.last_before, u.index),
            index: (names.index)(u.index),
            commit: commit.map(|k| k.id.to_string()),
            subject: commit.map(|k| k.subject.clone()),
            before: u.before,
            after: u.after,
            rel_change: u.rel_change,
            p_value: u.p_value,
            runs: [u.runs.0, u.runs.1],
            runs_needed: u.runs_needed,
            measure: None,
        }
    }
}

/// What `detect` prints: its decided and undecided steps.
#[derive(Serialize)]
pub struct Output {
    pub change_points: Vec<Point>,
    /// Steps the runs show but are too few to decide (src/guide/noise.md: "Few runs").
    pub undecided: Vec<Open>,
    /// The test's unit, for the text (levels at the scale every view picks); empty for a
    /// file's series.
    #[serde(skip)]
    pub unit: String,
}

/// The text output: one line per change point, then one per undecided step.
pub fn write_text(w: &mut impl Write, out: &Output) -> anyhow::Result<()> {
    if out.change_points.is_empty() {
        writeln!(
            w,
            "no change points{}",
            if out.undecided.is_empty() {
                ""
            } else {
                " decided"
            }
        )?;
    }
    for p in &out.change_points {
        let at = name(p.index, p.commit.as_deref(), p.subject.as_deref());
        // An exact change across commits not measured: exact between the measured commits,
        // and of this commit's own step only the share it may have.
        let across = match (p.deterministic, p.span.unmeasured, p.interval) {
            (true, n, Some([lo, hi])) if n > 0 => {
                Some(crate::report::steps::exact_across(n, (lo, hi)))
            }
            _ => None,
        };
        let evidence = if let Some(a) = &across {
            a.clone()
        } else if p.deterministic {
            "exact".to_string()
        } else {
            format!(
                "{} ({})",
                crate::base::text::fmt_p(p.p_value),
                p.test.name()
            )
        };
        let basis = match (p.windows, p.interval) {
            _ if across.is_some() => String::new(),
            (0, _) => String::new(),
            (k, iv) => format!(
                "; {}{}",
                iv.filter(|[lo, hi]| lo != hi)
                    .map(|[lo, hi]| format!(
                        "95 % interval {:+.2} % to {:+.2} %, ",
                        lo * 100.0,
                        hi * 100.0
                    ))
                    .unwrap_or_default(),
                // Over several windows the new level is the old moved by the change
                // estimated window by window: an estimate, named as one.
                if k > 1 {
                    format!(
                        "the old level the median of the runs taken side by side across it, the \
                         new window-adjusted (the change estimated window by window over {k} \
                         windows of time)"
                    )
                } else {
                    "medians of the runs taken side by side across it".to_string()
                }
            ),
        };
        let (before, after) = level_pair(p.before, p.after, &out.unit, p.deterministic);
        writeln!(
            w,
            "{at}: {before} -> {after} ({}), {evidence}{basis}{}",
            crate::base::text::fmt_rel(p.rel_change, 2),
            span_text(&p.span),
        )?;
    }
    for u in &out.undecided {
        let at = name(u.index, u.commit.as_deref(), u.subject.as_deref());
        let measure = u
            .measure
            .as_ref()
            .map(|m| format!(" (`{m}` measures them)"))
            .unwrap_or_default();
        let why = format!("{}{measure}", u.reason);
        let (before, after) = level_pair(u.before, u.after, &out.unit, false);
        writeln!(
            w,
            "undecided: {at}: {before} -> {after} ({}), {why}{}",
            crate::base::text::fmt_rel(u.rel_change, 2),
            span_text(&u.span),
        )?;
    }
    Ok(())
}

/// A position as the text names it: its commit and subject, else its index.
fn name(index: i64, commit: Option<&str>, subject: Option<&str>) -> String {
    match (commit, subject) {
        (Some(c), Some(s)) => format!("{} {s}", &c[..10.min(c.len())]),
        _ => format!("index {index}"),
    }
}

/// What the text says of a step's span ([`crate::report::steps::span_clause`]).
fn span_text(s: &Span) -> String {
    let last = (s.last_old_commit.as_deref(), s.last_old_index);
    crate::report::steps::span_clause(last, s.unmeasured, s.measured)
}
