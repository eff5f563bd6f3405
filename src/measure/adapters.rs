//! Reading one named benchmark's number from the output of the harnesses projects already
//! use: Google Benchmark's JSON, criterion (its `estimates.json`, or `cargo criterion
//! --message-format=json` lines), hyperfine's `--export-json`, Bencher Metric Format JSON and
//! libtest's `cargo bench` lines.
//!
//! Values are returned as the tool reports them, with the unit the tool states (or implies),
//! never converted: a test's samples stay comparable with what the tool prints by itself.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::harness::{bmf_unit, Adapter, Harness};

/// One number read from a harness's output, and the unit the output states for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub value: f64,
    pub unit: Option<String>,
}

/// Where a run's output is: its stdout (as kept) and its scratch directory, if it had one.
pub struct Source<'a> {
    pub stdout: &'a [u8],
    pub out_dir: Option<&'a Path>,
}

/// Read `adapter`'s number from a finished run. The error says what was looked for and what
/// the output holds instead (the names it has, the fields of the benchmark).
pub fn read(adapter: &Adapter, src: &Source<'_>) -> Result<Reading, String> {
    let field = adapter.field.as_deref().or(adapter.harness.default_field());
    if adapter.harness == Harness::Criterion {
        return criterion(adapter, field.unwrap_or("median"), src);
    }
    let text = input(adapter, src)?;
    let name = adapter.name.as_deref();
    match adapter.harness {
        Harness::Gbench => gbench(&json(&text, adapter)?, name, field.unwrap_or("real_time")),
        Harness::Hyperfine => hyperfine(&json(&text, adapter)?, name, field.unwrap_or("mean")),
        Harness::Bmf => bmf(&json(&text, adapter)?, name, field),
        Harness::Libtest => libtest(&String::from_utf8_lossy(&text), name, field),
        Harness::Criterion => unreachable!("handled above"),
    }
}

/// The bytes to parse: the `file` in the scratch directory, or stdout.
fn input(adapter: &Adapter, src: &Source<'_>) -> Result<Vec<u8>, String> {
    match &adapter.file {
        None => Ok(src.stdout.to_vec()),
        Some(f) => {
            let dir = src
                .out_dir
                .ok_or_else(|| "no scratch directory for the output file".to_string())?;
            std::fs::read(dir.join(f)).map_err(|e| {
                format!(
                    "cannot read `{f}` in $PERFBISECT_OUT ({e}); the command must write it there, e.g. {}",
                    write_hint(adapter.harness, f)
                )
            })
        }
    }
}

/// How a command writes the harness's output to `file`.
fn write_hint(h: Harness, file: &str) -> String {
    match h {
        Harness::Gbench => {
            format!("--benchmark_out=\"$PERFBISECT_OUT/{file}\" --benchmark_out_format=json")
        }
        Harness::Hyperfine => format!("--export-json \"$PERFBISECT_OUT/{file}\""),
        _ => format!("> \"$PERFBISECT_OUT/{file}\""),
    }
}

fn json(text: &[u8], adapter: &Adapter) -> Result<Value, String> {
    let what = match &adapter.file {
        Some(f) => format!("`{f}`"),
        None => "stdout".to_string(),
    };
    serde_json::from_slice(text).map_err(|e| {
        let hint = match (adapter.harness, &adapter.file) {
            (Harness::Gbench, None) => "; run the benchmark with --benchmark_format=json",
            (Harness::Hyperfine, None) => {
                "; hyperfine writes JSON with --export-json \"$PERFBISECT_OUT/h.json\" and `file = \"h.json\"`"
            }
            _ => "",
        };
        format!(
            "{what} is not {} JSON ({e}){hint}",
            adapter.harness.name()
        )
    })
}

/// "X is not in the output; it has: a, b, c" (the first few names).
fn not_found(what: &str, name: &str, names: &[String]) -> String {
    let mut list: Vec<&str> = names.iter().map(String::as_str).take(12).collect();
    if names.len() > list.len() {
        list.push("...");
    }
    format!(
        "{what} `{name}` is not in the output{}; it has: {}",
        crate::error::did_you_mean(name, names.iter().map(String::as_str)),
        if list.is_empty() {
            "none".to_string()
        } else {
            list.join(", ")
        }
    )
}

