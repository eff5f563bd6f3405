//! What `run` does over a range: what each commit still needs of each test, the builds that
//! makes missing, the runs (interleaved round by round across the commits, or each commit's
//! back to back), byte-identical builds standing in for runs, the pristine check of the builds
//! each step stands on, and the summary of what was built and stored.

mod summary;

use std::time::{Duration, Instant};

use crate::report::run::{Interleaved, Summary};
use summary::note_shared;
pub use summary::Spent;

use crate::base::interrupt::Interrupted;
use crate::build::State;
use crate::git;
use crate::pipeline::history::{History, Scope};
use crate::pipeline::workspace::{Batch, Workspace};

/// What `run` was asked for, parsed.
pub struct Options<'a> {
    /// The tests, as `--tests` names them (`all`, or names separated by commas).
    pub tests: &'a str,
    pub range: &'a str,
    pub jobs: usize,
    /// `(I, N)`: measure only every Nth commit from the Ith.
    pub shard: Option<(usize, usize)>,
    pub again: bool,
    pub gaps: bool,
    pub retry_failed: bool,
    /// `--build-only`: build for the machine that measures, measure nothing (the workspace
    /// then counts a commit measured by any machine as measured).
    pub build_only: bool,
}

/// One pass of `run` over `ws`. With `check_steps`, the builds on either side of each step
/// the new numbers show are compared with pristine builds first; `true`: one was stale, and
/// the summary is left to the pass that follows (what this pass did goes into `spent`, which
/// the next one starts from). `report` prints the summary (also when Ctrl-C stopped the pass:
/// what was built and stored is said before the exit, 130 for Ctrl-C), with the time since the command's start.
pub fn run_pass(
    ws: &Workspace,
    args: &Options<'_>,
    check_steps: bool,
    spent: &mut Spent,
    report: &dyn Fn(&Summary, Duration) -> anyhow::Result<()>,
) -> anyhow::Result<bool> {
    let started = spent.started;
    let report = |s: &mut Summary| {
        let total = s.timed(started);
        report(s, total)
    };
    let pass = Pass::plan(ws, args)?;
    let mut samples = pass.samples()?;
    // Counted on from the passes before this one.
    let mut summary = Summary::counted_on(spent, args.build_only, args.shard, pass.commits.len());
    let incremental = !crate::build::stale::pristine_required(
        &ws.cache,
        ws.config.build.incremental,
        ws.config.build.recipe_hash(),
    );
    pass.build(&mut samples, &mut summary, check_steps, incremental)?;
    if crate::base::interrupt::requested() {
        // Stopped while building: say what was built before the exit.
        report(&mut summary)?;
        return Err(Interrupted.into());
    }
    if args.build_only {
        // The builds are the product: the commits that did not build are listed, and the
        // steps are checked where they are measured.
        for c in &pass.commits {
            if let State::Failed(tail) = ws.build_state(&c.id) {
                summary.failed_build(&c.id, &tail);
            }
        }
        report(&mut summary)?;
        nothing_built(ws, args, &pass.commits, &summary)?;
        return Ok(false);
    }
    pass.measure(&mut samples, &mut summary)?;
    if crate::base::interrupt::requested() {
        report(&mut summary)?;
        return Err(Interrupted.into());
    }
    // Every step in the numbers now stands on two builds: those must be what the commits
    // build, whatever the project's dependency tracking missed (a header no rule lists).
    // Only when this pass built something: builds made before were checked by the run that
    // made them, and reading every test's store again is not free on a run of 500 repeats.
    if check_steps && incremental && summary.builds > 0 {
        let checked = ws.check_builds(
            &step_evidence(ws, &pass.tests, &pass.range.commits)?,
            &pass.tests,
        )?;
        summary.checked(&checked);
        if checked.stale {
            ws.note("perfbisect: measuring again, with pristine builds");
            // The next pass counts on from here.
            spent.carry_over(&summary);
            return Ok(true);
        }
    }
    report(&mut summary)?;
    nothing_built(ws, args, &pass.commits, &summary)?;
    Ok(false)
}

