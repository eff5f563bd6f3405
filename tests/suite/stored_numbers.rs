//! What the store keeps is true, through the real binary on generated repositories: an export
//! imported again adds nothing where its runs are and exactly its runs into an empty cache,
//! `merge` is all-or-nothing, no record too large to read is written, stores made by `import`
//! and `merge` are as readable as those `run` makes, `import` refuses positions (`HEAD`, a
//! branch) and out-of-range timestamps, names the right lines of a CRLF file, and `cache gc`
//! removes the temp file a killed import leaves.

use crate::common;

use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{specs, with_build, Fixture};

const TESTS: &str = r#"
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
repeats = 3
threshold = "2%"
"#;

fn fixture(n: usize) -> Fixture {
    Fixture::new(
        &specs(n, |i, c| {
            c.metric = if i >= 3 { 1100.0 } else { 1000.0 };
            c.noise_pct = 1.0;
        }),
        &with_build(TESTS),
    )
}

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

/// `import FILE` into `cache`: (exit code, stdout, stderr).
fn import(f: &Fixture, cache: &Path, file: &Path) -> (Option<i32>, String, String) {
    let o = with_cache(f, cache)
        .arg("import")
        .arg(file)
        .output()
        .unwrap();
    let (so, se) = out(&o);
    (o.status.code(), so, se)
}

/// The samples `show --format json` lists for the whole range in `cache`.
fn stored_samples(f: &Fixture, cache: &Path) -> usize {
    let o = with_cache(f, cache)
        .args(["show", "value", &f.range(), "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out(&o).1);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["samples"].as_array().unwrap().len()
}

#[test]
fn an_export_imported_adds_nothing_where_its_runs_are_and_exactly_its_runs_elsewhere() {
    let f = fixture(5);
    let run = f.run_json("value", &f.range(), &[]);
    let runs = run["runs"].as_u64().unwrap() as usize;
    assert!(runs >= 12, "{run}");
    let store = f.cache.join("results/value.pbs");
    let before = std::fs::read(&store).unwrap();
    for format in ["json", "csv"] {
        let o = f
            .cmd()
            .args(["show", "value", &f.range(), "--format", format])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", out(&o).1);
        let file = f.dir.path().join(format!("export.{format}"));
        std::fs::write(&file, &o.stdout).unwrap();

        // Into the cache it came from: every run is already there.
        let (code, stdout, stderr) = import(&f, &f.cache, &file);
        assert_eq!(code, Some(0), "{format}: {stderr}");
        assert!(
            stdout.contains("imported 0 samples")
                && stdout.contains(&format!("{runs} already in the store")),
            "{format}: {stdout}"
        );
        assert_eq!(std::fs::read(&store).unwrap(), before, "{format}");

        // Into an empty cache: exactly the runs, once; again adds nothing.
        let empty = f.dir.path().join(format!("empty-{format}"));
        let (code, stdout, stderr) = import(&f, &empty, &file);
        assert_eq!(code, Some(0), "{format}: {stderr}");
        assert!(
            stdout.contains(&format!("imported {runs} samples")),
            "{format}: {stdout}"
        );
        assert_eq!(stored_samples(&f, &empty), runs, "{format}");
        let (_, stdout, _) = import(&f, &empty, &file);
        assert!(stdout.contains("imported 0 samples"), "{format}: {stdout}");
        assert_eq!(stored_samples(&f, &empty), runs, "{format}");
    }
}

#[test]
fn merge_with_one_unreadable_source_writes_nothing() {
    let f = fixture(3);
    let shard = f.dir.path().join("shard");
    with_cache(&f, &shard)
        .args(["run", "value", &f.range()])
        .assert()
        .success();
    // A source with a good store (`value`, merged first by name) and a corrupt one.
    std::fs::write(shard.join("results/zzz.pbs"), b"not a result store at all").unwrap();
    let dest = f.dir.path().join("dest");
    let o = with_cache(&f, &dest)
        .arg("merge")
        .arg(&shard)
        .output()
        .unwrap();
    let (_, stderr) = out(&o);
    assert!(!o.status.success(), "{stderr}");
    assert!(stderr.contains("zzz.pbs"), "{stderr}");
    assert!(
        !dest.join("results/value.pbs").exists(),
        "value was merged before zzz was read: {stderr}"
    );
    // Fixed, it merges.
    std::fs::remove_file(shard.join("results/zzz.pbs")).unwrap();
    with_cache(&f, &dest)
        .arg("merge")
        .arg(&shard)
        .assert()
        .success();
    assert!(dest.join("results/value.pbs").exists());
}

#[test]
fn an_import_field_over_the_record_limit_is_refused_and_nothing_unreadable_is_stored() {
    let f = fixture(3);
    let machine = "m".repeat(1_100_000);
    let file = f.dir.path().join("huge.csv");
    std::fs::write(
        &file,
        format!(
            "commit,test,value,timestamp,round,machine\n{id},value,1000,1700000000,R1,cron\n{id},value,1001,1700000001,R2,{machine}\n",
            id = f.ids[1]
        ),
    )
    .unwrap();
    let (code, _, stderr) = import(&f, &f.cache, &file);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("huge.csv:3") && stderr.contains("`machine`"),
        "{stderr}"
    );
    assert!(!f.cache.join("results/value.pbs").exists(), "{stderr}");
    // Nothing stored means nothing corrupt either: show reads without a warning.
    let o = f
        .cmd()
        .args(["show", "value", &f.range()])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(!out(&o).1.contains("corrupt"), "{}", out(&o).1);
}

#[test]
fn stores_made_by_import_and_merge_have_the_mode_of_those_run_makes() {
    let f = fixture(3);
    f.run_json("value", &f.range(), &[]);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let by_run = mode(&f.cache.join("results/value.pbs"));
    // The usual umask (022) gives 0644; whatever it is, all three agree.
    let csv = f.dir.path().join("rows.csv");
    std::fs::write(
        &csv,
        format!("commit,test,value\n{},value,1000\n", f.ids[1]),
    )
    .unwrap();
    let imported = f.dir.path().join("imported");
    let (code, _, stderr) = import(&f, &imported, &csv);
    assert_eq!(code, Some(0), "{stderr}");
    let merged = f.dir.path().join("merged");
    with_cache(&f, &merged)
        .arg("merge")
        .arg(&f.cache)
        .assert()
        .success();
    assert_eq!(mode(&imported.join("results/value.pbs")), by_run);
    assert_eq!(mode(&merged.join("results/value.pbs")), by_run);
    // The fingerprints and manifests `run` writes and merge copies are new files like the
    // stores (not a temp file's 0600: a shared cache is read by other users).
    for cache in [&f.cache, &merged] {
        for dir in ["fingerprints", "manifests"] {
            for e in std::fs::read_dir(cache.join(dir)).unwrap().flatten() {
                assert_eq!(mode(&e.path()), by_run, "{}", e.path().display());
            }
        }
    }
    if by_run & 0o044 == 0o044 {
        assert_eq!(mode(&imported.join("results/value.pbs")) & 0o044, 0o044);
    }
}

#[test]
fn import_refuses_positions_and_out_of_range_timestamps() {
    let f = fixture(3);
    f.git(&["branch", "feature", &f.ids[1]]);
    f.git(&["tag", "v1", &f.ids[1]]);
    let cases = [
        ("HEAD,value,1000,", "`HEAD` names a position"),
        ("feature,value,1000,", "`feature` names a position"),
        ("HEAD~1,value,1000,", "`HEAD~1` names a position"),
        ("ID,value,1000,1e30", "timestamp `1e30` is out of range"),
        ("ID,value,1000,-5", "timestamp `-5` is out of range"),
    ];
    for (row, why) in cases {
        let row = row.replace("ID", &f.ids[1][..8]);
        let file = f.dir.path().join("bad.csv");
        std::fs::write(
            &file,
            format!("commit,test,value,timestamp\nv1,value,999,1700000000\n{row}\n",),
        )
        .unwrap();
        let (code, _, stderr) = import(&f, &f.cache, &file);
        assert_eq!(code, Some(2), "{row}: {stderr}");
        assert!(
            stderr.contains(&format!("bad.csv:3: {}", why.split('`').next().unwrap()))
                && stderr.contains(why),
            "{row}: {stderr}"
        );
        assert!(!f.cache.join("results/value.pbs").exists(), "{row}");
    }
    // The JSON form too, and its column is named.
    let file = f.dir.path().join("bad.json");
    std::fs::write(
        &file,
        format!(
            "[{{\"commit\": \"{}\", \"test\": \"value\", \"value\": 1, \"timestamp\": 1e30}}]",
            f.ids[1]
        ),
    )
    .unwrap();
    let (code, _, stderr) = import(&f, &f.cache, &file);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("bad.json:1: timestamp `1000000000000000000000000000000` is out of range")
            || stderr.contains("bad.json:1: timestamp `1e30` is out of range"),
        "{stderr}"
    );
    // Ids (full and short) and tags are commits.
    let file = f.dir.path().join("good.csv");
    std::fs::write(
        &file,
        format!(
            "commit,test,value,timestamp\nv1,value,999,1700000000\n{},value,1000,1700000001\n{},value,1001,1700000002\n",
            f.ids[1],
            &f.ids[2][..7]
        ),
    )
    .unwrap();
    let (code, stdout, stderr) = import(&f, &f.cache, &file);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("imported 3 samples"), "{stdout}");
}