/// The one entry named `name` among `entries` (by `key`), or the only entry when no name is
/// given.
fn pick<'a>(
    entries: &'a [Value],
    key: &str,
    name: Option<&str>,
    what: &str,
) -> Result<&'a Value, String> {
    let names: Vec<String> = entries
        .iter()
        .filter_map(|e| e.get(key).and_then(Value::as_str).map(str::to_string))
        .collect();
    match name {
        None => match entries {
            [one] => Ok(one),
            _ => Err(format!(
                "the output holds {} {what}s; set `name` to one of: {}",
                entries.len(),
                names.join(", ")
            )),
        },
        Some(n) => {
            let hits: Vec<&Value> = entries
                .iter()
                .filter(|e| e.get(key).and_then(Value::as_str) == Some(n))
                .collect();
            match hits.as_slice() {
                [one] => Ok(one),
                [] => Err(not_found(what, n, &names)),
                many => Err(format!(
                    "{} entries are named `{n}` (one per repetition); name an aggregate such as `{n}_median`, or run one repetition",
                    many.len()
                )),
            }
        }
    }
}

fn number(v: &Value, what: &str) -> Result<f64, String> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .filter(|f| f.is_finite())
            .ok_or_else(|| format!("{what} is not a finite number")),
        Value::Null => Err(format!("{what} is null in the output")),
        other => Err(format!("{what} is {other}, not a number")),
    }
}

fn gbench(doc: &Value, name: Option<&str>, field: &str) -> Result<Reading, String> {
    let entries = doc
        .get("benchmarks")
        .and_then(Value::as_array)
        .ok_or("the output has no `benchmarks` array: it is not Google Benchmark JSON")?;
    let b = pick(entries, "name", name, "benchmark")?;
    let bname = b.get("name").and_then(Value::as_str).unwrap_or("?");
    if b.get("error_occurred").and_then(Value::as_bool) == Some(true) {
        return Err(format!(
            "benchmark `{bname}` failed: {}",
            b.get("error_message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
        ));
    }
    let v = b.get(field).ok_or_else(|| {
        let fields: Vec<String> = b
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(_, v)| v.is_number())
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default();
        not_found(&format!("benchmark `{bname}` field"), field, &fields)
    })?;
    let value = number(v, &format!("`{field}` of `{bname}`"))?;
    let percentage = b.get("aggregate_unit").and_then(Value::as_str) == Some("percentage");
    let unit = match field {
        "real_time" | "cpu_time" if !percentage => b
            .get("time_unit")
            .and_then(Value::as_str)
            .map(str::to_string),
        "iterations" => Some("iterations".into()),
        "bytes_per_second" => Some("bytes/s".into()),
        "items_per_second" => Some("items/s".into()),
        _ => None,
    };
    Ok(Reading { value, unit })
}

fn hyperfine(doc: &Value, name: Option<&str>, field: &str) -> Result<Reading, String> {
    let entries = doc
        .get("results")
        .and_then(Value::as_array)
        .ok_or("the output has no `results` array: it is not hyperfine's --export-json")?;
    let r = pick(entries, "command", name, "command")?;
    let cmd = r.get("command").and_then(Value::as_str).unwrap_or("?");
    let v = r
        .get(field)
        .ok_or_else(|| format!("command `{cmd}` has no `{field}` in the output"))?;
    Ok(Reading {
        value: number(v, &format!("`{field}` of `{cmd}`"))?,
        unit: Some("s".into()),
    })
}

