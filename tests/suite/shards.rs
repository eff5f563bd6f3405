//! The CI worked examples (scripts/ci/github-actions-shards.yml, gitlab-ci-shards.yml) run
//! locally: the workflows' own shard, merge and measure steps, read from the YAML files and
//! run as the CI would run them, with a clone and a cache per runner (two runners that build
//! and measure the machine-independent test, one machine that measures the rest), against
//! one machine that does everything. The runners differ in their fingerprint (a
//! `[fingerprint]` command prints the runner's name), as machines of a matrix do.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{specs, with_build, Fixture};

/// A noisy `value` (machine-dependent: a value of the output, not declared deterministic)
/// and a deterministic `size` (machine-independent), read from one run of the program.
const TESTS: &str = r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
repeats = 3
threshold = "2%"

[tests.size]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
deterministic = true

[fingerprint]
commands = ["echo runner ${RUNNER:-unnamed}"]
"#;

fn ci_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ci")
}

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("perfbisect")
}

/// Each job of a workflow file with the shell lines of its steps, in order, read by PyYAML
/// (GitHub: the `run` of each step; GitLab: the lines of `script`).
fn jobs(file: &str) -> BTreeMap<String, Vec<String>> {
    let py = r#"
import json, sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
out = {}
if "jobs" in d:
    assert d.get(True) or d.get("on"), "no `on:`"
    for name, job in d["jobs"].items():
        out[name] = [s["run"] for s in job["steps"] if "run" in s]
else:
    assert "stages" in d, "no stages"
    for name, job in d.items():
        if isinstance(job, dict) and "script" in job and not name.startswith("."):
            assert job["stage"] in d["stages"], name
            out[name] = job["script"]
print(json.dumps(out))
"#;
    let o = Command::new("python3")
        .args(["-c", py])
        .arg(ci_dir().join(file))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{file}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The lines of `job` that run `script`.
fn steps<'a>(jobs: &'a BTreeMap<String, Vec<String>>, job: &str, script: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = jobs[job]
        .iter()
        .map(String::as_str)
        .filter(|l| l.contains(script))
        .collect();
    assert!(!lines.is_empty(), "job `{job}` runs no {script}");
    lines
}

/// One runner: a clone of the project with its config, where the CI's lines run.
struct Runner {
    dir: PathBuf,
    name: String,
}

impl Runner {
    fn new(f: &Fixture, flow: &str, name: &str) -> Runner {
        let dir = f.dir.path().join(flow).join(name);
        std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
        let o = Command::new("git")
            .args(["clone", "-q"])
            .arg(&f.repo)
            .arg(&dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::copy(&f.config, dir.join("perfbisect.toml")).unwrap();
        Runner {
            dir,
            name: name.to_string(),
        }
    }

    /// Run one CI line with bash, as the CI would, with `env`; returns (stdout, stderr).
    fn sh(&self, line: &str, env: &[(&str, String)]) -> (String, String) {
        let o = Command::new("bash")
            .args(["-eo", "pipefail", "-c", line])
            .current_dir(&self.dir)
            .env("PERFBISECT", bin())
            .env("PERFBISECT_CI", ci_dir())
            .env("RUNNER", &self.name)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        );
        assert!(
            o.status.success(),
            "{} `{line}` failed:\n{stdout}\n{stderr}",
            self.name
        );
        (stdout, stderr)
    }

    /// perfbisect in this runner's checkout, with its cache.
    fn pb(&self, args: &[&str]) -> String {
        let o = Command::new(bin())
            .args(["--cache", "perf-cache", "--no-progress"])
            .args(args)
            .current_dir(&self.dir)
            .env("RUNNER", &self.name)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn cache(&self) -> PathBuf {
        self.dir.join("perf-cache")
    }
}

/// `show TEST RANGE` without what differs between machines and runs (when, how long, which
/// window, which fingerprint).
fn shown(r: &Runner, test: &str, range: &str) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_str(&r.pb(&["show", test, range, "--format", "json"])).unwrap();
    for sample in v["samples"].as_array_mut().into_iter().flatten() {
        let s = sample.as_object_mut().unwrap();
        for k in [
            "time",
            "timestamp",
            "wall",
            "user",
            "sys",
            "max_rss",
            "window",
            "fingerprint",
        ] {
            s.remove(k);
        }
    }
    v
}

