//! `perfbisect compare TEST REV_A REV_B [--runs N]`: the before/after of a pull request, with
//! both builds run interleaved.

use crate::cli::{CompareArgs, Format, Global};
use crate::pipeline::workspace::Workspace;

use super::common::{check_format, locations, verbosity};

pub fn compare(g: &Global, args: CompareArgs) -> anyhow::Result<()> {
    check_format(args.format, &[Format::Text, Format::Json], "compare")?;
    if args.runs == Some(0) {
        crate::usage!("--runs must be at least 1");
    }
    let mut ws = Workspace::open(&locations(g), verbosity(g), true)?;
    super::common::max_runs(&mut ws, args.max_runs)?;
    let test = ws.config.test(&args.test)?.clone();
    let req = crate::jobs::compare::Request {
        rev_a: &args.rev_a,
        rev_b: &args.rev_b,
        runs: args.runs,
        why: args.profile.why,
        no_why: args.profile.no_why,
    };
    let (cmp, why) = crate::jobs::compare::compare(&ws, &test, &req)?;
    match args.format {
        Format::Json => print!("{}", crate::report::json::json_pretty(&cmp)?),
        _ => {
            print!("{}", crate::report::compare::text(&cmp, &test));
            if let Some(w) = &why {
                print!("{}", crate::report::why::text(w));
            }
        }
    }
    Ok(())
}
