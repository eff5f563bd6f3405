//! Builds that cannot go stale. An incremental build (a commit built over the outputs of the
//! one before it in the same worktree) is only as good as the project's dependency tracking:
//! a Makefile that does not list a header relinks old objects. Wherever an incremental build
//! is the evidence for a step, it is rebuilt in a clean worktree at the same path and the two
//! artifact digests compared. When they differ, the project's dependency tracking cannot be
//! trusted: from then on every build of that recipe in this cache is pristine, every cached
//! incremental build is dropped, and its samples are set aside (kept on disk, not counted)
//! until a pristine build of the same commit shows the same bytes (then they count again) or
//! other bytes (then they stay out for good).
//!
//! The records live in `cache/stale/`: `pristine-<recipe>` (builds of that recipe are
//! pristine) and `<commit>-<recipe>.json` (a build whose samples are set aside).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use gix::ObjectId;
use serde::{Deserialize, Serialize};

use super::cas::{self, Manifest};
use crate::store::cache::Cache;

/// A build whose samples are set aside.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SetAside {
    /// Samples of the commit (with this recipe, measured here) from `since` to this second
    /// were measured on the suspect build.
    pub until: u64,
    /// When the suspect build was stored (its manifest's time): the commit's runs before it
    /// were measured on an earlier build (a pristine one, say) and stay counted. 0 in records
    /// written before this was kept: every earlier run, as then.
    #[serde(default)]
    pub since: u64,
    /// The suspect build's digest.
    pub digest: String,
    /// A pristine build showed other bytes: the samples never count again.
    pub stale: bool,
}

fn dir(cache: &Cache) -> PathBuf {
    cache.root.join("stale")
}

fn flag(cache: &Cache, recipe: u64) -> PathBuf {
    dir(cache).join(format!("pristine-{recipe:016x}"))
}

fn record(cache: &Cache, commit: &ObjectId, recipe: u64) -> PathBuf {
    dir(cache).join(format!("{commit}-{recipe:016x}.json"))
}

