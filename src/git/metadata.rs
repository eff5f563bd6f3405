//! The git metadata of a build folder: each of perfbisect's worktrees holds a `.git` of its
//! own, so what a build script asks git (`git describe --tags --dirty`, `git rev-parse HEAD`,
//! a version script's `git rev-parse --is-inside-work-tree`) gets the answer a developer's
//! checkout of the same commit gets: the commit checked out (HEAD detached at it), the
//! user's tags, and an index that matches the files, so the folder is clean.
//!
//! It is a small repository of perfbisect's, never the user's: its objects are read through
//! `objects/info/alternates` from the user's object store (read only: nothing of theirs is
//! written, no ref, HEAD or index of theirs moves, and nothing is registered under their
//! `.git/worktrees/`), and its refs are copies of the user's tags, taken again at each
//! checkout. A build folder inside the user's checkout (the default cache is) also stops
//! there: a build's `git clean -fdx` or `git describe` no longer reaches the user's repository.
//!
//! Submodules are left as a tarball leaves them (no `.git` of their own): git then sees each
//! gitlink as not checked out, which leaves the superproject clean.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use gix::bstr::ByteSlice;
use gix::ObjectId;

/// The name of the folder a build folder's metadata lives in.
pub const DOT_GIT: &str = ".git";

/// Write (or rewrite) the `.git` of the build folder `dir`, which holds `commit`'s tree as
/// just checked out from `repo` (the user's repository): HEAD detached at `commit`, the
/// user's tags, the user's objects through alternates, and an index of `commit`'s tree with
/// the stat data of the files now in `dir`.
pub fn write(repo: &gix::Repository, dir: &Path, commit: ObjectId) -> anyhow::Result<()> {
    let git = dir.join(DOT_GIT);
    // A build may have left anything there (a file, a link): only a real folder of ours.
    match fs::symlink_metadata(&git) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            fs::remove_file(&git).with_context(|| format!("cannot remove {}", git.display()))?
        }
        Err(_) => {}
    }
    for sub in ["objects/info", "objects/pack", "refs/heads", "refs/tags"] {
        fs::create_dir_all(git.join(sub))
            .with_context(|| format!("cannot create {}", git.join(sub).display()))?;
    }
    put(
        &git.join("config"),
        b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
          \tlogallrefupdates = false\n",
    )?;
    put(
        &git.join("description"),
        b"A build folder of perfbisect's: HEAD is the commit built; objects are the user's (alternates).\n",
    )?;
    let objects = objects_dir(repo);
    put(
        &git.join("objects/info/alternates"),
        format!("{}\n", objects.display()).as_bytes(),
    )?;
    // A shallow clone's boundary: without it git would look for parents that are not there.
    let shallow = repo.common_dir().join("shallow");
    match fs::read(&shallow) {
        Ok(bytes) => put(&git.join("shallow"), &bytes)?,
        Err(_) => {
            let _ = fs::remove_file(git.join("shallow"));
        }
    }
    put(&git.join("packed-refs"), tags(repo).as_bytes())?;
    put(&git.join("HEAD"), format!("{commit}\n").as_bytes())?;
    write_index(repo, dir, &git, commit)
}

/// The user's object store, absolute (alternates name folders, read relative to nothing).
fn objects_dir(repo: &gix::Repository) -> PathBuf {
    let dir = repo.common_dir().join("objects");
    fs::canonicalize(&dir).unwrap_or(dir)
}

/// The user's tags as a `packed-refs` file (annotated tags name their tag object, which the
/// alternates hold, as git's own `pack-refs` writes them).
fn tags(repo: &gix::Repository) -> String {
    let mut lines: Vec<(String, ObjectId)> = Vec::new();
    if let Ok(refs) = repo.references() {
        if let Ok(it) = refs.tags() {
            for r in it.flatten() {
                let name = r.name().as_bstr().to_str_lossy().into_owned();
                if let Some(id) = r.target().try_id() {
                    lines.push((name, id.to_owned()));
                }
            }
        }
    }
    lines.sort();
    let mut out = String::from("# pack-refs with: sorted \n");
    for (name, id) in lines {
        out.push_str(&format!("{id} {name}\n"));
    }
    out
}

/// The index of `commit`'s tree, each file's entry with the stat data of the file `dir`
/// holds now (git then finds the folder clean without reading a file), written to
/// `git/index` through a temporary file. Never through gix's own `write`, which would write
/// the user's index.
fn write_index(
    repo: &gix::Repository,
    dir: &Path,
    git: &Path,
    commit: ObjectId,
) -> anyhow::Result<()> {
    let tree = repo
        .find_commit(commit)
        .with_context(|| format!("cannot read commit {commit}"))?
        .tree_id()
        .with_context(|| format!("cannot read the tree of {commit}"))?;
    let mut index = repo
        .index_from_tree(&tree)
        .map_err(|e| anyhow::anyhow!("cannot make the index of {commit}: {e}"))?;
    for (entry, path) in index.entries_mut_with_paths() {
        if entry.mode == gix::index::entry::Mode::COMMIT {
            continue;
        }
        let Ok(p) = path.to_str() else { continue };
        if let Ok(m) = fs::symlink_metadata(dir.join(p)) {
            entry.stat = stat_of(&m);
        }
    }
    let mut tmp = tempfile::NamedTempFile::new_in(git)
        .with_context(|| format!("cannot write in {}", git.display()))?;
    index
        .write_to(std::io::BufWriter::new(&mut tmp), Default::default())
        .map_err(|e| anyhow::anyhow!("cannot write the index of {commit}: {e}"))?;
    tmp.flush()?;
    tmp.persist(git.join("index"))
        .with_context(|| format!("cannot write {}", git.join("index").display()))?;
    Ok(())
}