/// What one pass of `run` covers: the tests, the range, and the commits of it measured here
/// (all of them, or the shard's).
struct Pass<'a> {
    ws: &'a Workspace,
    args: &'a Options<'a>,
    tests: Vec<&'a crate::config::Test>,
    range: git::Range,
    commits: Vec<crate::git::CommitInfo>,
    ids: Vec<gix::ObjectId>,
}

impl<'a> Pass<'a> {
    /// The pass `args` asks for, with what is said before anything is built: tests that cannot
    /// be counted here, thresholds to calibrate, a range off the first-parent chain, the shard.
    fn plan(ws: &'a Workspace, args: &'a Options<'a>) -> anyhow::Result<Pass<'a>> {
        let shard = args.shard;
        let tests = ws.config.select(args.tests)?;
        for t in tests.iter().filter(|_| !args.build_only) {
            // Before anything is built: a test that cannot be counted here says so now (a
            // runner that only builds counts nothing).
            ws.counter_note(t)?;
            if let Some(w) = crate::jobs::calibrate::threshold_warning(&ws.cache, t) {
                ws.warn(&w);
            }
        }
        let range = ws.repo.range(args.range)?;
        let walked: Vec<_> = range.commits.iter().map(|c| c.id).collect();
        if let Some(note) =
            ws.repo
                .off_chain_note(&range.spec, range.base.as_ref().map(|b| b.id), &walked)?
        {
            ws.note(&format!("perfbisect: {note}"));
        }
        let mut commits: Vec<_> = range
            .commits
            .iter()
            .enumerate()
            .filter(|(i, _)| shard.is_none_or(|(k, n)| i % n == k - 1))
            .map(|(_, c)| c.clone())
            .collect();
        if let Some((i, n)) = shard {
            // Every shard holds both ends of the range: the old end (the level before the
            // range's first commit) and the newest commit, so a step among the first or
            // the last commits shows in any one shard's numbers (a night's `triage`).
            let ends = shard_ends(&range, &commits);
            let own = commits.len();
            if let Some(base) = ends.0.clone() {
                commits.insert(0, base);
            }
            commits.extend(ends.1.clone());
            let said = |c: &Option<crate::git::CommitInfo>, what: &str| {
                c.as_ref().map(|c| format!("{what} {}", c.short()))
            };
            let ends_said: Vec<String> =
                [said(&ends.0, "the old end"), said(&ends.1, "the newest")]
                    .into_iter()
                    .flatten()
                    .collect();
            ws.note(&format!(
                "perfbisect: shard {i}/{n}: {own} of the {} commits of {} (every {n}th, from the \
                 {i}th){}",
                range.commits.len(),
                range.spec,
                if ends_said.is_empty() {
                    String::new()
                } else {
                    format!(", and both ends of the range: {}", ends_said.join(" and "))
                }
            ));
        }
        let ids = commits.iter().map(|c| c.id).collect();
        Ok(Pass {
            ws,
            args,
            tests,
            range,
            commits,
            ids,
        })
    }

    /// Each test's samples of the commits, saying (unless quiet) where the store holds stale
    /// ones.
    fn samples(&self) -> anyhow::Result<Vec<crate::pipeline::samples::Samples>> {
        let ws = self.ws;
        let mut samples = Vec::new();
        for test in &self.tests {
            let s = ws.samples_for(test, Some(&self.ids))?;
            if !ws.verbosity.quiet {
                if let Some(note) = ws.cache.store().stale_note(&test.name, s.stale) {
                    ws.note(&note);
                }
            }
            samples.push(s);
        }
        Ok(samples)
    }

    /// What each test still needs on the `ci`th commit, as far as `samples` know: a commit not
    /// built yet may turn out to be byte-identical to a measured one.
    fn needs(
        &self,
        samples: &[crate::pipeline::samples::Samples],
        ci: usize,
    ) -> Vec<(usize, u32, usize)> {
        let args = self.args;
        self.tests
            .iter()
            .zip(samples)
            .map(|(test, samples)| need(test, samples, &self.commits[ci].id, args.again, args.gaps))
            .collect()
    }

    /// Build the commits that still need runs and are not built (nor failed, unless retried).
    /// On `incremental` builds with `check_steps`, the newest build of each worktree is
    /// checked against a pristine one; when stale, everything is built again and `samples`
    /// read again.
    fn build(
        &self,
        samples: &mut Vec<crate::pipeline::samples::Samples>,
        summary: &mut Summary,
        check_steps: bool,
        incremental: bool,
    ) -> anyhow::Result<()> {
        let (ws, args) = (self.ws, self.args);
        for attempt in 0..2 {
            let plan: Vec<Vec<(usize, u32, usize)>> = (0..self.commits.len())
                .map(|ci| self.needs(samples, ci))
                .collect();
            let mut to_build = Vec::new();
            summary.cache_hits = 0;
            for (ci, c) in self.commits.iter().enumerate() {
                let needed = plan[ci].iter().any(|(n, _, _)| *n > 0);
                match ws.build_state(&c.id) {
                    State::Cached(_) => summary.cache_hits += 1,
                    State::Failed(_) if !args.retry_failed => {}
                    _ if needed => to_build.push(c.id),
                    _ => {}
                }
            }
            let t = Instant::now();
            let outcomes = ws.build_missing(&to_build, args.jobs, args.retry_failed)?;
            summary.building += t.elapsed();
            // Failed builds are listed in `failed_builds`, not counted here.
            summary.builds += outcomes.iter().filter(|o| o.result.is_ok()).count();
            if attempt > 0 || !incremental || crate::base::interrupt::requested() {
                break;
            }
            // The newest build of each worktree stands for the builds before it there: one that
            // is stale means the project's dependency tracking misses something, and every
            // incremental build (of this run and of runs before) is set aside and made again.
            if !check_steps {
                break;
            }
            // A runner that only builds measures nothing: other bytes there are stale.
            let measure_with: &[&crate::config::Test] =
                if args.build_only { &[] } else { &self.tests };
            let checked = ws.check_builds(
                &newest_per_slot(&outcomes, &to_build, args.jobs),
                measure_with,
            )?;
            summary.checked(&checked);
            if !checked.stale {
                break;
            }
            samples.clear();
            for test in &self.tests {
                samples.push(ws.samples_for(test, Some(&self.ids))?);
            }
        }
        Ok(())
    }

    /// Measure what the built commits still need: in interleaved rounds when every test
    /// allows it (then more runs beside the steps too few runs leave undecided), else each
    /// commit's runs back to back.
    fn measure(
        &self,
        samples: &mut [crate::pipeline::samples::Samples],
        summary: &mut Summary,
    ) -> anyhow::Result<()> {
        let (ws, args, tests) = (self.ws, self.args, &self.tests);
        // The builds just made have manifests: commits now known to be byte-identical to
        // measured ones share their samples instead of running again.
        // (Read again: an identical build outside the commits read has samples to share.)
        for (s, t) in samples.iter_mut().zip(tests) {
            if t.shares_identical_builds() {
                *s = ws.samples_for(t, Some(&self.ids))?;
            }
        }
        let total: usize = (0..self.commits.len())
            .flat_map(|ci| self.needs(samples, ci))
            .map(|(n, _, _)| n)
            .sum();
        let bar = ws.progress.bar(total as u64, "run");
        let mut appenders = Vec::new();
        for t in tests {
            appenders.push(ws.appender(t)?);
        }
        let interleave = tests.iter().all(|t| t.interleave);
        let measuring = Instant::now();
        if interleave {
            measure_rounds(
                ws,
                tests,
                &self.commits,
                samples,
                &mut appenders,
                summary,
                &bar,
                &|samples: &[crate::pipeline::samples::Samples], ci: usize| self.needs(samples, ci),
                args.jobs,
            )?;
        } else {
            self.back_to_back(samples, &mut appenders, summary, &bar)?;
        }
        bar.finish_and_clear();
        // Few runs never hide a step: where the numbers now show a step too few runs cannot
        // decide, both builds beside it are measured more, round by round, until it is decided
        // or they reach the budget of an open decision. A shard reads its own commits (every
        // Nth and the range's ends, measured side by side in this session): a step between two
        // of them is one its own runs show, and the runner that measured them settles it while
        // it holds them.
        if interleave && !crate::base::interrupt::requested() {
            let chain: Vec<crate::git::CommitInfo> = if args.shard.is_some() {
                self.commits.clone()
            } else {
                let mut chain: Vec<_> = self.range.base.iter().cloned().collect();
                chain.extend(self.range.commits.iter().cloned());
                chain
            };
            top_up(
                ws,
                tests,
                &chain,
                samples,
                &mut appenders,
                summary,
                args.jobs,
            )?;
        }
        summary.measuring += measuring.elapsed();
        Ok(())
    }

    /// Measure each commit's runs back to back, one session per share group of tests (one
    /// execution per repeat feeding every test of the group); Ctrl-C stops after the group.
    fn back_to_back(
        &self,
        samples: &mut [crate::pipeline::samples::Samples],
        appenders: &mut [crate::store::Appender],
        summary: &mut Summary,
        bar: &indicatif::ProgressBar,
    ) -> anyhow::Result<()> {
        let (ws, tests) = (self.ws, &self.tests);
        'commits: for (ci, c) in self.commits.iter().enumerate() {
            let artifacts = match ws.build_state(&c.id) {
                State::Cached(p) => p,
                State::Failed(tail) => {
                    summary.failed_build(&c.id, &tail);
                    let skipped: u64 = self.needs(samples, ci).iter().map(|n| n.0 as u64).sum();
                    bar.inc(skipped);
                    continue;
                }
                State::Missing => {
                    let skipped: u64 = self.needs(samples, ci).iter().map(|n| n.0 as u64).sum();
                    bar.inc(skipped);
                    continue;
                }
            };
            let now = self.needs(samples, ci);
            for (ti, test) in tests.iter().enumerate() {
                let saved = now[ti].2;
                if saved == 0 {
                    continue;
                }
                let from = samples[ti].shared_from(&c.id);
                let same_as = from.first().map(|f| f.to_string()).unwrap_or_default();
                note_shared(ws, summary, c, test, same_as, saved);
            }
            let plan_c: Vec<(usize, u32)> = now.iter().map(|&(n, r, _)| (n, r)).collect();
            for group in share_groups(tests, &plan_c) {
                let names: Vec<&str> = group.iter().map(|&ti| tests[ti].name.as_str()).collect();
                bar.set_message(format!("{} {} {}", c.short(), names.join(","), c.subject));
                let batches: Vec<Batch<'_>> = group
                    .iter()
                    .map(|&ti| Batch {
                        test: tests[ti],
                        commit: c.id,
                        artifacts: &artifacts,
                        runs: plan_c[ti].0,
                        round: plan_c[ti].1,
                    })
                    .collect();
                // What was measured now, for later commits whose build turns out identical.
                let mut fresh: Vec<(usize, crate::store::Sample)> = Vec::new();
                // A test of minutes per run says it is alive (without progress bars).
                let _beat = ws.progress.heartbeat(format!(
                    "measuring {} on {}",
                    crate::base::progress::listed(&names),
                    c.short()
                ));
                if let [_] = group.as_slice() {
                    let batch = batches.into_iter().next().expect("one batch");
                    let got = ws.measure(&mut appenders[group[0]], batch, &mut |_| bar.inc(1))?;
                    summary.runs += got.len();
                    summary.failed_runs += got.iter().filter(|s| s.value.is_none()).count();
                    fresh.extend(got.into_iter().map(|s| (group[0], s)));
                } else {
                    // One execution per repeat feeds every test of the group.
                    let mut mine: Vec<&mut crate::store::Appender> = appenders
                        .iter_mut()
                        .enumerate()
                        .filter(|(ti, _)| group.contains(ti))
                        .map(|(_, a)| a)
                        .collect();
                    ws.measure_shared(&mut mine, &batches, &mut |i, s| {
                        bar.inc(1);
                        summary.runs += 1;
                        summary.failed_runs += usize::from(s.value.is_none());
                        fresh.push((group[i], s.clone()));
                    })?;
                }
                for (ti, s) in fresh {
                    samples[ti].push(s);
                }
                if crate::base::interrupt::requested() {
                    break 'commits;
                }
            }
        }
        Ok(())
    }
}

