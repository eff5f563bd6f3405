//! `perfbisect calibrate TEST [REV]`: A/A runs of one build to measure this test's noise on
//! this machine, and the repeats needed to see its threshold. The result is kept in the cache
//! so `run` and `find` can warn when a threshold is below what their repeats can detect.

use crate::cli::{CalibrateArgs, Format, Global};
use crate::pipeline::workspace::Workspace;

use super::common::{check_format, locations, verbosity};

pub fn calibrate(g: &Global, args: CalibrateArgs) -> anyhow::Result<()> {
    check_format(args.format, &[Format::Text, Format::Json], "calibrate")?;
    if args.runs < 5 {
        crate::usage!("--runs {}: calibration needs at least 5 runs", args.runs);
    }
    let ws = Workspace::open(&locations(g), verbosity(g), true)?;
    let test = ws.config.test(&args.test)?.clone();
    let id = match &args.rev {
        Some(r) => ws.repo.resolve(r)?,
        None => ws.repo.head()?,
    };
    let info = ws.repo.info(id)?;
    ws.counter_note(&test)?;
    let (art, _) = ws.ensure_built(&id)?;
    let Some(art) = art else {
        anyhow::bail!(
            "{} {} does not build; calibrate on another revision",
            info.short(),
            info.subject
        );
    };
    let (cal, other_note) = crate::jobs::calibrate::calibrate(&ws, &test, id, &art, args.runs)?;
    match args.format {
        Format::Json => print!("{}", crate::report::json::json_pretty(&cal)?),
        _ => print!(
            "{}",
            crate::report::calibration::text(
                &cal,
                &test,
                &info,
                args.rev.is_none(),
                other_note.as_deref()
            )
        ),
    }
    Ok(())
}
