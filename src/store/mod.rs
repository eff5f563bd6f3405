//! The result store: one append-only file per test, bincode records framed with a length and
//! a CRC, each fsynced before the next run starts. A torn tail (a crash mid-write) is dropped
//! with a warning; corrupt records elsewhere are reported with file and offset and skipped,
//! keeping every intact record.

mod append;
pub mod cache;
mod index;
mod read;
mod record;

pub use append::Appender;
pub use index::IndexState;
pub use read::Visit;
pub use record::intern;
use record::{borrowed_text, frame_at, interned_text};
pub use record::{
    decode_file, decode_record, encode_frame, encode_frame_into, marker_frame, Marker, SampleV1,
    SampleV2, MARKER_VERSION,
};

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// File header: magic then the format version (u32, little endian).
pub(crate) const MAGIC: &[u8; 8] = b"PBSTORE\0";
/// The file format this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// The record layout this build writes; newer records are skipped with a warning. Versions 1
/// (before fingerprints and imports) and 2 (before windows and moments) are still read: see
/// [`SampleV1`] and [`SampleV2`].
pub const RECORD_VERSION: u8 = 3;
/// Windows of records written before windows were recorded (version 1 and 2) have this bit
/// set: such a record's window is made up when it is read, one per run of consecutive records
/// of one commit (back-to-back runs), so old records never look as if they were taken side by
/// side with another commit's.
pub const LEGACY_WINDOW: u64 = 1 << 63;
pub(crate) const HEADER_LEN: usize = 12;
pub(crate) const FRAME_HEAD: usize = 8;
/// No record is this large; a longer length field is corruption (so [`encode_frame`] refuses
/// to write one: it could never be read back).
pub const MAX_RECORD: usize = 1 << 20;

/// One run of one test on one commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub commit: [u8; 20],
    /// `Test::definition_hash` of the test that produced it.
    pub test_hash: u64,
    /// `Build::recipe_hash` of the build that was measured.
    pub recipe_hash: u64,
    /// Seconds since the epoch when the run finished.
    pub time: u64,
    /// Which round of `run` produced it (0 first, `--again` adds one).
    pub round: u32,
    pub wall: f64,
    pub user: f64,
    pub sys: f64,
    pub max_rss: u64,
    /// The test's metric; `None` for a failed run.
    pub value: Option<f64>,
    /// Why the run failed, with the tail of its output.
    #[serde(deserialize_with = "borrowed_text")]
    pub error: Option<String>,
    /// [`crate::fingerprint::Fingerprint::id`] of the machine and setup that measured it; 0 when
    /// not recorded (records of version 1, imported rows).
    pub fingerprint: u64,
    /// Where an imported sample came from; `None` for a run perfbisect made.
    pub import: Option<Import>,
    /// The measuring session the run belongs to: runs of one window were taken side by side
    /// (interleaved, or one commit's runs back to back), so their numbers may be compared
    /// with each other whatever the machine did before or after. 0 for imported rows.
    pub window: u64,
    /// The back-to-back group of its window the run belongs to: runs of one commit taken one
    /// after the other share a moment and count as one measurement in every statistic;
    /// interleaved rounds give each run its own.
    pub moment: u32,
}

/// The provenance of a sample taken in by `perfbisect import` (a cron round, say).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct Import {
    /// The round as the file names it (`R31`, `31`), if it does.
    #[serde(deserialize_with = "interned_text")]
    pub round: Option<Arc<str>>,
    /// The machine that measured it, if the file says.
    #[serde(deserialize_with = "interned_text")]
    pub machine: Option<Arc<str>>,
}

impl Sample {
    /// The commit as a gix id.
    pub fn commit_id(&self) -> gix::ObjectId {
        gix::ObjectId::from_bytes_or_panic(&self.commit)
    }

