//! Why the culprit moved: `find` profiles the parent and the culprit under Cachegrind and
//! names the function whose cost changed.

use crate::common;

use common::*;

fn program() -> String {
    r#"#include <stdio.h>
#include "params.h"
static volatile unsigned long sink;
__attribute__((noinline)) static void parse_input(void) { for (unsigned long i = 0; i < PARSE; i++) sink += i; }
__attribute__((noinline)) static void hash_block(void) { for (unsigned long i = 0; i < HASH; i++) sink ^= i * 31; }
__attribute__((noinline)) static void emit_output(void) { for (unsigned long i = 0; i < EMIT; i++) sink += i >> 1; }
int main(void) { parse_input(); hash_block(); emit_output(); printf("done %lu\n", (unsigned long)sink); return 0; }
"#
    .to_string()
}

fn params(hash: u32) -> String {
    format!("#define PARSE 300000\n#define HASH {hash}\n#define EMIT 100000\n")
}

#[test]
fn find_names_the_function_that_does_more_work() {
    if !have_tool("valgrind", "the profile of the culprit") {
        return;
    }
    let mut commits: Vec<FilesCommit<'_>> = vec![(
        "Program",
        vec![("app.c", program()), ("params.h", params(200_000))],
    )];
    for i in 2..=12 {
        let files = if i == 8 {
            // hash_block does 20 % more work.
            vec![("params.h", params(240_000))]
        } else {
            vec![("NOTES", format!("{i}\n"))]
        };
        commits.push((Box::leak(format!("Commit {i}").into_boxed_str()), files));
    }
    let f = Fixture::with_files(
        &commits,
        r#"
[build]
command = "cc -O1 -g -o app app.c"
artifacts = ["app"]

[measure]
counter = "cachegrind"

[tests.work]
command = "./app"
metric = "instructions"
"#,
    );
    let out = f
        .cmd()
        .args(["find", "work", &f.range(), "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["culprit"]["commit"], f.ids[7], "{v}");
    let why = &v["why"];
    let first = &why["changes"][0];
    assert_eq!(first["function"], "hash_block", "{why}");
    assert!(first["file"].as_str().unwrap().ends_with("app.c"), "{why}");
    let (before, after) = (
        first["before"].as_f64().unwrap(),
        first["after"].as_f64().unwrap(),
    );
    let planted = (after - before) / before;
    assert!(
        (0.15..0.25).contains(&planted),
        "about +20 %: {planted} {why}"
    );
    let own = first["pct_of_function"].as_f64().unwrap();
    assert!((15.0..25.0).contains(&own), "the report says it: {why}");
    let explained = why["explained"].as_f64().unwrap();
    assert!(explained > 0.8, "most of the step: {why}");
    for p in ["parent_profile", "culprit_profile"] {
        let dir = std::path::PathBuf::from(why[p].as_str().unwrap());
        assert!(
            std::fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("cg.")),
            "the profile is kept in the cache: {}",
            dir.display()
        );
    }

    // `detect` puts the step on the culprit too, although the culprit's runs were those of
    // an identical build probed later (exact counts: a value shown is a value known).
    let d = f.json(&["detect", "work", &f.range(), "--format", "json"]);
    assert_eq!(d["change_points"][0]["commit"], f.ids[7], "{d}");

    // The HTML site shows the kept profiles as a bar chart beside the change point.
    let site = f.dir.path().join("site");
    let out = f
        .cmd()
        .args(["report", "all", "--format", "html", "--out"])
        .arg(&site)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(site.join("work.html")).unwrap();
    assert!(
        page.contains("class=\"card why\"") && page.contains("<code>hash_block</code>"),
        "{page}"
    );

    // Text and Markdown say it too; --no-why leaves it out.
    let text = f.cmd().args(["find", "work", &f.range()]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("why: the functions whose cost changed most"),
        "{text}"
    );
    assert!(text.contains("hash_block"), "{text}");
    let md = f
        .cmd()
        .args(["find", "work", &f.range(), "--format", "md"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("| `hash_block` |"), "{md}");
    let none = f
        .cmd()
        .args(["find", "work", &f.range(), "--no-why", "--format", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&none.stdout).unwrap();
    assert!(v.get("why").is_none(), "{v}");

    // `step --why` on a new-like HEAD (as `git bisect run` leaves it) says it on stderr.
    f.git(&["checkout", "-q", &f.ids[9]]);
    let out = f
        .cmd()
        .args(["step", "work", "--old", &f.ids[0], "--why"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("why: the functions") && err.contains("hash_block"),
        "{err}"
    );
}

/// Two culprits, two answers: each is profiled against its own parent and shown in its own
/// section (text, JSON `culprits[i].why`; `why` stays the first's).
#[test]
fn find_profiles_every_culprit() {
    if !have_tool("valgrind", "the profiles of the culprits") {
        return;
    }
    let params2 = |hash: u32, emit: u32| {
        format!("#define PARSE 300000\n#define HASH {hash}\n#define EMIT {emit}\n")
    };
    let mut commits: Vec<FilesCommit<'_>> = vec![(
        "Program",
        vec![
            ("app.c", program()),
            ("params.h", params2(200_000, 100_000)),
        ],
    )];
    for i in 2..=8 {
        let files = match i {
            // hash_block does 30 % more work, then emit_output 60 % more.
            3 => vec![("params.h", params2(260_000, 100_000))],
            6 => vec![("params.h", params2(260_000, 160_000))],
            _ => vec![("NOTES", format!("{i}\n"))],
        };
        commits.push((Box::leak(format!("Commit {i}").into_boxed_str()), files));
    }
    let f = Fixture::with_files(
        &commits,
        r#"
[build]
command = "cc -O1 -g -o app app.c"
artifacts = ["app"]

[measure]
counter = "cachegrind"

[tests.work]
command = "./app"
metric = "instructions"
"#,
    );
    let v = f.json(&["find", "work", &f.range(), "--format", "json"]);
    let culprits = v["culprits"].as_array().unwrap();
    assert_eq!(culprits.len(), 2, "{v}");
    let top = |c: &serde_json::Value| c["why"]["changes"][0]["function"].clone();
    for c in culprits {
        let expected = if c["commit"] == f.ids[2] {
            "hash_block"
        } else {
            assert_eq!(c["commit"], f.ids[5], "{v}");
            "emit_output"
        };
        assert_eq!(top(c), expected, "each culprit's own profile: {c}");
        assert_eq!(
            c["why"]["parent"], c["parent"],
            "against its own parent: {c}"
        );
    }
    assert_eq!(
        v["why"], culprits[0]["why"],
        "`why` is the first culprit's: {v}"
    );
    let out = f.cmd().args(["find", "work", &f.range()]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let (first, second) = text.split_once("culprit 2:").unwrap();
    assert_eq!(first.matches("why: the functions").count(), 1, "{text}");
    assert_eq!(second.matches("why: the functions").count(), 1, "{text}");
}

#[test]
fn compare_profiles_two_commits_that_differ() {
    if !have_tool("valgrind", "the profile of the culprit") {
        return;
    }
    let f = Fixture::with_files(
        &[
            (
                "Program",
                vec![("app.c", program()), ("params.h", params(200_000))],
            ),
            ("More hashing", vec![("params.h", params(260_000))]),
        ],
        r#"
[build]
command = "cc -O1 -g -o app app.c"
artifacts = ["app"]

[tests.work]
command = "./app"
metric = "instructions"
"#,
    );
    let v = f.json(&["compare", "work", &f.ids[0], &f.ids[1], "--format", "json"]);
    assert_eq!(v["differs"], true, "{v}");
    assert_eq!(v["why"]["changes"][0]["function"], "hash_block", "{v}");
    let v = f.json(&[
        "compare", "work", &f.ids[0], &f.ids[1], "--format", "json", "--no-why",
    ]);
    assert!(v.get("why").is_none(), "{v}");
}
