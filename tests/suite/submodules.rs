//! Issue 52: projects whose sources live partly in git submodules. Each worktree checks out
//! the commit its superproject commit pins (nested submodules too) from the user's own clone,
//! never touching it; a pin that is not there makes that commit unbuildable, named; a culprit
//! that only moves a pin is named with what it moved.

use std::path::{Path, PathBuf};

use perfbisect::scaffold::demo::git;

/// git with file:// submodules allowed (git refuses them by default since 2.38.1).
fn sgit(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["-c", "protocol.file.allow=always"];
    all.extend_from_slice(args);
    git(dir, &all, None).unwrap()
}

fn write(dir: &Path, path: &str, text: &str) {
    let p = dir.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn commit(dir: &Path, subject: &str) -> String {
    sgit(dir, &["add", "-A"]);
    sgit(dir, &["commit", "-q", "-m", subject]);
    sgit(dir, &["rev-parse", "HEAD"]).trim().to_string()
}

/// A library repository whose value is `values[i]` at its commit `i` (the header that a
/// superproject's program prints), with a nested submodule `vendor` (a repository of its own
/// holding an offset the program adds).
struct Repos {
    dir: tempfile::TempDir,
    top: PathBuf,
    /// The library's commits, oldest first.
    lib: Vec<String>,
    /// The superproject's commits, oldest first.
    ids: Vec<String>,
}

const BUILD: &str = r#"
[build]
command = "cc -O0 -o app app.c"
artifacts = ["app"]

[tests.value]
command = "./app"
metric = { regex = "value: ([0-9]+)" }
deterministic = true
direction = "lower"
"#;

/// The superproject: `app.c` prints the library's value plus the vendor's offset. Its
/// commits: add the submodule at lib 0; docs; bump to lib 1 (no change of value); docs;
/// bump to lib 3 (lib 2 raised the value); docs.
fn repos() -> Repos {
    let dir = tempfile::tempdir().unwrap();
    let vendor = dir.path().join("vendor");
    std::fs::create_dir_all(&vendor).unwrap();
    sgit(&vendor, &["init", "-q", "-b", "main", "."]);
    write(&vendor, "v.h", "#define VENDOR_OFFSET 7\n");
    commit(&vendor, "Vendor offset");

    let lib_dir = dir.path().join("lib");
    std::fs::create_dir_all(&lib_dir).unwrap();
    sgit(&lib_dir, &["init", "-q", "-b", "main", "."]);
    sgit(
        &lib_dir,
        &["submodule", "add", "-q", vendor.to_str().unwrap(), "vendor"],
    );
    let mut lib = Vec::new();
    for (i, v) in [1000, 1000, 1100, 1100].iter().enumerate() {
        write(
            &lib_dir,
            "lib.h",
            &format!("/* lib {i} */\n#define LIB_VALUE {v}\n"),
        );
        lib.push(commit(&lib_dir, &format!("Lib {i}")));
    }

    let top = dir.path().join("super");
    std::fs::create_dir_all(&top).unwrap();
    sgit(&top, &["init", "-q", "-b", "main", "."]);
    write(
        &top,
        "app.c",
        "#include <stdio.h>\n#include \"lib/lib.h\"\n#include \"lib/vendor/v.h\"\n\
         int main(void) { printf(\"value: %d\\n\", LIB_VALUE + VENDOR_OFFSET); return 0; }\n",
    );
    sgit(
        &top,
        &["submodule", "add", "-q", lib_dir.to_str().unwrap(), "lib"],
    );
    let pin = |i: usize| {
        sgit(&top.join("lib"), &["checkout", "-q", &lib[i]]);
    };
    pin(0);
    let mut ids = vec![commit(&top, "Add lib as a submodule")];
    write(&top, "README", "docs 1\n");
    ids.push(commit(&top, "Docs 1"));
    pin(1);
    ids.push(commit(&top, "Bump lib to 1"));
    write(&top, "README", "docs 2\n");
    ids.push(commit(&top, "Docs 2"));
    pin(3);
    ids.push(commit(&top, "Bump lib to 3"));
    write(&top, "README", "docs 3\n");
    ids.push(commit(&top, "Docs 3"));
    std::fs::write(dir.path().join("perfbisect.toml"), BUILD).unwrap();
    Repos { dir, top, lib, ids }
}

impl Repos {
    fn cmd(&self) -> assert_cmd::Command {
        let mut c = assert_cmd::Command::cargo_bin("perfbisect").unwrap();
        c.arg("--repo")
            .arg(&self.top)
            .arg("--config")
            .arg(self.dir.path().join("perfbisect.toml"))
            .arg("--cache")
            .arg(self.dir.path().join("cache"))
            .arg("--no-progress")
            .env("NO_COLOR", "1")
            .timeout(std::time::Duration::from_secs(600));
        c
    }

    /// What perfbisect must never change in the user's clone: HEAD, index, refs and
    /// checkout of the superproject and of each submodule repository.
    fn user_state(&self) -> Vec<String> {
        let mut out = Vec::new();
        for d in [self.top.clone(), self.top.join("lib")] {
            for args in [
                &["rev-parse", "HEAD"][..],
                &["for-each-ref"],
                &["status", "--porcelain", "--ignore-submodules=none"],
            ] {
                out.push(sgit(&d, args));
            }
        }
        for index in [".git/index", ".git/modules/lib/index"] {
            out.push(format!("{:?}", std::fs::read(self.top.join(index)).ok()));
        }
        out
    }
}

#[test]
fn a_submodule_bump_that_moves_the_metric_is_found_and_named_with_what_it_moved() {
    let r = repos();
    let before = r.user_state();
    let range = format!("{}..{}", r.ids[0], r.ids[5]);
    let out = r
        .cmd()
        .args(["find", "value", &range, "--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["verdict"], "culprit", "{j}");
    assert_eq!(j["culprit"]["commit"], r.ids[4].as_str(), "{j}");
    // Lib and vendor both count: 1000 + 7 before, 1100 + 7 after.
    assert_eq!(j["culprit"]["before"]["median"], 1007.0, "{j}");
    assert_eq!(j["culprit"]["after"]["median"], 1107.0, "{j}");
    let bump = format!(
        "{} bumps `lib` {} → {}, 2 commits of lib; the pin is all it changes",
        &r.ids[4][..10],
        &r.lib[1][..7],
        &r.lib[3][..7]
    );
    let notes = j["notes"].to_string();
    assert!(notes.contains(&bump), "{notes}");
    assert!(
        notes.contains(&format!(
            "`git -C lib log --oneline {}..{}`",
            &r.lib[1][..7],
            &r.lib[3][..7]
        )),
        "{notes}"
    );
    // The text and the Markdown say it too (a verdict found once is stated again by report).
    let out = r.cmd().args(["find", "value", &range]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("note: {bump}")), "{text}");
    let out = r
        .cmd()
        .args(["report", "value", &range, "--format", "md"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        md.contains("bumps") && md.contains("2 commits of lib"),
        "{md}"
    );
    assert_eq!(r.user_state(), before, "the user's clone was changed");
}

#[test]
fn worktrees_hold_the_pinned_submodule_commits_and_switch_only_what_differs() {
    let r = repos();
    let before = r.user_state();
    let repo = gix::open(&r.top).unwrap();
    let id = |i: usize| gix::ObjectId::from_hex(r.ids[i].as_bytes()).unwrap();
    let root = r.dir.path().join("wt");
    let wt = perfbisect::git::worktree::Worktree::slot(&root, 0);
    wt.switch(&repo, id(0)).unwrap();
    let header = || std::fs::read_to_string(wt.dir.join("lib/lib.h")).unwrap();
    assert!(header().contains("lib 0"), "{}", header());
    assert_eq!(
        std::fs::read_to_string(wt.dir.join("lib/vendor/v.h")).unwrap(),
        "#define VENDOR_OFFSET 7\n",
        "the nested submodule is checked out too"
    );
    // A build changed a file of the submodule: the next switch writes it back.
    std::fs::write(wt.dir.join("lib/lib.h"), "scribbled").unwrap();
    let s = wt.switch(&repo, id(1)).unwrap();
    assert_eq!((s.restored, s.written), (1, 2), "{s:?}");
    assert!(header().contains("lib 0"));
    // Moving the pin rewrites the submodule's changed file, nothing else.
    let s = wt.switch(&repo, id(2)).unwrap();
    assert_eq!((s.written, s.deleted, s.fresh), (1, 0, false), "{s:?}");
    assert!(header().contains("lib 1"));
    let s = wt.switch(&repo, id(4)).unwrap();
    assert_eq!(s.written, 2, "README and lib.h: {s:?}");
    assert!(header().contains("lib 3"));
    // The worktree is a repository of its own at the commit (HEAD, an index that matches its
    // files: `git status` finds nothing changed, the submodule's files included); the
    // submodule has no `.git`, as in a tarball, so git sees its gitlink as not checked out.
    assert!(!wt.dir.join("lib/.git").exists() && wt.dir.join(".git").is_dir());
    assert_eq!(sgit(&wt.dir, &["rev-parse", "HEAD"]).trim(), r.ids[4]);
    assert_eq!(
        sgit(&wt.dir, &["status", "--porcelain", "--untracked-files=no"]),
        ""
    );
    assert_eq!(r.user_state(), before, "the user's clone was changed");
}

#[test]
fn a_pin_whose_commit_is_not_in_the_clone_is_named_and_that_commit_is_unbuildable() {
    let r = repos();
    // A commit pinning a lib commit nobody has (as after a force-push upstream).
    let ghost = "0123456789abcdef0123456789abcdef01234567";
    sgit(
        &r.top,
        &[
            "update-index",
            "--cacheinfo",
            &format!("160000,{ghost},lib"),
        ],
    );
    sgit(
        &r.top,
        &["commit", "-q", "-m", "Pin a commit lib never had"],
    );
    let bad = sgit(&r.top, &["rev-parse", "HEAD"]).trim().to_string();
    let out = r
        .cmd()
        .args(["run", "value", &format!("{}..{bad}", r.ids[4])])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the commit before it builds: {err}");
    assert!(
        err.contains(&format!(
            "submodule `lib` pins commit {}, which is not in your clone",
            &ghost[..10]
        )) && err.contains(&bad[..10]),
        "{err}"
    );
    assert!(err.contains(".git/modules/lib"), "where it looked: {err}");
    let out = r
        .cmd()
        .args(["show", "value", &bad, "--format", "json"])
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["commits"][0]["status"], "build-failed", "{j}");
}

#[test]
fn a_submodule_the_clone_never_fetched_is_read_from_its_local_url() {
    let r = repos();
    // The user's clone without its submodules (`git clone` without --recurse-submodules):
    // the URL in .gitmodules is a local path, so the pinned commits are still found there.
    let bare = r.dir.path().join("clone");
    sgit(
        r.dir.path(),
        &[
            "clone",
            "-q",
            r.top.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    assert!(!bare.join(".git/modules").exists());
    let repo = gix::open(&bare).unwrap();
    let wt = perfbisect::git::worktree::Worktree::slot(&r.dir.path().join("wt"), 0);
    let id = gix::ObjectId::from_hex(r.ids[4].as_bytes()).unwrap();
    wt.switch(&repo, id).unwrap();
    assert!(std::fs::read_to_string(wt.dir.join("lib/lib.h"))
        .unwrap()
        .contains("lib 3"));
    assert!(wt.dir.join("lib/vendor/v.h").is_file());
    // A submodule declared with `update = none` stays an empty folder, as git leaves it.
    sgit(
        &bare,
        &[
            "config",
            "-f",
            ".gitmodules",
            "submodule.lib.update",
            "none",
        ],
    );
    sgit(&bare, &["commit", "-q", "-am", "Leave lib alone"]);
    let head =
        gix::ObjectId::from_hex(sgit(&bare, &["rev-parse", "HEAD"]).trim().as_bytes()).unwrap();
    let repo = gix::open(&bare).unwrap();
    wt.switch(&repo, head).unwrap();
    assert!(wt.dir.join("lib").is_dir());
    assert!(!wt.dir.join("lib/lib.h").exists());
}
