//! Outputs that name no commit: BMF (Bencher Metric Format, one run per file) and hyperfine's
//! `--export-json` (one invocation per file). The commit comes from outside the file: one
//! file with `--commit REV`, a folder of files each named by its commit (`<rev>.json`,
//! `<anything>_<rev>[_...].json`: the first part that names a commit), or for hyperfine a
//! parameter whose value is the revision (`--commit-param rev`, for `hyperfine -L rev a,b`).

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use super::point::{Kind, Options, Point, Tool, Visit};
use crate::config::Direction;
use crate::error::UsageError;
use crate::import::report::Why;
use crate::store::origin::{Spread, SpreadKind};

/// The statistics of a hyperfine result `--field` may take.
const HYPERFINE_FIELDS: &[&str] = &["mean", "median", "min", "max", "user", "system"];

#[derive(Deserialize)]
struct BmfMeasure {
    value: Option<f64>,
    lower_value: Option<f64>,
    upper_value: Option<f64>,
}

#[derive(Deserialize)]
struct HyperfineExport {
    #[serde(default)]
    results: Vec<HyperfineResult>,
}

#[derive(Deserialize)]
struct HyperfineResult {
    command: Option<String>,
    stddev: Option<f64>,
    #[serde(default)]
    times: Vec<f64>,
    #[serde(default)]
    parameters: serde_json::Map<String, serde_json::Value>,
    #[serde(flatten)]
    stats: std::collections::HashMap<String, serde_json::Value>,
}

/// Read a file (with `--commit` or `--commit-param`) or a folder of files named by commit.
pub(super) fn read(
    tool: Tool,
    path: &Path,
    opts: &Options,
    repo: Option<&crate::git::Repo>,
    v: &mut dyn Visit,
) -> anyhow::Result<()> {
    let shown = crate::base::paths::display_path(path);
    if opts.commit_param.is_some() && tool != Tool::Hyperfine {
        crate::usage!(
            "--commit-param names a hyperfine parameter; `--from {}` has none",
            tool.name()
        );
    }
    if let Some(f) = &opts.field {
        if tool == Tool::Bmf {
            crate::usage!("--field: a BMF file holds one value per measure; every measure is a series of its own");
        }
        if !HYPERFINE_FIELDS.contains(&f.as_str()) {
            crate::usage!(
                "--field `{f}` is not a statistic of hyperfine's export{}; use one of: {}",
                crate::error::did_you_mean(f, HYPERFINE_FIELDS.iter().copied()),
                HYPERFINE_FIELDS.join(", ")
            );
        }
    }
    let time = match &opts.timestamp {
        None => None,
        Some(t) => Some(
            t.trim()
                .parse::<u64>()
                .ok()
                .or_else(|| super::point::iso_to_secs(t))
                .ok_or_else(|| {
                    UsageError::err(format!(
                        "--timestamp `{t}` is neither seconds since 1970 nor a date like 2026-08-14T13:51:24Z"
                    ))
                })?,
        ),
    };
    if path.is_dir() {
        if opts.commit.is_some() {
            crate::usage!(
                "--commit names the commit of one file; the files of folder {shown} are named by their commits"
            );
        }
        let files = super::point::files(path, ".json")?;
        if files.is_empty() {
            crate::usage!("{shown}: no `.json` files in it");
        }
        for f in files {
            let name = super::point::file_name(&f);
            let at: Arc<str> = Arc::from(name.clone());
            let commit = if opts.commit_param.is_some() {
                String::new()
            } else {
                match commit_in_name(&name, repo) {
                    Some(c) => c,
                    None => {
                        v.skip(
                            &at,
                            Why::UnknownCommit,
                            "no part of the file's name (`<rev>.json`, `<anything>_<rev>_...json`) names a commit of the repository".into(),
                        );
                        continue;
                    }
                }
            };
            one(tool, &f, &commit, time, opts, &at, v)?;
        }
        return Ok(());
    }
    let commit = match (&opts.commit, &opts.commit_param) {
        (Some(c), _) => c.clone(),
        (None, Some(_)) => String::new(),
        (None, None) => crate::usage!(
            "{shown} names no commit ({} files hold none): give it with --commit REV, or import a \
             folder of files named by their commits{}",
            tool.name(),
            if tool == Tool::Hyperfine {
                ", or take each result's commit from a parameter with --commit-param NAME"
            } else {
                ""
            }
        ),
    };
    let at: Arc<str> = Arc::from(super::point::file_name(path));
    one(tool, path, &commit, time, opts, &at, v)
}

