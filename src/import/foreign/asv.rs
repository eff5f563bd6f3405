//! airspeed velocity's results: `results/<machine>/<hash8>-<env>.json`, one file per commit,
//! environment and machine, read one file at a time. Both result formats: 2 (asv ≥ 0.5, a
//! row of columns per benchmark, `result_columns` naming them) and 1 (asv ≤ 0.4, an object
//! per benchmark, or a bare number), without `asv update`. asv's own `update_to_2`
//! (results.py) is the reference of how the two correspond.
//!
//! A parameterised benchmark is one series per combination of its parameters (the file's own
//! `params`, which can differ from `benchmarks.json`'s after an edit), the n-th result
//! belonging to the n-th element of `itertools.product(*params)`, the last parameter fastest.
//! The file's `date` is the *commit's* date, not when it was measured: a point's time is its
//! benchmark's `started_at`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::names;
use super::point::{Kind, Options, Point, Visit};
use crate::config::Direction;
use crate::error::UsageError;
use crate::import::report::Why;
use crate::store::origin::{Spread, SpreadKind};

/// What `benchmarks.json` says of one benchmark.
#[derive(Deserialize, Default)]
struct Info {
    unit: Option<String>,
}

/// One results file (both formats; the fields of the other one are absent).
#[derive(Deserialize)]
struct ResultsFile {
    commit_hash: Option<String>,
    /// Format 2: the names of a benchmark's columns.
    result_columns: Option<Vec<String>>,
    #[serde(default)]
    results: serde_json::Map<String, Value>,
    /// Format 1: when each benchmark started, ms.
    started_at: Option<serde_json::Map<String, Value>>,
    /// Format 1: each benchmark's code version.
    benchmark_version: Option<serde_json::Map<String, Value>>,
}

/// Read the asv results directory `path` (or a project holding `results/`) into `v`.
pub(super) fn read(path: &Path, opts: &Options, v: &mut dyn Visit) -> anyhow::Result<()> {
    let root = if path.join("results").is_dir() && !path.join("benchmarks.json").exists() {
        path.join("results")
    } else {
        path.to_path_buf()
    };
    let shown = crate::base::paths::display_path(&root);
    if !root.is_dir() {
        crate::usage!("{shown}: not a directory; `--from asv` reads asv's results directory");
    }
    let infos: HashMap<String, Info> = match std::fs::read(root.join("benchmarks.json")) {
        Ok(bytes) => {
            let all: serde_json::Map<String, Value> = serde_json::from_slice(&nan_free(&bytes))
                .map_err(|e| UsageError::err(format!("{shown}/benchmarks.json: {e}")))?;
            all.into_iter()
                .filter_map(|(k, v)| Some((k, serde_json::from_value(v).ok()?)))
                .collect()
        }
        Err(_) => HashMap::new(),
    };
    // Machines: the folders holding results files.
    let mut machines: Vec<(String, Vec<std::path::PathBuf>)> = Vec::new();
    for d in super::point::dirs(&root)? {
        let files: Vec<_> = super::point::files(&d, ".json")?
            .into_iter()
            .filter(|f| super::point::file_name(f) != "machine.json")
            .collect();
        if !files.is_empty() {
            machines.push((super::point::file_name(&d), files));
        }
    }
    if machines.is_empty() {
        crate::usage!(
            "{shown}: no asv results in it (expected `<machine>/<commit>-<env>.json` files under \
             asv's results directory)"
        );
    }
    let found: Vec<String> = machines.iter().map(|(m, _)| m.clone()).collect();
    let listing = v.listing();
    let chosen = super::point::select(
        "machine",
        "--machine",
        &found,
        opts.machine.as_deref(),
        listing,
    )?;
    v.configurations("machine", &found, &chosen);
    let machines: Vec<_> = machines
        .into_iter()
        .filter(|(m, _)| chosen.contains(m))
        .collect();
    let mut envs: Vec<String> = machines
        .iter()
        .flat_map(|(_, fs)| fs.iter().map(|f| env_of(&super::point::file_name(f))))
        .collect();
    envs.sort();
    envs.dedup();
    let chosen_envs =
        super::point::select("environment", "--env", &envs, opts.env.as_deref(), listing)?;
    v.configurations("environment", &envs, &chosen_envs);
    for (machine, files) in &machines {
        for f in files {
            let name = super::point::file_name(f);
            let env = env_of(&name);
            if !chosen_envs.contains(&env) {
                continue;
            }
            let at: Arc<str> = Arc::from(format!("{machine}/{name}"));
            let bytes = std::fs::read(f)
                .map_err(|e| UsageError::err(format!("cannot read {}: {e}", f.display())))?;
            let file: ResultsFile = match serde_json::from_slice(&nan_free(&bytes)) {
                Ok(r) => r,
                Err(e) => {
                    v.skip(&at, Why::BadRow, format!("not an asv results file: {e}"));
                    continue;
                }
            };
            let ctx = FileCtx {
                at: &at,
                round: name.strip_suffix(".json").unwrap_or(&name),
                machine: &format!("{machine}/{env}"),
                infos: &infos,
            };
            ctx.read(&file, v)?;
        }
    }
    Ok(())
}

