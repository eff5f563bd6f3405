//! `find`, `compare`, `calibrate` and `step` on generated repositories of a C program whose
//! printed value has 1 % noise and rare outliers.

use crate::common;

use common::{specs, Fixture};
use perfbisect::scaffold::demo::CommitSpec;

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
deterministic = true

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

/// The builds a `find` made for its search: its `builds` less the pristine rebuilds that
/// checked the verdict's builds.
fn search_builds(j: &serde_json::Value) -> u64 {
    j["builds"].as_u64().unwrap() - j["pristine_checks"].as_u64().unwrap()
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
    assert!(search_builds(&j) <= budget(32), "{j}");
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
    assert!(md.contains("git bisect run perfbisect "), "{md}");
    assert!(md.contains(" step value --old "), "{md}");
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
    let (builds, runs) = (search_builds(&j), j["runs"].as_u64().unwrap());
    assert!(builds <= budget(32), "{j}");
    assert!(
        runs <= builds + 2,
        "one run per commit (plus a re-check): {j}"
    );
    // Asked again, it answers from the store: the interleaved re-check of the first search
    // stands for a deterministic metric.
    let again = find(&f, "size");
    assert_eq!(again["culprit"]["commit"], f.ids[11].as_str(), "{again}");
    assert_eq!(again["culprit"]["verified"], true, "{again}");
    assert_eq!(
        (again["builds"].as_u64(), again["runs"].as_u64()),
        (Some(0), Some(0)),
        "{again}"
    );
}

