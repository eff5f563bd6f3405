//! `perfbisect import FILE [--format csv|json]`: take in results measured elsewhere (a cron
//! job's rounds, another cache's export); `import --from TOOL PATH [--list]`: another tool's
//! history. The domain is [`crate::import`]; this says what it did.

use crate::cli::{Global, ImportArgs, ImportFormat, ImportFrom};
use crate::import::foreign::{self, Tool};
use crate::import::{Format, Outcome, Report};
use crate::pipeline::workspace::Workspace;

use super::common::{locations, verbosity};

pub fn import(g: &Global, args: ImportArgs) -> anyhow::Result<()> {
    if let Some(from) = args.from {
        return import_foreign(g, &args, from);
    }
    let ws = Workspace::open(&locations(g), verbosity(g), true)?;
    let format = args.format.map(|f| match f {
        ImportFormat::Csv => Format::Csv,
        ImportFormat::Json => Format::Json,
    });
    let verbose = ws.verbosity.verbose > 0;
    let out = crate::import::import(&ws, &args.file, format, verbose)?;
    let file = crate::base::paths::display_path(&args.file);
    print_problems(&ws, &file, &out);
    println!("{}", summary(&file, &out));
    if out.imported + out.already + out.report.failed_runs == 0 {
        anyhow::bail!("nothing in {file} could be imported (every row was skipped)");
    }
    Ok(())
}

fn print_problems(ws: &Workspace, file: &str, out: &Outcome) {
    let report = &out.report;
    // The report keeps the first LISTED problems, or all of them with -v.
    for (place, _, why) in &report.problems {
        ws.note(&format!("{}: skipped: {why}", place.after(file)));
    }
    let skipped = report.skipped_rows();
    if skipped > report.listed {
        ws.note(&format!(
            "perfbisect: ... and {} more skipped rows (-v lists them all)",
            skipped - report.listed
        ));
    }
}

/// `import --from TOOL PATH`: list the history, or take it in.
fn import_foreign(g: &Global, args: &ImportArgs, from: ImportFrom) -> anyhow::Result<()> {
    let tool = match from {
        ImportFrom::BenchmarkAction => Tool::BenchmarkAction,
        ImportFrom::Asv => Tool::Asv,
        ImportFrom::PytestBenchmark => Tool::PytestBenchmark,
        ImportFrom::Bmf => Tool::Bmf,
        ImportFrom::Hyperfine => Tool::Hyperfine,
    };
    let opts = foreign::Options {
        machine: args.machine.clone(),
        env: args.env.clone(),
        suite: args.suite.clone(),
        samples: args.samples,
        field: args.field.clone(),
        dirty: args.dirty,
        commit: args.commit.clone(),
        commit_param: args.commit_param.clone(),
        timestamp: args.timestamp.clone(),
        git_history: args.git_history.clone(),
    };
    let file = match &opts.git_history {
        Some(branch) => format!("{branch}:{}", args.file.display()),
        None => crate::base::paths::display_path(&args.file),
    };
    if args.list {
        // Nothing is written: the repository (for commits a file does not name, or a
        // branch's log) and the config (which test takes what) are used where they are.
        let repo = crate::git::Repo::open(g.repo.as_deref());
        let repo = match (repo, opts.git_history.is_some()) {
            (Ok(r), _) => Some(r),
            (Err(e), true) => return Err(e),
            (Err(_), false) => None,
        };
        let config = crate::config::locate(g.config.as_deref(), repo.as_ref().map(|r| r.dir()))
            .ok()
            .and_then(|p| crate::config::load(&p).ok());
        let listing = foreign::list::list(tool, &args.file, &opts, repo.as_ref())?;
        if listing.is_empty() {
            crate::usage!("{file}: no series in it (nothing {} reads)", tool.name());
        }
        print!("{}", listing.render(&file, config.as_ref()));
        return Ok(());
    }
    let ws = Workspace::open(&locations(g), verbosity(g), true)?;
    let verbose = ws.verbosity.verbose > 0;
    let taken = foreign::import(&ws, tool, &args.file, &opts, verbose)?;
    let out = &taken.outcome;
    print_problems(&ws, &file, out);
    for n in &taken.notes {
        ws.note(&format!("perfbisect: {n}"));
    }
    println!("{}", foreign_summary(&file, tool, &taken));
    if out.imported + out.already == 0 {
        let units = out
            .report
            .skipped
            .get(&crate::import::Why::OtherUnit)
            .copied()
            .unwrap_or(0);
        if units > 0 && units == out.report.skipped_rows() {
            crate::usage!("nothing in {file} could be imported: its series are in other units than the tests taking them");
        }
        anyhow::bail!("nothing in {file} could be imported (every point was skipped)");
    }
    Ok(())
}

/// `N thing` or `N things`.
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `; skipped 3 (2 with no commit, 1 with no value)`, or nothing where no row was skipped.
fn skipped_clause(report: &Report) -> String {
    if report.skipped_rows() == 0 {
        return String::new();
    }
    format!(
        "; skipped {} ({})",
        report.skipped_rows(),
        report
            .skipped
            .iter()
            .map(|(w, n)| format!("{n} {}", w.label()))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `data.js: benchmark-action, 27 series, 26 taken by tests; 11389 points read; imported ...`
fn foreign_summary(file: &str, tool: Tool, t: &foreign::Taken) -> String {
    let out = &t.outcome;
    let report = &out.report;
    let points: usize = t.series.iter().map(|(_, _, n)| n).sum();
    let untaken = if t.untaken == 0 {
        String::new()
    } else {
        format!(
            " ({} of {} points not taken by any test: `--list` prints them)",
            plural(t.untaken, "series", "series"),
            t.untaken_points
        )
    };
    let skipped_text = skipped_clause(report);
    let no_value = match report.failed_runs {
        0 => String::new(),
        n => format!(
            "; {} without a value (failed or skipped) not imported",
            plural(n, "result", "results")
        ),
    };
    format!(
        "{file}: {} history, {} taken by tests{untaken}; {} read; imported {} of {} on {}; {} already in the store{no_value}{skipped_text}",
        tool.name(),
        plural(t.series.len(), "series", "series"),
        plural(points, "point", "points"),
        plural(out.imported, "sample", "samples"),
        plural(out.tests, "test", "tests"),
        plural(out.commits, "commit", "commits"),
        out.already,
    )
}

/// `rounds.csv: 10 rows read; imported 8 samples of 2 tests on 4 commits; ...`
fn summary(file: &str, out: &Outcome) -> String {
    let report = &out.report;
    let skipped_text = skipped_clause(report);
    let failed_text = match report.failed_runs {
        0 => String::new(),
        1 => "; 1 failed run (no value) not imported".to_string(),
        n => format!("; {n} failed runs (no value) not imported"),
    };
    format!(
        "{file}: {} read; imported {} of {} on {}; {} already in the store{failed_text}{skipped_text}",
        plural(out.read(), "row", "rows"),
        plural(out.imported, "sample", "samples"),
        plural(out.tests, "test", "tests"),
        plural(out.commits, "commit", "commits"),
        out.already,
    )
}
