//! `perfbisect find TEST RANGE` (also `perfbisect TEST RANGE`): drive the noisy bisection
//! over the range, building and measuring only what the search asks for.

use crate::cli::{FindArgs, Format, Global};
use crate::pipeline::history::{History, Scope};
use crate::pipeline::workspace::Workspace;
use crate::report::find::{self as view};
use crate::report::plot::{self};
use crate::report::{charts, spark};

use super::common::{check_format, locations, verbosity};

/// Exit code 0 for a verdict (culprit or no change), [`crate::error::INCONCLUSIVE`] when the
/// runs could not decide; an error (exit 1, with the build's error) when an end of the range
/// does not build.
pub fn find(g: &Global, args: FindArgs) -> anyhow::Result<i32> {
    // The summary's clock: every minute from here to the report is accounted for.
    let started = std::time::Instant::now();
    check_format(
        args.format,
        &[Format::Text, Format::Json, Format::Md],
        "find",
    )?;
    // Bad --plot and --attach values are refused before anything is built.
    if let Some(p) = &args.plot {
        plot::ImageFormat::of(p)?;
    }
    let target = match &args.attach {
        Some(t) => {
            if args.format == Format::Json {
                crate::usage!(
                    "--attach posts the Markdown report; leave out --format json (or use --format md)"
                );
            }
            Some(crate::publish::attach::Target::parse(t)?)
        }
        None => None,
    };
    let mut ws = Workspace::open(&locations(g), verbosity(g), true)?;
    ws.any_fingerprint = args.any_fingerprint;
    super::common::max_runs(&mut ws, args.max_runs)?;
    let ws = ws;
    // A single revision names no old end to search from: refused before anything is built.
    ws.repo.require_range(&args.range, "find")?;
    if args.test == "all" || args.test.contains(',') {
        if args.plot.is_some() || target.is_some() {
            crate::usage!(
                "--plot and --attach take one test; `find {}` names several (`triage --attach` posts one issue per culprit)",
                args.test
            );
        }
        return several(g, &ws, &args, started);
    }
    let test = ws.config.test(&args.test)?.clone();
    let ask = crate::jobs::find::Ask {
        range: &args.range,
        jobs: args.jobs,
        no_descend: args.no_descend,
        why: args.profile.why,
        no_why: args.profile.no_why,
        replay: false,
    };
    let (mut run, why) = crate::jobs::find::find(&ws, test, &ask, started)?;
    let code = match run.outcome {
        crate::bisect::Outcome::Inconclusive { .. } => crate::error::INCONCLUSIVE,
        _ => 0,
    };
    // Markdown is for an issue: no path of this machine's in its commands.
    let invocation = if args.format == Format::Md || target.is_some() {
        super::common::public_invocation(g, &ws)
    } else {
        super::common::invocation(g, &ws)
    };

    // The chain's medians as stored now (what this search measured, and what was there).
    let rows = History::of(&ws, &run.test, Scope::Commits(run.chain()))?.rows;
    let spark = spark::medians_line(&rows, &run.test.unit());
    let chart = charts::commit_chart(
        &run.test,
        &run.chart_title(),
        &rows,
        run.markers(),
        charts::WIDE,
    );
    run.stop_clock(started);
    let run = run;
    let render = |plot_ref: Option<String>, format: Format| -> anyhow::Result<String> {
        let mut report = run.report(&invocation);
        report.why = &why;
        report.sparkline = spark.clone();
        report.plot = plot_ref;
        Ok(match format {
            Format::Json => crate::report::find_json::json(&report)?,
            Format::Md => view::markdown(&report),
            _ => view::text(&report),
        })
    };
    if let Some(target) = target {
        let name = format!("{}.md", run.test.name);
        let saved = crate::publish::files::save_markdown(
            &ws.cache.root.join("reports"),
            None,
            &run.test.name,
            &name,
            args.plot.as_deref(),
            &chart,
            &|plot_ref| render(plot_ref, Format::Md),
        )?;
        crate::publish::files::post(&target, &saved, &|n| ws.note(n))?;
        return Ok(code);
    }
    if let Some(path) = &args.plot {
        plot::write(&chart, path)?;
        ws.note(&format!("plot written to {}", path.display()));
    }
    let plot_ref = args.plot.as_ref().map(|p| p.display().to_string());
    print!("{}", render(plot_ref, args.format)?);
    Ok(code)
}

/// `find a,b RANGE` and `find all RANGE`: one search per test over the same builds (the cache
/// serves every test, and a search prefers commits already built), a verdict per test.
fn several(
    g: &Global,
    ws: &Workspace,
    args: &FindArgs,
    started: std::time::Instant,
) -> anyhow::Result<i32> {
    let tests: Vec<crate::config::Test> =
        ws.config.select(&args.test)?.into_iter().cloned().collect();
    let ask = crate::jobs::find::Ask {
        range: &args.range,
        jobs: args.jobs,
        no_descend: args.no_descend,
        why: args.profile.why,
        no_why: args.profile.no_why,
        replay: false,
    };
    let invocation = super::common::invocation(g, ws);
    let (mut texts, mut values) = (Vec::new(), Vec::new());
    let (mut builds, mut runs, mut code) = (0, 0, 0);
    for t in tests {
        let (mut run, why) = crate::jobs::find::find(ws, t, &ask, std::time::Instant::now())?;
        if matches!(run.outcome, crate::bisect::Outcome::Inconclusive { .. }) {
            code = crate::error::INCONCLUSIVE;
        }
        let (b, r) = run.counts();
        builds += b;
        runs += r;
        let rows = History::of(ws, &run.test, Scope::Commits(run.chain()))?.rows;
        let line = spark::medians_line(&rows, &run.test.unit());
        run.stop_clock(started);
        let mut report = run.report(&invocation);
        report.why = &why;
        report.sparkline = line;
        match args.format {
            Format::Json => values.push(crate::report::find_json::json_value(&report)?),
            Format::Md => texts.push(view::markdown(&report)),
            _ => texts.push(format!("== {} ==\n{}", run.test.name, view::text(&report))),
        }
    }
    match args.format {
        Format::Json => print!(
            "{}",
            crate::report::json::json_pretty(&serde_json::json!({
                "range": args.range,
                "tests": values,
                "builds": builds,
                "runs": runs,
                "time_s": started.elapsed().as_secs_f64(),
            }))?
        ),
        _ => {
            print!("{}", texts.join("\n"));
            if args.format == Format::Text {
                println!(
                    "\nall {} tests: {builds} builds, {runs} runs in {} (one set of builds)",
                    texts.len(),
                    crate::base::text::fmt_secs(started.elapsed().as_secs_f64())
                );
            }
        }
    }
    Ok(code)
}
