//! `find --jobs N`: several commits built at once, the same answers, and Ctrl-C during
//! parallel builds keeps the cache whole.

use crate::common;

use std::time::Duration;

use common::{specs, Fixture};

const CONFIG: &str = r#"
[build]
command = "cc -O1 -o app app.c -lm"
artifacts = ["app"]

[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "2%"
repeats = 5
"#;

fn culprit_with(f: &Fixture, cache: &std::path::Path, jobs: &str) -> serde_json::Value {
    let out = assert_cmd::Command::cargo_bin("perfbisect")
        .unwrap()
        .arg("--repo")
        .arg(&f.repo)
        .arg("--config")
        .arg(&f.config)
        .arg("--cache")
        .arg(cache)
        .args([
            "--no-progress",
            "find",
            "value",
            &f.range(),
            "--jobs",
            jobs,
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn find_with_four_jobs_names_the_same_culprit_in_fewer_build_rounds() {
    let f = Fixture::new(
        &specs(65, |i, c| c.metric = if i >= 40 { 1060.0 } else { 1000.0 }),
        CONFIG,
    );
    let one = culprit_with(&f, &f.dir.path().join("cache-1"), "1");
    let four = culprit_with(&f, &f.dir.path().join("cache-4"), "4");
    for j in [&one, &four] {
        assert_eq!(j["verdict"], "culprit", "{j}");
        assert_eq!(j["culprit"]["commit"], f.ids[39].as_str(), "{j}");
        assert_eq!(j["culprit"]["verified"], true, "{j}");
    }
    let rounds = |j: &serde_json::Value| j["time"]["build_rounds"].as_u64().unwrap();
    assert!(rounds(&four) < rounds(&one), "{one}\n{four}");
    assert_eq!(four["time"]["most_parallel_builds"], 4, "{four}");
    assert!(
        four["builds"].as_u64().unwrap() <= 3 * one["builds"].as_u64().unwrap(),
        "{one}\n{four}"
    );
    // Where the time went adds up.
    let t = &four["time"];
    let sum = t["building_s"].as_f64().unwrap()
        + t["checking_s"].as_f64().unwrap()
        + t["measuring_s"].as_f64().unwrap()
        + t["profiling_s"].as_f64().unwrap()
        + t["waiting_s"].as_f64().unwrap();
    assert!((sum - t["total_s"].as_f64().unwrap()).abs() < 0.01, "{t}");
}

#[test]
fn ctrl_c_during_parallel_builds_leaves_no_half_artifact_and_resumes() {
    let f = Fixture::new(
        &specs(33, |i, c| c.metric = if i >= 20 { 1060.0 } else { 1000.0 }),
        CONFIG,
    );
    // Builds say they started, then wait for a gate: Ctrl-C lands while four are in flight.
    let gate = f.dir.path().join("gate");
    let started = f.dir.path().join("started");
    std::fs::create_dir_all(&started).unwrap();
    std::fs::write(
        &f.config,
        CONFIG.replace(
            "command = \"cc -O1 -o app app.c -lm\"",
            &format!(
                "command = \"touch {}/$PERFBISECT_COMMIT; while [ ! -f {} ]; do sleep 0.01; done; cc -O1 -o app app.c -lm\"",
                started.display(),
                gate.display()
            ),
        ),
    )
    .unwrap();
    let mut child = f
        .std_cmd()
        .args(["find", "value", &f.range(), "--jobs", "4"])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let in_flight = || std::fs::read_dir(&started).unwrap().count();
    while in_flight() < 4 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "find ended before its builds started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Nothing half-built is in the cache: no artifact entry, no failure recorded.
    let entries = |d: &str| {
        std::fs::read_dir(f.cache.join(d))
            .map(|r| r.count())
            .unwrap_or(0)
    };
    assert_eq!(entries("artifacts"), 0, "interrupted builds are not cached");
    assert_eq!(entries("failed"), 0, "interrupted builds are not failures");

    // Run again with the gate open: the search resumes and names the culprit.
    std::fs::write(&gate, "").unwrap();
    let j = f.json(&[
        "find",
        "value",
        &f.range(),
        "--jobs",
        "4",
        "--format",
        "json",
    ]);
    assert_eq!(j["culprit"]["commit"], f.ids[19].as_str(), "{j}");
    for e in std::fs::read_dir(f.cache.join("artifacts")).unwrap() {
        let e = e.unwrap().path();
        assert!(
            e.join("app").is_file(),
            "complete artifact entry {}",
            e.display()
        );
    }
}
