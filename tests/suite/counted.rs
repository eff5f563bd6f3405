//! Issue 32, counted metrics at the limit: with `--jobs 2`, runs of a count the machine's
//! load does not move (instructions under Cachegrind) go on several cores at once and the
//! next probes build while one is measured, with the same verdict; a time is still measured
//! one run at a time (its runs' start and end, logged by the test command itself, never
//! overlap).

use crate::common;

use common::{have_tool, specs, with_build, Fixture};

/// `n` commits whose work steps up 1 % at commit `at`; every run logs its start and end (in
/// nanoseconds) to `runs.log` beside the config.
fn fixture(n: usize, at: usize, tests: &str) -> Fixture {
    Fixture::new(
        &specs(n, |i, c| {
            c.work = if i >= at { 2_020_000 } else { 2_000_000 };
            c.noise_pct = 0.0;
        }),
        &with_build(tests),
    )
}

const LOGGED: &str = r#"sh -c 'echo "start $(date +%s%N) $PERFBISECT_COMMIT" >> "$PERFBISECT_CONFIG_DIR/runs.log"; ./app; echo "end $(date +%s%N) $PERFBISECT_COMMIT" >> "$PERFBISECT_CONFIG_DIR/runs.log"'"#;

/// The runs' (start, end) in nanoseconds, from the log.
fn intervals(f: &Fixture) -> Vec<(u128, u128)> {
    let log = std::fs::read_to_string(f.dir.path().join("runs.log")).unwrap_or_default();
    let mut open: std::collections::HashMap<String, Vec<u128>> = Default::default();
    let mut out = Vec::new();
    for line in log.lines() {
        let mut w = line.split_whitespace();
        let (Some(kind), Some(t), Some(c)) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        let t: u128 = t.parse().unwrap();
        match kind {
            "start" => open.entry(c.to_string()).or_default().push(t),
            _ => {
                if let Some(s) = open.get_mut(c).and_then(|v| v.pop()) {
                    out.push((s, t));
                }
            }
        }
    }
    out.sort();
    out
}

fn overlaps(iv: &[(u128, u128)]) -> usize {
    iv.windows(2).filter(|w| w[1].0 < w[0].1).count()
}

#[test]
fn counted_runs_go_side_by_side_with_the_same_verdict_and_a_time_never_does() {
    if !have_tool("valgrind", "Cachegrind counts the instructions") {
        return;
    }
    let instr = format!(
        "[tests.instr]\ncommand = {LOGGED:?}\nmetric = \"instructions\"\nthreshold = \"0.5%\"\n\n[measure]\ncounter = \"cachegrind\"\n"
    );
    let f = fixture(20, 13, &instr);
    let j = f.json(&[
        "find",
        "instr",
        &f.range(),
        "--jobs",
        "2",
        "--no-why",
        "--format",
        "json",
    ]);
    assert_eq!(j["verdict"], "culprit", "{j:#}");
    assert_eq!(j["culprit"]["commit"], f.ids[12], "{j:#}");
    let m = &j["measured"];
    assert!(
        m["parallel_runs"].as_u64().unwrap() > 0 || m["ahead"].as_u64().unwrap() > 0,
        "{m}"
    );
    assert!(
        m["parallel_why"].as_str().unwrap().contains("Cachegrind"),
        "{m}"
    );
    let iv = intervals(&f);
    assert!(overlaps(&iv) > 0, "no run went beside another: {iv:?}");
    // The parts of the time still add up, the overlap counted once.
    let t = &j["time"];
    assert!(t["both_s"].is_f64(), "{t}");
    let sum = common::time_parts(t);
    let total = t["total_s"].as_f64().unwrap();
    assert!((sum - total).abs() <= 0.05 * total + 0.01, "{t}");
    // The same search one job at a time, from an empty cache, names the same commit.
    std::fs::remove_dir_all(&f.cache).unwrap();
    let j1 = f.json(&["find", "instr", &f.range(), "--no-why", "--format", "json"]);
    assert_eq!(j1["culprit"]["commit"], j["culprit"]["commit"], "{j1:#}");
    assert_eq!(j1["measured"]["parallel_runs"], 0, "{j1:#}");
}

#[test]
fn a_wall_time_test_with_two_jobs_measures_one_run_at_a_time() {
    let wall = format!(
        "[tests.wall]\ncommand = {LOGGED:?}\nmetric = \"wall\"\nthreshold = \"5%\"\nrepeats = 3\n"
    );
    let f = fixture(12, 7, &wall);
    let out = f
        .cmd()
        .args([
            "find",
            "wall",
            &f.range(),
            "--jobs",
            "2",
            "--no-why",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c == 0 || c == 3));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["measured"]["parallel_runs"], 0, "{j:#}");
    assert_eq!(j["measured"]["ahead"], 0, "{j:#}");
    let iv = intervals(&f);
    assert!(iv.len() >= 10, "{iv:?}");
    assert_eq!(overlaps(&iv), 0, "wall-time runs overlapped: {iv:?}");
    // `run` of a wall-time test with two jobs: the same.
    std::fs::remove_file(f.dir.path().join("runs.log")).unwrap();
    f.run_json("wall", &f.range(), &["--jobs", "2"]);
    let iv = intervals(&f);
    assert!(iv.len() >= 20, "{iv:?}");
    assert_eq!(overlaps(&iv), 0, "wall-time runs overlapped: {iv:?}");
}

/// A build that records where it was built (a debug build's `__FILE__` and DWARF paths do:
/// curl's does) is the same bytes only at the same path: the pristine checks of parent and
/// culprit, run at once, each rebuild in the worktree slot the build was made in, and none is
/// taken for stale (a false stale build searched the whole range again, every build pristine).
#[test]
fn builds_that_embed_their_path_pass_their_pristine_checks_made_at_once() {
    // A declared deterministic value: its checks go beside the last measurements (nothing
    // else builds then); the same value undeclared (its load may move it, so nothing builds
    // beside its runs): its checks go at once after the search, each in its build's slot.
    let (mut at_once, mut beside) = (0, 0);
    for (n, at, declared) in [
        (24, 9, true),
        (9, 5, true),
        (12, 3, true),
        (9, 5, false),
        (12, 3, false),
    ] {
        let f = Fixture::new(
            &specs(n, |i, c| {
                c.metric = if i >= at { 120.0 } else { 100.0 };
                c.noise_pct = 0.0;
            }),
            &format!("[build]\ncommand = \"cc -O0 -o app app.c -lm && pwd > built-in\"\nartifacts = [\"app\", \"built-in\"]\n\n[tests.size]\ncommand = \"./app\"\nmetric = {{ regex = \"^value: ([0-9.]+)\" }}\ndeterministic = {declared}\n"),
        );
        let out = f
            .cmd()
            .args([
                "find",
                "size",
                &f.range(),
                "--jobs",
                "2",
                "--format",
                "json",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(j["culprit"]["commit"], f.ids[at - 1], "{j:#}");
        assert!(!err.contains("pristine build of the same commit"), "{err}");
        assert!(!err.contains("searching again"), "{err}");
        assert!(j["pristine_checks"].as_u64().unwrap() >= 1, "{j:#}");
        at_once += usize::from(err.contains("(a pristine build), beside the others"));
        beside += usize::from(err.contains("(a pristine build), beside the measurement"));
    }
    // Parent and culprit built in different slots have their checks at once (each in its own
    // build's slot), so that path is taken too, as is the check beside a measurement.
    assert!(at_once > 0, "no pristine checks went at once");
    assert!(beside > 0, "no pristine check went beside a measurement");
}
