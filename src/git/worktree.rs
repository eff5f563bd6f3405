//! perfbisect's own worktrees: plain checkouts of a commit's tree in the cache. Switching to
//! another commit writes only the files that differ and deletes the ones that are gone, so
//! unchanged files keep their mtimes and incremental builds stay incremental.

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use gix::bstr::{BString, ByteSlice};
use gix::ObjectId;

/// Kind of a tracked entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Executable,
    Symlink,
    Submodule,
}

type Entries = BTreeMap<BString, (ObjectId, Kind)>;

/// What a switch did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SwitchStats {
    pub written: usize,
    pub deleted: usize,
    pub unchanged: usize,
    /// The worktree was (re)created from scratch.
    pub fresh: bool,
}

/// A worktree slot: a directory plus a state file naming the commit checked out in it.
pub struct Worktree {
    pub dir: PathBuf,
    state: PathBuf,
}

impl Worktree {
    /// The slot `index` under `root` (`cache/worktrees`).
    pub fn slot(root: &Path, index: usize) -> Worktree {
        Worktree {
            dir: root.join(index.to_string()),
            state: root.join(format!("{index}.commit")),
        }
    }

    /// The commit currently checked out, if the last switch completed.
    pub fn current(&self) -> Option<ObjectId> {
        let s = fs::read_to_string(&self.state).ok()?;
        ObjectId::from_hex(s.trim().as_bytes()).ok()
    }

    /// Check out `to`, rewriting only what differs from the commit checked out now.
    pub fn switch(&self, repo: &gix::Repository, to: ObjectId) -> anyhow::Result<SwitchStats> {
        let old = self.current();
        if old == Some(to) && self.dir.is_dir() {
            return Ok(SwitchStats::default());
        }
        // The state file goes first: an interrupted switch then leaves no claim about the
        // contents, and the next switch starts from scratch.
        match fs::remove_file(&self.state) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => {
                return Err(e).with_context(|| format!("cannot remove {}", self.state.display()))
            }
        }
        let new_entries = entries(repo, to)?;
        let old_entries = match old {
            Some(old) if self.dir.is_dir() => entries(repo, old).ok(),
            _ => None,
        };
        let mut stats = SwitchStats::default();
        let old_entries = match old_entries {
            Some(e) => e,
            None => {
                if self.dir.exists() {
                    fs::remove_dir_all(&self.dir)
                        .with_context(|| format!("cannot clear worktree {}", self.dir.display()))?;
                }
                stats.fresh = true;
                Entries::new()
            }
        };
        fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create worktree {}", self.dir.display()))?;

        for (path, (_, kind)) in &old_entries {
            let gone = match new_entries.get(path) {
                None => true,
                Some((_, k)) => k != kind,
            };
            if gone {
                let p = self.path_of(path)?;
                remove_any(&p)?;
                prune_empty_parents(&self.dir, &p);
                stats.deleted += 1;
            }
        }
        for (path, &(id, kind)) in &new_entries {
            let p = self.path_of(path)?;
            if old_entries.get(path) == Some(&(id, kind)) && p.symlink_metadata().is_ok() {
                stats.unchanged += 1;
                continue;
            }
            write_entry(repo, &p, id, kind)
                .with_context(|| format!("cannot write {} in worktree", p.display()))?;
            stats.written += 1;
        }
        fs::write(&self.state, to.to_string())
            .with_context(|| format!("cannot write {}", self.state.display()))?;
        Ok(stats)
    }

    fn path_of(&self, rela: &BString) -> anyhow::Result<PathBuf> {
        let s = rela
            .to_str()
            .with_context(|| format!("path {rela:?} is not UTF-8"))?;
        if s.split('/')
            .any(|c| c == ".." || c == ".git" || c.is_empty())
        {
            anyhow::bail!("refusing to check out suspicious path {s:?}");
        }
        Ok(self.dir.join(s))
    }
}

fn entries(repo: &gix::Repository, commit: ObjectId) -> anyhow::Result<Entries> {
    let tree = repo
        .find_commit(commit)
        .with_context(|| format!("cannot read commit {commit}"))?
        .tree_id()?
        .detach();
    let index = repo
        .index_from_tree(&tree)
        .with_context(|| format!("cannot read the tree of {commit}"))?;
    let mut out = Entries::new();
    for e in index.entries() {
        use gix::index::entry::Mode;
        let kind = if e.mode == Mode::FILE_EXECUTABLE {
            Kind::Executable
        } else if e.mode == Mode::SYMLINK {
            Kind::Symlink
        } else if e.mode.is_submodule() {
            Kind::Submodule
        } else {
            Kind::File
        };
        out.insert(e.path(&index).to_owned(), (e.id, kind));
    }
    Ok(out)
}

fn write_entry(repo: &gix::Repository, p: &Path, id: ObjectId, kind: Kind) -> anyhow::Result<()> {
    if let Some(parent) = p.parent() {
        ensure_dir(parent)?;
    }
    if kind != Kind::Submodule || !p.is_dir() {
        remove_any(p)?;
    }
    match kind {
        Kind::Submodule => {
            fs::create_dir_all(p)?;
        }
        Kind::Symlink => {
            let blob = repo.find_blob(id)?;
            let target = blob.data.to_str().context("symlink target is not UTF-8")?;
            std::os::unix::fs::symlink(target, p)?;
        }
        Kind::File | Kind::Executable => {
            let blob = repo.find_blob(id)?;
            fs::write(p, &blob.data)?;
            let mode = if kind == Kind::Executable {
                0o755
            } else {
                0o644
            };
            fs::set_permissions(p, fs::Permissions::from_mode(mode))?;
        }
    }
    Ok(())
}

/// Create `dir` and its parents, replacing any file that stands where a directory must be.
fn ensure_dir(dir: &Path) -> anyhow::Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => fs::remove_file(dir)?,
        Err(_) => {
            if let Some(parent) = dir.parent() {
                ensure_dir(parent)?;
            }
        }
    }
    match fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e.into()),
    }
}

fn remove_any(p: &Path) -> anyhow::Result<()> {
    match fs::symlink_metadata(p) {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e.into()),
        Ok(m) if m.is_dir() => Ok(fs::remove_dir_all(p)?),
        Ok(_) => Ok(fs::remove_file(p)?),
    }
}

fn prune_empty_parents(root: &Path, p: &Path) {
    let mut cur = p.parent();
    while let Some(dir) = cur {
        if dir == root || !dir.starts_with(root) || fs::remove_dir(dir).is_err() {
            break;
        }
        cur = dir.parent();
    }
}
