//! The content-addressed artifact store. Every file of a cached build is kept once in
//! `cache/objects/<2 hex>/<62 hex>[-x]` (BLAKE3 of its content; `-x` for executables, so two
//! files that differ only in mode never share an inode) and hard-linked into the build's entry
//! `cache/artifacts/<commit>-<recipe>/`, where tests run. Identical files across commits (an
//! unchanged library, every file of a build that only documentation changed) take their space
//! once. Objects are read-only, and `guard` checks every run, since a test that
//! rewrote an artifact in place would change it for every commit sharing it.
//!
//! Each entry's manifest (`cache/manifests/<commit>-<recipe>.json`) lists its files with their
//! hashes and a digest of the whole tree: two commits with the same digest built byte-identical
//! artifacts, so they measure the same (see `Samples::records`). Manifests are kept when `cache
//! gc` evicts an entry: they are small, and they are what perfbisect knows about that build.

use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use gix::ObjectId;
use serde::{Deserialize, Serialize};

use crate::store::cache::Cache;

/// One file of a build's artifacts. A manifest read from disk is checked as it is decoded
/// (it may come from another cache, through `merge`): a path that would name a file outside
/// its entry, or a hash that is not 64 hex digits, makes the manifest unreadable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Relative to the entry, `/`-separated, without `.` or `..`.
    #[serde(deserialize_with = "inside_path")]
    pub path: String,
    pub size: u64,
    /// BLAKE3 of the content, hex.
    #[serde(deserialize_with = "hex_hash")]
    pub hash: String,
    /// Any execute bit set.
    pub exec: bool,
}

fn inside_path<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let p = String::deserialize(d)?;
    match crate::base::paths::outside_reason(&p) {
        Some(why) => Err(serde::de::Error::custom(format!(
            "file path `{}` is not inside the build: {why}",
            p.escape_debug()
        ))),
        None => Ok(p),
    }
}

fn hex_hash<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let h = String::deserialize(d)?;
    if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(h)
    } else {
        Err(serde::de::Error::custom(format!(
            "file hash `{}` is not 64 hex digits",
            h.escape_debug()
        )))
    }
}

/// What one cached build holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// BLAKE3 over every file's path, mode and hash: equal digests, byte-identical builds.
    pub digest: String,
    pub files: Vec<FileEntry>,
    /// Built in a clean worktree (or found equal to such a build), not over an earlier
    /// commit's outputs: its bytes do not depend on the project's dependency tracking.
    #[serde(default)]
    pub pristine: bool,
    /// The worktree slot it was built in: a pristine build to compare with is made at the
    /// same path, since paths end up in debug info.
    #[serde(default)]
    pub slot: Option<usize>,
    /// How long the build took (milliseconds, its recipe and the copy of its artifacts): what
    /// a search spends in runs of the commit before it gives a decision up (the time budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_ms: Option<u64>,
}

