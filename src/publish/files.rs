//! A report as a file: Markdown or JSON saved with its plot (into `--out` or a new folder
//! under `CACHE/reports/`), posted from there to an issue with `gh`, and the Markdown of a
//! finished search that `triage` puts in an issue. The report modules render; this writes
//! what they render.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::config::Test;
use crate::pipeline::workspace::Workspace;
use crate::publish::attach::Target;

use crate::pipeline::history::{History, Scope};
use crate::report::issue::Measured;
use crate::report::plot::{self, Chart};

/// What the "How it was measured" section says.
pub fn measured(ws: &Workspace, t: &Test) -> Measured {
    Measured {
        test_command: t.command.clone(),
        metric: t.metric.describe(),
        repeats: t.repeats,
        warmup: t.warmup,
        max_repeats: t.max_repeats,
        threshold: match t.threshold {
            crate::stats::Threshold::Relative(r) => {
                format!("{} %", crate::base::text::fmt_num(r * 100.0))
            }
            crate::stats::Threshold::Absolute(a) => crate::report::units::quantity(a, &t.unit()),
        },
        alpha: t.alpha,
        deterministic: t.deterministic,
        build_command: ws.config.build.command.clone().or_else(|| {
            ws.config.build.cargo.as_ref().map(|c| {
                let mut parts = Vec::new();
                if !c.bins.is_empty() {
                    parts.push(format!("bins {}", c.bins.join(", ")));
                }
                if !c.benches.is_empty() {
                    parts.push(format!("benches {}", c.benches.join(", ")));
                }
                if parts.is_empty() {
                    parts.push("every bin".into());
                }
                format!(
                    "cargo ({}; profile {})",
                    parts.join("; "),
                    c.profile
                        .as_deref()
                        .unwrap_or(if c.bins.is_empty() && !c.benches.is_empty() {
                            "bench"
                        } else {
                            "release"
                        })
                )
            })
        }),
        artifacts: ws.config.build.artifacts.clone(),
        machine: crate::pipeline::fingerprint::machine(),
        perfbisect: env!("CARGO_PKG_VERSION").to_string(),
        runs: runs_setup(t),
    }
}

/// How `t`'s runs are taken, for "How it was measured": side by side or back to back, the
/// quiet-run settings, the instructions counter.
pub fn runs_setup(t: &Test) -> String {
    let mut parts = vec![if t.deterministic {
        "one run per commit (deterministic)".to_string()
    } else if t.interleave {
        "commits compared are measured side by side, in interleaved rounds".to_string()
    } else {
        "each commit's runs back to back (`[measure] interleave = false`)".to_string()
    }];
    if let Some(c) = &t.cpus {
        parts.push(format!("pinned to CPUs {}", crate::config::cpu_list(c)));
    }
    if !t.aslr {
        parts.push("address-space randomisation off".into());
    }
    if matches!(t.metric, crate::config::Metric::Instructions) {
        match crate::process::counter::select(t.counter) {
            Ok(s) => parts.push(format!(
                "user-space instructions of the whole process tree, counted by {}: {}",
                s.counter.describe(),
                s.why
            )),
            Err(e) => parts.push(format!("instructions, but no counter here: {e}")),
        }
    }
    parts.join("; ")
}

/// Write a report as `name` into `out` (default: a new folder `CACHE/reports/TIME-TEST/`),
/// with the plot (when `plot` names one) beside it under that file name and referenced by
/// it; `render` makes the report from the plot's relative path. Returns the report's path.
pub fn save_markdown(
    ws: &Workspace,
    out: Option<&Path>,
    test: &str,
    name: &str,
    plot: Option<&Path>,
    chart: &Chart,
    render: &dyn Fn(Option<String>) -> anyhow::Result<String>,
) -> anyhow::Result<PathBuf> {
    let dir = match out {
        Some(d) => d.to_path_buf(),
        None => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            let (y, mo, d, h, mi, s) = crate::base::text::civil(now as i64);
            ws.cache
                .root
                .join("reports")
                .join(format!("{y:04}{mo:02}{d:02}-{h:02}{mi:02}{s:02}-{test}"))
        }
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let plot_ref = match plot {
        Some(p) => {
            let file = p
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| format!("{test}.png"));
            plot::write(chart, &dir.join(&file))?;
            Some(file)
        }
        None => None,
    };
    let path = dir.join(name);
    plot::write_file(&path, render(plot_ref)?.as_bytes())?;
    Ok(path)
}

/// Post the Markdown file `saved` to `target` and print the comment's URL; on failure the
/// error names gh's message and where the Markdown is.
pub fn post(ws: &Workspace, target: &Target, saved: &Path) -> anyhow::Result<()> {
    match crate::publish::attach::post(target, saved) {
        Ok(url) => {
            println!("{url}");
            ws.note(&format!(
                "posted to {target}; the report is also saved as {}",
                crate::base::paths::display_path(saved)
            ));
            Ok(())
        }
        Err(e) => Err(e.context(format!(
            "cannot post the report to {target}; it is saved as {}",
            crate::base::paths::display_path(saved)
        ))),
    }
}

/// The Markdown report of a finished search (`r`, over the chains `blocks`), as `report TEST RANGE --format md` prints it
/// (without a plot): what `triage` puts in the issue of each culprit.
pub fn issue_markdown<'a>(
    ws: &Workspace,
    mut r: crate::report::find::FindReport<'a>,
    blocks: &[std::ops::Range<usize>],
    why: &'a [crate::pipeline::profile::Profiled],
) -> anyhow::Result<String> {
    let all = History::of(ws, r.test, Scope::Commits(r.commits))?;
    let all_rows = &all.rows;
    let n = (r.searched + 1).min(all_rows.len());
    let chain = &all_rows[..n];
    let detection = all.detection_of_first(n);
    let measured = measured(ws, r.test);
    r.why = why;
    r.sparkline = crate::report::spark::medians_line(chain, &r.test.unit());
    let x = crate::report::issue::Issue {
        find: &r,
        rows: all_rows,
        range_rows: chain,
        blocks,
        detection: &detection,
        measured: &measured,
        known: &[],
    };
    Ok(crate::report::issue::markdown(&x))
}
