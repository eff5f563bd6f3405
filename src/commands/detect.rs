//! `perfbisect detect TEST [RANGE]` and `detect --input FILE.csv`: change points of a series.

use std::io::Write;

use crate::cli::{DetectArgs, Format, Global};
use crate::error::UsageError;
use crate::git::CommitInfo;
use crate::pipeline::history::{History, Scope};
use crate::pipeline::workspace::Workspace;
use crate::report::detect::{write_text, Names, Open, Output, Point};
use crate::stats::{self, changepoint};
use crate::store::Observation;

use super::common::{check_format, locations, verbosity};

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
    // With a range, only its commits' records are read (through the store's index). Of each
    // run only its value and moment are kept: change points need no more, and years of cron
    // rows are millions of runs. A range's old end comes first, as `report` has it: its runs
    // are the level before the range's first commit, so a step at that commit shows here too.
    let history = History::<Observation>::of(&ws, test, Scope::of(args.range.as_deref()))?;
    if let Some(n) = ws.fingerprint_note(test, &history.read) {
        ws.note(&n);
    }
    let (rows, old_end) = (&history.rows, history.old_end);
    let commits: Vec<&CommitInfo> = rows.iter().map(|r| &r.commit).collect();
    if test.deterministic {
        warn_if_uneven(&ws, test, rows);
    }
    // Each real run once, one value per independent moment (runs taken back to back are one
    // look at the machine).
    let d = history.detection_at(args.alpha.unwrap_or(changepoint::Options::default().alpha));
    // `index` stays the position in the range (the old end is not one of its
    // commits, and no step starts at it).
    // Without a range the series holds only the commits with results: the repository says
    // how many between two of them were not measured.
    let between = |a: usize, b: usize| ws.commits_between(commits[a].id, commits[b].id);
    let measured = |a: usize, b: usize| crate::pipeline::rows::measured_between(rows, a, b);
    let names = Names {
        index: &|i| i as i64 - i64::from(old_end),
        commit: &|i| commits.get(i).copied(),
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
            o.measure = measure_command(g, &ws, test, rows, (u.last_before, u.index));
            o
        })
        .collect();
    Ok(Output {
        change_points: d.points.iter().map(|c| Point::new(c, &names)).collect(),
        undecided,
        unit: test.unit(),
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

/// The `run` that tops up the undecided step whose span is rows `(last_before, index]`: from
/// the last build at or before its old end that holds runs to the first at or after `index`,
/// when both have some.
fn measure_command(
    g: &Global,
    ws: &Workspace,
    test: &crate::config::Test,
    rows: &[crate::pipeline::rows::CommitRow<Observation>],
    (last_before, index): (usize, usize),
) -> Option<String> {
    let own = |r: &&crate::pipeline::rows::CommitRow<Observation>| !r.own_values().is_empty();
    // From the span's old end: a step the levels place among a few commits is measured over
    // all of them.
    let before = rows[..=last_before].iter().rev().find(own);
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
