//! Harness metrics (`metric = { format, name, field, file }`) on real output of each tool:
//! Google Benchmark compiled and run here, hyperfine run here, a custom harness writing
//! Bencher Metric Format, and the recorded output of criterion, cargo-criterion and libtest
//! (tests/fixtures/README.md says how each was made). One command's output feeds several
//! tests: it runs once per repeat.

use crate::common;

use common::{fixture, have_tool, Fixture};
use serde_json::Value;

/// TOML basic string of `s`.
fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// `show TEST --format json` over every commit with results: (unit, medians).
fn shown(f: &Fixture, test: &str) -> (String, Vec<Option<f64>>) {
    let v = f.json(&["show", test, "--format", "json"]);
    assert_eq!(v["schema"], 1, "{v}");
    (v["unit"].as_str().unwrap().to_string(), common::medians(&v))
}

const BM_CC: &str = r#"#include <benchmark/benchmark.h>
#include "params.h"

static void BM_Work(benchmark::State& state) {
  for (auto _ : state) {
    long s = 0;
    for (long i = 0; i < WORK; ++i) benchmark::DoNotOptimize(s += i);
  }
  state.counters["answer"] = ANSWER;
  state.SetItemsProcessed(state.iterations() * WORK);
}
BENCHMARK(BM_Work)->Unit(benchmark::kMicrosecond);

static void BM_Other(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(state.iterations());
}
BENCHMARK(BM_Other);

BENCHMARK_MAIN();
"#;

#[test]
fn google_benchmark_json_feeds_several_tests_from_one_run() {
    if !have_tool("c++", "a C++ compiler for Google Benchmark")
        || !common::have(
            std::path::Path::new("/usr/include/benchmark/benchmark.h").is_file(),
            "Google Benchmark (libbenchmark-dev)",
        )
    {
        return;
    }
    let params = |answer: u32| format!("#define WORK 2000\n#define ANSWER {answer}\n");
    let f = Fixture::with_files(
        &[
            (
                "Benchmark",
                vec![("bm.cc", BM_CC.to_string()), ("params.h", params(42))],
            ),
            ("Unrelated", vec![("README", "docs\n".to_string())]),
            ("Change the answer", vec![("params.h", params(50))]),
        ],
        "",
    );
    // Every test runs the same command: one execution per repeat feeds all four, and each
    // execution leaves a line in `executions`.
    let cmd = q(
        "echo run >> \"$PERFBISECT_CONFIG_DIR/executions\"; ./bm --benchmark_format=json --benchmark_min_time=0.01",
    );
    f.set_config(&format!(
        r#"
[build]
command = "c++ -O1 -o bm bm.cc -lbenchmark -lpthread"
artifacts = ["bm"]

[tests.work]
command = {cmd}
metric = {{ format = "gbench", name = "BM_Work" }}
repeats = 2

[tests.answer]
command = {cmd}
metric = {{ format = "gbench", name = "BM_Work", field = "answer" }}
deterministic = true

[tests.items]
command = {cmd}
metric = {{ format = "gbench", name = "BM_Work", field = "items_per_second" }}
direction = "higher"
repeats = 2

[tests.other-cpu]
command = {cmd}
metric = {{ format = "gbench", name = "BM_Other", field = "cpu_time" }}
repeats = 2
"#
    ));
    let range = f.range();
    let s = f.run_json("all", &range, &[]);
    assert_eq!(s["schema"], 1, "{s}");
    // One build per commit, and one pristine rebuild that checks the build the deterministic
    // `answer` step stands on: builds count it too.
    assert_eq!(s["pristine_checks"], 1, "{s}");
    assert_eq!(s["builds"], 2 + 1, "{s}");
    assert_eq!(s["failed_runs"], 0, "{s}");
    // Samples: 2 + 1 + 2 + 2 per commit, from 2 executions per commit.
    assert_eq!(s["runs"], 2 * 7, "{s}");
    let executions = std::fs::read_to_string(f.dir.path().join("executions")).unwrap();
    assert_eq!(
        executions.lines().count(),
        2 * 2,
        "one execution per repeat"
    );

    // Units as Google Benchmark states them, also in a later invocation that measures nothing.
    let (unit, work) = shown(&f, "work");
    assert_eq!(unit, "us");
    assert!(work.iter().all(|m| m.is_some_and(|v| v > 0.0)), "{work:?}");
    assert_eq!(shown(&f, "other-cpu").0, "ns");
    assert_eq!(shown(&f, "items").0, "items/s");
    let (unit, answers) = shown(&f, "answer");
    assert_eq!(unit, "", "a user counter has no unit");
    assert_eq!(answers, [Some(42.0), Some(50.0)]);

    // The counter moved at the third commit: find names it, deterministically.
    let found = f.json(&["find", "answer", &range, "--format", "json"]);
    assert_eq!(found["schema"], 1);
    assert_eq!(found["verdict"], "culprit", "{found}");
    assert_eq!(found["culprit"]["commit"], f.ids[2].as_str(), "{found}");
    assert_eq!(found["deterministic"], true);

    // A misspelt benchmark name: the runs fail and say what the output holds.
    let bad = f.dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        format!(
            "[build]\ncommand = \"c++ -O1 -o bm bm.cc -lbenchmark -lpthread\"\nartifacts = [\"bm\"]\n\
             [tests.work]\ncommand = {cmd}\nmetric = {{ format = \"gbench\", name = \"BM_Wrok\" }}\nrepeats = 1\n"
        ),
    )
    .unwrap();
    let out = f
        .cmd_config(&bad)
        .args(["run", "work", &range, "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("benchmark `BM_Wrok` is not in the output; did you mean `BM_Work`?"),
        "{err}"
    );
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["failed_runs"], 2, "{s}");
}