    /// What makes runs one measurement: its window and moment (runs of one commit taken back
    /// to back share it). An imported row (no window) is a measurement of its own, told apart
    /// by its round and time.
    pub fn moment_key(&self) -> (u64, u64) {
        if self.window == 0 {
            let round = self
                .import
                .as_ref()
                .and_then(|i| i.round.as_deref())
                .map(crate::fingerprint::id_of)
                .unwrap_or(0);
            (round, self.time)
        } else {
            (self.window, u64::from(self.moment))
        }
    }
}

/// One number per measurement: the median of each group of runs taken back to back (a
/// moment; see [`Sample::moment_key`]), in the order the groups first appear. Statistics that
/// treat their inputs as independent (change points, p-values over commits) take these, not
/// every run: five runs one after the other are one look at the machine, not five.
pub fn moment_values<'s>(records: impl IntoIterator<Item = &'s Sample>) -> Vec<f64> {
    // Most moments hold one run (interleaved rounds, cron rows): found by a map, not a scan
    // of the groups so far (a commit of a few thousand cron rows would cost millions).
    let mut at: std::collections::HashMap<(u64, u64), usize> = std::collections::HashMap::new();
    let mut groups: Vec<Vec<f64>> = Vec::new();
    for s in records {
        let Some(v) = s.value.filter(|v| v.is_finite()) else {
            continue;
        };
        let k = s.moment_key();
        match at.get(&k) {
            Some(&i) => groups[i].push(v),
            None => {
                at.insert(k, groups.len());
                groups.push(vec![v]);
            }
        }
    }
    groups
        .into_iter()
        .filter_map(|vs| match vs.as_slice() {
            [one] => Some(*one),
            _ => crate::stats::median(&vs),
        })
        .collect()
}

/// A fresh window id: unique per measuring session (time, process and a counter), never 0
/// and never with [`LEGACY_WINDOW`]'s bit.
pub fn new_window() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let text = format!(
        "{nanos} {} {}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let h = blake3::hash(text.as_bytes());
    let id = u64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8 bytes"));
    (id & !LEGACY_WINDOW).max(1)
}

/// Raw commit bytes of an id.
pub fn commit_key(id: &gix::ObjectId) -> [u8; 20] {
    let mut k = [0u8; 20];
    let b = id.as_bytes();
    k.copy_from_slice(&b[..20.min(b.len())]);
    k
}

/// What a load found.
#[derive(Debug, Default)]
pub struct Loaded {
    pub samples: Vec<Sample>,
    /// Problems found and stepped over (file and offset named).
    pub warnings: Vec<String>,
    /// Byte offset after the last intact record (where a writer appends).
    pub valid_end: u64,
    /// The file ends in an incomplete record.
    pub torn_tail: bool,
}

/// A store file's bytes (`None` when there is none), opened without following a symbolic
/// link: results are read and written only inside the cache, so a link at a store file's
/// name (a build's, say) is refused rather than followed.
fn read_own(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    let Some(mut f) = read::open_own(path)? else {
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

/// Errors that callers match on.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{file}: not a perfbisect result file (bad header)")]
    NotAStore { file: PathBuf },
    #[error("{file}: written by a newer perfbisect (format {found}, this one reads {FORMAT_VERSION}); upgrade perfbisect")]
    NewerFormat { file: PathBuf, found: u32 },
    #[error(
        "a record of {len} bytes is larger than a result store holds ({MAX_RECORD} bytes){longest}"
    )]
    RecordTooLarge {
        len: usize,
        /// Which text made it so large ([`largest_text`]).
        longest: String,
    },
}

/// ", the longest text being `machine` (1100000 bytes)": which field made a record too large.
pub(crate) fn largest_text(s: &Sample) -> String {
    let import = s.import.as_ref();
    [
        ("error", s.error.as_deref()),
        ("round", import.and_then(|i| i.round.as_deref())),
        ("machine", import.and_then(|i| i.machine.as_deref())),
    ]
    .into_iter()
    .filter_map(|(name, t)| Some((name, t?.len())))
    .max_by_key(|(_, n)| *n)
    .map(|(name, n)| format!(", the longest text being `{name}` ({n} bytes)"))
    .unwrap_or_default()
}

