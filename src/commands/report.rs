//! `perfbisect report TEST RANGE [--format md|json]` (a finding for an issue, through `find`)
//! and `report TEST|all [RANGE] --format html --out DIR` (a static site of the stored
//! results); `--attach OWNER/REPO#N` posts the Markdown with `gh`.

use crate::cli::{Format, Global, ReportArgs};
use crate::pipeline::history::{History, Scope};
use crate::pipeline::workspace::Workspace;
use crate::publish::attach::Target;
use crate::report::issue::{self, Issue};
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

    let all = History::of(&ws, &run.test, Scope::Commits(&run.commits))?;
    let all_rows = &all.rows;
    // The change points, sparkline and plot cover the range asked, also where imported
    // rounds narrowed the search to a gap of it (`offset`: where the searched chain starts).
    let narrowed = run.imported.as_ref().is_some_and(|g| !g.fell_back);
    let widened = if narrowed {
        range_history(&ws, &run.test, range, &all_rows[..=run.searched])?
    } else {
        None
    };
    let (chain, offset, detection) = match &widened {
        Some((h, offset)) => (&h.rows[..], *offset, h.detection()),
        None => (
            &all_rows[..=run.searched],
            0,
            all.detection_of_first(run.searched + 1),
        ),
    };
    let cps = &detection.points;
    let spark = spark::medians_line(chain, &run.test.unit());
    let mut markers = run.markers();
    for m in &mut markers {
        m.index += offset;
    }
    markers.extend(charts::change_point_markers(chain, cps));
    let chart = charts::commit_chart(&run.test, &run.chart_title(), chain, markers, charts::WIDE);
    let measured = crate::publish::files::measured(&ws, &run.test);
    // What `triage` confirmed over the range stands beside this search's verdict.
    let findings = crate::store::findings::load(&crate::store::findings::path(&ws.cache.root))?;
    run.stop_clock(started);
    let run = run;
    let render = |plot_ref: Option<String>| -> anyhow::Result<String> {
        let mut r = run.report(&invocation);
        r.why = &why;
        r.sparkline = spark.clone();
        r.plot = plot_ref;
        let named: Vec<gix::ObjectId> = match r.outcome {
            crate::bisect::Outcome::Culprits(cs) => {
                cs.iter().map(|c| r.commits[c.pos].id).collect()
            }
            _ => Vec::new(),
        };
        let known = crate::report::known::confirmed(&findings, &run.test.name, chain, &named);
        let x = Issue {
            find: &r,
            rows: all_rows,
            range_rows: chain,
            blocks: &run.blocks,
            detection: &detection,
            measured: &measured,
            known: &known,
        };
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
            &ws,
            args.out.as_deref(),
            &run.test.name,
            &name,
            args.plot.as_deref(),
            &chart,
            &render,
        )?;
        return match target {
            Some(t) => crate::publish::files::post(&ws, &t, &saved),
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
    crate::publish::site::site(&ws, out, &args.test, args.range.as_deref())
}

/// Where imported rounds narrowed the search to a gap of `range`: the history of the range (its
/// old end first) and where `searched` (the chain `find` searched, its old end first) starts
/// among them; `None` when the searched chain is the range's.
fn range_history<'t>(
    ws: &Workspace,
    test: &'t crate::config::Test,
    range: &str,
    searched: &[crate::pipeline::rows::CommitRow],
) -> anyhow::Result<Option<(History<'t>, usize)>> {
    let whole = ws.repo.range(range)?;
    let commits: Vec<crate::git::CommitInfo> =
        whole.base.iter().cloned().chain(whole.commits).collect();
    let first = searched.first().map(|r| r.commit.id);
    match commits.iter().position(|c| Some(c.id) == first) {
        Some(offset) if offset > 0 || commits.len() != searched.len() => Ok(Some((
            History::of(ws, test, Scope::Commits(&commits))?,
            offset,
        ))),
        _ => Ok(None),
    }
}
