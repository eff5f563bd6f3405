//! Failures that used to stay silent, and messages that name what is wrong and what was meant:
//! `run` with nothing buildable, `compare` on a side whose test never gives its metric, typos
//! of subcommands, tests, keys and revisions, normalised paths, and stale samples.

use crate::common;

use std::path::Path;

use common::Fixture;

const VALUE: &str = r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
repeats = 3
"#;

fn fixture(n: usize, config: &str) -> Fixture {
    Fixture::new(&common::specs(n, |_, _| {}), config)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Stored samples of `test`, stale or not.
fn stored(cache: &Path, test: &str) -> usize {
    perfbisect::store::Store::new(cache.join("results"))
        .load(test)
        .unwrap()
        .samples
        .len()
}

#[test]
fn run_and_build_only_fail_with_the_first_build_failure_when_nothing_builds() {
    let config = format!(
        "[build]\ncommand = \"echo compiling; echo 'app.c:7: error: planted failure' >&2; exit 3\"\n\
         artifacts = [\"app\"]\n{VALUE}"
    );
    let f = fixture(3, &config);
    // `--build-only` too: its builds are its product, and none came.
    for (format, only) in [
        ("text", false),
        ("json", false),
        ("json", true),
        ("text", true),
    ] {
        let mut cmd = f.cmd();
        cmd.args(["run", "value", &f.range(), "--format", format]);
        if only {
            cmd.arg("--build-only");
        }
        let out = cmd.output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{format}: {err}");
        assert!(err.contains("could be built"), "{format}: {err}");
        assert!(
            err.contains("app.c:7: error: planted failure"),
            "{format}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        // The summary is still printed, and names both failed builds.
        let out = text(&out.stdout);
        if format == "json" {
            let s: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
            assert_eq!(s["failed_builds"].as_array().unwrap().len(), 2, "{s}");
        } else {
            assert!(out.contains("2 builds failed"), "{out}");
        }
    }
    // One commit that builds is enough for success.
    let good = Fixture::new(
        &common::specs(3, |i, c| c.broken = i == 3),
        &common::with_build(VALUE),
    );
    for only in [true, false] {
        let mut cmd = good.cmd();
        cmd.args(["run", "value", &good.range()]);
        if only {
            cmd.arg("--build-only");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
}

/// A build recipe that builds nothing is a failure (exit 1) with the build's error in every
/// command that builds, not an inconclusive verdict (exit 3, for runs that could not decide);
/// `step` answers `git bisect run` with a skip (125), as for any commit that does not build.
#[test]
fn every_command_fails_with_the_build_error_when_nothing_builds() {
    let config = format!(
        "[build]\ncommand = \"echo compiling; echo 'app.c:7: error: planted failure' >&2; exit 3\"\n\
         artifacts = [\"app\"]\n{VALUE}"
    );
    let f = fixture(3, &config);
    let range = f.range();
    let (a, b) = (f.ids[1].as_str(), f.ids[2].as_str());
    let cases: [&[&str]; 6] = [
        &["find", "value", &range],
        &["find", "value", &range, "--format", "json"],
        &["value", &range],
        &["report", "value", &range, "--format", "md"],
        &["compare", "value", a, b],
        &["triage", "value", &range],
    ];
    for args in cases {
        let out = f.cmd().args(args).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        // ("could be built" from `triage`, whose first step is `run`'s of the newest commit.)
        assert!(err.contains(" be built"), "{args:?}: {err}");
        assert!(
            err.contains("app.c:7: error: planted failure"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("inconclusive"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    let out = f
        .cmd()
        .args(["step", "value", "--old", &f.ids[0]])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(err.contains("does not build"), "{err}");

    // Only the old end does not build: nothing to compare the range with, the same failure.
    let old_broken = Fixture::new(
        &common::specs(3, |i, c| c.broken = i == 1),
        &common::with_build(VALUE),
    );
    let out = old_broken
        .cmd()
        .args(["find", "value", &old_broken.range()])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the old end of") && err.contains("could not be built"),
        "{err}"
    );
}

#[test]
fn compare_says_why_a_side_fails_and_stops_it() {
    let f = fixture(3, "");
    let b = f.ids[2].clone();
    let config = common::with_build(&format!(
        r#"
[tests.value]
command = "if [ \"$PERFBISECT_COMMIT\" = {b} ]; then echo 'no number here'; else ./app; fi"
metric = {{ regex = "^value: ([0-9.]+)" }}
repeats = 2
"#
    ));
    std::fs::write(&f.config, config).unwrap();
    let out = f
        .cmd()
        .args([
            "compare", "value", &f.ids[1], &b, "--runs", "6", "--format", "json",
        ])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // A ran all its runs; B stopped after `repeats` failures in a row.
    assert_eq!(c["a"]["n"], 6, "{c}");
    assert_eq!(c["b"]["n"], 0, "{c}");
    assert_eq!(c["b"]["failed"], 2, "{c}");
    assert_eq!(c["b"]["stopped_after"], 2, "{c}");
    assert_eq!(stored(&f.cache, "value"), 8);
    // Said once, after the first failure, with the output's tail.
    let why = "no line of stdout matched the metric regex `^value: ([0-9.]+)`";
    assert_eq!(err.matches(why).count(), 1, "{err}");
    assert!(err.contains("no number here"), "{err}");
    assert!(err.contains("2 runs in a row"), "{err}");
    // What was measured of the failed runs is shown; the metric is not made up.
    assert!(c["b"]["metric"].is_null(), "{c}");
    assert!(c["b"]["wall"]["median"].as_f64().unwrap() > 0.0, "{c}");
    // Every run goes through the launcher: its peak memory is its own, failed runs' too.
    assert!(c["b"]["max_rss"]["median"].as_f64().unwrap() > 0.0, "{c}");
    assert_eq!(c["b"]["times_of_failed_runs"], true, "{c}");
    assert_eq!(c["b"]["first_failure"].as_str().unwrap(), why, "{c}");

    let out = f
        .cmd()
        .args(["compare", "value", &f.ids[1], &b, "--runs", "3"])
        .output()
        .unwrap();
    let o = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(o.contains(&format!("B: {why}")), "{o}");
    assert!(o.contains("no comparison: B has no successful run"), "{o}");
    let wall = o.lines().find(|l| l.starts_with("wall")).unwrap();
    assert!(!wall.contains(" - "), "{o}");
}

#[test]
fn a_mistyped_subcommand_is_refused_with_a_suggestion() {
    let f = fixture(2, &common::with_build(VALUE));
    let out = f.cmd().args(["fnd", "value", &f.range()]).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("'fnd'"), "{err}");
    assert!(err.contains("a similar subcommand exists: 'find'"), "{err}");
    assert!(!err.contains("unknown test"), "{err}");
    // A test name is still `find` without the word.
    let out = f.cmd().args(["value", &f.range()]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn unknown_tests_and_keys_suggest_the_closest() {
    let f = fixture(2, &common::with_build(VALUE));
    for args in [
        &["show", "valeu"][..],
        &["run", "valu", "HEAD"],
        &["valeu", "HEAD~1..HEAD"],
    ] {
        let out = f.cmd().args(args).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("did you mean `value`?"), "{args:?}: {err}");
    }
    let bad = f.dir.path().join("bad.toml");
    std::fs::write(&bad, VALUE.replace("repeats", "repeat")).unwrap();
    let out = f.cmd_config(&bad).args(["show", "value"]).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("did you mean `repeats`?"), "{err}");
}

#[test]
fn unknown_revisions_are_said_in_perfbisect_words() {
    let f = fixture(3, &common::with_build(VALUE));
    f.git(&["tag", "v1.0", &f.ids[0]]);
    let cases: &[(&str, &[&str])] = &[
        (
            "v9.99",
            &["unknown revision `v9.99`", "no branch, tag or commit"],
        ),
        ("v1.1", &["did you mean `v1.0`?"]),
        ("mian", &["did you mean `main`?"]),
        ("HEAD~9", &["unknown revision `HEAD~9`", "`HEAD` exists"]),
        ("v9.99..HEAD", &["unknown revision `v9.99`"]),
    ];
    for (rev, fragments) in cases {
        let out = f.cmd().args(["log", rev]).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{rev}: {err}");
        for frag in *fragments {
            assert!(err.contains(frag), "{rev}: `{frag}` not in {err}");
        }
        assert!(!err.contains("couldn't parse"), "{rev}: {err}");
        assert!(!err.contains("input="), "{rev}: {err}");
    }
}

#[test]
fn paths_are_printed_without_dot_dot() {
    let f = fixture(2, &common::with_build(VALUE));
    let roundabout = f.repo.join("..").join("cache");
    let out = assert_cmd::Command::cargo_bin("perfbisect")
        .unwrap()
        .arg("--repo")
        .arg(&f.repo)
        .arg("--config")
        .arg(&f.config)
        .arg("--cache")
        .arg(&roundabout)
        .args(["cache", "ls"])
        .output()
        .unwrap();
    let o = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let clean = std::fs::canonicalize(f.dir.path()).unwrap().join("cache");
    assert!(
        o.starts_with(&format!("{} (0 cached builds", clean.display())),
        "{o}"
    );
    assert!(!o.contains(".."), "{o}");
}

#[test]
fn stale_samples_are_noted_once_and_pruned() {
    let mut f = fixture(3, &common::with_build(VALUE));
    let range = f.range();
    f.run_json("value", &range, &[]);
    assert_eq!(stored(&f.cache, "value"), 6);
    // A new definition of the test: the 6 samples are stale.
    let changed = f.dir.path().join("changed.toml");
    std::fs::write(
        &changed,
        common::with_build(&VALUE.replace("\"./app\"", "\"./app && true\"")),
    )
    .unwrap();
    f.config = changed;
    let note = "6 stored samples of `value` come from an earlier test or build definition";
    let run = |f: &Fixture| {
        let out = f.cmd().args(["run", "value", &range]).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let first = run(&f);
    assert!(first.contains(note), "{first}");
    assert!(first.contains("perfbisect cache prune"), "{first}");
    let second = run(&f);
    assert!(!second.contains("stored sample"), "{second}");
    assert_eq!(stored(&f.cache, "value"), 12);

    let out = f.cmd().args(["cache", "prune"]).output().unwrap();
    let o = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(o.contains("removed 6 stale samples"), "{o}");
    assert_eq!(stored(&f.cache, "value"), 6);
    // The current samples are all there, and nothing is stale any more.
    let show = f.show("value", &range);
    for c in show["commits"].as_array().unwrap() {
        assert_eq!(c["n"], 3, "{show}");
    }
    let again = run(&f);
    assert!(!again.contains("stored sample"), "{again}");
    let out = f.cmd().args(["cache", "prune"]).output().unwrap();
    assert!(text(&out.stdout).contains("pruned 0 stale samples"));
    assert_eq!(stored(&f.cache, "value"), 6);
}