/// Stat data as git's index keeps it (the inode change time, not the birth time; numbers
/// truncated to 32 bits, as git does).
fn stat_of(m: &fs::Metadata) -> gix::index::entry::Stat {
    let time = |s: i64, ns: i64| gix::index::entry::stat::Time {
        secs: s as u32,
        nsecs: ns as u32,
    };
    gix::index::entry::Stat {
        mtime: time(m.mtime(), m.mtime_nsec()),
        ctime: time(m.ctime(), m.ctime_nsec()),
        dev: m.dev() as u32,
        ino: m.ino() as u32,
        uid: m.uid(),
        gid: m.gid(),
        size: m.size() as u32,
    }
}

/// Write `bytes` to `path` unless it already holds them (a checkout rewrites only what moved).
fn put(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if fs::read(path).is_ok_and(|b| b == bytes) {
        return Ok(());
    }
    fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> (bool, String) {
        let o = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .output()
            .unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).trim().to_string(),
        )
    }

    /// A build folder answers `git describe --dirty` and `git rev-parse HEAD` as a developer's
    /// checkout of the same commit does, and the user's repository is left as it was.
    #[test]
    fn a_build_folder_describes_itself_as_the_commit_it_holds() {
        let d = tempfile::tempdir().unwrap();
        let user = d.path().join("user");
        fs::create_dir_all(&user).unwrap();
        let id = |s: &str| -> String { s.to_string() };
        let run = |args: &[&str]| {
            let (ok, out) = git(&user, args);
            assert!(ok, "git {args:?}");
            out
        };
        run(&["init", "-q", "-b", "main"]);
        run(&["config", "user.email", "t@example.com"]);
        run(&["config", "user.name", "t"]);
        fs::write(user.join("a.txt"), "one\n").unwrap();
        run(&["add", "a.txt"]);
        run(&["commit", "-q", "-m", "one"]);
        run(&["tag", "-a", "v1.0", "-m", "release"]);
        fs::write(user.join("a.txt"), "two\n").unwrap();
        run(&["commit", "-q", "-am", "two"]);
        let second = id(&run(&["rev-parse", "HEAD"]));
        fs::write(user.join("a.txt"), "three\n").unwrap();
        run(&["commit", "-q", "-am", "three"]);
        let before = (
            run(&["rev-parse", "HEAD"]),
            fs::read(user.join(".git/index")).unwrap(),
            run(&["for-each-ref"]),
        );

        let repo = gix::open(&user).unwrap();
        let root = d.path().join("cache");
        let wt = crate::git::worktree::Worktree::slot(&root, 0);
        let commit = ObjectId::from_hex(second.as_bytes()).unwrap();
        wt.switch(&repo, commit).unwrap();
        let (ok, described) = git(&wt.dir, &["describe", "--tags", "--dirty"]);
        assert!(ok);
        let short = &second[..7];
        assert!(
            described.starts_with("v1.0-1-g") && short.starts_with(&described[8..15]),
            "{described}"
        );
        assert_eq!(git(&wt.dir, &["rev-parse", "HEAD"]).1, second);
        assert_eq!(
            git(&wt.dir, &["rev-parse", "--show-toplevel"]).1,
            fs::canonicalize(&wt.dir).unwrap().to_string_lossy()
        );
        // A build output is untracked: still clean. A tracked file changed: dirty.
        fs::write(wt.dir.join("out.o"), "x").unwrap();
        assert!(!git(&wt.dir, &["describe", "--tags", "--dirty"])
            .1
            .ends_with("-dirty"));
        fs::write(wt.dir.join("a.txt"), "changed\n").unwrap();
        assert!(git(&wt.dir, &["describe", "--tags", "--dirty"])
            .1
            .ends_with("-dirty"));
        // The next switch puts the file back, and the folder is clean at the new commit.
        let head = ObjectId::from_hex(before.0.as_bytes()).unwrap();
        wt.switch(&repo, head).unwrap();
        assert_eq!(
            git(&wt.dir, &["describe", "--tags", "--dirty"]).1,
            git(&user, &["describe", "--tags", "--dirty"]).1
        );
        let after = (
            run(&["rev-parse", "HEAD"]),
            fs::read(user.join(".git/index")).unwrap(),
            run(&["for-each-ref"]),
        );
        assert!(
            before == after,
            "the user's HEAD, index and refs are as they were"
        );
        assert!(!user.join(".git/worktrees").exists());
    }
}
