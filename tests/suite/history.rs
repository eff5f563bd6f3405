//! Cron history and more than one machine, on generated repositories through the real binary:
//! `import` (with broken rows), `run --gaps` and `find` on imported rounds, fingerprints,
//! identical builds sharing samples, shards merged, and the content-addressed cache.

use crate::common;

use std::fmt::Write as _;
use std::path::Path;

use common::{specs, with_build, Fixture};

/// A noisy `value` (1 %) and a deterministic `size` (the printed value, no noise).
const TESTS: &str = r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
repeats = 3
threshold = "2%"

[tests.size]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
deterministic = true
"#;

fn out(o: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The binary on `f`'s repository and config with another cache.
fn with_cache(f: &Fixture, cache: &Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("perfbisect").unwrap();
    c.arg("--repo")
        .arg(&f.repo)
        .arg("--config")
        .arg(&f.config)
        .arg("--cache")
        .arg(cache)
        .arg("--no-progress")
        .current_dir(f.dir.path());
    c
}

/// Built artifact entries: the commits built so far, by full id.
fn built(cache: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(cache.join("artifacts"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy()[..40].to_string())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn import_reports_broken_rows_adds_nothing_twice_and_feeds_show_and_detect() {
    let f = Fixture::new(
        &specs(30, |i, c| {
            c.metric = if i >= 18 { 1100.0 } else { 1000.0 };
        }),
        &with_build(TESTS),
    );
    // A cron's history: 10 rounds of 3 runs on 25 commits (short hashes and a tag), and
    // broken rows sprinkled in.
    f.git(&["tag", "v1.0", &f.ids[4]]);
    let mut csv = String::from("commit,test,value,timestamp,round,machine\n");
    let mut good = 0;
    let mut bad = Vec::new();
    let mut line = 1;
    for (i, id) in f.ids.iter().enumerate().take(25) {
        let name = if i == 4 {
            "v1.0".to_string()
        } else {
            id[..9].to_string()
        };
        for r in 0..10 {
            let v = if i + 1 >= 18 { 1100.0 } else { 1000.0 } + (r as f64 - 4.5);
            line += 1;
            let _ = writeln!(
                csv,
                "{name},value,{v},{},R{r},cron-1",
                1_700_000_000 + r * 1200
            );
            good += 1;
        }
        line += 1;
        match i % 5 {
            0 => {
                let _ = writeln!(csv, "deadbeef{i:02},value,1000,,R0,cron-1");
                bad.push((line, "unknown commit"));
            }
            1 => {
                let _ = writeln!(csv, "{name},value,fast,,R0,cron-1");
                bad.push((line, "not a number"));
            }
            2 => {
                let _ = writeln!(csv, "{name},valeu,1000,,R0,cron-1");
                bad.push((line, "did you mean `value`"));
            }
            3 => {
                let _ = writeln!(csv, "{name},value");
                bad.push((line, "2 fields"));
            }
            _ => {
                let _ = writeln!(csv, "{name},value,1000,yesterday,R0,cron-1");
                bad.push((line, "timestamp `yesterday`"));
            }
        }
    }
    let file = f.dir.path().join("rounds.csv");
    std::fs::write(&file, &csv).unwrap();
    let o = f.cmd().arg("import").arg(&file).output().unwrap();
    let (stdout, stderr) = out(&o);
    assert!(o.status.success(), "{stderr}");
    for (line, why) in &bad {
        let at = format!("rounds.csv:{line}: skipped: ");
        let hit = stderr.lines().find(|l| l.contains(&at));
        assert!(
            hit.is_some_and(|l| l.contains(why)),
            "line {line} ({why}): {stderr}"
        );
    }
    assert!(
        stdout.contains(&format!("imported {good} samples of 1 test on 25 commits"))
            && stdout.contains(&format!("skipped {}", bad.len()))
            && stdout.contains("5 unknown commit")
            && stdout.contains("5 unknown test"),
        "{stdout}"
    );

    // Again: nothing new.
    let before = std::fs::read(f.cache.join("results/value.pbs")).unwrap();
    let o = f.cmd().arg("import").arg(&file).output().unwrap();
    assert!(o.status.success());
    assert!(
        out(&o).0.contains("imported 0 samples")
            && out(&o).0.contains(&format!("{good} already in the store")),
        "{}",
        out(&o).0
    );
    assert_eq!(
        std::fs::read(f.cache.join("results/value.pbs")).unwrap(),
        before
    );

    // show and detect use the imported numbers; show says they are imported.
    let show = f.show("value", &f.range());
    let c = &show["commits"][5];
    assert_eq!(c["n"], 10, "{c}");
    assert_eq!(c["imported"], 10, "{c}");
    assert_eq!(show["commits"][27]["status"], "missing");
    let d = f.json(&["detect", "value", &f.range(), "--format", "json"]);
    assert_eq!(d["change_points"][0]["commit"], f.ids[17].as_str(), "{d}");

    // The output of `show --format json` imports as well (into another cache), values kept.
    let shown = f.dir.path().join("shown.json");
    std::fs::write(&shown, serde_json::to_string_pretty(&show).unwrap()).unwrap();
    let other = f.dir.path().join("other-cache");
    let o = with_cache(&f, &other)
        .arg("import")
        .arg(&shown)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out(&o).1);
    assert!(out(&o).0.contains("imported 240 samples"), "{}", out(&o).0);

    // A JSON array with a broken entry names its line.
    let json = f.dir.path().join("rows.json");
    std::fs::write(
        &json,
        format!(
            "[\n  {{\"commit\": \"{}\", \"test\": \"size\", \"value\": 1000, \"round\": 3}},\n  {{\"commit\": \"{}\", \"test\": \"size\", \"value\": \"n/a\"}}\n]\n",
            f.ids[1], f.ids[2]
        ),
    )
    .unwrap();
    let o = f.cmd().arg("import").arg(&json).output().unwrap();
    let (stdout, stderr) = out(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("rows.json:3: skipped: value `n/a` is not a number"),
        "{stderr}"
    );
    assert!(stdout.contains("imported 1 sample of 1 test"), "{stdout}");

    // Unreadable files: exit 2, naming the file and what is wrong; the store untouched.
    let before = std::fs::read(f.cache.join("results/value.pbs")).unwrap();
    let cases: Vec<(&str, &[u8], &str)> = vec![
        ("missing.csv", b"", "cannot read"),
        (
            "header.csv",
            b"commit,tset,value\nabc,value,1\n",
            "unknown column `tset`",
        ),
        (
            "binary.csv",
            b"commit,test,value\n\xff\xfe,value,1\n",
            "not UTF-8",
        ),
        (
            "broken.json",
            b"[{\"commit\": \"x\",",
            "not the JSON import expects",
        ),
    ];
    for (name, bytes, why) in cases {
        let p = f.dir.path().join(name);
        if name != "missing.csv" {
            std::fs::write(&p, bytes).unwrap();
        }
        let o = f.cmd().arg("import").arg(&p).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{name}: {}", out(&o).1);
        assert!(
            out(&o).1.contains(name) && out(&o).1.contains(why),
            "{name}: {}",
            out(&o).1
        );
    }
    // Every row skipped: exit 1, nothing written.
    let p = f.dir.path().join("all-bad.csv");
    std::fs::write(&p, "commit,test,value\nnope,value,1\n").unwrap();
    let o = f.cmd().arg("import").arg(&p).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", out(&o).1);
    assert_eq!(
        std::fs::read(f.cache.join("results/value.pbs")).unwrap(),
        before
    );
}

/// Rounds of a cron job on every 5th commit of the range; the value steps up 10 % at commit
/// `step`. The noisy `value` comes from a machine twice as slow (its numbers doubled); the
/// deterministic `size` is the same everywhere.
fn cron_rounds(f: &Fixture, step: usize, tests: &[&str]) -> std::path::PathBuf {
    let mut csv = String::from("commit,test,value,round,machine\n");
    for (i, id) in f.ids.iter().enumerate() {
        if i % 5 != 0 && i != f.ids.len() - 1 {
            continue;
        }
        let base = if i + 1 >= step { 1100.0 } else { 1000.0 };
        for t in tests {
            let base = if *t == "size" { base } else { 2.0 * base };
            let runs = if *t == "size" { 1 } else { 3 };
            for r in 0..runs {
                let _ = writeln!(csv, "{id},{t},{},R{i},cron-box", base + r as f64 * 3.0);
            }
        }
    }
    let p = f.dir.path().join("cron.csv");
    std::fs::write(&p, csv).unwrap();
    p
}

#[test]
fn find_builds_only_inside_the_gap_of_imported_rounds_and_says_what_was_imported() {
    let f = Fixture::new(
        &specs(31, |i, c| {
            c.metric = if i >= 14 { 1100.0 } else { 1000.0 };
        }),
        &with_build(TESTS),
    );
    let file = cron_rounds(&f, 14, &["value"]);
    assert!(f
        .cmd()
        .arg("import")
        .arg(&file)
        .output()
        .unwrap()
        .status
        .success());
    // Rounds at commits 1, 6, 11, 16, ...: the step lies between commit 11 and commit 16.
    let r = f.json(&["find", "value", &f.range(), "--format", "json"]);
    assert_eq!(r["verdict"], "culprit", "{r}");
    assert_eq!(r["culprit"]["commit"], f.ids[13].as_str(), "{r}");
    let gap = &r["imported"];
    assert_eq!(gap["old"]["commit"], f.ids[10].as_str(), "{r}");
    assert_eq!(gap["new"]["commit"], f.ids[15].as_str(), "{r}");
    assert_eq!(gap["old"]["machines"][0], "cron-box");
    assert_eq!(gap["trusted_ends"], false);
    // Measured here: the culprit's levels are this machine's (about 1000 and 1100), not the
    // import's 2000 and 2200.
    let before = r["culprit"]["before"]["median"].as_f64().unwrap();
    assert!((before / 1000.0 - 1.0).abs() < 0.05, "{r}");
    // Only the gap's ends and commits inside it were built.
    let allowed: Vec<String> = f.ids[10..=15].to_vec();
    let b = built(&f.cache);
    assert!(
        !b.is_empty() && b.iter().all(|c| allowed.contains(c)),
        "built {b:?}"
    );
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("imported numbers") && notes.contains("measured again here"),
        "{notes}"
    );
    // report states the narrowed search's verdict (kept by its place on the range's chain).
    let j = f.json(&["report", "value", &f.range(), "--format", "json"]);
    assert_eq!(j["find"]["culprits"], r["culprits"], "{j}");
    assert_eq!(j["find"]["imported"], r["imported"], "{j}");
    assert!(
        j["find"]["notes"]
            .to_string()
            .contains("the verdict is the one perfbisect find"),
        "{j}"
    );
}

#[test]
fn deterministic_find_trusts_imported_ends_and_run_gaps_fills_only_the_rest() {
    let f = Fixture::new(
        &specs(21, |i, c| {
            c.metric = if i >= 9 { 1100.0 } else { 1000.0 };
            c.noise_pct = 0.0;
        }),
        &with_build(TESTS),
    );
    let file = cron_rounds(&f, 9, &["size"]);
    assert!(f
        .cmd()
        .arg("import")
        .arg(&file)
        .output()
        .unwrap()
        .status
        .success());
    let r = f.json(&["find", "size", &f.range(), "--format", "json"]);
    assert_eq!(r["culprit"]["commit"], f.ids[8].as_str(), "{r}");
    assert_eq!(r["imported"]["trusted_ends"], true);
    // Rounds at commits 6 and 11: only commits 7..10 may be built.
    let allowed: Vec<String> = f.ids[6..=9].to_vec();
    let b = built(&f.cache);
    assert!(
        !b.is_empty() && b.iter().all(|c| allowed.contains(c)),
        "built {b:?}"
    );

    // run --gaps measures the commits without a sample, imported or measured, and no other.
    let with_samples = f.show("size", &f.range())["commits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["n"].as_u64().unwrap() > 0)
        .count();
    let s = f.run_json("size", &f.range(), &["--gaps"]);
    assert_eq!(
        s["runs"].as_u64().unwrap() as usize,
        20 - with_samples,
        "{s}"
    );
    let again = f.run_json("size", &f.range(), &["--gaps"]);
    assert_eq!(again["runs"], 0, "{again}");
}

#[test]
fn samples_of_another_fingerprint_are_set_aside_unless_asked_for() {
    let cfg = |v: &str| {
        with_build(&format!(
            "{TESTS}\n[fingerprint]\ncommands = [\"echo compiler {v}\"]\n"
        ))
    };
    let f = Fixture::new(&specs(4, |_, _| {}), &cfg("1.0"));
    f.run_json("value", &f.range(), &[]);
    // Another compiler: a new fingerprint. Its show sees none of the old samples and says why.
    let other = f.dir.path().join("other.toml");
    std::fs::write(&other, cfg("2.0")).unwrap();
    let o = f
        .cmd_config(&other)
        .args(["show", "value", &f.range(), "--format", "json"])
        .output()
        .unwrap();
    let (stdout, stderr) = out(&o);
    let show = common::range_only(serde_json::from_str(&stdout).unwrap());
    assert_eq!(show["commits"][0]["n"], 0, "{show}");
    assert!(
        stderr.contains("9 stored samples of `value` were measured with 1 other fingerprint")
            && stderr.contains("compiler 1.0")
            && stderr.contains("--any-fingerprint"),
        "{stderr}"
    );
    let o = f
        .cmd_config(&other)
        .args([
            "show",
            "value",
            &f.range(),
            "--format",
            "json",
            "--any-fingerprint",
        ])
        .output()
        .unwrap();
    let show = common::range_only(serde_json::from_slice(&o.stdout).unwrap());
    assert_eq!(show["commits"][0]["n"], 3, "{show}");
    // run with the new fingerprint measures again; the old samples stay in the store.
    let o = f
        .cmd_config(&other)
        .args(["run", "value", &f.range(), "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"runs\":9"));
    assert_eq!(f.show("value", &f.range())["commits"][0]["n"], 3);
}

#[test]
fn identical_builds_share_samples_and_say_how_many_runs_that_saved() {
    // Every other commit changes only documentation.
    let f = Fixture::new(
        &specs(13, |i, c| c.docs_only = i % 2 == 1 && i > 1),
        &with_build(TESTS),
    );
    let s = f.run_json("value", &f.range(), &[]);
    // 12 commits, 6 of them docs-only whose builds equal their parents' (besides the
    // pristine rebuilds that check the builds a step stands on).
    let checks = s["pristine_checks"].as_u64().unwrap();
    assert_eq!(s["builds"].as_u64().unwrap() - checks, 12, "{s}");
    assert_eq!(s["runs"], 6 * 3, "{s}");
    assert_eq!(s["runs_saved"], 6 * 3, "{s}");
    assert_eq!(s["identical_builds"].as_array().unwrap().len(), 6, "{s}");
    let shared = &s["identical_builds"][0];
    assert_eq!(shared["commit"], f.ids[2].as_str(), "{s}");
    assert_eq!(shared["same_as"], f.ids[1].as_str(), "{s}");
    let show = f.show("value", &f.range());
    for c in show["commits"].as_array().unwrap() {
        assert_eq!(c["n"], 3, "{c}");
    }
    assert_eq!(show["commits"][1]["same_build_as"], f.ids[1].as_str());
    assert!(show["commits"][0].get("same_build_as").is_none());
    // The text output says so too.
    let o = f.cmd().args(["run", "value", &f.range()]).output().unwrap();
    assert!(
        out(&o).0.contains("reused their samples: 18 runs saved"),
        "{}",
        out(&o).0
    );
    // The cache stores each identical file once.
    let o = f.cmd().args(["cache", "ls"]).output().unwrap();
    let (stdout, _) = out(&o);
    assert!(
        stdout.contains("12 cached builds") && stdout.contains("build identical to 1 other"),
        "{stdout}"
    );
}

#[test]
fn two_shards_merged_hold_what_one_unsharded_run_holds_and_merging_again_adds_nothing() {
    let f = Fixture::new(&specs(9, |_, _| {}), &with_build(TESTS));
    let range = f.range();
    let whole = f.dir.path().join("whole");
    let shard = |i: usize| f.dir.path().join(format!("shard{i}"));
    let run = |cache: &Path, extra: &[&str]| {
        let o = with_cache(&f, cache)
            .args(["run", "value,size", &range, "--format", "json"])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", out(&o).1);
        let text = out(&o).0;
        serde_json::from_str::<serde_json::Value>(text.lines().last().unwrap()).unwrap()
    };
    run(&whole, &[]);
    let a = run(&shard(1), &["--shard", "1/2"]);
    let b = run(&shard(2), &["--shard", "2/2"]);
    // Every shard holds both ends of the range (issue 60): the old end in each, the newest in
    // the shard that would not hold it: the 8 commits and three ends again.
    assert_eq!(
        a["commits"].as_u64().unwrap() + b["commits"].as_u64().unwrap(),
        8 + 3
    );
    assert_eq!(a["shard"], "1/2");
    let merged = f.dir.path().join("merged");
    let merge = |args: &[&Path]| {
        let mut c = with_cache(&f, &merged);
        c.arg("merge");
        for a in args {
            c.arg(a);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", out(&o).1);
        out(&o).0
    };
    let said = merge(&[&shard(1), &shard(2)]);
    // The whole run's 8 commits × (3 runs of value, 1 of size), and the ends the shards both
    // hold measured again: 11 commits' worth.
    assert!(said.contains("added 44 samples"), "{said}");
    let show = |cache: &Path, test: &str| {
        let o = with_cache(&f, cache)
            .args(["show", test, &range, "--format", "json"])
            .output()
            .unwrap();
        let mut v = serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap();
        // When and how long each run took (and its window of time) differ between machines
        // and runs; what was measured (commit, test, round, value) must not.
        for sample in v["samples"].as_array_mut().into_iter().flatten() {
            let s = sample.as_object_mut().unwrap();
            for k in [
                "time",
                "timestamp",
                "wall",
                "user",
                "sys",
                "max_rss",
                "window",
            ] {
                s.remove(k);
            }
        }
        v
    };
    // Every commit the whole run measured is in the merged store with at least its runs, and
    // the sizes (one number a build) are the same.
    let per_commit = |v: &serde_json::Value| -> Vec<(String, u64, Option<f64>)> {
        v["commits"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["n"].as_u64().unwrap_or(0) > 0)
            .map(|c| {
                (
                    c["commit"].as_str().unwrap().to_string(),
                    c["n"].as_u64().unwrap(),
                    c["median"].as_f64(),
                )
            })
            .collect()
    };
    for test in ["value", "size"] {
        let (m, w) = (
            per_commit(&show(&merged, test)),
            per_commit(&show(&whole, test)),
        );
        for (commit, n, median) in &w {
            let got = m.iter().find(|x| &x.0 == commit);
            assert!(got.is_some_and(|x| x.1 >= *n), "{test} {commit}: {m:?}");
            if test == "size" {
                assert_eq!(got.unwrap().2, *median, "{test} {commit}");
            }
        }
    }
    // Twice, and a store with itself: nothing more.
    let before = show(&merged, "value");
    assert!(merge(&[&shard(1), &shard(2)]).contains("added 0 samples"));
    assert!(merge(&[&merged]).contains("added 0 samples"));
    assert_eq!(show(&merged, "value"), before);
    // A folder without a store: exit 2, named.
    let o = with_cache(&f, &merged)
        .arg("merge")
        .arg(f.dir.path().join("nowhere"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(out(&o).1.contains("nowhere"), "{}", out(&o).1);
}

#[test]
fn cache_gc_evicts_least_recently_used_builds_never_results_and_rm_removes_one() {
    let f = Fixture::new(&specs(6, |_, _| {}), &with_build(TESTS));
    f.run_json("value", &f.range(), &[]);
    let results = std::fs::read(f.cache.join("results/value.pbs")).unwrap();
    // Use the newest commit again so it is the most recently used.
    f.run_json("value", &f.ids[5], &["--again"]);
    let o = f.cmd().args(["cache", "ls"]).output().unwrap();
    let (ls, _) = out(&o);
    assert!(
        ls.contains("5 cached builds") && ls.contains("    6 samples"),
        "{ls}"
    );

    let o = f
        .cmd()
        .args(["cache", "gc", "--max-size", "1"])
        .output()
        .unwrap();
    let (said, err) = out(&o);
    assert!(o.status.success(), "{err}");
    assert!(said.contains("evicted 5 builds and 1 worktree"), "{said}");
    assert!(built(&f.cache).is_empty());
    assert_eq!(
        std::fs::read(f.cache.join("results/value.pbs")).unwrap()[..results.len()],
        results[..]
    );
    assert_eq!(f.show("value", &f.range())["commits"][0]["n"], 3);
    // Nothing is linked any more: the objects went too.
    let objects = std::fs::read_dir(f.cache.join("objects"))
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap())
        .count();
    assert_eq!(objects, 0);

    // With room for some: the least recently used go first.
    f.run_json("value", &f.range(), &["--again"]);
    f.run_json("value", &f.ids[5], &["--again"]);
    let o = f
        .cmd()
        .args(["cache", "gc", "--max-size", "100M"])
        .output()
        .unwrap();
    assert!(out(&o).0.contains("evicted 0 builds"), "{}", out(&o).0);
    let o = f.cmd().args(["cache", "rm", &f.ids[5]]).output().unwrap();
    assert!(out(&o).0.contains("removed 1 cache entry"), "{}", out(&o).0);
    assert!(!built(&f.cache).contains(&f.ids[5]));
    assert_eq!(built(&f.cache).len(), 4);
}
