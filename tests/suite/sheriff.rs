//! Issue 51, "every post once, every test said, and the machine's own changes named": the
//! nightly `triage` under a `gh` that hangs, fails with 502 or prints garbage on each verb
//! (tests/fixtures/gh-stand-in), two triages on two caches against one `gh`, and a toolchain
//! change between two rounds (a `[fingerprint]` command reading a file the test changes).

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

[tests.value3]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "4%"
repeats = 3
"#;

/// 30 commits whose value steps +8 % at commit 14: every test of `config` moves there.
fn fixture(config: &str) -> Fixture {
    Fixture::new(
        &specs(30, |i, c| {
            c.metric = if i >= 14 { 1080.0 } else { 1000.0 };
            c.work = 0;
        }),
        &with_build(config),
    )
}

/// The cron's rounds of commits 1, 5, ..., 29 (1-based): what a cron job measured.
fn cron(f: &Fixture, tests: &str) {
    for n in [1, 5, 9, 13, 17, 21, 25, 29] {
        f.run_json(tests, &f.ids[n - 1], &[]);
    }
}

/// A folder holding `gh` (the stand-in) and the stand-in's state.
struct Gh {
    bin: PathBuf,
    state: PathBuf,
}

impl Gh {
    fn new(dir: &Path, name: &str) -> Gh {
        let bin = dir.join(format!("{name}-bin"));
        std::fs::create_dir_all(&bin).unwrap();
        let stand_in = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gh-stand-in");
        std::os::unix::fs::symlink(stand_in, bin.join("gh")).unwrap();
        let state = dir.join(format!("{name}-state"));
        std::fs::create_dir_all(&state).unwrap();
        Gh { bin, state }
    }

    fn path(&self) -> String {
        format!("{}:{}", self.bin.display(), std::env::var("PATH").unwrap())
    }

    /// Every issue the stand-in holds, by number.
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

    /// The comments of the only issue whose body names `commit`.
    fn comments(&self, commit: &str) -> Vec<String> {
        let about: Vec<serde_json::Value> = self
            .issues()
            .into_iter()
            .filter(|i| i["body"].as_str().unwrap().contains(commit))
            .collect();
        assert_eq!(about.len(), 1, "{about:#?}");
        about[0]["comments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect()
    }
}

/// `triage TESTS FIRST..LAST --attach o/r --format json` on `cache` with `gh` on PATH and
/// `env` set: exit code, JSON, stderr.
fn triage(
    f: &Fixture,
    cache: &Path,
    gh: &Gh,
    tests: &str,
    env: &[(&str, &str)],
) -> (i32, serde_json::Value, String) {
    let range = format!("{}..{}", f.ids[0], f.ids[f.ids.len() - 1]);
    let mut c = assert_cmd::Command::cargo_bin("perfbisect").unwrap();
    c.arg("--repo")
        .arg(&f.repo)
        .arg("--config")
        .arg(&f.config)
        .arg("--cache")
        .arg(cache)
        .arg("--no-progress")
        .current_dir(f.dir.path())
        .timeout(std::time::Duration::from_secs(900))
        .args([
            "triage", tests, &range, "--attach", "o/r", "--format", "json",
        ])
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

fn finding<'a>(j: &'a serde_json::Value, commit: &str) -> &'a serde_json::Value {
    j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["commit"] == commit)
        .unwrap_or_else(|| panic!("no finding of {commit}: {j:#}"))
}

/// The tests of a finding and whether each is said on its issue.
fn said(x: &serde_json::Value) -> Vec<(String, bool)> {
    let mut t: Vec<(String, bool)> = x["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["test"].as_str().unwrap().to_string(),
                t["posted"].as_bool().unwrap(),
            )
        })
        .collect();
    t.sort();
    t
}

/// Post-time faults: `gh` does the post but answers after perfbisect gave up on it.
const SLOW: [(&str, &str); 2] = [("GH_HANG_AFTER", "3"), ("PERFBISECT_GH_TIMEOUT", "1")];

