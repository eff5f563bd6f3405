//! Every minute of a `find` is accounted for: its summary's builds count the pristine
//! rebuilds that check the verdict's builds, its time splits into building, checking builds,
//! measuring, profiling and the rest, which add up to the total, and the total is the wall
//! clock from the command's start to its report. Without progress bars stderr is never silent
//! long: a line per phase, and a heartbeat while a long build, rebuild or run is in progress.

use crate::common;

use std::time::Instant;

use common::{specs, with_build, Fixture};

/// A two-commit range whose second commit moves the printed value by 5 %; builds take
/// `build_secs` (a sleep before the compiler).
fn stepped(build_secs: f64) -> Fixture {
    Fixture::new(
        &specs(2, |i, c| {
            if i == 2 {
                c.metric *= 1.05;
            }
        }),
        &format!(
            r#"
[build]
command = "sleep {build_secs}; cc -O0 -o app app.c -lm"
artifacts = ["app"]

[tests.value]
command = "./app"
metric = {{ regex = "^value: ([0-9.]+)" }}
unit = "units"
threshold = "2%"
repeats = 5
"#
        ),
    )
}

#[test]
fn find_accounts_for_its_pristine_checks_and_every_second() {
    let f = stepped(0.5);
    let range = format!("{}..{}", f.ids[0], f.ids[1]);
    let t = Instant::now();
    let out = f
        .std_cmd()
        .args(["find", "value", &range, "--format", "json"])
        .output()
        .unwrap();
    let wall = t.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["verdict"], "culprit", "{j}");
    // Two builds for the search (the first in a fresh worktree is pristine already); the
    // culprit's incremental build is rebuilt pristine, and that rebuild is a build too.
    let checks = j["pristine_checks"].as_u64().unwrap();
    assert!(checks >= 1, "{j}");
    assert_eq!(j["builds"].as_u64().unwrap(), 2 + checks, "{j}");
    assert!(
        err.contains("in a clean worktree, to check its incremental build"),
        "the rebuild is said: {err}"
    );
    let time = &j["time"];
    let part = |k: &str| time[k].as_f64().unwrap();
    assert!(part("checking_s") >= 0.5 * checks as f64, "{time}");
    let total = part("total_s");
    let sum = part("building_s")
        + part("checking_s")
        + part("measuring_s")
        + part("profiling_s")
        + part("waiting_s");
    assert!((sum - total).abs() < 0.01, "the parts add up: {time}");
    // The clock runs from the command's start to its report: inside the process's wall time,
    // and holding every build's sleep (two builds and the pristine rebuilds, 0.5 s each). No
    // ratio to the wall time: a loaded machine may take any time to start and end a process.
    assert!(total <= wall, "{total} > {wall}");
    assert!(part("building_s") >= 2.0 * 0.5, "{time}");
    assert!(
        total >= 0.5 * (2 + checks) as f64,
        "{total} s does not hold the builds' sleeps: {time}"
    );

    // The text says it too (on a fresh cache: the same work again).
    let f = stepped(0.5);
    let range = format!("{}..{}", f.ids[0], f.ids[1]);
    let out = f
        .std_cmd()
        .args(["find", "value", &range])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("searched ")).unwrap();
    assert!(
        line.contains(&format!("{} builds (", 2 + checks))
            && line.contains(&if checks == 1 {
                "1 of them a pristine check)".to_string()
            } else {
                format!("{checks} of them pristine checks)")
            }),
        "{line}"
    );
    assert!(
        line.contains(", checking builds ") && line.contains(", other "),
        "{line}"
    );
}

