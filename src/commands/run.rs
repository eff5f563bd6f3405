//! `perfbisect run TESTS RANGE`: build what is missing, then top every commit up to its
//! repeats (or add a round, or fill only the gaps).

use crate::cli::{Format, Global, RunArgs};
use crate::jobs::run::{run_pass, Options, Spent};
use crate::pipeline::workspace::Workspace;

use super::common::{check_format, locations, verbosity};

pub fn run(g: &Global, args: RunArgs) -> anyhow::Result<()> {
    check_format(args.format, &[Format::Text, Format::Json], "run")?;
    if args.jobs == 0 {
        crate::usage!("--jobs must be at least 1");
    }
    let opts = Options {
        tests: &args.tests,
        range: &args.range,
        jobs: args.jobs,
        shard: args.shard.as_deref().map(parse_shard).transpose()?,
        again: args.again,
        gaps: args.gaps,
        retry_failed: args.retry_failed,
        build_only: args.build_only,
    };
    let json = args.format == Format::Json;
    // The summary's clock, from the command's start, over every pass.
    let mut spent = Spent::new(std::time::Instant::now());
    let mut pass = |check_steps: bool| -> anyhow::Result<bool> {
        let mut ws = Workspace::open(&locations(g), verbosity(g), true)?;
        // A runner that only builds builds for another machine: a commit measured by any
        // machine (a restored store's samples) is not a gap.
        ws.any_fingerprint = args.build_only;
        run_pass(&ws, &opts, check_steps, &mut spent, &|s, elapsed| {
            let subject =
                |id: &gix::ObjectId| ws.repo.info(*id).map(|i| i.subject).unwrap_or_default();
            print!("{}", crate::report::run::text(s, json, elapsed, &subject)?);
            Ok(())
        })
    };
    if pass(true)? {
        // A step stood on a stale incremental build: everything incremental is set aside and
        // builds are pristine now; measure what that left unmeasured.
        pass(false)?;
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