#[test]
fn hyperfine_export_json_is_read_as_hyperfine_wrote_it() {
    if !have_tool("hyperfine", "the hyperfine adapter test") {
        return;
    }
    let f = Fixture::with_files(
        &[
            ("Work", vec![("work.sh", "#!/bin/sh\nexit 0\n".to_string())]),
            (
                "More work",
                vec![("work.sh", "#!/bin/sh\nsleep 0.02\n".to_string())],
            ),
        ],
        "",
    );
    // hyperfine measures two named commands and exports JSON into the run's scratch
    // directory; a copy per commit lets the test compare what perfbisect stored.
    let cmd = q(
        "hyperfine --runs 3 -N --export-json \"$PERFBISECT_OUT/h.json\" -n quick true -n work ./work.sh >/dev/null && cp \"$PERFBISECT_OUT/h.json\" \"$PERFBISECT_CONFIG_DIR/h-$PERFBISECT_COMMIT.json\"",
    );
    f.set_config(&format!(
        r#"
[build]
artifacts = ["work.sh"]

[tests.work]
command = {cmd}
metric = {{ format = "hyperfine", name = "work", file = "h.json" }}
repeats = 1

[tests.quick-max]
command = {cmd}
metric = {{ format = "hyperfine", name = "quick", field = "max", file = "h.json" }}
repeats = 1

[tests.no-file]
command = "hyperfine --runs 2 -N true"
metric = {{ format = "hyperfine" }}
repeats = 1
"#
    ));
    // Both commits: the first alone, then the second.
    for rev in [&f.ids[0], &f.ids[1]] {
        let s = f.run_json("work,quick-max", rev, &[]);
        assert_eq!(s["failed_runs"], 0, "{s}");
        assert_eq!(s["runs"], 2, "{s}");
    }
    let (unit, work) = shown(&f, "work");
    assert_eq!(unit, "s");
    let (_, quick) = shown(&f, "quick-max");
    for (k, id) in f.ids.iter().enumerate() {
        let export: Value = serde_json::from_slice(
            &std::fs::read(f.dir.path().join(format!("h-{id}.json"))).unwrap(),
        )
        .unwrap();
        let results = export["results"].as_array().unwrap();
        let by = |n: &str| results.iter().find(|r| r["command"] == n).unwrap();
        assert_eq!(work[k], by("work")["mean"].as_f64(), "commit {k}");
        assert_eq!(quick[k], by("quick")["max"].as_f64(), "commit {k}");
    }

    // Without --export-json nothing is JSON: the failed run says how to get it.
    let out = f
        .cmd()
        .args(["run", "no-file", &f.ids[0]])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--export-json \"$PERFBISECT_OUT/h.json\"") && err.contains("`file"),
        "{err}"
    );
}

