//! The index beside a store file (`results/<test>.idx`): for each commit, the offsets of its
//! records, so that a command reads the records of the commits it shows or measures, not all
//! of history. It is a cache: derived from the store file alone, checked against it on every
//! open (same file, same last indexed record), rebuilt when missing, stale or corrupt, and
//! replaced by a rename. Records appended after it was written (a cron round's) are read
//! from the store's tail; once the tail grows past [`TAIL_LIMIT`] the index is written again,
//! merging the old one with the tail, so its cost follows what was appended.
//!
//! Only a clean file is indexed: one whose records are all of the current layout, with no
//! corrupt bytes. Older layouts (whose windows are made up from their neighbours) and damaged
//! files are read whole, as before, with their warnings.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::fs::temp_file;
use super::record::frame_at;
use super::record::{record_commit, Marker, MARKER_VERSION};
use super::sample::{FORMAT_VERSION, FRAME_HEAD, HEADER_LEN, MAGIC, MAX_RECORD};

const INDEX_MAGIC: &[u8; 8] = b"PBSINDX\0";
const INDEX_VERSION: u32 = 1;
const INDEX_HEADER: usize = 64;
const ENTRY: usize = 32;
/// Bytes of records past the indexed end that are read from the store itself; beyond it the
/// index is written again (in unit tests, after a few records, so that merges are tested).
pub const TAIL_LIMIT: u64 = if cfg!(test) { 4096 } else { 4 << 20 };
/// Offsets and commit ranks share one u64 while the index is built.
const OFFSET_BITS: u32 = 43;
const CHUNK: usize = 4 << 20;

/// What [`Store::index_state`](super::files::Store::index_state) found, for the benchmark and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexState {
    /// No store file.
    Missing,
    /// Indexed up to the end of the file.
    Current { commits: usize, records: u64 },
    /// The file cannot be indexed (older record layouts, corrupt bytes): it is read whole.
    Unindexable,
}

/// One commit's records in the index.
#[derive(Debug, Clone, Copy)]
struct Entry {
    commit: [u8; 20],
    count: u32,
    start: u64,
}

/// An open, checked index.
pub(crate) struct Index {
    file: File,
    /// The store file's bytes up to here are indexed (a frame boundary).
    pub covered_end: u64,
    entries: Vec<Entry>,
    offsets_at: u64,
    records: u64,
    /// Where the last indexed record (or marker) starts; 0 when there is none.
    last_off: u64,
}

/// The identity of a store file and of its last indexed record: an index is only used for
/// the file it was made from, up to the record it ends at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    covered_end: u64,
    last_off: u64,
    last_crc: u32,
}

pub(crate) fn path_of(store: &Path) -> PathBuf {
    store.with_extension("idx")
}

impl Index {
    /// The index of `store` at `path`, if it is there and still describes the file.
    pub fn open(path: &Path, store: &File) -> Option<Index> {
        let file = File::open(path).ok()?;
        let mut head = [0u8; INDEX_HEADER];
        file.read_exact_at(&mut head, 0).ok()?;
        if &head[..8] != INDEX_MAGIC || u32_at(&head, 8) != INDEX_VERSION {
            return None;
        }
        let stamp = Stamp {
            dev: u64_at(&head, 16),
            ino: u64_at(&head, 24),
            covered_end: u64_at(&head, 32),
            last_off: u64_at(&head, 40),
            last_crc: u32_at(&head, 48),
        };
        let n = u32_at(&head, 52) as usize;
        let records = u64_at(&head, 56);
        if stamp != stamp_of(store, stamp.covered_end, stamp.last_off)? {
            return None;
        }
        let mut table = vec![0u8; n * ENTRY + 4];
        file.read_exact_at(&mut table, INDEX_HEADER as u64).ok()?;
        let (body, crc) = table.split_at(n * ENTRY);
        let mut h = crc32fast::Hasher::new();
        h.update(&head);
        h.update(body);
        if h.finalize() != u32_at(crc, 0) {
            return None;
        }
        let entries = body
            .chunks_exact(ENTRY)
            .map(|e| Entry {
                commit: e[..20].try_into().expect("20 bytes"),
                count: u32_at(e, 20),
                start: u64_at(e, 24),
            })
            .collect();
        Some(Index {
            file,
            covered_end: stamp.covered_end,
            entries,
            offsets_at: (INDEX_HEADER + n * ENTRY + 4) as u64,
            records,
            last_off: stamp.last_off,
        })
    }

