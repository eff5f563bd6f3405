//! The core pipeline end to end on generated repositories of a small C program.

use crate::common;

use common::{medians, specs, with_build, Fixture};

/// 31 commits (30 in the range): the value rises 10 % at commit 20, memory drops from 60 to
/// 20 MB at commit 12, commit 7 does not compile.
fn thirty() -> Fixture {
    Fixture::with_demo_config(&specs(31, |i, c| {
        c.metric = if i >= 20 { 1100.0 } else { 1000.0 };
        c.megabytes = if i >= 12 { 20 } else { 60 };
        c.broken = i == 7;
    }))
}

#[test]
fn run_builds_measures_and_resumes_nothing_twice() {
    let f = thirty();
    // The user's checkout: another branch, HEAD elsewhere, uncommitted edits.
    f.git(&["checkout", "-q", "-b", "mine", &f.ids[3]]);
    std::fs::write(f.repo.join("params.h"), "/* my edit */\n").unwrap();
    std::fs::write(f.repo.join("untracked.txt"), "mine\n").unwrap();
    let status_before = f.git(&["status", "--porcelain"]);
    let head_before = f.git(&["rev-parse", "HEAD"]);
    let refs_before = f.git(&["show-ref"]);
    let index_before = std::fs::read(f.repo.join(".git/index")).unwrap();

    let range = f.range();
    let s = f.run_json("value,rss", &range, &[]);
    // 29 commits built, besides the pristine rebuilds that check what a step stands on.
    let checks = s["pristine_checks"].as_u64().unwrap();
    assert_eq!(s["builds"].as_u64().unwrap() - checks, 29, "{s}");
    assert_eq!(s["failed_builds"].as_array().unwrap().len(), 1, "{s}");
    assert_eq!(s["failed_builds"][0], f.ids[6].as_str());
    assert_eq!(s["runs"], 29 * (5 + 10), "{s}");
    assert_eq!(s["failed_runs"], 0);

    let value = f.show("value", &range);
    let meds = medians(&value);
    assert_eq!(meds.len(), 30);
    for (k, m) in meds.iter().enumerate() {
        let commit_no = k + 2;
        match (commit_no, m) {
            (7, None) => assert_eq!(value["commits"][k]["status"], "build-failed"),
            (7, Some(_)) => panic!("broken commit has samples"),
            (n, Some(m)) if n >= 20 => assert!((m / 1100.0 - 1.0).abs() < 0.03, "commit {n}: {m}"),
            (n, Some(m)) => assert!((m / 1000.0 - 1.0).abs() < 0.03, "commit {n}: {m}"),
            (n, None) => panic!("commit {n} has no samples"),
        }
    }
    // A 10 % step up in a lower-is-better test reads as an upward trend: getting worse.
    assert_eq!(
        value["summary"]["trend"]["direction"], "increasing",
        "{value}"
    );
    assert_eq!(value["summary"]["trend"]["verdict"], "worse");
    assert!(value["summary"]["trend"]["p_value"].as_f64().unwrap() < 0.01);
    let rss = medians(&f.show("rss", &range));
    for (k, m) in rss.iter().enumerate() {
        let n = k + 2;
        if let Some(m) = m {
            let mb = m / (1024.0 * 1024.0);
            if n >= 12 {
                assert!((20.0..40.0).contains(&mb), "commit {n}: {mb} MB");
            } else {
                assert!((60.0..80.0).contains(&mb), "commit {n}: {mb} MB");
            }
        }
    }

    let again = f.run_json("value,rss", &range, &[]);
    assert_eq!(again["builds"], 0, "{again}");
    assert_eq!(again["runs"], 0, "{again}");
    assert_eq!(again["cache_hits"], 29, "{again}");

    // --again adds one round everywhere; --gaps then has nothing to do.
    let round = f.run_json("rss", &range, &["--again"]);
    assert_eq!(round["runs"], 29 * 10);
    assert_eq!(f.show("rss", &range)["commits"][0]["n"], 20);
    let gaps = f.run_json("rss", &range, &["--gaps"]);
    assert_eq!(gaps["runs"], 0);

    assert_eq!(f.git(&["status", "--porcelain"]), status_before);
    assert_eq!(f.git(&["rev-parse", "HEAD"]), head_before);
    assert_eq!(f.git(&["show-ref"]), refs_before);
    assert_eq!(
        std::fs::read(f.repo.join(".git/index")).unwrap(),
        index_before
    );
    assert_eq!(
        std::fs::read_to_string(f.repo.join("params.h")).unwrap(),
        "/* my edit */\n"
    );
    assert!(!f.repo.join(".git/worktrees").exists());
}

