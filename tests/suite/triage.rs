//! Issue 31, the nightly perf sheriff: `triage` turns cron rounds into confirmed,
//! deduplicated findings, one per culprit commit, posted once through a `gh` stand-in that
//! records its calls (tests/fixtures/gh-stand-in), whatever fails or is killed on the way.

use crate::common;

use std::path::{Path, PathBuf};

use common::{specs, with_build, Fixture};

const CONFIG: &str = r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "2%"
repeats = 3

[tests.value2]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "3%"
repeats = 3

[tests.rss]
command = "./app"
metric = "max-rss"
threshold = "10%"
repeats = 3
"#;

/// 34 commits: `value` and `value2` step +8 % at commit 14 and again at 32; `rss` steps up at
/// commit 22 and back down at 32 (a fix).
fn fixture() -> Fixture {
    Fixture::new(
        &specs(34, |i, c| {
            c.metric = match i {
                ..=13 => 1000.0,
                14..=31 => 1080.0,
                _ => 1170.0,
            };
            c.megabytes = if (22..32).contains(&i) { 8 } else { 1 };
            c.work = 0;
        }),
        &with_build(CONFIG),
    )
}

/// A folder holding `gh` (the stand-in) and the stand-in's state.
struct Gh {
    bin: PathBuf,
    state: PathBuf,
}

impl Gh {
    fn new(f: &Fixture) -> Gh {
        let bin = f.dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let stand_in = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gh-stand-in");
        std::os::unix::fs::symlink(stand_in, bin.join("gh")).unwrap();
        let state = f.dir.path().join("gh-state");
        std::fs::create_dir_all(&state).unwrap();
        Gh { bin, state }
    }

    fn path(&self) -> String {
        format!("{}:{}", self.bin.display(), std::env::var("PATH").unwrap())
    }

    /// Every issue the stand-in holds.
    fn issues(&self) -> Vec<serde_json::Value> {
        let dir = self.state.join("issues");
        let mut out: Vec<serde_json::Value> = std::fs::read_dir(&dir)
            .map(|d| {
                d.map(|e| {
                    serde_json::from_str(&std::fs::read_to_string(e.unwrap().path()).unwrap())
                        .unwrap()
                })
                .collect()
            })
            .unwrap_or_default();
        out.sort_by_key(|i| i["number"].as_u64());
        out
    }

    /// The issues whose body names `commit`.
    fn about(&self, commit: &str) -> Vec<serde_json::Value> {
        self.issues()
            .into_iter()
            .filter(|i| i["body"].as_str().unwrap().contains(commit))
            .collect()
    }
}

/// `run TESTS REV` on the cron's commits (1-based numbers): what a cron job measured.
fn cron(f: &Fixture, rounds: &[usize]) {
    for &n in rounds {
        f.run_json("value,value2,rss", &f.ids[n - 1], &[]);
    }
}

/// `triage all OLD..NEW --attach o/r --format json` with the stand-in on PATH.
fn triage(f: &Fixture, gh: &Gh, newest: usize, extra: &[&str]) -> (i32, serde_json::Value, String) {
    let range = format!("{}..{}", f.ids[0], f.ids[newest - 1]);
    let out = f
        .cmd()
        .args([
            "triage", "all", &range, "--attach", "o/r", "--format", "json",
        ])
        .args(extra)
        .env("PATH", gh.path())
        .env("GH_STATE", &gh.state)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let j = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no JSON ({e}): {err}"));
    (out.status.code().unwrap_or(-1), j, err)
}

fn finding<'a>(j: &'a serde_json::Value, commit: &str) -> &'a serde_json::Value {
    j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["commit"] == commit)
        .unwrap_or_else(|| panic!("no finding of {commit}: {j:#}"))
}

