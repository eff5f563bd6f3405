//! `perfbisect step TEST --old REV [--new REV]`, for `git bisect run`: classify the commit at
//! HEAD against the old (and new) commit, measuring what is missing, and answer with git
//! bisect's exit codes: 0 old, 1 new, 125 cannot tell, 128 fatal (stops the bisect).

use gix::ObjectId;

use crate::bisect::{classify, Class};
use crate::cli::{Global, StepArgs};
use crate::config::Test;
use crate::pipeline::{Batch, Workspace};
use crate::report::fmt_num;
use crate::store::Appender;

use super::{locations, verbosity};

/// Exit code that makes `git bisect run` stop.
const FATAL: i32 = 128;
/// Exit code for "skip this commit".
const SKIP: i32 = 125;

pub fn step(g: &Global, args: StepArgs) -> i32 {
    match run(g, &args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("perfbisect step: error: {e:#}");
            FATAL
        }
    }
}

/// Samples of `id`, topped up to `want` runs. `None` when it does not build.
fn topped_up(
    ws: &Workspace,
    appender: &mut Appender,
    test: &Test,
    id: ObjectId,
    have: &mut Vec<f64>,
    want: usize,
) -> anyhow::Result<bool> {
    if have.len() >= want {
        return Ok(true);
    }
    let (art, _) = ws.ensure_built(&id)?;
    let Some(art) = art else { return Ok(false) };
    let got = ws.measure(
        appender,
        Batch {
            test,
            commit: id,
            artifacts: &art,
            runs: want - have.len(),
            round: 0,
        },
        &mut |_| {},
    )?;
    if crate::interrupt::requested() {
        return Err(crate::interrupt::Interrupted.into());
    }
    have.extend(got.iter().map(|s| s.value.unwrap_or(f64::NAN)));
    Ok(true)
}

fn run(g: &Global, args: &StepArgs) -> anyhow::Result<i32> {
    let ws = Workspace::open(&locations(g), verbosity(g), true)?;
    let test = ws.config.test(&args.test)?.clone();
    let head = ws.repo.head()?;
    let old = ws.repo.resolve(&args.old)?;
    let new = args
        .new
        .as_deref()
        .map(|r| ws.repo.resolve(r))
        .transpose()?;
    let params = super::search_params(&test);
    let stored = ws.samples(&test)?;
    let values = |id: &ObjectId| -> Vec<f64> {
        stored
            .records(id)
            .iter()
            .map(|s| s.value.unwrap_or(f64::NAN))
            .collect()
    };
    let info = ws.repo.info(head)?;
    let mut appender = ws.appender(&test)?;

    let mut probe = values(&head);
    if !topped_up(&ws, &mut appender, &test, head, &mut probe, test.repeats)? {
        eprintln!(
            "perfbisect step: {} {} does not build: skip (125)",
            info.short(),
            info.subject
        );
        return Ok(SKIP);
    }
    let mut old_s = values(&old);
    if !topped_up(&ws, &mut appender, &test, old, &mut old_s, test.repeats)? {
        anyhow::bail!(
            "the --old commit {} does not build",
            crate::git::short(&old)
        );
    }
    let mut new_s = match new {
        Some(n) => {
            let mut v = values(&n);
            if !topped_up(&ws, &mut appender, &test, n, &mut v, test.repeats)? {
                anyhow::bail!("the --new commit {} does not build", crate::git::short(&n));
            }
            Some(v)
        }
        None => None,
    };
    loop {
        let class = classify(&old_s, new_s.as_deref(), &probe, &params);
        let finite = probe.iter().filter(|v| v.is_finite()).count();
        if class != Class::Unknown || probe.len() >= test.max_repeats || finite == 0 {
            let med = |v: &[f64]| {
                let f: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
                crate::stats::median(&f)
                    .map(fmt_num)
                    .unwrap_or_else(|| "-".into())
            };
            let word = match class {
                Class::OldLike => "old",
                Class::NewLike => "new",
                Class::Unknown => "cannot tell: skip",
            };
            eprintln!(
                "perfbisect step: {} {}: {} median {} ({} runs) vs old {} ({} runs){}: {word} ({})",
                info.short(),
                info.subject,
                test.name,
                med(&probe),
                probe.len(),
                med(&old_s),
                old_s.len(),
                new_s
                    .as_deref()
                    .map(|n| format!(", new {} ({} runs)", med(n), n.len()))
                    .unwrap_or_default(),
                class.exit_code()
            );
            return Ok(class.exit_code());
        }
        // Unknown: double the probe's runs (up to the cap), and keep the ends as large.
        let want = (probe.len() * 2).clamp(test.repeats, test.max_repeats);
        topped_up(&ws, &mut appender, &test, head, &mut probe, want)?;
        topped_up(&ws, &mut appender, &test, old, &mut old_s, want)?;
        if let (Some(n), Some(v)) = (new, new_s.as_mut()) {
            topped_up(&ws, &mut appender, &test, n, v, want)?;
        }
    }
}