#[test]
fn gaps_fill_only_unmeasured_commits_and_jobs_build_in_parallel() {
    let f = Fixture::with_demo_config(&specs(9, |_, _| {}));
    // Measure every other commit first, like a cron job that skips commits.
    for id in f.ids.iter().skip(1).step_by(2) {
        f.run_json("value", id, &[]);
    }
    let s = f.run_json("value", &f.range(), &["--gaps", "--jobs", "2"]);
    let checks = s["pristine_checks"].as_u64().unwrap();
    assert_eq!(s["builds"].as_u64().unwrap() - checks, 4, "{s}");
    assert_eq!(s["runs"], 4 * 5, "{s}");
    let show = f.show("value", &f.range());
    for c in show["commits"].as_array().unwrap() {
        assert_eq!(c["n"], 5, "{c}");
    }
}

#[test]
fn sigkill_during_run_loses_nothing_and_resume_completes() {
    // The first six runs go through; the seventh says so and waits while `hold` exists, so the
    // kill lands at a known moment whatever the machine's speed.
    let f = Fixture::new(
        &specs(7, |_, _| {}),
        &with_build(
            r#"[tests.value]
command = """
d=$PERFBISECT_CONFIG_DIR; n=$(cat $d/count 2>/dev/null || echo 0); echo $((n+1)) > $d/count
if [ $n -ge 6 ]; then touch $d/held; while [ -f $d/hold ]; do sleep 0.01; done; fi
./app"""
metric = { regex = "^value: ([0-9.]+)" }
repeats = 4
"#,
        ),
    );
    let hold = f.dir.path().join("hold");
    std::fs::write(&hold, "").unwrap();
    let range = f.range();
    let mut child = f.std_cmd().args(["run", "value", &range]).spawn().unwrap();
    let held = f.dir.path().join("held");
    while !held.exists() {
        assert!(child.try_wait().unwrap().is_none(), "run ended early");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let partial: u64 = f.show("value", &range)["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["n"].as_u64().unwrap())
        .sum();
    assert_eq!(
        partial, 6,
        "every finished run is stored, the one in flight is not"
    );
    std::fs::remove_file(&hold).unwrap();
    f.run_json("value", &range, &[]);
    for c in f.show("value", &range)["commits"].as_array().unwrap() {
        assert_eq!(c["n"], 4, "{c}");
    }
}

#[test]
fn show_prints_summary_and_stake_like_curls_page() {
    let f = Fixture::new(
        &specs(4, |i, c| {
            c.metric = 3000.0 + i as f64;
            c.noise_pct = 0.0;
        }),
        r#"
[build]
command = "cc -o app app.c -lm"
artifacts = ["app"]
[tests.size]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
unit = "bytes"
deterministic = true
stake = 3064
"#,
    );
    f.run_json("size", &f.range(), &[]);
    let out = f.cmd().args(["show", "size", &f.range()]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("P0 3002  P25 3002.5  P50 3003  P75 3003.5  P100 3004"),
        "{text}"
    );
    assert!(text.contains("current results are BETTER"), "{text}");
    assert!(
        text.contains("stake 3064: mean -61 (-1.99%), P50 -61 (-1.99%)"),
        "{text}"
    );
    assert!(text.contains("Mann-Kendall over the medians of "), "{text}");
    let json = f.show("size", &f.range());
    assert_eq!(json["summary"]["stake"]["verdict"], "better");
    assert_eq!(json["summary"]["samples"], 3);
    let csv = f
        .cmd()
        .args(["show", "size", &f.range(), "--format", "csv"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&csv.stdout).lines().count(), 4);
}

/// Two commits of a zero-noise program: 1000 at the first, 900 at the second.
fn two_exact(tests: &str) -> Fixture {
    Fixture::new(
        &specs(2, |i, c| {
            c.metric = if i == 2 { 900.0 } else { 1000.0 };
            c.noise_pct = 0.0;
        }),
        &with_build(tests),
    )
}

#[test]
fn failing_teardown_is_reported_with_test_and_output_and_hidden_by_q() {
    let f = two_exact(
        r#"[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
repeats = 2
teardown = "echo 'cannot stop the server: pid file gone'; exit 3"
"#,
    );
    let last = &f.ids[1];
    let out = f.cmd().args(["run", "value", last]).output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "perfbisect: warning: test `value` on {}: teardown",
            &last[..10]
        )),
        "{err}"
    );
    assert!(err.contains("exit code 3"), "{err}");
    assert!(
        err.contains("cannot stop the server: pid file gone"),
        "{err}"
    );
    // The runs themselves are stored.
    assert_eq!(f.show("value", last)["commits"][0]["n"], 2);
    // -q hides warnings, this one included.
    let out = f
        .cmd()
        .args(["-q", "run", "value", last, "--again"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("teardown"), "{err}");
}

