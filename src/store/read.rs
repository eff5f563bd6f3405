//! Reading a store file: whole, or only the records of some commits through its index.

use std::collections::HashSet;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use anyhow::Context;

use super::files::Store;
use super::fs::{bytes_from, open_own};
use super::index::{self, Index, IndexState};
use super::observation::{Head, Keep};
use super::record::{self, decode_record};
use super::record::{decode_file, frame_at};
use super::sample::{Loaded, Sample, FRAME_HEAD, HEADER_LEN, RECORD_VERSION};

/// Records closer together than this are read in one go.
const BLOCK: u64 = 256 << 10;
/// Bytes read past a block's last record start: most records are about 120 bytes.
const READ_AHEAD: u64 = 4096;

impl Store {
    /// Every sample stored for `test` (none if the file does not exist).
    pub fn load(&self, test: &str) -> anyhow::Result<Loaded> {
        let path = self.path(test);
        match open_own(&path)? {
            Some(mut f) => {
                let mut bytes = Vec::new();
                f.read_to_end(&mut bytes)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                Ok(decode_file(&path, &bytes)?)
            }
            None => Ok(Loaded::default()),
        }
    }

    /// The samples of `test` whose commit is in `wanted`, read through the file's index (made
    /// or brought up to date first): the cost follows those commits' records, not the file's
    /// size. A file that cannot be indexed is read whole and filtered.
    pub fn load_commits(&self, test: &str, wanted: &HashSet<[u8; 20]>) -> anyhow::Result<Loaded> {
        let path = self.path(test);
        let Some(file) = open_own(&path)? else {
            return Ok(Loaded::default());
        };
        if let Some(idx) = index::refresh(&path, &file) {
            match read_indexed(&path, &file, &idx, wanted)? {
                Some(l) => return Ok(l),
                // The index does not match the file after all: never trust it again.
                None => {
                    let _ = std::fs::remove_file(index::path_of(&path));
                }
            }
        }
        let bytes =
            bytes_from(&file, 0).with_context(|| format!("cannot read {}", path.display()))?;
        Ok(record::decode_file_where(&path, &bytes, &mut |c| {
            wanted.contains(c)
        })?)
    }

    /// The commits `test` has records of, in no particular order (through the index when the
    /// file can be indexed).
    pub fn commits(&self, test: &str) -> anyhow::Result<HashSet<[u8; 20]>> {
        let path = self.path(test);
        let Some(file) = open_own(&path)? else {
            return Ok(HashSet::new());
        };
        if let Some(idx) = index::refresh(&path, &file) {
            let mut out: HashSet<[u8; 20]> = idx.commits().copied().collect();
            let tail = bytes_from(&file, idx.covered_end)?;
            let mut l = Loaded::default();
            record::decode_records(
                &path,
                &tail,
                0,
                idx.covered_end as usize,
                &mut l,
                &mut |c| {
                    out.insert(*c);
                    false
                },
            );
            return Ok(out);
        }
        Ok(self.load(test)?.samples.iter().map(|s| s.commit).collect())
    }

    /// Every record of `test`, read on every core at once, with memory bounded whatever the
    /// file's size (through the index's end in chunks, then the tail; a file that cannot be
    /// indexed is read whole): the commits are shared out among `parts` states (made by
    /// `init`), and each state is handed, by `f`, the records of its commits in file order,
    /// decoded and checked by the thread that owns it. Problems (corrupt bytes) are stepped
    /// over as [`Store::load`] does, and returned as its warnings are (the returned [`Loaded`]
    /// holds no samples). Nothing is decoded
    /// twice and no record crosses threads: what a reader of millions of records (a whole
    /// history for `detect`) files per record stays on the core that decoded it. Should the
    /// index turn out not to match the file, the states are made again and given the whole
    /// file. Returns the states, in order, and what the load found. (At most 16 parts.)
    pub fn visit_parts<R: Keep, S: Send>(
        &self,
        test: &str,
        parts: usize,
        init: &(dyn Fn() -> S + Sync),
        f: &(dyn Fn(&mut S, Head, R) + Sync),
    ) -> anyhow::Result<(Vec<S>, Loaded)> {
        use rayon::prelude::*;
        // Every part looks at every frame to find its own: past a few parts that look costs
        // more than the decoding it shares out.
        let parts = parts.clamp(1, 16);
        let fresh = || (0..parts).map(|_| init()).collect::<Vec<S>>();
        let share = |first: u8| usize::from(first) % parts;
        let mut states = fresh();
        let path = self.path(test);
        let Some(file) = open_own(&path)? else {
            return Ok((states, Loaded::default()));
        };
        let give = |states: &mut [S], samples: Vec<Sample>| {
            for s in samples {
                let (h, r) = R::from_sample(s);
                f(&mut states[share(h.commit[0])], h, r);
            }
        };
        if let Some(idx) = index::refresh(&path, &file) {
            let mut failed = false;
            let frames =
                index::for_chunks(&file, HEADER_LEN as u64, idx.covered_end, &mut |chunk| {
                    if failed {
                        return; // the whole file is read instead
                    }
                    let bad = states.par_iter_mut().enumerate().any(|(part, state)| {
                        let mut bad = false;
                        for frame in chunk {
                            // Each frame is checked by one part: its record's commit's (a
                            // frame too short to say, by the first).
                            match frame.first_byte() {
                                Some(b) if share(b) != part => continue,
                                None if part != 0 => continue,
                                _ => {}
                            }
                            match frame.checked() {
                                Some((RECORD_VERSION, payload)) => match R::decode(payload) {
                                    Ok((h, r)) if share(h.commit[0]) == part => f(state, h, r),
                                    _ => bad = true,
                                },
                                // A marker: the index covers committed batches only.
                                Some(_) => {}
                                None => bad = true,
                            }
                        }
                        bad
                    });
                    if bad {
                        failed = true;
                    }
                });
            if frames.is_ok() && !failed {
                let mut l = tail_past(&path, &file, idx.covered_end)?;
                give(&mut states, std::mem::take(&mut l.samples));
                return Ok((states, l));
            }
            // A record the index vouched for is not one: read the whole file instead.
            let _ = std::fs::remove_file(index::path_of(&path));
            states = fresh();
        }
        let mut l = self.load(test)?;
        give(&mut states, std::mem::take(&mut l.samples));
        Ok((states, l))
    }