/// The environment of a results file's name: `<hash8>-<env>.json`.
fn env_of(name: &str) -> String {
    let stem = name.strip_suffix(".json").unwrap_or(name);
    stem.split_once('-')
        .map_or(stem, |(_, env)| env)
        .to_string()
}

/// JSON as Python writes it (`NaN`, `Infinity`, `-Infinity` outside strings) made JSON that
/// serde reads: those values are `null`, which asv writes for a failure; neither is a number
/// to import.
fn nan_free(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if memchr::memmem::find(bytes, b"NaN").is_none()
        && memchr::memmem::find(bytes, b"Infinity").is_none()
    {
        return std::borrow::Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len() + 64);
    let (mut i, mut in_str) = (0, false);
    while i < bytes.len() {
        let b = bytes[i];
        if in_str {
            out.push(b);
            if b == b'\\' && i + 1 < bytes.len() {
                out.push(bytes[i + 1]);
                i += 1;
            } else if b == b'"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        let rest = &bytes[i..];
        if b == b'"' {
            in_str = true;
        } else if rest.starts_with(b"NaN") {
            out.extend_from_slice(b"null");
            i += 3;
            continue;
        } else if rest.starts_with(b"-Infinity") {
            out.extend_from_slice(b"null");
            i += 9;
            continue;
        } else if rest.starts_with(b"Infinity") {
            out.extend_from_slice(b"null");
            i += 8;
            continue;
        }
        out.push(b);
        i += 1;
    }
    std::borrow::Cow::Owned(out)
}

/// What the points of one results file share.
struct FileCtx<'a> {
    at: &'a Arc<str>,
    round: &'a str,
    machine: &'a str,
    infos: &'a HashMap<String, Info>,
}

/// One benchmark's columns, whichever format they came from: per parameter combination
/// `result[n]`, the spreads and the samples.
#[derive(Default)]
struct Bench<'v> {
    params: Vec<Vec<String>>,
    result: Vec<Option<f64>>,
    ci: (Vec<Option<f64>>, Vec<Option<f64>>),
    q: (Vec<Option<f64>>, Vec<Option<f64>>),
    samples: Vec<Option<Vec<f64>>>,
    started: Option<f64>,
    version: Option<&'v str>,
}

impl FileCtx<'_> {
    fn read(&self, file: &ResultsFile, v: &mut dyn Visit) -> anyhow::Result<()> {
        let commit = file.commit_hash.as_deref().unwrap_or("");
        if commit.is_empty() {
            v.skip(self.at, Why::BadRow, "no `commit_hash` in it".into());
            return Ok(());
        }
        for (name, row) in &file.results {
            let b = match &file.result_columns {
                Some(cols) => format2(cols, row),
                None => format1(file, name, row),
            };
            self.bench(name, commit, &b, v)?;
        }
        Ok(())
    }

    /// The points of benchmark `name`.
    fn bench(
        &self,
        name: &str,
        commit: &str,
        b: &Bench<'_>,
        v: &mut dyn Visit,
    ) -> anyhow::Result<()> {
        let combos: usize = b.params.iter().map(Vec::len).product();
        if combos != b.result.len() {
            v.skip(
                self.at,
                Why::BadRow,
                format!(
                    "benchmark `{name}`: {} results for {combos} combinations of its parameters",
                    b.result.len()
                ),
            );
            return Ok(());
        }
        let short = name.rsplit('.').next().unwrap_or(name);
        let unit = self
            .infos
            .get(name)
            .and_then(|i| i.unit.clone())
            .or_else(|| {
                if short.starts_with("time_") {
                    Some("seconds".into())
                } else if short.starts_with("mem_") || short.starts_with("peakmem_") {
                    Some("bytes".into())
                } else {
                    None
                }
            });
        let direction = (!short.starts_with("track_")).then_some(Direction::Lower);
        let time = b.started.and_then(super::point::ms_to_secs);
        let version = b.version.map(|v| &v[..v.len().min(12)]);
        for (n, value) in b.result.iter().enumerate() {
            let Some(value) = *value else {
                v.no_value();
                continue;
            };
            let values = combination(&b.params, n);
            let id = names::asv_id(name, &values);
            let plain = names::asv_plain(name, &values);
            let mut spread = Vec::new();
            let at = |c: &Vec<Option<f64>>| c.get(n).copied().flatten();
            if let (Some(lo), Some(hi)) = (at(&b.ci.0), at(&b.ci.1)) {
                spread.push(Spread {
                    kind: SpreadKind::Ci99,
                    lo,
                    hi,
                });
            }
            if let (Some(lo), Some(hi)) = (at(&b.q.0), at(&b.q.1)) {
                spread.push(Spread {
                    kind: SpreadKind::Quartiles,
                    lo,
                    hi,
                });
            }
            v.point(Point {
                id: &id,
                bench: &id,
                plain: &plain,
                commit,
                value,
                samples: b.samples.get(n).and_then(|s| s.as_deref()),
                separate: false,
                time,
                round: self.round,
                machine: Some(self.machine),
                at: self.at,
                unit: unit.as_deref(),
                direction,
                version,
                spread,
                kind: Kind::Other,
            })?;
        }
        Ok(())
    }
}

