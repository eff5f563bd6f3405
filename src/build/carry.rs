//! Builds carried in from another cache: a CI runner that built (`run --build-only`) hands its
//! `manifests/` and `objects/` to the machine that measures, and `merge` puts each build's
//! entry together here from them, so `run` there finds the commits built. Objects are checked
//! against the hash they are named after before anything is written (an upload that lost or
//! damaged a byte stops the merge), and copied with the read-only mode of the store whatever
//! mode the transfer left them (CI artifact uploads keep no permissions: the name's `-x` and
//! the manifest say which are executables).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::cas::{self, Manifest};
use crate::error::UsageError;
use crate::store::cache::Cache;

/// One build another cache holds and this one lacks, checked and ready to be put in place.
#[derive(Debug)]
pub struct Carried {
    /// `<commit>-<recipe>`, the entry's and the manifest's name.
    pub name: String,
    pub manifest: Manifest,
    /// Each file's source: an object of the other cache, or the file of its entry.
    sources: Vec<PathBuf>,
}

impl Carried {
    /// Bytes of the build's files.
    pub fn bytes(&self) -> u64 {
        self.manifest.bytes()
    }
}

/// The builds of the cache at `from` (its `manifests/`, with the objects or entries that hold
/// their files) that `cache` has no entry for and that are not in `skip` (taken from an
/// earlier source already). Every file is read and hashed now: one that is missing makes the
/// build not carried (its manifest alone still says what it held); one whose bytes are not
/// what the manifest says is an error.
pub fn plan(from: &Path, cache: &Cache, skip: &[String]) -> anyhow::Result<Vec<Carried>> {
    let Ok(rd) = fs::read_dir(from.join("manifests")) else {
        return Ok(Vec::new());
    };
    let mut names: Vec<String> = rd
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            (!n.starts_with('.'))
                .then_some(n)?
                .strip_suffix(".json")
                .map(str::to_string)
        })
        .collect();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        if skip.contains(&name) || cache.root.join("artifacts").join(&name).is_dir() {
            continue;
        }
        let path = from.join("manifests").join(format!("{name}.json"));
        let manifest = read_foreign(&path, &name)?;
        if let Some(sources) = sources(from, cache, &name, &manifest)? {
            out.push(Carried {
                name,
                manifest,
                sources,
            });
        }
    }
    Ok(out)
}

/// A manifest of another cache (untrusted: a CI artifact), checked before anything of it is
/// used: its name is a build's (`<commit>-<recipe>`), it is no symbolic link, its file paths
/// stay inside the entry ([`crate::base::paths::outside_reason`], checked as it is decoded), and no
/// path is listed twice or is also the directory of another. Anything else is bad input
/// (exit code 2), named.
pub fn read_foreign(path: &Path, name: &str) -> anyhow::Result<Manifest> {
    let shown = crate::base::paths::display_path(path);
    if !is_build_name(name) {
        return Err(UsageError::err(format!(
            "{shown}: not a build's manifest name (`<40 hex>-<16 hex>.json`); nothing was merged"
        )));
    }
    let meta = fs::symlink_metadata(path)
        .with_context(|| format!("cannot read {shown}; nothing was merged"))?;
    if !meta.is_file() {
        return Err(UsageError::err(format!(
            "{shown}: not a regular file (a symbolic link?); nothing was merged"
        )));
    }
    let text =
        fs::read(path).with_context(|| format!("cannot read {shown}; nothing was merged"))?;
    parse_foreign(&text, &shown)
}

/// The checks of [`read_foreign`] on a manifest's bytes (`shown` names it in messages): what
/// it accepts names only files inside its entry, each once. Never panics on any input (the
/// `manifest` fuzz target).
pub fn parse_foreign(text: &[u8], shown: &str) -> anyhow::Result<Manifest> {
    let manifest: Manifest = serde_json::from_slice(text).map_err(|e| {
        UsageError::err(format!(
            "{shown} is not a build manifest ({e}); nothing was merged"
        ))
    })?;
    let mut paths: Vec<&str> = manifest.files.iter().map(|f| f.path.as_str()).collect();
    paths.sort_unstable();
    for w in paths.windows(2) {
        if w[0] == w[1] || w[1].strip_prefix(w[0]).is_some_and(|r| r.starts_with('/')) {
            return Err(UsageError::err(format!(
                "{shown}: the file `{}` is listed {}; nothing was merged",
                w[0].escape_debug(),
                if w[0] == w[1] {
                    "twice".to_string()
                } else {
                    format!("and so is `{}` inside it", w[1].escape_debug())
                }
            )));
        }
    }
    Ok(manifest)
}

