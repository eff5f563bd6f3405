//! Artifacts no test can change for another commit. A cached build's files are hard links to
//! content-addressed objects shared by every commit that built the same bytes, and read-only
//! bits stop nothing when tests run as root (as in CI). So every run is checked: before and
//! after it, the files of its build are compared with the build's manifest (stat data, and
//! the content when the stat data says the file may have been written). A changed file is
//! never used again: every cached build that links the changed object is dropped (rebuilt when
//! next needed) and the object leaves the store. The run that changed it started on the build
//! as stored and counts; a run of a dropped build is recorded as failed, saying why. The
//! directory's listing is compared too: what a run adds beside the build's files (a cache it
//! warms, a state file) is removed after it, so that every run starts on the build as stored.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::cas::{self, Manifest};

/// The manifest of one cached build, read once, to check its files against.
#[derive(Debug)]
pub struct Guard {
    entry: PathBuf,
    root: PathBuf,
    manifest: Manifest,
    /// When the manifest was written: every file of the build is older.
    stamp: SystemTime,
}

impl Guard {
    /// The guard of `entry` when it is a cached build (`<cache>/artifacts/<commit>-<recipe>`
    /// with a manifest); `None` for any other directory.
    pub fn for_entry(entry: &Path) -> Option<Guard> {
        let name = entry.file_name()?.to_str()?;
        let artifacts = entry.parent()?;
        if artifacts.file_name()? != "artifacts" {
            return None;
        }
        let root = artifacts.parent()?.to_path_buf();
        let path = root.join("manifests").join(format!("{name}.json"));
        let stamp = fs::metadata(&path).ok()?.modified().ok()?;
        let manifest: Manifest = serde_json::from_slice(&fs::read(&path).ok()?).ok()?;
        Some(Guard {
            entry: entry.to_path_buf(),
            root,
            manifest,
            stamp,
        })
    }

    /// The entry is no longer cached (dropped after a run changed it).
    pub fn gone(&self) -> bool {
        !self.entry.is_dir()
    }

    /// Files of the build that differ from the manifest: removed, replaced by another kind,
    /// another size or mode, or written since the build was stored with other content.
    pub fn changed(&self) -> Vec<String> {
        let mut out = Vec::new();
        for f in &self.manifest.files {
            let p = self.entry.join(&f.path);
            let ok = match fs::symlink_metadata(&p) {
                Ok(m) => {
                    m.is_file()
                        && m.len() == f.size
                        && (m.permissions().mode() & 0o111 != 0) == f.exec
                        && (m.modified().is_ok_and(|t| t <= self.stamp)
                            || cas::hash_file(&p).is_ok_and(|h| h.to_hex().as_str() == f.hash))
                }
                Err(_) => false,
            };
            if !ok {
                out.push(f.path.clone());
            }
        }
        out
    }

