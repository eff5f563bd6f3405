//! Measuring a test on a built commit: setup, warm-ups, repeats, teardown; each run's wall,
//! user and sys time, max RSS and metric. A run that fails or whose metric cannot be read is
//! recorded as failed with the tail of its output, never dropped and never given a value.

pub mod adapters;

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use gix::ObjectId;

use crate::config::{Metric, Test};
use crate::process::{self, counter, run_id, Output, Spec, Status};
use crate::store::{commit_key, Sample};

/// Largest stdout read whole for a JSON metric.
const JSON_STDOUT_LIMIT: usize = 16 * 1024 * 1024;

/// What a run is measured with.
pub struct Context<'a> {
    pub test: &'a Test,
    pub config_dir: &'a Path,
    pub artifacts: &'a Path,
    pub commit: ObjectId,
    pub recipe_hash: u64,
    pub round: u32,
    /// The [`crate::pipeline::fingerprint::Fingerprint::id`] every sample records.
    pub fingerprint: u64,
    /// The measuring session every sample records (see [`crate::store::Sample::window`]).
    pub window: u64,
}

impl Context<'_> {
    fn env(&self) -> Vec<(String, String)> {
        vec![
            ("PERFBISECT_COMMIT".into(), self.commit.to_string()),
            (
                "PERFBISECT_ARTIFACTS".into(),
                self.artifacts.display().to_string(),
            ),
            ("PERFBISECT_TEST".into(), self.test.name.clone()),
            (
                "PERFBISECT_CONFIG_DIR".into(),
                self.config_dir.display().to_string(),
            ),
            ("PERFBISECT_RUN".into(), run_id().to_string()),
        ]
    }

    /// Run the test's `setup` (if any); Err carries the reason it failed.
    pub fn setup(&self) -> anyhow::Result<Result<(), String>> {
        self.hook(self.test.setup.as_deref(), "setup")
    }

    /// Run the test's `teardown` (if any).
    pub fn teardown(&self) -> anyhow::Result<Result<(), String>> {
        self.hook(self.test.teardown.as_deref(), "teardown")
    }

    fn hook(&self, cmd: Option<&str>, what: &str) -> anyhow::Result<Result<(), String>> {
        let Some(cmd) = cmd else { return Ok(Ok(())) };
        if what == "setup" {
            // A batch starts on the build as stored: what an earlier batch's setup, or a run
            // a kill stopped before it was cleaned up after, left beside it goes.
            if let Some(g) = crate::build::guard::Guard::for_entry(self.artifacts) {
                let _ = g.remove_added("", &Default::default());
            }
        }
        // Hooks may start servers that outlive them, so their output goes to a file, not a pipe.
        let log = tempfile::tempfile().context("cannot create a temp file")?;
        let mut log_read = log.try_clone()?;
        let fin = process::run(Spec {
            command: cmd,
            dir: self.artifacts,
            env: self.env(),
            timeout: self.test.timeout,
            output: Output::File(log),
            interrupt: None,
            kill_leftovers: false,
            own_rss: false,
            extra: Default::default(),
        })?;
        if let Some(why) = crate::build::guard::Guard::for_entry(self.artifacts)
            .and_then(|g| g.check_after(&format!("the {what} of `{}`", self.test.name)))
        {
            return Ok(Err(why));
        }
        if fin.status.success() {
            return Ok(Ok(()));
        }
        use std::io::{Read, Seek, SeekFrom};
        let len = log_read.seek(SeekFrom::End(0)).unwrap_or(0);
        let _ = log_read.seek(SeekFrom::Start(
            len.saturating_sub(process::TAIL_BYTES as u64),
        ));
        // Bytes, not a String: the cut may fall inside a UTF-8 character, and
        // `read_to_string` would then drop the whole tail.
        let mut tail = Vec::new();
        let _ = log_read.read_to_end(&mut tail);
        let tail = String::from_utf8_lossy(&tail);
        Ok(Err(format!(
            "{what} `{cmd}` failed ({})\n{}",
            fin.status,
            if tail.trim().is_empty() {
                "(no output)"
            } else {
                &tail
            }
        )))
    }

    /// Run the test's `teardown` (if any) and hand a failure to `warn`, naming the test and
    /// the commit, with the tail of the teardown's output.
    fn teardown_or_warn(&self, warn: &dyn Fn(&str)) -> anyhow::Result<()> {
        if let Err(why) = self.teardown()? {
            warn(&teardown_warning(self, &why));
        }
        Ok(())
    }

    /// Run the test command once and read its metric, as moment `moment` of the window.
    pub fn run_once(&self, moment: u32, warn: &dyn Fn(&str)) -> anyhow::Result<Sample> {
        let ran = execute(&[self], warn)?;
        Ok(self.sample(&ran, 0, moment))
    }

    /// The sample of this context's test from `ran`, whose contexts' `index`th is this one.
    fn sample(&self, ran: &Ran, index: usize, moment: u32) -> Sample {
        let (value, error) = match ran
            .void
            .clone()
            .map_or_else(|| read_metric(self.test, ran, index), Err)
        {
            Ok(v) => (Some(v), None),
            Err(e) => (None, Some(e)),
        };
        Sample {
            commit: commit_key(&self.commit),
            test_hash: self.test.definition_hash(),
            recipe_hash: self.recipe_hash,
            time: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            round: self.round,
            wall: ran.fin.wall,
            user: ran.fin.user,
            sys: ran.fin.sys,
            max_rss: ran.fin.max_rss,
            value,
            error,
            fingerprint: self.fingerprint,
            import: None,
            window: self.window,
            moment,
        }
    }

    /// A failed sample that records why no run could happen (e.g. `setup` failed).
    pub fn failed_sample(&self, error: String) -> Sample {
        Sample {
            commit: commit_key(&self.commit),
            test_hash: self.test.definition_hash(),
            recipe_hash: self.recipe_hash,
            time: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            round: self.round,
            wall: 0.0,
            user: 0.0,
            sys: 0.0,
            max_rss: 0,
            value: None,
            error: Some(error),
            fingerprint: self.fingerprint,
            import: None,
            window: self.window,
            moment: 0,
        }
    }
}