    /// The offsets of `commit`'s indexed records, in file order.
    pub fn offsets(&self, commit: &[u8; 20]) -> std::io::Result<Vec<u64>> {
        let Ok(i) = self.entries.binary_search_by(|e| e.commit.cmp(commit)) else {
            return Ok(Vec::new());
        };
        self.offsets_of(&self.entries[i])
    }

    fn offsets_of(&self, e: &Entry) -> std::io::Result<Vec<u64>> {
        let mut raw = vec![0u8; e.count as usize * 8];
        self.file
            .read_exact_at(&mut raw, self.offsets_at + e.start * 8)?;
        Ok(raw.chunks_exact(8).map(|c| u64_at(c, 0)).collect())
    }

    /// Every indexed commit with its number of records, in byte order.
    pub fn counts(&self) -> impl Iterator<Item = ([u8; 20], u32)> + '_ {
        self.entries.iter().map(|e| (e.commit, e.count))
    }

    /// Every indexed commit, in byte order.
    pub fn commits(&self) -> impl Iterator<Item = &[u8; 20]> {
        self.entries.iter().map(|e| &e.commit)
    }

    pub fn state(&self) -> IndexState {
        IndexState::Current {
            commits: self.entries.len(),
            records: self.records,
        }
    }
}

/// The stamp of `store` as it is now, for an index ending at `covered_end` whose last record
/// starts at `last_off` (0: none); `None` when that record is not there any more.
fn stamp_of(store: &File, covered_end: u64, last_off: u64) -> Option<Stamp> {
    let meta = store.metadata().ok()?;
    if meta.len() < covered_end {
        return None;
    }
    let last_crc = if last_off == 0 {
        0
    } else {
        let mut head = [0u8; FRAME_HEAD];
        store.read_exact_at(&mut head, last_off).ok()?;
        if last_off + FRAME_HEAD as u64 + u64::from(u32_at(&head, 0)) != covered_end {
            return None;
        }
        u32_at(&head, 4)
    };
    Some(Stamp {
        dev: meta.dev(),
        ino: meta.ino(),
        covered_end,
        last_off,
        last_crc,
    })
}

/// What a scan of a store file from some offset found: the committed records, each as the
/// commit's number (in the order first seen) and the record's offset packed in one u64 (8
/// bytes a record, whatever the scan's length); where the scan can be trusted to (the end,
/// or the start of a torn tail or of an unfinished batch); and the offset of the last record
/// before that end.
struct Scanned {
    ids: HashMap<[u8; 20], u32>,
    packed: Vec<u64>,
    end: u64,
    last_off: u64,
}

impl Scanned {
    fn push(&mut self, commit: [u8; 20], off: u64) -> Option<()> {
        if off >= 1 << OFFSET_BITS || self.ids.len() >= 1 << (64 - OFFSET_BITS) {
            return None;
        }
        let n = self.ids.len() as u32;
        let id = *self.ids.entry(commit).or_insert(n);
        self.packed.push(u64::from(id) << OFFSET_BITS | off);
        Some(())
    }
}

