//! Every stored number is true: no test can change a build another commit measures, no stale
//! incremental build is counted, and each real run is counted once.

use crate::common;

use common::*;

/// A test that appends to the file it reads (as root, read-only bits stop nothing) changes
/// the content-addressed object every identical build links: no later run may see it.
#[test]
fn a_test_writing_into_its_artifact_never_changes_what_other_runs_see() {
    let data = "1\n2\n3\n4\n".to_string();
    let f = Fixture::with_files(
        &[
            ("Data", vec![("data.txt", data.clone())]),
            ("Docs 1", vec![("README", "a\n".to_string())]),
            ("Docs 2", vec![("README", "b\n".to_string())]),
            ("Docs 3", vec![("README", "c\n".to_string())]),
        ],
        r#"
[build]
artifacts = ["data.txt"]

[tests.lines]
command = "chmod u+w data.txt 2>/dev/null; printf 'lines: %s\n' $(wc -l < data.txt); echo x >> data.txt"
metric = { regex = "^lines: ([0-9]+)" }
repeats = 3
"#,
    );
    let all = format!("{}..{}", f.ids[0], f.ids[3]);
    let mut warned = String::new();
    // Twice: the second run (--again) rebuilds what the first dropped and measures it as the
    // build made it.
    for extra in [&[][..], &["--again"][..]] {
        let out = f
            .cmd()
            .args(["run", "lines", &all])
            .args(extra)
            .output()
            .unwrap();
        warned.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    assert!(
        warned.contains("changed `data.txt`") && warned.contains("dropped"),
        "the run that wrote into its build is named: {warned}"
    );
    let show = f.show("lines", &all);
    let mut seen = 0;
    for c in show["commits"].as_array().unwrap() {
        for v in c["values"].as_array().into_iter().flatten() {
            assert_eq!(
                v.as_f64(),
                Some(4.0),
                "every run saw the build as stored: {show}"
            );
            seen += 1;
        }
    }
    assert!(seen >= 2, "runs were measured: {show}");
    // What is cached now holds what the build made.
    for e in std::fs::read_dir(f.cache.join("artifacts")).unwrap() {
        let p = e.unwrap().path().join("data.txt");
        if p.exists() {
            assert_eq!(
                std::fs::read_to_string(&p).unwrap(),
                data,
                "{}",
                p.display()
            );
        }
    }
}

/// A project whose Makefile does not list the header the program's number comes from:
/// commit 6 of 10 changes the header, the others only docs.
fn header_fixture(extra_build: &str) -> Fixture {
    let mut commits: Vec<FilesCommit<'_>> = vec![(
        "Program",
        vec![
            (
                "app.c",
                "#include <stdio.h>\n#include \"conf.h\"\nint main(void) { printf(\"value: %d\\n\", VALUE); return 0; }\n"
                    .to_string(),
            ),
            ("conf.h", "#define VALUE 100\n".to_string()),
            // No header dependency: make rebuilds app.o only when app.c changes.
            (
                "Makefile",
                "app: app.o\n\tcc -o app app.o\napp.o: app.c\n\tcc -c app.c\n".to_string(),
            ),
        ],
    )];
    for i in 2..=10 {
        let files = if i == 6 {
            vec![("conf.h", "#define VALUE 120\n".to_string())]
        } else {
            vec![("NOTES", format!("{i}\n"))]
        };
        commits.push((Box::leak(format!("Commit {i}").into_boxed_str()), files));
    }
    Fixture::with_files(
        &commits,
        &format!(
            r#"
[build]
command = "make -s"
artifacts = ["app"]
{extra_build}

[tests.value]
command = "./app"
metric = {{ regex = "^value: ([0-9]+)" }}
deterministic = true
"#
        ),
    )
}

#[test]
fn find_names_the_header_commit_a_stale_incremental_build_hid() {
    if !have_tool("make", "the stale-build tests") {
        return;
    }
    stale_build_found("1");
    // With two jobs the value (declared deterministic) is checked beside the last
    // measurements, and each slot's builds differ: the culprit is right, each check counted
    // and timed beside the runs, and the times add up.
    stale_build_found("2");
}