/// Nothing could be built: that is a failure (exit 1), with why the first build failed, with
/// or without `--build-only` (some failed builds in a range are history; all of them are not).
fn nothing_built(
    ws: &Workspace,
    args: &Options<'_>,
    commits: &[crate::git::CommitInfo],
    summary: &Summary,
) -> anyhow::Result<()> {
    if commits.is_empty() || summary.failed_builds.len() < commits.len() {
        return Ok(());
    }
    let first = &commits[0];
    anyhow::bail!(
        "no commit of `{}` could be built ({} build{} failed); the first, {} {}, ended with:\n{}",
        args.range,
        commits.len(),
        if commits.len() == 1 { "" } else { "s" },
        first.short(),
        first.subject,
        ws.build_failure(&first.id)
    );
}

/// What each test still needs on the `ci`th commit: (runs, round, runs saved by twins).
type Needs<'a> =
    dyn Fn(&[crate::pipeline::samples::Samples], usize) -> Vec<(usize, u32, usize)> + 'a;

/// Measure what every commit needs in interleaved rounds, one session per share group of
/// tests (tests that read one execution's output; the others alone): in each round every
/// commit that still needs runs gets one, in an order that changes every round, with its
/// setup, warm-ups and teardown around it. Drift of the machine then falls on every commit
/// alike and becomes noise, not a step. Commits whose build is byte-identical to one measured
/// in the same session are not measured again.
#[allow(clippy::too_many_arguments)]
fn measure_rounds(
    ws: &Workspace,
    tests: &[&crate::config::Test],
    commits: &[crate::git::CommitInfo],
    samples: &mut [crate::pipeline::samples::Samples],
    appenders: &mut [crate::store::Appender],
    summary: &mut Summary,
    bar: &indicatif::ProgressBar,
    needs: &Needs<'_>,
    jobs: usize,
) -> anyhow::Result<()> {
    let now: Vec<Vec<(usize, u32, usize)>> =
        (0..commits.len()).map(|ci| needs(samples, ci)).collect();
    let arts = built(ws, commits, &now, summary, bar);
    let want = runs_wanted(ws, tests, commits, samples, &arts, &now, summary, bar);
    let mut inter = Interleaved::default();
    for group in share_groups(tests, &vec![(1, 0); tests.len()]) {
        let visits = visits(tests, commits, &group, &arts, &want, &now);
        if visits.is_empty() {
            continue;
        }
        let names: Vec<&str> = group.iter().map(|&ti| tests[ti].name.as_str()).collect();
        bar.set_message(format!(
            "{} on {} commits, round by round",
            names.join(","),
            visits.len()
        ));
        let mut mine: Vec<&mut crate::store::Appender> = appenders
            .iter_mut()
            .enumerate()
            .filter(|(ti, _)| group.contains(ti))
            .map(|(_, a)| a)
            .collect();
        let all: usize = visits
            .iter()
            .map(|v| v.batches.iter().map(|b| b.runs).max().unwrap_or(0))
            .sum();
        let doing = |k: usize| {
            format!(
                "measuring {} on {} commits, round by round (run {} of {all})",
                crate::base::progress::listed(&names),
                visits.len(),
                (k + 1).min(all)
            )
        };
        let beat = ws.progress.heartbeat(doing(0));
        let mut k = 0;
        // Counts the machine's load does not move may run on every core at once.
        let parallel = if group
            .iter()
            .all(|&ti| crate::pipeline::shards::dependence(tests[ti]).independent())
        {
            jobs
        } else {
            1
        };
        let (done, got) = ws.measure_session(&mut mine, &visits, parallel, &mut |_, _| {
            bar.inc(1);
            k += 1;
            beat.set(doing(k));
        })?;
        drop(beat);
        let first = tests[group[0]];
        let with_setup = if first.setup.is_some() {
            visits.len()
        } else {
            0
        };
        inter.rounds = inter.rounds.max(done.rounds);
        inter.extra_setups += done.setups.saturating_sub(with_setup);
        inter.extra_warmups += done.warmups.saturating_sub(first.warmup * visits.len());
        for gi in 0..group.len() {
            // A count (instructions, a deterministic value) does not follow the machine's
            // speed: its rounds say nothing of it.
            let t = tests[group[gi]];
            if crate::pipeline::history::pair_params(t).counted || t.deterministic {
                continue;
            }
            let runs: Vec<(usize, u32, f64)> = got
                .iter()
                .filter(|(_, t, _)| *t == gi)
                .filter_map(|(u, _, s)| s.value.map(|v| (*u, s.moment, v)))
                .collect();
            if let Some(d) = crate::stats::drift::between_rounds(&runs) {
                if inter.drift.is_none_or(|o| d.rel > o.rel) {
                    inter.drift = Some(d);
                }
            }
        }
        for (_, gi, s) in got {
            summary.runs += 1;
            summary.failed_runs += usize::from(s.value.is_none());
            samples[group[gi]].push(s);
        }
        if crate::base::interrupt::requested() {
            break;
        }
    }
    if inter.rounds > 0 {
        summary.interleaved = Some(inter);
    }
    Ok(())
}

