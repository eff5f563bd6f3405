//! `metric = "max-rss"` measures the test's own peak memory, not perfbisect's: Linux folds a
//! process's peak RSS across fork and exec, so every run goes through a small launcher.

use crate::common;

use common::{specs, Fixture};

#[test]
fn max_rss_of_a_small_program_is_its_own_not_perfbisects() {
    // Commit 1 allocates nothing, commit 2 allocates and touches 6 MB (the fixture's
    // MEGABYTES); the program itself is tiny.
    let f = Fixture::new(
        &specs(2, |i, c| {
            c.megabytes = if i == 2 { 6 } else { 0 };
            c.work = 0;
        }),
        &common::with_build(
            r#"
[tests.rss]
command = "./app"
metric = "max-rss"
repeats = 3
"#,
        ),
    );
    for rev in [&f.ids[0], &f.ids[1]] {
        f.run_json("rss", rev, &[]);
    }
    let med = |rev: &str| f.show("rss", rev)["commits"][0]["median"].as_f64().unwrap();
    let (small, big) = (med(&f.ids[0]), med(&f.ids[1]));
    const MB: f64 = 1024.0 * 1024.0;
    // perfbisect's own peak is well above 5 MB (it has loaded git and its store); the C
    // program's is about 1.5 MB, and the launcher it is forked from about 2 MB.
    assert!(
        small < 5.0 * MB,
        "a tiny program measured {:.1} MB",
        small / MB
    );
    let grew = (big - small) / MB;
    assert!(
        (5.0..7.5).contains(&grew),
        "6 MB more memory measured as {grew:.1} MB more ({small} -> {big})"
    );
}

/// Through the launcher a crash still reads as the same signal, and a non-zero exit as the
/// same exit code.
#[test]
fn the_launcher_passes_on_how_the_test_ended() {
    let f = Fixture::new(
        &specs(1, |_, _| {}),
        &common::with_build(
            r#"
[tests.crash]
command = "kill -SEGV $$"
metric = "max-rss"
repeats = 1
[tests.exit]
command = "exit 3"
metric = "max-rss"
repeats = 1
"#,
        ),
    );
    f.run_json("crash,exit", &f.ids[0], &[]);
    let out = f
        .cmd()
        .args(["show", "crash", &f.ids[0], "--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(csv.contains("signal 11"), "{csv}");
    let out = f
        .cmd()
        .args(["show", "exit", &f.ids[0], "--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(csv.contains("exit code 3"), "{csv}");
}

/// A test of another metric (wall time) runs through the launcher too (it ends the command's
/// group when perfbisect dies): its runs store their own peak, never perfbisect's (which
/// `wait4` of a child forked from perfbisect would report: Linux carries a parent's peak RSS
/// into a forked child). Stored runs, the export and `compare` show the command's own.
#[test]
fn a_wall_time_test_stores_its_own_peak_never_perfbisects() {
    let f = Fixture::new(
        &specs(2, |_, c| {
            c.megabytes = 0;
            c.work = 0;
        }),
        &common::with_build(
            r#"
[tests.time]
command = "./app"
metric = "wall"
repeats = 3
[tests.rss]
command = "./app"
metric = "max-rss"
repeats = 3
"#,
        ),
    );
    let range = format!("{}..{}", f.ids[0], f.ids[1]);
    f.run_json("time,rss", &f.ids[1], &[]);
    const MB: u64 = 1024 * 1024;
    // The program (with the shell around it) peaks near 1.5 MB; perfbisect itself is well
    // above 5 MB here (git, the store, a debug build).
    let samples = |test: &str| f.show(test, &range)["samples"].as_array().unwrap().clone();
    let time = samples("time");
    assert_eq!(time.len(), 3, "{time:?}");
    for s in &time {
        assert!(
            s["max_rss"].is_null() || s["max_rss"].as_u64().unwrap() < 5 * MB,
            "a wall-time run stored a peak of perfbisect's size: {s}"
        );
    }
    let csv = f
        .cmd()
        .args(["show", "time", &range, "--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&csv.stdout).into_owned();
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let col = r
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "max_rss")
        .unwrap();
    for rec in r.records() {
        let cell = rec.unwrap()[col].to_string();
        assert!(
            cell.is_empty() || cell.parse::<u64>().unwrap() < 5 * MB,
            "CSV max_rss {cell:?}: {csv}"
        );
        assert_ne!(cell, "0", "an unmeasured peak is absent, not 0: {csv}");
    }
    for s in samples("rss") {
        let rss = s["max_rss"]
            .as_u64()
            .expect("a max-rss run measures its peak");
        assert!(rss > 0 && rss < 5 * MB, "{s}");
    }

    let out = f
        .cmd()
        .args(["compare", "time", &f.ids[0], &f.ids[1], "--runs", "3"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    // compare's runs of a wall-time test measure their own peak (it once said 14 MB on both
    // sides: perfbisect's own).
    assert!(text.contains("wall"), "{text}");
    let json = f.json(&[
        "compare", "time", &f.ids[0], &f.ids[1], "--runs", "3", "--format", "json",
    ]);
    for side in ["a", "b"] {
        let peak = json[side]["max_rss"]["median"].as_f64().unwrap_or(0.0);
        assert!(peak > 0.0 && peak < (5 * MB) as f64, "{json}");
    }
}