fn stale_build_found(jobs: &str) {
    let f = header_fixture("");
    let range = f.range();
    let find = || {
        f.cmd()
            .args(["find", "value", &range, "--format", "json", "--jobs", jobs])
            .output()
            .unwrap()
    };
    let out = find();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "culprit", "{v}\n{err}");
    assert_eq!(v["culprit"]["commit"], f.ids[5], "{v}\n{err}");
    // Every phase timed once: the parts, less the builds and checks beside the runs (counted
    // in both), are the whole.
    let t = &v["time"];
    let sum = common::time_parts(t);
    assert!((sum - t["total_s"].as_f64().unwrap()).abs() < 0.01, "{t}");
    assert!(t["checking_s"].as_f64().unwrap() > 0.0, "{t}");
    assert!(v["pristine_checks"].as_u64().unwrap() >= 1, "{v}");
    if jobs != "1" {
        assert!(err.contains("done beside the measurement"), "{err}");
        return;
    }
    assert!(
        err.contains("from a pristine build"),
        "the stale build is reported: {err}"
    );
    // Both searches are in the summary: the rebuilds that found the stale build and the first
    // search's builds and runs.
    assert!(
        v["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("searched again with pristine builds")),
        "{v}"
    );
    // Builds stay pristine in this cache, and `find` again says the same.
    let again = find();
    let v: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(v["culprit"]["commit"], f.ids[5], "{v}");
}

