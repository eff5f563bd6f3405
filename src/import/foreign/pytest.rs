//! pytest-benchmark's saved runs: `.benchmarks/<machine id>/NNNN_<commit>_<date>[_uncommitted
//! -changes].json`, one session per file (its commit in `commit_info`), a directory of them
//! the history. A run saved with uncommitted changes (`dirty`) measured something that is not
//! the commit it names: skipped unless `--dirty`.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use super::point::{Kind, Options, Point, Visit};
use crate::config::Direction;
use crate::error::UsageError;
use crate::import::report::Why;
use crate::store::origin::{Spread, SpreadKind};

/// The statistics `--field` may take.
pub(super) const FIELDS: &[&str] = &[
    "median", "mean", "min", "max", "stddev", "iqr", "q1", "q3", "ops",
];

#[derive(Deserialize)]
struct Session {
    commit_info: Option<CommitInfo>,
    datetime: Option<String>,
    #[serde(default)]
    benchmarks: Vec<Benchmark>,
}

#[derive(Deserialize)]
struct CommitInfo {
    id: Option<String>,
    #[serde(default)]
    dirty: bool,
}

#[derive(Deserialize)]
struct Benchmark {
    fullname: Option<String>,
    name: Option<String>,
    stats: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Read a `.benchmarks` directory (machine folders) or one machine's folder into `v`.
pub(super) fn read(path: &Path, opts: &Options, v: &mut dyn Visit) -> anyhow::Result<()> {
    let shown = crate::base::paths::display_path(path);
    if !path.is_dir() {
        crate::usage!(
            "{shown}: not a directory; `--from pytest-benchmark` reads its `.benchmarks` folder"
        );
    }
    let field = opts.field.as_deref().unwrap_or("median");
    if !FIELDS.contains(&field) {
        crate::usage!(
            "--field `{field}` is not a statistic pytest-benchmark saves{}; use one of: {}",
            crate::error::did_you_mean(field, FIELDS.iter().copied()),
            FIELDS.join(", ")
        );
    }
    let own = super::point::files(path, ".json")?;
    let mut machines: Vec<(String, Vec<std::path::PathBuf>)> = Vec::new();
    if own.is_empty() {
        for d in super::point::dirs(path)? {
            let fs = super::point::files(&d, ".json")?;
            if !fs.is_empty() {
                machines.push((super::point::file_name(&d), fs));
            }
        }
    } else {
        machines.push((
            super::point::file_name(&crate::base::paths::normalize(path)),
            own,
        ));
    }
    if machines.is_empty() {
        crate::usage!(
            "{shown}: no saved runs in it (`NNNN_*.json` files, or machine folders of them)"
        );
    }
    let found: Vec<String> = machines.iter().map(|(m, _)| m.clone()).collect();
    let chosen = super::point::select(
        "machine",
        "--machine",
        &found,
        opts.machine.as_deref(),
        v.listing(),
    )?;
    v.configurations("machine", &found, &chosen);
    let (unit, direction) = if field == "ops" {
        ("ops/s", Direction::Higher)
    } else {
        ("s", Direction::Lower)
    };
    for (machine, files) in machines.iter().filter(|(m, _)| chosen.contains(m)) {
        for f in files {
            let name = super::point::file_name(f);
            let at: Arc<str> = Arc::from(format!("{machine}/{name}"));
            let bytes = std::fs::read(f)
                .map_err(|e| UsageError::err(format!("cannot read {}: {e}", f.display())))?;
            let s: Session = match serde_json::from_slice(&bytes) {
                Ok(s) => s,
                Err(e) => {
                    v.skip(&at, Why::BadRow, format!("not a pytest-benchmark run: {e}"));
                    continue;
                }
            };
            let round = name.split('_').next().unwrap_or(&name);
            let (commit, dirty) = match &s.commit_info {
                Some(c) => (c.id.as_deref().unwrap_or(""), c.dirty),
                None => ("", false),
            };
            let skip = if matches!(commit, "" | "unversioned" | "unknown") {
                Some((Why::BadRow, format!("no commit: `{commit}`")))
            } else if dirty && !opts.dirty {
                Some((
                    Why::Uncommitted,
                    "saved with uncommitted changes, so not the commit it names (--dirty takes it)"
                        .to_string(),
                ))
            } else {
                None
            };
            if let Some((why, reason)) = skip {
                for _ in &s.benchmarks {
                    v.skip(&at, why, reason.clone());
                }
                continue;
            }
            let time = s.datetime.as_deref().and_then(super::point::iso_to_secs);
            for b in &s.benchmarks {
                let Some(id) = b.fullname.as_deref().or(b.name.as_deref()) else {
                    v.skip(&at, Why::BadRow, "a benchmark has no name".into());
                    continue;
                };
                let stats = b.stats.as_ref();
                let stat = |k: &str| stats.and_then(|s| s.get(k)).and_then(|x| x.as_f64());
                let Some(value) = stat(field).filter(|x| x.is_finite()) else {
                    v.skip(&at, Why::BadRow, format!("`{id}` has no `{field}`"));
                    continue;
                };
                let samples: Option<Vec<f64>> = stats
                    .and_then(|s| s.get("data"))
                    .and_then(|d| d.as_array())
                    .map(|d| d.iter().filter_map(|x| x.as_f64()).collect());
                let mut spread = Vec::new();
                if let Some(sd) = stat("stddev").filter(|x| x.is_finite()) {
                    spread.push(Spread {
                        kind: SpreadKind::StdDev,
                        lo: sd,
                        hi: 0.0,
                    });
                }
                if let (Some(lo), Some(hi)) = (stat("q1"), stat("q3")) {
                    spread.push(Spread {
                        kind: SpreadKind::Quartiles,
                        lo,
                        hi,
                    });
                }
                v.point(Point {
                    id,
                    bench: b.name.as_deref().unwrap_or(id),
                    plain: id,
                    commit,
                    value,
                    samples: samples.as_deref(),
                    separate: false,
                    time,
                    round,
                    machine: Some(machine),
                    at: &at,
                    unit: Some(unit),
                    direction: Some(direction),
                    version: None,
                    spread,
                    kind: Kind::Other,
                })?;
            }
        }
    }
    Ok(())
}
