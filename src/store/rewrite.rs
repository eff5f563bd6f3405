//! Rewriting a store file's bytes (what `cache prune` writes): the records kept are copied
//! as they are, but every batch is framed again. A batch's commit marker holds the offset of
//! its begin marker, so once earlier records are gone a marker copied byte for byte names an
//! offset where no begin marker is any more, every later batch would read as unfinished, and
//! the next writer would cut the file there. So each batch is written anew: its begin marker
//! where it now lies, the records of it that are kept, and a commit marker naming that offset.

use super::record::{frame_at, marker_frame, Marker, MARKER_VERSION};
use super::sample::{FORMAT_VERSION, FRAME_HEAD, HEADER_LEN, MAGIC};

/// What [`rewrite`] made of a file.
#[derive(Debug, Default)]
pub(crate) struct Rewritten {
    /// The new file: header, then the kept records with their batches framed again.
    pub bytes: Vec<u8>,
    /// Records kept (markers not counted).
    pub kept: usize,
    /// Records `drop` took out.
    pub removed: usize,
    /// Corrupt bytes, and an unfinished batch (a crash's leftover), left out: every load
    /// skipped them anyway.
    pub corrupt_bytes: usize,
    /// Batches whose markers did not frame them (their commit marker named another offset:
    /// a file an older `cache prune` copied byte for byte), framed right now. Their records
    /// were left out by every reader until then.
    pub reframed: usize,
}

/// The open batch while rewriting: where its begin marker was in the old file, and the kept
/// records of it so far.
struct Open {
    begin: usize,
    records: Vec<u8>,
}

/// Rewrite `bytes` (a whole store file, its header already checked) without the records
/// `drop(version, payload)` takes. Never panics on any input.
pub(crate) fn rewrite(bytes: &[u8], drop: &mut dyn FnMut(u8, &[u8]) -> bool) -> Rewritten {
    let mut out = Rewritten {
        bytes: Vec::with_capacity(bytes.len()),
        ..Rewritten::default()
    };
    out.bytes.extend_from_slice(MAGIC);
    out.bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    let mut open: Option<Open> = None;
    let mut off = HEADER_LEN.min(bytes.len());
    while off < bytes.len() {
        let Some((end, ver, payload)) = frame_at(bytes, off) else {
            let next = (off + 1..bytes.len().saturating_sub(FRAME_HEAD - 1))
                .find(|&o| frame_at(bytes, o).is_some())
                .unwrap_or(bytes.len());
            out.corrupt_bytes += next - off;
            off = next;
            continue;
        };
        let marker = (ver == MARKER_VERSION)
            .then(|| Marker::parse(payload))
            .flatten();
        match marker {
            Some(Marker::Begin) => {
                // A begin marker inside an open batch: readers keep the records of the first
                // as plain records (only the last open batch is left out), and so does this.
                if let Some(o) = open.take() {
                    out.bytes.extend_from_slice(&o.records);
                }
                open = Some(Open {
                    begin: off,
                    records: Vec::new(),
                });
            }
            Some(Marker::Commit { begin }) => {
                // A commit marker of no open batch means nothing to any reader: left out.
                if let Some(o) = open.take() {
                    if begin != o.begin as u64 {
                        out.reframed += 1;
                    }
                    if !o.records.is_empty() {
                        let at = out.bytes.len() as u64;
                        out.bytes.extend_from_slice(&marker_frame(Marker::Begin));
                        out.bytes.extend_from_slice(&o.records);
                        out.bytes
                            .extend_from_slice(&marker_frame(Marker::Commit { begin: at }));
                    }
                }
            }
            None => {
                if drop(ver, payload) {
                    out.removed += 1;
                } else {
                    out.kept += 1;
                    match &mut open {
                        Some(o) => o.records.extend_from_slice(&bytes[off..end]),
                        None => out.bytes.extend_from_slice(&bytes[off..end]),
                    }
                }
            }
        }
        off = end;
    }
    if let Some(o) = open {
        // An unfinished batch: no reader counts it, and the next writer would cut it off.
        out.corrupt_bytes += bytes.len() - o.begin;
        out.kept -= count_frames(&o.records);
    }
    out
}