#[test]
fn run_then_detect_puts_the_step_on_the_header_commit() {
    if !have_tool("make", "the stale-build tests") {
        return;
    }
    let f = header_fixture("");
    let out = f
        .cmd()
        .args(["run", "value", &f.range(), "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("from a pristine build"), "{err}");
    // The rebuild that found the stale build is among the summary's builds, and its time
    // among the parts of the total.
    let last = String::from_utf8_lossy(&out.stdout);
    let s: serde_json::Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
    assert!(s["pristine_checks"].as_u64().unwrap() >= 1, "{s}");
    let t = &s["time"];
    let sum: f64 = ["building_s", "checking_s", "measuring_s", "waiting_s"]
        .iter()
        .map(|k| t[k].as_f64().unwrap())
        .sum();
    assert!((sum - t["total_s"].as_f64().unwrap()).abs() < 0.01, "{t}");
    let show = f.show("value", &f.range());
    let m = medians(&show);
    // The range's commits are 2..=10; the header changed in commit 6.
    assert_eq!(m[..4], [Some(100.0); 4], "{show}");
    assert_eq!(m[4..], [Some(120.0); 5], "{show}");
    let v = f.json(&["detect", "value", &f.range(), "--format", "json"]);
    let cps = v["change_points"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{v}");
    assert_eq!(cps[0]["commit"], f.ids[5], "{v}");
}

#[test]
fn incremental_false_builds_every_commit_in_a_clean_worktree() {
    if !have_tool("make", "the stale-build tests") {
        return;
    }
    let f = header_fixture("incremental = false");
    let out = f.cmd().args(["run", "value", &f.range()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        !err.contains("pristine build"),
        "nothing to find stale: {err}"
    );
    let m = medians(&f.show("value", &f.range()));
    assert_eq!(m[4..], [Some(120.0); 5]);
}

/// Ten commits, two builds (every other commit changes only docs): 10 real runs, shown on
/// every commit of the build that made them, but counted once. The runs spread 0-2 around a
/// step of 10: a wider spread can leave the step undecided on 5 vs 5 runs, and `run` then tops
/// both builds up (more runs than this test counts).
#[test]
fn runs_of_identical_builds_are_counted_once() {
    let work = |base: u32| {
        format!("#!/bin/sh\necho \"value: $(( {base} + $(od -An -N1 -tu1 /dev/urandom) % 3 ))\"\n")
    };
    let mut commits: Vec<FilesCommit<'_>> = vec![("Base", vec![("work.sh", work(100))])];
    for i in 2..=11 {
        let files = if i == 7 {
            vec![("work.sh", work(110))]
        } else {
            vec![("README", format!("{i}\n"))]
        };
        commits.push((Box::leak(format!("Commit {i}").into_boxed_str()), files));
    }
    let f = Fixture::with_files(
        &commits,
        r#"
[build]
artifacts = ["work.sh"]

[tests.value]
command = "./work.sh"
metric = { regex = "^value: ([0-9]+)" }
repeats = 5
"#,
    );
    let range = f.range();
    let out = f.cmd().args(["run", "value", &range]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let show = f.show("value", &range);
    assert_eq!(show["summary"]["samples"], 10, "{show}");
    let listed: usize = show["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["values"].as_array().unwrap().len())
        .sum();
    assert_eq!(listed, 10, "each run listed once: {show}");
    assert_eq!(show["samples"].as_array().unwrap().len(), 10, "{show}");
    assert!(
        show["commits"][9]["same_build_as"].is_string() && show["commits"][9]["median"].is_number(),
        "a commit of an identical build still shows its value: {show}"
    );
    // Two builds are two points, not ten: no trend from copies.
    let trend = &show["summary"]["trend"];
    assert!(
        trend.is_null() || trend["p_value"].as_f64().unwrap() >= 0.05,
        "{trend}"
    );
    let text = f.cmd().args(["show", "value", &range]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    // The old end is shown first (not measured here): 10 of the 11 commits shown.
    assert!(text.contains("10 samples over 10 of 11 commits"), "{text}");
    // `detect` weighs two builds of five runs each, as a test over those ten runs would: the
    // rank test's floor for 5 vs 5, or Welch's t test on them when they are cleanly apart
    // (few runs), never the p of fifty runs a side.
    let v = f.json(&["detect", "value", &range, "--format", "json"]);
    let runs = |i: usize| -> Vec<f64> {
        show["commits"][i]["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap().ln())
            .collect()
    };
    let (old, new) = (runs(0), runs(5));
    assert_eq!((old.len(), new.len()), (5, 5), "{show}");
    let welch = perfbisect::stats::welch_t(&old, &new).unwrap().p_value;
    for cp in v["change_points"].as_array().unwrap() {
        assert_eq!(cp["commit"], f.ids[6], "{v}");
        let p = cp["p_value"].as_f64().unwrap();
        assert!(
            p >= (0.5 / 252.0f64).min(welch) * 0.999,
            "{v} (Welch on 5 vs 5: {welch})"
        );
    }
}

/// As on xxHash: the stale builds end before the newest commit (a later commit touches the
/// source, so make rebuilds it), so the newest build is right and only the step gives it away.
#[test]
fn run_then_detect_is_right_when_the_stale_builds_end_before_the_newest() {
    if !have_tool("make", "the stale-build tests") {
        return;
    }
    let program = |comment: &str| {
        format!("#include <stdio.h>\n#include \"conf.h\"\n/* {comment} */\nint main(void) {{ printf(\"value: %d\\n\", VALUE); return 0; }}\n")
    };
    let mut commits: Vec<FilesCommit<'_>> = vec![(
        "Program",
        vec![
            ("app.c", program("first")),
            ("conf.h", "#define VALUE 100\n".to_string()),
            (
                "Makefile",
                "app: app.o\n\tcc -o app app.o\napp.o: app.c\n\tcc -c app.c\n".to_string(),
            ),
        ],
    )];
    for i in 2..=10 {
        let files = match i {
            4 => vec![("conf.h", "#define VALUE 120\n".to_string())],
            7 => vec![("app.c", program("second"))],
            _ => vec![("NOTES", format!("{i}\n"))],
        };
        commits.push((Box::leak(format!("Commit {i}").into_boxed_str()), files));
    }
    let f = Fixture::with_files(
        &commits,
        r#"
[build]
command = "make -s"
artifacts = ["app"]

[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9]+)" }
deterministic = true
"#,
    );
    let out = f
        .cmd()
        .args(["run", "value", &f.range(), "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("from a pristine build"), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.trim().lines().count(), 1, "one summary: {text}");
    // That summary, printed by the second pass, is of both: the first pass's rebuilds (of
    // each worktree's newest build, then of the step's) are in it.
    let s: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert!(s["pristine_checks"].as_u64().unwrap() >= 2, "{s}");
    let m = medians(&f.show("value", &f.range()));
    // The range is commits 2..=10; the header changed in commit 4.
    assert_eq!(m[..2], [Some(100.0); 2], "{m:?}");
    assert_eq!(m[2..], [Some(120.0); 7], "{m:?}");
    let v = f.json(&["detect", "value", &f.range(), "--format", "json"]);
    let cps = v["change_points"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{v}");
    assert_eq!(cps[0]["commit"], f.ids[3], "{v}");
}
