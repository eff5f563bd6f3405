//! `perfbisect detect TEST [RANGE]` and `detect --input FILE.csv`: change points of a series.

use std::io::Write;

use serde::Serialize;

use crate::cli::{DetectArgs, Format, Global};
use crate::error::UsageError;
use crate::git::CommitInfo;
use crate::pipeline::workspace::Workspace;
use crate::report::units::level_pair;
use crate::stats::{self, changepoint};
use crate::store::Observation;

use super::common::{check_format, locations, verbosity};

#[derive(Serialize)]
struct Point {
    index: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<String>,
    before: f64,
    after: f64,
    rel_change: f64,
    p_value: f64,
    /// The test `p_value` comes from ("exact" for a deterministic step).
    test: stats::step::StepTest,
    /// An exact change of a noiseless series: `p_value` is no test's result.
    deterministic: bool,
    /// 95 % interval of `rel_change` when runs taken side by side across the step gave it.
    #[serde(skip_serializing_if = "Option::is_none")]
    interval: Option<[f64; 2]>,
    /// Windows of time whose side-by-side runs gave `before`, `after` and `rel_change` (0:
    /// the stored runs' levels next to the step).
    windows: usize,
    /// Where the step may lie: after the last commit measured at the old level, up to
    /// `index` (the first measured at the new one).
    span: Span,
}

/// The commits a step between measured commits may lie on: after `last_old_index` (the last
/// commit measured at the old level), up to the step's `index`; `unmeasured` commits between
/// were not measured (0: the step is at its commit).
#[derive(Serialize)]
struct Span {
    last_old_index: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_old_commit: Option<String>,
    unmeasured: usize,
    /// Commits between that were measured, on machine states that place them at neither level.
    #[serde(skip_serializing_if = "crate::report::steps::is_zero")]
    measured: usize,
}

