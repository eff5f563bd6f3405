//! Measuring a test on a built commit: setup, warm-ups, repeats, teardown; each run's wall,
//! user and sys time, max RSS and metric. A run that fails or whose metric cannot be read is
//! recorded as failed with the tail of its output, never dropped and never given a value.

pub mod adapters;
pub mod launch;
pub mod process;

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use gix::ObjectId;

use crate::config::{Metric, Test};
use crate::store::{commit_key, Sample};
use process::{Output, Spec, Status};

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
    /// The [`crate::fingerprint::Fingerprint::id`] every sample records.
    pub fingerprint: u64,
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
        })?;
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

    /// Run the test command once and read its metric.
    pub fn run_once(&self) -> anyhow::Result<Sample> {
        let ran = execute(&[self])?;
        Ok(self.sample(&ran, 0))
    }

    /// The sample of this context's test from `ran`, whose contexts' `index`th is this one.
    fn sample(&self, ran: &Ran, index: usize) -> Sample {
        let (value, error) = match read_metric(self.test, ran, index) {
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
}

/// Run the command of `ctxs` (equal for all: one test, or tests sharing runs) once, capturing
/// what each test's metric reads.
fn execute(ctxs: &[&Context<'_>]) -> anyhow::Result<Ran> {
    let first = ctxs[0];
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
            matches!(&c.test.metric, Metric::Harness(a) if a.harness == adapters::Harness::Criterion)
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
    })?;
    Ok(Ran { fin, out, regex_of })
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
            if crate::interrupt::requested() {
                return Ok(0);
            }
            execute(&all)?;
        }
        let mut n = 0;
        for k in 0..most {
            if crate::interrupt::requested() {
                break;
            }
            let ran = execute(&all)?;
            for (i, c) in ctxs.iter().enumerate() {
                if k < runs[i] {
                    sink(i, c.sample(&ran, i))?;
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
            if crate::interrupt::requested() {
                return Ok(0);
            }
            ctx.run_once()?;
        }
        let mut n = 0;
        for _ in 0..runs {
            if crate::interrupt::requested() {
                break;
            }
            sink(ctx.run_once()?)?;
            n += 1;
        }
        Ok(n)
    })();
    ctx.teardown_or_warn(warn)?;
    result
}

/// Run `a` and `b` alternately (A B A B ...) `runs` times each, so that drift of the machine
/// hits both sides alike; each sample goes to `sink` (with `true` for side B) before the next
/// run. Returns how many pairs ran. A failing `teardown` is reported through `warn`.
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
    if runs == 0 {
        return Ok(0);
    }
    for (side, ctx) in [(false, a), (true, b)] {
        if let Err(why) = ctx.setup()? {
            sink(side, ctx.failed_sample(why))?;
            // Undo the setups that ran: A's when B's failed, and the failed one's part.
            a.teardown_or_warn(warn)?;
            if side {
                b.teardown_or_warn(warn)?;
            }
            return Ok(0);
        }
    }
    let result = (|| {
        for _ in 0..a.test.warmup {
            a.run_once()?;
            b.run_once()?;
        }
        let mut n = 0;
        let mut going = [true, true];
        for _ in 0..runs {
            if crate::interrupt::requested() || going == [false, false] {
                break;
            }
            for (side, ctx) in [(false, a), (true, b)] {
                if going[usize::from(side)] {
                    going[usize::from(side)] = sink(side, ctx.run_once()?)?;
                }
            }
            n += 1;
        }
        Ok(n)
    })();
    for ctx in [a, b] {
        ctx.teardown_or_warn(warn)?;
    }
    result
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
        Metric::MaxRss => Ok(fin.max_rss as f64),
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