/// Scan `store` from `start` (a frame boundary) in chunks of bounded size; `None` when the
/// bytes hold anything an index cannot stand for (a record of an older or newer layout,
/// corrupt bytes before the end).
fn scan(store: &File, start: u64, prev_last: u64) -> Option<Scanned> {
    let len = store.metadata().ok()?.len();
    let mut out = Scanned {
        ids: HashMap::new(),
        packed: Vec::new(),
        end: start,
        last_off: prev_last,
    };
    // The open batch: its begin marker's offset, the records before it, and the last record
    // before it.
    let mut batch: Option<(u64, usize, u64)> = None;
    let mut buf = Vec::with_capacity(CHUNK);
    let mut pos = start;
    'chunks: while pos < len {
        let want = (len - pos).min(CHUNK as u64) as usize;
        buf.resize(want, 0);
        store.read_exact_at(&mut buf, pos).ok()?;
        let mut off = 0usize;
        while off < buf.len() {
            let at = pos + off as u64;
            match frame_at(&buf, off) {
                Some((end, ver, payload)) => {
                    if ver == MARKER_VERSION {
                        match Marker::parse(payload)? {
                            Marker::Begin => batch = Some((at, out.packed.len(), out.last_off)),
                            Marker::Commit { begin } => {
                                if batch.is_some_and(|(b, _, _)| b == begin) {
                                    batch = None;
                                }
                            }
                        }
                    } else {
                        out.push(record_commit(ver, payload)?, at)?;
                    }
                    out.last_off = at;
                    off = end;
                    out.end = pos + end as u64;
                }
                None => {
                    let rest = &buf[off..];
                    let frame_len = (rest.len() >= 4)
                        .then(|| u32_at(rest, 0) as usize)
                        .filter(|&l| l > 0 && l <= MAX_RECORD);
                    let incomplete = match frame_len {
                        Some(l) => rest.len() < FRAME_HEAD + l,
                        None => rest.len() < FRAME_HEAD,
                    };
                    if !incomplete {
                        return None;
                    }
                    if pos + buf.len() as u64 >= len {
                        // An incomplete last record: a torn tail, or a write in progress.
                        break 'chunks;
                    }
                    // The frame goes on in the next chunk.
                    pos = at;
                    continue 'chunks;
                }
            }
        }
        pos += buf.len() as u64;
    }
    if let Some((begin, kept, last)) = batch {
        out.packed.truncate(kept);
        out.end = begin;
        out.last_off = last;
    }
    Some(out)
}

/// A frame as it lies in a chunk, its CRC not yet checked: the CRC it claims and its body
/// (version byte, then payload). [`Frame::checked`] checks it; the reader does so on every
/// core at once.
#[derive(Clone, Copy)]
pub(crate) struct Frame<'a> {
    crc: u32,
    body: &'a [u8],
}

impl<'a> Frame<'a> {
    /// (version, payload) when the body matches its CRC.
    pub(crate) fn checked(self) -> Option<(u8, &'a [u8])> {
        let (&version, payload) = self.body.split_first()?;
        (crc32fast::hash(self.body) == self.crc).then_some((version, payload))
    }

    /// The payload's first byte, unchecked: which share of the commits the record's is (a
    /// record's payload starts with its commit).
    pub(crate) fn first_byte(self) -> Option<u8> {
        self.body.get(1).copied()
    }
}

