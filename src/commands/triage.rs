//! `perfbisect triage TESTS [RANGE]`: the nightly perf sheriff (see [`crate::jobs::triage`]).

use crate::cli::{Format, Global, TriageArgs};
use crate::pipeline::workspace::Workspace;
use crate::report::triage::{self as view, View};

use super::common::{check_format, locations, verbosity};

pub fn triage(g: &Global, args: TriageArgs) -> anyhow::Result<()> {
    check_format(
        args.format,
        &[Format::Text, Format::Json, Format::Md],
        "triage",
    )?;
    if args.jobs == 0 {
        crate::usage!("--jobs must be at least 1");
    }
    if args.dry_run && args.attach.is_none() {
        crate::usage!("--dry-run says what --attach would post; give --attach OWNER/REPO too");
    }
    let max_time = args
        .max_time
        .as_deref()
        .map(|t| {
            humantime::parse_duration(t).map_err(|e| {
                crate::error::UsageError::err(format!(
                    "--max-time {t}: {e}; write e.g. `90m` or `2h 30m`"
                ))
            })
        })
        .transpose()?;
    // The cache lock is held throughout: two triages at once take turns, and the second
    // sees what the first posted.
    let ws = Workspace::open(&locations(g), verbosity(g), true)?;
    if let Some(r) = args.range.as_deref() {
        ws.repo.require_range(r, "triage")?;
    }
    let opts = crate::jobs::triage::Options {
        tests: &args.tests,
        range: args.range.as_deref(),
        jobs: args.jobs,
        max_builds: args.max_builds,
        max_time,
        attach: args.attach.clone(),
        label: args.label.clone(),
        dry_run: args.dry_run,
        // What it posts is public: no path of this machine's in its commands.
        invocation: super::common::public_invocation(g, &ws),
    };
    let out = crate::jobs::triage::triage(&ws, &opts)?;
    let v = View {
        findings: &out.findings,
        changed: &out.changed,
        left: &out.left,
        posted: &out.posted,
        failures: &out.failures,
        eras: &out.eras,
        searches: out.searches,
        builds: out.builds,
        runs: out.runs,
        seconds: out.seconds,
    };
    let write = |path: &std::path::Path, text: String| {
        std::fs::write(path, text).map_err(|e| {
            crate::error::UsageError::err(format!("cannot write {}: {e}", path.display()))
        })
    };
    if let Some(p) = &args.json {
        write(p, view::json(&v)?)?;
    }
    if let Some(p) = &args.md {
        write(p, view::markdown(&v))?;
    }
    print!(
        "{}",
        match args.format {
            Format::Json => view::json(&v)?,
            Format::Md => view::markdown(&v),
            _ => view::text(&v),
        }
    );
    if !out.failures.is_empty() {
        anyhow::bail!(
            "{} of triage's posts failed; the findings stay as they were and the next run posts them",
            out.failures.len()
        );
    }
    Ok(())
}
