//! Measuring and storing: the appender of a test's samples, the context of each run, and the
//! batches, interleaved pairs, windows and sessions of runs, each sample stored before the
//! next run starts.

use std::path::Path;

use anyhow::Context as _;
use gix::ObjectId;

use super::context::Workspace;
use crate::build;
use crate::config::Test;
use crate::git;
use crate::measure;
use crate::store::{Appender, Sample};

impl Workspace {
    /// Open the store for appending one test's samples, reporting repairs. The fingerprint the
    /// samples will record is kept in the cache, so reports can say what it was.
    pub fn appender(&self, test: &Test) -> anyhow::Result<Appender> {
        self.counter_note(test)?;
        if let Err(e) = self.test_fingerprint(test).save(&self.cache.root) {
            self.warn(&format!(
                "{e:#}; reports will name this fingerprint by its id only"
            ));
        }
        let a = self
            .cache
            .store()
            .appender(&test.name)
            .with_context(|| format!("cannot open the result store of test `{}`", test.name))?;
        for w in &a.warnings {
            self.warn(w);
        }
        Ok(a)
    }

    /// What one run of `test` on `commit`'s build (`artifacts`) is made with, outside any
    /// window (a profile, a one-off).
    pub fn run_context<'a>(
        &'a self,
        test: &'a Test,
        commit: ObjectId,
        artifacts: &'a Path,
    ) -> measure::Context<'a> {
        let b = Batch {
            test,
            commit,
            artifacts,
            runs: 1,
            round: 0,
        };
        self.context(&b, 0)
    }

    fn context<'a>(&'a self, x: &Batch<'a>, window: u64) -> measure::Context<'a> {
        measure::Context {
            test: x.test,
            config_dir: &self.config.dir,
            artifacts: x.artifacts,
            commit: x.commit,
            recipe_hash: self.config.build.recipe_hash(),
            round: x.round,
            fingerprint: self.test_fingerprint(x.test).id(),
            window,
        }
    }

    /// Before `test` is first measured: which counter counts its instructions and why (once
    /// per test and process), or the error that no counter can, naming the Debian package
    /// (exit 2, before anything runs).
    pub fn counter_note(&self, test: &Test) -> anyhow::Result<()> {
        if !matches!(test.metric, crate::config::Metric::Instructions) {
            return Ok(());
        }
        static NOTED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        let sel = crate::process::counter::select(test.counter).map_err(|e| {
            crate::error::UsageError::err(format!(
                "test `{}` cannot count instructions: {e}",
                test.name
            ))
        })?;
        let mut noted = NOTED.lock().unwrap_or_else(|e| e.into_inner());
        if !noted.contains(&test.name) {
            noted.push(test.name.clone());
            let slow = match sel.counter {
                crate::process::counter::Counter::Cachegrind { .. } => {
                    "; a run under Valgrind takes 10 to 50 times as long as a plain one"
                }
                crate::process::counter::Counter::Perf => "",
            };
            self.note(&format!(
                "perfbisect: test `{}` counts instructions with {}: {}{slow}",
                test.name,
                sel.counter.describe(),
                sel.why
            ));
        }
        Ok(())
    }

    /// Keep the unit `test`'s harness reported, for later invocations (best effort: a unit
    /// that cannot be written is learned again from the next run).
    fn keep_unit(&self, test: &Test) {
        if let Some(u) = test.tool_unit.get() {
            let store = self.cache.store();
            let hash = test.definition_hash();
            if store.tool_unit(&test.name, hash).as_deref() != Some(u.as_str()) {
                if let Err(e) = store.set_tool_unit(&test.name, hash, &u) {
                    self.warn(&format!("{e:#}"));
                }
            }
        }
    }

    /// Measure tests that share their command on one commit (see
    /// [`measure::shared_batch`]): `batches[i].runs` samples of each, from one execution per
    /// repeat, each stored (in `appenders[i]`) before the next run starts. Returns the number
    /// of executions.
    pub fn measure_shared(
        &self,
        appenders: &mut [&mut Appender],
        batches: &[Batch<'_>],
        each: &mut dyn FnMut(usize, &Sample),
    ) -> anyhow::Result<usize> {
        let window = crate::store::new_window();
        let ctxs: Vec<measure::Context<'_>> =
            batches.iter().map(|b| self.context(b, window)).collect();
        let runs: Vec<usize> = batches.iter().map(|b| b.runs).collect();
        let mut warned = vec![false; batches.len()];
        let n = measure::shared_batch(
            &ctxs,
            &runs,
            &mut |i, s| {
                appenders[i].append(&s)?;
                crate::base::interrupt::kept_run();
                if let Some(e) = &s.error {
                    if self.verbosity.verbose > 0 || !warned[i] {
                        warned[i] = true;
                        self.warn(&format!(
                            "run of `{}` on {} failed: {}",
                            batches[i].test.name,
                            git::short(&batches[i].commit),
                            e.trim_end()
                        ));
                    }
                }
                each(i, &s);
                Ok(())
            },
            &|w| self.warn(w),
        )?;
        for b in batches {
            self.keep_unit(b.test);
        }
        Ok(n)
    }

    /// Run two batches interleaved (A B A B ...), each sample stored before the next run.
    pub fn measure_interleaved(
        &self,
        appender: &mut Appender,
        a: Batch<'_>,
        b: Batch<'_>,
        each: &mut dyn FnMut(&Sample),
    ) -> anyhow::Result<(Vec<Sample>, Vec<Sample>)> {
        build::cas::mark_used(a.artifacts);
        build::cas::mark_used(b.artifacts);
        let window = crate::store::new_window();
        let (ca, cb) = (self.context(&a, window), self.context(&b, window));
        let mut got = (Vec::new(), Vec::new());
        measure::interleaved(
            &ca,
            &cb,
            a.runs.min(b.runs),
            &mut |side, s| {
                appender.append(&s)?;
                crate::base::interrupt::kept_run();
                each(&s);
                if side {
                    got.1.push(s);
                } else {
                    got.0.push(s);
                }
                Ok(())
            },
            &|w| self.warn(w),
        )?;
        self.keep_unit(a.test);
        Ok(got)
    }

    /// Measure one test on several built commits together, in interleaved rounds (see
    /// [`measure::rounds`]): `batches[i].runs` runs of each, every sample stored before the
    /// next run starts. `window` continues an earlier window of these commits, its rounds
    /// numbered from the given moment on; `None` starts a new one. A commit whose test fails
    /// `limit` runs in a row gets no more runs. Returns the window, the samples of each batch
    /// and what the rounds cost.
    ///
    /// With `parallel` above 1 up to that many runs of a round go at once, each on another
    /// commit: only for metrics the machine's load does not move (those [`crate::pipeline::shards::dependence`]
    /// finds independent of the machine: Cachegrind counts, declared deterministic values).
    #[allow(clippy::too_many_arguments)]
    pub fn measure_window(
        &self,
        appender: &mut Appender,
        batches: &[Batch<'_>],
        window: Option<(u64, u32)>,
        limit: usize,
        parallel: usize,
        each: &mut dyn FnMut(&Sample),
    ) -> anyhow::Result<(u64, Vec<Vec<Sample>>, measure::RoundsDone)> {
        let (window, first_moment) = window.unwrap_or_else(|| (crate::store::new_window(), 0));
        for b in batches {
            build::cas::mark_used(b.artifacts);
        }
        let ctxs: Vec<measure::Context<'_>> =
            batches.iter().map(|b| self.context(b, window)).collect();
        let units: Vec<measure::Unit<'_, '_>> = ctxs
            .iter()
            .zip(batches)
            .map(|(c, b)| measure::Unit::one(c, b.runs))
            .collect();
        let mut got: Vec<Vec<Sample>> = vec![Vec::new(); batches.len()];
        let mut streak = vec![0usize; batches.len()];
        let mut warned = false;
        let done = measure::rounds_parallel(
            &units,
            window ^ u64::from(first_moment).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            first_moment,
            parallel,
            &mut |u, _, s| {
                appender.append(&s)?;
                crate::base::interrupt::kept_run();
                if let Some(e) = &s.error {
                    streak[u] += 1;
                    if self.verbosity.verbose > 0 || !warned {
                        warned = true;
                        self.warn(&format!(
                            "run of `{}` on {} failed: {}",
                            batches[u].test.name,
                            git::short(&batches[u].commit),
                            e.trim_end()
                        ));
                    }
                } else {
                    streak[u] = 0;
                }
                each(&s);
                got[u].push(s);
                Ok(streak[u] < limit.max(1))
            },
            &|w| self.warn(w),
        )?;
        if let Some(b) = batches.first() {
            self.keep_unit(b.test);
        }
        Ok((window, got, done))
    }

    /// Measure tests on many built commits in one session of interleaved rounds (`run`): in
    /// each round every visit (one commit, the tests of one share group) that still needs runs
    /// gets one execution, in an order that changes every round, so that the machine's drift
    /// falls on every commit alike. `appenders[t]` stores test `t`'s samples (`visits[v].tests`
    /// index into them), each before the next run starts. Returns what the rounds cost and
    /// every sample with its visit and test.
    /// `parallel` as for [`Workspace::measure_window`].
    pub fn measure_session(
        &self,
        appenders: &mut [&mut Appender],
        visits: &[Visit<'_>],
        parallel: usize,
        each: &mut dyn FnMut(usize, &Sample),
    ) -> anyhow::Result<(measure::RoundsDone, Vec<SessionSample>)> {
        let window = crate::store::new_window();
        let ctxs: Vec<Vec<measure::Context<'_>>> = visits
            .iter()
            .map(|v| v.batches.iter().map(|b| self.context(b, window)).collect())
            .collect();
        for v in visits {
            if let Some(b) = v.batches.first() {
                build::cas::mark_used(b.artifacts);
            }
        }
        let units: Vec<measure::Unit<'_, '_>> = ctxs
            .iter()
            .zip(visits)
            .map(|(cs, v)| measure::Unit {
                ctxs: cs.iter().collect(),
                runs: v.batches.iter().map(|b| b.runs).collect(),
            })
            .collect();
        let mut got = Vec::new();
        let mut warned = vec![false; appenders.len()];
        let done = measure::rounds_parallel(
            &units,
            window,
            0,
            parallel,
            &mut |u, i, s| {
                let t = visits[u].tests[i];
                appenders[t].append(&s)?;
                crate::base::interrupt::kept_run();
                if let Some(e) = &s.error {
                    if self.verbosity.verbose > 0 || !warned[t] {
                        warned[t] = true;
                        self.warn(&format!(
                            "run of `{}` on {} failed: {}",
                            visits[u].batches[i].test.name,
                            git::short(&visits[u].batches[i].commit),
                            e.trim_end()
                        ));
                    }
                }
                each(t, &s);
                got.push((u, t, s));
                Ok(true)
            },
            &|w| self.warn(w),
        )?;
        for v in visits {
            for b in &v.batches {
                self.keep_unit(b.test);
            }
        }
        Ok((done, got))
    }

    /// Measure a batch of runs of a test on a built commit, storing each before the next
    /// starts; `each` sees every sample after it is stored.
    pub fn measure(
        &self,
        appender: &mut Appender,
        batch: Batch<'_>,
        each: &mut dyn FnMut(&Sample),
    ) -> anyhow::Result<Vec<Sample>> {
        build::cas::mark_used(batch.artifacts);
        let ctx = self.context(&batch, crate::store::new_window());
        let (test, commit) = (batch.test, batch.commit);
        let mut got = Vec::new();
        measure::batch(
            &ctx,
            batch.runs,
            &mut |s| {
                appender.append(&s)?;
                crate::base::interrupt::kept_run();
                if let Some(e) = &s.error {
                    if self.verbosity.verbose > 0 || got.is_empty() {
                        self.warn(&format!(
                            "run of `{}` on {} failed: {}",
                            test.name,
                            git::short(&commit),
                            e.trim_end()
                        ));
                    }
                }
                each(&s);
                got.push(s);
                Ok(())
            },
            &|w| self.warn(w),
        )?;
        self.keep_unit(test);
        Ok(got)
    }
}

/// A sample of a session: the visit it came from, its test (the appender's index), itself.
pub type SessionSample = (usize, usize, Sample);

/// One commit's place in a [`Workspace::measure_session`]: the batches of the tests of one
/// share group it needs runs of (one execution feeds them all), and the index of each test
/// among the session's appenders.
pub struct Visit<'a> {
    pub batches: Vec<Batch<'a>>,
    pub tests: Vec<usize>,
}

/// What to measure: `runs` runs of `test` on `commit`, whose artifacts are at `artifacts`,
/// stored as round `round`.
pub struct Batch<'a> {
    pub test: &'a Test,
    pub commit: ObjectId,
    pub artifacts: &'a Path,
    pub runs: usize,
    pub round: u32,
}
