//! The bad-input catalogue: every case exits 2 with a message naming what is wrong.

use crate::common;

use std::path::Path;

const GOOD: &str = r#"
[build]
command = "cc -o app app.c -lm"
artifacts = ["app"]

[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
"#;

/// (config text, expected fragments of the message); each is run as `run value HEAD`.
const CONFIGS: &[(&str, &[&str])] = &[
    (
        "[build]\ncommand = \"make\"\nartifact = [\"a\"]\n",
        &[":3:", "artifact"],
    ),
    ("[test.value]\ncommand = \"x\"\n", &[":1:", "test"]),
    (
        "[tests.value]\ncommand = \"x\"\nmetric = { regex = \"size: [0-9]+\" }\n",
        &[":3:", "tests.value.metric.regex", "capture group"],
    ),
    (
        "[tests.value]\ncommand = \"x\"\nmetric = { regex = \"(\" }\n",
        &[":3:", "invalid regex"],
    ),
    (
        "[tests.value]\ncommand = \"x\"\nmetric = \"cycles\"\n",
        &[":3:", "tests.value.metric", "cycles"],
    ),
    (
        "[tests.value]\ncommand = \"x\"\nmetric = { json = \"a/b\" }\n",
        &[":3:", "JSON pointer"],
    ),
    (
        "[tests.value]\ncommand = \"x\"\nmetric = { xpath = \"/a\" }\n",
        &[":3:", "xpath"],
    ),
    (
        "[tests.value]\ncommand = \"x\"\nmetric = 5\n",
        &[":3:", "tests.value.metric"],
    ),
    (
        "[tests.value]\ncommand = \"x\"\nrepeats = 0\n",
        &[":3:", "tests.value.repeats", "out of range"],
    ),
    (
        "[tests.value]\ncommand = \"x\"\nrepeats = \"five\"\n",
        &[":3:", "tests.value.repeats"],
    ),
    (
        "[tests.value]\ncommand = \"x\"\nwarmup = -1\n",
        &[":3:", "tests.value.warmup"],
    ),
    (
        "[tests.value]\ncommand = \"x\"\nthreshold = \"2 percent\"\n",
        &[":3:", "tests.value.threshold"],
    ),
    (
        "[tests.value]\ncommand = \"x\"\nthreshold = -1\n",
        &[":3:", "tests.value.threshold"],
    ),
    (
        "[tests.value]\ncommand = \"x\"\ndirection = \"up\"\n",
        &[":3:", "tests.value.direction", "up"],
    ),
    (
        "[tests.value]\ncommand = \"x\"\ntimeout = 0\n",
        &[":3:", "tests.value.timeout"],
    ),
    (
        "[tests.value]\ncommand = \"x\"\ntimeout = \"soon\"\n",
        &[":3:", "tests.value.timeout", "soon"],
    ),
    (
        "[build]\ncommand = \"make\"\ntimeout = \"1 fortnight\"\n",
        &[":3:", "build.timeout"],
    ),
    (
        "[tests.\"my value\"]\ncommand = \"x\"\n",
        &[":1:", "my value"],
    ),
    ("[tests.value]\nunit = \"ms\"\n", &[":1:", "command"]),
    (
        "[tests.value]\ncommand = \"\"\n",
        &[":2:", "tests.value.command", "empty"],
    ),
    ("[tests.value\ncommand = \"x\"\n", &[":1:"]),
    (
        "[build]\ncommand = \"make\"\nartifacts = [\"../outside\"]\n",
        &[":3:", "build.artifacts", "../outside"],
    ),
    ("[build]\nenv = { CC = \"gcc\" }\n", &[":1:", "command"]),
    (
        "[tests.value]\ncommand = \"x\"\nalpha = 2.0\n",
        &[":3:", "tests.value.alpha"],
    ),
    (
        "[tests.value]\ncommand = \"x\"\nrepeats = 10\nmax_repeats = 5\n",
        &["tests.value.max_repeats"],
    ),
    (
        "[tests.value]\ncommand = \"x\"\nstake = \"big\"\n",
        &[":3:", "tests.value.stake"],
    ),
];

fn fixture() -> common::Fixture {
    common::Fixture::new(&common::specs(3, |_, _| {}), GOOD)
}

fn expect_usage(out: std::process::Output, fragments: &[&str], what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{what}: exit {:?}, stderr: {err}",
        out.status.code()
    );
    for f in fragments {
        assert!(err.contains(f), "{what}: `{f}` not in: {err}");
    }
    assert!(!err.contains("panicked"), "{what}: {err}");
}

