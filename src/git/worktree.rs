//! perfbisect's own worktrees: checkouts of a commit's tree in the cache, each with a `.git` of
//! its own ([`super::metadata`]: HEAD at the commit, the user's tags). Switching to
//! another commit writes only the files that differ and deletes the ones that are gone, so
//! unchanged files keep their mtimes and incremental builds stay incremental. Submodules are
//! checked out too, each at the commit its superproject commit pins, read from the user's
//! own clone ([`super::tree`]): a commit whose pin is not there cannot be checked out
//! ([`MissingSubmodule`]), and nothing of the slot is touched.
//!
//! A build may have put a symbolic link where the tree has a directory (`rm -rf d && ln -s
//! /elsewhere d`). No path is written, removed or compared through one: every directory
//! between the worktree and a tracked path is checked with `symlink_metadata`, and one that
//! is not a real directory is replaced by one (a link is removed, never followed), so a
//! switch changes nothing outside the worktree.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;
use gix::bstr::{BString, ByteSlice};
use gix::ObjectId;
use serde::{Deserialize, Serialize};

pub use super::submodule::MissingSubmodule;
use super::submodule::Objects;
pub use super::tree::MissingObject;
use super::tree::{self, Entries, Entry, Kind};

/// Why a failed switch makes its commit one that cannot be built (an object missing from the
/// repository, a submodule's pinned commit missing from the user's clone), when that is why
/// it failed; other failures (a full disk) are errors of perfbisect's, not of the commit.
pub fn unbuildable(e: &anyhow::Error) -> Option<String> {
    e.downcast_ref::<MissingObject>()
        .map(ToString::to_string)
        .or_else(|| {
            e.downcast_ref::<MissingSubmodule>()
                .map(ToString::to_string)
        })
}

/// What a switch did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SwitchStats {
    pub written: usize,
    pub deleted: usize,
    pub unchanged: usize,
    /// Tracked files a build had changed or deleted, written back from the tree.
    pub restored: usize,
    /// The worktree was (re)created from scratch.
    pub fresh: bool,
}

/// Stat data of a tracked file as it was checked out, as git's index keeps it: a file whose
/// stat data still matches was not touched since, one whose data differs is compared by content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Stat {
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    mode: u32,
}

impl Stat {
    fn of(m: &fs::Metadata) -> Stat {
        Stat {
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            mode: m.mode(),
        }
    }
}

/// Stat data per tracked path.
type Recorded = BTreeMap<String, Stat>;

/// What the state file of a slot holds: the commit checked out and the stat data of every
/// tracked file right after the checkout.
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    commit: String,
    #[serde(default)]
    files: BTreeMap<String, Stat>,
}

/// A worktree slot: a directory plus a state file naming the commit checked out in it.
pub struct Worktree {
    pub dir: PathBuf,
    state: PathBuf,
    /// The slot's number.
    pub index: usize,
}

impl Worktree {
    /// The slot `index` under `root` (`cache/worktrees`).
    pub fn slot(root: &Path, index: usize) -> Worktree {
        Worktree {
            dir: root.join(index.to_string()),
            state: root.join(format!("{index}.commit")),
            index,
        }
    }