fn bmf(doc: &Value, name: Option<&str>, field: Option<&str>) -> Result<Reading, String> {
    let benches = doc
        .as_object()
        .ok_or("the output is not a Bencher Metric Format object ({\"name\": {\"measure\": {\"value\": ...}}})")?;
    let names: Vec<String> = benches.keys().cloned().collect();
    let (bname, measures) = match name {
        Some(n) => (
            n,
            benches
                .get(n)
                .ok_or_else(|| not_found("benchmark", n, &names))?,
        ),
        None if benches.len() == 1 => {
            let (k, v) = benches.iter().next().expect("one entry");
            (k.as_str(), v)
        }
        None => {
            return Err(format!(
                "the output holds {} benchmarks; set `name` to one of: {}",
                benches.len(),
                names.join(", ")
            ))
        }
    };
    let measures = measures
        .as_object()
        .ok_or_else(|| format!("benchmark `{bname}` is not an object of measures"))?;
    let mnames: Vec<String> = measures.keys().cloned().collect();
    let (mname, m) = match field {
        Some(f) => (
            f,
            measures
                .get(f)
                .ok_or_else(|| not_found(&format!("benchmark `{bname}` measure"), f, &mnames))?,
        ),
        None if measures.len() == 1 => {
            let (k, v) = measures.iter().next().expect("one entry");
            (k.as_str(), v)
        }
        None => {
            return Err(format!(
                "benchmark `{bname}` has {} measures; set `field` to one of: {}",
                measures.len(),
                mnames.join(", ")
            ))
        }
    };
    let v = m
        .get("value")
        .ok_or_else(|| format!("measure `{mname}` of `{bname}` has no `value`"))?;
    Ok(Reading {
        value: number(v, &format!("`{mname}` of `{bname}`"))?,
        unit: bmf_unit(mname).map(str::to_string),
    })
}

/// A number as libtest prints it: `1,234` or `1,234.56`.
fn libtest_number(s: &str) -> Option<f64> {
    s.replace(',', "")
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
}

fn libtest(text: &str, name: Option<&str>, field: Option<&str>) -> Result<Reading, String> {
    let field = field.unwrap_or("ns/iter");
    let line_re = regex::Regex::new(
        r"^test (\S+) +\.\.\. +bench: +([0-9][0-9,]*(?:\.[0-9]+)?) ns/iter \(\+/- ([0-9][0-9,]*(?:\.[0-9]+)?)\)(?: = ([0-9][0-9,]*(?:\.[0-9]+)?) MB/s)?",
    )
    .expect("valid regex");
    // (name, ns/iter, deviation, MB/s)
    let mut found: Vec<(String, f64, f64, Option<f64>)> = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = line.trim_end();
        if let Some(c) = line_re.captures(line) {
            let (Some(v), Some(d)) = (libtest_number(&c[2]), libtest_number(&c[3])) else {
                continue;
            };
            found.push((
                c[1].to_string(),
                v,
                d,
                c.get(4).and_then(|m| libtest_number(m.as_str())),
            ));
        } else if line.starts_with('{') {
            // `--format json` (unstable): {"type": "bench", "name", "median", "deviation",
            // "mib_per_second"}.
            if let Ok(v) = serde_json::from_str::<Value>(line) {
                if v.get("type").and_then(Value::as_str) == Some("bench") {
                    if let (Some(n), Some(m), Some(d)) = (
                        v.get("name").and_then(Value::as_str),
                        v.get("median").and_then(Value::as_f64),
                        v.get("deviation").and_then(Value::as_f64),
                    ) {
                        let mbs = v.get("mib_per_second").and_then(Value::as_f64);
                        found.push((n.to_string(), m, d, mbs));
                    }
                }
            }
        } else if let Some(rest) = line.strip_prefix("test ") {
            if let Some((n, _)) = rest.split_once(" ... FAILED") {
                failed.push(n.trim().to_string());
            }
        }
    }
    let names: Vec<String> = found.iter().map(|f| f.0.clone()).collect();
    let hit = match name {
        Some(n) => match found.iter().find(|f| f.0 == n) {
            Some(h) => h,
            None if failed.iter().any(|f| f == n) => {
                return Err(format!("benchmark `{n}` FAILED"));
            }
            None => return Err(not_found("benchmark", n, &names)),
        },
        None => match found.as_slice() {
            [one] => one,
            [] => return Err("no libtest bench line (`test NAME ... bench: N ns/iter (+/- D)`) in stdout; run the bench executable with --bench".into()),
            _ => {
                return Err(format!(
                    "the output holds {} benchmarks; set `name` to one of: {}",
                    found.len(),
                    names.join(", ")
                ))
            }
        },
    };
    match field {
        "ns/iter" => Ok(Reading {
            value: hit.1,
            unit: Some("ns".into()),
        }),
        "deviation" => Ok(Reading {
            value: hit.2,
            unit: Some("ns".into()),
        }),
        _ => hit
            .3
            .map(|v| Reading {
                value: v,
                unit: Some("MB/s".into()),
            })
            .ok_or_else(|| {
                format!(
                    "benchmark `{}` reports no MB/s (set `b.bytes` in the bench)",
                    hit.0
                )
            }),
    }
}