/// The artifacts of each of `commits`, `None` where there are none: a failed build is
/// listed in `summary`, and the runs `now` wants of such a commit are counted done on `bar`.
fn built(
    ws: &Workspace,
    commits: &[crate::git::CommitInfo],
    now: &[Vec<(usize, u32, usize)>],
    summary: &mut Summary,
    bar: &indicatif::ProgressBar,
) -> Vec<Option<std::path::PathBuf>> {
    let mut arts: Vec<Option<std::path::PathBuf>> = Vec::with_capacity(commits.len());
    for (ci, c) in commits.iter().enumerate() {
        match ws.build_state(&c.id) {
            State::Cached(p) => arts.push(Some(p)),
            other => {
                if let State::Failed(tail) = other {
                    summary.failed_build(&c.id, &tail);
                }
                bar.inc(now[ci].iter().map(|n| n.0 as u64).sum());
                arts.push(None);
            }
        }
    }
    arts
}

/// The runs each built commit measures of each test (`[commit][test]`), out of the `now` it
/// needs: of byte-identical builds measured now only the first one is; the others, and
/// those whose twin's stored samples stand in, are counted in `summary` (said with `-v`).
#[allow(clippy::too_many_arguments)]
fn runs_wanted(
    ws: &Workspace,
    tests: &[&crate::config::Test],
    commits: &[crate::git::CommitInfo],
    samples: &[crate::pipeline::samples::Samples],
    arts: &[Option<std::path::PathBuf>],
    now: &[Vec<(usize, u32, usize)>],
    summary: &mut Summary,
    bar: &indicatif::ProgressBar,
) -> Vec<Vec<usize>> {
    // Identical builds: samples already stored for a twin stand in (`need` counted them), and
    // of twins measured now only the first one is.
    let mut planned: Vec<std::collections::HashSet<[u8; 20]>> =
        vec![Default::default(); tests.len()];
    let mut want: Vec<Vec<usize>> = vec![vec![0; tests.len()]; commits.len()];
    for (ci, c) in commits.iter().enumerate() {
        if arts[ci].is_none() {
            continue;
        }
        let key = crate::store::commit_key(&c.id);
        for (ti, test) in tests.iter().enumerate() {
            let (n, _, saved_stored) = now[ci][ti];
            let twin_planned = samples[ti]
                .twins
                .get(&key)
                .is_some_and(|ts| ts.iter().any(|t| planned[ti].contains(t)));
            let (n, saved) = if twin_planned && n > 0 {
                (0, n)
            } else {
                (n, saved_stored)
            };
            if saved > 0 {
                let from = samples[ti].shared_from(&c.id);
                let same_as = match from.first() {
                    Some(f) => f.to_string(),
                    None => samples[ti]
                        .twins
                        .get(&key)
                        .and_then(|ts| ts.iter().find(|t| planned[ti].contains(*t)))
                        .map(|t| gix::ObjectId::from_bytes_or_panic(t).to_string())
                        .unwrap_or_default(),
                };
                note_shared(ws, summary, c, test, same_as, saved);
                if twin_planned {
                    bar.inc(saved as u64);
                }
            }
            if n > 0 {
                planned[ti].insert(key);
                want[ci][ti] = n;
            }
        }
    }
    want
}