#[test]
fn bad_configs_name_key_and_line() {
    let f = fixture();
    for (i, (text, fragments)) in CONFIGS.iter().enumerate() {
        let path = f.dir.path().join(format!("bad{i}.toml"));
        std::fs::write(&path, text).unwrap();
        let out = f
            .cmd_config(&path)
            .args(["run", "value", "HEAD"])
            .output()
            .unwrap();
        let mut all = fragments.to_vec();
        all.push(path.file_name().unwrap().to_str().unwrap());
        expect_usage(out, &all, &format!("config {i}: {text}"));
    }
}

/// (arguments after the global options, expected fragments)
const ARGS: &[(&[&str], &[&str])] = &[
    (&["run", "value", "nope"], &["unknown revision `nope`"]),
    (
        &["run", "value", "nope..HEAD"],
        &["unknown revision `nope`"],
    ),
    (
        &["run", "value", "HEAD..nope"],
        &["unknown revision `nope`"],
    ),
    (
        &["run", "value", "HEAD~1...HEAD"],
        &["HEAD~1...HEAD", "symmetric"],
    ),
    (
        &["run", "value", "HEAD..HEAD~2"],
        &["HEAD..HEAD~2", "empty"],
    ),
    (&["run", "value", "HEAD~9"], &["HEAD~9"]),
    (
        &["run", "nosuch", "HEAD"],
        &["unknown test `nosuch`", "value"],
    ),
    (&["run", "value,,value", "HEAD"], &["empty test name"]),
    (
        &["run", "value", "HEAD", "--shard", "0/2"],
        &["--shard `0/2`"],
    ),
    (
        &["run", "value", "HEAD", "--shard", "3/2"],
        &["--shard `3/2`"],
    ),
    (&["run", "value", "HEAD", "--shard", "x"], &["--shard `x`"]),
    (&["run", "value", "HEAD", "--jobs", "0"], &["--jobs"]),
    (&["run", "value", "HEAD", "--format", "csv"], &["csv"]),
    (&["run", "value", "HEAD", "--format", "xml"], &["xml"]),
    (&["run", "value", "HEAD", "--frobnicate"], &["--frobnicate"]),
    (&["run", "value", "HEAD", "--gaps", "--again"], &["--again"]),
    (&["show", "nosuch"], &["unknown test `nosuch`"]),
    (&["show", "value", "HEAD", "--format", "md"], &["md"]),
    (
        &["show", "value", "v9.9..HEAD"],
        &["unknown revision `v9.9`"],
    ),
    (&["value"], &["RANGE"]),
    (&["log", "nope"], &["unknown revision `nope`"]),
    (&["run"], &["TESTS"]),
];

#[test]
fn bad_arguments_and_revisions_are_named() {
    let f = fixture();
    for (args, fragments) in ARGS {
        let out = f.cmd().args(*args).output().unwrap();
        expect_usage(out, fragments, &format!("{args:?}"));
    }
}

#[test]
fn missing_config_and_repository_are_usage_errors() {
    let f = fixture();
    let out = f
        .cmd_config(Path::new("/nonexistent/perfbisect.toml"))
        .args(["run", "value", "HEAD"])
        .output()
        .unwrap();
    expect_usage(out, &["/nonexistent/perfbisect.toml"], "missing config");
    let empty = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::cargo_bin("perfbisect")
        .unwrap()
        .args(["--repo"])
        .arg(empty.path())
        .args(["run", "value", "HEAD"])
        .current_dir(empty.path())
        .output()
        .unwrap();
    expect_usage(out, &["not in a git repository"], "no repository");
    assert!(Path::new(&f.repo).exists());
}

#[test]
fn missing_default_config_is_named_once_when_both_defaults_are_one_file() {
    let f = fixture();
    // Started in the repository's top directory: ./perfbisect.toml and REPO/perfbisect.toml
    // are the same file, and the message says so once.
    let out = assert_cmd::Command::cargo_bin("perfbisect")
        .unwrap()
        .arg("--cache")
        .arg(&f.cache)
        .args(["run", "value", "HEAD"])
        .current_dir(&f.repo)
        .output()
        .unwrap();
    expect_usage(out.clone(), &["no config", "--config"], "no config in repo");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("perfbisect.toml").count(), 1, "{err}");
    // Started elsewhere: both places are named.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::cargo_bin("perfbisect")
        .unwrap()
        .arg("--repo")
        .arg(&f.repo)
        .arg("--cache")
        .arg(&f.cache)
        .args(["run", "value", "HEAD"])
        .current_dir(elsewhere.path())
        .output()
        .unwrap();
    expect_usage(
        out,
        &["./perfbisect.toml does not exist and neither does"],
        "no config elsewhere",
    );
}