#[test]
fn a_crlf_import_names_the_lines_a_text_editor_shows() {
    let f = fixture(3);
    let mut csv = String::from("commit,test,value\r\n");
    let _ = write!(csv, "{},value,1000\r\n", f.ids[1]);
    let _ = write!(csv, "{},value,fast\r\n", f.ids[1]);
    let _ = write!(csv, "{},value,1001\r\n", f.ids[2]);
    let _ = write!(csv, "{},value\r\n", f.ids[2]);
    let file = f.dir.path().join("crlf.csv");
    std::fs::write(&file, csv).unwrap();
    let (code, _, stderr) = import(&f, &f.cache, &file);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("crlf.csv:3: skipped: value `fast`")
            && stderr.contains("crlf.csv:5: skipped: 2 fields"),
        "{stderr}"
    );
}

#[test]
fn cache_gc_removes_the_temp_file_a_killed_import_left() {
    let f = fixture(3);
    let csv = f.dir.path().join("rows.csv");
    std::fs::write(
        &csv,
        format!("commit,test,value\n{},value,1000\n", f.ids[1]),
    )
    .unwrap();
    let (code, _, stderr) = import(&f, &f.cache, &csv);
    assert_eq!(code, Some(0), "{stderr}");
    // What `kill -9` in the middle of an import's rewrite leaves: its temp file beside the
    // store (and one of a merge's copies).
    let results = f.cache.join("results");
    let left = results.join(".value.pbs.Ab12Cd");
    std::fs::write(&left, b"half a store").unwrap();
    std::fs::create_dir_all(f.cache.join("fingerprints")).unwrap();
    let merge_left = f.cache.join("fingerprints/.merge.Xy34Zw");
    std::fs::write(&merge_left, b"half").unwrap();
    f.cmd().args(["cache", "gc"]).assert().success();
    assert!(!left.exists());
    assert!(!merge_left.exists());
    assert!(results.join("value.pbs").exists());
    assert_eq!(stored_samples(&f, &f.cache), 1);
}