#[test]
fn teardown_after_a_failed_setup_is_reported_too() {
    let f = two_exact(
        r#"[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
setup = "exit 1"
teardown = "echo 'nothing to tear down'; exit 4"
"#,
    );
    let last = &f.ids[1];
    let out = f.cmd().args(["run", "value", last]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("test `value` on"), "{err}");
    assert!(err.contains("exit code 4"), "{err}");
    assert!(err.contains("nothing to tear down"), "{err}");
}

#[test]
fn show_csv_round_trips_errors_with_quotes_commas_and_newlines() {
    let f = two_exact(
        r#"[tests.value]
command = '''printf 'it said "no", then, sadly\nstopped\n'; exit 1'''
metric = { regex = "^value: ([0-9.]+)" }
repeats = 1
"#,
    );
    let last = &f.ids[1];
    f.run_json("value", last, &[]);
    let out = f
        .cmd()
        .args(["show", "value", last, "--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut r = csv::Reader::from_reader(out.stdout.as_slice());
    let headers = r.headers().unwrap().clone();
    assert_eq!(&headers[8], "error");
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 1, "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(&rows[0][0], last.as_str());
    assert_eq!(&rows[0][3], "");
    let error = &rows[0][8];
    assert!(
        error.contains("exit code 1") && error.contains("it said \"no\", then, sadly\nstopped"),
        "{error:?}"
    );
}

#[test]
fn compare_of_deterministic_values_says_so_and_judges_negative_metrics_by_their_move() {
    let f = two_exact(
        r#"[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
direction = "lower"
threshold = "2%"

[tests.neg]
command = "./app | sed 's/^value: /value: -/'"
metric = { regex = "^value: (-?[0-9.]+)" }
direction = "lower"
threshold = "2%"
"#,
    );
    let (a, b) = (&f.ids[0], &f.ids[1]);
    // 1000 -> 900, lower is better: an improvement, compared exactly.
    let out = f
        .cmd()
        .args(["compare", "value", a, b, "--runs", "3"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("B is at 90.0 % of A"), "{text}");
    assert!(text.contains("exact (no spread on either side)"), "{text}");
    assert!(!text.contains("p = "), "{text}");
    assert!(text.contains("B differs from A: an improvement"), "{text}");
    // -1000 -> -900 went up, and lower is better: a regression, +10 %.
    let out = f
        .cmd()
        .args(["compare", "neg", a, b, "--runs", "3"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("B differs from A: a regression"), "{text}");
    let json = f.json(&["compare", "neg", a, b, "--runs", "3", "--format", "json"]);
    assert!(
        (json["rel_change"].as_f64().unwrap() - 0.1).abs() < 1e-9,
        "{json}"
    );
    assert_eq!(json["deterministic"], true, "{json}");
}

#[test]
fn detect_says_deterministic_and_gives_negative_metrics_the_sign_of_their_move() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("series.csv");
    // Two equal runs per index: repeated equal runs make a change exact (one run a side
    // never does, issue 30).
    let mut csv = String::from("index,value\n");
    for i in 1..=12 {
        for _ in 0..2 {
            csv += &format!("{i},{}\n", if i >= 7 { -110 } else { -100 });
        }
    }
    std::fs::write(&path, csv).unwrap();
    let out = assert_cmd::Command::cargo_bin("perfbisect")
        .unwrap()
        .arg("detect")
        .arg("--input")
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        text.trim(),
        "index 7: -100 -> -110 (-10.00 %), exact",
        "{text}"
    );
}

#[test]
fn find_on_exact_values_says_deterministic_instead_of_p_zero() {
    // No noise: every run of a commit gives the same number, so the search compares exact
    // values and its p-values (0 or 1) are no test's result.
    let f = Fixture::new(
        &specs(9, |i, c| {
            c.metric = if i >= 6 { 900.0 } else { 1000.0 };
            c.noise_pct = 0.0;
        }),
        &with_build(
            r#"[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
unit = "units"
direction = "lower"
repeats = 2
threshold = "2%"
"#,
        ),
    );
    let out = f
        .cmd()
        .args(["find", "value", &f.range()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("culprit: {}", &f.ids[5][..10])),
        "{text}"
    );
    assert!(
        text.contains("1000 units -> 900 units (-10.00 %, an improvement), exact,"),
        "{text}"
    );
    assert!(!text.contains("p = "), "{text}");
    let md = f
        .cmd()
        .args(["find", "value", &f.range(), "--format", "md"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("exact (values compared as they are)") && !md.contains("p = "),
        "{md}"
    );
}

/// A deterministic metric that most commits move a little, with a 0.1 % threshold: thirteen
/// equal values, +0.65 %, a step below the threshold, then steps of -0.4 % and +0.12 %.
fn small_steps() -> Fixture {
    Fixture::new(
        &specs(24, |i, c| {
            c.metric = match i {
                1..=14 => 100_000.0,
                15..=17 => 100_650.0,
                18 => 100_700.0,
                19..=21 => 100_900.0,
                22..=23 => 100_500.0,
                _ => 100_620.0,
            };
            c.noise_pct = 0.0;
        }),
        &with_build(
            r#"[tests.size]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
unit = "bytes"
deterministic = true
threshold = "0.1%"
"#,
        ),
    )
}

#[test]
fn detect_on_a_deterministic_series_reports_every_step_at_its_commit_with_its_values() {
    let f = small_steps();
    let range = f.range();
    f.run_json("size", &range, &[]);
    let j = f.json(&["detect", "size", &range, "--format", "json"]);
    let got: Vec<(i64, String, f64, f64, bool)> = j["change_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["index"].as_i64().unwrap(),
                p["commit"].as_str().unwrap().to_string(),
                p["before"].as_f64().unwrap(),
                p["after"].as_f64().unwrap(),
                p["deterministic"].as_bool().unwrap(),
            )
        })
        .collect();
    // (1-based commit number, value of the commit before, value of the commit itself)
    let want: Vec<(i64, String, f64, f64, bool)> = [
        (15, 100_000.0, 100_650.0),
        (19, 100_700.0, 100_900.0),
        (22, 100_900.0, 100_500.0),
        (24, 100_500.0, 100_620.0),
    ]
    .iter()
    .map(|&(n, b, a)| (n as i64 - 2, f.ids[n - 1].clone(), b, a, true))
    .collect();
    assert_eq!(got, want, "{j}");
    let out = f.cmd().args(["detect", "size", &range]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "{} Commit 15: 100000 bytes -> 100650 bytes (+0.65 %), exact",
            &f.ids[14][..10]
        )),
        "{text}"
    );
    assert_eq!(text.lines().count(), 4, "{text}");
}