/// The store directory (`cache/results`).
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn new(dir: impl Into<PathBuf>) -> Store {
        Store { dir: dir.into() }
    }

    /// The file holding one test's samples.
    pub fn path(&self, test: &str) -> PathBuf {
        self.dir.join(format!("{test}.pbs"))
    }
}

impl Store {
    /// The note about `stale` samples of `test` that an earlier test or build definition made,
    /// when it is news: once per test and cache, and again only when their count changes. The
    /// count last told is kept in `results/<test>.stale-noted`.
    pub fn stale_note(&self, test: &str, stale: usize) -> Option<String> {
        let marker = self.dir.join(format!("{test}.stale-noted"));
        let told: Option<usize> = std::fs::read_to_string(&marker)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        if stale == 0 {
            if told.is_some() {
                let _ = std::fs::remove_file(&marker);
            }
            return None;
        }
        if told == Some(stale) {
            return None;
        }
        // Best effort: a marker that cannot be written only means the note comes again.
        let _ = std::fs::create_dir_all(&self.dir)
            .and_then(|()| std::fs::write(&marker, format!("{stale}\n")));
        Some(format!(
            "note: {stale} stored sample{s} of `{test}` come{v} from an earlier test or build \
             definition and {are} not used; `perfbisect cache prune` deletes {them} (this note \
             is shown once)",
            s = if stale == 1 { "" } else { "s" },
            v = if stale == 1 { "s" } else { "" },
            are = if stale == 1 { "is" } else { "are" },
            them = if stale == 1 { "it" } else { "them" },
        ))
    }
}

impl Store {
    /// The unit a harness reported for `test`'s values under the test definition `hash`
    /// (`results/<test>.unit`), so that commands that measure nothing still show it.
    pub fn tool_unit(&self, test: &str, hash: u64) -> Option<String> {
        let text = std::fs::read_to_string(self.dir.join(format!("{test}.unit"))).ok()?;
        let (h, unit) = text.trim_end_matches('\n').split_once(' ')?;
        (u64::from_str_radix(h, 16).ok()? == hash).then(|| unit.to_string())
    }

    /// Remember the unit a harness reported (through a temp file and a rename).
    pub fn set_tool_unit(&self, test: &str, hash: u64, unit: &str) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        let path = self.dir.join(format!("{test}.unit"));
        let mut tmp = temp_file(&self.dir, &format!(".{test}.unit."))?;
        tmp.write_all(format!("{hash:016x} {unit}\n").as_bytes())
            .and_then(|()| tmp.as_file().sync_all())
            .with_context(|| format!("cannot write {}", path.display()))?;
        tmp.persist(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(())
    }
}

/// What [`Store::prune`] did to one test's file.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pruned {
    /// Records kept (including those this perfbisect cannot read: they are not its to judge).
    pub kept: usize,
    /// Samples removed because `stale` said so.
    pub removed: usize,
    /// Corrupt bytes and a torn tail left out of the rewritten file (they were skipped on
    /// every load anyway).
    pub corrupt_bytes: usize,
}