/// The parameter values of the n-th combination (last parameter fastest).
fn combination(params: &[Vec<String>], mut n: usize) -> Vec<&str> {
    let mut out = vec![""; params.len()];
    for (k, p) in params.iter().enumerate().rev() {
        out[k] = &p[n % p.len()];
        n /= p.len();
    }
    out
}

/// A number, or none (`null`, anything else).
fn num(v: &Value) -> Option<f64> {
    v.as_f64().filter(|x| x.is_finite())
}

/// A list of numbers-or-none; a bare number is a list of one.
fn nums(v: Option<&Value>) -> Vec<Option<f64>> {
    match v {
        Some(Value::Array(a)) => a.iter().map(num).collect(),
        Some(Value::Null) | None => Vec::new(),
        Some(other) => vec![num(other)],
    }
}

/// `params`: a list of lists of `repr()` strings (numbers written as numbers are taken too).
fn params(v: Option<&Value>) -> Vec<Vec<String>> {
    let Some(Value::Array(ps)) = v else {
        return Vec::new();
    };
    ps.iter()
        .map(|p| match p {
            Value::Array(vals) => vals
                .iter()
                .map(|x| match x {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// Per combination, the samples (a list of numbers) or none.
fn sample_lists(v: Option<&Value>) -> Vec<Option<Vec<f64>>> {
    let Some(Value::Array(a)) = v else {
        return Vec::new();
    };
    a.iter()
        .map(|s| match s {
            Value::Array(xs) => Some(xs.iter().filter_map(num).collect()),
            _ => None,
        })
        .collect()
}

/// A benchmark's row of format 2.
fn format2<'v>(cols: &[String], row: &'v Value) -> Bench<'v> {
    let Value::Array(row) = row else {
        return Bench::default();
    };
    let col = |name: &str| cols.iter().position(|c| c == name).and_then(|i| row.get(i));
    Bench {
        params: params(col("params")),
        result: nums(col("result")),
        ci: (nums(col("stats_ci_99_a")), nums(col("stats_ci_99_b"))),
        q: (nums(col("stats_q_25")), nums(col("stats_q_75"))),
        samples: sample_lists(col("samples")),
        started: col("started_at").and_then(num),
        version: col("version").and_then(Value::as_str),
    }
}

/// A benchmark of format 1: an object, or a bare number (or `null`).
fn format1<'v>(file: &'v ResultsFile, name: &str, row: &'v Value) -> Bench<'v> {
    let started = file
        .started_at
        .as_ref()
        .and_then(|m| m.get(name))
        .and_then(num);
    let version = file
        .benchmark_version
        .as_ref()
        .and_then(|m| m.get(name))
        .and_then(Value::as_str);
    let Value::Object(o) = row else {
        return Bench {
            result: vec![num(row)],
            started,
            version,
            ..Bench::default()
        };
    };
    let stats: Vec<&Value> = match o.get("stats") {
        Some(Value::Array(s)) => s.iter().collect(),
        _ => Vec::new(),
    };
    let stat = |key: &str, k: usize| -> Vec<Option<f64>> {
        stats
            .iter()
            .map(|s| match s.get(key) {
                Some(Value::Array(ab)) => ab.get(k).and_then(num),
                Some(x) if k == 0 => num(x),
                _ => None,
            })
            .collect()
    };
    Bench {
        params: params(o.get("params")),
        result: nums(o.get("result")),
        ci: (stat("ci_99", 0), stat("ci_99", 1)),
        q: (stat("q_25", 0), stat("q_75", 0)),
        samples: sample_lists(o.get("samples")),
        started,
        version,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combinations_run_the_last_parameter_fastest() {
        let p = vec![
            vec!["False".to_string(), "True".to_string()],
            vec!["'a'".to_string(), "'b'".to_string(), "'c'".to_string()],
        ];
        assert_eq!(combination(&p, 0), ["False", "'a'"]);
        assert_eq!(combination(&p, 1), ["False", "'b'"]);
        assert_eq!(combination(&p, 3), ["True", "'a'"]);
        assert_eq!(combination(&p, 5), ["True", "'c'"]);
        assert!(combination(&[], 0).is_empty());
    }

    #[test]
    fn python_json_is_read_and_strings_are_left_alone() {
        let t = br#"{"a": NaN, "b": [1, -Infinity, Infinity], "c": "NaN \" Infinity"}"#;
        let v: Value = serde_json::from_slice(&nan_free(t)).unwrap();
        assert!(v["a"].is_null());
        assert_eq!(v["b"][0], 1);
        assert!(v["b"][1].is_null() && v["b"][2].is_null());
        assert_eq!(v["c"], "NaN \" Infinity");
    }

    #[test]
    fn environments_come_from_file_names() {
        assert_eq!(env_of("00174507-conda-py3.12.json"), "conda-py3.12");
        assert_eq!(
            env_of("0bd667e2-conda-py3.6-cython-nomkl-numpy1.14.json"),
            "conda-py3.6-cython-nomkl-numpy1.14"
        );
    }
}
