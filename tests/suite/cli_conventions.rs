//! Command-line conventions: completions and the manual page generated from the clap
//! definitions, the default command through clap, per-command `--format` values, NO_COLOR,
//! results on stdout and messages on stderr, and `"schema": 1` first in every JSON output.

use crate::common;

use std::process::Command;

use common::{specs, Fixture};

fn bin() -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("perfbisect"));
    c.env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE");
    c
}

#[test]
fn completions_for_every_shell_come_from_the_definitions() {
    for (shell, marker) in [
        ("bash", "complete -F _perfbisect"),
        ("zsh", "#compdef perfbisect"),
        ("fish", "complete -c perfbisect"),
        ("elvish", "edit:completion:arg-completer[perfbisect]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let out = bin().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        assert!(out.stderr.is_empty(), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(marker), "{shell}: no `{marker}`");
        for word in ["calibrate", "completions", "config", "no-descend"] {
            assert!(text.contains(word), "{shell}: no `{word}`");
        }
    }
    // In bash, as a user would: source it, then complete `--format ` after two commands.
    if common::have_tool("bash", "bash") {
        let script = format!(
            "source <('{}' completions bash) && complete -p perfbisect && \
             for c in show find; do COMP_WORDS=(perfbisect $c --format ''); COMP_CWORD=3; \
             _perfbisect perfbisect '' --format; echo \"$c: ${{COMPREPLY[*]}}\"; done",
            assert_cmd::cargo::cargo_bin("perfbisect").display()
        );
        let out = Command::new("bash").args(["-c", &script]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("show: text json csv"), "{text}");
        assert!(text.contains("find: text json md"), "{text}");
    }
    let out = bin().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid value 'tcsh'") && err.contains("powershell"),
        "{err}"
    );
}