/// criterion: `cargo criterion --message-format=json` lines on stdout when there are any,
/// else `file` (an `estimates.json`), else the `estimates.json` of the named benchmark under
/// the run's `CRITERION_HOME` (`$PERFBISECT_OUT/criterion`).
fn criterion(adapter: &Adapter, field: &str, src: &Source<'_>) -> Result<Reading, String> {
    let name = adapter.name.as_deref();
    if adapter.file.is_none() {
        let text = String::from_utf8_lossy(src.stdout);
        let msgs: Vec<Value> = text
            .lines()
            .filter(|l| l.trim_start().starts_with('{'))
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v.get("reason").and_then(Value::as_str) == Some("benchmark-complete"))
            .collect();
        if !msgs.is_empty() {
            let m = pick(&msgs, "id", name, "benchmark")?;
            let id = m.get("id").and_then(Value::as_str).unwrap_or("?");
            let est = m.get(field).ok_or_else(|| {
                format!("benchmark `{id}` has no `{field}` in cargo-criterion's message")
            })?;
            if est.is_null() {
                return Err(null_estimate(id, field));
            }
            return Ok(Reading {
                value: number(
                    est.get("estimate").unwrap_or(&Value::Null),
                    &format!("`{field}` of `{id}`"),
                )?,
                unit: est
                    .get("unit")
                    .and_then(Value::as_str)
                    .or(m.get("unit").and_then(Value::as_str))
                    .map(str::to_string),
            });
        }
    }
    if field == "typical" {
        return Err(
            "`typical` is only in cargo-criterion's JSON lines (`cargo criterion --message-format=json`); estimates.json has median, mean, slope, std_dev, median_abs_dev".into(),
        );
    }
    let (path, id) = match &adapter.file {
        Some(f) => {
            let dir = src
                .out_dir
                .ok_or("no scratch directory for the output file")?;
            (dir.join(f), name.unwrap_or(f).to_string())
        }
        None => {
            let home = src
                .out_dir
                .map(|d| d.join("criterion"))
                .ok_or("no scratch directory for criterion's output")?;
            criterion_estimates(&home, name)?
        }
    };
    let text = std::fs::read(&path).map_err(|e| {
        format!(
            "cannot read criterion's {} ({e})",
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        )
    })?;
    let doc: Value = serde_json::from_slice(&text)
        .map_err(|e| format!("criterion's estimates of `{id}` are not JSON ({e})"))?;
    let est = doc
        .get(field)
        .ok_or_else(|| format!("criterion's estimates of `{id}` have no `{field}`"))?;
    if est.is_null() {
        return Err(null_estimate(&id, field));
    }
    Ok(Reading {
        value: number(
            est.get("point_estimate").unwrap_or(&Value::Null),
            &format!("`{field}` of `{id}`"),
        )?,
        // criterion's wall-time measurement, which estimates.json is written in.
        unit: Some("ns".into()),
    })
}

fn null_estimate(id: &str, field: &str) -> String {
    format!(
        "criterion has no `{field}` estimate for `{id}` (`slope` exists only with linear sampling)"
    )
}

