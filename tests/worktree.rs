//! perfbisect's worktrees: switching commits rewrites only what differs.

mod common;

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