#[test]
fn the_manual_page_is_roff_that_groff_renders_cleanly() {
    let out = bin().arg("man").output().unwrap();
    assert!(out.status.success());
    let roff = String::from_utf8(out.stdout).unwrap();
    assert!(roff.contains(".TH perfbisect 1"), "{roff}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS"] {
        assert!(roff.contains(section), "no {section}");
    }
    assert!(
        roff.contains("perfbisect\\-config(1)"),
        "subcommands are listed"
    );
    if common::have_tool("groff", "groff renders the manual page") {
        use std::io::Write;
        let mut g = Command::new("groff")
            .args(["-man", "-Tascii", "-ww"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        g.stdin.take().unwrap().write_all(roff.as_bytes()).unwrap();
        let r = g.wait_with_output().unwrap();
        assert!(r.status.success());
        assert!(
            r.stderr.is_empty(),
            "groff warns: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        let text = String::from_utf8_lossy(&r.stdout).replace(['\u{8}'], "");
        // Justified text may stretch the space between words.
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            text.contains("Exit status"),
            "the exit codes are in the page"
        );
    }
    // One page per command in a directory.
    let d = tempfile::tempdir().unwrap();
    let out = bin().args(["man", "--dir"]).arg(d.path()).output().unwrap();
    assert!(out.status.success());
    let listed = String::from_utf8_lossy(&out.stdout);
    for page in [
        "perfbisect.1",
        "perfbisect-find.1",
        "perfbisect-config-check.1",
    ] {
        assert!(d.path().join(page).is_file(), "{page}");
        assert!(listed.contains(page), "{listed}");
    }
    let find = std::fs::read_to_string(d.path().join("perfbisect-find.1")).unwrap();
    assert!(find.contains("no\\-descend"), "{find}");
    // And the guide, a page of section 7 per page, which groff renders as man does in a
    // UTF-8 terminal (the pages hold arrows and sparklines), without a warning.
    for p in perfbisect::guide::PAGES {
        let page = format!("perfbisect-guide-{}.7", p.name);
        assert!(listed.contains(&page), "{listed}");
        if !common::have_tool("groff", "groff renders the guide's pages") {
            continue;
        }
        let r = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww"])
            .arg(d.path().join(&page))
            .output()
            .unwrap();
        assert!(r.status.success(), "{page}");
        assert!(
            r.stderr.is_empty(),
            "groff warns about {page}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        let text = words(&String::from_utf8_lossy(&r.stdout));
        let title = words(p.title().split('`').next().unwrap());
        assert!(text.contains(&title), "{page}: no `{title}` in {text}");
    }
}

/// Seven commits; the printed value steps up 10 % at the fifth.
fn small() -> Fixture {
    Fixture::with_demo_config(&specs(7, |i, c| {
        c.metric = if i >= 5 { 1100.0 } else { 1000.0 };
    }))
}

#[test]
fn the_default_command_is_find_through_clap() {
    let f = small();
    let range = f.range();
    // Global options before the test name; find's own options after the range.
    let out = f
        .cmd()
        .args(["value", &range, "--format", "json", "-j", "2"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "culprit", "{v}");
    assert_eq!(v["culprit"]["commit"], f.ids[4].as_str(), "{v}");

    // A mistyped subcommand, with or without arguments: clap's suggestion, exit 2.
    for args in [
        &["fnd", "value", &range][..],
        &["fnd", &range],
        &["shwo", "value"],
    ] {
        let out = f.cmd().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("unrecognized subcommand"), "{err}");
        assert!(err.contains("a similar subcommand exists"), "{err}");
    }
    // A test name without a range, and a word too many: usage errors.
    let out = f.cmd().args(["value"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("<RANGE>"));
    let out = f.cmd().args(["value", &range, "extra"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'extra'"));
    // An unknown test: perfbisect's own usage error, naming the tests there are.
    let out = f.cmd().args(["valeu", &range]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown test `valeu`; did you mean `value`?"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn colour_only_where_wanted_and_never_with_no_color() {
    // clap's errors and perfbisect's own, forced to colour (stderr is a pipe here) ...
    let typo = ["fnd", "x", "A..B"];
    let own = ["--config", "/nonexistent/perfbisect.toml", "show", "x"];
    for args in [&typo[..], &own[..]] {
        let forced = bin()
            .env("CLICOLOR_FORCE", "1")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(forced.status.code(), Some(2));
        assert!(
            String::from_utf8_lossy(&forced.stderr).contains("\u{1b}["),
            "{args:?}: no colour even when forced"
        );
        // ... and NO_COLOR wins over that.
        let plain = bin()
            .env("CLICOLOR_FORCE", "1")
            .env("NO_COLOR", "1")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(plain.status.code(), Some(2));
        let err = String::from_utf8_lossy(&plain.stderr);
        assert!(
            !err.contains('\u{1b}'),
            "{args:?}: colour despite NO_COLOR: {err:?}"
        );
        assert!(err.contains("error:"), "{err}");
        // Not a terminal, nothing forced: plain.
        let piped = bin().args(args).output().unwrap();
        assert!(!String::from_utf8_lossy(&piped.stderr).contains('\u{1b}'));
    }
}

/// The JSON on stdout, with `"schema": 1` as its first key.
fn schema_first(out: &std::process::Output, what: &str) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let first = regex::Regex::new(r#"^\{\s*"schema":\s*1,"#).unwrap();
    let text = text.trim();
    // `run` prints one object, on its last line.
    let json = if what == "run" {
        text.lines().last().unwrap_or("")
    } else {
        text
    };
    assert!(first.is_match(json), "{what}: {json}");
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    // Nothing but the object goes to stdout, and no JSON to stderr.
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("\"schema\""),
        "{what}"
    );
    v
}

#[test]
fn every_json_output_carries_schema_1() {
    let f = small();
    let range = f.range();
    let run = |args: &[&str]| f.cmd().args(args).output().unwrap();
    schema_first(&run(&["run", "value", &range, "--format", "json"]), "run");
    schema_first(&run(&["find", "value", &range, "--format", "json"]), "find");
    schema_first(&run(&["show", "value", &range, "--format", "json"]), "show");
    schema_first(
        &run(&["detect", "value", &range, "--format", "json"]),
        "detect",
    );
    let csv = f.dir.path().join("series.csv");
    std::fs::write(&csv, "index,value\n0,1\n1,1\n2,1\n3,5\n4,5\n5,5\n").unwrap();
    schema_first(
        &run(&[
            "detect",
            "--input",
            csv.to_str().unwrap(),
            "--format",
            "json",
        ]),
        "detect --input",
    );
    let (a, b) = (f.ids[3].as_str(), f.ids[4].as_str());
    schema_first(
        &run(&["compare", "value", a, b, "--runs", "3", "--format", "json"]),
        "compare",
    );
    schema_first(
        &run(&["calibrate", "value", a, "--runs", "5", "--format", "json"]),
        "calibrate",
    );
    let ls = schema_first(&run(&["cache", "ls", "--format", "json"]), "cache ls");
    assert!(!ls["builds"].as_array().unwrap().is_empty(), "{ls}");
    // Formats a command does not write are refused by clap, and --help lists only its own.
    let out = run(&["show", "value", "--format", "md"]);
    assert_eq!(out.status.code(), Some(2));
    let help = String::from_utf8_lossy(&run(&["show", "--help"]).stdout).into_owned();
    assert!(
        help.contains("[possible values: text, json, csv, otava]"),
        "{help}"
    );
}