/// The commit a file's name carries: its stem, or the first `_`-separated part of it, that is
/// a commit id (7 to 40 hex digits) or a tag of the repository. Branch names are not taken: a
/// file of results names a commit, not a position.
fn commit_in_name(name: &str, repo: Option<&crate::git::Repo>) -> Option<String> {
    let stem = name.strip_suffix(".json").unwrap_or(name);
    std::iter::once(stem)
        .chain(stem.split('_'))
        .find_map(|part| {
            let hex = (7..=40).contains(&part.len()) && part.bytes().all(|b| b.is_ascii_hexdigit());
            let Some(repo) = repo else {
                return hex.then(|| part.to_string());
            };
            let spec = if hex {
                part.to_string()
            } else {
                format!("refs/tags/{part}")
            };
            let id = repo.gix().rev_parse_single(spec.as_str()).ok()?;
            let c = id.object().ok()?.peel_to_commit().ok()?;
            Some(c.id.to_string())
        })
}

/// One file's points.
fn one(
    tool: Tool,
    path: &Path,
    commit: &str,
    time: Option<u64>,
    opts: &Options,
    at: &Arc<str>,
    v: &mut dyn Visit,
) -> anyhow::Result<()> {
    let bytes = std::fs::read(path)
        .map_err(|e| UsageError::err(format!("cannot read {}: {e}", path.display())))?;
    let name = super::point::file_name(path);
    let round = name.strip_suffix(".json").unwrap_or(&name);
    let machine = opts.machine.as_deref();
    match tool {
        Tool::Bmf => {
            let doc: std::collections::BTreeMap<
                String,
                std::collections::BTreeMap<String, BmfMeasure>,
            > = serde_json::from_slice(&bytes).map_err(|e| {
                UsageError::err(format!(
                    "{}: not BMF (`{{\"bench\": {{\"measure\": {{\"value\": n}}}}}}`): {e}",
                    path.display()
                ))
            })?;
            for (bench, measures) in &doc {
                for (measure, m) in measures {
                    let id = format!("{bench}/{measure}");
                    let Some(value) = m.value.filter(|x| x.is_finite()) else {
                        v.skip(at, Why::BadRow, format!("`{id}` has no finite value"));
                        continue;
                    };
                    let spread = match (m.lower_value, m.upper_value) {
                        (Some(lo), Some(hi)) if lo.is_finite() && hi.is_finite() => vec![Spread {
                            kind: SpreadKind::Bounds,
                            lo,
                            hi,
                        }],
                        _ => Vec::new(),
                    };
                    v.point(Point {
                        id: &id,
                        bench,
                        plain: &id,
                        commit,
                        value,
                        samples: None,
                        separate: false,
                        time,
                        round,
                        machine,
                        at,
                        unit: crate::config::harness::bmf_unit(measure),
                        direction: Some(if measure == "throughput" {
                            Direction::Higher
                        } else {
                            Direction::Lower
                        }),
                        version: None,
                        spread,
                        kind: Kind::Bmf { measure },
                    })?;
                }
            }
        }
        Tool::Hyperfine => {
            let doc: HyperfineExport = serde_json::from_slice(&bytes).map_err(|e| {
                UsageError::err(format!(
                    "{}: not hyperfine's --export-json: {e}",
                    path.display()
                ))
            })?;
            let field = opts.field.as_deref().unwrap_or("mean");
            for r in &doc.results {
                let Some(cmd) = r.command.as_deref() else {
                    v.skip(at, Why::BadRow, "a result has no command".into());
                    continue;
                };
                let own_commit;
                let commit = match &opts.commit_param {
                    Some(p) => match r.parameters.get(p) {
                        Some(serde_json::Value::String(s)) => {
                            own_commit = s.clone();
                            own_commit.as_str()
                        }
                        _ => {
                            v.skip(
                                at,
                                Why::UnknownCommit,
                                format!("`{cmd}` has no parameter `{p}`"),
                            );
                            continue;
                        }
                    },
                    None => commit,
                };
                let Some(value) = r
                    .stats
                    .get(field)
                    .and_then(|x| x.as_f64())
                    .filter(|x| x.is_finite())
                else {
                    v.skip(at, Why::BadRow, format!("`{cmd}` has no `{field}`"));
                    continue;
                };
                let spread = r
                    .stddev
                    .filter(|s| s.is_finite())
                    .map(|lo| Spread {
                        kind: SpreadKind::StdDev,
                        lo,
                        hi: 0.0,
                    })
                    .into_iter()
                    .collect();
                v.point(Point {
                    id: cmd,
                    bench: cmd,
                    plain: cmd,
                    commit,
                    value,
                    samples: (!r.times.is_empty()).then_some(&r.times[..]),
                    separate: true,
                    time,
                    round,
                    machine,
                    at,
                    unit: Some("s"),
                    direction: Some(Direction::Lower),
                    version: None,
                    spread,
                    kind: Kind::Hyperfine,
                })?;
            }
        }
        _ => unreachable!("only BMF and hyperfine name no commit"),
    }
    Ok(())
}
