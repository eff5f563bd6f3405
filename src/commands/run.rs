//! `perfbisect run TESTS RANGE`: build what is missing, then top every commit up to its
//! repeats (or add a round, or fill only the gaps).

use std::time::Instant;

use serde::Serialize;

use crate::build::State;
use crate::cli::{Format, Global, RunArgs};
use crate::git;
use crate::pipeline::{Batch, Workspace};

use super::{check_format, locations, verbosity, Interrupted};

#[derive(Debug, Serialize)]
struct Summary {
    builds: usize,
    cache_hits: usize,
    runs: usize,
    failed_builds: Vec<String>,
    failed_runs: usize,
    /// Why each of `failed_builds` failed (the first line of its record), for the text output.
    #[serde(skip)]
    failed_reasons: Vec<String>,
}

pub fn run(g: &Global, args: RunArgs) -> anyhow::Result<()> {
    check_format(args.format, &[Format::Text, Format::Json], "run")?;
    if args.jobs == 0 {
        crate::usage!("--jobs must be at least 1");
    }
    let shard = args.shard.as_deref().map(parse_shard).transpose()?;
    let ws = Workspace::open(&locations(g), verbosity(g), true)?;
    let tests = ws.config.select(&args.tests)?;
    for t in &tests {
        if let Some(w) = super::calibrate::threshold_warning(&ws.cache, t) {
            ws.warn(&w);
        }
    }
    let range = ws.repo.range(&args.range)?;
    let walked: Vec<_> = range.commits.iter().map(|c| c.id).collect();
    if let Some(note) =
        ws.repo
            .off_chain_note(&range.spec, range.base.as_ref().map(|b| b.id), &walked)?
    {
        ws.note(&format!("perfbisect: {note}"));
    }
    let commits: Vec<_> = range
        .commits
        .iter()
        .enumerate()
        .filter(|(i, _)| shard.is_none_or(|(k, n)| i % n == k - 1))
        .map(|(_, c)| c.clone())
        .collect();
    let started = Instant::now();

    // What each (commit, test) still needs.
    let mut plan: Vec<Vec<(usize, u32)>> = vec![Vec::new(); commits.len()];
    for test in &tests {
        let samples = ws.samples(test)?;
        if !g.quiet {
            if let Some(note) = ws.cache.store().stale_note(&test.name, samples.stale) {
                ws.note(&note);
            }
        }
        for (ci, c) in commits.iter().enumerate() {
            let recs = samples.records(&c.id);
            let have = recs.len();
            let next_round = recs.iter().map(|s| s.round + 1).max().unwrap_or(0);
            let (need, round) = if args.again {
                (test.repeats, next_round)
            } else if args.gaps {
                (if have == 0 { test.repeats } else { 0 }, 0)
            } else {
                (
                    test.repeats.saturating_sub(have),
                    next_round.saturating_sub(1),
                )
            };
            plan[ci].push((need, round));
        }
    }

    let mut summary = Summary {
        builds: 0,
        cache_hits: 0,
        runs: 0,
        failed_builds: Vec::new(),
        failed_runs: 0,
        failed_reasons: Vec::new(),
    };
    let mut to_build = Vec::new();
    for (ci, c) in commits.iter().enumerate() {
        let needed = plan[ci].iter().any(|(n, _)| *n > 0);
        match ws.build_state(&c.id) {
            State::Cached(_) => summary.cache_hits += 1,
            State::Failed(_) if !args.retry_failed => {}
            _ if needed => to_build.push(c.id),
            _ => {}
        }
    }
    let outcomes = ws.build_missing(&to_build, args.jobs, args.retry_failed)?;
    // Failed builds are listed in `failed_builds`, not counted here.
    summary.builds = outcomes.iter().filter(|o| o.result.is_ok()).count();
    if crate::interrupt::requested() {
        return Err(Interrupted.into());
    }

    let total: usize = plan.iter().flatten().map(|(n, _)| n).sum();
    let bar = ws.progress.bar(total as u64, "run");
    let mut appenders = Vec::new();
    for t in &tests {
        appenders.push(ws.appender(t)?);
    }
    'commits: for (ci, c) in commits.iter().enumerate() {
        let artifacts = match ws.build_state(&c.id) {
            State::Cached(p) => p,
            State::Failed(tail) => {
                summary.failed_builds.push(c.id.to_string());
                summary
                    .failed_reasons
                    .push(tail.lines().next().unwrap_or("").trim().to_string());
                let skipped: u64 = plan[ci].iter().map(|(n, _)| *n as u64).sum();
                bar.inc(skipped);
                continue;
            }
            State::Missing => {
                let skipped: u64 = plan[ci].iter().map(|(n, _)| *n as u64).sum();
                bar.inc(skipped);
                continue;
            }
        };
        for group in share_groups(&tests, &plan[ci]) {
            let names: Vec<&str> = group.iter().map(|&ti| tests[ti].name.as_str()).collect();
            bar.set_message(format!("{} {} {}", c.short(), names.join(","), c.subject));
            let batches: Vec<Batch<'_>> = group
                .iter()
                .map(|&ti| Batch {
                    test: tests[ti],
                    commit: c.id,
                    artifacts: &artifacts,
                    runs: plan[ci][ti].0,
                    round: plan[ci][ti].1,
                })
                .collect();
            if let [_] = group.as_slice() {
                let batch = batches.into_iter().next().expect("one batch");
                let got = ws.measure(&mut appenders[group[0]], batch, &mut |_| bar.inc(1))?;
                summary.runs += got.len();
                summary.failed_runs += got.iter().filter(|s| s.value.is_none()).count();
            } else {
                // One execution per repeat feeds every test of the group.
                let mut mine: Vec<&mut crate::store::Appender> = appenders
                    .iter_mut()
                    .enumerate()
                    .filter(|(ti, _)| group.contains(ti))
                    .map(|(_, a)| a)
                    .collect();
                ws.measure_shared(&mut mine, &batches, &mut |_, s| {
                    bar.inc(1);
                    summary.runs += 1;
                    summary.failed_runs += usize::from(s.value.is_none());
                })?;
            }
            if crate::interrupt::requested() {
                break 'commits;
            }
        }
    }
    bar.finish_and_clear();
    if crate::interrupt::requested() {
        print_summary(&ws, &summary, args.format, started)?;
        return Err(Interrupted.into());
    }
    print_summary(&ws, &summary, args.format, started)?;
    // Nothing could be built: that is a failure (exit 1), with why the first build failed.
    if !commits.is_empty() && summary.failed_builds.len() == commits.len() {
        let first = &commits[0];
        let tail = match ws.build_state(&first.id) {
            State::Failed(tail) => tail,
            _ => String::new(),
        };
        let log = ws.cache.log(&first.id, ws.config.build.recipe_hash());
        anyhow::bail!(
            "no commit of `{}` could be built ({} build{} failed); the first, {} {}, ended with:\n{}{}",
            args.range,
            commits.len(),
            if commits.len() == 1 { "" } else { "s" },
            first.short(),
            first.subject,
            crate::pipeline::indent(tail.trim_end()),
            if log.is_file() {
                format!("\nits full log: {}", crate::pipeline::display_path(&log))
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// The tests that still need runs on a commit, grouped so that tests with the same command,
/// setup, teardown, timeout and warm-ups share their runs (in the order of `tests`, each
/// group's indices ascending, so appenders are matched by index).
fn share_groups(tests: &[&crate::config::Test], plan: &[(usize, u32)]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(Option<_>, Vec<usize>)> = Vec::new();
    for (ti, t) in tests.iter().enumerate() {
        if plan[ti].0 == 0 {
            continue;
        }
        let key = t.share_key();
        match groups.iter_mut().find(|(k, _)| key.is_some() && *k == key) {
            Some((_, g)) => g.push(ti),
            None => groups.push((key, vec![ti])),
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

fn print_summary(
    ws: &Workspace,
    s: &Summary,
    format: Format,
    started: Instant,
) -> anyhow::Result<()> {
    match format {
        Format::Json => println!("{}", crate::report::json_line(s)?),
        _ => {
            println!(
                "{} built, {} cached, {} build{} failed, {} run{} ({} failed) in {}",
                s.builds,
                s.cache_hits,
                s.failed_builds.len(),
                if s.failed_builds.len() == 1 { "" } else { "s" },
                s.runs,
                if s.runs == 1 { "" } else { "s" },
                s.failed_runs,
                crate::build::fmt_secs(started.elapsed().as_secs_f64())
            );
            for (f, why) in s.failed_builds.iter().zip(&s.failed_reasons) {
                let id = gix::ObjectId::from_hex(f.as_bytes())?;
                let subject = ws.repo.info(id).map(|i| i.subject).unwrap_or_default();
                println!("  build failed: {} {subject} ({why})", git::short(&id));
            }
        }
    }
    Ok(())
}

fn parse_shard(s: &str) -> anyhow::Result<(usize, usize)> {
    let bad = || {
        crate::error::UsageError::err(format!(
            "--shard `{s}`: expected I/N with 1 <= I <= N, e.g. 2/4"
        ))
    };
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let i: usize = i.trim().parse().map_err(|_| bad())?;
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    if i == 0 || n == 0 || i > n {
        return Err(bad());
    }
    Ok((i, n))
}