fn tests_of(x: &serde_json::Value) -> Vec<String> {
    let mut t: Vec<String> = x["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["test"].as_str().unwrap().to_string())
        .collect();
    t.sort();
    t
}

#[test]
fn a_night_of_cron_rounds_becomes_one_issue_per_culprit_posted_once_then_fixed() {
    let f = fixture();
    let gh = Gh::new(&f);
    cron(&f, &[1, 5, 9, 13, 17, 21, 25, 29]);
    let (code, j, err) = triage(&f, &gh, 30, &[]);
    assert_eq!(code, 0, "{err}");
    // Both culprits, the first with both of its tests.
    let (x14, x22) = (&f.ids[13], &f.ids[21]);
    assert_eq!(tests_of(finding(&j, x14)), ["value", "value2"], "{j:#}");
    assert_eq!(tests_of(finding(&j, x22)), ["rss"], "{j:#}");
    for c in [x14, x22] {
        assert_eq!(finding(&j, c)["state"], "posted", "{j:#}");
        assert_eq!(gh.about(c).len(), 1, "one issue for {c}");
    }
    let issue = &gh.about(x14)[0];
    let title = issue["title"].as_str().unwrap();
    assert!(
        title.starts_with("perf: value") && title.contains(&x14[..10]),
        "{title}"
    );
    assert!(
        issue["body"].as_str().unwrap().contains("value2"),
        "{issue}"
    );
    assert_eq!(issue["labels"][0], "performance");
    // One search per gap: value and value2 share their builds.
    let builds = j["builds"].as_u64().unwrap();
    assert!(builds < 20, "{j:#}");

    // Again, nothing new: nothing posted, one line; the newest commit has its numbers, so
    // nothing says it is measured.
    let (code, j2, err) = triage(&f, &gh, 30, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("measuring the newest commit"), "{err}");
    assert!(j2["posted"].as_array().unwrap().is_empty(), "{j2:#}");
    assert_eq!(j2["searches"], 0, "{j2:#}");
    assert_eq!(gh.issues().len(), 2);
    let text = f
        .cmd()
        .args(["triage", "all", &format!("{}..{}", f.ids[0], f.ids[29])])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("triage: nothing new"), "{text}");

    // The next night: commit 32 steps value and value2 again and brings rss back.
    cron(&f, &[33]);
    let (code, j3, err) = triage(&f, &gh, 34, &[]);
    assert_eq!(code, 0, "{err}");
    let x32 = &f.ids[31];
    assert_eq!(tests_of(finding(&j3, x32)), ["value", "value2"], "{j3:#}");
    assert_eq!(gh.about(x32).len(), 1, "only the new culprit is posted");
    assert_eq!(gh.issues().len(), 3);
    assert_eq!(finding(&j3, x22)["state"], "fixed", "{j3:#}");
    assert_eq!(finding(&j3, x22)["fixed_by"], x32.as_str(), "{j3:#}");
    let rss_issue = &gh.about(x22)[0];
    let comments = rss_issue["comments"].as_array().unwrap();
    assert_eq!(comments.len(), 1, "{rss_issue}");
    assert!(
        comments[0].as_str().unwrap().contains("fixed by"),
        "{rss_issue}"
    );
}