/// One execution of a command whose output feeds one or more tests.
struct Ran {
    fin: process::Finished,
    /// The run's scratch directory (`PERFBISECT_OUT`), removed when this is dropped.
    out: Option<tempfile::TempDir>,
    /// Per context: the index of its regex among the capture's regexes.
    regex_of: Vec<Option<usize>>,
    /// The run could not happen, or changed the files of its build (see [`crate::build::guard`]):
    /// why it does not count.
    void: Option<String>,
}

/// Run the command of `ctxs` (equal for all: one test, or tests sharing runs) once, capturing
/// what each test's metric reads. A run that changed the files of its build still counts (it
/// started on the build as stored) and is reported through `warn`; the build is dropped, so
/// later runs of it are void until it is built again.
fn execute(ctxs: &[&Context<'_>], warn: &dyn Fn(&str)) -> anyhow::Result<Ran> {
    let first = ctxs[0];
    let guard = crate::build::guard::Guard::for_entry(first.artifacts);
    let who = format!(
        "a run of `{}` on {}",
        first.test.name,
        crate::git::short(&first.commit)
    );
    if let Some(g) = &guard {
        // Changed before this run (by a hook, or by a process outside perfbisect): not used.
        let before = if g.gone() {
            Some(format!(
                "the build of {} was dropped from the cache after a run changed its files; \
                 it is built again when next needed",
                crate::git::short(&first.commit)
            ))
        } else {
            g.check_after("something before this run")
        };
        if let Some(why) = before {
            return Ok(Ran::void(why));
        }
    }
    // What the directory holds besides the build now: what `setup` put there stays for the
    // batch; without a setup nothing may be there (a run a kill stopped left it), so it goes.
    // The run's own additions are what it holds after and did not before.
    let listed = match &guard {
        Some(g) if first.test.setup.is_some() => g.extra(),
        Some(g) => {
            if let Some(why) = g.remove_added("something before this run", &Default::default()) {
                warn(&why);
            }
            Default::default()
        }
        None => Default::default(),
    };
    let mut regexes = Vec::new();
    let mut regex_of = Vec::new();
    let mut keep = 0;
    for c in ctxs {
        match &c.test.metric {
            Metric::Regex(r) => {
                regex_of.push(Some(regexes.len()));
                regexes.push(r.clone());
            }
            Metric::Json(_) | Metric::Harness(_) => {
                keep = JSON_STDOUT_LIMIT;
                regex_of.push(None);
            }
            _ => regex_of.push(None),
        }
    }
    let mut env = first.env();
    if ctxs.len() > 1 {
        let names: Vec<&str> = ctxs.iter().map(|c| c.test.name.as_str()).collect();
        for (k, v) in env.iter_mut() {
            if k == "PERFBISECT_TEST" {
                *v = names.join(",");
            }
        }
    }
    let out = if ctxs.iter().any(|c| c.test.needs_out_dir()) {
        let dir = tempfile::Builder::new()
            .prefix("perfbisect-out.")
            .tempdir()
            .context("cannot create the run's scratch directory")?;
        env.push(("PERFBISECT_OUT".into(), dir.path().display().to_string()));
        let criterion = ctxs.iter().any(|c| {
            matches!(&c.test.metric, Metric::Harness(a) if a.harness == crate::config::harness::Harness::Criterion)
        });
        if criterion {
            // criterion writes `<id>/new/estimates.json` under CRITERION_HOME: a fresh one per
            // run means only this run's results are there to read.
            env.push((
                "CRITERION_HOME".into(),
                dir.path().join("criterion").display().to_string(),
            ));
        }
        Some(dir)
    } else {
        None
    };
    // Instructions: the hardware counter (through the launcher) or Cachegrind, whose files
    // go to a scratch directory of this run's.
    let mut cg_dir = None;
    let count = if matches!(first.test.metric, Metric::Instructions) {
        let sel = counter::select(first.test.counter).map_err(|e| {
            crate::error::UsageError::err(format!("test `{}`: {e}", first.test.name))
        })?;
        Some(match sel.counter {
            counter::Counter::Perf => process::Count::Perf,
            counter::Counter::Cachegrind { valgrind, .. } => {
                let dir = tempfile::Builder::new()
                    .prefix("perfbisect-cachegrind.")
                    .tempdir()
                    .context("cannot create a directory for Cachegrind's output")?;
                let path = dir.path().to_path_buf();
                cg_dir = Some(dir);
                process::Count::Cachegrind {
                    valgrind,
                    dir: path,
                }
            }
        })
    } else {
        None
    };
    let fin = process::run(Spec {
        command: &first.test.command,
        dir: first.artifacts,
        env,
        timeout: first.test.timeout,
        output: Output::Capture {
            regexes,
            keep_stdout: keep,
        },
        interrupt: None,
        kill_leftovers: true,
        own_rss: ctxs.iter().any(|c| matches!(c.test.metric, Metric::MaxRss)),
        extra: process::Extra {
            count,
            cpus: first.test.cpus.clone(),
            no_aslr: !first.test.aslr,
        },
    })?;
    drop(cg_dir);
    if let Some(g) = &guard {
        if let Some(why) = g.check_after(&who) {
            warn(&why);
        } else if let Some(why) = g.remove_added(&who, &listed) {
            warn(&why);
        }
    }
    Ok(Ran {
        fin,
        out,
        regex_of,
        void: None,
    })
}

impl Ran {
    /// A run that did not happen, for the reason given.
    fn void(why: String) -> Ran {
        Ran {
            fin: process::Finished {
                status: Status::Exited(-1),
                wall: 0.0,
                user: 0.0,
                sys: 0.0,
                max_rss: 0,
                stdout: Vec::new(),
                stdout_truncated: false,
                regex_matches: Vec::new(),
                tail: String::new(),
                instructions: None,
                left_behind: 0,
            },
            out: None,
            regex_of: Vec::new(),
            void: Some(why),
        }
    }
}

/// Run the test once under Valgrind's Cachegrind (`valgrind`), every process of its tree
/// writing its per-function counts into `dir`, between the test's setup and teardown, with the
/// timeout scaled by `slower` (Valgrind runs a program 10-50 times slower). `Err` inside: why
/// no profile was made (a failing setup, the command failed or timed out under Valgrind).
pub fn profile_once(
    ctx: &Context<'_>,
    valgrind: &Path,
    dir: &Path,
    slower: u32,
) -> anyhow::Result<Result<(), String>> {
    let _doing = crate::base::interrupt::doing(crate::base::interrupt::Activity::Measuring);
    if let Err(why) = ctx.setup()? {
        let _ = ctx.teardown();
        return Ok(Err(why));
    }
    let mut env = ctx.env();
    let out = if ctx.test.needs_out_dir() {
        let d = tempfile::Builder::new()
            .prefix("perfbisect-out.")
            .tempdir()
            .context("cannot create the run's scratch directory")?;
        env.push(("PERFBISECT_OUT".into(), d.path().display().to_string()));
        Some(d)
    } else {
        None
    };
    let fin = process::run(Spec {
        command: &ctx.test.command,
        dir: ctx.artifacts,
        env,
        timeout: ctx.test.timeout.saturating_mul(slower.max(1)),
        output: Output::Capture {
            regexes: Vec::new(),
            keep_stdout: 0,
        },
        interrupt: None,
        kill_leftovers: true,
        own_rss: false,
        extra: process::Extra {
            count: Some(process::Count::Cachegrind {
                valgrind: valgrind.to_path_buf(),
                dir: dir.to_path_buf(),
            }),
            cpus: ctx.test.cpus.clone(),
            no_aslr: !ctx.test.aslr,
        },
    });
    drop(out);
    let _ = ctx.teardown();
    let fin = fin?;
    if !fin.status.success() {
        return Ok(Err(format!(
            "the test under Valgrind ended with {}\n{}",
            fin.status,
            fin.tail.trim_end()
        )));
    }
    Ok(match fin.instructions {
        Some(Err(e)) => Err(e),
        _ => Ok(()),
    })
}

/// Measure tests that share their command (see [`Test::share_key`](crate::config::Test::share_key))
/// on one commit: one setup, the warm-ups, and `max(runs)` executions whose output each test
/// reads, test `i` keeping the samples of the first `runs[i]`; one teardown. Each sample goes
/// to `sink` with its test's index before the next run. Returns the number of executions.
pub fn shared_batch(
    ctxs: &[Context<'_>],
    runs: &[usize],
    sink: &mut dyn FnMut(usize, Sample) -> anyhow::Result<()>,
    warn: &dyn Fn(&str),
) -> anyhow::Result<usize> {
    let _doing = crate::base::interrupt::doing(crate::base::interrupt::Activity::Measuring);
    let most = runs.iter().copied().max().unwrap_or(0);
    if most == 0 || ctxs.is_empty() {
        return Ok(0);
    }
    let first = &ctxs[0];
    if let Err(why) = first.setup()? {
        for (i, c) in ctxs.iter().enumerate() {
            if runs[i] > 0 {
                sink(i, c.failed_sample(why.clone()))?;
            }
        }
        first.teardown_or_warn(warn)?;
        return Ok(0);
    }
    let all: Vec<&Context<'_>> = ctxs.iter().collect();
    let result = (|| {
        for _ in 0..first.test.warmup {
            if crate::base::interrupt::requested() {
                return Ok(0);
            }
            execute(&all, warn)?;
        }
        let mut n = 0;
        for k in 0..most {
            if crate::base::interrupt::requested() {
                break;
            }
            let ran = execute(&all, warn)?;
            for (i, c) in ctxs.iter().enumerate() {
                if k < runs[i] {
                    // Back to back: one moment.
                    sink(i, c.sample(&ran, i, 0))?;
                }
            }
            n += 1;
        }
        Ok(n)
    })();
    first.teardown_or_warn(warn)?;
    result
}

/// What a failed teardown is reported as: test, commit, and the tail of its output.
fn teardown_warning(ctx: &Context<'_>, why: &str) -> String {
    let mut lines = why.trim_end().lines();
    let head = lines.next().unwrap_or("teardown failed");
    let tail: Vec<String> = lines.map(|l| format!("    {l}")).collect();
    format!(
        "test `{}` on {}: {head}{}",
        ctx.test.name,
        crate::git::short(&ctx.commit),
        if tail.is_empty() {
            String::new()
        } else {
            format!("; its output ends with:\n{}", tail.join("\n"))
        }
    )
}

/// Measure `runs` runs (after the test's warm-ups), handing each sample to `sink` before the
/// next run starts. Stops early on Ctrl-C. Returns the number of samples produced. A failing
/// `teardown` is reported through `warn`.
pub fn batch(
    ctx: &Context<'_>,
    runs: usize,
    sink: &mut dyn FnMut(Sample) -> anyhow::Result<()>,
    warn: &dyn Fn(&str),
) -> anyhow::Result<usize> {
    let _doing = crate::base::interrupt::doing(crate::base::interrupt::Activity::Measuring);
    if runs == 0 {
        return Ok(0);
    }
    if let Err(why) = ctx.setup()? {
        sink(ctx.failed_sample(why))?;
        ctx.teardown_or_warn(warn)?;
        return Ok(1);
    }
    let result = (|| {
        for _ in 0..ctx.test.warmup {
            if crate::base::interrupt::requested() {
                return Ok(0);
            }
            ctx.run_once(0, warn)?;
        }
        let mut n = 0;
        for _ in 0..runs {
            if crate::base::interrupt::requested() {
                break;
            }
            // Back to back: one moment.
            sink(ctx.run_once(0, warn)?)?;
            n += 1;
        }
        Ok(n)
    })();
    ctx.teardown_or_warn(warn)?;
    result
}

/// Run `a` and `b` interleaved, `runs` times each, so that drift of the machine hits both
/// sides alike; each sample goes to `sink` (with `true` for side B) before the next run.
/// Returns how many rounds ran. A failing `teardown` is reported through `warn`.
pub fn interleaved(
    a: &Context<'_>,
    b: &Context<'_>,
    runs: usize,
    sink: &mut dyn FnMut(bool, Sample) -> anyhow::Result<()>,
    warn: &dyn Fn(&str),
) -> anyhow::Result<usize> {
    interleaved_while(
        a,
        b,
        runs,
        &mut |side, s| {
            sink(side, s)?;
            Ok(true)
        },
        warn,
    )
}

/// [`interleaved`], where `sink` returns whether its side goes on: a side it stops (a test that
/// keeps failing) gets no more runs, and the other side's runs go on alone. Returns how many
/// rounds ran.
pub fn interleaved_while(
    a: &Context<'_>,
    b: &Context<'_>,
    runs: usize,
    sink: &mut dyn FnMut(bool, Sample) -> anyhow::Result<bool>,
    warn: &dyn Fn(&str),
) -> anyhow::Result<usize> {
    let _doing = crate::base::interrupt::doing(crate::base::interrupt::Activity::Measuring);
    let units = [Unit::one(a, runs), Unit::one(b, runs)];
    let done = rounds(&units, a.window, 0, &mut |u, _, s| sink(u == 1, s), warn)?;
    Ok(done.rounds)
}

/// What is measured together on one commit in [`rounds`]: one test, or tests that share
/// their command (one execution feeds each of them; see [`shared_batch`]), with the runs
/// each still needs.
pub struct Unit<'c, 'a> {
    pub ctxs: Vec<&'c Context<'a>>,
    pub runs: Vec<usize>,
}

impl<'c, 'a> Unit<'c, 'a> {
    /// One test on one commit.
    pub fn one(ctx: &'c Context<'a>, runs: usize) -> Unit<'c, 'a> {
        Unit {
            ctxs: vec![ctx],
            runs: vec![runs],
        }
    }
}

/// What [`rounds`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoundsDone {
    /// Rounds that ran (one run of each unit that still needed one).
    pub rounds: usize,
    /// Executions of the test commands whose samples were kept.
    pub runs: usize,
    /// Setups that ran, and warm-up runs thrown away.
    pub setups: usize,
    pub warmups: usize,
}

/// Interleaved rounds across `units` (commits): in each round every unit that still needs
/// runs gets one, in an order that changes from round to round (seeded by `seed`, so the
/// same session runs in the same order), so that drift of the machine falls on every commit
/// alike and becomes noise instead of a step. A unit's setup and warm-ups run right before its
/// first run; every teardown runs once the session is over, so the setups of several commits
/// are in effect together (one setup and teardown per commit, as when its runs are back to
/// back). Every sample is moment `round` of the units' window (counted from `first_moment`,
/// so a later pass over the same window adds moments) and goes to `sink(unit, test, sample)`
/// before the next run starts; `sink` returns whether the unit goes on (a test that keeps
/// failing stops it). Stops early on Ctrl-C.
pub fn rounds(
    units: &[Unit<'_, '_>],
    seed: u64,
    first_moment: u32,
    sink: &mut dyn FnMut(usize, usize, Sample) -> anyhow::Result<bool>,
    warn: &dyn Fn(&str),
) -> anyhow::Result<RoundsDone> {
    rounds_parallel(units, seed, first_moment, 1, sink, warn)
}

/// [`rounds`], with up to `parallel` runs of a round at once, each of another commit (a
/// commit's runs never overlap: they share its build's directory). Only for metrics the load
/// of the machine does not move (instructions under Cachegrind, declared deterministic values):
/// the caller decides. Setups and warm-ups still run one at a time, before their unit's first
/// run; samples reach `sink` in the round's order, once every run of their group has ended.
pub fn rounds_parallel(
    units: &[Unit<'_, '_>],
    seed: u64,
    first_moment: u32,
    parallel: usize,
    sink: &mut dyn FnMut(usize, usize, Sample) -> anyhow::Result<bool>,
    warn: &dyn Fn(&str),
) -> anyhow::Result<RoundsDone> {
    let parallel = parallel.max(1);
    let _doing = crate::base::interrupt::doing(crate::base::interrupt::Activity::Measuring);
    let mut done = RoundsDone::default();
    let mut left: Vec<Vec<usize>> = units.iter().map(|u| u.runs.clone()).collect();
    let mut going: Vec<bool> = units
        .iter()
        .map(|u| !u.ctxs.is_empty() && u.runs.iter().any(|&r| r > 0))
        .collect();
    // Set up (and warmed up) so far: these get a teardown at the end.
    let mut active = vec![false; units.len()];
    let result = (|| -> anyhow::Result<()> {
        let mut rng = seed | 1;
        let mut round = first_moment;
        loop {
            let mut order: Vec<usize> = (0..units.len())
                .filter(|&u| going[u] && left[u].iter().any(|&r| r > 0))
                .collect();
            if order.is_empty() || crate::base::interrupt::requested() {
                break;
            }
            shuffle(&mut order, &mut rng);
            if parallel > 1 {
                for group in order.chunks(parallel) {
                    if crate::base::interrupt::requested() {
                        return Ok(());
                    }
                    let mut ready = Vec::with_capacity(group.len());
                    for &u in group {
                        if start_unit(
                            &units[u],
                            &mut active[u],
                            &left[u],
                            &mut done,
                            u,
                            sink,
                            warn,
                        )? {
                            ready.push(u);
                        } else {
                            going[u] = false;
                        }
                    }
                    let said = std::sync::Mutex::new(Vec::new());
                    let ran: Vec<anyhow::Result<Ran>> = std::thread::scope(|scope| {
                        let handles: Vec<_> = ready
                            .iter()
                            .map(|&u| {
                                let said = &said;
                                let ctxs = &units[u].ctxs;
                                scope.spawn(move || {
                                    let collect = |w: &str| {
                                        if let Ok(mut v) = said.lock() {
                                            v.push(w.to_string());
                                        }
                                    };
                                    execute(ctxs, &collect)
                                })
                            })
                            .collect();
                        handles
                            .into_iter()
                            .map(|h| {
                                h.join().unwrap_or_else(|_| {
                                    Err(anyhow::anyhow!("a run's thread panicked"))
                                })
                            })
                            .collect()
                    });
                    for w in said.into_inner().unwrap_or_default() {
                        warn(&w);
                    }
                    for (&u, r) in ready.iter().zip(ran) {
                        let r = r?;
                        done.runs += 1;
                        for (t, c) in units[u].ctxs.iter().enumerate() {
                            if left[u][t] > 0 {
                                left[u][t] -= 1;
                                if !sink(u, t, c.sample(&r, t, round))? {
                                    going[u] = false;
                                }
                            }
                        }
                    }
                }
                round += 1;
                done.rounds += 1;
                continue;
            }
            for u in order {
                if crate::base::interrupt::requested() {
                    return Ok(());
                }
                let first = units[u].ctxs[0];
                if !active[u] {
                    active[u] = true;
                    if first.test.setup.is_some() {
                        done.setups += 1;
                    }
                    if let Err(why) = first.setup()? {
                        for (t, c) in units[u].ctxs.iter().enumerate() {
                            if left[u][t] > 0 {
                                sink(u, t, c.failed_sample(why.clone()))?;
                            }
                        }
                        going[u] = false;
                        continue;
                    }
                    for _ in 0..first.test.warmup {
                        if crate::base::interrupt::requested() {
                            return Ok(());
                        }
                        execute(&units[u].ctxs, warn)?;
                        done.warmups += 1;
                    }
                }
                let ran = execute(&units[u].ctxs, warn)?;
                done.runs += 1;
                for (t, c) in units[u].ctxs.iter().enumerate() {
                    if left[u][t] > 0 {
                        left[u][t] -= 1;
                        if !sink(u, t, c.sample(&ran, t, round))? {
                            going[u] = false;
                        }
                    }
                }
            }
            round += 1;
            done.rounds += 1;
        }
        Ok(())
    })();
    for (u, unit) in units.iter().enumerate() {
        if active[u] {
            unit.ctxs[0].teardown_or_warn(warn)?;
        }
    }
    result?;
    Ok(done)
}

/// A unit's setup and warm-ups before its first run of [`rounds_parallel`] (nothing once it is
/// active); `false` when it cannot run (its setup failed, said to `sink`, or Ctrl-C).
fn start_unit(
    unit: &Unit<'_, '_>,
    active: &mut bool,
    left: &[usize],
    done: &mut RoundsDone,
    u: usize,
    sink: &mut dyn FnMut(usize, usize, Sample) -> anyhow::Result<bool>,
    warn: &dyn Fn(&str),
) -> anyhow::Result<bool> {
    if *active {
        return Ok(true);
    }
    *active = true;
    let first = unit.ctxs[0];
    if first.test.setup.is_some() {
        done.setups += 1;
    }
    if let Err(why) = first.setup()? {
        for (t, c) in unit.ctxs.iter().enumerate() {
            if left[t] > 0 {
                sink(u, t, c.failed_sample(why.clone()))?;
            }
        }
        return Ok(false);
    }
    for _ in 0..first.test.warmup {
        if crate::base::interrupt::requested() {
            return Ok(false);
        }
        execute(&unit.ctxs, warn)?;
        done.warmups += 1;
    }
    Ok(true)
}

/// Fisher-Yates with xorshift (state `rng`, never 0): a different order every round, the same
/// for the same seed.
pub fn shuffle(order: &mut [usize], rng: &mut u64) {
    for i in (1..order.len()).rev() {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        order.swap(i, (*rng % (i as u64 + 1)) as usize);
    }
}

fn read_metric(test: &Test, ran: &Ran, index: usize) -> Result<f64, String> {
    let (metric, fin) = (&test.metric, &ran.fin);
    let tail = || {
        if fin.tail.trim().is_empty() {
            String::from("(no output)")
        } else {
            fin.tail.clone()
        }
    };
    // A counter that could not count says why, whatever the command did then.
    if let (Metric::Instructions, Some(Err(e))) = (metric, &fin.instructions) {
        if fin.status != Status::Exited(0) {
            return Err(format!("no instruction count: {e}\n{}", tail()));
        }
    }
    if fin.status != Status::Exited(0) {
        let what = match fin.status {
            Status::TimedOut => format!(
                "timed out after {}",
                humantime::format_duration(test.timeout)
            ),
            s => format!("{s}"),
        };
        return Err(format!("test command {what}\n{}", tail()));
    }
    match metric {
        Metric::Wall => Ok(fin.wall),
        Metric::User => Ok(fin.user),
        Metric::Sys => Ok(fin.sys),
        // 0: the launcher reported nothing (it is not enabled in this process).
        Metric::MaxRss if fin.max_rss == 0 => Err(format!(
            "no peak memory was measured (runs of max-rss tests go through perfbisect-launch, which did not report)\n{}",
            tail()
        )),
        Metric::MaxRss => Ok(fin.max_rss as f64),
        Metric::Instructions => match &fin.instructions {
            Some(Ok(n)) => Ok(*n as f64),
            Some(Err(e)) => Err(format!("no instruction count: {e}")),
            None => Err("no instruction count (the run was not counted)".into()),
        },
        Metric::Regex(re) => {
            match ran.regex_of[index].and_then(|i| fin.regex_matches[i].as_ref()) {
                None => Err(format!(
                    "no line of stdout matched the metric regex `{}`\n{}",
                    re.as_str(),
                    tail()
                )),
                Some(m) => parse_number(m).ok_or_else(|| {
                    format!(
                        "the metric regex `{}` captured `{m}`, which is not a number",
                        re.as_str()
                    )
                }),
            }
        }
        Metric::Json(ptr) => {
            if fin.stdout_truncated {
                return Err(format!(
                    "stdout is longer than {} MiB; cannot read the JSON metric",
                    JSON_STDOUT_LIMIT >> 20
                ));
            }
            let v: serde_json::Value = serde_json::from_slice(&fin.stdout)
                .map_err(|e| format!("stdout is not JSON ({e})\n{}", tail()))?;
            let at = v
                .pointer(ptr)
                .ok_or_else(|| format!("JSON pointer `{ptr}` is not in stdout\n{}", tail()))?;
            match at {
                serde_json::Value::Number(n) => n
                    .as_f64()
                    .ok_or_else(|| format!("`{ptr}` is not a finite number")),
                serde_json::Value::String(s) => parse_number(s)
                    .ok_or_else(|| format!("`{ptr}` is `{s}`, which is not a number")),
                other => Err(format!("`{ptr}` is {other}, not a number")),
            }
        }
        Metric::Harness(a) => {
            if a.file.is_none() && fin.stdout_truncated {
                return Err(format!(
                    "stdout is longer than {} MiB; write the {} output to a file in $PERFBISECT_OUT and set `file`",
                    JSON_STDOUT_LIMIT >> 20,
                    a.harness.name()
                ));
            }
            let src = adapters::Source {
                stdout: &fin.stdout,
                out_dir: ran.out.as_ref().map(|d| d.path()),
            };
            let r = adapters::read(a, &src).map_err(|e| format!("{e}\n{}", tail()))?;
            if let Some(u) = &r.unit {
                if let Err(old) = test.tool_unit.learn(u) {
                    return Err(format!(
                        "{} reported this value in `{u}`, but earlier runs of test `{}` were in `{old}`; perfbisect stores values as the tool reports them and does not mix units",
                        a.harness.name(),
                        test.name
                    ));
                }
            }
            Ok(r.value)
        }
    }
}

fn parse_number(s: &str) -> Option<f64> {
    let v: f64 = s.trim().parse().ok()?;
    v.is_finite().then_some(v)
}

#[cfg(test)]
mod tests {
    use super::shuffle;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(crate::stats::testing::proptest_config(200))]

        /// The interleaved schedule: every round holds each commit exactly once, so every
        /// commit gets one run per round (drift falls on all alike), and where a commit's run
        /// sits in its round moves from round to round (no commit is always first or last).
        #[test]
        fn every_round_holds_each_commit_once_in_a_changing_order(
            n in 1usize..60,
            rounds in 1usize..12,
            seed in any::<u64>(),
        ) {
            let mut rng = seed | 1;
            let mut place = vec![Vec::new(); n];
            for _ in 0..rounds {
                let mut order: Vec<usize> = (0..n).collect();
                shuffle(&mut order, &mut rng);
                let mut seen = order.clone();
                seen.sort_unstable();
                prop_assert_eq!(seen, (0..n).collect::<Vec<_>>());
                for (k, &u) in order.iter().enumerate() {
                    place[u].push(k);
                }
            }
            prop_assert!(place.iter().all(|p| p.len() == rounds));
            if n >= 8 && rounds >= 6 {
                // Over several rounds a commit's position is not fixed.
                let moved = place.iter().filter(|p| p.iter().any(|&k| k != p[0])).count();
                prop_assert!(moved * 10 >= n * 9, "{moved} of {n} commits moved");
            }
        }
    }
}