/// A build of 2 s with a heartbeat every 0.4 s: stderr says the build is still going, and the
/// pristine rebuild too; `-q` says nothing of it.
#[test]
fn long_builds_and_rebuilds_have_a_heartbeat() {
    let f = stepped(2.0);
    let range = format!("{}..{}", f.ids[0], f.ids[1]);
    let out = f
        .std_cmd()
        .env("PERFBISECT_HEARTBEAT_SECS", "0.4")
        .args(["find", "value", &range, "--no-why"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let beats: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("perfbisect: still "))
        .collect();
    assert!(
        beats
            .iter()
            .any(|l| l.starts_with("perfbisect: still building ")),
        "{err}"
    );
    assert!(
        beats
            .iter()
            .any(|l| l.contains("in a clean worktree") && l.contains("so far)")),
        "the pristine rebuild has one too: {err}"
    );
    let quiet = f
        .std_cmd()
        .env("PERFBISECT_HEARTBEAT_SECS", "0.4")
        .args(["-q", "run", "value", &f.ids[0], "--again"])
        .output()
        .unwrap();
    assert!(quiet.status.success());
    assert!(
        !String::from_utf8_lossy(&quiet.stderr).contains("still"),
        "{}",
        String::from_utf8_lossy(&quiet.stderr)
    );
}

/// A heartbeat during builds is one line naming only the builds still going, then how many
/// are done: never a commit whose build finished (said with `-v` as `built X in ...`, after
/// the heartbeat stopped naming it).
#[test]
fn a_build_heartbeat_names_only_the_builds_in_flight() {
    let f = Fixture::new(
        &specs(4, |_, _| {}),
        r#"
[build]
command = "sleep 0.8; cc -O0 -o app app.c -lm"
artifacts = ["app"]

[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
repeats = 1
"#,
    );
    let out = f
        .std_cmd()
        .env("PERFBISECT_HEARTBEAT_SECS", "0.2")
        .args(["-v", "run", "value", &f.range(), "--build-only"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let mut finished: Vec<&str> = Vec::new();
    let mut beats = 0;
    for l in err.lines() {
        if let Some(rest) = l.strip_prefix("built ") {
            finished.extend(rest.split_whitespace().next());
        } else if l.starts_with("perfbisect: still building ") {
            beats += 1;
            assert!(l.contains(" of 3 done"), "{l}");
            for c in &finished {
                assert!(!l.contains(c), "a finished build is named: {l}\n{err}");
            }
        }
    }
    assert_eq!(finished.len(), 3, "{err}");
    assert!(beats > 0, "{err}");
}

/// `commits` commits and a test `slow` whose one run sleeps `secs` before the program.
fn slow(commits: usize, secs: f64) -> Fixture {
    Fixture::new(
        &specs(commits, |_, _| {}),
        &with_build(&format!(
            "\n[tests.slow]\ncommand = \"sleep {secs}; ./app\"\nmetric = {{ regex = \"^value: ([0-9.]+)\" }}\nrepeats = 1\nwarmup = 0\n"
        )),
    )
}

/// A run of a test that takes its time gets a heartbeat too, and `run`'s summary splits its
/// time and counts its pristine checks; `compare` beats too.
#[test]
fn long_runs_have_a_heartbeat_and_runs_summary_adds_up() {
    let f = slow(1, 1.5);
    let out = f
        .std_cmd()
        .env("PERFBISECT_HEARTBEAT_SECS", "0.4")
        .args(["run", "slow", &f.ids[0], "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("perfbisect: still measuring slow on ")),
        "{err}"
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["pristine_checks"], 0, "{j}");
    let t = &j["time"];
    let part = |k: &str| t[k].as_f64().unwrap();
    let sum = part("building_s") + part("checking_s") + part("measuring_s") + part("waiting_s");
    assert!((sum - part("total_s")).abs() < 0.01, "{t}");
    assert!(part("measuring_s") >= 1.5, "{t}");

    // `compare` of two commits off a terminal: a line for its phase, a heartbeat while it
    // measures.
    let f = slow(2, 0.6);
    let out = f
        .std_cmd()
        .env("PERFBISECT_HEARTBEAT_SECS", "0.4")
        .args(["compare", "slow", &f.ids[0], &f.ids[1], "--runs", "2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("perfbisect: measuring slow on A (")
            && err.contains("side by side, 2 runs each"),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.starts_with("perfbisect: still measuring A and B (run ")),
        "{err}"
    );
}
