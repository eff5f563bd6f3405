//! The store's files on disk: opened without following links, temp files renamed into place,
//! and directories synced so that a rename survives a crash.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use anyhow::Context;

/// A store file's bytes (`None` when there is none), opened without following a symbolic
/// link: results are read and written only inside the cache, so a link at a store file's
/// name (a build's, say) is refused rather than followed.
pub(crate) fn read_own(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    let Some(mut f) = open_own(path)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(Some(bytes))
}

/// What a failure to open a store file says; a link (`O_NOFOLLOW` gives ELOOP) is named as such.
pub(crate) fn open_error(e: std::io::Error, path: &Path) -> anyhow::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        anyhow::anyhow!(
            "{} is a symbolic link; perfbisect does not follow links in its store: remove it, or move the file it points to in its place",
            path.display()
        )
    } else {
        anyhow::Error::new(e).context(format!("cannot open {}", path.display()))
    }
}

/// A temp file in `dir` named `prefix` and random letters, to be renamed over a store file.
/// It is created with the mode any new file gets (0666 less the umask), not tempfile's
/// private 0600: a store made by renaming it must be as readable as one `run` appended to.
pub fn temp_file(dir: &Path, prefix: &str) -> anyhow::Result<tempfile::NamedTempFile> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temp file in {}", dir.display()))
}

/// Replace `path` with `bytes` durably: a temp file beside it (named `prefix`...), synced,
/// renamed over it, the directory synced, so a crash leaves the old file or the new one,
/// never half of one.
pub fn replace_file(path: &Path, prefix: &str, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = temp_file(dir, prefix)?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("cannot write {}", path.display()))?;
    try_sync_dir(dir)
}

/// Whether `name` is one of [`temp_file`]'s names in the store directory: `.<test>.pbs.XXXXXX`
/// `.<test>.unit.XXXXXX` or `.<test>.idx.XXXXXX`.
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with('.')
        && (name.contains(".pbs.") || name.contains(".unit.") || name.contains(".idx."))
}

/// Make a rename or a new file in `dir` durable. A filesystem that cannot sync a directory at
/// all (EINVAL, EOPNOTSUPP) counts as done: there is nothing more to ask of it.
pub fn try_sync_dir(dir: &Path) -> anyhow::Result<()> {
    let d = File::open(dir)
        .with_context(|| format!("cannot open directory {} to sync it", dir.display()))?;
    match d.sync_all() {
        Ok(()) => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EOPNOTSUPP)) => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot sync directory {}", dir.display())),
    }
}

/// [`try_sync_dir`] for callers that have nothing better to do with a failure than say it: a
/// warning on stderr.
pub fn sync_dir(dir: &Path) {
    if let Err(e) = try_sync_dir(dir) {
        eprintln!("perfbisect: warning: {e:#}; a crash now could lose what was just written there");
    }
}

/// A store file opened for reading without following a symbolic link (`None` when there is
/// none): results are read and written only inside the cache, so a link at a store file's
/// name (a build's, say) is refused rather than followed.
pub(crate) fn open_own(path: &Path) -> anyhow::Result<Option<File>> {
    match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(open_error(e, path)),
    }
}

/// The file's bytes from `from` to its end (as far as it goes now: another process may be
/// appending).
pub(crate) fn bytes_from(file: &File, from: u64) -> std::io::Result<Vec<u8>> {
    let len = file.metadata()?.len();
    let mut out = vec![0u8; len.saturating_sub(from) as usize];
    let mut got = 0;
    while got < out.len() {
        match file.read_at(&mut out[got..], from + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    out.truncate(got);
    Ok(out)
}