/// Every build's digest (by `<commit>-<recipe>`) and the failed-build records of a cache.
fn builds(cache: &Path) -> (BTreeMap<String, String>, Vec<String>) {
    let mut digests = BTreeMap::new();
    for e in std::fs::read_dir(cache.join("manifests"))
        .unwrap()
        .flatten()
    {
        let m: serde_json::Value =
            serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        digests.insert(name, m["digest"].as_str().unwrap().to_string());
    }
    let entries: Vec<String> = std::fs::read_dir(cache.join("artifacts"))
        .unwrap()
        .flatten()
        .map(|e| format!("{}.json", e.file_name().to_string_lossy()))
        .collect();
    assert_eq!(
        entries.len(),
        digests.len(),
        "an entry per manifest: {entries:?}"
    );
    let mut failed: Vec<String> = std::fs::read_dir(cache.join("failed"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    failed.sort();
    (digests, failed)
}

fn find(r: &Runner, test: &str, range: &str) -> serde_json::Value {
    let v: serde_json::Value =
        serde_json::from_str(&r.pb(&["find", test, range, "--format", "json", "--no-why"]))
            .unwrap();
    serde_json::json!({
        "verdict": v["verdict"],
        "culprits": v["culprits"].as_array().map(|c| c.iter().map(|x| x["commit"].clone()).collect::<Vec<_>>()),
    })
}

/// The sharded flow of `file` (2 runners that build, one that measures) and one machine's run
/// give the same builds, samples and verdicts, and the machine that measures builds nothing.
fn sharded_equals_one_machine(file: &str, shard_job: &str, measure_job: &str, gitlab: bool) {
    let yaml = Command::new("python3")
        .args(["-c", "import yaml"])
        .status()
        .is_ok_and(|s| s.success());
    if !common::have(yaml, "python3 with PyYAML (it reads the workflow files)") {
        return;
    }
    let jobs = jobs(file);
    let shard_lines = steps(&jobs, shard_job, "shard.sh");
    let merge_lines = steps(&jobs, measure_job, "merge.sh");
    let measure_lines = steps(&jobs, measure_job, "measure.sh");

    let f = Fixture::new(
        &specs(9, |i, c| {
            c.metric = if i >= 6 { 1100.0 } else { 1000.0 };
            c.broken = i == 3;
        }),
        &with_build(TESTS),
    );
    let range = f.range();
    let flow = if gitlab { "gitlab" } else { "github" };
    let common_env = |extra: &[(&'static str, String)]| -> Vec<(&'static str, String)> {
        let mut env = vec![
            ("RANGE", range.clone()),
            ("TESTS", "all".to_string()),
            ("EVERY_RUNNER", "size".to_string()),
            ("ONE_MACHINE", "value".to_string()),
        ];
        env.extend(extra.iter().cloned());
        env
    };
    let measurer = Runner::new(&f, flow, "measurer");
    for i in 1..=2 {
        let r = Runner::new(&f, flow, &format!("runner{i}"));
        let env = if gitlab {
            common_env(&[
                ("CI_NODE_INDEX", i.to_string()),
                ("CI_NODE_TOTAL", "2".into()),
            ])
        } else {
            common_env(&[("SHARD", i.to_string()), ("SHARDS", "2".into())])
        };
        for line in &shard_lines {
            r.sh(line, &env);
        }
        // The CI's artifact transfer: GitHub puts each artifact in a folder of its name
        // under the download path, GitLab puts the files where the job made them.
        let pack = format!("perf-shard-{i}.tar");
        let to = if gitlab {
            measurer.dir.join(&pack)
        } else {
            let d = measurer.dir.join(format!("shards/perf-shard-{i}"));
            std::fs::create_dir_all(&d).unwrap();
            d.join(&pack)
        };
        std::fs::copy(r.dir.join(&pack), to).unwrap();
        // The runner measured only the machine-independent test.
        let store = r.cache().join("results");
        assert!(store.join("size.pbs").is_file());
        assert!(!store.join("value.pbs").exists());
    }
    let merge_env = if gitlab {
        common_env(&[])
    } else {
        common_env(&[("SHARDS_DIR", "shards".into())])
    };
    let mut merged = String::new();
    for line in &merge_lines {
        let (stdout, stderr) = measurer.sh(line, &merge_env);
        assert!(!stderr.contains("fingerprints"), "{stderr}");
        merged += &stdout;
    }
    // 8 commits, one of which does not build, and the range's old end, which every shard
    // holds (as the newest commit): 8 builds and a failed-build record come over, and the
    // samples of `size` of the 7 commits that build and the old end, the ends measured on
    // both runners (10 samples).
    assert!(merged.contains("brought 8 builds"), "{merged}");
    assert!(merged.contains("size: added 10 samples"), "{merged}");
    let mut measured = String::new();
    for line in &measure_lines {
        measured += &measurer.sh(line, &common_env(&[])).0;
    }
    let summary: serde_json::Value =
        serde_json::from_str(measured.lines().last().unwrap()).unwrap();
    assert_eq!(
        summary["builds"], 0,
        "the measuring machine built: {summary}"
    );
    assert_eq!(summary["runs"], 21, "{summary}");
    assert_eq!(summary["failed_builds"].as_array().unwrap().len(), 1);

    // One machine, everything: the range, and the old end the shards measured `size` on.
    let solo = Runner::new(&f, flow, "solo");
    solo.pb(&["run", "value,size", &range]);
    solo.pb(&["run", "size", &f.ids[0]]);
    solo.pb(&["run", "size", &f.ids[f.ids.len() - 1]]);
    assert_eq!(builds(&measurer.cache()), builds(&solo.cache()));
    assert_eq!(
        shown(&measurer, "value", &range),
        shown(&solo, "value", &range)
    );
    // The ends were measured on both runners: one sample more at each of them, the same
    // values (a machine-independent count).
    let (here, solo_size) = (
        shown(&measurer, "size", &range),
        shown(&solo, "size", &range),
    );
    let values = |v: &serde_json::Value| -> Vec<(String, Vec<f64>)> {
        v["commits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let mut xs: Vec<f64> = c["values"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|x| x.as_f64())
                    .collect();
                xs.dedup();
                (c["commit"].as_str().unwrap_or("").to_string(), xs)
            })
            .collect()
    };
    assert_eq!(values(&here), values(&solo_size));
    for test in ["value", "size"] {
        let here = find(&measurer, test, &range);
        assert_eq!(here, find(&solo, test, &range), "{test}");
        assert_eq!(
            here["culprits"][0],
            serde_json::json!(f.ids[5]),
            "{test}: {here}"
        );
    }
    // find measured the range's base too, which both machines had built already.
    assert_eq!(builds(&measurer.cache()).0.len(), 8);
    assert_eq!(builds(&measurer.cache()), builds(&solo.cache()));
}

#[test]
fn github_actions_shards_merged_equal_one_machine_and_the_measuring_machine_builds_nothing() {
    sharded_equals_one_machine("github-actions-shards.yml", "shard", "measure", false);
}

#[test]
fn gitlab_ci_shards_merged_equal_one_machine_and_the_measuring_machine_builds_nothing() {
    sharded_equals_one_machine("gitlab-ci-shards.yml", "perf-shard", "perf-measure", true);
}

#[test]
fn merge_warns_when_a_machine_dependent_tests_samples_come_from_several_machines() {
    let f = Fixture::new(&specs(5, |_, _| {}), &with_build(TESTS));
    let range = f.range();
    let a = Runner::new(&f, "mixed", "a");
    let b = Runner::new(&f, "mixed", "b");
    a.pb(&["run", "value,size", &range, "--shard", "1/2"]);
    b.pb(&["run", "value,size", &range, "--shard", "2/2"]);
    let o = Command::new(bin())
        .args(["--cache", "perf-cache", "--no-progress", "merge"])
        .arg(a.cache())
        .current_dir(&b.dir)
        .env("RUNNER", "b")
        .output()
        .unwrap();
    assert!(o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("the samples of `value` come from 2 fingerprints")
            && stderr.contains("runner a")
            && stderr.contains("runner b"),
        "{stderr}"
    );
    // `size` does not depend on the machine: no warning, and every sample counts here.
    assert!(!stderr.contains("`size`"), "{stderr}");
    let show: serde_json::Value =
        serde_json::from_str(&b.pb(&["show", "size", &range, "--format", "json"])).unwrap();
    let with_samples = show["commits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["n"].as_u64().unwrap_or(0) > 0)
        .count();
    // The 4 commits of the range and its old end, which both shards hold.
    assert_eq!(with_samples, 5, "{show}");
    let show: serde_json::Value =
        serde_json::from_str(&b.pb(&["show", "value", &range, "--format", "json"])).unwrap();
    let with_samples = show["commits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["n"].as_u64().unwrap_or(0) > 0)
        .count();
    // Shard 2/2: the 2nd and 4th commits (the 4th the newest) and the old end.
    assert_eq!(with_samples, 3, "only this machine's: {show}");
}