/// The confirmation a culprit's line claims, from one invocation's text or Markdown.
fn claim(f: &Fixture, test: &str, format: &str) -> String {
    let out = f
        .cmd()
        .args(["find", test, &f.range(), "--format", format])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_confirmation_says_the_evidence_its_json_holds() {
    // A timed step: confirmed by re-runs of parent and culprit, counted as the JSON counts them.
    let f = noisy(9, |i, c| c.metric = if i >= 6 { 1080.0 } else { 1000.0 });
    find(&f, "value");
    // Asked again, every view rests on the same store: the counts must agree.
    let j = find(&f, "value");
    let (n, w) = (
        j["culprit"]["reruns"].as_u64().unwrap(),
        j["culprit"]["rerun_windows"].as_u64().unwrap(),
    );
    assert!(
        n > 0 && w > 0,
        "a timed culprit is re-run before it is named: {j}"
    );
    let said = format!(
        "confirmed by {n} interleaved re-runs of parent and culprit in {w} window{} of time",
        if w == 1 { "" } else { "s" }
    );
    for format in ["text", "md"] {
        let out = claim(&f, "value", format);
        assert!(
            out.contains(&said),
            "{format} should say `{said}`:\n{out}\n{j}"
        );
    }
    // The interleaving a fresh search claims is the one it counted: its kept verdict, which
    // `report` states, holds the same count.
    let f = noisy(9, |i, c| c.metric = if i >= 6 { 1080.0 } else { 1000.0 });
    let out = claim(&f, "value", "text");
    let r = f.json(&["report", "value", &f.range(), "--format", "json"]);
    let j = &r["find"];
    let (beside, windows) = (
        j["measured"]["beside_runs"].as_u64().unwrap(),
        j["measured"]["windows"].as_u64().unwrap(),
    );
    let probes = j["probed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| **p != f.ids[0].as_str() && **p != f.ids[8].as_str())
        .count();
    let said = format!(
        "; {beside} of the runs measured commits again {}, in {windows} window",
        if probes > 0 {
            "beside the probes"
        } else {
            "beside the commit compared with them"
        }
    );
    assert!(beside > 0 && out.contains(&said), "`{said}`:\n{out}\n{j}");
    // Exact values twice a side need no re-run: said so, never "re-runs".
    let f = noisy(9, |i, c| {
        c.noise_pct = 0.0;
        c.outlier_rate = 0.0;
        c.metric = if i >= 4 { 3072.0 } else { 3064.0 };
    });
    find(&f, "size");
    let j = find(&f, "size");
    let n = j["culprit"]["reruns"].as_u64().unwrap();
    for format in ["text", "md"] {
        let out = claim(&f, "size", format);
        if n == 0 {
            assert!(
                out.contains("confirmed by exact values"),
                "{format}:\n{out}\n{j}"
            );
            assert!(!out.contains("re-run"), "{format}:\n{out}\n{j}");
        } else {
            assert!(
                out.contains(&format!("confirmed by {n} interleaved re-run")),
                "{format}:\n{out}\n{j}"
            );
        }
    }
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
    assert_eq!(search_builds(&j), 2, "only the ends: {j}");
}

/// Ends alike, a step and its return between them: "no change" is the answer about the ends,
/// and a note names the two steps the stored runs inside show (as `report` lists them) and
/// the search that names the first.
#[test]
fn no_change_names_the_steps_stored_runs_inside_the_range_show() {
    let f = noisy(12, |i, c| {
        if (5..9).contains(&i) {
            c.metric *= 1.07;
        }
    });
    let range = f.range();
    // The nightly runs: every commit measured.
    f.run_json("value", &range, &[]);
    let j = find(&f, "value");
    assert_eq!(j["verdict"], "no-change", "{j}");
    let notes: Vec<&str> = j["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    let note = notes
        .iter()
        .find(|n| n.contains("the stored runs inside the range step"))
        .unwrap_or_else(|| panic!("no note of the steps inside: {j}"));
    let (up, down) = (&f.ids[4][..10], &f.ids[8][..10]);
    assert!(
        note.contains(&format!("at {up} Commit 5"))
            && note.contains(&format!("at {down} Commit 9")),
        "{note}"
    );
    assert!(
        note.contains(&format!(
            "`perfbisect find value {}..{up}`",
            &f.ids[0][..10]
        )),
        "{note}"
    );
    // The text says it too.
    let out = f.cmd().args(["find", "value", &range]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("the stored runs inside the range step"),
        "{text}"
    );
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

/// With several culprits the Markdown gives each its heading, table and reproduce block, and
/// the reproduce lines work as pasted in the repository, where the reader keeps their copy of
/// the config (named by its file name alone: Markdown is for an issue, public).
#[test]
fn markdown_reproduce_lines_run_as_pasted_for_every_culprit() {
    let f = noisy(17, |i, c| {
        c.metric = 1000.0 * if i >= 5 { 1.10 } else { 1.0 } * if i >= 13 { 1.10 } else { 1.0 };
        c.outlier_rate = 0.0;
    });
    let out = f
        .cmd()
        .args(["find", "value", &f.range(), "--format", "md"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let md = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(md.matches("<details>").count(), 2, "{md}");
    assert!(
        md.contains("#### 1 of 2:") && md.contains("#### 2 of 2:"),
        "{md}"
    );
    let mut lines = Vec::new();
    let mut inside = false;
    for l in md.lines() {
        match l {
            "```sh" => inside = true,
            "```" => inside = false,
            _ if inside => lines.push(l.to_string()),
            _ => {}
        }
    }
    assert_eq!(lines.len(), 4, "{md}");
    let bin_dir = assert_cmd::cargo::cargo_bin("perfbisect")
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    // A reader pastes them in the repository with their copy of the config beside them (the
    // lines name it by its file name: no path of this machine's), and may point
    // PERFBISECT_CACHE at a cache (here the search's, so nothing is built twice).
    std::fs::copy(&f.config, f.repo.join("perfbisect.toml")).unwrap();
    let machine = f.dir.path().display().to_string();
    for l in &lines {
        assert!(l.contains("--config perfbisect.toml"), "{l}");
        assert!(!l.contains(&machine) && !l.contains("--cache"), "{l}");
        let out = std::process::Command::new("sh")
            .args(["-c", l])
            .current_dir(&f.repo)
            .env("PATH", &path)
            .env("PERFBISECT_CACHE", &f.cache)
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if l.starts_with("git bisect") {
            // Each block is about its own culprit: the one its `--new` names.
            let new = l
                .split("--new ")
                .nth(1)
                .unwrap()
                .split(';')
                .next()
                .unwrap()
                .trim();
            assert!(new == f.ids[4] || new == f.ids[12], "{l}");
            assert!(
                all.contains(&format!("{new} is the first bad commit")),
                "{l}\n{all}"
            );
        } else {
            assert!(out.status.success(), "{l}\n{all}");
            assert!(all.contains("value"), "{all}");
        }
    }
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

/// A 1 %-noise test configured with one repeat is still noisy: `find` tops it up and either
/// names the right commit or says it cannot tell, never a wrong one.
#[test]
fn noisy_test_with_one_repeat_is_not_taken_for_deterministic() {
    let config = CONFIG.replace(
        "[tests.value]\ncommand = \"./app\"\nmetric = { regex = \"^value: ([0-9.]+)\" }\nthreshold = \"2%\"\nrepeats = 5",
        "[tests.value]\ncommand = \"./app\"\nmetric = { regex = \"^value: ([0-9.]+)\" }\nthreshold = \"1%\"\nrepeats = 1",
    );
    assert!(config.contains("repeats = 1\n\n[tests.size]"));
    for seed in [1, 2, 3] {
        let f = Fixture::new(
            &specs(33, |i, c| {
                c.noise_seed = seed;
                c.metric = if i >= 18 { 1025.0 } else { 1000.0 };
            }),
            &config,
        );
        let j = find(&f, "value");
        match j["verdict"].as_str().unwrap() {
            "culprit" => assert_eq!(j["culprit"]["commit"], f.ids[17].as_str(), "{j}"),
            "inconclusive" => {}
            other => panic!("seed {seed}: verdict {other}: {j}"),
        }
        // One run per commit would be 1 run per probe: a noisy test gets more.
        let runs = j["runs"].as_u64().unwrap();
        let builds = j["builds"].as_u64().unwrap();
        assert!(
            runs > 2 * builds,
            "seed {seed}: topped up like any noisy test: {j}"
        );
    }
}

/// A stretch of commits whose test fails every run (it built, but crashes) costs at most
/// 2 × repeats runs per commit; those commits are stepped around with the reason, and the
/// culprit after them is still named.
#[test]
fn always_failing_stretch_is_stepped_around_cheaply() {
    // Commits 10..=24 build a program that crashes on every run.
    let config = CONFIG
        .replace(
            "[tests.value]\ncommand = \"./app\"",
            "[tests.value]\ncommand = \"if [ -f out/crash ]; then echo 'segfault in parser' >&2; exit 139; fi; ./out/app\"",
        )
        .replace(
            "command = \"cc -O1 -o app app.c -lm\"",
            "command = \"cc -O1 -o app app.c -lm && n=$(sed -n 's/#define COMMIT_NO //p' params.h) && rm -rf out && mkdir out && cp app out/ && if [ $n -ge 10 ] && [ $n -le 24 ]; then touch out/crash; fi\"",
        )
        .replace("artifacts = [\"app\"]", "artifacts = [\"out\"]");
    assert!(config.contains("out/crash"), "{config}");
    let f = Fixture::new(
        &specs(33, |i, c| c.metric = if i >= 26 { 1060.0 } else { 1000.0 }),
        &config,
    );
    let j = find(&f, "value");
    assert_eq!(j["verdict"], "culprit", "{j}");
    assert_eq!(j["culprit"]["commit"], f.ids[25].as_str(), "{j}");
    let out = f
        .cmd()
        .args(["show", "value", &f.range(), "--format", "csv"])
        .output()
        .unwrap();
    let mut runs: std::collections::HashMap<String, usize> = Default::default();
    let mut r = csv::Reader::from_reader(out.stdout.as_slice());
    for rec in r.records() {
        *runs.entry(rec.unwrap()[0].to_string()).or_default() += 1;
    }
    for (k, id) in f.ids.iter().enumerate().skip(9).take(15) {
        let n = runs.get(id).copied().unwrap_or(0);
        assert!(n <= 10, "commit {}: {n} runs, more than 2 x repeats", k + 1);
    }
    let skipped = j["skipped"].to_string();
    assert!(skipped != "[]", "{j}");
    assert!(
        j.to_string().contains("segfault in parser"),
        "the reason is shown: {j}"
    );
}

/// A test declared deterministic whose runs differ is said to be noisy and treated so.
#[test]
fn declared_deterministic_with_spread_is_treated_as_noisy() {
    let config = CONFIG.replace(
        "threshold = \"2%\"\nrepeats = 5",
        "threshold = \"2%\"\nrepeats = 3\ndeterministic = true",
    );
    assert!(config.contains("repeats = 3\ndeterministic = true"));
    let f = Fixture::new(
        &specs(17, |i, c| c.metric = if i >= 11 { 1060.0 } else { 1000.0 }),
        &config,
    );
    let j = find(&f, "value");
    assert_eq!(j["culprit"]["commit"], f.ids[10].as_str(), "{j}");
    assert_eq!(j["deterministic"], false, "{j}");
    assert!(
        j["notes"]
            .to_string()
            .contains("not deterministic as declared"),
        "{j}"
    );
    // The next search sees the spread in the store and warns before it starts.
    let out = f
        .cmd()
        .args(["find", "value", &f.range()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is declared deterministic, but runs of commit"),
        "{err}"
    );
}

/// A merge-heavy history as pull requests make it: every first-parent commit of `main` is a
/// `--no-ff` merge of a three-commit branch. The value rises 8 % in the middle commit of the
/// third branch. Returns (fixture, that commit, its merge).
fn merged_history() -> (Fixture, String, String) {
    let f = Fixture::new(&specs(3, |_, _| {}), CONFIG);
    let mut culprit = String::new();
    let mut merge = String::new();
    for b in 1..=5 {
        f.git(&["checkout", "-q", "-b", &format!("pr{b}"), "main"]);
        for k in 1..=3 {
            std::fs::create_dir_all(f.repo.join("notes")).unwrap();
            std::fs::write(f.repo.join(format!("notes/pr{b}-{k}.txt")), "text\n").unwrap();
            if b == 3 && k == 2 {
                let p = f.repo.join("params.h");
                let h = std::fs::read_to_string(&p).unwrap();
                let h: String = h
                    .lines()
                    .map(|l| {
                        if l.starts_with("#define METRIC ") {
                            "#define METRIC 1080.000000".to_string()
                        } else {
                            l.to_string()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                std::fs::write(&p, h + "\n").unwrap();
            }
            f.git(&["add", "-A"]);
            f.git(&["commit", "-qm", &format!("PR {b}, part {k}")]);
            if b == 3 && k == 2 {
                culprit = f.git(&["rev-parse", "HEAD"]).trim().to_string();
            }
        }
        f.git(&["checkout", "-q", "main"]);
        f.git(&[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            &format!("Merge pull request #{b}"),
            &format!("pr{b}"),
        ]);
        if b == 3 {
            merge = f.git(&["rev-parse", "HEAD"]).trim().to_string();
        }
    }
    (f, culprit, merge)
}

#[test]
fn find_descends_into_the_merged_branch_and_names_the_commit_inside() {
    let (f, culprit, merge) = merged_history();
    let range = format!("{}..main", f.ids[2]);
    let j = f.json(&["find", "value", &range, "--format", "json"]);
    assert_eq!(j["verdict"], "culprit", "{j}");
    assert_eq!(j["culprit"]["commit"], culprit.as_str(), "{j}");
    assert_eq!(j["culprit"]["merge"], merge.as_str(), "{j}");
    assert_eq!(j["culprits"].as_array().unwrap().len(), 1, "{j}");
    let text = f.cmd().args(["find", "value", &range]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("culprit: {} PR 3, part 2", &culprit[..10])),
        "{text}"
    );
    assert!(
        text.contains(&format!("merged by {} Merge pull request #3", &merge[..10])),
        "{text}"
    );

    // report: the merge's step on the searched chain is the culprit's, one step (the merge
    // brought exactly the branch; its build is the culprit's and the branch's last), never a
    // step "not named" beside a culprit that is "no change point".
    let md = f.cmd().args(["report", "value", &range]).output().unwrap();
    assert!(
        md.status.success(),
        "{}",
        String::from_utf8_lossy(&md.stderr)
    );
    let md = String::from_utf8_lossy(&md.stdout);
    let table: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with("### Change points"))
        .take_while(|l| !l.starts_with("### How"))
        .collect();
    let table = table.join("\n");
    assert!(
        table.contains(&format!("| `{}` |", &merge[..10]))
            && table.contains(&format!("culprit `{}`, merged here", &culprit[..10])),
        "{table}"
    );
    assert!(
        !table.contains("not named") && !table.contains("no change point here"),
        "{table}"
    );

    // --no-descend stops at the merge, as before.
    let j = f.json(&["find", "value", &range, "--no-descend", "--format", "json"]);
    assert_eq!(j["culprit"]["commit"], merge.as_str(), "{j}");
    assert!(j["culprit"]["merge"].is_null(), "{j}");
}

/// Set the demo program's printed value in the work tree (not committed).
fn set_metric(f: &Fixture, v: f64) {
    let p = f.repo.join("params.h");
    let h: String = std::fs::read_to_string(&p)
        .unwrap()
        .lines()
        .map(|l| {
            if l.starts_with("#define METRIC ") {
                format!("#define METRIC {v:.6}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&p, h + "\n").unwrap();
}

fn commit_all(f: &Fixture, subject: &str) -> String {
    f.git(&["add", "-A"]);
    f.git(&["commit", "-qm", subject]);
    f.git(&["rev-parse", "HEAD"]).trim().to_string()
}

/// Issue 19.10: a merge whose own step the culprits on its branch do not explain (an evil
/// merge: +50 on the branch, +30 more in the merge commit) says that the rest shows at the
/// merge itself.
#[test]
fn a_merge_step_the_branch_does_not_explain_is_named() {
    let f = Fixture::new(&specs(2, |_, c| c.noise_pct = 0.0), CONFIG);
    f.git(&["checkout", "-q", "-b", "b", "main"]);
    set_metric(&f, 1050.0);
    let inside = commit_all(&f, "Branch commit");
    f.git(&["checkout", "-q", "main"]);
    f.git(&["merge", "-q", "--no-ff", "--no-commit", "b"]);
    set_metric(&f, 1080.0);
    let merge = commit_all(&f, "Evil merge");
    let range = format!("{}..main", f.ids[1]);
    let j = f.json(&["find", "size", &range, "--format", "json"]);
    assert_eq!(j["culprit"]["commit"], inside.as_str(), "{j}");
    let notes = j["notes"].to_string();
    assert!(
        notes.contains(&format!(
            "{} Evil merge moves `size` by +80 bytes",
            &merge[..10]
        )) && notes
            .contains("add up to +50 bytes: +30 bytes of the step shows at the merge itself"),
        "{notes}"
    );
}

/// Issue 19.10: a commit reached twice, on the searched chain and again through a branch that
/// merged it in before it was merged back, is one culprit, not two; and the merge whose branch
/// culprits add up to more than its own step says so.
#[test]
fn a_culprit_reached_through_two_merges_is_listed_once() {
    let f = Fixture::new(&specs(2, |_, c| c.noise_pct = 0.0), CONFIG);
    let base = f.ids[1].clone();
    set_metric(&f, 1050.0);
    let on_main = commit_all(&f, "Main change");
    f.git(&["checkout", "-q", "-b", "dev", &base]);
    std::fs::write(f.repo.join("notes.txt"), "a\n").unwrap();
    commit_all(&f, "Dev docs");
    f.git(&["merge", "-q", "--no-ff", "-m", "Sync main into dev", "main"]);
    set_metric(&f, 1100.0);
    let on_dev = commit_all(&f, "Dev change");
    f.git(&["checkout", "-q", "main"]);
    f.git(&["merge", "-q", "--no-ff", "-m", "Merge dev", "dev"]);
    let range = format!("{base}..main");
    let j = f.json(&["find", "size", &range, "--format", "json"]);
    let mut named: Vec<&str> = j["culprits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["commit"].as_str().unwrap())
        .collect();
    named.sort();
    let mut want = vec![on_main.as_str(), on_dev.as_str()];
    want.sort();
    assert_eq!(named, want, "{j}");
    let notes = j["notes"].to_string();
    assert!(
        notes.contains(&format!("{} Main change was found again", &on_main[..10])),
        "{notes}"
    );
    assert!(
        notes.contains("Merge dev moves `size` by +50 bytes"),
        "{notes}"
    );
}

#[test]
fn log_and_run_say_what_a_first_parent_walk_leaves_out() {
    let (f, _, _) = merged_history();
    let range = format!("{}..main", f.ids[2]);
    for args in [vec!["log", &range[..]], vec!["run", "size", &range[..]]] {
        let out = f.cmd().args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("15 more commits") && err.contains("merged branches"),
            "{args:?}: {err}"
        );
    }
}

/// Without a terminal (a CI log) `find` draws no progress bar: each step of the search and
/// each probe's result get a line on stderr, so a long search is never silent; `--quiet`
/// keeps stderr to what matters.
#[test]
fn find_without_a_terminal_prints_a_line_per_probe() {
    let f = noisy(17, |i, c| {
        c.noise_pct = 0.0;
        c.outlier_rate = 0.0;
        c.metric = if i >= 9 { 3072.0 } else { 3064.0 };
    });
    let out = f
        .cmd()
        .args(["find", "size", &f.range(), "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let probed: Vec<&str> = j["probed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(probed.len() >= 3, "{j}");
    for p in &probed {
        let short = &p[..7.min(p.len())];
        assert!(
            err.lines()
                .any(|l| l.starts_with("perfbisect: probed ") && l.contains(short))
                || err
                    .lines()
                    .any(|l| l.starts_with("perfbisect: side by side") && l.contains(short)),
            "no line for probe {p}:\n{err}"
        );
    }
    assert!(err.contains("perfbisect: build "), "{err}");
    assert!(err.contains("perfbisect: measure "), "{err}");
    // Medians in the test's unit, and where the search placed each probe between the ends.
    assert!(
        err.lines()
            .filter(|l| l.starts_with("perfbisect: probed ")
                || l.starts_with("perfbisect: side by side"))
            .all(|l| l.contains(" bytes")),
        "{err}"
    );
    let mut placed = 0;
    for (i, id) in f.ids.iter().enumerate().skip(1) {
        let short = &id[..10];
        let Some(line) = err
            .lines()
            .find(|l| l.starts_with(&format!("perfbisect: {short} ")) && l.contains(" is "))
        else {
            continue;
        };
        placed += 1;
        let expected = if i >= 8 { "is new-like" } else { "is old-like" };
        assert!(line.contains(expected), "{line}\n{err}");
        assert!(
            line.contains("against the old level 3064 bytes and the new level 3072 bytes"),
            "{line}"
        );
    }
    assert!(
        placed + 2 >= probed.len(),
        "a line for every probe placed:\n{err}"
    );
    // --quiet: no step lines.
    let quiet = f
        .cmd()
        .args(["--quiet", "find", "size", &f.range(), "--format", "json"])
        .output()
        .unwrap();
    assert!(quiet.status.success());
    let err = String::from_utf8_lossy(&quiet.stderr);
    assert!(!err.contains("perfbisect: probed"), "{err}");
}

/// Issue 42's scenario end to end: 96 commits, one +7 % step at 4 % run-to-run noise and 2 %
/// outliers, a 5 % threshold, the default repeats, an empty cache; then `find` again on the
/// same cache. Both name the step's commit (one seed here: the simulation in
/// `src/bisect/tests.rs` holds the rule over a thousand).
#[test]
fn a_step_just_above_the_threshold_is_found_twice_at_its_noise() {
    let config = CONFIG.replace("threshold = \"2%\"\nrepeats = 5", "threshold = \"5%\"");
    let f = Fixture::new(
        &specs(96, |i, c| {
            c.outlier_rate = 0.02;
            c.noise_pct = 4.0;
            c.metric = if i >= 61 { 1070.0 } else { 1000.0 };
        }),
        &config,
    );
    for search in ["first", "second"] {
        let j = find(&f, "value");
        assert_eq!(j["verdict"], "culprit", "{search}: {j}");
        assert_eq!(j["culprit"]["commit"], f.ids[60].as_str(), "{search}: {j}");
        assert_eq!(j["culprit"]["parent"], f.ids[59].as_str(), "{search}: {j}");
    }
}
