//! `perfbisect report TEST RANGE [--format md|json]` (a finding for an issue, through `find`)
//! and `report TEST|all [RANGE] --format html --out DIR` (a static site of the stored
//! results); `--attach OWNER/REPO#N` posts the Markdown with `gh`.

use crate::cli::{Format, Global, ReportArgs};
use crate::pipeline::issue::IssueData;
use crate::pipeline::workspace::Workspace;
use crate::publish::attach::Target;
use crate::report::issue;
use crate::report::plot::{self};
use crate::report::{charts, spark};

use super::common::{check_format, locations, verbosity};

pub fn report(g: &Global, args: ReportArgs) -> anyhow::Result<()> {
    // The summary's clock: every minute from here to the report is accounted for.
    let started = std::time::Instant::now();
    check_format(
        args.format,
        &[Format::Md, Format::Json, Format::Html],
        "report",
    )?;
    if let Some(p) = &args.plot {
        plot::ImageFormat::of(p)?;
    }
    if args.attach.is_some() && args.format != Format::Md {
        crate::usage!("--attach posts the Markdown report; use it with --format md");
    }
    let target = args.attach.as_deref().map(Target::parse).transpose()?;
    if args.format == Format::Html {
        return site(g, &args);
    }
    if args.test == "all" {
        crate::usage!(
            "`report all` makes the HTML site (--format html --out DIR); a Markdown or JSON report is about one test"
        );
    }
    let Some(range) = args.range.as_deref() else {
        crate::usage!(
            "report {} needs a RANGE (`OLD..NEW`): `find` runs over it for the verdict",
            args.test
        );
    };
    if args.jobs == 0 {
        crate::usage!("--jobs must be at least 1");
    }
    let ws = Workspace::open(&locations(g), verbosity(g), true)?;
    ws.repo.require_range(range, "report")?;
    let test = ws.config.test(&args.test)?.clone();
    // The same as `find`: the search, its builds checked, every culprit profiled (the
    // profiles `find` made are kept: a report after it reuses them).
    let ask = crate::jobs::find::Ask {
        range,
        jobs: args.jobs,
        no_descend: args.no_descend,
        why: false,
        no_why: false,
        replay: true,
    };
    let (mut run, why) = crate::jobs::find::find(&ws, test, &ask, started)?;
    // Markdown is for an issue: no path of this machine's in its commands.
    let invocation = if args.format == Format::Md {
        super::common::public_invocation(g, &ws)
    } else {
        super::common::invocation(g, &ws)
    };

    // What `triage` confirmed over the range stands beside this search's verdict.
    let findings = crate::store::findings::load(&crate::store::findings::path(&ws.cache.root))?;
    // The change points, sparkline and plot cover the range asked, also where imported
    // rounds narrowed the search to a gap of it (`offset`: where the searched chain starts).
    run.stop_clock(started);
    let run = run;
    let data = IssueData::load(&ws, &run.report(&invocation), &findings)?;
    let (chain, offset, detection) = (data.chain(), data.offset(), data.detection());
    let cps = &detection.points;
    let spark = spark::medians_line(chain, &run.test.unit());
    let mut markers = run.markers();
    for m in &mut markers {
        m.index += offset;
    }
    markers.extend(charts::change_point_markers(chain, cps));
    let chart = charts::commit_chart(&run.test, &run.chart_title(), chain, markers, charts::WIDE);
    let render = |plot_ref: Option<String>| -> anyhow::Result<String> {
        let mut r = run.report(&invocation);
        r.why = &why;
        r.sparkline = spark.clone();
        r.plot = plot_ref;
        let x = data.issue(&r, &run.blocks);
        Ok(match args.format {
            Format::Json => issue::json(&x, crate::report::find_json::json_value(&r)?)?,
            _ => issue::markdown(&x),
        })
    };

    if target.is_some() || args.out.is_some() {
        let ext = if args.format == Format::Json {
            "json"
        } else {
            "md"
        };
        let name = format!("{}.{ext}", run.test.name);
        let saved = crate::publish::files::save_markdown(
            &ws.cache.root.join("reports"),
            args.out.as_deref(),
            &run.test.name,
            &name,
            args.plot.as_deref(),
            &chart,
            &render,
        )?;
        return match target {
            Some(t) => crate::publish::files::post(&t, &saved, &|n| ws.note(n)),
            None => {
                ws.note(&format!("report written to {}", saved.display()));
                Ok(())
            }
        };
    }
    if let Some(path) = &args.plot {
        plot::write(&chart, path)?;
        ws.note(&format!("plot written to {}", path.display()));
    }
    print!(
        "{}",
        render(args.plot.as_ref().map(|p| p.display().to_string()))?
    );
    Ok(())
}

/// `report TEST|all [RANGE] --format html --out DIR`.
fn site(g: &Global, args: &ReportArgs) -> anyhow::Result<()> {
    let Some(out) = args.out.as_deref() else {
        crate::usage!("--format html writes a site: give the folder with --out DIR");
    };
    if args.plot.is_some() {
        crate::usage!(
            "--plot draws one test's range; the HTML site has its own charts (leave --plot out)"
        );
    }
    let ws = Workspace::open(&locations(g), verbosity(g), false)?;
    if let Some(r) = args.range.as_deref() {
        ws.repo.require_range(r, "report")?;
    }
    crate::publish::site::check_dir(out)?;
    let (site, tests) = crate::pipeline::site::load(&ws, &args.test, args.range.as_deref())?;
    let n = crate::publish::site::write(out, &site, &tests)?;
    ws.note(&format!(
        "wrote {n} file{} into {}; open {}",
        if n == 1 { "" } else { "s" },
        crate::base::paths::display_path(out),
        crate::base::paths::display_path(&out.join("index.html"))
    ));
    Ok(())
}