/// Items 1 (and the old gh's fallback): a comment went through unanswered; then the check for
/// it fails every way a network fails (502, an answer that is not JSON, a time-out). Each
/// time the comment stays pending, said in the output, and is never posted a second time;
/// once the check answers, it is found. Only a gh that says it cannot list comments (an
/// unknown JSON field) gets a comment posted unchecked, with a warning.
#[test]
fn a_failing_comment_check_leaves_the_post_pending_and_never_posts_a_copy() {
    let f = fixture(CONFIG);
    let gh = Gh::new(f.dir.path(), "gh");
    cron(&f, "value,value2,value3");
    let x14 = f.ids[13].clone();
    let (code, _, err) = triage(&f, &f.cache, &gh, "value", &[]);
    assert_eq!(code, 0, "{err}");
    // value2 joins; its comment goes through, gh answers too late.
    let (code, _, err) = triage(&f, &f.cache, &gh, "value,value2", &SLOW);
    assert_eq!(code, 1, "{err}");
    assert_eq!(gh.comments(&x14).len(), 1);
    for (env, says) in [
        (vec![("GH_FAIL_ON", "view")], "502"),
        (vec![("GH_GARBAGE_ON", "view")], "printed no JSON"),
        (
            vec![
                ("GH_HANG_ON", "view"),
                ("GH_HANG_SECONDS", "20"),
                ("PERFBISECT_GH_TIMEOUT", "1"),
            ],
            "did not answer",
        ),
    ] {
        let (code, j, err) = triage(&f, &f.cache, &gh, "value,value2", &env);
        assert_eq!(code, 1, "{env:?}: {err}");
        let failure = j["failures"][0].as_str().unwrap_or_default();
        assert!(
            failure.contains(says) && failure.contains("stays pending"),
            "{env:?}: {j:#}"
        );
        assert!(err.contains("left for the next run"), "{err}");
        assert_eq!(gh.comments(&x14).len(), 1, "{env:?}: posted a copy");
        assert_eq!(
            said(finding(&j, &x14)),
            [("value".into(), true), ("value2".into(), false)],
            "{env:?}"
        );
    }
    // The check answers: the comment is found, not posted again.
    let (code, j, err) = triage(&f, &f.cache, &gh, "value,value2", &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(gh.comments(&x14).len(), 1);
    assert_eq!(j["posted"][0]["what"], "found", "{j:#}");
    assert!(said(finding(&j, &x14)).iter().all(|(_, s)| *s), "{j:#}");
    // A gh that cannot list comments: value3's comment goes unchecked, and that is said.
    let (code, j, err) = triage(&f, &f.cache, &gh, "all", &[("GH_OLD", "1")]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("cannot list the comments"), "{err}");
    let comments = gh.comments(&x14);
    assert_eq!(comments.len(), 2, "{comments:#?}");
    assert!(
        comments[1].contains("value3") && !comments[1].contains("value2"),
        "{comments:#?}"
    );
    assert!(said(finding(&j, &x14)).iter().all(|(_, s)| *s), "{j:#}");
}

/// Items 2 and 4: one test's join comment goes through unanswered; another test joins
/// before the next run. The first is found by its own marker (not announced again, though
/// the tests still to say are now two), and the second's marker (`…-join-h2-req`) is not
/// taken for the one it begins (`…-join-h2-req-mem`): it is said, once.
#[test]
fn a_join_is_said_once_and_a_marker_is_never_found_inside_another() {
    let f = fixture(
        r#"
[tests.h2]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "2%"
repeats = 3

[tests.h2-req]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "3%"
repeats = 3

[tests.h2-req-mem]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "4%"
repeats = 3
"#,
    );
    let gh = Gh::new(f.dir.path(), "gh");
    cron(&f, "h2,h2-req,h2-req-mem");
    let x14 = f.ids[13].clone();
    let (code, _, err) = triage(&f, &f.cache, &gh, "h2", &[]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = triage(&f, &f.cache, &gh, "h2,h2-req-mem", &SLOW);
    assert_eq!(code, 1, "{err}");
    assert_eq!(gh.comments(&x14).len(), 1);
    let (code, j, err) = triage(&f, &f.cache, &gh, "all", &[]);
    assert_eq!(code, 0, "{err}");
    let comments = gh.comments(&x14);
    assert_eq!(comments.len(), 2, "{comments:#?}");
    assert!(comments[0].contains("h2-req-mem"), "{comments:#?}");
    assert!(
        comments[1].contains("h2-req:") && !comments[1].contains("h2-req-mem"),
        "{comments:#?}"
    );
    assert!(said(finding(&j, &x14)).iter().all(|(_, s)| *s), "{j:#}");
    let (_, j, _) = triage(&f, &f.cache, &gh, "all", &[]);
    assert!(j["posted"].as_array().unwrap().is_empty(), "{j:#}");
    assert_eq!(gh.comments(&x14).len(), 2);
}

/// Item 3: the issue's creation went through unanswered; a test joins the finding before the
/// next run, which finds the issue by its marker. Only the test its body names is said; the
/// one that joined gets its comment.
#[test]
fn an_issue_found_by_its_marker_says_only_the_tests_its_body_names() {
    let f = fixture(CONFIG);
    let gh = Gh::new(f.dir.path(), "gh");
    cron(&f, "value,value2");
    let x14 = f.ids[13].clone();
    let (code, j, err) = triage(&f, &f.cache, &gh, "value", &SLOW);
    assert_eq!(code, 1, "{err}");
    assert_eq!(finding(&j, &x14)["state"], "new", "{j:#}");
    assert_eq!(gh.issues().len(), 1);
    let (code, j, err) = triage(&f, &f.cache, &gh, "value,value2", &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(gh.issues().len(), 1, "{:#?}", gh.issues());
    let whats: Vec<&str> = j["posted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["what"].as_str().unwrap())
        .collect();
    assert_eq!(whats, ["found", "commented"], "{j:#}");
    let comments = gh.comments(&x14);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(comments[0].contains("value2"), "{comments:#?}");
    assert_eq!(
        said(finding(&j, &x14)),
        [("value".into(), true), ("value2".into(), true)]
    );
}

/// Faults of the other verbs: a marker search that prints garbage or hangs, a create that
/// hangs before it creates, a comment that fails. Each leaves its post for the next run
/// (exit 1, said), nothing is posted unchecked, and the next run posts each once.
#[test]
fn a_fault_of_any_verb_leaves_its_post_for_the_next_run_posted_once() {
    let f = fixture(CONFIG);
    let gh = Gh::new(f.dir.path(), "gh");
    cron(&f, "value,value2");
    let x14 = f.ids[13].clone();
    let hang = |verb: &'static str| {
        vec![
            ("GH_HANG_ON", verb),
            ("GH_HANG_SECONDS", "20"),
            ("PERFBISECT_GH_TIMEOUT", "1"),
        ]
    };
    for env in [
        vec![("GH_GARBAGE_ON", "list")],
        hang("list"),
        hang("create"),
    ] {
        let (code, j, err) = triage(&f, &f.cache, &gh, "value", &env);
        assert_eq!(code, 1, "{env:?}: {err}");
        assert_eq!(j["failures"].as_array().unwrap().len(), 1, "{env:?}: {j:#}");
        assert_eq!(finding(&j, &x14)["state"], "new", "{env:?}: {j:#}");
        assert!(gh.issues().is_empty(), "{env:?}: {:#?}", gh.issues());
    }
    let (code, _, err) = triage(&f, &f.cache, &gh, "value", &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(gh.issues().len(), 1);
    let (code, j, err) = triage(
        &f,
        &f.cache,
        &gh,
        "value,value2",
        &[("GH_FAIL_ON", "comment")],
    );
    assert_eq!(code, 1, "{err}");
    assert!(j["failures"][0].as_str().unwrap().contains("502"), "{j:#}");
    assert!(gh.comments(&x14).is_empty());
    let (code, _, err) = triage(&f, &f.cache, &gh, "value,value2", &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(gh.comments(&x14).len(), 1);
    assert_eq!(gh.issues().len(), 1);
}

/// `cp -a FROM TO`.
fn copy(from: &Path, to: &Path) {
    let ok = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

/// The URL of `commit`'s finding in the findings file of `cache`.
fn kept_url(cache: &Path, commit: &str) -> String {
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cache.join("findings.json")).unwrap())
            .unwrap();
    finding(&j, commit)["url"]
        .as_str()
        .unwrap_or_else(|| panic!("not posted: {j:#}"))
        .to_string()
}

/// Item 5: two triages on two caches (two shards, a re-run on another runner) post one
/// culprit. The second, whose search does not show the first's issue yet (GitHub's index
/// lags), opens one too, looks again, closes its own as a duplicate of the older and keeps
/// the older's URL; started at once, whatever the order, one issue stays open and both
/// caches point at it.
#[test]
fn two_triages_on_two_caches_leave_one_issue_open() {
    let f = fixture(CONFIG);
    let gh = Gh::new(f.dir.path(), "gh");
    cron(&f, "value");
    let x14 = f.ids[13].clone();
    // Searched and confirmed once, not posted: the seed of every cache below.
    let (code, _, _) = triage(&f, &f.cache, &gh, "value", &[("GH_FAIL", "1")]);
    assert_eq!(code, 1);
    let seed = f.dir.path().join("seed");
    copy(&f.cache, &seed);
    let other = f.dir.path().join("cache-b");
    copy(&seed, &other);

    let (code, _, err) = triage(&f, &f.cache, &gh, "value", &[]);
    assert_eq!(code, 0, "{err}");
    // The close fails first: the duplicate stays to close, the older issue is kept already.
    let lagging = [("GH_SEARCH_LAG", "600"), ("GH_FAIL_ON", "close")];
    let (code, j, err) = triage(&f, &other, &gh, "value", &lagging);
    assert_eq!(code, 1, "{err}");
    assert!(
        j["failures"][0]
            .as_str()
            .unwrap()
            .contains("`gh issue close`"),
        "{j:#}"
    );
    let whats: Vec<&str> = j["posted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["what"].as_str().unwrap())
        .collect();
    assert_eq!(whats, ["created", "found"], "{j:#}");
    assert_eq!(gh.issues()[1]["state"], "OPEN");
    let (code, j, err) = triage(&f, &other, &gh, "value", &[("GH_SEARCH_LAG", "600")]);
    assert_eq!(code, 0, "{err}");
    let issues = gh.issues();
    assert_eq!(issues.len(), 2, "{issues:#?}");
    assert_eq!(issues[0]["state"], "OPEN", "{issues:#?}");
    assert_eq!(issues[1]["state"], "CLOSED", "{issues:#?}");
    let closing = issues[1]["comments"][0].as_str().unwrap_or_default();
    assert!(closing.starts_with("Duplicate of #1"), "{issues:#?}");
    let older = issues[0]["url"].as_str().unwrap();
    assert_eq!(finding(&j, &x14)["url"], older, "{j:#}");
    assert_eq!(kept_url(&other, &x14), older);
    assert_eq!(kept_url(&f.cache, &x14), older);
    assert_eq!(j["posted"][0]["what"], "duplicate", "{j:#}");
    assert_eq!(j["posted"].as_array().unwrap().len(), 1, "{j:#}");
    let (_, j, _) = triage(&f, &other, &gh, "value", &[]);
    assert!(j["posted"].as_array().unwrap().is_empty(), "{j:#}");

    // Both at once, against a fresh gh: one issue stays open, both caches name it.
    let gh2 = Gh::new(f.dir.path(), "gh2");
    let caches: Vec<PathBuf> = ["cache-c", "cache-d"]
        .iter()
        .map(|n| f.dir.path().join(n))
        .collect();
    let range = format!("{}..{}", f.ids[0], f.ids[29]);
    let children: Vec<std::process::Child> = caches
        .iter()
        .map(|c| {
            copy(&seed, c);
            std::process::Command::new(assert_cmd::cargo::cargo_bin("perfbisect"))
                .arg("--repo")
                .arg(&f.repo)
                .arg("--config")
                .arg(&f.config)
                .arg("--cache")
                .arg(c)
                .args([
                    "--no-progress",
                    "triage",
                    "value",
                    &range,
                    "--attach",
                    "o/r",
                ])
                .env("PATH", gh2.path())
                .env("GH_STATE", &gh2.state)
                .env("GH_SLEEP", "0.3")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let open: Vec<serde_json::Value> = gh2
        .issues()
        .into_iter()
        .filter(|i| i["state"] == "OPEN")
        .collect();
    assert_eq!(open.len(), 1, "{:#?}", gh2.issues());
    for c in &caches {
        assert_eq!(kept_url(c, &x14), open[0]["url"].as_str().unwrap());
    }
}

/// A test whose numbers follow the toolchain: its `[fingerprint]` command reads
/// toolchain.txt, and the test scales the program's value by scale.txt (a new compiler makes
/// every number 8 % higher).
const TOOLCHAIN: &str = r#"
[fingerprint]
commands = ["cat toolchain.txt"]

[tests.value]
command = "./app | awk -v f=\"$(cat \"$PERFBISECT_CONFIG_DIR/scale.txt\")\" '/^value:/ { printf \"value: %.3f\\n\", $2 * f }'"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "2%"
repeats = 3
"#;

/// Item 6: the toolchain changes between two nights (every number +8 %), and a real step
/// (+10 % at commit 31) lands in the first round after it. The night it lands, `triage`
/// names the change once (the line of the fingerprint that changed), measures the previous
/// round's newest commit again on the new toolchain (one build, the test's runs) and states
/// the machine's own effect there, blames no commit for it, rebuilds no history, and posts
/// the real step. `show` keeps the rounds before as an earlier era, marked, compared with
/// none after it.
#[test]
fn a_toolchain_change_between_nights_is_named_bridged_and_blamed_on_no_commit() {
    let f = Fixture::new(
        &specs(34, |i, c| {
            c.metric = if i >= 31 { 1100.0 } else { 1000.0 };
            c.work = 0;
        }),
        &with_build(TOOLCHAIN),
    );
    let toolchain = |version: &str, scale: &str| {
        std::fs::write(f.dir.path().join("toolchain.txt"), version).unwrap();
        std::fs::write(f.dir.path().join("scale.txt"), scale).unwrap();
    };
    let gh = Gh::new(f.dir.path(), "gh");
    let night = |rounds: &[usize], json: &Path| {
        for &n in rounds {
            f.run_json("value", &f.ids[n - 1], &[]);
        }
        let newest = rounds[rounds.len() - 1];
        let out = f
            .cmd()
            .args([
                "triage",
                "value",
                &format!("{}..{}", f.ids[0], f.ids[newest - 1]),
                "--attach",
                "o/r",
            ])
            .arg("--json")
            .arg(json)
            .env("PATH", gh.path())
            .env("GH_STATE", &gh.state)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
        (text, j)
    };
    let json = f.dir.path().join("triage.json");
    toolchain("cc (Debian 12.2.0-14) 12.2.0\n", "1\n");
    let (text, j) = night(&[1, 8, 15, 22, 29], &json);
    assert!(text.starts_with("triage: nothing new"), "{text}");
    assert!(j["eras"].as_array().unwrap().is_empty(), "{j:#}");

    toolchain("cc (Debian 13.1.0-2) 13.1.0\n", "1.08\n");
    let (text, j) = night(&[33], &json);
    let (x29, x31) = (&f.ids[28], &f.ids[30]);
    // Named once, with the line that changed and the effect measured at commit 29.
    let eras = j["eras"].as_array().unwrap();
    assert_eq!(eras.len(), 1, "{j:#}");
    let e = &eras[0];
    assert_eq!(e["kind"], "toolchain", "{e:#}");
    assert_eq!(
        e["changed"][0]["what"], "command `cat toolchain.txt`",
        "{e:#}"
    );
    assert_eq!(e["changed"][0]["before"], "cc (Debian 12.2.0-14) 12.2.0");
    assert_eq!(e["changed"][0]["after"], "cc (Debian 13.1.0-2) 13.1.0");
    assert_eq!(e["bridge"]["commit"], x29.as_str(), "{e:#}");
    let effect = e["bridge"]["rel_change"].as_f64().unwrap();
    assert!((0.06..0.10).contains(&effect), "{e:#}");
    let named = "command `cat toolchain.txt`: `cc (Debian 12.2.0-14) 12.2.0` -> `cc (Debian 13.1.0-2) 13.1.0`";
    assert!(text.contains(named), "{text}");
    assert!(
        text.contains("the toolchain change moved value +")
            && text.contains(&format!(
                "at {}, the same commit measured before and after",
                &x29[..10]
            )),
        "{text}"
    );
    // No commit blamed for the machine; the real step of the first round after it posted.
    let findings = j["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{j:#}");
    assert_eq!(findings[0]["commit"], x31.as_str(), "{j:#}");
    assert_eq!(findings[0]["state"], "posted", "{j:#}");
    assert_eq!(gh.issues().len(), 1, "{:#?}", gh.issues());
    // No history rebuilt: of the rounds before, only commit 29 was measured again.
    let range = format!("{}..{}", f.ids[0], f.ids[33]);
    let show = f.json(&["show", "value", &range, "--format", "json"]);
    for n in [8, 15, 22] {
        let c = &show["commits"].as_array().unwrap()[n - 1];
        assert_eq!(c["commit"], f.ids[n - 1].as_str());
        assert_eq!(c["n"], 0, "round {n} measured again: {c:#}");
    }
    let earlier = &show["eras"]["earlier"][0]["commits"];
    let before: Vec<&str> = earlier
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["commit"].as_str().unwrap())
        .collect();
    let rounds: Vec<&str> = [1, 8, 15, 22, 29]
        .iter()
        .map(|&n| f.ids[n - 1].as_str())
        .collect();
    assert_eq!(before, rounds, "{show:#}");
    assert_eq!(show["eras"]["change"]["bridge"]["commit"], x29.as_str());
    let out = f.cmd().args(["show", "value", &range]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "\nearlier era (command `cat toolchain.txt`: cc (Debian 12.2.0-14) 12.2.0; fingerprint "
        ),
        "{text}"
    );
    assert!(text.contains("[earlier era]"), "{text}");
    assert!(text.contains(named), "{text}");
    // The site's page keeps the earlier era too, in a table of its own, marked.
    let site = f.dir.path().join("site");
    f.cmd()
        .args(["report", "value", "--format", "html", "--out"])
        .arg(&site)
        .assert()
        .success();
    let page = std::fs::read_to_string(site.join("value.html")).unwrap();
    let (current, earlier) = page
        .split_once("<h2>Earlier eras of the machine</h2>")
        .unwrap_or_else(|| panic!("{page}"));
    assert!(earlier.contains("(earlier era)"), "{earlier}");
    let round8 = &f.ids[7][..10];
    assert!(
        earlier.contains(round8) && !current.contains(round8),
        "{page}"
    );

    // Said once: the next night has nothing new.
    let (text, j) = night(&[34], &json);
    assert!(j["eras"].as_array().unwrap().is_empty(), "{j:#}");
    assert!(!text.contains("machine:"), "{text}");
    assert_eq!(gh.issues().len(), 1, "{:#?}", gh.issues());
}

/// A compiler upgrade that make cannot see (the flags change, no source does): the first
/// build after it starts from a clean worktree, so no build mixes the two toolchains'
/// objects and the check of incremental builds does not take the new compiler's other bytes
/// for a Makefile's missed dependency (which would make every later build pristine and set
/// runs aside). The rounds before stay, an earlier era.
#[test]
fn builds_after_a_toolchain_change_start_clean_and_blame_no_makefile() {
    let f = Fixture::new(
        &specs(34, |i, c| {
            c.work = 0;
            c.docs_only = (30..=33).contains(&i);
        }),
        r#"
[build]
command = "make CFLAGS=\"$(cat \"$PERFBISECT_CONFIG_DIR/cflags.txt\")\""
artifacts = ["app"]

[fingerprint]
commands = ["cat toolchain.txt"]

[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "2%"
repeats = 3
"#,
    );
    let toolchain = |version: &str, flags: &str| {
        std::fs::write(f.dir.path().join("toolchain.txt"), version).unwrap();
        std::fs::write(f.dir.path().join("cflags.txt"), flags).unwrap();
    };
    toolchain("cc 12\n", "-O0\n");
    for n in [1, 8, 15, 22, 29] {
        f.run_json("value", &f.ids[n - 1], &[]);
    }
    toolchain("cc 13\n", "-O2\n");
    // Commits 30 to 33 change only documentation: make finds commit 29's program up to date.
    let out = f.cmd().args(["run", "value", &f.ids[32]]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("missed a changed dependency"), "{err}");
    let pristine_only = std::fs::read_dir(f.cache.join("stale"))
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("pristine-"))
        })
        .unwrap_or(false);
    assert!(!pristine_only, "every build made pristine from now on");
    let show = f.json(&["show", "value", "--format", "json"]);
    let before: Vec<&str> = show["eras"]["earlier"][0]["commits"]
        .as_array()
        .unwrap_or_else(|| panic!("{show:#}"))
        .iter()
        .map(|c| c["commit"].as_str().unwrap())
        .collect();
    let rounds: Vec<&str> = [1, 8, 15, 22, 29]
        .iter()
        .map(|&n| f.ids[n - 1].as_str())
        .collect();
    assert_eq!(before, rounds, "{show:#}");
}