/// The visits of share group `group` (indices into `tests`) in one session: each built
/// commit of which `want` asks runs of any of the group's tests, with a batch for each.
fn visits<'a>(
    tests: &[&'a crate::config::Test],
    commits: &[crate::git::CommitInfo],
    group: &[usize],
    arts: &'a [Option<std::path::PathBuf>],
    want: &[Vec<usize>],
    now: &[Vec<(usize, u32, usize)>],
) -> Vec<crate::pipeline::workspace::Visit<'a>> {
    let mut visits: Vec<crate::pipeline::workspace::Visit<'_>> = Vec::new();
    for (ci, c) in commits.iter().enumerate() {
        let Some(art) = &arts[ci] else { continue };
        let mut v = crate::pipeline::workspace::Visit {
            batches: Vec::new(),
            tests: Vec::new(),
        };
        for (gi, &ti) in group.iter().enumerate() {
            if want[ci][ti] > 0 {
                v.batches.push(Batch {
                    test: tests[ti],
                    commit: c.id,
                    artifacts: art,
                    runs: want[ci][ti],
                    round: now[ci][ti].1,
                });
                v.tests.push(gi);
            }
        }
        if !v.batches.is_empty() {
            visits.push(v);
        }
    }
    visits
}

/// Most passes of [`top_up`] (each measures more runs of the builds beside the steps still
/// undecided, then looks again).
const TOP_UP_PASSES: usize = 6;