/// Whether `name` is a cached build's: `<40 hex>-<16 hex>`.
pub fn is_build_name(name: &str) -> bool {
    name.split_once('-').is_some_and(|(c, r)| {
        c.len() == 40 && r.len() == 16 && c.bytes().chain(r.bytes()).all(|b| b.is_ascii_hexdigit())
    })
}

/// Where each file of `manifest` comes from, checked against its hash; `None` when one is in
/// neither the objects nor the entry of `from` (evicted there by `cache gc`).
fn sources(
    from: &Path,
    cache: &Cache,
    name: &str,
    manifest: &Manifest,
) -> anyhow::Result<Option<Vec<PathBuf>>> {
    let mut out = Vec::new();
    for f in &manifest.files {
        let here = cas::object_path_in(&cache.root, &f.hash, f.exec);
        if intact(&here, &f.hash, f.size) {
            out.push(here);
            continue;
        }
        let candidates = [
            cas::object_path_in(from, &f.hash, f.exec),
            from.join("artifacts").join(name).join(&f.path),
        ];
        // Not through a symbolic link: a link in the other cache would pull in a file from
        // anywhere on this machine.
        let Some(src) = candidates
            .into_iter()
            .find(|p| fs::symlink_metadata(p).is_ok_and(|m| m.is_file()))
        else {
            return Ok(None);
        };
        if !intact(&src, &f.hash, f.size) {
            anyhow::bail!(
                "{}: its bytes are not those its build's manifest names ({}); nothing was merged",
                src.display(),
                f.path
            );
        }
        out.push(src);
    }
    Ok(Some(out))
}

fn intact(path: &Path, hash: &str, size: u64) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == size)
        && cas::hash_file(path).is_ok_and(|h| h.to_hex().as_str() == hash)
}

/// Put `carried`'s objects into `cache`'s store (read-only) and its entry in place (a temp
/// directory of links, renamed), as a build made here would be.
pub fn put(cache: &Cache, carried: &Carried) -> anyhow::Result<()> {
    let tmp_root = cache.tmp();
    fs::create_dir_all(&tmp_root)
        .with_context(|| format!("cannot create {}", tmp_root.display()))?;
    let entry_tmp = tempfile::Builder::new()
        .prefix(".carry.")
        .tempdir_in(&tmp_root)
        .with_context(|| format!("cannot create a temp directory in {}", tmp_root.display()))?;
    for (f, src) in carried.manifest.files.iter().zip(&carried.sources) {
        let obj = cas::object_path_in(&cache.root, &f.hash, f.exec);
        if *src != obj && !intact(&obj, &f.hash, f.size) {
            copy_object(src, &obj, f.exec)?;
        }
        let dest = entry_tmp.path().join(&f.path);
        if let Some(dir) = dest.parent() {
            fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        // The entry is a new directory of this cache's own making, and its paths were checked
        // ([`read_foreign`]): each file is created new, never written over another.
        match fs::hard_link(&obj, &dest) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(e).with_context(|| format!("{} is there already", dest.display()));
            }
            // No links here (another filesystem, a link limit): a plain copy is right too.
            Err(_) => copy_new(&obj, &dest)?,
        }
    }
    let entry = cache.root.join("artifacts").join(&carried.name);
    let parent = entry.parent().expect("entries have a parent");
    fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    let made = entry_tmp.keep();
    if let Err(e) = fs::rename(&made, &entry) {
        let _ = fs::remove_dir_all(&made);
        // Another process built or carried it meanwhile: that entry stands.
        if !entry.is_dir() {
            return Err(e).with_context(|| format!("cannot write {}", entry.display()));
        }
    }
    Ok(())
}

/// Copy `src` to the new file `dest` (one that is there already is an error, not replaced).
fn copy_new(src: &Path, dest: &Path) -> anyhow::Result<()> {
    let mut from = fs::File::open(src).with_context(|| format!("cannot read {}", src.display()))?;
    let mut to = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dest)
        .with_context(|| format!("cannot write {}", dest.display()))?;
    std::io::copy(&mut from, &mut to)
        .with_context(|| format!("cannot write {}", dest.display()))?;
    let mode = fs::metadata(src)?.permissions();
    to.set_permissions(mode)?;
    Ok(())
}