/// The `new/estimates.json` of the benchmark whose `new/benchmark.json` has `full_id` equal
/// to `name` (or of the only benchmark) under criterion's output directory.
fn criterion_estimates(home: &Path, name: Option<&str>) -> Result<(PathBuf, String), String> {
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    let mut stack = vec![home.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                // `base` and `change` hold older runs and comparisons; `report` holds plots.
                if !matches!(
                    p.file_name().and_then(|n| n.to_str()),
                    Some("base" | "change" | "report")
                ) {
                    stack.push(p);
                }
            } else if p.file_name().and_then(|n| n.to_str()) == Some("benchmark.json")
                && p.parent()
                    .and_then(|d| d.file_name())
                    .and_then(|n| n.to_str())
                    == Some("new")
            {
                let id = std::fs::read(&p)
                    .ok()
                    .and_then(|t| serde_json::from_slice::<Value>(&t).ok())
                    .and_then(|v| v.get("full_id").and_then(Value::as_str).map(str::to_string));
                if let Some(id) = id {
                    found.push((id, p.with_file_name("estimates.json")));
                }
            }
        }
    }
    found.sort();
    let names: Vec<String> = found.iter().map(|f| f.0.clone()).collect();
    match name {
        Some(n) => found
            .into_iter()
            .find(|f| f.0 == n)
            .map(|(id, p)| (p, id))
            .ok_or_else(|| {
                if names.is_empty() {
                    format!(
                        "criterion wrote no results: no benchmark ran (a filter after --bench that matches no benchmark of this commit's bench, `{n}` renamed here? `./BENCH --bench --list` lists them), or the bench ran without --bench (it writes into $CRITERION_HOME, which perfbisect sets to $PERFBISECT_OUT/criterion)"
                    )
                } else {
                    not_found("benchmark", n, &names)
                }
            }),
        None => match found.len() {
            1 => {
                let (id, p) = found.pop().expect("one");
                Ok((p, id))
            }
            0 => Err("criterion wrote no results: run the bench executable with --bench (it writes into $CRITERION_HOME, which perfbisect sets to $PERFBISECT_OUT/criterion)".into()),
            n => Err(format!(
                "criterion measured {n} benchmarks; set `name` to one of: {}",
                names.join(", ")
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adapter(h: Harness, name: Option<&str>, field: Option<&str>) -> Adapter {
        Adapter {
            harness: h,
            name: name.map(str::to_string),
            field: field.map(str::to_string),
            file: None,
        }
    }

    fn stdout(a: &Adapter, text: &str) -> Result<Reading, String> {
        read(
            a,
            &Source {
                stdout: text.as_bytes(),
                out_dir: None,
            },
        )
    }

    #[test]
    fn gbench_repetitions_need_an_aggregate_and_errors_are_reported() {
        let doc = r#"{"benchmarks": [
            {"name": "BM_a", "run_type": "iteration", "real_time": 10.5, "cpu_time": 10.0, "time_unit": "us"},
            {"name": "BM_a", "run_type": "iteration", "real_time": 11.5, "cpu_time": 11.0, "time_unit": "us"},
            {"name": "BM_a_median", "run_type": "aggregate", "aggregate_unit": "time", "real_time": 11.0, "cpu_time": 10.5, "time_unit": "us"},
            {"name": "BM_a_cv", "run_type": "aggregate", "aggregate_unit": "percentage", "real_time": 0.05, "cpu_time": 0.04, "time_unit": "us"},
            {"name": "BM_bad", "error_occurred": true, "error_message": "no input"}
        ]}"#;
        let e = stdout(&adapter(Harness::Gbench, Some("BM_a"), None), doc).unwrap_err();
        assert!(e.contains("2 entries") && e.contains("BM_a_median"), "{e}");
        let r = stdout(&adapter(Harness::Gbench, Some("BM_a_median"), None), doc).unwrap();
        assert_eq!(r.value, 11.0);
        assert_eq!(r.unit.as_deref(), Some("us"));
        let r = stdout(&adapter(Harness::Gbench, Some("BM_a_cv"), None), doc).unwrap();
        assert_eq!(r.unit, None);
        let e = stdout(&adapter(Harness::Gbench, Some("BM_bad"), None), doc).unwrap_err();
        assert!(e.contains("no input"), "{e}");
        let e = stdout(&adapter(Harness::Gbench, Some("BM_b"), None), doc).unwrap_err();
        assert!(e.contains("BM_a_median"), "{e}");
        let e = stdout(&adapter(Harness::Gbench, None, None), "not json").unwrap_err();
        assert!(e.contains("--benchmark_format=json"), "{e}");
    }

    #[test]
    fn libtest_lines_text_and_json() {
        let out = "\nrunning 3 tests\n\
            test tests::add   ... bench:       1,234 ns/iter (+/- 56)\n\
            test tests::copy  ... bench:   2,345.50 ns/iter (+/- 7.25) = 436 MB/s\n\
            test tests::broken ... FAILED\n\
            {\"type\": \"bench\", \"name\": \"j\", \"median\": 99.5, \"deviation\": 1.5, \"mib_per_second\": null}\n";
        let r = stdout(&adapter(Harness::Libtest, Some("tests::add"), None), out).unwrap();
        assert_eq!((r.value, r.unit.as_deref()), (1234.0, Some("ns")));
        let r = stdout(&adapter(Harness::Libtest, Some("tests::copy"), None), out).unwrap();
        assert_eq!(r.value, 2345.5);
        let r = stdout(
            &adapter(Harness::Libtest, Some("tests::copy"), Some("MB/s")),
            out,
        )
        .unwrap();
        assert_eq!((r.value, r.unit.as_deref()), (436.0, Some("MB/s")));
        let r = stdout(
            &adapter(Harness::Libtest, Some("tests::add"), Some("deviation")),
            out,
        )
        .unwrap();
        assert_eq!(r.value, 56.0);
        assert_eq!(
            stdout(&adapter(Harness::Libtest, Some("j"), None), out)
                .unwrap()
                .value,
            99.5
        );
        let e = stdout(&adapter(Harness::Libtest, Some("tests::broken"), None), out).unwrap_err();
        assert!(e.contains("FAILED"), "{e}");
        let e = stdout(&adapter(Harness::Libtest, Some("tests::ad"), None), out).unwrap_err();
        assert!(e.contains("did you mean `tests::add`"), "{e}");
        let e = stdout(&adapter(Harness::Libtest, None, None), out).unwrap_err();
        assert!(e.contains("set `name`"), "{e}");
    }

    #[test]
    fn bmf_picks_measure_and_only_entries() {
        let doc = r#"{"parse": {"latency": {"value": 88.5, "lower_value": 80.0, "upper_value": 90.0},
                                "throughput": {"value": 1200.0}},
                      "load": {"file-size": {"value": 4096}}}"#;
        let r = stdout(&adapter(Harness::Bmf, Some("parse"), Some("latency")), doc).unwrap();
        assert_eq!((r.value, r.unit.as_deref()), (88.5, Some("ns")));
        let r = stdout(&adapter(Harness::Bmf, Some("load"), None), doc).unwrap();
        assert_eq!((r.value, r.unit.as_deref()), (4096.0, Some("bytes")));
        let e = stdout(&adapter(Harness::Bmf, Some("parse"), None), doc).unwrap_err();
        assert!(e.contains("set `field`") && e.contains("latency"), "{e}");
        let e = stdout(&adapter(Harness::Bmf, Some("parse"), Some("latncy")), doc).unwrap_err();
        assert!(e.contains("did you mean `latency`"), "{e}");
    }

    #[test]
    fn validation_names_the_sub_key() {
        let mut a = adapter(Harness::Hyperfine, None, Some("avg"));
        assert_eq!(a.validate().unwrap_err().0, "field");
        a.field = Some("median".into());
        a.file = Some("../x.json".into());
        assert_eq!(a.validate().unwrap_err().0, "file");
        a.file = Some("h.json".into());
        assert!(a.validate().is_ok());
        assert!(adapter(Harness::Gbench, None, Some("my_counter"))
            .validate()
            .is_ok());
    }
}
