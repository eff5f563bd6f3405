//! `perfbisect show TEST [RANGE]`: stored results per commit and a summary of the range; every
//! sample as CSV or JSON, Apache Otava's CSV, and a plot.

use crate::cli::{Format, Global, ShowArgs};
use crate::config::Test;
use crate::pipeline::history::{History, Scope};
use crate::pipeline::samples::Samples;
use crate::pipeline::workspace::Workspace;
use crate::report::show as view;
use crate::report::{charts, export, plot};

use super::common::{check_format, locations, verbosity};

pub fn show(g: &Global, args: ShowArgs) -> anyhow::Result<()> {
    check_format(
        args.format,
        &[Format::Text, Format::Json, Format::Csv, Format::Otava],
        "show",
    )?;
    let mut ws = Workspace::open(&locations(g), verbosity(g), false)?;
    ws.any_fingerprint = args.any_fingerprint;
    let ws = ws;
    if args.format == Format::Otava {
        return otava(&ws, &args);
    }
    let test = ws.config.test(&args.test)?;
    // With a range, only its commits' records are read (through the store's index). An
    // `A..B` range shows its old end `A` first, as `report` does: `find` measures it.
    // Samples of another fingerprint (the machine before its toolchain or kernel changed):
    // an earlier era, listed apart and compared with nothing here.
    let mut old_end = false;
    let history = match args.range.as_deref() {
        Some(r) => {
            let range = ws.repo.range(r)?;
            let mut commits = Vec::new();
            if let Some(base) = range.base.filter(|_| r.contains("..")) {
                old_end = true;
                commits.push(base);
            }
            commits.extend(range.commits);
            History::with_eras(&ws, test, Scope::Commits(&commits))?
        }
        None => History::with_eras(&ws, test, Scope::Stored)?,
    };
    let (rows, eras, samples) = (&history.rows, &history.eras, &history.read);
    if let Some(path) = &args.plot {
        // Refuse a bad file name before anything is drawn.
        plot::ImageFormat::of(path)?;
        let cps = history.detection().points;
        let scope = args
            .range
            .clone()
            .unwrap_or_else(|| "all commits with results".into());
        let chart = charts::commit_chart(
            test,
            &format!("{}: {}", test.name, charts::abbreviate_hashes(&scope)),
            rows,
            charts::change_point_markers(rows, &cps),
            charts::WIDE,
        );
        plot::write(&chart, path)?;
        ws.note(&format!("plot written to {}", path.display()));
    }
    let out = match args.format {
        Format::Json => match &eras {
            Some(e) => {
                let mut v = export::json_value(test, rows, old_end)?;
                v["eras"] = crate::report::eras::json(e)?;
                crate::report::json::json_pretty(&v)?
            }
            None => export::json(test, rows, old_end)?,
        },
        Format::Csv => export::csv(test, rows, old_end)?,
        _ => {
            let n = rows.len() - usize::from(old_end);
            let s = if n == 1 { "" } else { "s" };
            let scope = match &args.range {
                Some(r) if old_end => {
                    format!("the old end and the {n} commit{s} of {r}, oldest first")
                }
                Some(r) => format!("{n} commit{s} of {r}, oldest first"),
                None => format!(
                    "all {n} commit{s} with results of {}, oldest first (no RANGE given; also those HEAD does not reach)",
                    test.name
                ),
            };
            let eras = eras.as_ref().map(crate::report::eras::text);
            view::text(test, &scope, rows, old_end) + &eras.unwrap_or_default()
        }
    };
    print!("{out}");
    if args.format == Format::Text {
        if let Some(n) = ws.cache.store().stale_note(&test.name, samples.stale) {
            ws.note(&n);
        }
    }
    if let Some(n) = ws.fingerprint_note(test, samples) {
        ws.note(&n);
    }
    Ok(())
}

/// `show TESTS [RANGE] --format otava`: one row per commit with a value of every test.
fn otava(ws: &Workspace, args: &ShowArgs) -> anyhow::Result<()> {
    if args.plot.is_some() {
        crate::usage!("--plot draws one test; leave it out with --format otava");
    }
    let tests: Vec<&Test> = if args.test == "all" {
        ws.config.tests.values().collect()
    } else {
        let mut v = Vec::new();
        for name in args
            .test
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
        {
            let t = ws.config.test(name)?;
            if !v.iter().any(|x: &&Test| x.name == t.name) {
                v.push(t);
            }
        }
        v
    };
    if tests.is_empty() {
        crate::usage!("no test named in `{}`", args.test);
    }
    let in_range = match &args.range {
        Some(r) => Some(ws.range_commits(r)?),
        None => None,
    };
    let ids: Option<Vec<_>> = in_range.as_ref().map(|c| c.iter().map(|c| c.id).collect());
    let samples: Vec<Samples> = tests
        .iter()
        .map(|t| ws.samples_for(t, ids.as_deref()))
        .collect::<anyhow::Result<_>>()?;
    // Without a range: every commit with results of any of the tests, in `show`'s order.
    let commits = match in_range {
        Some(c) => c,
        None => {
            let mut union: Samples = Samples::default();
            for s in &samples {
                for k in s.by_commit.keys() {
                    union.by_commit.entry(*k).or_default();
                }
            }
            ws.commits(None, &union)?
        }
    };
    let medians: Vec<Vec<Option<f64>>> = samples
        .iter()
        .map(|s| {
            commits
                .iter()
                .map(|c| crate::stats::median(&s.values(&c.id)))
                .collect()
        })
        .collect();
    let out = export::otava(&tests, &commits, &medians)?;
    print!("{}", out.csv);
    if out.incomplete > 0 {
        ws.warn(&format!(
            "{} commit{} left out: Otava needs a value of every test in a row, and {} lack{} one",
            out.incomplete,
            if out.incomplete == 1 { "" } else { "s" },
            if out.incomplete == 1 { "it" } else { "they" },
            if out.incomplete == 1 { "s" } else { "" },
        ));
    }
    Ok(())
}