    /// Forget what the slot holds, so the next switch checks out into an empty directory
    /// (a pristine build: nothing left over from earlier builds).
    pub fn clear(&self) -> anyhow::Result<()> {
        match fs::remove_file(&self.state) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => {
                return Err(e).with_context(|| format!("cannot remove {}", self.state.display()))
            }
        }
        if self.dir.exists() {
            fs::remove_dir_all(&self.dir)
                .with_context(|| format!("cannot clear worktree {}", self.dir.display()))?;
        }
        Ok(())
    }

    /// The commit currently checked out, if the last switch completed.
    pub fn current(&self) -> Option<ObjectId> {
        self.read_state().map(|(id, _, _)| id)
    }

    /// The state file: commit, recorded stat data, and the file's own mtime (files modified at
    /// or after it are "racily clean" and compared by content, as git does).
    fn read_state(&self) -> Option<(ObjectId, Recorded, (i64, i64))> {
        let text = fs::read_to_string(&self.state).ok()?;
        let stamp = fs::metadata(&self.state)
            .map(|m| (m.mtime(), m.mtime_nsec()))
            .ok()?;
        // Older caches hold just the hex id: no stat data, so every file is checked by content.
        let st: State = serde_json::from_str(&text).unwrap_or_else(|_| State {
            commit: text.trim().to_string(),
            files: BTreeMap::new(),
        });
        let id = ObjectId::from_hex(st.commit.trim().as_bytes()).ok()?;
        Some((id, st.files, stamp))
    }

    /// Check out `to`: afterwards every tracked file equals `to`'s tree. Only what differs from
    /// the commit checked out before is rewritten, plus any tracked file a build changed or
    /// deleted since (found by stat data, confirmed by content); untracked files (build
    /// outputs) stay, so incremental builds stay incremental.
    pub fn switch(&self, repo: &gix::Repository, to: ObjectId) -> anyhow::Result<SwitchStats> {
        // The slot itself replaced by a link: the link goes, the slot starts from scratch.
        let old = match fs::symlink_metadata(&self.dir) {
            Ok(m) if m.is_dir() => self.read_state(),
            Ok(_) => {
                fs::remove_file(&self.dir)
                    .with_context(|| format!("cannot remove {}", self.dir.display()))?;
                None
            }
            Err(_) => None,
        };
        // Every object of the new tree is there before anything is touched: a commit that
        // cannot be checked out whole leaves the slot as it was.
        // Submodules too: each pinned commit's tree from the user's clone, or nothing is
        // touched and the commit is one that cannot be built (a named submodule and commit).
        let mut objs = Objects::new(repo);
        let new_entries = match tree::read(&mut objs, to) {
            Ok(e) => e,
            Err(e) if e.is::<MissingSubmodule>() || e.is::<MissingObject>() => return Err(e),
            Err(e) => return Err(tree::missing_object(repo, to).map_or(e, anyhow::Error::new)),
        };
        if let Some((path, e)) = new_entries
            .iter()
            .find(|(_, e)| e.kind != Kind::Submodule && !objs.repo(e.src).has_object(e.id))
        {
            return Err(MissingObject {
                commit: to,
                object: e.id,
                what: "blob",
                path: Some(path.to_string()),
            }
            .into());
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
        let old_entries = match &old {
            Some((id, _, _)) => tree::read(&mut objs, *id).ok(),
            None => None,
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
        let (recorded, stamp) = match old {
            Some((_, files, stamp)) => (files, stamp),
            None => (BTreeMap::new(), (i64::MAX, 0)),
        };
        fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create worktree {}", self.dir.display()))?;

        for (path, old_entry) in &old_entries {
            let gone = match new_entries.get(path) {
                None => true,
                Some(e) => e.kind != old_entry.kind,
            };
            if gone {
                let p = self.path_of(path)?;
                // Behind a link or a file, the path is not in the worktree: nothing to remove.
                if real_parents(&self.dir, &p, &mut HashSet::new()) {
                    remove_any(&p)?;
                    prune_empty_parents(&self.dir, &p);
                }
                stats.deleted += 1;
            }
        }
        // Directories found real while checking unchanged files (nothing in this loop turns a
        // directory into a link: the tree has no paths below a symlink of its own).
        let mut real_dirs = HashSet::new();
        for (path, entry) in &new_entries {
            let p = self.path_of(path)?;
            let repo = objs.repo(entry.src);
            if old_entries.get(path).is_some_and(|o| o.same(entry)) {
                let key = path.to_str().unwrap_or_default();
                let found = if real_parents(&self.dir, &p, &mut real_dirs) {
                    intact(repo, &p, entry, recorded.get(key), stamp)?
                } else {
                    Intact::No
                };
                match found {
                    Intact::Yes => {
                        stats.unchanged += 1;
                        continue;
                    }
                    // Changed or deleted since the checkout: by a build of the old commit.
                    Intact::No => stats.restored += 1,
                }
            }
            write_entry(repo, &self.dir, &p, entry)
                .with_context(|| format!("cannot write {} in worktree", p.display()))?;
            stats.written += 1;
        }
        // The folder's own `.git` (see [`super::metadata`]): before the state file, so a
        // slot that claims a commit always has the metadata of it.
        super::metadata::write(repo, &self.dir, to)
            .with_context(|| format!("cannot write the git metadata of {}", self.dir.display()))?;
        self.write_state(to, &new_entries)?;
        Ok(stats)
    }

    /// Record the commit and the stat data of every tracked file, through a temp file and a
    /// rename so a crash leaves either the old claim (already removed) or the whole new one.
    fn write_state(&self, to: ObjectId, entries: &Entries) -> anyhow::Result<()> {
        let mut files = BTreeMap::new();
        for (path, e) in entries {
            if e.kind == Kind::Submodule {
                continue;
            }
            let p = self.path_of(path)?;
            if let Ok(m) = fs::symlink_metadata(&p) {
                files.insert(path.to_str().unwrap_or_default().to_string(), Stat::of(&m));
            }
        }
        let st = State {
            commit: to.to_string(),
            files,
        };
        let root = self.state.parent().unwrap_or(Path::new("."));
        let mut tmp = tempfile::NamedTempFile::new_in(root)
            .with_context(|| format!("cannot write in {}", root.display()))?;
        serde_json::to_writer(&mut tmp, &st)?;
        tmp.persist(&self.state)
            .with_context(|| format!("cannot write {}", self.state.display()))?;
        Ok(())
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

enum Intact {
    Yes,
    No,
}

/// Whether the file at `p` still holds the tracked entry `(id, kind)`: stat data as recorded
/// at checkout and older than the state file means yes; otherwise the content (and the
/// executable bit, or the link target) is compared with the blob.
fn intact(
    repo: &gix::Repository,
    p: &Path,
    &Entry { id, kind, .. }: &Entry,
    recorded: Option<&Stat>,
    stamp: (i64, i64),
) -> anyhow::Result<Intact> {
    let m = match fs::symlink_metadata(p) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Intact::No),
        Err(e) => return Err(e).with_context(|| format!("cannot stat {}", p.display())),
    };
    let now = Stat::of(&m);
    let racy = now.mtime >= stamp || now.ctime >= stamp;
    if recorded == Some(&now) && !racy {
        return Ok(Intact::Yes);
    }
    let same = match kind {
        Kind::Submodule => m.is_dir(),
        Kind::Symlink => {
            m.file_type().is_symlink() && {
                let target = fs::read_link(p)?;
                let blob = repo.find_blob(id)?;
                target.as_os_str().as_encoded_bytes() == blob.data.as_slice()
            }
        }
        Kind::File | Kind::Executable => {
            let exec = m.mode() & 0o111 != 0;
            m.is_file()
                && exec == (kind == Kind::Executable)
                && m.len() == repo.find_header(id)?.size()
                && fs::read(p)? == repo.find_blob(id)?.data.as_slice()
        }
    };
    Ok(if same { Intact::Yes } else { Intact::No })
}

/// The paths of the files a commit tracks (submodules left out), as `git ls-tree -r` lists
/// them: read from its tree, nothing written.
pub fn paths(repo: &gix::Repository, commit: ObjectId) -> anyhow::Result<Vec<String>> {
    Ok(tree::own_entries(repo, commit)?
        .into_iter()
        .filter(|(_, e)| e.kind != Kind::Submodule)
        .map(|(path, _)| path.to_str_lossy().into_owned())
        .collect())
}

/// Write `entry` (its object read from `repo`) at `p` below the worktree `root`.
fn write_entry(
    repo: &gix::Repository,
    root: &Path,
    p: &Path,
    &Entry { id, kind, .. }: &Entry,
) -> anyhow::Result<()> {
    if let Some(parent) = p.parent() {
        ensure_dirs(root, parent)?;
    }
    let is_dir = fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    if kind != Kind::Submodule || !is_dir {
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

/// Make every directory from the worktree `root` down to `dir` a real directory, from the
/// top: a file or a symbolic link standing where one must be is removed (a link itself, not
/// what it points to) and a directory made in its place. Checking from the top means no
/// component is ever reached through a link.
fn ensure_dirs(root: &Path, dir: &Path) -> anyhow::Result<()> {
    let rel = dir
        .strip_prefix(root)
        .with_context(|| format!("{} is outside the worktree", dir.display()))?;
    let mut cur = root.to_path_buf();
    for c in rel.components() {
        cur.push(c);
        match fs::symlink_metadata(&cur) {
            Ok(m) if m.is_dir() => continue,
            Ok(_) => {
                fs::remove_file(&cur).with_context(|| format!("cannot remove {}", cur.display()))?
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot stat {}", cur.display())),
        }
        match fs::create_dir(&cur) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", cur.display())),
        }
    }
    Ok(())
}

/// Whether every directory between the worktree `root` and `p` is a real directory, so that
/// `p` is reached without following a link; `known` holds directories already found real.
fn real_parents(root: &Path, p: &Path, known: &mut HashSet<PathBuf>) -> bool {
    let Some(rel) = p.parent().and_then(|d| d.strip_prefix(root).ok()) else {
        return false;
    };
    let mut cur = root.to_path_buf();
    rel.components().all(|c| {
        cur.push(c);
        if known.contains(&cur) {
            return true;
        }
        let real = fs::symlink_metadata(&cur).is_ok_and(|m| m.is_dir());
        if real {
            known.insert(cur.clone());
        }
        real
    })
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
