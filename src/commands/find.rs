//! `perfbisect find TEST RANGE` (also `perfbisect TEST RANGE`): drive the noisy bisection
//! over the range, building and measuring only what the search asks for.

use std::time::Instant;

use crate::bisect::{Action, Outcome, Search};
use crate::build::State;
use crate::cli::{FindArgs, Format, Global};
use crate::git::CommitInfo;
use crate::interrupt::Interrupted;
use crate::pipeline::{Batch, Workspace};
use crate::report::find::{self as view, FindReport};

use super::{check_format, locations, verbosity};

pub fn find(g: &Global, args: FindArgs) -> anyhow::Result<()> {
    check_format(
        args.format,
        &[Format::Text, Format::Json, Format::Md],
        "find",
    )?;
    let ws = Workspace::open(&locations(g), verbosity(g), true)?;
    let test = ws.config.test(&args.test)?.clone();
    if let Some(w) = super::calibrate::threshold_warning(&ws.cache, &test) {
        ws.warn(&w);
    }
    let range = ws.repo.range(&args.range)?;
    let Some(base) = range.base.clone() else {
        crate::usage!(
            "range `{}` has no old end to compare with (a root commit); use `OLD..NEW`",
            args.range
        );
    };
    let mut commits: Vec<CommitInfo> = vec![base];
    commits.extend(range.commits.iter().cloned());
    let started = Instant::now();

    let params = super::search_params(&test);
    let mut search = Search::new(commits.len(), params);
    let stored = ws.samples(&test)?;
    let mut reused = 0usize;
    for (pos, c) in commits.iter().enumerate() {
        let recs = stored.records(&c.id);
        if !recs.is_empty() {
            let vals: Vec<f64> = recs.iter().map(|s| s.value.unwrap_or(f64::NAN)).collect();
            search.add_samples(pos, &vals);
            reused += vals.len();
        }
        match ws.build_state(&c.id) {
            State::Cached(_) => search.mark_built(pos),
            State::Failed(_) => search.mark_unbuildable(pos),
            State::Missing => {}
        }
    }
    if reused > 0 {
        ws.note(&format!(
            "using {reused} stored samples of `{}` in this range",
            test.name
        ));
    }

    let mut appender = ws.appender(&test)?;
    let mut builds = 0usize;
    let mut runs = 0usize;
    let mut skipped: Vec<usize> = Vec::new();
    let bar = ws.progress.bar(0, "find");
    let outcome = loop {
        if crate::interrupt::requested() {
            bar.finish_and_clear();
            return Err(Interrupted.into());
        }
        match search.next_action() {
            Action::Done(o) => break o,
            Action::Measure { pos, runs: n } => {
                let c = &commits[pos];
                bar.set_message(format!("{} {} ({n} runs)", c.short(), c.subject));
                let (art, built) = ws.ensure_built(&c.id)?;
                builds += built as usize;
                let Some(art) = art else {
                    search.mark_unbuildable(pos);
                    if !skipped.contains(&pos) {
                        skipped.push(pos);
                    }
                    continue;
                };
                search.mark_built(pos);
                bar.inc_length(n as u64);
                let got = ws.measure(
                    &mut appender,
                    Batch {
                        test: &test,
                        commit: c.id,
                        artifacts: &art,
                        runs: n,
                        round: 0,
                    },
                    &mut |_| bar.inc(1),
                )?;
                runs += got.len();
                let vals: Vec<f64> = got.iter().map(|s| s.value.unwrap_or(f64::NAN)).collect();
                search.add_samples(pos, &vals);
                if ws.verbosity.verbose > 0 {
                    let med = crate::stats::median(&vals).unwrap_or(f64::NAN);
                    bar.println(format!(
                        "probed {} {}: {} runs, median {}",
                        c.short(),
                        c.subject,
                        vals.len(),
                        crate::report::fmt_num(med)
                    ));
                }
            }
            Action::Verify {
                parent,
                culprit,
                runs: n,
            } => {
                let (pa, built_a) = ws.ensure_built(&commits[parent].id)?;
                let (pb, built_b) = ws.ensure_built(&commits[culprit].id)?;
                builds += built_a as usize + built_b as usize;
                let (Some(pa), Some(pb)) = (pa, pb) else {
                    // The search asked to re-run a commit that no longer builds; tell it.
                    search.record_verify(&[], &[]);
                    continue;
                };
                bar.set_message(format!(
                    "verifying {} vs {} interleaved ({n} runs each)",
                    commits[parent].short(),
                    commits[culprit].short()
                ));
                bar.inc_length(2 * n as u64);
                let batch = |id, art| Batch {
                    test: &test,
                    commit: id,
                    artifacts: art,
                    runs: n,
                    round: 0,
                };
                let (a, b) = ws.measure_interleaved(
                    &mut appender,
                    batch(commits[parent].id, &pa),
                    batch(commits[culprit].id, &pb),
                    &mut |_| bar.inc(1),
                )?;
                runs += a.len() + b.len();
                let va: Vec<f64> = a.iter().map(|s| s.value.unwrap_or(f64::NAN)).collect();
                let vb: Vec<f64> = b.iter().map(|s| s.value.unwrap_or(f64::NAN)).collect();
                search.record_verify(&va, &vb);
            }
        }
    };
    bar.finish_and_clear();
    // Besides the commits the search tried and could not build, the unbuildable commits that
    // make a culprit ambiguous (known from earlier runs, so never tried now).
    let in_doubt: Vec<usize> = match &outcome {
        Outcome::Culprits(cs) => cs.iter().flat_map(|c| c.candidates.clone()).collect(),
        Outcome::Inconclusive {
            best_guess: Some(c),
            ..
        } => c.candidates.clone(),
        _ => Vec::new(),
    };
    for pos in in_doubt {
        if matches!(ws.build_state(&commits[pos].id), State::Failed(_)) && !skipped.contains(&pos) {
            skipped.push(pos);
        }
    }
    skipped.sort_unstable();

    let report = FindReport {
        test: &test,
        range: &range.spec,
        commits: &commits,
        outcome: &outcome,
        probed: search.probed(),
        notes: search.notes(),
        builds,
        runs,
        reused,
        skipped: &skipped,
        seconds: started.elapsed().as_secs_f64(),
    };
    let out = match args.format {
        Format::Json => view::json(&report)?,
        Format::Md => view::markdown(&report),
        _ => view::text(&report),
    };
    print!("{out}");
    Ok(())
}