#[test]
fn a_gh_that_fails_leaves_the_finding_new_and_the_next_run_posts_it_once() {
    let f = fixture();
    let gh = Gh::new(&f);
    cron(&f, &[1, 5, 9, 13, 17, 21, 25, 29]);
    let range = format!("{}..{}", f.ids[0], f.ids[29]);
    let out = f
        .cmd()
        .args([
            "triage", "value", &range, "--attach", "o/r", "--format", "json",
        ])
        .env("PATH", gh.path())
        .env("GH_STATE", &gh.state)
        .env("GH_FAIL", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("502"), "gh's own message: {err}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(finding(&j, &f.ids[13])["state"], "new", "{j:#}");
    assert!(gh.issues().is_empty());
    // Dry run: says what it would post, posts nothing.
    let out = f
        .cmd()
        .args(["triage", "value", &range, "--attach", "o/r", "--dry-run"])
        .env("PATH", gh.path())
        .env("GH_STATE", &gh.state)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("would post created: perf: value"), "{text}");
    assert!(gh.issues().is_empty());
    // Two at once: one issue.
    let spawn = || {
        f.std_cmd()
            .args(["triage", "value", &range, "--attach", "o/r"])
            .env("PATH", gh.path())
            .env("GH_STATE", &gh.state)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (spawn(), spawn());
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    assert_eq!(gh.about(&f.ids[13]).len(), 1, "{:?}", gh.issues());
}

#[test]
fn killed_mid_post_then_run_again_posts_every_culprit_once() {
    let f = fixture();
    let gh = Gh::new(&f);
    cron(&f, &[1, 5, 9, 13, 17, 21, 25, 29]);
    let range = format!("{}..{}", f.ids[0], f.ids[29]);
    // gh answers slowly: the kill lands after an issue is created, before it is saved.
    let mut child = f
        .std_cmd()
        .args(["triage", "all", &range, "--attach", "o/r"])
        .env("PATH", gh.path())
        .env("GH_STATE", &gh.state)
        .env("GH_SLEEP", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    while gh.issues().is_empty() && std::time::Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait().unwrap();
    let (code, j, err) = triage(&f, &gh, 30, &[]);
    assert_eq!(code, 0, "{err}");
    for c in [&f.ids[13], &f.ids[21]] {
        assert_eq!(finding(&j, c)["state"], "posted", "{j:#}");
        assert_eq!(gh.about(c).len(), 1, "{c}: {:?}", gh.issues());
    }
}

#[test]
fn a_step_imported_rounds_show_but_this_machine_does_not_is_unconfirmed_never_posted() {
    let f = Fixture::new(&specs(12, |_, c| c.work = 0), &with_build(CONFIG));
    let gh = Gh::new(&f);
    // Another machine's rounds put a +10 % step at commit 7; here there is none.
    let mut csv = String::from("commit,test,value,timestamp,round\n");
    for (k, n) in [1, 3, 5, 7, 9, 11, 12].iter().enumerate() {
        for r in 0..4 {
            let v = if *n >= 7 { 1100.0 } else { 1000.0 } + r as f64;
            csv += &format!(
                "{},value,{v},{},R{k}\n",
                f.ids[n - 1],
                1_700_000_000 + 100 * k + r
            );
        }
    }
    let path = f.dir.path().join("rounds.csv");
    std::fs::write(&path, csv).unwrap();
    f.cmd().args(["import"]).arg(&path).assert().success();
    let (code, j, err) = triage(&f, &gh, 12, &[]);
    assert_eq!(code, 0, "{err}");
    let x = j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["state"] == "unconfirmed")
        .unwrap_or_else(|| panic!("{j:#}"));
    assert!(!x["unconfirmed"][0].as_str().unwrap().is_empty(), "{x}");
    assert!(gh.issues().is_empty(), "{:?}", gh.issues());
    // Budget: none left to spend means the search waits for the next run, said so.
    let f2 = fixture();
    cron(&f2, &[1, 5, 9, 13, 17, 21, 25, 29]);
    let out = f2
        .cmd()
        .args(["triage", "all", &format!("{}..{}", f2.ids[0], f2.ids[29])])
        .args(["--max-builds", "0", "--format", "json"])
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["searches"], 0, "{j:#}");
    assert_eq!(j["left"].as_array().unwrap().len(), 3, "{j:#}");
}

#[test]
fn find_over_several_tests_gives_a_verdict_each_on_one_set_of_builds() {
    let f = fixture();
    let range = format!("{}..{}", f.ids[0], f.ids[29]);
    let j = f.json(&["find", "value,value2", &range, "--format", "json"]);
    let tests = j["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 2, "{j:#}");
    for (t, name) in tests.iter().zip(["value", "value2"]) {
        assert_eq!(t["test"], name);
        assert_eq!(t["culprit"]["commit"], f.ids[13].as_str(), "{t:#}");
    }
    // The second search stood on the first one's builds.
    let second = tests[1]["builds"].as_u64().unwrap();
    let first = tests[0]["builds"].as_u64().unwrap();
    assert!(second <= 2 && first >= 5, "{first} then {second}: {j:#}");
    assert_eq!(j["builds"].as_u64().unwrap(), first + second);
    let text = f
        .cmd()
        .args(["find", "value,value2", &range])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("== value ==") && text.contains("== value2 =="),
        "{text}"
    );
}

/// Issue 37: six cron rounds over 41 commits (every 8th), two rounds a level. Each round is a
/// moment of its own (nothing ties the commits' levels), so the steps are undecided
/// candidates, and `triage` searches them: both culprits posted, one issue each.
#[test]
fn six_sparse_rounds_two_a_level_post_both_culprits() {
    let f = Fixture::new(
        &specs(41, |i, c| {
            c.metric = if i < 13 { 1000.0 } else { 1078.0 };
            c.megabytes = match i {
                ..=12 => 22,
                13..=28 => 43,
                _ => 74,
            };
            c.work = 0;
        }),
        &with_build(
            r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "2%"
repeats = 3

[tests.rss]
command = "./app"
metric = "max-rss"
threshold = "10%"
repeats = 3
"#,
        ),
    );
    let gh = Gh::new(&f);
    for n in [1, 9, 17, 25, 33, 41] {
        f.run_json("value,rss", &f.ids[n - 1], &[]);
    }
    let (code, j, err) = triage(&f, &gh, 41, &[]);
    assert_eq!(code, 0, "{err}");
    let (x13, x29) = (&f.ids[12], &f.ids[28]);
    assert_eq!(tests_of(finding(&j, x13)), ["rss", "value"], "{j:#}");
    assert_eq!(tests_of(finding(&j, x29)), ["rss"], "{j:#}");
    for c in [x13, x29] {
        assert_eq!(finding(&j, c)["state"], "posted", "{j:#}");
        assert_eq!(gh.about(c).len(), 1, "one issue for {c}");
    }
    assert_eq!(gh.issues().len(), 2, "{j:#}");
}

/// Issue 37: a regression reverted to the same bytes. The commits after the revert build
/// what the first commits built; their rounds show that build's runs, a level like any other:
/// `detect` sees the step back, and `triage` marks the regression fixed by the revert.
#[test]
fn a_regression_reverted_to_identical_bytes_is_marked_fixed() {
    let app = |level: u32| {
        format!(
            "#include <stdio.h>\n#include <stdlib.h>\n#include <time.h>\n\
             int main(void) {{ FILE *u = fopen(\"/dev/urandom\", \"rb\"); unsigned r = 0;\n\
             if (u) {{ fread(&r, sizeof r, 1, u); fclose(u); }}\n\
             double e = ((r % 2001) / 1000.0 - 1.0) * 0.01;\n\
             printf(\"value: %.2f\\n\", {level}.0 * (1.0 + e)); return 0; }}\n"
        )
    };
    let mut commits: Vec<(String, Vec<(&str, String)>)> = Vec::new();
    for n in 1..=30usize {
        let mut files = vec![("NEWS", format!("commit {n}\n"))];
        match n {
            1 => files.push(("app.c", app(1000))),
            11 => files.push(("app.c", app(1080))),
            21 => files.push(("app.c", app(1000))),
            _ => {}
        }
        let subject = match n {
            11 => "Slow path".to_string(),
            21 => "Revert \"Slow path\"".to_string(),
            _ => format!("Commit {n}"),
        };
        commits.push((subject, files));
    }
    let commits: Vec<common::FilesCommit<'_>> = commits
        .iter()
        .map(|(s, f)| (s.as_str(), f.clone()))
        .collect();
    let f = Fixture::with_files(
        &commits,
        &with_build(
            r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "2%"
repeats = 3
"#,
        ),
    );
    let gh = Gh::new(&f);
    let night = |rounds: &[usize]| {
        for &n in rounds {
            f.run_json("value", &f.ids[n - 1], &[]);
        }
    };
    night(&[1, 3, 6, 9, 12, 14, 17, 19]);
    let (code, j, err) = triage(&f, &gh, 19, &[]);
    assert_eq!(code, 0, "{err}");
    let (x11, x21) = (&f.ids[10], &f.ids[20]);
    assert_eq!(finding(&j, x11)["state"], "posted", "{j:#}");
    night(&[22, 25, 28, 30]);
    let (code, j, err) = triage(&f, &gh, 30, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(finding(&j, x11)["state"], "fixed", "{j:#}");
    assert_eq!(finding(&j, x11)["fixed_by"], x21.as_str(), "{j:#}");
    assert_eq!(
        gh.issues().len(),
        1,
        "the revert is no new issue: {:?}",
        gh.issues()
    );
    // Both steps at their commits, now that the searches measured the commits around them.
    let range = format!("{}..{}", f.ids[0], f.ids[29]);
    let d = f.json(&["detect", "value", &range, "--format", "json"]);
    let at: Vec<&str> = d["change_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["commit"].as_str().unwrap())
        .collect();
    assert_eq!(at, [x11.as_str(), x21.as_str()], "{d:#}");
}

/// `triage TESTS RANGE --attach o/r --format json` with the stand-in on PATH and `env` set.
fn triage_env(
    f: &Fixture,
    gh: &Gh,
    tests: &str,
    newest: usize,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (i32, serde_json::Value, String) {
    let range = format!("{}..{}", f.ids[0], f.ids[newest - 1]);
    let mut c = f.cmd();
    c.args([
        "triage", tests, &range, "--attach", "o/r", "--format", "json",
    ])
    .args(extra)
    .env("PATH", gh.path())
    .env("GH_STATE", &gh.state);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let j = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no JSON ({e}): {err}"));
    (out.status.code().unwrap_or(-1), j, err)
}

/// Issue 38, defect 1: a comment (and an issue) that went through but was not answered in
/// time is found by its marker the next night, never posted twice.
#[test]
fn a_comment_that_went_through_unanswered_is_not_posted_again() {
    let f = fixture();
    let gh = Gh::new(&f);
    cron(&f, &[1, 5, 9, 13, 17, 21, 25, 29]);
    let (x14, x22) = (&f.ids[13], &f.ids[21]);
    let (code, _, err) = triage_env(&f, &gh, "value", 30, &[], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(gh.about(x14).len(), 1);
    // value2 joins x14 and rss opens x22; gh does both but answers too late.
    let slow = [("GH_HANG_AFTER", "3"), ("PERFBISECT_GH_TIMEOUT", "1")];
    let (code, _, err) = triage_env(&f, &gh, "all", 30, &[], &slow);
    assert_eq!(code, 1, "the posts are left for the next run: {err}");
    assert!(err.contains("did not answer"), "{err}");
    assert_eq!(gh.about(x14)[0]["comments"].as_array().unwrap().len(), 1);
    assert_eq!(gh.about(x22).len(), 1);
    // The next night finds both by their markers.
    let (code, j, err) = triage_env(&f, &gh, "all", 30, &[], &[]);
    assert_eq!(code, 0, "{err}");
    let comments = gh.about(x14)[0]["comments"].clone();
    assert_eq!(
        comments.as_array().unwrap().len(),
        1,
        "posted twice: {comments}"
    );
    assert!(
        comments[0].as_str().unwrap().contains("value2"),
        "{comments}"
    );
    assert_eq!(gh.about(x22).len(), 1, "{:?}", gh.issues());
    for c in [x14, x22] {
        assert_eq!(finding(&j, c)["state"], "posted", "{j:#}");
    }
    assert_eq!(tests_of(finding(&j, x14)), ["value", "value2"], "{j:#}");
    assert!(
        finding(&j, x14)["tests"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["posted"] == true),
        "{j:#}"
    );
    // And a third night says nothing more.
    let (_, j, _) = triage_env(&f, &gh, "all", 30, &[], &[]);
    assert!(j["posted"].as_array().unwrap().is_empty(), "{j:#}");
}

/// Issue 38, defect 4: after a night whose post failed, the issue body shows each test's own
/// report under its name (the tests searched before say so, with the command that makes
/// their report), never another test's report under a name.
#[test]
fn a_report_is_shown_under_its_own_tests_name() {
    let f = fixture();
    let gh = Gh::new(&f);
    cron(&f, &[1, 5, 9, 13, 17, 21, 25, 29]);
    let x14 = &f.ids[13];
    let (code, _, _) = triage_env(&f, &gh, "value", 30, &[], &[("GH_FAIL", "1")]);
    assert_eq!(code, 1);
    assert!(gh.issues().is_empty());
    let (code, _, err) = triage_env(&f, &gh, "value,value2", 30, &[], &[]);
    assert_eq!(code, 0, "{err}");
    let body = gh.about(x14)[0]["body"].as_str().unwrap().to_string();
    assert!(
        !body.contains("<summary>value: the whole report</summary>"),
        "{body}"
    );
    let (_, own) = body
        .split_once("<summary>value2: the whole report</summary>")
        .unwrap_or_else(|| panic!("{body}"));
    let own = own.split("</details>").next().unwrap();
    assert!(own.contains("value2"), "{own}");
    assert!(
        body.contains(
            "value: searched by an earlier run; `perfbisect --config perfbisect.toml report value "
        ),
        "{body}"
    );
    // Public text: no path of this machine's.
    assert!(
        !body.contains(&f.dir.path().display().to_string()),
        "{body}"
    );
}

/// Issue 38, defects 2 and 3: `--dry-run` writes no finding and marks no gap, so the next real
/// run searches and posts with the reports; an issue whose creation gh answers with no URL is
/// found by its marker (URL and number), and later comments go to it.
#[test]
fn a_dry_run_changes_nothing_and_an_issue_created_without_a_url_is_found_by_its_marker() {
    let f = fixture();
    let gh = Gh::new(&f);
    cron(&f, &[1, 5, 9, 13, 17, 21, 25, 29]);
    let x14 = &f.ids[13];
    let (code, j, err) = triage_env(&f, &gh, "value", 30, &["--dry-run"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(j["searches"].as_u64().unwrap() > 0, "{j:#}");
    assert!(gh.issues().is_empty());
    assert!(
        !f.cache.join("findings.json").exists(),
        "a dry run saved findings"
    );

    let says = [("GH_CREATE_SAYS", "Created an issue in o/r (new wording)")];
    let (code, j, err) = triage_env(&f, &gh, "value", 30, &[], &says);
    assert_eq!(code, 0, "{err}");
    assert!(j["searches"].as_u64().unwrap() > 0, "{j:#}");
    let issue = &gh.about(x14)[0];
    assert!(
        issue["body"]
            .as_str()
            .unwrap()
            .contains("<summary>value: the whole report</summary>"),
        "{issue}"
    );
    let x = finding(&j, x14);
    assert_eq!(x["url"], issue["url"], "{j:#}");
    // value2 joins: its comment goes to that issue.
    let (code, _, err) = triage_env(&f, &gh, "value,value2", 30, &[], &[]);
    assert_eq!(code, 0, "{err}");
    let comments = gh.about(x14)[0]["comments"].clone();
    assert_eq!(comments.as_array().unwrap().len(), 1, "{comments}");
}

/// Issue 38, defect 5: a step next to a commit that cannot be built is ambiguous, and the
/// finding says so: its JSON lists the candidates, the title says "at A or B", the body's
/// first line why, and "the one before it" is never claimed for a parent that is not.
#[test]
fn an_ambiguous_culprit_is_posted_as_ambiguous() {
    let f = Fixture::new(
        &specs(14, |i, c| {
            c.metric = if i >= 8 { 1080.0 } else { 1000.0 };
            c.broken = i == 7;
            c.work = 0;
        }),
        &with_build(CONFIG),
    );
    let gh = Gh::new(&f);
    for n in [1, 4, 10, 13] {
        f.run_json("value", &f.ids[n - 1], &[]);
    }
    let (code, j, err) = triage_env(&f, &gh, "value", 14, &[], &[]);
    assert_eq!(code, 0, "{err}");
    let (a, b) = (&f.ids[6], &f.ids[7]);
    let x = finding(&j, b);
    let cands: Vec<&str> = x["tests"][0]["candidates"]
        .as_array()
        .unwrap_or_else(|| panic!("no candidates: {j:#}"))
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(cands, [a.as_str(), b.as_str()], "{j:#}");
    let issue = &gh.about(b)[0];
    let title = issue["title"].as_str().unwrap();
    assert!(
        title.contains(&format!("at {} or {} ", &a[..10], &b[..10])),
        "{title}"
    );
    let body = issue["body"].as_str().unwrap();
    assert!(
        body.starts_with(&format!(
            "**Ambiguous: any of `{}`, `{}` may be the culprit.**",
            &a[..10],
            &b[..10]
        )),
        "{body}"
    );
    assert!(!body.contains("and the one before it"), "{body}");
    assert!(
        body.contains(&format!(
            "and `{}`, the last commit before it that builds",
            &f.ids[5][..10]
        )),
        "{body}"
    );
}

/// A repository of a C program printing 1000 units (±1 %, from /dev/urandom) whose build is
/// byte-identical from commit to commit except where `level` changes it: commit `n` prints
/// `level(n)`, the other commits only touch NEWS.
fn levels_repo(commits: usize, level: impl Fn(usize) -> u32, config: &str) -> Fixture {
    let app = |level: u32| {
        format!(
            "#include <stdio.h>\n#include <stdlib.h>\n#include <time.h>\n\
             int main(void) {{ FILE *u = fopen(\"/dev/urandom\", \"rb\"); unsigned r = 0;\n\
             if (u) {{ fread(&r, sizeof r, 1, u); fclose(u); }}\n\
             double e = ((r % 2001) / 1000.0 - 1.0) * 0.01;\n\
             printf(\"value: %.2f\\n\", {level}.0 * (1.0 + e)); return 0; }}\n"
        )
    };
    let mut owned: Vec<(String, Vec<(&str, String)>)> = Vec::new();
    for n in 1..=commits {
        let mut files = vec![("NEWS", format!("commit {n}\n"))];
        if n == 1 || level(n) != level(n - 1) {
            files.push(("app.c", app(level(n))));
        }
        owned.push((format!("Commit {n}"), files));
    }
    let commits: Vec<common::FilesCommit<'_>> =
        owned.iter().map(|(s, f)| (s.as_str(), f.clone())).collect();
    Fixture::with_files(&commits, &with_build(config))
}

/// Issue 58, item 3: byte-identical builds before a regression at commit 13 and after its
/// revert at 21, cron rounds on every 2nd commit, one night: both culprits are searched, the
/// revert is recorded as the regression's fix (no issue of its own), and `detect` then places
/// both steps at their commits (13, not 14; 21, not 22).
#[test]
fn a_regression_and_its_revert_in_one_night_are_a_fix_with_both_steps_placed() {
    let f = levels_repo(
        30,
        |n| if (13..21).contains(&n) { 1080 } else { 1000 },
        r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "2%"
repeats = 3
"#,
    );
    let gh = Gh::new(&f);
    let rounds: Vec<usize> = std::iter::once(1).chain((2..=30).step_by(2)).collect();
    for &n in &rounds {
        f.run_json("value", &f.ids[n - 1], &[]);
    }
    let (code, j, err) = triage(&f, &gh, 30, &[]);
    assert_eq!(code, 0, "{err}");
    let (x13, x21) = (&f.ids[12], &f.ids[20]);
    assert_eq!(finding(&j, x13)["state"], "fixed", "{j:#}\n{err}");
    assert_eq!(finding(&j, x13)["fixed_by"], x21.as_str(), "{j:#}");
    // The revert is no issue of its own (and a regression fixed the night it is found is
    // never posted: nothing is left to fix).
    let issues = gh.issues();
    assert!(
        issues
            .iter()
            .all(|i| !i["title"].as_str().unwrap().contains(&x21[..10])),
        "the revert is no new issue: {issues:#?}"
    );
    let revert = j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["commit"] == x21.as_str())
        .count();
    assert_eq!(revert, 0, "{j:#}");
    // Both steps at their commits, now that the searches measured the commits around them.
    let range = format!("{}..{}", f.ids[0], f.ids[29]);
    let d = f.json(&["detect", "value", &range, "--format", "json"]);
    let at: Vec<&str> = d["change_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["commit"].as_str().unwrap())
        .collect();
    assert_eq!(at, [x13.as_str(), x21.as_str()], "{d:#}");
}

/// Issue 58, item 4: over 15 nights, commit 8 regresses `value` by 10 % (issue #1) and commit
/// 13 reverts it; `value2` joins the nightly job on night 11, so its series starts at the
/// regressed level and the revert shows as a step of its own. The revert is the fix of #1
/// for both tests: no second issue, and the "fixed by" comment on #1 names `value2` too.
#[test]
fn a_test_that_joined_later_moves_back_at_a_revert_and_the_fix_is_said_on_the_first_issue() {
    let one = r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "2%"
repeats = 3
"#;
    let f = Fixture::new(
        &specs(15, |i, c| {
            c.metric = if (8..13).contains(&i) { 1100.0 } else { 1000.0 };
            c.work = 0;
        }),
        &with_build(one),
    );
    let gh = Gh::new(&f);
    let two = format!(
        "{one}\n[tests.value2]\ncommand = \"./app\"\nmetric = {{ regex = \"^value: ([0-9.]+)\" }}\nthreshold = \"3%\"\nrepeats = 3\n"
    );
    let mut all = Vec::new();
    for night in 1..=15 {
        let tests = if night >= 11 { "value,value2" } else { "value" };
        if night == 11 {
            f.set_config(&with_build(&two));
        }
        f.run_json(tests, &f.ids[night - 1], &[]);
        if night < 2 {
            continue;
        }
        let (code, j, err) = triage_env(&f, &gh, "all", night, &[], &[]);
        assert_eq!(code, 0, "night {night}: {err}");
        all.push((night, j, err));
    }
    let (x8, x13) = (&f.ids[7], &f.ids[12]);
    let issues = gh.issues();
    assert_eq!(
        issues.len(),
        1,
        "one issue, the regression's: {:#?}",
        issues
            .iter()
            .map(|i| i["title"].clone())
            .collect::<Vec<_>>()
    );
    let first = &issues[0];
    assert!(
        first["title"].as_str().unwrap().contains(&x8[..10]),
        "{first}"
    );
    let body = first["body"].as_str().unwrap();
    assert!(!body.contains("searched by an earlier run"), "{body}");
    let (_, last, _) = all.last().unwrap();
    let x = finding(last, x8);
    assert_eq!(x["state"], "fixed", "{last:#}");
    assert_eq!(x["fixed_by"], x13.as_str(), "{last:#}");
    // The fix is said on the first issue, once, for both tests.
    let comments = first["comments"].as_array().unwrap();
    let fixed: Vec<&str> = comments
        .iter()
        .map(|c| c.as_str().unwrap())
        .filter(|c| c.contains("fixed by"))
        .collect();
    assert_eq!(fixed.len(), 1, "{comments:#?}");
    assert!(
        fixed[0].contains("`value2`") && fixed[0].contains("`value`"),
        "{}",
        fixed[0]
    );
    // No finding of the revert's own is left to post.
    let x13s = last["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["commit"] == x13.as_str())
        .count();
    assert_eq!(x13s, 0, "{last:#}");
}

/// Issue 58, item 3, in the detector: the cron rounds alone (every 2nd commit) of a
/// regression at 13 and its revert at 21 to byte-identical bytes show two steps, at 14 and 22
/// (13 and 21 unmeasured), decided or undecided: neither is merged into the other.
#[test]
fn the_rounds_of_a_regression_and_its_revert_show_both_undecided_steps() {
    let f = levels_repo(
        30,
        |n| if (13..21).contains(&n) { 1080 } else { 1000 },
        r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "2%"
repeats = 3
"#,
    );
    for n in std::iter::once(1).chain((2..=30).step_by(2)) {
        f.run_json("value", &f.ids[n - 1], &[]);
    }
    let range = format!("{}..{}", f.ids[0], f.ids[29]);
    let d = f.json(&["detect", "value", &range, "--format", "json"]);
    let at: Vec<&str> = d["change_points"]
        .as_array()
        .unwrap()
        .iter()
        .chain(d["undecided"].as_array().unwrap())
        .map(|p| p["commit"].as_str().unwrap())
        .collect();
    assert_eq!(at.len(), 2, "{d:#}");
    assert!(at.contains(&f.ids[13].as_str()), "{d:#}");
    assert!(at.contains(&f.ids[21].as_str()), "{d:#}");
}