/// `show TEST --help`'s format list: the values after "possible values:", on the option's
/// line or, where the command has a long help (clap then puts them below), after it.
fn listed_formats(help: &str) -> String {
    let from = help
        .find("--format <FORMAT>")
        .unwrap_or_else(|| panic!("no --format in {help}"));
    let rest = &help[from..];
    let at = rest.find("[possible values: ").expect(rest) + "[possible values: ".len();
    rest[at..rest[at..].find(']').unwrap() + at].to_string()
}

#[test]
fn every_command_lists_only_the_formats_it_writes_and_clap_rejects_the_rest() {
    let bin = || assert_cmd::Command::cargo_bin("perfbisect").unwrap();
    for (cmd, formats) in [
        ("find", "text, json, md"),
        ("run", "text, json"),
        ("show", "text, json, csv, otava"),
        ("report", "md, json, html"),
        ("detect", "text, json"),
        ("compare", "text, json"),
        ("calibrate", "text, json"),
    ] {
        let out = bin().args([cmd, "--help"]).output().unwrap();
        assert!(out.status.success());
        let help = String::from_utf8_lossy(&out.stdout);
        assert_eq!(listed_formats(&help), formats, "{cmd}: {help}");
    }
    // Rejected by clap before anything is opened (no config here), exit 2, with the list.
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .current_dir(dir.path())
        .args(["show", "value", "--format", "md"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid value 'md'")
            && err.contains("[possible values: text, json, csv, otava]"),
        "{err}"
    );
    // The defaults are in the help.
    let help = bin().args(["show", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("default: every commit with results"),
        "{help}"
    );
    let help = bin().args(["calibrate", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("(default: HEAD"), "{help}");
}

#[test]
fn show_without_a_range_lists_every_commit_with_results_from_an_old_head() {
    let f = Fixture::new(
        &specs(8, |i, c| {
            c.metric = 3000.0 + i as f64;
            c.noise_pct = 0.0;
        }),
        &with_build(
            r#"[tests.size]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
unit = "bytes"
deterministic = true
"#,
        ),
    );
    f.run_json("size", &f.range(), &[]);
    // A commit on a side branch, committed now (after every fixture commit), measured too.
    f.git(&["branch", "side", &f.ids[3]]);
    f.git(&["checkout", "-q", "side"]);
    f.git(&["commit", "-q", "--allow-empty", "-m", "Side commit"]);
    let side = f.git(&["rev-parse", "HEAD"]).trim().to_string();
    f.run_json("size", &side, &[]);
    // As during a `git bisect`: HEAD is an early commit of main.
    f.git(&["checkout", "-q", &f.ids[2]]);

    let out = f.cmd().args(["show", "size"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("all 8 commits with results of size, oldest first"),
        "{text}"
    );
    let listed: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.len() == 10 && w.chars().all(|c| c.is_ascii_hexdigit()))
        .collect();
    let mut want: Vec<String> = f.ids[1..].iter().map(|id| id[..10].to_string()).collect();
    want.push(side[..10].to_string());
    assert_eq!(listed, want, "{text}");
    // The side commit's build is Commit 4's: its one run counts once.
    assert!(
        text.contains(
            "7 samples over 8 of 8 commits (1 shows the runs of an identical build, counted once)"
        ),
        "{text}"
    );

    let j = f.json(&["show", "size", "--format", "json"]);
    let ids: Vec<&str> = j["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["commit"].as_str().unwrap())
        .collect();
    let mut want: Vec<&str> = f.ids[1..].iter().map(String::as_str).collect();
    want.push(&side);
    assert_eq!(ids, want, "{j}");

    // With a range, the header says so.
    let out = f.cmd().args(["show", "size", &f.range()]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("7 commits of {}, oldest first", f.range())),
        "{text}"
    );

    // calibrate says which revision it measured when none was given.
    let out = f
        .cmd()
        .args(["calibrate", "size", "--runs", "5"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!(
            "size: 5 A/A runs of {} Commit 3 (HEAD: no REV given)",
            &f.ids[2][..10]
        )),
        "{text}"
    );
}

/// A build command that calls a helper beside the config: builds run in perfbisect's own
/// worktree, so the helper is found through `PERFBISECT_CONFIG_DIR`, as tests find theirs.
#[test]
fn build_commands_find_their_helper_through_the_config_dir() {
    let f = Fixture::new(
        &common::specs(2, |_, _| {}),
        r#"
[build]
command = '"$PERFBISECT_CONFIG_DIR/build.sh"'
artifacts = ["app"]

[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
repeats = 1
"#,
    );
    let helper = f.dir.path().join("build.sh");
    std::fs::write(&helper, "#!/bin/sh\nset -e\ncc -O0 -o app app.c -lm\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let s = f.run_json("value", &f.range(), &[]);
    assert_eq!(s["builds"], 1, "{s}");
    assert_eq!(s["failed_builds"].as_array().unwrap().len(), 0, "{s}");
}