    /// Remove `test`'s file (and its index) if it holds no record: what an import that was
    /// refused leaves of a store it created.
    pub fn remove_empty(&self, test: &str) {
        let path = self.path(test);
        if std::fs::metadata(&path).is_ok_and(|m| m.len() <= HEADER_LEN as u64) {
            let _ = std::fs::remove_file(index::path_of(&path));
            let _ = std::fs::remove_file(&path);
        }
    }

    /// How many records each commit of `test` has, as far as its index says (empty without
    /// one): what a reader of them all can reserve room for.
    pub fn record_counts(&self, test: &str) -> std::collections::HashMap<[u8; 20], u32> {
        let path = self.path(test);
        match open_own(&path) {
            Ok(Some(file)) => index::refresh(&path, &file)
                .map(|i| i.counts().collect())
                .unwrap_or_default(),
            _ => Default::default(),
        }
    }

    /// Bring `test`'s index up to date now (after a large batch), so the next command does
    /// not pay for it. Best effort: an index is a cache.
    pub fn refresh_index(&self, test: &str) {
        let path = self.path(test);
        if let Ok(Some(file)) = open_own(&path) {
            index::refresh(&path, &file);
        }
    }

    /// What `test`'s index covers (made or brought up to date first).
    pub fn index_state(&self, test: &str) -> anyhow::Result<IndexState> {
        let path = self.path(test);
        let Some(file) = open_own(&path)? else {
            return Ok(IndexState::Missing);
        };
        Ok(index::refresh(&path, &file).map_or(IndexState::Unindexable, |i| i.state()))
    }
}

/// Every record past `covered_end` (those appended since the index was written: a cron
/// round's), decoded with the problems a whole read would report.
fn tail_past(path: &Path, file: &File, covered_end: u64) -> anyhow::Result<Loaded> {
    let tail =
        bytes_from(file, covered_end).with_context(|| format!("cannot read {}", path.display()))?;
    let mut l = Loaded::default();
    record::decode_records(path, &tail, 0, covered_end as usize, &mut l, &mut |_| true);
    Ok(l)
}

/// The wanted commits' records through `idx`, then those of the tail past it; `None` when an
/// offset of the index holds no record of the current layout (the index is wrong).
fn read_indexed(
    path: &Path,
    file: &File,
    idx: &Index,
    wanted: &HashSet<[u8; 20]>,
) -> anyhow::Result<Option<Loaded>> {
    let mut offsets = Vec::new();
    for c in wanted {
        offsets.extend(
            idx.offsets(c)
                .with_context(|| format!("cannot read the index of {}", path.display()))?,
        );
    }
    offsets.sort_unstable();
    let mut out = Loaded {
        samples: Vec::with_capacity(offsets.len()),
        ..Loaded::default()
    };
    let mut buf = Vec::new();
    let mut i = 0;
    while i < offsets.len() {
        let first = offsets[i];
        let mut j = i + 1;
        while j < offsets.len() && offsets[j] - first < BLOCK {
            j += 1;
        }
        let end = (offsets[j - 1] + READ_AHEAD).min(idx.covered_end);
        if end <= first {
            return Ok(None);
        }
        buf.resize((end - first) as usize, 0);
        file.read_exact_at(&mut buf, first)
            .with_context(|| format!("cannot read {}", path.display()))?;
        for &o in &offsets[i..j] {
            let local = (o - first) as usize;
            let single;
            let (ver, payload) = match frame_at(&buf, local) {
                Some((_, v, p)) => (v, p),
                None => {
                    // A record longer than the read-ahead: read it alone.
                    let mut head = [0u8; FRAME_HEAD];
                    if file.read_exact_at(&mut head, o).is_err() {
                        return Ok(None);
                    }
                    let len = u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as u64;
                    if o + FRAME_HEAD as u64 + len > idx.covered_end {
                        return Ok(None);
                    }
                    let mut whole = vec![0u8; FRAME_HEAD + len as usize];
                    file.read_exact_at(&mut whole, o)
                        .with_context(|| format!("cannot read {}", path.display()))?;
                    single = whole;
                    match frame_at(&single, 0) {
                        Some((_, v, p)) => (v, p),
                        None => return Ok(None),
                    }
                }
            };
            if ver != RECORD_VERSION {
                return Ok(None);
            }
            match decode_record(ver, payload) {
                Ok(s) => out.samples.push(s),
                Err(e) => out.warnings.push(format!(
                    "{}: record at offset {o} cannot be decoded ({e}); skipped",
                    path.display()
                )),
            }
        }
        i = j;
    }
    let tail = bytes_from(file, idx.covered_end)
        .with_context(|| format!("cannot read {}", path.display()))?;
    record::decode_records(
        path,
        &tail,
        0,
        idx.covered_end as usize,
        &mut out,
        &mut |c| wanted.contains(c),
    );
    Ok(Some(out))
}