/// Measure more runs of the two builds beside each step of `chain` (the range with its old
/// end first) that is too few runs to decide ([`crate::stats::Undecided`]), interleaved round
/// by round, as many as the step's test says it needs (at least `repeats`, at most up to
/// `max_repeats` runs of each), and look again, until no step is undecided or nothing more
/// may be measured.
#[allow(clippy::too_many_arguments)]
fn top_up(
    ws: &Workspace,
    tests: &[&crate::config::Test],
    chain: &[crate::git::CommitInfo],
    samples: &mut [crate::pipeline::samples::Samples],
    appenders: &mut [crate::store::Appender],
    summary: &mut Summary,
    jobs: usize,
) -> anyhow::Result<()> {
    let main = summary.interleaved.take();
    for _ in 0..TOP_UP_PASSES {
        if crate::base::interrupt::requested() {
            break;
        }
        // Runs wanted per position of `chain`, per test.
        let mut want: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for (ti, t) in tests.iter().enumerate() {
            if t.deterministic {
                continue;
            }
            let history = History::<crate::store::Sample>::of(ws, t, Scope::Commits(chain))?;
            let rows = &history.rows;
            for u in history.detection().undecided {
                let has = |j: &usize| !rows[*j].own_values().is_empty();
                let before = (0..u.index).rev().find(has);
                let after = (u.index..rows.len()).find(has);
                let (Some(b), Some(a)) = (before, after) else {
                    continue;
                };
                // A step measured apart is decided by runs of both sides side by side: the
                // runs each has, taken at other times, do not count, and one side alone
                // decides nothing.
                let apart = u.why == crate::stats::changepoint::Reason::MeasuredApart;
                // A step too few runs to decide is a decision still open: its builds get
                // runs up to the budget `find` and `compare` spend on one (the runs that
                // take one build's time, twice `max_repeats` at least, or `max_runs`).
                let budget = if apart {
                    t.max_repeats
                } else {
                    let got = [rows[b].own_records(), rows[a].own_records()];
                    crate::jobs::compare::budget_of(ws, t, &chain[a], &got, t.max_repeats)
                };
                let plan: Vec<(usize, usize)> = [(b, u.runs.0), (a, u.runs.1)]
                    .into_iter()
                    .map(|(j, seen)| {
                        let own = rows[j].own_values().len();
                        let (room, seen) = if apart {
                            (t.max_repeats, 0)
                        } else {
                            (budget.saturating_sub(own), seen)
                        };
                        let built = matches!(ws.build_state(&chain[j].id), State::Cached(_));
                        let more = u.runs_needed.saturating_sub(seen).max(t.repeats).min(room);
                        (j, if built { more } else { 0 })
                    })
                    .collect();
                let mut asked = Vec::new();
                if apart && plan.iter().any(|p| p.1 == 0) {
                    continue;
                }
                for (j, more) in plan.into_iter().filter(|p| p.1 > 0) {
                    let e = want.entry(j).or_insert_with(|| vec![0; tests.len()]);
                    e[ti] = e[ti].max(more);
                    asked.push(format!("{} of {}", more, chain[j].short()));
                }
                if !asked.is_empty() {
                    let why = if apart {
                        "its sides were measured apart".to_string()
                    } else {
                        format!("it is undecided on {} vs {} runs", u.runs.0, u.runs.1)
                    };
                    ws.note(&format!(
                        "perfbisect: {}: the step at {} ({:+.2} %): {why}; measuring {} more, side by side",
                        t.name,
                        chain[u.index].short(),
                        u.rel_change * 100.0,
                        asked.join(" and ")
                    ));
                }
            }
        }
        if want.is_empty() {
            break;
        }
        let commits: Vec<crate::git::CommitInfo> = want.keys().map(|&j| chain[j].clone()).collect();
        let plan: Vec<Vec<usize>> = want.into_values().collect();
        let total: usize = plan.iter().flatten().sum();
        summary.topped_up += total;
        let bar = ws.progress.bar(total as u64, "run");
        let needs = |samples: &[crate::pipeline::samples::Samples], ci: usize| {
            tests
                .iter()
                .zip(samples)
                .enumerate()
                .map(|(ti, (t, s))| {
                    let (_, round, _) = need(t, s, &commits[ci].id, true, false);
                    (plan[ci][ti], round, 0)
                })
                .collect()
        };
        measure_rounds(
            ws, tests, &commits, samples, appenders, summary, &bar, &needs, jobs,
        )?;
        bar.finish_and_clear();
    }
    if main.is_some() {
        summary.interleaved = main;
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

/// What `test` still needs on commit `id`: (runs, the round they belong to, runs saved because
/// an identical build's samples stand in for the commit's own).
fn need(
    test: &crate::config::Test,
    samples: &crate::pipeline::samples::Samples,
    id: &gix::ObjectId,
    again: bool,
    gaps: bool,
) -> (usize, u32, usize) {
    let own = samples.own(id).len();
    let recs = samples.records(id);
    let have = recs.len();
    let next_round = recs.iter().map(|s| s.round + 1).max().unwrap_or(0);
    if again {
        return (test.repeats, next_round, 0);
    }
    let want = |n: usize| {
        if gaps {
            if n == 0 {
                test.repeats
            } else {
                0
            }
        } else {
            test.repeats.saturating_sub(n)
        }
    };
    let need = want(have);
    (need, next_round.saturating_sub(1), want(own) - need)
}

/// The last commit built successfully in each worktree slot: [`crate::build::build_all`] hands
/// each of `jobs` slots a contiguous run of `to_build`.
fn newest_per_slot(
    outcomes: &[crate::build::Outcome],
    to_build: &[gix::ObjectId],
    jobs: usize,
) -> Vec<gix::ObjectId> {
    let jobs = jobs.clamp(1, to_build.len().max(1));
    let chunk = to_build.len().div_ceil(jobs).max(1);
    to_build
        .chunks(chunk)
        .filter_map(|part| {
            part.iter()
                .rev()
                .copied()
                .find(|id| outcomes.iter().any(|o| o.commit == *id && o.result.is_ok()))
        })
        .collect()
}

/// The builds each step of `tests` over `commits` stands on: the first commit of each new
/// level and the last commit with a value before it.
fn step_evidence(
    ws: &Workspace,
    tests: &[&crate::config::Test],
    commits: &[crate::git::CommitInfo],
) -> anyhow::Result<Vec<gix::ObjectId>> {
    let mut out = Vec::new();
    for t in tests {
        let history = History::<crate::store::Sample>::of(ws, t, Scope::Commits(commits))?;
        let rows = &history.rows;
        for cp in history.detection().points {
            let before = rows[..cp.index].iter().rev().find(|r| !r.values.is_empty());
            for r in before.into_iter().chain(rows.get(cp.index)) {
                if !out.contains(&r.commit.id) {
                    out.push(r.commit.id);
                }
            }
        }
    }
    Ok(out)
}

/// The ends a shard of `range` adds to its own `commits`: the old end (the commit before the
/// range, when it has one) and the newest commit, each unless the shard holds it already.
fn shard_ends(
    range: &git::Range,
    commits: &[crate::git::CommitInfo],
) -> (
    Option<crate::git::CommitInfo>,
    Option<crate::git::CommitInfo>,
) {
    let held = |c: &crate::git::CommitInfo| commits.iter().any(|x| x.id == c.id);
    (
        range.base.clone().filter(|b| !held(b)),
        range.commits.last().cloned().filter(|l| !held(l)),
    )
}
