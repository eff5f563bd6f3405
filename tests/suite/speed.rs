//! Speed on machines that drift: comparisons side by side in time (find, run, compare),
//! honest "no change", instruction counts (Valgrind's Cachegrind for real; the hardware
//! counter where the machine has one), quiet runs (CPU pinning, ASLR off).

use crate::common;

use common::{have_tool, specs, with_build, Fixture};

/// The value drifts with the wall clock (a shared machine's load coming and going): 6 %
/// amplitude, a 20 s period; 1 % noise; builds that take a second.
fn drifting(n: usize, step: Option<(usize, f64)>, drift_pct: f64) -> Fixture {
    Fixture::new(
        &specs(n, |i, c| {
            c.drift_pct = drift_pct;
            c.drift_period = 20.0;
            if let Some((at, pct)) = step {
                if i >= at {
                    c.metric = 1000.0 * (1.0 + pct / 100.0);
                }
            }
        }),
        r#"
[build]
command = "sleep 1 && cc -O1 -o app app.c -lm"
artifacts = ["app"]

[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "1%"
repeats = 5
"#,
    )
}

#[test]
fn find_names_the_step_on_a_drifting_machine_comparing_runs_side_by_side() {
    let f = drifting(24, Some((15, 4.0)), 6.0);
    let j = f.json(&["find", "value", &f.range(), "--format", "json"]);
    assert_eq!(j["verdict"], "culprit", "{j:#}");
    assert_eq!(j["culprit"]["commit"], f.ids[14], "{j:#}");
    assert_eq!(j["culprit"]["verified"], true);
    // Decisions came from windows of interleaved runs, and the report says what they cost.
    let m = &j["measured"];
    assert!(m["windows"].as_u64().unwrap() >= 3, "{m}");
    assert!(m["beside_runs"].as_u64().unwrap() > 0, "{m}");
    assert!(m["window_runs"].as_u64().unwrap() <= j["runs"].as_u64().unwrap());
    // The old end was measured in several windows of time: the same build at different
    // moments is how drift is measured.
    assert!(m["drift"]["windows"].as_u64().unwrap() >= 2, "{m}");
}

#[test]
fn run_then_detect_on_a_drifting_machine_without_a_step_finds_no_change_point() {
    let f = drifting(30, None, 8.0);
    let r = f.run_json("value", &f.range(), &[]);
    assert_eq!(r["runs"], 29 * 5, "{r}");
    // Measured round by round: 5 rounds of one run of each commit.
    assert_eq!(r["interleaved"]["rounds"], 5, "{r}");
    let d = f.json(&["detect", "value", &f.range(), "--format", "json"]);
    assert_eq!(
        d["change_points"].as_array().unwrap().len(),
        0,
        "drift became change points: {d}"
    );
}

#[test]
fn no_change_is_said_only_when_the_runs_could_have_seen_the_threshold() {
    // 3 % noise against a 1 % threshold: even 30 runs of each end cannot see 1 %.
    let f = Fixture::new(
        &specs(12, |_, c| c.noise_pct = 3.0),
        &with_build(
            r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "1%"
repeats = 5
max_repeats = 30
"#,
        ),
    );
    let j = f.json(&["find", "value", &f.range(), "--format", "json"]);
    assert_eq!(j["verdict"], "inconclusive", "{j:#}");
    let why = j["reason"].as_str().unwrap();
    assert!(
        why.contains("reliably (80 % of the time) only from"),
        "{why}"
    );
    let mdc = j["measured"]["min_detectable"].as_f64().unwrap();
    assert!(mdc > 0.01, "{mdc}");
    // It measured more before saying so.
    assert!(j["runs"].as_u64().unwrap() >= 60, "{j:#}");
    // A 10 % threshold is within reach: "no change", with what it could have seen.
    f.set_config(&with_build(
        r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "10%"
repeats = 5
"#,
    ));
    let j = f.json(&["find", "value", &f.range(), "--format", "json"]);
    assert_eq!(j["verdict"], "no-change", "{j:#}");
    assert!(j["no_change"]["min_detectable"].as_f64().unwrap() <= 0.10);
}

#[test]
fn compare_with_too_few_runs_says_what_it_could_not_see() {
    let f = Fixture::new(
        &specs(2, |i, c| {
            c.noise_pct = 3.0;
            if i == 2 {
                c.metric = 1030.0;
            }
        }),
        &with_build(
            r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "2%"
"#,
        ),
    );
    let out = f
        .cmd()
        .args(["compare", "value", &f.ids[0], &f.ids[1], "--runs", "3"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("not told apart"), "{text}");
    // Without --runs it measures on (doubling, interleaved) until it can tell.
    let j = f.json(&["compare", "value", &f.ids[0], &f.ids[1], "--format", "json"]);
    assert_eq!(j["adaptive"], true);
    assert!(j["runs"].as_u64().unwrap() >= 5, "{j}");
    assert!(
        j["differs"] == true || j["could_see_threshold"] == false,
        "{j}"
    );
}

/// The CPU-bound fixture: its busy loop does `work` iterations, 1 % more from `at` on.
fn cpu_bound(n: usize, at: usize, config: &str) -> Fixture {
    Fixture::new(
        &specs(n, |i, c| {
            c.work = if i >= at { 2_020_000 } else { 2_000_000 };
            c.noise_pct = 0.0;
        }),
        config,
    )
}

const INSTRUCTIONS: &str = r#"
[build]
command = "cc -O1 -o app app.c -lm"
artifacts = ["app"]

[tests.instr]
command = "./app"
metric = "instructions"
threshold = "0.5%"
"#;

#[test]
fn instructions_are_counted_by_cachegrind_and_find_takes_git_bisect_probes() {
    if !have_tool(
        "valgrind",
        "Cachegrind counts instructions where no hardware counter is",
    ) {
        return;
    }
    let n = 33;
    let f = cpu_bound(n, 21, INSTRUCTIONS);
    // Force Valgrind even on a machine with a hardware counter: that is the path under test.
    std::fs::write(
        &f.config,
        format!("{INSTRUCTIONS}\n[measure]\ncounter = \"cachegrind\"\n"),
    )
    .unwrap();
    let out = f
        .cmd()
        .args(["find", "instr", &f.range(), "--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The first run says which counter and why.
    assert!(
        stderr.contains("counts instructions with cachegrind"),
        "{stderr}"
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["verdict"], "culprit", "{j:#}");
    assert_eq!(j["culprit"]["commit"], f.ids[20], "{j:#}");
    let rel = j["culprit"]["rel_change"].as_f64().unwrap();
    assert!(rel > 0.005 && rel < 0.011, "{rel}");
    // The search's builds: the pristine rebuilds that checked the verdict's are not probes.
    let builds = j["builds"].as_u64().unwrap() - j["pristine_checks"].as_u64().unwrap();
    let runs = j["runs"].as_u64().unwrap();
    let ceil_log2 = (usize::BITS - (n - 2).leading_zeros()) as u64;
    assert!(builds <= ceil_log2 + 2, "{builds} builds");
    assert!(runs <= 3 * builds, "{runs} runs for {builds} builds");
    assert!(
        j["measured"]["counter"]
            .as_str()
            .unwrap()
            .contains("cachegrind"),
        "{j:#}"
    );
    // The counter is part of the samples' fingerprint, and `config check` says which is used.
    let check = f.cmd().args(["config", "check"]).output().unwrap();
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(
        said.contains("instructions counted by cachegrind"),
        "{said}"
    );
    // Counts of a deterministic program do not move run to run.
    let show = f.show("instr", &format!("{}..{}", f.ids[19], f.ids[20]));
    for c in show["commits"].as_array().unwrap() {
        if c["n"].as_u64().unwrap_or(0) >= 2 {
            let spread = c["max"].as_f64().unwrap() - c["min"].as_f64().unwrap();
            // (The fixture's seeded noise changes a few branches a run: a few parts in 10^4.)
            assert!(spread / c["median"].as_f64().unwrap() < 1e-3, "{c}");
        }
    }
}

#[test]
fn instructions_without_any_counter_is_a_clear_error_naming_the_package() {
    let f = cpu_bound(3, 2, INSTRUCTIONS);
    let out = f
        .cmd()
        .args(["run", "instr", &f.range()])
        .env("PERFBISECT_NO_PERF", "1")
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("valgrind") && err.contains("apt-get install valgrind"),
        "{err}"
    );
    assert!(err.contains("`instr`"), "{err}");
    // Nothing was built before the error.
    assert!(
        !f.cache.join("artifacts").exists()
            || std::fs::read_dir(f.cache.join("artifacts"))
                .unwrap()
                .next()
                .is_none()
    );
}

#[test]
fn the_hardware_counter_counts_where_the_machine_has_one() {
    let f = cpu_bound(3, 3, INSTRUCTIONS);
    std::fs::write(
        &f.config,
        format!("{INSTRUCTIONS}\n[measure]\ncounter = \"perf\"\n"),
    )
    .unwrap();
    let out = f
        .cmd()
        .args(["run", "instr", &f.range(), "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(2) && err.contains("hardware instructions counter cannot be used")
    {
        // A VM without a PMU (like the machine these tests were written on): say why.
        eprintln!("skipped: this machine has no usable hardware instructions counter: {err}");
        return;
    }
    assert!(out.status.success(), "{err}");
    let show = f.show("instr", &f.range());
    let meds = common::medians(&show);
    let (a, b) = (meds[0].unwrap(), meds[1].unwrap());
    assert!(a > 1e6, "{a}");
    assert!(((b - a) / a).abs() < 0.01, "{a} {b}");
}

#[test]
fn quiet_runs_pin_cpus_and_turn_address_randomisation_off() {
    let cpu = common::last_cpu();
    let config = format!(
        r#"
[build]
command = "cc -O1 -o app app.c -lm"
artifacts = ["app"]

[measure]
cpus = "{cpu}"

[tests.cpu]
command = "grep Cpus_allowed_list /proc/self/status"
metric = {{ regex = "Cpus_allowed_list:\\s+([0-9]+)$" }}
deterministic = true

[tests.persona]
command = "cat /proc/self/personality"
metric = {{ regex = "^([0-9a-f]+)$" }}
deterministic = true
aslr = false
"#
    );
    let f = cpu_bound(2, 2, &config);
    f.run_json("cpu,persona", &f.range(), &[]);
    let cpus = common::medians(&f.show("cpu", &f.range()));
    assert_eq!(cpus[0], Some(cpu as f64), "{cpus:?}");
    // ADDR_NO_RANDOMIZE is 0x0040000: the personality reads 00040000.
    let p = common::medians(&f.show("persona", &f.range()));
    assert_eq!(p[0], Some(40000.0), "{p:?}");
    // Both are part of the samples' fingerprint: another setting is another series.
    let with = f.show("cpu", &f.range());
    let fp = with["samples"][0]["fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    f.set_config(&config.replace(&format!("cpus = \"{cpu}\""), ""));
    let without = f.show("cpu", &f.range());
    assert_eq!(without["commits"][0]["n"], 0, "{without}");
    assert!(!fp.is_empty());
    // A CPU this machine does not have is refused with the key and line.
    f.set_config(&config.replace(&format!("cpus = \"{cpu}\""), "cpus = \"999\""));
    let out = f.cmd().args(["config", "check"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("measure.cpus") && err.contains("CPU 999"),
        "{err}"
    );
}

#[test]
fn calibrate_says_how_many_runs_a_decision_needs_with_time_and_with_instructions() {
    if !have_tool(
        "valgrind",
        "calibrate measures instructions beside the test's metric",
    ) {
        return;
    }
    let f = Fixture::new(
        &specs(2, |_, c| c.work = 200_000),
        &with_build(
            r#"
[measure]
counter = "cachegrind"

[tests.speed]
command = "./app"
metric = "wall"
threshold = "2%"
"#,
        ),
    );
    let j = f.json(&[
        "calibrate",
        "speed",
        &f.ids[1],
        "--runs",
        "10",
        "--format",
        "json",
    ]);
    let metrics = j["metrics"].as_array().unwrap();
    let names: Vec<&str> = metrics
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["wall", "instructions"], "{j:#}");
    let instr = &metrics[1];
    assert_eq!(instr["runs_needed"], 1, "{instr}");
    assert!(
        instr["source"].as_str().unwrap().contains("cachegrind"),
        "{instr}"
    );
    let out = f
        .cmd()
        .args(["calibrate", "speed", &f.ids[1], "--runs", "10"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("runs per side a decision needs"), "{text}");
}
