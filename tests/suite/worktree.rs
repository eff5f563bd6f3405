//! perfbisect's worktrees: switching commits rewrites only what differs.

use crate::common;

use std::time::{Duration, SystemTime};

use perfbisect::git::worktree::Worktree;

#[test]
fn switching_rewrites_only_changed_files_and_deletes_removed_ones() {
    let f = common::Fixture::with_demo_config(&common::specs(2, |_, _| {}));
    // A third commit adds a nested file and an executable, a fourth removes the nested file.
    std::fs::create_dir_all(f.repo.join("extra/deep")).unwrap();
    std::fs::write(f.repo.join("extra/deep/file.txt"), "x\n").unwrap();
    std::fs::write(f.repo.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    f.git(&["add", "extra", "run.sh"]);
    f.git(&["update-index", "--chmod=+x", "run.sh"]);
    f.git(&["commit", "-qm", "Add extra"]);
    f.git(&["rm", "-rq", "extra"]);
    f.git(&["commit", "-qm", "Remove extra"]);
    let ids: Vec<String> = f
        .git(&["rev-list", "--reverse", "HEAD"])
        .lines()
        .map(String::from)
        .collect();
    let repo = gix::open(&f.repo).unwrap();
    let id = |i: usize| gix::ObjectId::from_hex(ids[i].as_bytes()).unwrap();

    let root = f.dir.path().join("wt");
    let wt = Worktree::slot(&root, 0);
    let s = wt.switch(&repo, id(0)).unwrap();
    assert!(s.fresh);
    let app = wt.dir.join("app.c");
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(&app)
        .unwrap()
        .set_modified(old)
        .unwrap();
    // A build output that must survive switches.
    std::fs::write(wt.dir.join("app"), "binary").unwrap();

    let s = wt.switch(&repo, id(1)).unwrap();
    assert_eq!((s.written, s.deleted, s.fresh), (1, 0, false), "{s:?}");
    assert_eq!(std::fs::metadata(&app).unwrap().modified().unwrap(), old);
    assert!(std::fs::read_to_string(wt.dir.join("params.h"))
        .unwrap()
        .contains("commit 2"));

    let s = wt.switch(&repo, id(2)).unwrap();
    assert_eq!((s.written, s.deleted), (2, 0), "{s:?}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(wt.dir.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111);

    let s = wt.switch(&repo, id(3)).unwrap();
    assert_eq!((s.written, s.deleted), (0, 1), "{s:?}");
    assert!(
        !wt.dir.join("extra").exists(),
        "emptied directories are removed"
    );
    assert_eq!(std::fs::metadata(&app).unwrap().modified().unwrap(), old);
    assert_eq!(
        std::fs::read_to_string(wt.dir.join("app")).unwrap(),
        "binary"
    );
    assert_eq!(wt.current(), Some(id(3)));

    // Back in time, and an interrupted switch (no state file) starts from scratch.
    let s = wt.switch(&repo, id(0)).unwrap();
    assert_eq!(s.written, 1);
    std::fs::remove_file(root.join("0.commit")).unwrap();
    let s = wt.switch(&repo, id(1)).unwrap();
    assert!(s.fresh);
    assert!(!wt.dir.join("app").exists());
}

/// A plain repository: commit `i` (1-based) has `v.txt` = the value of its group of three
/// commits, `doc.txt` and `n.txt` = i; returns the ids and the values each commit must measure.
fn scribbled_repo(dir: &std::path::Path, n: usize) -> (Vec<String>, Vec<u64>) {
    let git = |args: &[&str]| perfbisect::scaffold::demo::git(dir, args, None).unwrap();
    std::fs::create_dir_all(dir).unwrap();
    git(&["init", "-q", "-b", "main"]);
    let mut ids = Vec::new();
    let mut values = Vec::new();
    for i in 1..=n {
        // Neighbouring commits agree on v.txt: that is where a poisoned slot shows.
        let v = 100 + (i as u64 - 1) / 3;
        std::fs::write(dir.join("v.txt"), format!("{v}\n")).unwrap();
        std::fs::write(dir.join("doc.txt"), "documentation\n").unwrap();
        std::fs::write(dir.join("n.txt"), format!("{i}\n")).unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-qm", &format!("Commit {i}")]);
        ids.push(git(&["rev-parse", "HEAD"]).trim().to_string());
        values.push(v);
    }
    (ids, values)
}

#[test]
fn builds_that_rewrite_or_delete_tracked_files_do_not_leak_into_the_next_commit() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let (ids, values) = scribbled_repo(&repo, 10);
    // The build stamps a version into a tracked file and deletes another one; the value it
    // measures is what the commit's own tree held when the build started.
    let config = dir.path().join("perfbisect.toml");
    std::fs::write(
        &config,
        r#"
[build]
command = "test -f doc.txt || exit 7; cp v.txt out.txt && echo 999 > v.txt && rm doc.txt && chmod +x n.txt"
artifacts = ["out.txt"]

[tests.v]
command = "cat out.txt"
metric = { regex = "^([0-9]+)$" }
deterministic = true
"#,
    )
    .unwrap();
    let cache = dir.path().join("cache");
    let bin = || {
        let mut c = assert_cmd::Command::cargo_bin("perfbisect").unwrap();
        c.arg("--repo")
            .arg(&repo)
            .arg("--config")
            .arg(&config)
            .arg("--cache")
            .arg(&cache)
            .arg("--no-progress");
        c
    };
    // One job: every commit goes through the same worktree slot, one after the other.
    for range in [ids[0].clone(), format!("{}..{}", ids[0], ids[9])] {
        let out = bin()
            .args(["run", "v", &range, "--jobs", "1"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut got = Vec::new();
    for id in &ids {
        let out = bin()
            .args(["show", "v", id, "--format", "json"])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let c = &v["commits"][0];
        assert_eq!(c["status"], "ok", "commit {id}: {v}");
        got.push(c["median"].as_f64().unwrap() as u64);
    }
    assert_eq!(got, values, "every commit measured from its own tree");

    // Built once more (`run` may have used the slot since, to compare builds with pristine
    // ones), the slot holds the last commit as its build left it: switching to that same
    // commit again restores the stamped, the deleted and the chmod'ed file, and nothing else;
    // the build's untracked output is still there.
    for args in [
        &["cache", "rm", &ids[9]][..],
        &["run", "v", &ids[9], "--again"][..],
    ] {
        let out = bin().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let wt = Worktree::slot(&cache.join("worktrees"), 0);
    let g = gix::open(&repo).unwrap();
    let last = gix::ObjectId::from_hex(ids[9].as_bytes()).unwrap();
    let s = wt.switch(&g, last).unwrap();
    assert!(!s.fresh);
    assert_eq!((s.restored, s.written, s.deleted), (3, 3, 0), "{s:?}");
    assert_eq!(
        std::fs::read_to_string(wt.dir.join("v.txt")).unwrap(),
        format!("{}\n", values[9])
    );
    assert!(wt.dir.join("doc.txt").is_file());
    assert!(wt.dir.join("out.txt").is_file(), "untracked outputs stay");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(wt.dir.join("n.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0, "a mode the build changed is restored");
}

#[test]
fn a_switch_to_the_same_commit_restores_what_a_build_changed_and_keeps_mtimes() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let (ids, _) = scribbled_repo(&repo, 2);
    let g = gix::open(&repo).unwrap();
    let id = |i: usize| gix::ObjectId::from_hex(ids[i].as_bytes()).unwrap();
    let wt = Worktree::slot(&dir.path().join("wt"), 0);
    wt.switch(&g, id(0)).unwrap();
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    for f in ["v.txt", "doc.txt"] {
        std::fs::File::options()
            .write(true)
            .open(wt.dir.join(f))
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    // Same size, same second: only the content tells.
    std::fs::write(wt.dir.join("v.txt"), "999\n").unwrap();
    let s = wt.switch(&g, id(0)).unwrap();
    assert_eq!((s.restored, s.written, s.fresh), (1, 1, false), "{s:?}");
    assert_eq!(
        std::fs::read_to_string(wt.dir.join("v.txt")).unwrap(),
        "100\n"
    );
    assert_eq!(
        std::fs::metadata(wt.dir.join("doc.txt"))
            .unwrap()
            .modified()
            .unwrap(),
        old,
        "untouched files keep their mtime"
    );
    // An untouched slot costs no writes at all.
    let s = wt.switch(&g, id(1)).unwrap();
    assert_eq!((s.restored, s.written), (0, 1), "{s:?}");
}

/// Issue 19.6: a build that replaced a tracked directory by a link to a directory outside the
/// cache (`rm -rf d && ln -s /elsewhere d`) does not make the next switch write, delete or
/// compare files there: the link is replaced by a real directory holding the next commit's
/// files, and what the link pointed to is untouched.
#[test]
fn a_link_a_build_left_where_a_directory_was_is_not_followed() {
    let outside = tempfile::tempdir().unwrap();
    let out = outside.path();
    std::fs::create_dir_all(out.join("sub")).unwrap();
    std::fs::write(out.join("sub/a.txt"), "value: 999\n").unwrap();
    std::fs::write(out.join("sub/b.txt"), "keep me\n").unwrap();
    let before = outside_files(out);
    let config = format!(
        r#"
[build]
command = "cat d/sub/a.txt > out.txt; rm -rf d && ln -s {} d"
artifacts = ["out.txt"]

[tests.value]
command = "cat out.txt"
metric = {{ regex = "^value: ([0-9.]+)" }}
repeats = 1
"#,
        out.display()
    );
    let f = common::Fixture::with_files(
        &[
            ("Base", vec![("README", "base\n".into())]),
            (
                "One",
                vec![
                    ("d/sub/a.txt", "value: 1\n".into()),
                    ("d/sub/b.txt", "b\n".into()),
                ],
            ),
            (
                "Two",
                vec![
                    ("d/sub/a.txt", "value: 2\n".into()),
                    ("d/sub/c.txt", "c\n".into()),
                ],
            ),
        ],
        &config,
    );
    // Commit Two drops b.txt (files_repo keeps earlier files, so remove it by hand).
    f.git(&["rm", "-q", "d/sub/b.txt"]);
    f.git(&["commit", "-q", "--amend", "--no-edit"]);
    let ids: Vec<String> = f
        .git(&["rev-list", "--reverse", "HEAD"])
        .lines()
        .map(String::from)
        .collect();
    for id in &ids[1..] {
        let o = f.cmd().args(["run", "value", id]).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert_eq!(
        outside_files(out),
        before,
        "files outside the cache changed"
    );
    let show = f.show("value", &format!("{}..{}", ids[0], ids[2]));
    assert_eq!(common::medians(&show), [Some(1.0), Some(2.0)], "{show}");

    // The slot holds commit Two's tree again once switched back and forth.
    let repo = gix::open(&f.repo).unwrap();
    let id = |i: usize| gix::ObjectId::from_hex(ids[i].as_bytes()).unwrap();
    let wt = Worktree::slot(&f.cache.join("worktrees"), 0);
    assert!(
        std::fs::symlink_metadata(wt.dir.join("d"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the build left its link"
    );
    wt.switch(&repo, id(1)).unwrap();
    std::fs::remove_dir_all(wt.dir.join("d")).unwrap();
    std::os::unix::fs::symlink(out, wt.dir.join("d")).unwrap();
    wt.switch(&repo, id(2)).unwrap();
    assert_eq!(
        outside_files(out),
        before,
        "files outside the cache changed"
    );
    assert!(std::fs::symlink_metadata(wt.dir.join("d"))
        .unwrap()
        .is_dir());
    assert_eq!(
        std::fs::read_to_string(wt.dir.join("d/sub/a.txt")).unwrap(),
        "value: 2\n"
    );
    assert!(wt.dir.join("d/sub/c.txt").is_file());
    assert!(!wt.dir.join("d/sub/b.txt").exists());
}

/// Every file below `dir` with its content, sorted.
fn outside_files(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let content = std::fs::read_to_string(&p).unwrap_or_default();
                out.push((p.strip_prefix(dir).unwrap().display().to_string(), content));
            }
        }
    }
    out.sort();
    out
}
