//! `perfbisect step TEST --old REV [--new REV]`, for `git bisect run`: classify the commit at
//! HEAD against the old (and new) commit, measuring what is missing, and answer with git
//! bisect's exit codes: 0 old, 1 new, 125 cannot tell, 128 fatal (stops the bisect).

use crate::base::text::fmt_num;
use crate::bisect::step::{NEW, OLD, PROBE};
use crate::bisect::{self, Class, StepSearch, StepVerdict};
use crate::cli::{Global, StepArgs};
use crate::jobs::find::lab::WorkspaceLab;
use crate::pipeline::workspace::Workspace;

use super::common::{locations, verbosity};

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

fn run(g: &Global, args: &StepArgs) -> anyhow::Result<i32> {
    let mut ws = Workspace::open(&locations(g), verbosity(g), true)?;
    super::common::max_runs(&mut ws, args.max_runs)?;
    let test = ws.config.test(&args.test)?.clone();
    let head = ws.repo.head()?;
    let old = ws.repo.resolve(&args.old)?;
    // The new side: `--new`, else the commit `git bisect` holds as bad (its level is the
    // one HEAD is placed against; it is never HEAD itself). One taken from the bisect is
    // left out, not fatal, when it cannot be built or measured.
    let given = args
        .new
        .as_deref()
        .map(|r| ws.repo.resolve(r))
        .transpose()?;
    let from_bisect = given.is_none();
    let new = given.or_else(|| ws.repo.bisect_new().filter(|b| *b != head && *b != old));
    if args.jobs == 0 {
        crate::usage!("--jobs must be at least 1");
    }
    let mut bench = ws.bench(&test, false)?;
    let params = crate::jobs::find::search_params(&test, &bench.stored, &|w| ws.warn(w));
    let mut commits = vec![ws.repo.info(old)?, ws.repo.info(head)?];
    if let Some(n) = new {
        commits.push(ws.repo.info(n)?);
    }
    let info = commits[PROBE].clone();
    let mut policy = StepSearch::new(params, new.is_some());
    if from_bisect {
        policy.new_side_optional();
    }
    let mut lab = WorkspaceLab::new(&mut bench, &commits, "step");
    let driven = bisect::drive(&mut policy, &mut lab, commits.len(), args.jobs);
    lab.finish();
    let last_error = lab.last_error.clone();
    driven?;
    let med = |v: &[f64]| {
        let f: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        crate::stats::median(&f)
            .map(fmt_num)
            .unwrap_or_else(|| "-".into())
    };
    let tail = |pos: usize| {
        last_error
            .get(&pos)
            .map(|e| format!("\n{}", crate::base::paths::indent(e.trim_end())))
            .unwrap_or_default()
    };
    match policy.verdict().cloned() {
        Some(StepVerdict::Class(class)) => {
            let word = match class {
                Class::OldLike => "old",
                Class::NewLike => "new",
                Class::Unknown => "cannot tell: skip",
            };
            let word = match policy.placed_by_level() {
                Some(how) if class != Class::Unknown => format!("{word}, {how}"),
                _ => word.to_string(),
            };
            let (probe, old_s) = (policy.samples(PROBE), policy.samples(OLD));
            eprintln!(
                "perfbisect step: {} {}: {} median {} ({}) vs old {} ({}){}: {word} ({})",
                info.short(),
                info.subject,
                test.name,
                med(probe),
                crate::base::text::count(probe.len(), "run"),
                med(old_s),
                crate::base::text::count(old_s.len(), "run"),
                if policy.len() > NEW {
                    let n = policy.samples(NEW);
                    format!(
                        ", new {} {} ({})",
                        if from_bisect {
                            "(git bisect's bad)"
                        } else {
                            ""
                        },
                        med(n),
                        crate::base::text::count(n.len(), "run")
                    )
                    .replace("  ", " ")
                } else {
                    String::new()
                },
                class.exit_code()
            );
            if args.why && class == Class::NewLike {
                let w = crate::pipeline::profile::why(&ws, &test, old, head)?;
                eprint!("{}", crate::report::why::text(&w));
            }
            Ok(class.exit_code())
        }
        Some(StepVerdict::Skip(why)) => {
            eprintln!(
                "perfbisect step: {} {} {why}: skip ({SKIP}){}",
                info.short(),
                info.subject,
                tail(PROBE)
            );
            Ok(SKIP)
        }
        Some(StepVerdict::Fatal(why)) => {
            let pos = if why.contains("--new") { NEW } else { OLD };
            anyhow::bail!(
                "{why} ({} {}){}",
                commits[pos].short(),
                commits[pos].subject,
                tail(pos)
            )
        }
        None => anyhow::bail!("the step search ended without a verdict"),
    }
}