    /// What the build's directory holds besides its manifest's files, as paths relative to it
    /// (a directory none of the manifest's files is in is named once, not file by file):
    /// what a test or a hook added. Links are listed, never followed.
    pub fn extra(&self) -> BTreeSet<String> {
        let mut dirs: BTreeSet<&str> = BTreeSet::new();
        let mut files: BTreeSet<&str> = BTreeSet::new();
        for f in &self.manifest.files {
            files.insert(&f.path);
            let mut p = f.path.as_str();
            while let Some((d, _)) = p.rsplit_once('/') {
                dirs.insert(d);
                p = d;
            }
        }
        let mut out = BTreeSet::new();
        let mut stack = vec![String::new()];
        while let Some(rel) = stack.pop() {
            let Ok(rd) = fs::read_dir(self.entry.join(&rel)) else {
                continue;
            };
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let path = if rel.is_empty() {
                    name
                } else {
                    format!("{rel}/{name}")
                };
                let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
                if is_dir && dirs.contains(path.as_str()) {
                    stack.push(path);
                } else if is_dir || !files.contains(path.as_str()) {
                    out.insert(path);
                }
            }
        }
        out
    }

    /// Take out of the build what a run added (the paths [`Guard::extra`] lists now and did not
    /// in `before`), so the next run starts on the build as stored: a test that leaves a
    /// `warm` file beside its binary would otherwise measure something else from its second
    /// run on. Says what was taken out, naming `who`; a file that cannot be removed drops the
    /// build instead, as a changed one does.
    pub fn remove_added(&self, who: &str, before: &BTreeSet<String>) -> Option<String> {
        let added: Vec<String> = self.extra().difference(before).cloned().collect();
        if added.is_empty() {
            return None;
        }
        let stuck = added.iter().any(|rel| {
            let p = self.entry.join(rel);
            // `remove_dir_all` removes links themselves, never what they point to.
            let gone = match fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => fs::remove_dir_all(&p),
                Ok(_) => fs::remove_file(&p),
                Err(_) => Ok(()),
            };
            gone.is_err()
        });
        let names: Vec<String> = added.iter().take(5).map(|p| format!("`{p}`")).collect();
        let more = if added.len() > 5 {
            format!(" and {} more", added.len() - 5)
        } else {
            String::new()
        };
        let (they, were) = if added.len() == 1 {
            ("it", "was")
        } else {
            ("they", "were")
        };
        let fate = if stuck {
            let dropped = self.quarantine(&[]);
            format!(
                "{they} could not be removed, so the cached build is dropped ({dropped} \
                 build{}) and will be built again when next needed",
                if dropped == 1 { "" } else { "s" }
            )
        } else {
            format!("{they} {were} removed, so the next run starts on the build as stored")
        };
        Some(format!(
            "{who} added {}{more} to the build it ran in: a run must find the build as it was \
             stored, or its second run measures something else than its first (write to \
             $PERFBISECT_OUT or a temp directory instead); {fate}",
            names.join(", ")
        ))
    }

    /// Drop what `changed` touched: when a changed file is still the store's object (written
    /// in place), the object and every cached build linking it; otherwise (replaced or removed)
    /// this build only. Returns the number of cached builds dropped.
    pub fn quarantine(&self, changed: &[String]) -> usize {
        let mut drop: BTreeSet<PathBuf> = BTreeSet::new();
        drop.insert(self.entry.clone());
        for path in changed {
            let Some(f) = self.manifest.files.iter().find(|f| &f.path == path) else {
                continue;
            };
            let Ok(here) = fs::symlink_metadata(self.entry.join(path)) else {
                continue;
            };
            let obj = cas::object_path_in(&self.root, &f.hash, f.exec);
            let shared = fs::symlink_metadata(&obj)
                .is_ok_and(|o| o.ino() == here.ino() && o.dev() == here.dev());
            if !shared {
                continue;
            }
            let _ = fs::remove_file(&obj);
            drop.extend(entries_linking(&self.root, &f.hash, here.dev(), here.ino()));
        }
        let tmp = self.root.join("tmp");
        let _ = fs::create_dir_all(&tmp);
        let mut n = 0;
        for e in drop {
            // Renamed away first, so no half-removed entry ever looks cached.
            let Ok(away) = tempfile::Builder::new().prefix("dropped.").tempdir_in(&tmp) else {
                continue;
            };
            let to = away.path().join("entry");
            if fs::rename(&e, &to).is_ok() {
                n += 1;
            }
        }
        n
    }

    /// Check the build after something ran in it; when a file changed, drop what it touched and
    /// say why, naming `who` (the run or hook) and the files.
    pub fn check_after(&self, who: &str) -> Option<String> {
        let changed = self.changed();
        if changed.is_empty() {
            return None;
        }
        let dropped = self.quarantine(&changed);
        Some(tampered_message(who, &changed, dropped))
    }
}

/// The message for a run that changed files of its build.
fn tampered_message(who: &str, changed: &[String], dropped: usize) -> String {
    let names: Vec<String> = changed.iter().take(5).map(|p| format!("`{p}`")).collect();
    let more = if changed.len() > 5 {
        format!(" and {} more", changed.len() - 5)
    } else {
        String::new()
    };
    format!(
        "{who} changed {}{more} of the build it ran in: the files of a cached build are shared \
         by every commit that built the same bytes, so tests must not write into them (copy \
         them to $PERFBISECT_OUT or a temp directory first); the {dropped} cached build{} holding \
         the changed file{} {} dropped, so no later run sees it, and will be built again when \
         next needed",
        names.join(", "),
        if dropped == 1 { "" } else { "s" },
        if changed.len() == 1 { "" } else { "s" },
        if dropped == 1 { "is" } else { "are" },
    )
}

