//! Where `config init` reads a project from: the checkout as it is, or the tree of one
//! commit (`--at REV`), written by gix into a temporary directory of perfbisect's own. The
//! user's checkout, HEAD, index and refs are never touched either way.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use gix::ObjectId;

use crate::git::worktree::Worktree;

/// The project `config init` reads.
pub enum Source<'a> {
    /// The checkout in the directory given: its tracked files by `git ls-files`; a dry run
    /// copies HEAD.
    Checkout,
    /// One commit's tree.
    Commit {
        repo: &'a gix::Repository,
        id: ObjectId,
        /// The revision as the user wrote it.
        rev: String,
    },
}

impl Source<'_> {
    /// The revision, for notes: `HEAD`, or "`v1.2` (0123456789)".
    pub fn what(&self) -> String {
        match self {
            Source::Checkout => "HEAD".into(),
            Source::Commit { id, rev, .. } => {
                format!("`{rev}` ({})", crate::git::short(id))
            }
        }
    }

    /// The files the project tracks, relative to its top directory (none outside a git
    /// repository).
    pub fn tracked(&self, dir: &Path) -> Vec<String> {
        match self {
            Source::Checkout => ls_files(dir),
            Source::Commit { repo, id, .. } => {
                crate::git::worktree::paths(repo, *id).unwrap_or_default()
            }
        }
    }

    /// The project's files (HEAD's for the checkout, the commit's tree otherwise) written
    /// into a new directory below `tmp`, without untracked or ignored files: that directory.
    pub fn export(&self, repo_dir: &Path, tmp: &Path) -> Result<PathBuf, String> {
        match self {
            Source::Checkout => {
                // HEAD as a build folder holds it (submodules at their pins, a `.git` that
                // `git describe` reads), where the repository opens; else `git archive`.
                if let Some(top) = gix::discover(repo_dir).ok().and_then(|r| {
                    let id = r.head_id().ok()?.detach();
                    checkout(&r, id, tmp).ok()
                }) {
                    return Ok(top);
                }
                let dest = tmp.join("src");
                archive_head(repo_dir, &dest)?;
                Ok(dest)
            }
            Source::Commit { repo, id, .. } => checkout(repo, *id, tmp)
                .map_err(|e| format!("cannot write {} into {}: {e:#}", self.what(), tmp.display())),
        }
    }
}

/// The tree of `id` written into `root/0` (a slot of perfbisect's own worktrees, under a
/// directory the caller owns): that directory.
pub fn checkout(repo: &gix::Repository, id: ObjectId, root: &Path) -> anyhow::Result<PathBuf> {
    let slot = Worktree::slot(root, 0);
    slot.switch(repo, id)?;
    Ok(slot.dir)
}

/// The files of HEAD in `dest` (`git archive`, so untracked and ignored files stay out).
fn archive_head(repo: &Path, dest: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dest).map_err(|e| format!("cannot create {}: {e}", dest.display()))?;
    let mut archive = Command::new("git")
        .args(["archive", "--format=tar", "HEAD"])
        .current_dir(repo)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run git archive: {e}"))?;
    let tar = Command::new("tar")
        .args(["-x", "-f", "-"])
        .current_dir(dest)
        .stdin(archive.stdout.take().expect("piped stdout"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    let git = archive.wait().map_err(|e| e.to_string())?;
    if !(git.success() && tar.success()) {
        return Err("cannot copy HEAD into a temporary directory (git archive | tar)".into());
    }
    Ok(())
}

/// The repository's tracked files (`git ls-files`), or none outside a git repository.
fn ls_files(repo: &Path) -> Vec<String> {
    Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(repo)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            o.stdout
                .split(|&b| b == 0)
                .filter(|f| !f.is_empty())
                .map(|f| String::from_utf8_lossy(f).into_owned())
                .collect()
        })
        .unwrap_or_default()
}