#[test]
fn criterion_estimates_and_cargo_criterion_lines() {
    let home = fixture("criterion-home");
    let lines = fixture("cargo-criterion.jsonl");
    // Each run writes criterion's results into the CRITERION_HOME perfbisect gives it, as
    // `./bench --bench` does.
    let copy = q(&format!(
        "mkdir -p \"$CRITERION_HOME\" && cp -R '{}/.' \"$CRITERION_HOME\"",
        home.display()
    ));
    let cat = q(&format!("cat '{}'", lines.display()));
    let f = Fixture::with_files(&[("One", vec![("README", "x\n".to_string())])], "");
    f.set_config(&format!(
        r#"
[tests.sum1000]
command = {copy}
metric = {{ format = "criterion", name = "sum/1000" }}
repeats = 1

[tests.fib-mean]
command = {copy}
metric = {{ format = "criterion", name = "fib 15", field = "mean" }}
repeats = 1

[tests.fib-slope]
command = {copy}
metric = {{ format = "criterion", name = "fib 15", field = "slope" }}
repeats = 1

[tests.missing]
command = {copy}
metric = {{ format = "criterion", name = "sum/10000" }}
repeats = 1

[tests.cc-median]
command = {cat}
metric = {{ format = "criterion", name = "fib 15" }}
repeats = 1

[tests.cc-typical]
command = {cat}
metric = {{ format = "criterion", name = "sum/100", field = "typical" }}
repeats = 1
"#
    ));
    let rev = f.ids[0].as_str();
    let out = f
        .cmd()
        .args(["run", "all", rev, "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["failed_runs"], 1, "{s} {err}");
    assert!(
        err.contains("benchmark `sum/10000` is not in the output; did you mean `sum/1000`?"),
        "{err}"
    );
    let estimate = |id: &str, field: &str| -> f64 {
        let v: Value = serde_json::from_slice(
            &std::fs::read(home.join(id).join("new/estimates.json")).unwrap(),
        )
        .unwrap();
        v[field]["point_estimate"].as_f64().unwrap()
    };
    let one = |test: &str| {
        let (unit, m) = shown(&f, test);
        assert_eq!(unit, "ns", "{test}");
        m[0].unwrap()
    };
    assert_eq!(one("sum1000"), estimate("sum/1000", "median"));
    assert_eq!(one("fib-mean"), estimate("fib 15", "mean"));
    assert_eq!(one("fib-slope"), estimate("fib 15", "slope"));
    let messages: Vec<Value> = std::fs::read_to_string(&lines)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let msg = |id: &str| messages.iter().find(|m| m["id"] == id).unwrap();
    assert_eq!(
        one("cc-median"),
        msg("fib 15")["median"]["estimate"].as_f64().unwrap()
    );
    assert_eq!(
        one("cc-typical"),
        msg("sum/100")["typical"]["estimate"].as_f64().unwrap()
    );
}

#[test]
fn bencher_metric_format_from_a_custom_harness_and_from_a_file() {
    // A project's own harness printing BMF: the binary's size grows at the third commit.
    let bench = |size: u32| {
        format!(
            "#!/bin/sh\ncat <<EOF\n{{\"parse\": {{\"latency\": {{\"value\": 88.0, \"lower_value\": 87.42, \"upper_value\": 88.88}}, \"throughput\": {{\"value\": 5.55}}}},\n \"my_binary\": {{\"file-size\": {{\"value\": {size}.0}}}}}}\nEOF\n"
        )
    };
    let f = Fixture::with_files(
        &[
            ("Harness", vec![("bench.sh", bench(42000))]),
            ("Unrelated", vec![("README", "x\n".to_string())]),
            ("Grow the binary", vec![("bench.sh", bench(45000))]),
        ],
        "",
    );
    let example = fixture("bmf-example.json");
    f.set_config(&format!(
        r#"
[build]
artifacts = ["bench.sh"]

[tests.size]
command = "./bench.sh"
metric = {{ format = "bmf", name = "my_binary" }}
deterministic = true

[tests.latency]
command = "./bench.sh"
metric = {{ format = "bmf", name = "parse", field = "latency" }}
repeats = 2

[tests.doc]
command = {}
metric = {{ format = "bmf", name = "benchmark_name", field = "throughput", file = "bmf.json" }}
direction = "higher"
repeats = 1
"#,
        q(&format!(
            "cp '{}' \"$PERFBISECT_OUT/bmf.json\"",
            example.display()
        ))
    ));
    let range = f.range();
    let s = f.run_json("all", &range, &[]);
    assert_eq!(s["failed_runs"], 0, "{s}");
    let (unit, sizes) = shown(&f, "size");
    assert_eq!(unit, "bytes");
    assert_eq!(sizes, [Some(42000.0), Some(45000.0)]);
    assert_eq!(
        shown(&f, "latency"),
        ("ns".to_string(), vec![Some(88.0); 2])
    );
    assert_eq!(shown(&f, "doc"), ("ops/s".to_string(), vec![Some(5.55); 2]));
    let found = f.json(&["size", &range, "--format", "json"]);
    assert_eq!(found["culprit"]["commit"], f.ids[2].as_str(), "{found}");
}

#[test]
fn libtest_bench_lines() {
    let out = fixture("libtest-bench.txt");
    let cat = q(&format!("cat '{}'", out.display()));
    let f = Fixture::with_files(&[("One", vec![("README", "x\n".to_string())])], "");
    f.set_config(&format!(
        r#"
[tests.copy]
command = {cat}
metric = {{ format = "libtest", name = "copy_4k" }}
repeats = 1

[tests.copy-mbs]
command = {cat}
metric = {{ format = "libtest", name = "copy_4k", field = "MB/s" }}
direction = "higher"
repeats = 1

[tests.nested]
command = {cat}
metric = {{ format = "libtest", name = "nested::fmt_number" }}
repeats = 1
"#
    ));
    let s = f.run_json("all", &f.ids[0], &[]);
    assert_eq!(s["failed_runs"], 0, "{s}");
    assert_eq!(s["runs"], 3, "{s}");
    assert_eq!(shown(&f, "copy"), ("ns".to_string(), vec![Some(77.87)]));
    assert_eq!(
        shown(&f, "copy-mbs"),
        ("MB/s".to_string(), vec![Some(53194.0)])
    );
    assert_eq!(shown(&f, "nested"), ("ns".to_string(), vec![Some(43.36)]));
}

#[test]
fn a_change_of_the_tools_unit_is_a_failed_run_not_a_step() {
    // Google Benchmark JSON whose time_unit changes at the second commit (a benchmark given
    // ->Unit(kMicrosecond)): the values are not comparable, and perfbisect does not convert.
    let out = |v: f64, unit: &str| {
        format!(
            "#!/bin/sh\necho '{{\"benchmarks\": [{{\"name\": \"BM_x\", \"run_type\": \"iteration\", \"iterations\": 10, \"real_time\": {v}, \"cpu_time\": {v}, \"time_unit\": \"{unit}\"}}]}}'\n"
        )
    };
    let f = Fixture::with_files(
        &[
            ("ns", vec![("bm.sh", out(1500.0, "ns"))]),
            ("still ns", vec![("bm.sh", out(1510.0, "ns"))]),
            ("us now", vec![("bm.sh", out(1.5, "us"))]),
        ],
        "[build]\nartifacts = [\"bm.sh\"]\n[tests.x]\ncommand = \"./bm.sh\"\nmetric = { format = \"gbench\", name = \"BM_x\" }\nrepeats = 1\n",
    );
    let out = f
        .cmd()
        .args(["run", "x", &f.range(), "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["failed_runs"], 1, "{s}");
    // `run` measures the commits round by round in a shuffled order: whichever unit came
    // first is the test's, and the other commit's run fails saying so.
    let (unit, m) = shown(&f, "x");
    match unit.as_str() {
        "ns" => {
            assert!(
                err.contains(
                    "reported this value in `us`, but earlier runs of test `x` were in `ns`"
                ),
                "{err}"
            );
            assert_eq!(m, [Some(1510.0), None]);
        }
        "us" => {
            assert!(
                err.contains(
                    "reported this value in `ns`, but earlier runs of test `x` were in `us`"
                ),
                "{err}"
            );
            assert_eq!(m, [None, Some(1.5)]);
        }
        other => panic!("unit {other}: {err}"),
    }
}
