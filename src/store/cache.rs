//! The cache directory's layout and the lock that lets several perfbisect processes share it.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use gix::ObjectId;

use super::files::Store;

/// The cache directory and what lives in it.
#[derive(Debug, Clone)]
pub struct Cache {
    pub root: PathBuf,
}

impl Cache {
    /// Use (and create) the cache at `root`.
    pub fn open(root: &Path) -> anyhow::Result<Cache> {
        std::fs::create_dir_all(root)
            .with_context(|| format!("cannot create cache directory {}", root.display()))?;
        Ok(Cache {
            root: normalize(root),
        })
    }

    /// Worktree slots.
    pub fn worktrees(&self) -> PathBuf {
        self.root.join("worktrees")
    }

    /// Build outputs of one commit with one recipe.
    pub fn artifacts(&self, commit: &ObjectId, recipe: u64) -> PathBuf {
        self.root.join("artifacts").join(entry_name(commit, recipe))
    }

    /// The record of a failed build (its log's tail).
    pub fn failed(&self, commit: &ObjectId, recipe: u64) -> PathBuf {
        self.root
            .join("failed")
            .join(format!("{}.txt", entry_name(commit, recipe)))
    }

    /// The full log of the last build of a commit.
    pub fn log(&self, commit: &ObjectId, recipe: u64) -> PathBuf {
        self.root
            .join("logs")
            .join(format!("{}.log", entry_name(commit, recipe)))
    }

    /// Scratch space; entries are renamed from here into place.
    pub fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// The result store.
    pub fn store(&self) -> Store {
        Store::new(self.root.join("results"))
    }

    /// Take the cache lock for writing, waiting (with a message) while another process has it.
    pub fn lock(&self, quiet: bool) -> anyhow::Result<CacheLock> {
        let path = self.root.join("lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open lock file {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let owner =
                    std::fs::read_to_string(self.root.join("lock.owner")).unwrap_or_default();
                if !quiet {
                    eprintln!(
                        "perfbisect: waiting for another perfbisect{} that is using the cache {}",
                        if owner.trim().is_empty() {
                            String::new()
                        } else {
                            format!(" (pid {})", owner.trim())
                        },
                        self.root.display()
                    );
                }
                file.lock()
                    .with_context(|| format!("cannot lock {}", path.display()))?;
            }
            Err(TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("cannot lock {}", path.display()))
            }
        }
        if let Ok(mut f) = File::create(self.root.join("lock.owner")) {
            let _ = write!(f, "{}", std::process::id());
        }
        Ok(CacheLock { _file: file })
    }
}

/// Paths are normalized as everywhere else ([`crate::base::paths::normalize`]).
pub use crate::base::paths::normalize;

fn entry_name(commit: &ObjectId, recipe: u64) -> String {
    format!("{commit}-{recipe:016x}")
}

/// Held while a process writes to the cache; released on drop (or when the process dies).
pub struct CacheLock {
    _file: File,
}
