//! `find`, `compare`, `calibrate` and `step` on generated repositories of a C program whose
//! printed value has 1 % noise and rare outliers.

mod common;

use common::{specs, Fixture};
use perfbisect::demo::CommitSpec;

const CONFIG: &str = r#"
[build]
command = "cc -O1 -o app app.c -lm"
artifacts = ["app"]

[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "2%"
repeats = 5

[tests.size]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
unit = "bytes"
threshold = "0.1%"
repeats = 1

[tests.rss]
command = "./app"
metric = "max-rss"
threshold = "10%"
repeats = 3
"#;

/// `n` commits with 1 % noise and 2 % outliers; `f` sets each 1-based commit.
fn noisy(n: usize, f: impl Fn(usize, &mut CommitSpec)) -> Fixture {
    Fixture::new(
        &specs(n, |i, c| {
            c.outlier_rate = 0.02;
            f(i, c)
        }),
        CONFIG,
    )
}

fn find(f: &Fixture, test: &str) -> serde_json::Value {
    f.json(&["find", test, &f.range(), "--format", "json"])
}

/// `step value --old OLD` on the checked-out commit: (exit code, stderr).
fn step(f: &Fixture, old: &str) -> (Option<i32>, String) {
    let out = f
        .cmd()
        .args(["step", "value", "--old", old])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// ⌈log2 n⌉ + 2
fn budget(commits: usize) -> u64 {
    (commits as f64).log2().ceil() as u64 + 2
}

#[test]
fn single_regression_is_named_with_few_builds() {
    let f = noisy(33, |i, c| c.metric = if i >= 21 { 1060.0 } else { 1000.0 });
    let j = find(&f, "value");
    assert_eq!(j["verdict"], "culprit", "{j}");
    assert_eq!(j["culprit"]["commit"], f.ids[20].as_str(), "{j}");
    assert_eq!(j["culprit"]["parent"], f.ids[19].as_str(), "{j}");
    assert_eq!(j["culprit"]["kind"], "regression");
    assert!(j["culprit"]["rel_change"].as_f64().unwrap() > 0.04, "{j}");
    assert!(j["culprit"]["p_value"].as_f64().unwrap() < 0.01, "{j}");
    assert_eq!(j["culprits"].as_array().unwrap().len(), 1);
    assert!(j["builds"].as_u64().unwrap() <= budget(32), "{j}");
    // The same question again is answered from the store and the cache.
    let again = find(&f, "value");
    assert_eq!(again["culprit"]["commit"], f.ids[20].as_str());
    assert_eq!(again["builds"], 0, "{again}");
}

#[test]
fn improvement_and_markdown_report() {
    let f = noisy(17, |i, c| c.metric = if i >= 6 { 940.0 } else { 1000.0 });
    let j = find(&f, "value");
    assert_eq!(j["culprit"]["commit"], f.ids[5].as_str(), "{j}");
    assert_eq!(j["culprit"]["kind"], "improvement");
    let md = f
        .cmd()
        .args(["find", "value", &f.range(), "--format", "md"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("improvement at"), "{md}");
    assert!(md.contains(&f.ids[5]), "{md}");
    assert!(md.contains("git bisect run perfbisect step value"), "{md}");
}

#[test]
fn deterministic_metric_takes_one_run_per_commit() {
    let f = noisy(33, |i, c| {
        c.noise_pct = 0.0;
        c.outlier_rate = 0.0;
        c.metric = if i >= 12 { 3072.0 } else { 3064.0 };
    });
    let j = find(&f, "size");
    assert_eq!(j["culprit"]["commit"], f.ids[11].as_str(), "{j}");
    let (builds, runs) = (j["builds"].as_u64().unwrap(), j["runs"].as_u64().unwrap());
    assert!(builds <= budget(32), "{j}");
    assert!(
        runs <= builds + 2,
        "one run per commit (plus a re-check): {j}"
    );
}

#[test]
fn max_rss_step_is_found() {
    let f = noisy(17, |i, c| c.megabytes = if i >= 9 { 60 } else { 20 });
    let j = find(&f, "rss");
    assert_eq!(j["culprit"]["commit"], f.ids[8].as_str(), "{j}");
    assert!(j["culprit"]["rel_change"].as_f64().unwrap() > 1.0, "{j}");
}

#[test]
fn step_next_to_an_unbuildable_commit_lists_both_candidates() {
    let f = noisy(17, |i, c| {
        c.metric = if i >= 10 { 1080.0 } else { 1000.0 };
        c.broken = i == 9;
    });
    let j = find(&f, "value");
    assert_eq!(j["verdict"], "culprit", "{j}");
    let cands: Vec<&str> = j["culprit"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        cands.contains(&f.ids[8].as_str()) && cands.contains(&f.ids[9].as_str()),
        "{j}"
    );
    assert_eq!(cands.len(), 2, "{j}");
    assert_eq!(j["culprit"]["parent"], f.ids[7].as_str(), "{j}");
    assert!(
        j["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == f.ids[8].as_str()),
        "{j}"
    );
}

#[test]
fn no_change_says_what_it_could_have_seen() {
    let f = noisy(17, |_, _| {});
    let j = find(&f, "value");
    assert_eq!(j["verdict"], "no-change", "{j}");
    assert!(j["culprit"].is_null());
    let mdc = j["no_change"]["min_detectable"].as_f64().unwrap();
    assert!(mdc > 0.0 && mdc < 0.1, "{j}");
    assert_eq!(j["builds"], 2, "only the ends: {j}");
}

#[test]
fn two_steps_are_both_reported() {
    let f = noisy(33, |i, c| {
        c.metric = 1000.0 * if i >= 9 { 1.10 } else { 1.0 } * if i >= 25 { 1.10 } else { 1.0 };
    });
    let j = find(&f, "value");
    assert_eq!(j["verdict"], "culprit", "{j}");
    let mut found: Vec<&str> = j["culprits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["commit"].as_str().unwrap())
        .collect();
    found.sort();
    let mut want = vec![f.ids[8].as_str(), f.ids[24].as_str()];
    want.sort();
    assert_eq!(found, want, "{j}");
}

#[test]
fn compare_and_calibrate_report_ratio_and_noise() {
    // No outliers here: one ×1.3 run among 7 would rightly make the rank test unsure.
    let f = noisy(3, |i, c| {
        c.metric = if i == 3 { 1100.0 } else { 1000.0 };
        c.outlier_rate = 0.0;
    });
    let j = f.json(&[
        "compare", "value", &f.ids[1], &f.ids[2], "--runs", "7", "--format", "json",
    ]);
    let ratio = j["ratio"].as_f64().unwrap();
    assert!((ratio - 1.1).abs() < 0.03, "{j}");
    let (lo, hi) = (
        j["ratio_ci"][0].as_f64().unwrap(),
        j["ratio_ci"][1].as_f64().unwrap(),
    );
    assert!(lo <= ratio && ratio <= hi, "{j}");
    assert_eq!(j["differs"], true);
    assert_eq!(j["a"]["n"], 7);
    assert!(j["b"]["wall"]["median"].as_f64().unwrap() > 0.0);

    let c = f.json(&[
        "calibrate",
        "value",
        &f.ids[0],
        "--runs",
        "20",
        "--format",
        "json",
    ]);
    let cv = c["noise_cv"].as_f64().unwrap();
    assert!(cv > 0.003 && cv < 0.03, "1 % noise measured as {cv}");
    assert!(c["repeats_needed"].as_u64().unwrap() >= 1);
}

#[test]
fn git_bisect_run_with_step_names_the_culprit() {
    let f = noisy(17, |i, c| c.metric = if i >= 12 { 1070.0 } else { 1000.0 });
    let (old, new) = (&f.ids[0], &f.ids[16]);
    f.git(&["bisect", "start", new, old]);
    let bin = assert_cmd::cargo::cargo_bin("perfbisect");
    let out = std::process::Command::new("git")
        .args(["bisect", "run"])
        .arg(&bin)
        .arg("--config")
        .arg(&f.config)
        .arg("--cache")
        .arg(&f.cache)
        .args(["--no-progress", "step", "value", "--old", old])
        .current_dir(&f.repo)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("{} is the first bad commit", f.ids[11])),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    f.git(&["bisect", "reset"]);
}

#[test]
fn step_skips_unbuildable_head_and_stops_on_bad_old() {
    let f = noisy(3, |i, c| c.broken = i == 3);
    f.git(&["checkout", "-q", &f.ids[2]]);
    let (code, err) = step(&f, &f.ids[0]);
    assert_eq!(code, Some(125), "{err}");
    f.git(&["checkout", "-q", &f.ids[1]]);
    let (code, err) = step(&f, "nope");
    assert_eq!(code, Some(128));
    assert!(err.contains("nope"));
    let (code, err) = step(&f, &f.ids[0]);
    assert_eq!(code, Some(0), "{err}");
}
