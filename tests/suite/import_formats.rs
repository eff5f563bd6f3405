//! `import --from`: other tools' histories (benchmark-action's data.js, asv results in both
//! formats, pytest-benchmark runs, BMF and hyperfine outputs), written by each test into a
//! temporary repository's folder, imported by the real binary: which test takes which series,
//! one configuration per series, units, spreads, samples, measured timestamps, unknown
//! commits, re-imports, a branch's log, and the day-one search of an imported step.

use crate::common;

use std::path::{Path, PathBuf};

use common::{specs, with_build, Fixture};

fn out(o: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `import ARGS...` in the fixture; its output and exit code.
fn import(f: &Fixture, args: &[&str]) -> (String, String, Option<i32>) {
    let o = f.cmd().arg("import").args(args).output().unwrap();
    let (a, b) = out(&o);
    (a, b, o.status.code())
}

/// One benchmark-action entry: its commit, `date` (ms) and benches (name, value, unit, range).
fn entry(commit: &str, date: u64, benches: &[(&str, f64, &str, &str)]) -> String {
    let b: Vec<String> = benches
        .iter()
        .map(|(n, v, u, r)| {
            format!(r#"{{"name": "{n}", "value": {v}, "unit": "{u}", "range": "{r}"}}"#)
        })
        .collect();
    format!(
        r#"{{"commit": {{"id": "{commit}", "message": "m", "timestamp": "2020-11-16T16:00:07-08:00"}}, "date": {date}, "tool": "cargo", "benches": [{}]}}"#,
        b.join(", ")
    )
}

/// A data.js of suites (name, entries).
fn data_js(suites: &[(&str, Vec<String>)]) -> String {
    let s: Vec<String> = suites
        .iter()
        .map(|(name, es)| format!("\"{name}\": [\n{}\n]", es.join(",\n")))
        .collect();
    format!(
        "window.BENCHMARK_DATA = {{\n  \"lastUpdate\": 1,\n  \"repoUrl\": \"https://example.invalid/r\",\n  \"entries\": {{{}}}\n}}\n",
        s.join(",\n")
    )
}

const LIBTEST: &str = r#"
[tests.parse]
command = "./app"
metric = { format = "libtest", name = "parse" }

[tests.render]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
unit = "ns/iter"
"#;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn benchmark_action_series_go_to_their_tests_force_pushed_commits_are_skipped_and_reimports_add_only_new_entries(
) {
    let f = Fixture::new(&specs(8, |_, _| {}), &with_build(LIBTEST));
    let mut es: Vec<String> = Vec::new();
    for (i, id) in f.ids.iter().enumerate() {
        let v = if i >= 4 { 1500.0 } else { 1000.0 };
        es.push(entry(
            id,
            1_600_000_000_000 + i as u64 * 3_600_000,
            &[
                ("parse", v + i as f64, "ns/iter", "± 12"),
                ("render", 77.0, "ns/iter", "± 1"),
            ],
        ));
        if i == 2 {
            // A commit force-pushed away: its entry stays in the file.
            es.push(entry(
                "0123456789abcdef0123456789abcdef01234567",
                1_600_000_000_000 + 2 * 3_600_000 + 60_000,
                &[("parse", 999.0, "ns/iter", "± 1")],
            ));
        }
    }
    let first: Vec<String> = es[..6].to_vec();
    let js = write(f.dir.path(), "data.js", &data_js(&[("ci", first)]));
    let (o, e, code) = import(&f, &["--from", "benchmark-action", js.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{o}{e}");
    assert!(
        o.contains("imported 10 samples of 2 tests on 5 commits"),
        "{o}"
    );
    assert!(o.contains("skipped 1 (1 unknown commit)"), "{o}");
    assert!(
        e.contains("data.js: suite `ci` entry 4 (0123456789): skipped: commit 0123456789abcdef0123456789abcdef01234567 is not in"),
        "{e}"
    );
    // The number, its spread and where it came from; the machine is the suite.
    let show = f.json(&["show", "parse", "--format", "json"]);
    let s = &show["samples"][0];
    assert_eq!(s["value"], 1000.0, "{show}");
    assert_eq!(s["time"], 1_600_000_000, "{show}");
    assert_eq!(s["machine"], "ci");
    assert_eq!(s["imported_from"]["source"], "benchmark-action");
    assert_eq!(s["imported_from"]["series"], "ci/parse");
    assert_eq!(s["spread"][0]["kind"], "plus-minus");
    assert_eq!(s["spread"][0]["lo"], 12.0);
    // The file grew (and a version before lost nothing): only the new entries are added.
    let js = write(f.dir.path(), "data.js", &data_js(&[("ci", es.clone())]));
    let (o, e, code) = import(&f, &["--from", "benchmark-action", js.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{o}{e}");
    assert!(
        o.contains("imported 6 samples of 2 tests on 3 commits; 10 already in the store"),
        "{o}"
    );
    let (o, _, _) = import(&f, &["--from", "benchmark-action", js.to_str().unwrap()]);
    assert!(
        o.contains("imported 0 samples of 0 tests on 0 commits; 16 already"),
        "{o}"
    );
    // detect reads the imported history as its own: the step at the fifth commit (one run
    // a commit: a step it decides, or one it asks to be measured more, at that commit).
    let d = f.json(&["detect", "parse", &f.range(), "--format", "json"]);
    let found: Vec<&serde_json::Value> = ["change_points", "undecided"]
        .iter()
        .flat_map(|k| d[k].as_array().unwrap())
        .collect();
    assert_eq!(found.len(), 1, "{d}");
    assert_eq!(found[0]["commit"], f.ids[4].as_str(), "{d}");
}

#[test]
fn suites_of_the_same_benches_are_never_mixed_and_list_prints_every_series_with_a_stub() {
    let f = Fixture::new(&specs(3, |_, _| {}), &with_build(LIBTEST));
    let linux: Vec<String> = f
        .ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            entry(
                id,
                1_600_000_000_000 + i as u64,
                &[("parse", 1000.0, "ns/iter", "± 3")],
            )
        })
        .collect();
    let mac: Vec<String> = f
        .ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            entry(
                id,
                1_600_000_100_000 + i as u64,
                &[
                    ("parse", 2000.0, "ns/iter", "± 3"),
                    ("lex <a>", 5.0, "ns/iter", ""),
                ],
            )
        })
        .collect();
    let js = write(
        f.dir.path(),
        "bench/data.js",
        &data_js(&[("Linux", linux), ("macOS", mac)]),
    );
    let p = js.to_str().unwrap();
    let (o, e, code) = import(&f, &["--from", "benchmark-action", p]);
    assert_eq!(code, Some(2), "{o}{e}");
    assert!(
        e.contains("suites `Linux` and `macOS` both hold bench `parse`") && e.contains("--suite"),
        "{e}"
    );
    assert!(
        !f.cache.join("results/parse.pbs").exists(),
        "nothing was stored"
    );
    let (o, e, code) = import(&f, &["--from", "benchmark-action", p, "--suite", "mac*"]);
    assert_eq!(code, Some(0), "{o}{e}");
    assert!(
        o.contains("imported 3 samples of 1 test on 3 commits"),
        "{o}"
    );
    assert!(
        o.contains("1 series of 3 points not taken by any test"),
        "{o}"
    );
    let show = f.json(&["show", "parse", "--format", "json"]);
    assert_eq!(show["samples"][0]["value"], 2000.0);
    assert_eq!(show["samples"][0]["machine"], "macOS");
    // --list: every series, which test takes it, and a stub for the rest.
    let (o, e, code) = import(&f, &["--from", "benchmark-action", p, "--list"]);
    assert_eq!(code, Some(0), "{e}");
    assert!(
        o.contains("suites: Linux, macOS; one series is one suite"),
        "{o}"
    );
    assert!(o.contains("macOS/lex <a>"), "{o}");
    assert!(o.contains("(taken by tests.parse)"), "{o}");
    assert!(o.contains("[tests.lex_ltagt]"), "{o}");
    assert!(
        o.contains(r#"command = "./macOS --bench --exact 'lex <a>'""#),
        "{o}"
    );
    assert!(
        o.contains(r#"metric = { format = "libtest", name = "lex <a>" }"#),
        "{o}"
    );
}

/// asv's `benchmarks.json` of a parameterised time benchmark and a track.
const BENCHMARKS_JSON: &str = r#"{
  "bench.Sort.time_sort": {"name": "bench.Sort.time_sort", "type": "time", "unit": "seconds",
    "params": [["10", "100"], ["'<f8'", "'>f8'"]], "param_names": ["n", "dtype"], "version": "aaaa"},
  "bench.track_size": {"name": "bench.track_size", "type": "track", "unit": "bytes", "params": [], "version": "bbbb"},
  "version": 2
}"#;

/// A results file of format 2 for `commit` (started at `started` ms; `date` the commit's).
fn asv2(commit: &str, env: &str, started: u64, level: f64, version: &str) -> String {
    let r = [level, level * 2.0, NAN, level * 4.0];
    let fmt = |xs: &[f64]| {
        xs.iter()
            .map(|x| {
                if x.is_nan() {
                    "NaN".to_string()
                } else {
                    format!("{x}")
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let lo: Vec<f64> = r.iter().map(|x| x * 0.99).collect();
    let hi: Vec<f64> = r.iter().map(|x| x * 1.01).collect();
    format!(
        r#"{{"commit_hash": "{commit}", "env_name": "{env}", "date": 1000, "params": {{"machine": "m"}},
  "result_columns": ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"],
  "results": {{
    "bench.Sort.time_sort": [[{}], [["10", "100"], ["'<f8'", "'>f8'"]], "{version}", {started}, 1.0, [{}], [{}], null, null, [1, 1, 1, 1], [3, 3, 3, 3], [[{l0}, {l0}, {l1}], null, null, null]],
    "bench.track_size": [[null], [], "bbbb", {started}]
  }},
  "durations": {{}}, "version": 2}}"#,
        fmt(&r),
        fmt(&lo),
        fmt(&hi),
        l0 = level * 0.98,
        l1 = level * 1.02,
    )
}

const NAN: f64 = f64::NAN;

/// A results file of format 1 (asv 0.4) for `commit`.
fn asv1(commit: &str, env: &str, started: u64, level: f64) -> String {
    format!(
        r#"{{"commit_hash": "{commit}", "env_name": "{env}", "date": 1000, "python": "3.6",
  "params": {{"machine": "old"}}, "requirements": {{}},
  "results": {{
    "bench.Sort.time_sort": {{"params": [["10", "100"], ["'<f8'", "'>f8'"]], "result": [{level}, {}, {}, {}],
       "stats": [{{"ci_99": [{}, {}], "q_25": {level}, "q_75": {level}}}, null, null, null]}},
    "bench.track_size": 4096
  }},
  "started_at": {{"bench.Sort.time_sort": {started}, "bench.track_size": {started}}},
  "ended_at": {{"bench.Sort.time_sort": {started}}},
  "benchmark_version": {{"bench.Sort.time_sort": "aaaa", "bench.track_size": "bbbb"}},
  "version": 1}}"#,
        level * 2.0,
        level * 3.0,
        level * 4.0,
        level * 0.9,
        level * 1.1,
    )
}

const ASV_TESTS: &str = r#"
[tests."bench.Sort.time_sort.10.ltf8"]
command = "./app"
unit = "s"

[tests.size]
command = "./app"
import = "bench.track_size"
unit = "bytes"
"#;

/// An asv results directory: machines `m1` (format 2, environments py3.11 and py3.12) and
/// `old` (format 1), one file per commit and environment.
fn asv_results(f: &Fixture) -> PathBuf {
    let root = f.dir.path().join("results");
    write(&root, "benchmarks.json", BENCHMARKS_JSON);
    write(
        &root,
        "m1/machine.json",
        r#"{"machine": "m1", "version": 1}"#,
    );
    for (i, id) in f.ids.iter().enumerate() {
        let level = if i >= 3 { 0.002 } else { 0.001 };
        let version = if i >= 5 { "cccc" } else { "aaaa" };
        for (env, k) in [("py3.11", 0u64), ("py3.12", 1)] {
            write(
                &root,
                &format!("m1/{}-{env}.json", &id[..8]),
                &asv2(
                    id,
                    env,
                    1_700_000_000_000 + i as u64 * 60_000 + k,
                    level,
                    version,
                ),
            );
        }
        write(
            &root,
            &format!("old/{}-py3.6.json", &id[..8]),
            &asv1(
                id,
                "py3.6",
                1_500_000_000_000 + i as u64 * 60_000,
                level * 10.0,
            ),
        );
    }
    root
}

#[test]
fn asv_results_of_both_formats_take_one_machine_and_environment_with_parameters_spreads_and_measured_times(
) {
    let f = Fixture::new(&specs(7, |_, _| {}), &with_build(ASV_TESTS));
    let root = asv_results(&f);
    let p = root.to_str().unwrap();
    // Two machines, then two environments: each refused until one is chosen.
    let (o, e, code) = import(&f, &["--from", "asv", p]);
    assert_eq!(code, Some(2), "{o}{e}");
    assert!(
        e.contains("2 machines: m1, old") && e.contains("--machine"),
        "{e}"
    );
    let (o, e, code) = import(&f, &["--from", "asv", p, "--machine", "m1"]);
    assert_eq!(code, Some(2), "{o}{e}");
    assert!(
        e.contains("2 environments: py3.11, py3.12") && e.contains("--env"),
        "{e}"
    );
    let (o, e, code) = import(
        &f,
        &["--from", "asv", p, "--machine", "m1", "--env", "*3.12"],
    );
    assert_eq!(code, Some(0), "{o}{e}");
    // One combination of the parameters per test; the NaN results are counted, not rows;
    // the track's failures (null) too.
    assert!(
        o.contains("imported 7 samples of 1 test on 7 commits"),
        "{o}"
    );
    assert!(o.contains("14 results without a value"), "{o}");
    let show = f.json(&["show", "bench.Sort.time_sort.10.ltf8", "--format", "json"]);
    let s = &show["samples"][0];
    assert_eq!(s["value"], 0.001, "{show}");
    // When it was measured (started_at), not the commit's date.
    assert_eq!(s["time"], 1_700_000_000, "{show}");
    assert_eq!(s["machine"], "m1/py3.12");
    assert_eq!(
        s["imported_from"]["series"],
        "bench.Sort.time_sort(10, '<f8')"
    );
    assert_eq!(s["imported_from"]["version"], "aaaa");
    assert_eq!(s["spread"][0]["kind"], "ci99");
    assert_eq!(s["spread"][0]["lo"], 0.001 * 0.99);
    assert_eq!(s["spread"][0]["hi"], 0.001 * 1.01);
    // `show` says where the benchmark's code changed.
    let o = f
        .cmd()
        .args(["show", "bench.Sort.time_sort.10.ltf8"])
        .output()
        .unwrap();
    let (text, _) = out(&o);
    assert!(
        text.contains("benchmark code changed here (aaaa to cccc)"),
        "{text}"
    );
    assert!(text.contains("imported: 7 from asv (series `bench.Sort.time_sort(10, '<f8')`); measured here: 0 runs"), "{text}");
    // --samples: the raw samples of one run are one measurement, beside the median already
    // stored.
    let (o, e, code) = import(
        &f,
        &[
            "--from",
            "asv",
            p,
            "--machine",
            "m1",
            "--env",
            "py3.11",
            "--samples",
        ],
    );
    assert_eq!(code, Some(0), "{o}{e}");
    assert!(
        o.contains("imported 21 samples of 1 test on 7 commits"),
        "{o}"
    );
    // Format 1 on its own machine: the same series, its spreads from `stats`.
    let g = Fixture::new(&specs(7, |_, _| {}), &with_build(ASV_TESTS));
    let root_g = asv_results(&g);
    let (o, e, code) = import(
        &g,
        &[
            "--from",
            "asv",
            root_g.to_str().unwrap(),
            "--machine",
            "old",
        ],
    );
    assert_eq!(code, Some(0), "{o}{e}");
    assert!(
        o.contains("imported 14 samples of 2 tests on 7 commits"),
        "{o}"
    );
    let show = g.json(&["show", "size", "--format", "json"]);
    assert_eq!(show["samples"][0]["value"], 4096.0, "{show}");
    assert_eq!(show["samples"][0]["time"], 1_500_000_000);
    let show = g.json(&["show", "bench.Sort.time_sort.10.ltf8", "--format", "json"]);
    assert_eq!(show["samples"][0]["value"], 0.001 * 10.0);
    assert_eq!(show["samples"][0]["spread"][0]["lo"], 0.001 * 10.0 * 0.9);
    assert_eq!(show["samples"][0]["machine"], "old/py3.6");
}

#[test]
fn import_keys_take_series_by_id_and_collisions_typos_and_units_are_refused_naming_both() {
    let config = r#"
[tests.a]
command = "./app"
import = "bench.Sort.time_sort(100, '<f8')"
unit = "s"

[tests.b]
command = "./app"
import = "bench.Sort.time_sort(100, '<f8')"
"#;
    let f = Fixture::new(&specs(7, |_, _| {}), &with_build(config));
    let root = asv_results(&f);
    let p = root.to_str().unwrap();
    // Two tests taking one series: the config is refused, naming both.
    let (o, e, code) = import(&f, &["--from", "asv", p, "--machine", "old"]);
    assert_eq!(code, Some(2), "{o}{e}");
    assert!(
        e.contains("tests.b.import") && e.contains("taken by test `a` too"),
        "{e}"
    );
    // A key one letter off a series of the history: refused with the series meant.
    f.set_config(&with_build(
        r#"
[tests.a]
command = "./app"
import = "bench.Sort.time_sort(100, '<f9')"
"#,
    ));
    let (o, e, code) = import(&f, &["--from", "asv", p, "--machine", "old"]);
    assert_eq!(code, Some(2), "{o}{e}");
    assert!(
        e.contains("`bench.Sort.time_sort(100, '<f9')` names no series")
            && e.contains("did you mean `bench.Sort.time_sort(100, '<f8')`"),
        "{e}"
    );
    // A test whose name is two series' sanitised name takes neither: both are named.
    f.set_config(&with_build(
        r#"
[tests."bench.Sort.time_sort.10.f8"]
command = "./app"
"#,
    ));
    let names = f.dir.path().join("names");
    write(&names, "m/machine.json", "{}");
    for id in &f.ids[..2] {
        write(
            &names,
            &format!("m/{}-e.json", &id[..8]),
            &format!(
                r#"{{"commit_hash": "{id}", "result_columns": ["result", "params"], "results": {{"bench.Sort.time_sort": [[1, 2], [["10"], ["'f8'", "\"f8\""]]]}}, "version": 2}}"#
            ),
        );
    }
    let (o, e, code) = import(&f, &["--from", "asv", names.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{o}{e}");
    assert!(
        e.contains(r#"takes two series, `bench.Sort.time_sort(10, "f8")` and `bench.Sort.time_sort(10, 'f8')`"#)
            || e.contains(r#"takes two series, `bench.Sort.time_sort(10, 'f8')` and `bench.Sort.time_sort(10, "f8")`"#),
        "{e}"
    );
    // A unit that is not the test's: nothing of the series, both units said.
    f.set_config(&with_build(
        r#"
[tests.a]
command = "./app"
import = "bench.Sort.time_sort(100, '<f8')"
unit = "ms"
"#,
    ));
    let (o, e, code) = import(&f, &["--from", "asv", p, "--machine", "old"]);
    assert_eq!(code, Some(2), "{o}{e}");
    assert!(e.contains("is in seconds, test `a` in ms"), "{e}");
    // No test takes anything: exit 2, pointing at --list.
    f.set_config(&with_build("[tests.z]\ncommand = \"./app\"\n"));
    let (o, e, code) = import(&f, &["--from", "asv", p, "--machine", "old"]);
    assert_eq!(code, Some(2), "{o}{e}");
    assert!(e.contains("no test of") && e.contains("--list"), "{e}");
}

/// pytest-benchmark's saved runs of the fixture's commits (the third saved dirty) in
/// `.benchmarks/Linux-CPython-3.12-64bit/`.
fn pytest_runs(f: &Fixture) -> PathBuf {
    let root = f.dir.path().join(".benchmarks");
    for (i, id) in f.ids.iter().enumerate() {
        let dirty = i == 2;
        write(
            &root,
            &format!(
                "Linux-CPython-3.12-64bit/{:04}_{id}_20240101_00000{i}{}.json",
                i + 1,
                if dirty { "_uncommitted-changes" } else { "" }
            ),
            &format!(
                r#"{{"machine_info": {{"node": "box"}}, "commit_info": {{"id": "{id}", "dirty": {dirty}}},
  "benchmarks": [{{"group": null, "name": "test_parse[64]", "fullname": "tests/test_x.py::test_parse[64]",
    "stats": {{"min": 0.9, "max": 1.3, "mean": 1.05, "stddev": 0.1, "rounds": 3, "median": {m}, "iqr": 0.2, "q1": 0.95, "q3": 1.15, "ops": 0.95, "data": [{lo}, {m}, {hi}]}}}}],
  "datetime": "2024-01-01T00:00:0{i}.500000+00:00", "version": "4.0.0"}}"#,
                m = 1.0 + i as f64,
                lo = 0.9 + i as f64,
                hi = 1.2 + i as f64,
            ),
        );
    }
    root
}

const PYTEST: &str =
    "[tests.\"tests_test_x.py_test_parse_64\"]\ncommand = \"./app\"\nunit = \"s\"\n";

#[test]
fn pytest_benchmark_runs_skip_uncommitted_ones_unless_asked_and_keep_their_samples_on_request() {
    let f = Fixture::new(&specs(3, |_, _| {}), &with_build(PYTEST));
    let root = pytest_runs(&f);
    let p = root.to_str().unwrap();
    let (o, e, code) = import(&f, &["--from", "pytest-benchmark", p]);
    assert_eq!(code, Some(0), "{o}{e}");
    assert!(
        o.contains("imported 2 samples of 1 test on 2 commits"),
        "{o}"
    );
    assert!(o.contains("1 uncommitted changes"), "{o}");
    assert!(e.contains("0003_") && e.contains("--dirty"), "{e}");
    let show = f.json(&["show", "tests_test_x.py_test_parse_64", "--format", "json"]);
    assert_eq!(show["samples"][0]["value"], 1.0, "{show}");
    assert_eq!(show["samples"][0]["time"], 1_704_067_200);
    assert_eq!(show["samples"][0]["machine"], "Linux-CPython-3.12-64bit");
    assert_eq!(show["samples"][0]["spread"][0]["kind"], "stddev");
    // The raw rounds of each run, dirty ones too: one measurement each run.
    let g = Fixture::new(&specs(3, |_, _| {}), &with_build(PYTEST));
    let root = pytest_runs(&g);
    let (o, e, code) = import(
        &g,
        &[
            "--from",
            "pytest-benchmark",
            root.to_str().unwrap(),
            "--dirty",
            "--samples",
        ],
    );
    assert_eq!(code, Some(0), "{o}{e}");
    assert!(
        o.contains("imported 9 samples of 1 test on 3 commits"),
        "{o}"
    );
    let show = g.json(&["show", "tests_test_x.py_test_parse_64", "--format", "json"]);
    let third = &show["commits"].as_array().unwrap()[2];
    assert_eq!(third["n"], 3, "{show}");
    assert_eq!(third["median"], 3.0, "{show}");
}

#[test]
fn bmf_and_hyperfine_files_take_their_commit_from_the_command_line_or_their_names() {
    let config = r#"
[tests.parse]
command = "./app"
metric = { format = "bmf", name = "parse", field = "latency" }

[tests.startup]
command = "./app"
metric = { format = "hyperfine", name = "app --version" }
"#;
    let f = Fixture::new(&specs(3, |_, _| {}), &with_build(config));
    let bmf = write(
        f.dir.path(),
        "bmf.json",
        r#"{"parse": {"latency": {"value": 120.5, "lower_value": 110, "upper_value": 130}}}"#,
    );
    let (o, e, code) = import(&f, &["--from", "bmf", bmf.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{o}{e}");
    assert!(
        e.contains("names no commit") && e.contains("--commit REV"),
        "{e}"
    );
    let (o, e, code) = import(
        &f,
        &[
            "--from",
            "bmf",
            bmf.to_str().unwrap(),
            "--commit",
            &f.ids[0],
            "--timestamp",
            "2024-05-01T00:00:00Z",
        ],
    );
    assert_eq!(code, Some(0), "{o}{e}");
    let show = f.json(&["show", "parse", "--format", "json"]);
    assert_eq!(show["samples"][0]["value"], 120.5);
    assert_eq!(show["samples"][0]["time"], 1_714_521_600);
    assert_eq!(show["samples"][0]["spread"][0]["kind"], "bounds");
    // A folder of hyperfine exports named by their commits; `times` as separate runs.
    let dir = f.dir.path().join("hf");
    for (i, id) in f.ids.iter().enumerate() {
        write(
            &dir,
            &format!("run_{}_linux.json", &id[..10]),
            &format!(
                r#"{{"results": [{{"command": "app --version", "mean": {m}, "stddev": 0.01, "median": {m}, "user": 0.1, "system": 0.0, "min": 0.1, "max": 0.3, "times": [0.1, {m}, 0.3], "exit_codes": [0, 0, 0]}}]}}"#,
                m = 0.2 + i as f64 * 0.01
            ),
        );
    }
    write(&dir, "notes.json", r#"{"results": []}"#);
    let (o, e, code) = import(&f, &["--from", "hyperfine", dir.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{o}{e}");
    assert!(
        o.contains("imported 3 samples of 1 test on 3 commits"),
        "{o}"
    );
    assert!(
        e.contains("notes.json: skipped: no part of the file's name"),
        "{e}"
    );
    let (o, e, code) = import(
        &f,
        &["--from", "hyperfine", dir.to_str().unwrap(), "--samples"],
    );
    assert_eq!(code, Some(0), "{o}{e}");
    let show = f.json(&["show", "startup", "--format", "json"]);
    let first = &show["commits"].as_array().unwrap()[0];
    // The mean, and three process runs of their own.
    assert_eq!(first["n"], 4, "{show}");
}

#[test]
fn git_history_reads_every_version_of_data_js_and_brings_back_entries_a_cap_removed() {
    let f = Fixture::new(&specs(4, |_, _| {}), &with_build(LIBTEST));
    let es: Vec<String> = f
        .ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            entry(
                id,
                1_600_000_000_000 + i as u64 * 1000,
                &[("parse", 100.0 + i as f64, "ns/iter", "± 1")],
            )
        })
        .collect();
    // gh-pages: three versions, each capped at two entries (max-items-in-chart: 2).
    let git = |args: &[&str], input: Option<&str>| {
        perfbisect::scaffold::demo::git(&f.repo, args, input.map(str::as_bytes)).unwrap()
    };
    let mut parent: Option<String> = None;
    for k in 0..3 {
        let text = data_js(&[("ci", es[k..k + 2].to_vec())]);
        let blob = git(&["hash-object", "-w", "--stdin"], Some(&text));
        let inner = git(
            &["mktree"],
            Some(&format!("100644 blob {}\tdata.js\n", blob.trim())),
        );
        let outer = git(
            &["mktree"],
            Some(&format!("040000 tree {}\tbench\n", inner.trim())),
        );
        let dev = git(
            &["mktree"],
            Some(&format!("040000 tree {}\tdev\n", outer.trim())),
        );
        let mut args = vec!["commit-tree", dev.trim(), "-m", "add data"];
        let p;
        if let Some(pp) = &parent {
            p = pp.clone();
            args.extend(["-p", p.as_str()]);
        }
        parent = Some(git(&args, None).trim().to_string());
    }
    git(
        &[
            "update-ref",
            "refs/heads/gh-pages",
            parent.as_deref().unwrap(),
        ],
        None,
    );
    let (o, e, code) = import(
        &f,
        &[
            "--from",
            "benchmark-action",
            "dev/bench/data.js",
            "--git-history",
        ],
    );
    assert_eq!(code, Some(0), "{o}{e}");
    assert!(
        o.contains("imported 4 samples of 1 test on 4 commits"),
        "{o}"
    );
    assert!(
        e.contains("read 3 versions of dev/bench/data.js from the log of `gh-pages`"),
        "{e}"
    );
    // The newest version alone holds two of them.
    let last = write(
        f.dir.path(),
        "last.js",
        &data_js(&[("ci", es[2..4].to_vec())]),
    );
    let (o, _, _) = import(&f, &["--from", "benchmark-action", last.to_str().unwrap()]);
    assert!(
        o.contains("imported 0 samples of 0 tests on 0 commits; 2 already"),
        "{o}"
    );
}

/// The demo program's number as a benchmark-action history: one entry on every fourth commit
/// (and the last), the value `level(i)` for commit i (1-based).
fn history_of(f: &Fixture, level: impl Fn(usize) -> f64) -> PathBuf {
    let mut es = Vec::new();
    for (i, id) in f.ids.iter().enumerate() {
        if i % 4 != 0 && i != f.ids.len() - 1 {
            continue;
        }
        for r in 0..3 {
            let v = level(i + 1) * (1.0 + (r as f64 - 1.0) * 0.002);
            let mut e = entry(
                id,
                1_600_000_000_000 + (i * 10 + r) as u64 * 1000,
                &[("value", v, "units", "± 2")],
            );
            e = e.replace("\"tool\": \"cargo\"", "\"tool\": \"customSmallerIsBetter\"");
            es.push(e);
        }
    }
    write(f.dir.path(), "data.js", &data_js(&[("nightly", es)]))
}

const VALUE: &str = r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
unit = "units"
repeats = 5
threshold = "2%"
"#;

#[test]
fn a_step_between_imported_commits_is_searched_by_building_and_its_culprit_measured_here() {
    let f = Fixture::new(
        &specs(17, |i, c| {
            c.metric = if i >= 10 { 1100.0 } else { 1000.0 };
        }),
        &with_build(VALUE),
    );
    // The history was measured on a machine twice as slow: its levels are not this one's.
    let js = history_of(&f, |i| if i >= 10 { 2200.0 } else { 2000.0 });
    let (o, e, code) = import(&f, &["--from", "benchmark-action", js.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{o}{e}");
    let d = f.json(&["detect", "value", &f.range(), "--format", "json"]);
    let cps = d["change_points"].as_array().unwrap();
    assert!(
        cps.iter().any(|c| c["commit"] == f.ids[12].as_str()),
        "the imported step lies at the first imported commit after it: {d}"
    );
    let r = f.json(&["find", "value", &f.range(), "--format", "json"]);
    assert_eq!(r["verdict"], "culprit", "{r}");
    assert_eq!(r["culprit"]["commit"], f.ids[9].as_str(), "{r}");
    assert_eq!(r["imported"]["old"]["commit"], f.ids[8].as_str(), "{r}");
    assert_eq!(r["imported"]["new"]["commit"], f.ids[12].as_str(), "{r}");
    // The culprit's levels are this machine's.
    let before = r["culprit"]["before"]["median"].as_f64().unwrap();
    assert!((before / 1000.0 - 1.0).abs() < 0.05, "{r}");
    // triage reads the imported history's change point and confirms the same culprit here.
    let t = f.json(&["triage", "value", &f.range(), "--format", "json"]);
    let found: Vec<&serde_json::Value> = t["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["state"] == "new")
        .collect();
    assert_eq!(found.len(), 1, "{t}");
    assert_eq!(found[0]["commit"], f.ids[9].as_str(), "{t}");
}

#[test]
fn an_imported_step_that_rebuilt_commits_do_not_show_is_said_with_both_measurements() {
    let f = Fixture::new(&specs(13, |_, _| {}), &with_build(VALUE));
    // A runner change in the history: the numbers step, the code does not.
    let js = history_of(&f, |i| if i >= 6 { 1300.0 } else { 1000.0 });
    let (o, e, code) = import(&f, &["--from", "benchmark-action", js.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{o}{e}");
    let r = f.json(&["find", "value", &f.range(), "--format", "json"]);
    assert_eq!(r["verdict"], "no-change", "{r}");
    assert_eq!(r["imported"]["fell_back"], true, "{r}");
    let here = &r["imported"]["here"];
    let (a, b) = (
        here["old_median"].as_f64().unwrap(),
        here["new_median"].as_f64().unwrap(),
    );
    assert!(
        (a / 1000.0 - 1.0).abs() < 0.05 && (b / 1000.0 - 1.0).abs() < 0.05,
        "{r}"
    );
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("the imported step does not show here: imported 1000 to 1300 (+30.00 %)")
            && notes.contains("measured here"),
        "{notes}"
    );
}