/// Copy one object into the store through a temp file and a rename, read-only.
fn copy_object(src: &Path, obj: &Path, exec: bool) -> anyhow::Result<()> {
    let dir = obj.parent().expect("objects have a parent");
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tmp = crate::store::temp_file(dir, ".carry.")?;
    fs::copy(src, tmp.path())
        .with_context(|| format!("cannot copy {} to {}", src.display(), obj.display()))?;
    tmp.as_file().sync_all()?;
    fs::set_permissions(
        tmp.path(),
        fs::Permissions::from_mode(if exec { 0o555 } else { 0o444 }),
    )?;
    tmp.persist(obj)
        .with_context(|| format!("cannot write {}", obj.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// A cache with one interned build `<name>`, as `run` leaves it.
    fn built(root: &Path, name: &str, files: &[(&str, &str, bool)]) -> Manifest {
        let cache = Cache::open(root).unwrap();
        let e = root.join("tmp-entry");
        for (path, body, exec) in files {
            let p = e.join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(&p, body).unwrap();
            let mode = if *exec { 0o755 } else { 0o644 };
            fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
        }
        let m = cas::intern(&cache, &e).unwrap();
        fs::create_dir_all(root.join("artifacts")).unwrap();
        fs::rename(&e, root.join("artifacts").join(name)).unwrap();
        fs::create_dir_all(root.join("manifests")).unwrap();
        fs::write(
            root.join("manifests").join(format!("{name}.json")),
            serde_json::to_vec(&m).unwrap(),
        )
        .unwrap();
        m
    }

    const NAME: &str = "0123456789012345678901234567890123456789-00000000000000aa";

    #[test]
    fn a_build_comes_over_from_objects_alone_read_only_with_its_modes() {
        let d = tempfile::tempdir().unwrap();
        let (from, to) = (d.path().join("runner"), d.path().join("here"));
        let m = built(
            &from,
            NAME,
            &[("app", "binary", true), ("lib/data", "bytes", false)],
        );
        // What a CI upload keeps: objects and manifests, no entries, no modes.
        fs::remove_dir_all(from.join("artifacts")).unwrap();
        for sub in fs::read_dir(from.join("objects")).unwrap() {
            for f in fs::read_dir(sub.unwrap().path()).unwrap() {
                let p = f.unwrap().path();
                fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
            }
        }
        let cache = Cache::open(&to).unwrap();
        let plan = plan(&from, &cache, &[]).unwrap();
        assert_eq!(plan.len(), 1);
        assert_eq!(plan[0].bytes(), 11);
        put(&cache, &plan[0]).unwrap();
        let entry = to.join("artifacts").join(NAME);
        assert_eq!(fs::read_to_string(entry.join("lib/data")).unwrap(), "bytes");
        let app = fs::metadata(entry.join("app")).unwrap();
        assert_eq!(app.permissions().mode() & 0o777, 0o555);
        assert_eq!(app.nlink(), 2, "the entry links the store's object");
        let data = fs::metadata(entry.join("lib/data")).unwrap();
        assert_eq!(data.permissions().mode() & 0o777, 0o444);
        // The entry is what the manifest says, byte for byte.
        let again = cas::intern(&cache, &entry).unwrap();
        assert_eq!(again.digest, m.digest);
        // Once here, it is not carried again.
        assert!(super::plan(&from, &cache, &[]).unwrap().is_empty());
    }

    #[test]
    fn a_damaged_object_stops_the_merge_and_a_missing_one_leaves_the_build_behind() {
        let d = tempfile::tempdir().unwrap();
        let (from, to) = (d.path().join("runner"), d.path().join("here"));
        let m = built(&from, NAME, &[("app", "binary", true)]);
        fs::remove_dir_all(from.join("artifacts")).unwrap();
        let obj = cas::object_path_in(&from, &m.files[0].hash, true);
        fs::set_permissions(&obj, fs::Permissions::from_mode(0o644)).unwrap();
        fs::write(&obj, "binarx").unwrap();
        let cache = Cache::open(&to).unwrap();
        let err = format!("{:#}", plan(&from, &cache, &[]).unwrap_err());
        assert!(
            err.contains("not those its build's manifest names"),
            "{err}"
        );
        fs::remove_file(&obj).unwrap();
        assert!(plan(&from, &cache, &[]).unwrap().is_empty());
        assert!(!to.join("artifacts").exists());
    }
}