impl Manifest {
    /// Bytes of the files (as plain copies would take).
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// Where the objects live.
pub fn objects_dir(cache: &Cache) -> PathBuf {
    cache.root.join("objects")
}

/// The manifest of a cached build.
pub fn manifest_path(cache: &Cache, commit: &ObjectId, recipe: u64) -> PathBuf {
    cache
        .root
        .join("manifests")
        .join(format!("{commit}-{recipe:016x}.json"))
}

fn object_path(cache: &Cache, hash: &str, exec: bool) -> PathBuf {
    object_path_in(&cache.root, hash, exec)
}

/// Where the object of `hash` lives in the cache at `root`.
pub(crate) fn object_path_in(root: &Path, hash: &str, exec: bool) -> PathBuf {
    root.join("objects").join(&hash[..2]).join(format!(
        "{}{}",
        &hash[2..],
        if exec { "-x" } else { "" }
    ))
}

/// BLAKE3 of a file's content.
pub fn hash_file(path: &Path) -> io::Result<blake3::Hash> {
    let mut h = blake3::Hasher::new();
    h.update_reader(fs::File::open(path)?)?;
    Ok(h.finalize())
}

/// The digest of a list of files, independent of their order.
pub fn digest(files: &[FileEntry]) -> String {
    let mut sorted: Vec<&FileEntry> = files.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut h = blake3::Hasher::new();
    for f in sorted {
        h.update(f.path.as_bytes());
        h.update(&[0, u8::from(f.exec)]);
        h.update(f.hash.as_bytes());
        h.update(b"\n");
    }
    h.finalize().to_hex().to_string()
}

/// Every regular file under `dir` (symlinks followed, as the copy into the cache does),
/// relative paths sorted.
fn files_under(dir: &Path) -> io::Result<Vec<(String, PathBuf)>> {
    fn walk(root: &Path, at: &Path, out: &mut Vec<(String, PathBuf)>) -> io::Result<()> {
        for e in fs::read_dir(at)? {
            let p = e?.path();
            let m = fs::metadata(&p)?;
            if m.is_dir() {
                walk(root, &p, out)?;
            } else if m.is_file() {
                let rel = p.strip_prefix(root).unwrap_or(&p);
                out.push((rel.to_string_lossy().into_owned(), p));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    out.sort();
    Ok(out)
}

/// Move the files of a freshly copied entry `dir` (not yet in place) into the object store
/// and hard-link them back, so identical files are stored once; returns its manifest. A file
/// that cannot be linked (another filesystem, a link limit) stays a plain copy: the entry is
/// right either way, only bigger.
pub fn intern(cache: &Cache, dir: &Path) -> anyhow::Result<Manifest> {
    let mut files = Vec::new();
    for (rel, path) in files_under(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let meta = fs::metadata(&path)?;
        let exec = meta.permissions().mode() & 0o111 != 0;
        let hash = hash_file(&path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .to_hex()
            .to_string();
        let obj = object_path(cache, &hash, exec);
        link_into_store(&path, &obj, exec, &hash, meta.len())
            .with_context(|| format!("cannot store {} as {}", path.display(), obj.display()))?;
        files.push(FileEntry {
            path: rel,
            size: meta.len(),
            hash,
            exec,
        });
    }
    Ok(Manifest {
        digest: digest(&files),
        files,
        pristine: false,
        slot: None,
        build_ms: None,
    })
}

fn link_into_store(file: &Path, obj: &Path, exec: bool, hash: &str, size: u64) -> io::Result<()> {
    let readonly = fs::Permissions::from_mode(if exec { 0o555 } else { 0o444 });
    // An object is linked only while it still holds the bytes it is named after: one that was
    // written in place (a test running as root ignores the read-only bits) is replaced.
    let intact = fs::metadata(obj).is_ok_and(|m| m.len() == size)
        && hash_file(obj).is_ok_and(|h| h.to_hex().as_str() == hash);
    if !intact && obj.exists() {
        fs::remove_file(obj)?;
    }
    if !obj.exists() {
        fs::create_dir_all(obj.parent().expect("objects have a parent"))?;
        fs::set_permissions(file, readonly.clone())?;
        // The file becomes the object; another process may have stored the same one first.
        match fs::hard_link(file, obj) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(_) => return Ok(()), // no links here: keep the plain copy
        }
    }
    // The object exists: put a link to it in the file's place (a temp name, then a rename, so
    // the entry never lacks the file).
    let tmp = file.with_extension("perfbisect-link");
    let _ = fs::remove_file(&tmp);
    if fs::hard_link(obj, &tmp).is_err() {
        return Ok(());
    }
    fs::rename(&tmp, file)
}

/// Write an entry's manifest (through a temp file and a rename).
pub fn write_manifest(
    cache: &Cache,
    commit: &ObjectId,
    recipe: u64,
    m: &Manifest,
) -> anyhow::Result<()> {
    let path = manifest_path(cache, commit, recipe);
    let dir = path.parent().expect("manifests have a parent");
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = crate::store::temp_file(dir, ".manifest.")?;
    serde_json::to_writer(&mut tmp, m)?;
    tmp.as_file().sync_all()?;
    tmp.persist(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// The manifest of a cached build, if one was written.
pub fn read_manifest(cache: &Cache, commit: &ObjectId, recipe: u64) -> Option<Manifest> {
    let text = fs::read(manifest_path(cache, commit, recipe)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// The manifest of a cached build; for an entry cached before manifests existed, hashed now
/// from its artifact paths (files a test wrote there later are not part of the build) and
/// written, so it is done once.
pub fn manifest_or_hash(
    cache: &Cache,
    commit: &ObjectId,
    recipe: u64,
    artifacts: &[String],
) -> Option<Manifest> {
    if let Some(m) = read_manifest(cache, commit, recipe) {
        return Some(m);
    }
    let entry = cache.artifacts(commit, recipe);
    if !entry.is_dir() {
        return None;
    }
    let mut files = Vec::new();
    for a in artifacts {
        let p = entry.join(a);
        let list = if p.is_dir() {
            files_under(&p)
                .ok()?
                .into_iter()
                .map(|(rel, full)| (format!("{a}/{rel}"), full))
                .collect()
        } else {
            vec![(a.clone(), p)]
        };
        for (rel, full) in list {
            let meta = fs::metadata(&full).ok()?;
            files.push(FileEntry {
                path: rel,
                size: meta.len(),
                hash: hash_file(&full).ok()?.to_hex().to_string(),
                exec: meta.permissions().mode() & 0o111 != 0,
            });
        }
    }
    let m = Manifest {
        digest: digest(&files),
        files,
        pristine: false,
        slot: None,
        build_ms: None,
    };
    // Best effort: without it the hash is only computed again next time.
    let _ = write_manifest(cache, commit, recipe, &m);
    Some(m)
}

/// Every manifest of `recipe`, by commit key.
pub fn manifests(cache: &Cache, recipe: u64) -> Vec<([u8; 20], Manifest)> {
    let suffix = format!("-{recipe:016x}.json");
    let Ok(rd) = fs::read_dir(cache.root.join("manifests")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(hex) = name.to_str().and_then(|n| n.strip_suffix(&suffix)) else {
            continue;
        };
        let Ok(id) = ObjectId::from_hex(hex.as_bytes()) else {
            continue;
        };
        let Some(m) = fs::read(e.path())
            .ok()
            .and_then(|t| serde_json::from_slice::<Manifest>(&t).ok())
        else {
            continue;
        };
        out.push((crate::store::commit_key(&id), m));
    }
    out
}

/// Remove objects no entry links any more (link count 1: only the store's own name); returns
/// how many and their bytes.
pub fn remove_unused_objects(cache: &Cache) -> anyhow::Result<(usize, u64)> {
    let (mut n, mut bytes) = (0, 0);
    let Ok(rd) = fs::read_dir(objects_dir(cache)) else {
        return Ok((0, 0));
    };
    for sub in rd.flatten() {
        let Ok(files) = fs::read_dir(sub.path()) else {
            continue;
        };
        for f in files.flatten() {
            let Ok(m) = f.metadata() else { continue };
            if m.is_file() && m.nlink() <= 1 {
                fs::remove_file(f.path())
                    .with_context(|| format!("cannot remove {}", f.path().display()))?;
                n += 1;
                bytes += m.len();
            }
        }
    }
    Ok((n, bytes))
}

/// Remove the objects of `manifest` that no entry links any more (after its entry was
/// removed); returns their bytes. Cheaper than [`remove_unused_objects`]: only the build's own
/// objects are looked at.
pub fn release(cache: &Cache, manifest: &Manifest) -> anyhow::Result<u64> {
    let mut bytes = 0;
    for f in &manifest.files {
        let obj = object_path(cache, &f.hash, f.exec);
        if let Ok(m) = fs::metadata(&obj) {
            if m.nlink() <= 1 {
                fs::remove_file(&obj)
                    .with_context(|| format!("cannot remove {}", obj.display()))?;
                bytes += m.len();
            }
        }
    }
    Ok(bytes)
}

/// Bytes of the files under `p` that are not links into the object store (plain copies).
pub fn unlinked_bytes(p: &Path) -> u64 {
    match fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => fs::read_dir(p)
            .map(|rd| rd.flatten().map(|e| unlinked_bytes(&e.path())).sum())
            .unwrap_or(0),
        Ok(m) if m.is_file() && m.nlink() <= 1 => m.len(),
        _ => 0,
    }
}

/// Bytes the cache holds for artifacts on disk: every object once, plus files of entries
/// that are not links into the store (entries cached before the store existed).
pub fn disk_bytes(cache: &Cache) -> u64 {
    fn walk(p: &Path, only_unlinked: bool) -> u64 {
        match fs::symlink_metadata(p) {
            Ok(m) if m.is_dir() => fs::read_dir(p)
                .map(|rd| rd.flatten().map(|e| walk(&e.path(), only_unlinked)).sum())
                .unwrap_or(0),
            Ok(m) if m.is_file() && (!only_unlinked || m.nlink() <= 1) => m.len(),
            _ => 0,
        }
    }
    walk(&objects_dir(cache), false) + walk(&cache.root.join("artifacts"), true)
}

/// Say that an entry was used now (its directory's modification time), for `cache gc`'s
/// least-recently-used order. Best effort: a failure only makes eviction less well ordered.
pub fn mark_used(entry: &Path) {
    if let Ok(f) = fs::File::open(entry) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_files_are_stored_once_and_linked() {
        let d = tempfile::tempdir().unwrap();
        let cache = Cache::open(d.path()).unwrap();
        let mut manifests = Vec::new();
        for (i, lib) in ["same", "same", "other"].iter().enumerate() {
            let e = d.path().join(format!("e{i}"));
            fs::create_dir_all(e.join("lib")).unwrap();
            fs::write(e.join("lib/data"), lib).unwrap();
            fs::write(e.join("app"), "binary").unwrap();
            fs::set_permissions(e.join("app"), fs::Permissions::from_mode(0o755)).unwrap();
            manifests.push(intern(&cache, &e).unwrap());
        }
        assert_eq!(manifests[0].digest, manifests[1].digest);
        assert_ne!(manifests[0].digest, manifests[2].digest);
        assert_eq!(manifests[0].bytes(), 10);
        // Three objects: "binary" (executable), "same", "other".
        let count = fs::read_dir(objects_dir(&cache))
            .unwrap()
            .flat_map(|s| fs::read_dir(s.unwrap().path()).unwrap())
            .count();
        assert_eq!(count, 3);
        let app = fs::metadata(d.path().join("e2/app")).unwrap();
        assert_eq!(app.nlink(), 4, "one object, three entries");
        assert!(app.permissions().mode() & 0o111 != 0);
        assert_eq!(
            fs::read_to_string(d.path().join("e1/lib/data")).unwrap(),
            "same"
        );
        assert_eq!(disk_bytes(&cache), 6 + 4 + 5);
        // Nothing unused yet; after an entry goes, its only object goes with it.
        assert_eq!(remove_unused_objects(&cache).unwrap(), (0, 0));
        fs::remove_dir_all(d.path().join("e2")).unwrap();
        assert_eq!(remove_unused_objects(&cache).unwrap(), (1, 5));
    }
}