impl Store {
    /// Rewrite `test`'s file without the samples `stale` picks: the kept records are copied
    /// as they are into a temp file beside it, which is synced and renamed over the file, so
    /// a crash leaves the old file or the new one, never half of one. Records of a newer
    /// format or that cannot be decoded are kept. Nothing is written when nothing is stale.
    /// The caller holds the cache lock (no appender may be open).
    pub fn prune(&self, test: &str, stale: &dyn Fn(&Sample) -> bool) -> anyhow::Result<Pruned> {
        let path = self.path(test);
        let Some(bytes) = read_own(&path)? else {
            return Ok(Pruned::default());
        };
        // Refuses files that are not stores or are of a newer format.
        decode_file(&path, &bytes)?;
        let mut out = Vec::with_capacity(bytes.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        let mut p = Pruned::default();
        let mut off = HEADER_LEN.min(bytes.len());
        while off < bytes.len() {
            match frame_at(&bytes, off) {
                Some((end, ver, payload)) => {
                    let drop = ver <= RECORD_VERSION
                        && decode_record(ver, payload).is_ok_and(|s| stale(&s));
                    if drop {
                        p.removed += 1;
                    } else {
                        out.extend_from_slice(&bytes[off..end]);
                        p.kept += 1;
                    }
                    off = end;
                }
                None => {
                    let next = (off + 1..bytes.len().saturating_sub(FRAME_HEAD - 1))
                        .find(|&o| frame_at(&bytes, o).is_some())
                        .unwrap_or(bytes.len());
                    p.corrupt_bytes += next - off;
                    off = next;
                }
            }
        }
        if p.removed == 0 {
            return Ok(p);
        }
        let mut tmp = temp_file(&self.dir, &format!(".{test}.pbs."))?;
        // The store keeps the mode it had.
        let mode = std::fs::metadata(&path).map(|m| m.permissions());
        tmp.write_all(&out)
            .and_then(|()| mode.and_then(|m| tmp.as_file().set_permissions(m)))
            .and_then(|()| tmp.as_file().sync_all())
            .with_context(|| format!("cannot write a temp file in {}", self.dir.display()))?;
        tmp.persist(&path)
            .with_context(|| format!("cannot replace {}", path.display()))?;
        try_sync_dir(&self.dir)?;
        Ok(p)
    }

    /// Remove the temp files a rewrite killed midway (`kill -9` during an `import`, a `merge`
    /// or a `cache prune`) left beside the stores; the number removed. Only for the holder of
    /// the cache lock: every writer holds it while its temp file exists.
    pub fn remove_temp_files(&self) -> anyhow::Result<usize> {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return Ok(0);
        };
        let mut n = 0;
        for e in rd.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if !is_temp_name(&name) || !e.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            std::fs::remove_file(e.path())
                .with_context(|| format!("cannot remove {}", e.path().display()))?;
            n += 1;
        }
        Ok(n)
    }

    /// Names of the tests that have a file in the store, sorted.
    pub fn tests(&self) -> Vec<String> {
        let mut out: Vec<String> = std::fs::read_dir(&self.dir)
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| {
                        e.file_name()
                            .to_str()
                            .and_then(|n| n.strip_suffix(".pbs"))
                            .filter(|n| !n.starts_with('.'))
                            .map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    fn sample(i: u64) -> Sample {
        Sample {
            commit: [i as u8; 20],
            test_hash: 1,
            recipe_hash: 2,
            time: i,
            round: 0,
            wall: 0.5,
            user: 0.25,
            sys: 0.125,
            max_rss: 1024,
            value: Some(i as f64),
            error: None,
            fingerprint: 7,
            import: i.is_multiple_of(3).then(|| Import {
                round: Some(format!("R{i}").into()),
                machine: None,
            }),
            window: if i.is_multiple_of(3) { 0 } else { 1 + i / 2 },
            moment: (i % 2) as u32,
        }
    }

    fn write(dir: &Path, n: u64) -> PathBuf {
        let store = Store::new(dir);
        let mut a = store.appender("t").unwrap();
        for i in 0..n {
            a.append(&sample(i)).unwrap();
        }
        store.path("t")
    }

    #[test]
    fn round_trip() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), 10);
        let l = Store::new(d.path()).load("t").unwrap();
        assert_eq!(l.samples.len(), 10);
        assert_eq!(l.samples[3], sample(3));
        assert!(l.warnings.is_empty());
    }

    #[test]
    fn version_1_records_are_read_without_a_fingerprint() {
        let d = tempfile::tempdir().unwrap();
        let v1 = SampleV1 {
            commit: [3; 20],
            test_hash: 1,
            recipe_hash: 2,
            time: 5,
            round: 1,
            wall: 0.5,
            user: 0.25,
            sys: 0.125,
            max_rss: 1024,
            value: Some(9.5),
            error: Some("tail".into()),
        };
        let payload = bincode::serde::encode_to_vec(&v1, bincode::config::standard()).unwrap();
        let mut body = vec![1u8];
        body.extend_from_slice(&payload);
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        bytes.extend_from_slice(&body);
        std::fs::write(d.path().join("t.pbs"), &bytes).unwrap();
        let store = Store::new(d.path());
        // A writer appends version 2 after it; both are read.
        store.appender("t").unwrap().append(&sample(4)).unwrap();
        let l = store.load("t").unwrap();
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        assert_eq!(l.samples.len(), 2);
        // Its window is made up on load: one of its own, marked as such.
        assert_eq!(l.samples[0].window & LEGACY_WINDOW, LEGACY_WINDOW);
        assert_eq!(
            l.samples[0],
            Sample {
                window: l.samples[0].window,
                ..Sample::from(v1)
            }
        );
        assert_eq!(l.samples[0].fingerprint, 0);
        assert!(l.samples[0].import.is_none());
        assert_eq!(l.samples[1], sample(4));
    }

    #[test]
    fn add_atomically_keeps_what_was_there_and_adds_all() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), 3);
        // A torn tail is left out of the rewrite.
        let len = std::fs::metadata(&p).unwrap().len();
        OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(len - 2)
            .unwrap();
        let store = Store::new(d.path());
        store
            .add_atomically("t", &[sample(10), sample(11)])
            .unwrap();
        let l = store.load("t").unwrap();
        let times: Vec<u64> = l.samples.iter().map(|s| s.time).collect();
        assert_eq!(times, [0, 1, 10, 11]);
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        // No temp file stays behind; the index beside the store is all there is besides.
        let mut names: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["t.idx", "t.pbs"]);
        store.add_atomically("new", &[sample(1)]).unwrap();
        assert_eq!(store.load("new").unwrap().samples, vec![sample(1)]);
        // Not a store: refused, and left as it is.
        std::fs::write(store.path("bad"), b"hello world, not a store").unwrap();
        assert!(store.add_atomically("bad", &[sample(1)]).is_err());
        assert_eq!(
            std::fs::read(store.path("bad")).unwrap(),
            b"hello world, not a store"
        );
    }

    #[test]
    fn a_record_too_large_to_read_back_is_never_written() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::new(d.path());
        let mut big = sample(3);
        big.import = Some(Import {
            round: None,
            machine: Some("m".repeat(MAX_RECORD + 100).into()),
        });
        let e = encode_frame(&big).unwrap_err();
        assert!(format!("{e:#}").contains("`machine`"), "{e:#}");
        assert!(store
            .add_atomically("t", &[sample(1), big.clone()])
            .is_err());
        assert!(store.appender("t").unwrap().append(&big).is_err());
        let l = store.load("t").unwrap();
        assert!(l.samples.is_empty() && l.warnings.is_empty(), "{l:?}");
    }

    #[test]
    fn torn_tail_is_dropped_and_cut() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), 5);
        let len = std::fs::metadata(&p).unwrap().len();
        let f = OpenOptions::new().write(true).open(&p).unwrap();
        f.set_len(len - 3).unwrap();
        let l = Store::new(d.path()).load("t").unwrap();
        assert_eq!(l.samples.len(), 4);
        assert!(l.torn_tail);
        let mut a = Store::new(d.path()).appender("t").unwrap();
        assert_eq!(a.warnings.len(), 1);
        a.append(&sample(9)).unwrap();
        let l = Store::new(d.path()).load("t").unwrap();
        assert_eq!(l.samples.len(), 5);
        assert!(l.warnings.is_empty());
    }

    #[test]
    fn flipped_byte_in_the_middle_keeps_the_rest() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), 5);
        let mut bytes = std::fs::read(&p).unwrap();
        let frame = encode_frame(&sample(0)).unwrap().len();
        bytes[HEADER_LEN + frame + 12] ^= 0x40;
        std::fs::write(&p, &bytes).unwrap();
        let l = Store::new(d.path()).load("t").unwrap();
        assert_eq!(l.samples.len(), 4);
        assert!(!l.torn_tail);
        assert!(l.warnings[0].contains(&format!("bytes {}", HEADER_LEN + frame)));
    }

    #[test]
    fn cut_header_is_written_again_before_appending() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), 1);
        let bytes = std::fs::read(&p).unwrap();
        for cut in [0, 1, 5, HEADER_LEN - 1] {
            std::fs::write(&p, &bytes[..cut]).unwrap();
            let mut a = Store::new(d.path()).appender("t").unwrap();
            a.append(&sample(7)).unwrap();
            let l = Store::new(d.path()).load("t").unwrap();
            assert_eq!(l.samples, vec![sample(7)], "cut at {cut}");
            assert!(l.warnings.is_empty(), "cut at {cut}: {:?}", l.warnings);
        }
    }

    #[test]
    fn prune_keeps_current_and_unreadable_records_and_rewrites_atomically() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), 6);
        // A record of a newer layout: kept, whatever it holds.
        let mut newer = encode_frame(&sample(100)).unwrap();
        newer[8] = RECORD_VERSION + 1;
        let crc = crc32fast::hash(&newer[8..]);
        newer[4..8].copy_from_slice(&crc.to_le_bytes());
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(&newer).unwrap();
        drop(f);
        let store = Store::new(d.path());
        let got = store.prune("t", &|s| s.time % 2 == 1).unwrap();
        assert_eq!(got.removed, 3);
        assert_eq!(got.kept, 4);
        assert_eq!(got.corrupt_bytes, 0);
        let l = store.load("t").unwrap();
        let times: Vec<u64> = l.samples.iter().map(|s| s.time).collect();
        assert_eq!(times, [0, 2, 4]);
        assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
        // Nothing stale: the file is left as it is.
        let before = std::fs::metadata(&p).unwrap().modified().unwrap();
        let again = store.prune("t", &|s| s.time % 2 == 1).unwrap();
        assert_eq!((again.removed, again.kept), (0, 4));
        assert_eq!(std::fs::metadata(&p).unwrap().modified().unwrap(), before);
        // No temp file is left behind, and appending goes on after the rewrite.
        assert_eq!(store.tests(), ["t"]);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        store.appender("t").unwrap().append(&sample(8)).unwrap();
        assert_eq!(store.load("t").unwrap().samples.len(), 4);
        assert_eq!(
            store.prune("missing", &|_| true).unwrap(),
            Pruned::default()
        );
    }

    #[test]
    fn stale_note_is_news_once_per_count() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::new(d.path().join("results"));
        assert!(store.stale_note("t", 0).is_none());
        let n = store.stale_note("t", 3).unwrap();
        assert!(
            n.contains("3 stored samples of `t`") && n.contains("cache prune"),
            "{n}"
        );
        assert!(store.stale_note("t", 3).is_none());
        assert!(store.stale_note("u", 3).is_some());
        let one = store.stale_note("t", 1).unwrap();
        assert!(one.contains("1 stored sample of `t` comes"), "{one}");
        assert!(store.stale_note("t", 0).is_none());
        assert!(store.stale_note("t", 1).is_some());
    }

    #[test]
    fn newer_format_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), 1);
        let mut bytes = std::fs::read(&p).unwrap();
        bytes[8] = 9;
        std::fs::write(&p, &bytes).unwrap();
        let e = Store::new(d.path()).load("t").unwrap_err();
        assert!(format!("{e:#}").contains("newer perfbisect"));
    }

    #[test]
    fn directory_sync_errors_are_reported() {
        let d = tempfile::tempdir().unwrap();
        try_sync_dir(d.path()).unwrap();
        let gone = d.path().join("gone");
        let e = try_sync_dir(&gone).unwrap_err();
        assert!(
            format!("{e:#}").contains(&gone.display().to_string()),
            "{e:#}"
        );
    }

    #[test]
    fn garbage_never_panics() {
        let path = Path::new("x.pbs");
        let mut rng = 0x1234_5678_u64;
        for len in 0..400 {
            let mut bytes: Vec<u8> = MAGIC.to_vec();
            bytes.extend_from_slice(&1u32.to_le_bytes());
            for _ in 0..len {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                bytes.push(rng as u8);
            }
            let _ = decode_file(path, &bytes);
        }
    }
}