/// Whether builds of `recipe` must be pristine here: `[build] incremental = false`, or a stale
/// incremental build was found in this cache.
pub fn pristine_required(cache: &Cache, incremental: bool, recipe: u64) -> bool {
    !incremental || flag(cache, recipe).exists()
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let parent = path.parent().expect("records have a parent");
    fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    let mut tmp = crate::store::temp_file(parent, ".stale.")?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Set the samples of `commit`'s build (digest `digest`) aside, up to now.
fn set_aside(
    cache: &Cache,
    commit: &ObjectId,
    recipe: u64,
    digest: &str,
    stale: bool,
) -> anyhow::Result<()> {
    // The suspect build's manifest is still the one in place (a pristine build replacing it
    // writes its own after this).
    let since = fs::metadata(cas::manifest_path(cache, commit, recipe))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let r = SetAside {
        until: now_secs(),
        since,
        digest: digest.to_string(),
        stale,
    };
    write(&record(cache, commit, recipe), &serde_json::to_vec(&r)?)
}

/// A stale incremental build was found: builds of `recipe` are pristine from now on, and every
/// cached incremental build is dropped, its samples set aside. Returns how many were dropped.
/// Returns after the second of the records is over, so samples measured from then on are
/// never mistaken for the set-aside ones.
pub fn distrust_incremental(cache: &Cache, recipe: u64, why: &str) -> anyhow::Result<usize> {
    write(&flag(cache, recipe), why.as_bytes())?;
    let mut n = 0;
    for (key, m) in cas::manifests(cache, recipe) {
        if m.pristine {
            continue;
        }
        let id = ObjectId::from_bytes_or_panic(&key);
        let at = record(cache, &id, recipe);
        if !at.exists() {
            set_aside(cache, &id, recipe, &m.digest, false)?;
        }
        if drop_entry(cache, &cache.artifacts(&id, recipe)) {
            n += 1;
        }
    }
    let start = now_secs();
    while now_secs() == start {
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(n)
}

/// A build of `commit` was stored with `manifest`: a pristine build of a commit whose samples
/// were set aside decides them (same bytes: they count again; other bytes: stale for good).
pub fn after_build(cache: &Cache, commit: &ObjectId, recipe: u64, manifest: &Manifest) {
    if !manifest.pristine {
        return;
    }
    let at = record(cache, commit, recipe);
    let Some(mut r) = read(&at) else { return };
    if r.stale {
        return;
    }
    if r.digest == manifest.digest {
        let _ = fs::remove_file(&at);
    } else {
        r.stale = true;
        let _ = serde_json::to_vec(&r).map(|b| write(&at, &b));
    }
}

/// Record that `commit`'s incremental build (digest `digest`) was stale.
pub fn mark_stale(
    cache: &Cache,
    commit: &ObjectId,
    recipe: u64,
    digest: &str,
) -> anyhow::Result<()> {
    set_aside(cache, commit, recipe, digest, true)
}

fn read(path: &Path) -> Option<SetAside> {
    serde_json::from_slice(&fs::read(path).ok()?).ok()
}

/// The builds of `recipe` whose samples are set aside: commit key, and the seconds of the
/// runs set aside (from the suspect build's making to when it was found out, both included).
pub fn set_aside_until(cache: &Cache, recipe: u64) -> HashMap<[u8; 20], (u64, u64)> {
    let suffix = format!("-{recipe:016x}.json");
    let mut out = HashMap::new();
    let Ok(rd) = fs::read_dir(dir(cache)) else {
        return out;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(hex) = name.to_str().and_then(|n| n.strip_suffix(&suffix)) else {
            continue;
        };
        let (Ok(id), Some(r)) = (ObjectId::from_hex(hex.as_bytes()), read(&e.path())) else {
            continue;
        };
        out.insert(crate::store::commit_key(&id), (r.since, r.until));
    }
    out
}

/// The digest of every cached build of `recipe` that may stand for another commit's: all but
/// incremental builds whose runs are set aside (their bytes are in doubt until a pristine
/// build of the commit replaces them).
pub fn trusted_digests(cache: &Cache, recipe: u64) -> Vec<([u8; 20], String)> {
    let doubtful = set_aside_until(cache, recipe);
    cas::manifests(cache, recipe)
        .into_iter()
        .filter(|(k, m)| m.pristine || !doubtful.contains_key(k))
        .map(|(k, m)| (k, m.digest))
        .collect()
}

/// Take a cached entry out of the cache (renamed away first, so it never looks half there).
pub fn drop_entry(cache: &Cache, entry: &Path) -> bool {
    if !entry.is_dir() {
        return false;
    }
    let _ = fs::create_dir_all(cache.tmp());
    let Ok(away) = tempfile::Builder::new()
        .prefix("dropped.")
        .tempdir_in(cache.tmp())
    else {
        return false;
    };
    fs::rename(entry, away.path().join("entry")).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Suspected (issue 30, 9): a stale incremental build set aside all of its commit's earlier
    /// runs, those measured on an earlier pristine build (or merged) included. It did: the
    /// record held only the last second. Now it holds when the suspect build was made too.
    #[test]
    fn a_suspect_build_sets_aside_only_the_runs_made_on_it() {
        let d = tempfile::tempdir().unwrap();
        let cache = Cache::open(d.path()).unwrap();
        let id = ObjectId::from_hex(&[b'a'; 40]).unwrap();
        let m = Manifest {
            digest: "d".repeat(64),
            files: Vec::new(),
            pristine: false,
            slot: Some(0),
            build_ms: None,
        };
        cas::write_manifest(&cache, &id, 7, &m).unwrap();
        // The incremental build was made an hour ago; a pristine one measured before that.
        let built = SystemTime::now() - Duration::from_secs(3600);
        fs::File::options()
            .write(true)
            .open(cas::manifest_path(&cache, &id, 7))
            .unwrap()
            .set_modified(built)
            .unwrap();
        distrust_incremental(&cache, 7, "test").unwrap();
        let (since, until) = set_aside_until(&cache, 7)[&crate::store::commit_key(&id)];
        let built = built.duration_since(UNIX_EPOCH).unwrap().as_secs();
        assert_eq!(since, built);
        assert!(until >= built + 3600);
        let set_aside = |t: u64| (since..=until).contains(&t);
        assert!(!set_aside(built - 60), "a run on the earlier build counts");
        assert!(set_aside(built + 60), "a run on the suspect build does not");
        // Found stale for good by a pristine build: still only the suspect build's runs.
        mark_stale(&cache, &id, 7, &m.digest).unwrap();
        let (since, _) = set_aside_until(&cache, 7)[&crate::store::commit_key(&id)];
        assert_eq!(since, built);
    }
}