/// The frames of `store` in `[start, end)` (which the index vouches for), read in chunks of
/// bounded size: `f` gets each chunk's frames in file order, their lengths checked, their CRCs
/// left to [`Frame::checked`].
pub(crate) fn for_chunks(
    store: &File,
    start: u64,
    end: u64,
    f: &mut dyn FnMut(&[Frame<'_>]),
) -> std::io::Result<()> {
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "index out of date");
    let mut buf = Vec::with_capacity(CHUNK);
    let mut pos = start;
    while pos < end {
        let want = (end - pos).min(CHUNK as u64) as usize;
        buf.resize(want, 0);
        store.read_exact_at(&mut buf, pos)?;
        let mut frames = Vec::with_capacity(want / 100);
        let mut off = 0usize;
        while let Some(head) = buf.get(off..off + FRAME_HEAD) {
            let len = u32_at(head, 0) as usize;
            let crc = u32_at(head, 4);
            if len == 0 || len > MAX_RECORD {
                return Err(bad());
            }
            let Some(body) = buf.get(off + FRAME_HEAD..off + FRAME_HEAD + len) else {
                break; // goes on in the next chunk
            };
            frames.push(Frame { crc, body });
            off += FRAME_HEAD + len;
        }
        if off == 0 {
            return Err(bad());
        }
        f(&frames);
        pos += off as u64;
    }
    Ok(())
}

/// The index of the store file `store` (open at `path`), brought up to date: opened when it
/// is current, written again (merging the old one with the records since) when it is missing,
/// stale, or more than [`TAIL_LIMIT`] behind. `None` when the file cannot be indexed or the
/// index cannot be written (a read-only cache): the caller reads the file whole.
pub(crate) fn refresh(path: &Path, store: &File) -> Option<Index> {
    let idx = path_of(path);
    let len = store.metadata().ok()?.len();
    // A file that is not a store of this format is never read through an index: the whole
    // read says what is wrong with it.
    let mut head = [0u8; HEADER_LEN];
    store.read_exact_at(&mut head, 0).ok()?;
    if &head[..8] != MAGIC || u32_at(&head, 8) > FORMAT_VERSION {
        return None;
    }
    let old = Index::open(&idx, store);
    if let Some(i) = &old {
        if len - i.covered_end <= TAIL_LIMIT {
            return old;
        }
    }
    let (start, prev_last) = match &old {
        Some(i) => (i.covered_end, i.last_off),
        None => (HEADER_LEN as u64, 0),
    };
    let scanned = scan(store, start, prev_last)?;
    write(&idx, store, old.as_ref(), scanned).ok()?;
    Index::open(&idx, store)
}

/// Write the index of `old`'s records and `new`'s, through a temp file and a rename.
fn write(idx: &Path, store: &File, old: Option<&Index>, new: Scanned) -> anyhow::Result<()> {
    // Rank the new commits by their bytes, then sort (rank, offset) packed in one u64.
    let Scanned {
        ids,
        mut packed,
        end,
        last_off,
    } = new;
    let mut commits: Vec<([u8; 20], u32)> = ids.into_iter().collect();
    commits.sort_unstable();
    let mut rank = vec![0u64; commits.len()];
    for (r, (_, id)) in commits.iter().enumerate() {
        rank[*id as usize] = r as u64;
    }
    let mask = (1u64 << OFFSET_BITS) - 1;
    for p in packed.iter_mut() {
        *p = rank[(*p >> OFFSET_BITS) as usize] << OFFSET_BITS | (*p & mask);
    }
    drop(rank);
    packed.sort_unstable();
    // The new runs of each commit, by rank: (start in `packed`, count).
    let mut runs = vec![(0usize, 0u32); commits.len()];
    for (i, p) in packed.iter().enumerate() {
        let r = (p >> OFFSET_BITS) as usize;
        if runs[r].1 == 0 {
            runs[r].0 = i;
        }
        runs[r].1 += 1;
    }

    // The merged table: every commit of the old index and of the new records, in byte order.
    let old_entries: &[Entry] = old.map_or(&[], |o| &o.entries);
    let mut table: Vec<(Entry, Option<&Entry>, Option<usize>)> = Vec::new();
    let (mut a, mut b) = (0, 0);
    let mut start = 0u64;
    while a < old_entries.len() || b < commits.len() {
        let take_old =
            b >= commits.len() || (a < old_entries.len() && old_entries[a].commit <= commits[b].0);
        let take_new =
            a >= old_entries.len() || (b < commits.len() && commits[b].0 <= old_entries[a].commit);
        let commit = if take_old {
            old_entries[a].commit
        } else {
            commits[b].0
        };
        let o = take_old.then(|| &old_entries[a]);
        let n = take_new.then_some(b);
        let count = o.map_or(0, |e| e.count) + n.map_or(0, |b| runs[b].1);
        a += usize::from(take_old);
        b += usize::from(take_new);
        if count == 0 {
            // Seen only in a batch that never committed.
            continue;
        }
        table.push((
            Entry {
                commit,
                count,
                start,
            },
            o,
            n,
        ));
        start += u64::from(count);
    }
    let records = start;

    let dir = idx.parent().unwrap_or(Path::new("."));
    let name = idx
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = temp_file(dir, &format!(".{name}."))?;
    let stamp = stamp_of(store, end, last_off)
        .ok_or_else(|| anyhow::anyhow!("the store changed while it was indexed"))?;
    let mut head = [0u8; INDEX_HEADER];
    head[..8].copy_from_slice(INDEX_MAGIC);
    head[8..12].copy_from_slice(&INDEX_VERSION.to_le_bytes());
    head[16..24].copy_from_slice(&stamp.dev.to_le_bytes());
    head[24..32].copy_from_slice(&stamp.ino.to_le_bytes());
    head[32..40].copy_from_slice(&stamp.covered_end.to_le_bytes());
    head[40..48].copy_from_slice(&stamp.last_off.to_le_bytes());
    head[48..52].copy_from_slice(&stamp.last_crc.to_le_bytes());
    head[52..56].copy_from_slice(&(table.len() as u32).to_le_bytes());
    head[56..64].copy_from_slice(&records.to_le_bytes());
    let mut w = BufWriter::with_capacity(1 << 20, tmp.as_file());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&head);
    w.write_all(&head)?;
    for (e, _, _) in &table {
        let mut row = [0u8; ENTRY];
        row[..20].copy_from_slice(&e.commit);
        row[20..24].copy_from_slice(&e.count.to_le_bytes());
        row[24..32].copy_from_slice(&e.start.to_le_bytes());
        crc.update(&row);
        w.write_all(&row)?;
    }
    w.write_all(&crc.finalize().to_le_bytes())?;
    for (_, o, n) in &table {
        if let (Some(o), Some(old)) = (o, old) {
            for off in old.offsets_of(o)? {
                w.write_all(&off.to_le_bytes())?;
            }
        }
        if let Some(b) = n {
            let (s, c) = runs[*b];
            for p in &packed[s..s + c as usize] {
                w.write_all(&(p & mask).to_le_bytes())?;
            }
        }
    }
    w.flush()?;
    drop(w);
    // No sync: a torn index fails its checks on the next open and is built again.
    tmp.persist(idx)?;
    Ok(())
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use proptest::prelude::*;

    use std::collections::BTreeMap;

    use super::super::files::Store;
    use super::super::observation::{Keep, Observation};
    use super::super::record::{encode_frame, marker_frame, Marker};
    use super::super::sample::Sample;
    use super::*;

    fn sample(commit: u8, i: u64) -> Sample {
        Sample {
            commit: [commit; 20],
            test_hash: 1,
            recipe_hash: 2,
            time: i,
            round: 0,
            wall: 0.5,
            user: 0.25,
            sys: 0.125,
            max_rss: 1024,
            value: Some(i as f64),
            error: (i % 7 == 3).then(|| "x".repeat((i % 5000) as usize)),
            fingerprint: 7,
            import: None,
            window: 1 + i,
            moment: 0,
        }
    }

    fn wanted(commits: &[u8]) -> HashSet<[u8; 20]> {
        commits.iter().map(|&c| [c; 20]).collect()
    }

    fn filtered(store: &Store, w: &HashSet<[u8; 20]>) -> Vec<Sample> {
        let all = store.load("t").unwrap();
        all.samples
            .into_iter()
            .filter(|s| w.contains(&s.commit))
            .collect()
    }

    /// One step of a history of writes to a store file.
    #[derive(Debug, Clone)]
    enum Op {
        /// Appended one by one (a `run`).
        Runs(Vec<u8>),
        /// A committed batch (an import).
        Batch(Vec<u8>),
        /// A batch dropped by an error.
        Aborted(Vec<u8>),
        /// Read some commits (indexes the file as it stands).
        Read(Vec<u8>),
    }

    fn op() -> impl Strategy<Value = Op> {
        let commits = proptest::collection::vec(0u8..12, 0..60);
        prop_oneof![
            commits.clone().prop_map(Op::Runs),
            proptest::collection::vec(0u8..12, 0..3000).prop_map(Op::Batch),
            commits.clone().prop_map(Op::Aborted),
            commits.prop_map(Op::Read),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        /// Whatever was written in whatever order, the records of some commits read through
        /// the index are those of a whole read, in the same order.
        #[test]
        fn indexed_reads_equal_whole_reads(ops in proptest::collection::vec(op(), 1..8), pick in proptest::collection::vec(0u8..12, 0..5)) {
            let d = tempfile::tempdir().unwrap();
            let store = Store::new(d.path());
            let mut i = 0u64;
            for op in &ops {
                match op {
                    Op::Runs(cs) => {
                        let mut a = store.appender("t").unwrap();
                        for &c in cs {
                            a.append(&sample(c, i)).unwrap();
                            i += 1;
                        }
                    }
                    Op::Batch(cs) | Op::Aborted(cs) => {
                        let mut a = store.appender("t").unwrap();
                        a.begin().unwrap();
                        for &c in cs {
                            a.push(&sample(c, i)).unwrap();
                            i += 1;
                        }
                        if matches!(op, Op::Batch(_)) {
                            a.commit().unwrap();
                        } else {
                            a.abort();
                        }
                    }
                    Op::Read(cs) => {
                        let w = wanted(cs);
                        prop_assert_eq!(store.load_commits("t", &w).unwrap().samples, filtered(&store, &w));
                    }
                }
            }
            let w = wanted(&pick);
            let got = store.load_commits("t", &w).unwrap();
            prop_assert!(got.warnings.is_empty(), "{:?}", got.warnings);
            prop_assert_eq!(got.samples, filtered(&store, &w));
            let all: HashSet<[u8; 20]> = store.load("t").unwrap().samples.iter().map(|s| s.commit).collect();
            prop_assert_eq!(store.commits("t").unwrap(), all);
            // Read whole on every core, however the commits are shared out: each commit's
            // records, in file order, and as observations the same.
            let whole = grouped(store.load("t").unwrap().samples);
            for parts in 1..4 {
                let (got, l) = visit_grouped::<Sample>(&store, parts);
                prop_assert!(l.warnings.is_empty(), "{:?}", l.warnings);
                prop_assert_eq!(&got, &whole);
                let (obs, _) = visit_grouped::<Observation>(&store, parts);
                let expect: BTreeMap<_, Vec<Observation>> = whole
                    .iter()
                    .map(|(c, v)| (*c, v.iter().map(Observation::of).collect()))
                    .collect();
                prop_assert_eq!(obs, expect);
            }
        }
    }

    fn grouped(samples: Vec<Sample>) -> BTreeMap<[u8; 20], Vec<Sample>> {
        let mut m: BTreeMap<[u8; 20], Vec<Sample>> = BTreeMap::new();
        for s in samples {
            m.entry(s.commit).or_default().push(s);
        }
        m
    }

    /// [`Store::visit_parts`] of test `t` in `parts` parts, the parts' records per commit.
    fn visit_grouped<R: Keep>(
        store: &Store,
        parts: usize,
    ) -> (BTreeMap<[u8; 20], Vec<R>>, super::super::sample::Loaded) {
        let (states, l) = store
            .visit_parts::<R, BTreeMap<[u8; 20], Vec<R>>>(
                "t",
                parts,
                &Default::default,
                &|m, h, r| m.entry(h.commit).or_default().push(r),
            )
            .unwrap();
        let mut all = BTreeMap::new();
        for m in states {
            for (c, v) in m {
                assert!(all.insert(c, v).is_none(), "a commit is in one part only");
            }
        }
        (all, l)
    }

    #[test]
    fn a_damaged_record_under_the_index_makes_every_core_start_over_on_the_whole_file() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::new(d.path());
        let many: Vec<Sample> = (0..30_000).map(|i| sample((i % 7) as u8, i)).collect();
        store.add_atomically("t", &many).unwrap();
        assert!(matches!(
            store.index_state("t").unwrap(),
            IndexState::Current { .. }
        ));
        // A flipped byte in a record half way in, which the index vouched for.
        let path = store.path("t");
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 0x55;
        std::fs::write(&path, &bytes).unwrap();
        let (got, l) = visit_grouped::<Sample>(&store, 2);
        // What a whole read keeps (all but the damaged record), not twice what came first.
        let whole = store.load("t").unwrap();
        assert_eq!(whole.samples.len(), 29_999);
        assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
        assert_eq!(got, grouped(whole.samples));
        assert!(
            !path.with_extension("idx").exists(),
            "the index is not trusted again"
        );
    }

    #[test]
    fn a_batch_cut_short_counts_for_nothing_and_is_cut_on_the_next_open() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::new(d.path());
        store.add_atomically("t", &[sample(1, 0)]).unwrap();
        let path = store.path("t");
        // A crash after the begin marker and some records, before the commit marker.
        let before = std::fs::metadata(&path).unwrap().len();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend(marker_frame(Marker::Begin));
        for i in 1..50 {
            bytes.extend(encode_frame(&sample(2, i)).unwrap());
        }
        std::fs::write(&path, &bytes).unwrap();
        let w = wanted(&[1, 2]);
        let l = store.load_commits("t", &w).unwrap();
        assert_eq!(l.samples, vec![sample(1, 0)]);
        assert!(l.torn_tail);
        assert_eq!(store.load("t").unwrap().samples, vec![sample(1, 0)]);
        // The next writer cuts the unfinished batch off and appends after what counted.
        let mut a = store.appender("t").unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), before);
        a.append(&sample(2, 99)).unwrap();
        drop(a);
        assert_eq!(
            store.load_commits("t", &w).unwrap().samples,
            vec![sample(1, 0), sample(2, 99)]
        );
    }

    #[test]
    fn a_commit_marker_of_another_batch_commits_nothing() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::new(d.path());
        store.add_atomically("t", &[sample(1, 0)]).unwrap();
        let path = store.path("t");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend(marker_frame(Marker::Begin));
        bytes.extend(encode_frame(&sample(2, 1)).unwrap());
        bytes.extend(marker_frame(Marker::Commit { begin: 12 }));
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(store.load("t").unwrap().samples, vec![sample(1, 0)]);
        assert_eq!(
            store.load_commits("t", &wanted(&[1, 2])).unwrap().samples,
            vec![sample(1, 0)]
        );
    }

    #[test]
    fn a_rewritten_or_damaged_index_is_built_again() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::new(d.path());
        let many: Vec<Sample> = (0..40_000).map(|i| sample((i % 9) as u8, i)).collect();
        store.add_atomically("t", &many).unwrap();
        let w = wanted(&[3]);
        let expect = filtered(&store, &w);
        assert_eq!(expect.len(), 40_000 / 9 + 1);
        assert!(matches!(
            store.index_state("t").unwrap(),
            IndexState::Current {
                commits: 9,
                records: 40_000
            }
        ));
        // A damaged index: its table fails its checksum and it is built again.
        let idx = store.path("t").with_extension("idx");
        let mut b = std::fs::read(&idx).unwrap();
        b[INDEX_HEADER + 3] ^= 0xff;
        std::fs::write(&idx, &b).unwrap();
        assert_eq!(store.load_commits("t", &w).unwrap().samples, expect);
        // Offsets that point at nothing: the read notices, drops the index and reads whole.
        let mut b = std::fs::read(&idx).unwrap();
        let n = b.len();
        b[n - 8..].copy_from_slice(&13u64.to_le_bytes());
        std::fs::write(&idx, &b).unwrap();
        let w8 = wanted(&[8]);
        assert_eq!(
            store.load_commits("t", &w8).unwrap().samples,
            filtered(&store, &w8)
        );
        // A store rewritten by `cache prune` (a new file): the old index is not used.
        store.prune("t", &|s| s.commit == [3; 20]).unwrap();
        assert!(store.load_commits("t", &w).unwrap().samples.is_empty());
        assert!(matches!(
            store.index_state("t").unwrap(),
            IndexState::Current { commits: 8, .. }
        ));
    }

    #[test]
    fn older_record_layouts_are_read_whole() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::new(d.path());
        drop(store.appender("t").unwrap());
        let path = store.path("t");
        let mut bytes = std::fs::read(&path).unwrap();
        let v1 = super::super::record::SampleV1 {
            commit: [5; 20],
            test_hash: 1,
            recipe_hash: 2,
            time: 3,
            round: 0,
            wall: 1.0,
            user: 0.5,
            sys: 0.1,
            max_rss: 10,
            value: Some(4.0),
            error: None,
        };
        let payload = bincode::serde::encode_to_vec(&v1, bincode::config::standard()).unwrap();
        bytes.extend(super::super::record::frame_of(1, &payload));
        std::fs::write(&path, &bytes).unwrap();
        store.appender("t").unwrap().append(&sample(5, 9)).unwrap();
        assert_eq!(store.index_state("t").unwrap(), IndexState::Unindexable);
        let got = store.load_commits("t", &wanted(&[5])).unwrap().samples;
        assert_eq!(got.len(), 2);
        assert_eq!(got, store.load("t").unwrap().samples);
    }
}