/// How [`Point`]s and [`Open`]s name positions of the series: the index (CSV) or the commit.
struct Names<'a> {
    /// Each position's index as printed.
    index: &'a dyn Fn(usize) -> i64,
    /// Each position's commit, where the series is a store's.
    commit: &'a dyn Fn(usize) -> Option<&'a CommitInfo>,
    /// The commits not measured between two positions, where the series holds only the
    /// measured ones (every commit with results): the repository's count. `None`: the
    /// positions (or indices) between.
    between: Option<&'a dyn Fn(usize, usize) -> Option<usize>>,
    /// The positions between two that hold results (commits measured on machine states that
    /// place them at neither level); `None`: none (a CSV's series).
    measured: Option<&'a dyn Fn(usize, usize) -> usize>,
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
    fn new(c: &stats::ChangePoint, names: &Names<'_>) -> Point {
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
struct Open {
    index: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<String>,
    before: f64,
    after: f64,
    rel_change: f64,
    p_value: f64,
    /// Independent runs on each side, and the runs a side the test needs.
    runs: [usize; 2],
    runs_needed: usize,
    /// The command that measures them (`run` tops up both sides of an undecided step).
    #[serde(skip_serializing_if = "Option::is_none")]
    measure: Option<String>,
    /// What leaves it undecided: `few-runs`, `measured-apart` (no window of time holds runs of
    /// both sides: the machine's state may explain the move), `one-run` (a side stands on one
    /// run).
    why: stats::changepoint::Reason,
    /// Where the step may lie, as a change point's.
    span: Span,
    /// Why it is undecided, in words.
    #[serde(skip)]
    reason: String,
}

impl Open {
    fn new(u: &stats::Undecided, names: &Names<'_>) -> Open {
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

#[derive(Serialize)]
struct Output {
    change_points: Vec<Point>,
    /// Steps the runs show but are too few to decide (src/guide/noise.md: "Few runs").
    undecided: Vec<Open>,
    /// The test's unit, for the text (levels at the scale every view picks); empty for a
    /// file's series.
    #[serde(skip)]
    unit: String,
}

pub fn detect(g: &Global, args: DetectArgs) -> anyhow::Result<()> {
    check_format(args.format, &[Format::Text, Format::Json], "detect")?;
    if let Some(a) = args.alpha {
        if !(a > 0.0 && a < 1.0) {
            crate::usage!("--alpha {a}: must be between 0 and 1");
        }
    }
    let out = match &args.input {
        Some(path) => from_csv(path, args.alpha)?,
        None => from_store(g, &args)?,
    };
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    match args.format {
        Format::Json => writeln!(w, "{}", crate::report::json::json_line(&out)?)?,
        _ => write_text(&mut w, &out)?,
    }
    Ok(())
}

/// The change points of the series in the CSV file at `path` (`--input`), indexed as the
/// file indexes them.
fn from_csv(path: &std::path::Path, alpha: Option<f64>) -> anyhow::Result<Output> {
    let file = std::fs::File::open(path)
        .map_err(|e| UsageError::err(format!("cannot read {}: {e}", path.display())))?;
    let series = stats::read_series_csv(std::io::BufReader::new(file))
        .map_err(|e| UsageError::err(format!("{}: {e}", path.display())))?;
    let mut opts = changepoint::Options::default();
    if let Some(a) = alpha {
        opts.alpha = a;
    }
    let d = stats::detect_all(&series.samples, &opts);
    let names = Names {
        index: &|i| series.index[i],
        commit: &|_| None,
        between: None,
        measured: None,
    };
    Ok(Output {
        change_points: d.points.iter().map(|c| Point::new(c, &names)).collect(),
        undecided: d.undecided.iter().map(|u| Open::new(u, &names)).collect(),
        unit: String::new(),
    })
}

/// The change points of a test's stored runs, over its range or every commit the store
/// holds, each undecided step with the command that would decide it.
fn from_store(g: &Global, args: &DetectArgs) -> anyhow::Result<Output> {
    let name = args
        .test
        .as_deref()
        .expect("clap requires TEST without --input");
    let mut ws = Workspace::open(&locations(g), verbosity(g), false)?;
    ws.any_fingerprint = args.any_fingerprint;
    let ws = ws;
    let test = ws.config.test(name)?;
    let (mut samples, commits, old_end) = series(&ws, test, args.range.as_deref())?;
    if let Some(n) = ws.fingerprint_note(test, &samples) {
        ws.note(&n);
    }
    // Each real run once, one value per independent moment (runs taken back to back
    // are one look at the machine): see `show::change_points`.
    let rows = crate::pipeline::history::take_rows(&ws, &mut samples, commits.clone());
    if test.deterministic {
        warn_if_uneven(&ws, test, &rows);
    }
    let opts = changepoint::Options {
        alpha: args.alpha.unwrap_or(changepoint::Options::default().alpha),
        threshold: test.threshold,
        deterministic: test.deterministic,
        counted: crate::pipeline::history::pair_params(test).counted,
    };
    let d = crate::pipeline::rows::detection(
        &rows,
        &opts,
        &crate::pipeline::history::pair_params(test),
    );
    // `index` stays the position in the range (the old end is not one of its
    // commits, and no step starts at it).
    // Without a range the series holds only the commits with results: the repository says
    // how many between two of them were not measured.
    let between = |a: usize, b: usize| ws.commits_between(commits[a].id, commits[b].id);
    let measured = |a: usize, b: usize| crate::pipeline::rows::measured_between(&rows, a, b);
    let names = Names {
        index: &|i| i as i64 - i64::from(old_end),
        commit: &|i| commits.get(i),
        between: args
            .range
            .is_none()
            .then_some(&between as &dyn Fn(usize, usize) -> Option<usize>),
        measured: Some(&measured),
    };
    let undecided = d
        .undecided
        .iter()
        .map(|u| {
            let mut o = Open::new(u, &names);
            o.measure = measure_command(g, &ws, test, &rows, u.index);
            o
        })
        .collect();
    Ok(Output {
        change_points: d.points.iter().map(|c| Point::new(c, &names)).collect(),
        undecided,
        unit: test.unit(),
    })
}

/// The stored runs of `test` over `range` (or every commit), the commits in order, and
/// whether the first of them is the range's old end.
fn series(
    ws: &Workspace,
    test: &crate::config::Test,
    range: Option<&str>,
) -> anyhow::Result<(
    crate::pipeline::samples::Samples<Observation>,
    Vec<CommitInfo>,
    bool,
)> {
    // With a range, only its commits' records are read (through the store's index).
    // Of each run only its value and moment are kept: change points need no more, and
    // years of cron rows are millions of runs.
    // A range's old end comes first, as `report` has it: its runs are the level
    // before the range's first commit, so a step at that commit shows here too.
    Ok(match range {
        Some(r) => {
            let (commits, old_end) = ws.chain_commits(r)?;
            let ids: Vec<_> = commits.iter().map(|c| c.id).collect();
            (
                ws.samples_as::<Observation>(test, Some(&ids))?,
                commits,
                old_end,
            )
        }
        None => {
            let samples = ws.samples_as::<Observation>(test, None)?;
            let commits = ws.commits(None, &samples)?;
            (samples, commits, false)
        }
    })
}

/// Warns when runs of one commit of a test declared deterministic differ.
///
/// A deterministic test: every change of at least the threshold is a change point at its
/// commit, with the values on either side. Runs of one commit that differ disprove the
/// declaration; the series is then analysed as noisy, as `find` does.
fn warn_if_uneven(
    ws: &Workspace,
    test: &crate::config::Test,
    rows: &[crate::pipeline::rows::CommitRow<Observation>],
) {
    if let Some(r) = crate::pipeline::history::uneven(test, rows) {
        ws.warn(&format!(
            "runs of {} differ, so test `{}` is not deterministic as declared; change points are detected as for a noisy test",
            r.commit.short(),
            test.name
        ));
    }
}

/// The `run` that tops up both sides of the undecided step at row `index`: over the builds
/// on either side that hold the runs, when both have some.
fn measure_command(
    g: &Global,
    ws: &Workspace,
    test: &crate::config::Test,
    rows: &[crate::pipeline::rows::CommitRow<Observation>],
    index: usize,
) -> Option<String> {
    let own = |r: &&crate::pipeline::rows::CommitRow<Observation>| !r.own_values().is_empty();
    let before = rows[..index].iter().rev().find(own);
    let after = rows[index..].iter().find(own);
    if let (Some(b), Some(a)) = (before, after) {
        Some(format!(
            "perfbisect {}run {} {}..{}",
            super::common::invocation(g, ws),
            test.name,
            b.commit.short(),
            a.commit.short()
        ))
    } else {
        None
    }
}

/// The text output: one line per change point, then one per undecided step.
fn write_text(w: &mut impl Write, out: &Output) -> anyhow::Result<()> {
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