/// Every cached entry whose file is the inode `(dev, ino)` (a manifest lists `hash`).
fn entries_linking(root: &Path, hash: &str, dev: u64, ino: u64) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir(root.join("manifests")) else {
        return out;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
            continue;
        };
        let Some(m) = fs::read(e.path())
            .ok()
            .and_then(|t| serde_json::from_slice::<Manifest>(&t).ok())
        else {
            continue;
        };
        let entry = root.join("artifacts").join(stem);
        let links = m.files.iter().filter(|f| f.hash == hash).any(|f| {
            fs::symlink_metadata(entry.join(&f.path))
                .is_ok_and(|x| x.dev() == dev && x.ino() == ino)
        });
        if links {
            out.push(entry);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::cache::Cache;
    use std::io::Write;

    fn entry(cache: &Cache, name: &str, files: &[(&str, &str)]) -> PathBuf {
        let tmp = cache.root.join(format!("new-{name}"));
        for (p, body) in files {
            fs::create_dir_all(tmp.join(p).parent().unwrap()).unwrap();
            fs::write(tmp.join(p), body).unwrap();
        }
        let m = cas::intern(cache, &tmp).unwrap();
        let dir = cache.root.join("manifests");
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join(format!("{name}.json")),
            serde_json::to_vec(&m).unwrap(),
        )
        .unwrap();
        let to = cache.root.join("artifacts").join(name);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::rename(&tmp, &to).unwrap();
        to
    }

    #[test]
    fn a_file_written_in_place_drops_every_build_sharing_it_and_leaves_the_store() {
        let d = tempfile::tempdir().unwrap();
        let cache = Cache::open(d.path()).unwrap();
        let a = entry(&cache, "a", &[("data.txt", "1\n2\n3\n4\n"), ("own", "a")]);
        let b = entry(&cache, "b", &[("data.txt", "1\n2\n3\n4\n"), ("own", "b")]);
        let c = entry(&cache, "c", &[("data.txt", "other\n")]);
        let g = Guard::for_entry(&a).unwrap();
        assert!(g.changed().is_empty());
        assert!(g.check_after("x").is_none());
        // As root would: the read-only bit is no obstacle.
        let p = a.join("data.txt");
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"x\n")
            .unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o444)).unwrap();
        assert_eq!(g.changed(), vec!["data.txt".to_string()]);
        let msg = g.check_after("run 1 of `t`").unwrap();
        assert!(
            msg.contains("`data.txt`") && msg.contains("2 cached builds"),
            "{msg}"
        );
        assert!(
            !a.exists() && !b.exists(),
            "both builds linking the object are dropped"
        );
        assert!(c.exists(), "a build not sharing it stays");
        assert!(g.gone());
        // The next build storing the same bytes gets a fresh object, not the changed one.
        let again = entry(&cache, "a2", &[("data.txt", "1\n2\n3\n4\n")]);
        assert_eq!(
            fs::read_to_string(again.join("data.txt")).unwrap(),
            "1\n2\n3\n4\n"
        );
    }

    #[test]
    fn a_file_replaced_by_a_new_one_drops_only_its_own_build() {
        let d = tempfile::tempdir().unwrap();
        let cache = Cache::open(d.path()).unwrap();
        let a = entry(&cache, "a", &[("data.txt", "same")]);
        let b = entry(&cache, "b", &[("data.txt", "same")]);
        fs::remove_file(a.join("data.txt")).unwrap();
        fs::write(a.join("data.txt"), "new!").unwrap();
        let g = Guard::for_entry(&a).unwrap();
        assert!(g.check_after("setup").is_some());
        assert!(!a.exists());
        assert_eq!(fs::read_to_string(b.join("data.txt")).unwrap(), "same");
        // Files a test adds beside the build's change none of its files, and are taken out.
        let gb = Guard::for_entry(&b).unwrap();
        let before = gb.extra();
        fs::write(b.join("output.log"), "hello").unwrap();
        fs::create_dir_all(b.join("state/deep")).unwrap();
        std::os::unix::fs::symlink("/etc", b.join("etc")).unwrap();
        assert!(gb.changed().is_empty());
        assert_eq!(
            gb.extra().into_iter().collect::<Vec<_>>(),
            ["etc", "output.log", "state"]
        );
        let msg = gb.remove_added("a run", &before).unwrap();
        assert!(
            msg.contains("`output.log`") && msg.contains("removed"),
            "{msg}"
        );
        assert!(gb.extra().is_empty() && b.join("data.txt").exists());
        assert!(
            std::path::Path::new("/etc").is_dir(),
            "a link is removed, not followed"
        );
        assert!(gb.remove_added("a run", &before).is_none());
    }

    #[test]
    fn other_directories_have_no_guard() {
        let d = tempfile::tempdir().unwrap();
        assert!(Guard::for_entry(d.path()).is_none());
    }
}