/// How many frames `records` (whole frames, back to back) hold.
fn count_frames(records: &[u8]) -> usize {
    let mut n = 0;
    let mut off = 0;
    while let Some((end, _, _)) = frame_at(records, off) {
        n += 1;
        off = end;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::record::decode_file;
    use crate::store::{encode_frame, Sample};
    use std::path::Path;

    fn sample(i: u8) -> Sample {
        Sample {
            commit: [i; 20],
            test_hash: 1,
            recipe_hash: 2,
            time: u64::from(i),
            round: 0,
            wall: 0.5,
            user: 0.25,
            sys: 0.125,
            max_rss: 1024,
            value: Some(f64::from(i)),
            error: None,
            fingerprint: 7,
            import: None,
            window: 1,
            moment: 0,
        }
    }

    fn header() -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        b
    }

    /// A file of plain records `plain`, then each of `batches` as a committed batch.
    fn file(plain: &[u8], batches: &[&[u8]]) -> Vec<u8> {
        let mut b = header();
        for &i in plain {
            b.extend(encode_frame(&sample(i)).unwrap());
        }
        for batch in batches {
            let at = b.len() as u64;
            b.extend(marker_frame(Marker::Begin));
            for &i in *batch {
                b.extend(encode_frame(&sample(i)).unwrap());
            }
            b.extend(marker_frame(Marker::Commit { begin: at }));
        }
        b
    }

    fn values(bytes: &[u8]) -> Vec<u8> {
        let l = decode_file(Path::new("t.pbs"), bytes).unwrap();
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        assert!(!l.torn_tail);
        l.samples.iter().map(|s| s.value.unwrap() as u8).collect()
    }

    fn dropping(odd: bool) -> impl FnMut(u8, &[u8]) -> bool {
        move |v, p| {
            crate::store::decode_record(v, p).is_ok_and(|s| odd && s.value.unwrap() as u8 % 2 == 1)
        }
    }

    #[test]
    fn batches_after_removed_records_still_count() {
        let f = file(&[1, 3, 5], &[&[2, 4], &[6, 7, 8]]);
        let r = rewrite(&f, &mut dropping(true));
        assert_eq!((r.removed, r.kept, r.reframed), (4, 4, 0));
        assert_eq!(values(&r.bytes), [2, 4, 6, 8]);
    }

    #[test]
    fn a_batch_emptied_by_the_rewrite_leaves_no_markers() {
        let f = file(&[2], &[&[1, 3], &[4]]);
        let r = rewrite(&f, &mut dropping(true));
        assert_eq!(r.bytes, file(&[2], &[&[4]]));
    }

    #[test]
    fn a_batch_copied_byte_for_byte_is_framed_again() {
        // What an older `cache prune` left: the commit marker names where the begin marker was.
        let mut f = file(&[1], &[]);
        f.extend(marker_frame(Marker::Begin));
        f.extend(encode_frame(&sample(2)).unwrap());
        f.extend(marker_frame(Marker::Commit { begin: 999 }));
        let r = rewrite(&f, &mut dropping(false));
        assert_eq!(r.reframed, 1);
        assert_eq!(values(&r.bytes), [1, 2]);
    }

    #[test]
    fn an_unfinished_batch_and_corrupt_bytes_are_left_out() {
        let mut f = file(&[1], &[&[2]]);
        let n = f.len();
        f.extend(marker_frame(Marker::Begin));
        f.extend(encode_frame(&sample(3)).unwrap());
        let r = rewrite(&f, &mut dropping(false));
        assert_eq!(r.corrupt_bytes, f.len() - n);
        assert_eq!(r.kept, 2);
        assert_eq!(values(&r.bytes), [1, 2]);
    }

    #[test]
    fn any_bytes_rewrite_without_panic_into_a_file_that_reads_clean() {
        let base = file(&[1, 2], &[&[3, 4], &[5]]);
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..300 {
            let mut b = base.clone();
            for _ in 0..3 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let i = HEADER_LEN + (seed as usize) % (b.len() - HEADER_LEN);
                b[i] ^= (seed >> 32) as u8 | 1;
            }
            let r = rewrite(&b, &mut dropping(true));
            let l = decode_file(Path::new("t.pbs"), &r.bytes).unwrap();
            assert!(!l.torn_tail, "a rewrite never leaves an unfinished batch");
        }
    }

    #[test]
    fn a_misframed_batch_is_not_cut_by_the_next_writer_and_prune_brings_it_back() {
        let d = tempfile::tempdir().unwrap();
        let store = crate::store::Store::new(d.path());
        let mut f = file(&[1], &[]);
        f.extend(marker_frame(Marker::Begin));
        f.extend(encode_frame(&sample(2)).unwrap());
        f.extend(marker_frame(Marker::Commit { begin: 999 }));
        std::fs::write(store.path("t"), &f).unwrap();
        let l = store.load("t").unwrap();
        assert!(!l.torn_tail);
        assert!(l.warnings[0].contains("cache prune"), "{:?}", l.warnings);
        store.appender("t").unwrap().append(&sample(3)).unwrap();
        let p = store.prune("t", &|_| false).unwrap();
        assert_eq!((p.reframed, p.removed, p.kept), (1, 0, 3));
        let l = store.load("t").unwrap();
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        let v: Vec<u8> = l.samples.iter().map(|s| s.value.unwrap() as u8).collect();
        assert_eq!(v, [1, 2, 3]);
    }
}
