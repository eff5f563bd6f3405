//! `perfbisect show TEST [RANGE]`: stored results per commit and a summary of the range.

use crate::build::State;
use crate::cli::{Format, Global, ShowArgs};
use crate::pipeline::Workspace;
use crate::report::show::{self as view, CommitRow, Status};

use super::{check_format, locations, verbosity};

pub fn show(g: &Global, args: ShowArgs) -> anyhow::Result<()> {
    check_format(
        args.format,
        &[Format::Text, Format::Json, Format::Csv],
        "show",
    )?;
    let mut ws = Workspace::open(&locations(g), verbosity(g), false)?;
    ws.any_fingerprint = args.any_fingerprint;
    let ws = ws;
    let test = ws.config.test(&args.test)?;
    let samples = ws.samples(test)?;
    let commits = ws.commits(args.range.as_deref(), &samples)?;
    let rows: Vec<CommitRow> = commits
        .into_iter()
        .map(|c| {
            let records: Vec<_> = samples.records(&c.id).into_iter().cloned().collect();
            let values: Vec<f64> = records.iter().filter_map(|s| s.value).collect();
            let status = if !values.is_empty() {
                Status::Ok
            } else if matches!(ws.build_state(&c.id), State::Failed(_)) {
                Status::BuildFailed
            } else if !records.is_empty() {
                Status::RunFailed
            } else {
                Status::Missing
            };
            CommitRow {
                same_build_as: samples.shared_from(&c.id).first().copied(),
                commit: c,
                values,
                records,
                status,
            }
        })
        .collect();
    let out = match args.format {
        Format::Json => view::json(test, &rows)?,
        Format::Csv => view::csv(test, &rows)?,
        _ => {
            let n = rows.len();
            let s = if n == 1 { "" } else { "s" };
            let scope = match &args.range {
                Some(r) => format!("{n} commit{s} of {r}, oldest first"),
                None => format!(
                    "all {n} commit{s} with results of {}, oldest first (no RANGE given; also those HEAD does not reach)",
                    test.name
                ),
            };
            view::text(test, &scope, &rows)
        }
    };
    print!("{out}");
    if args.format == Format::Text {
        if let Some(n) = ws.cache.store().stale_note(&test.name, samples.stale) {
            ws.note(&n);
        }
    }
    if let Some(n) = ws.fingerprint_note(test, &samples) {
        ws.note(&n);
    }
    Ok(())
}
