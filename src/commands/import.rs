//! `perfbisect import FILE [--format csv|json]`: take in results measured elsewhere (a cron
//! job's rounds, another cache's export). The domain is [`crate::import`]; this says what it
//! did.

use crate::cli::{Global, ImportArgs, ImportFormat};
use crate::import::{Format, Outcome};
use crate::pipeline::workspace::Workspace;

use super::common::{locations, verbosity};

pub fn import(g: &Global, args: ImportArgs) -> anyhow::Result<()> {
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
    for (line, _, why) in &report.problems {
        ws.note(&format!("{file}:{line}: skipped: {why}"));
    }
    let skipped = report.skipped_rows();
    if skipped > report.problems.len() {
        ws.note(&format!(
            "perfbisect: ... and {} more skipped rows (-v lists them all)",
            skipped - report.problems.len()
        ));
    }
}

/// `rounds.csv: 10 rows read; imported 8 samples of 2 tests on 4 commits; ...`
fn summary(file: &str, out: &Outcome) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let report = &out.report;
    let skipped = report.skipped_rows();
    let skipped_text = if skipped == 0 {
        String::new()
    } else {
        format!(
            "; skipped {skipped} ({})",
            report
                .skipped
                .iter()
                .map(|(w, n)| format!("{n} {}", w.label()))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
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
