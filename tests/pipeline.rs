//! The core pipeline end to end on generated repositories of a small C program.

mod common;

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
    assert_eq!(s["builds"], 29, "{s}");
    assert_eq!(s["failed_builds"].as_array().unwrap().len(), 1, "{s}");
    assert_eq!(s["failed_builds"][0], f.ids[6].as_str());
    assert_eq!(s["runs"], 29 * (5 + 3), "{s}");
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
    assert_eq!(round["runs"], 29 * 3);
    assert_eq!(f.show("rss", &range)["commits"][0]["n"], 6);
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
    assert_eq!(s["builds"], 4, "{s}");
    assert_eq!(s["runs"], 4 * 5, "{s}");
    let show = f.show("value", &f.range());
    for c in show["commits"].as_array().unwrap() {
        assert_eq!(c["n"], 5, "{c}");
    }
}

#[test]
fn sigkill_during_run_loses_nothing_and_resume_completes() {
    let f = Fixture::new(
        &specs(7, |_, c| c.work = 20_000_000),
        &with_build(
            r#"[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
repeats = 4
"#,
        ),
    );
    let range = f.range();
    let mut child = f.std_cmd().args(["run", "value", &range]).spawn().unwrap();
    // Let it build and store some runs, then kill it without warning.
    let store = f.cache.join("results/value.pbs");
    let start = std::time::Instant::now();
    while start.elapsed().as_secs() < 60 {
        if std::fs::metadata(&store)
            .map(|m| m.len() > 200)
            .unwrap_or(false)
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let partial: u64 = f.show("value", &range)["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["n"].as_u64().unwrap())
        .sum();
    assert!(
        partial < 6 * 4,
        "the kill came too late to test anything ({partial})"
    );
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
repeats = 1
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
    assert!(text.contains("Mann-Kendall over commit medians"), "{text}");
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
