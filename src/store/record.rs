//! The bytes of a store file: record layouts (the current one and the older ones still read),
//! frames (length, CRC, version, payload), the markers that make a batch of records all or
//! nothing, and the decoding of a file or of its tail.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::sample::{
    borrowed_text, largest_text, Import, Loaded, Sample, StoreError, FORMAT_VERSION, FRAME_HEAD,
    HEADER_LEN, LEGACY_WINDOW, MAGIC, MAX_RECORD, RECORD_VERSION,
};

/// The version byte of a marker frame (not a sample): [`Marker::Begin`] opens a batch of
/// records, [`Marker::Commit`] closes it. The last byte value, so that the record layouts
/// after [`RECORD_VERSION`] stay free for samples (an older perfbisect skips markers as a
/// record too new to read). Records between a begin and its commit count only
/// once the commit is written; a batch a crash cut short is dropped whole, like a torn tail.
pub const MARKER_VERSION: u8 = u8::MAX;

/// A marker frame's meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// The records that follow are one batch.
    Begin,
    /// The batch whose begin marker is at this offset is complete.
    Commit { begin: u64 },
}

impl Marker {
    fn payload(self) -> [u8; 9] {
        let mut p = [0u8; 9];
        match self {
            Marker::Begin => p[0] = b'B',
            Marker::Commit { begin } => {
                p[0] = b'C';
                p[1..].copy_from_slice(&begin.to_le_bytes());
            }
        }
        p
    }

    /// The marker a frame of [`MARKER_VERSION`] holds, if it is one.
    pub fn parse(payload: &[u8]) -> Option<Marker> {
        match (payload.first()?, payload.len()) {
            (b'B', 9) => Some(Marker::Begin),
            (b'C', 9) => Some(Marker::Commit {
                begin: u64::from_le_bytes(payload[1..9].try_into().ok()?),
            }),
            _ => None,
        }
    }
}

/// The frame of a marker.
pub fn marker_frame(m: Marker) -> Vec<u8> {
    frame_of(MARKER_VERSION, &m.payload())
}

pub(crate) fn frame_of(version: u8, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() + 1) as u32;
    let mut crc = crc32fast::Hasher::new();
    crc.update(&[version]);
    crc.update(payload);
    let mut frame = Vec::with_capacity(FRAME_HEAD + len as usize);
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(&crc.finalize().to_le_bytes());
    frame.push(version);
    frame.extend_from_slice(payload);
    frame
}

/// The commit a current-layout record is of, read without decoding the rest: bincode writes
/// the 20 bytes of `Sample::commit` first, as they are.
pub fn record_commit(version: u8, payload: &[u8]) -> Option<[u8; 20]> {
    if version != RECORD_VERSION {
        return None;
    }
    payload.get(..20)?.try_into().ok()
}

/// The record layout of version 1 (perfbisect before fingerprints and imports): read and
/// turned into a [`Sample`] without a fingerprint, never written again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleV1 {
    pub commit: [u8; 20],
    pub test_hash: u64,
    pub recipe_hash: u64,
    pub time: u64,
    pub round: u32,
    pub wall: f64,
    pub user: f64,
    pub sys: f64,
    pub max_rss: u64,
    pub value: Option<f64>,
    #[serde(deserialize_with = "borrowed_text")]
    pub error: Option<String>,
}

impl From<SampleV1> for Sample {
    fn from(s: SampleV1) -> Sample {
        Sample {
            commit: s.commit,
            test_hash: s.test_hash,
            recipe_hash: s.recipe_hash,
            time: s.time,
            round: s.round,
            wall: s.wall,
            user: s.user,
            sys: s.sys,
            max_rss: s.max_rss,
            value: s.value,
            error: s.error,
            fingerprint: 0,
            import: None,
            window: 0,
            moment: 0,
        }
    }
}

/// The record layout of version 2 (fingerprints and imports, before windows and moments):
/// read and turned into a [`Sample`] whose window is made up on load, never written again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleV2 {
    pub commit: [u8; 20],
    pub test_hash: u64,
    pub recipe_hash: u64,
    pub time: u64,
    pub round: u32,
    pub wall: f64,
    pub user: f64,
    pub sys: f64,
    pub max_rss: u64,
    pub value: Option<f64>,
    #[serde(deserialize_with = "borrowed_text")]
    pub error: Option<String>,
    pub fingerprint: u64,
    pub import: Option<Import>,
}

impl From<SampleV2> for Sample {
    fn from(s: SampleV2) -> Sample {
        Sample {
            commit: s.commit,
            test_hash: s.test_hash,
            recipe_hash: s.recipe_hash,
            time: s.time,
            round: s.round,
            wall: s.wall,
            user: s.user,
            sys: s.sys,
            max_rss: s.max_rss,
            value: s.value,
            error: s.error,
            fingerprint: s.fingerprint,
            import: s.import,
            window: 0,
            moment: 0,
        }
    }
}

/// The made-up window of a run of legacy records, from the first record's bytes: the same
/// on every load of any file holding it, and another for every other record. (Not its
/// offset: `merge` and exports keep a window for good, and two old files have records at the
/// same offsets, which would then look taken side by side.)
fn legacy_window(payload: &[u8]) -> u64 {
    let h = blake3::hash(payload);
    let id = u64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8 bytes"));
    LEGACY_WINDOW | id
}

/// Decode the payload of a record of layout `version` (at most [`RECORD_VERSION`]).
pub fn decode_record(version: u8, payload: &[u8]) -> Result<Sample, String> {
    let config = bincode::config::standard();
    match version {
        1 => bincode::serde::borrow_decode_from_slice::<SampleV1, _>(payload, config)
            .map(|(s, _)| s.into())
            .map_err(|e| e.to_string()),
        2 => bincode::serde::borrow_decode_from_slice::<SampleV2, _>(payload, config)
            .map(|(s, _)| s.into())
            .map_err(|e| e.to_string()),
        3 => {
            let (mut s, n) = bincode::serde::borrow_decode_from_slice::<Sample, _>(payload, config)
                .map_err(|e| e.to_string())?;
            // An imported sample's origin, after it (see `super::origin`).
            if let (Some(import), Some((origin, spread))) =
                (s.import.as_mut(), super::origin::decode(&payload[n..])?)
            {
                import.origin = Some(origin);
                import.spread = spread;
            }
            Ok(s)
        }
        v => Err(format!("record version {v} is not known")),
    }
}

/// Frame one sample: length, CRC32 of (version + payload), version, payload. A sample whose
/// record would be longer than [`MAX_RECORD`] is refused ([`StoreError::RecordTooLarge`]):
/// every load would take it for corruption.
pub fn encode_frame(sample: &Sample) -> anyhow::Result<Vec<u8>> {
    let mut frame = Vec::with_capacity(128);
    encode_frame_into(sample, &mut frame)?;
    Ok(frame)
}

/// [`encode_frame`] at the end of `buf`, without a buffer of its own; on an error `buf` is
/// as it was.
pub fn encode_frame_into(sample: &Sample, buf: &mut Vec<u8>) -> anyhow::Result<()> {
    let start = buf.len();
    buf.extend_from_slice(&[0; FRAME_HEAD]);
    buf.push(RECORD_VERSION);
    let mut encoded =
        bincode::serde::encode_into_std_write(sample, buf, bincode::config::standard()).map(|_| ());
    if let (Ok(()), Some(origin)) = (
        &encoded,
        sample
            .import
            .as_ref()
            .and_then(|i| Some((i.origin.as_deref()?, &i.spread))),
    ) {
        encoded = super::origin::encode(origin.0, origin.1, buf);
    }
    if let Err(e) = encoded {
        buf.truncate(start);
        return Err(anyhow::Error::new(e).context("cannot encode sample"));
    }
    let len = buf.len() - start - FRAME_HEAD;
    if len > MAX_RECORD {
        buf.truncate(start);
        return Err(StoreError::RecordTooLarge {
            len,
            longest: largest_text(sample),
        }
        .into());
    }
    let crc = crc32fast::hash(&buf[start + FRAME_HEAD..]);
    buf[start..start + 4].copy_from_slice(&(len as u32).to_le_bytes());
    buf[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    Ok(())
}

/// A frame at `off`: Ok(Some((end, version, payload))) when its length and CRC check out.
pub(crate) fn frame_at(bytes: &[u8], off: usize) -> Option<(usize, u8, &[u8])> {
    let head = bytes.get(off..off + FRAME_HEAD)?;
    let len = u32::from_le_bytes(head[0..4].try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(head[4..8].try_into().ok()?);
    if len == 0 || len > MAX_RECORD {
        return None;
    }
    let body = bytes.get(off + FRAME_HEAD..off + FRAME_HEAD + len)?;
    if crc32fast::hash(body) != crc {
        return None;
    }
    Some((off + FRAME_HEAD + len, body[0], &body[1..]))
}

/// Decode a whole file; never panics on any input.
pub fn decode_file(path: &Path, bytes: &[u8]) -> Result<Loaded, StoreError> {
    decode_file_where(path, bytes, &mut |_| true)
}

/// [`decode_file`], keeping only the samples whose commit `keep` takes.
pub fn decode_file_where(
    path: &Path,
    bytes: &[u8],
    keep: &mut dyn FnMut(&[u8; 20]) -> bool,
) -> Result<Loaded, StoreError> {
    let file = path.to_path_buf();
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        if bytes.len() < HEADER_LEN && MAGIC.starts_with(&bytes[..bytes.len().min(8)]) {
            // A crash while the header was being written: nothing was stored yet.
            return Ok(Loaded {
                torn_tail: !bytes.is_empty(),
                warnings: if bytes.is_empty() {
                    vec![]
                } else {
                    vec![format!("{}: incomplete header dropped", path.display())]
                },
                ..Loaded::default()
            });
        }
        return Err(StoreError::NotAStore { file });
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version > FORMAT_VERSION {
        return Err(StoreError::NewerFormat {
            file,
            found: version,
        });
    }
    let mut out = Loaded {
        samples: Vec::with_capacity(bytes.len() / 96),
        ..Loaded::default()
    };
    decode_records(path, bytes, HEADER_LEN, 0, &mut out, keep);
    Ok(out)
}

/// Decode the records in `bytes[start..]`, where `bytes` are a file's from offset `base` on
/// (offsets in messages and in [`Loaded::valid_end`] are the file's),
/// keeping the samples whose commit `keep` takes. Corrupt bytes are skipped with a
/// warning naming their offsets; an incomplete last record, or a batch whose commit marker
/// never came, is a torn tail.
pub fn decode_records(
    path: &Path,
    bytes: &[u8],
    start: usize,
    base: usize,
    out: &mut Loaded,
    keep: &mut dyn FnMut(&[u8; 20]) -> bool,
) {
    let mut off = start;
    let mut valid_end = off;
    // The made-up window of the run of legacy records being read: (commit, window).
    let mut legacy: Option<([u8; 20], u64)> = None;
    // The open batch: its begin marker's offset and the samples kept before it.
    let mut batch: Option<(usize, usize)> = None;
    // A commit marker came while a batch was open, naming another batch: the open one is
    // not a crash's leftover at the end of the file but a batch a byte-for-byte rewrite
    // (`cache prune` before it re-framed batches) moved away from the offset its marker holds.
    let mut misframed = false;
    while off < bytes.len() {
        let at = off + base;
        match frame_at(bytes, off) {
            Some((end, ver, payload)) => {
                if ver == MARKER_VERSION {
                    if let Some(m) = Marker::parse(payload) {
                        match m {
                            Marker::Begin => {
                                batch = Some((at, out.samples.len()));
                                misframed = false;
                            }
                            Marker::Commit { begin } => match batch {
                                Some((b, _)) if b as u64 == begin => batch = None,
                                Some(_) => misframed = true,
                                None => {}
                            },
                        }
                        legacy = None;
                        off = end;
                        valid_end = end;
                        continue;
                    }
                }
                if ver < 3 {
                    if let Ok(mut s) = decode_record(ver, payload) {
                        if s.import.is_none() {
                            let w = match legacy {
                                Some((c, w)) if c == s.commit => w,
                                _ => legacy_window(payload),
                            };
                            legacy = Some((s.commit, w));
                            s.window = w;
                        } else {
                            legacy = None;
                        }
                        if keep(&s.commit) {
                            out.samples.push(s);
                        }
                        off = end;
                        valid_end = end;
                        continue;
                    }
                } else {
                    legacy = None;
                }
                if ver > RECORD_VERSION {
                    out.warnings.push(format!(
                        "{}: record at offset {at} has version {ver}, newer than this perfbisect reads ({RECORD_VERSION}); skipped",
                        path.display()
                    ));
                } else if record_commit(ver, payload).is_some_and(|c| !keep(&c)) {
                    // Not asked for: not decoded.
                } else {
                    // Decoding borrows from the record (see `borrowed_text`), so a bogus
                    // length inside a record with a valid checksum is checked against the
                    // record's bytes instead of allocating gigabytes (or aborting).
                    match decode_record(ver, payload) {
                        Ok(s) => out.samples.push(s),
                        Err(e) => out.warnings.push(format!(
                            "{}: record at offset {at} cannot be decoded ({e}); skipped",
                            path.display()
                        )),
                    }
                }
                off = end;
                valid_end = end;
            }
            None => {
                // Look for the next intact frame; if there is none, this is a torn tail.
                let next = (off + 1..bytes.len().saturating_sub(FRAME_HEAD - 1))
                    .find(|&o| frame_at(bytes, o).is_some());
                match next {
                    Some(n) => {
                        out.warnings.push(format!(
                            "{}: bytes {at}..{} are corrupt (checksum or length mismatch); skipped, later records kept",
                            path.display(),
                            n + base
                        ));
                        off = n;
                    }
                    None => {
                        out.warnings.push(format!(
                            "{}: incomplete record at offset {at} ({} bytes, from an interrupted write) dropped",
                            path.display(),
                            bytes.len() - off
                        ));
                        out.torn_tail = true;
                        break;
                    }
                }
            }
        }
    }
    if let Some((begin, kept)) = batch.filter(|_| misframed) {
        // Not a torn tail: nothing may cut it off, and the records count again once
        // `cache prune` frames the batch where it lies.
        out.samples.truncate(kept);
        out.warnings.push(format!(
            "{}: the batch of records from offset {begin} has a commit marker naming another offset (an older `perfbisect cache prune` moved it); its records are left out until `perfbisect cache prune` frames it again",
            path.display(),
        ));
    } else if let Some((begin, kept)) = batch {
        // A batch (an import, a merge) that a crash or a kill cut short, or one being written
        // now by another process: none of it counts.
        out.samples.truncate(kept);
        out.warnings.push(format!(
            "{}: an unfinished batch of records from offset {begin} (an import or merge that was interrupted, or is still running) left out",
            path.display()
        ));
        out.torn_tail = true;
        valid_end = begin - base;
    }
    out.valid_end = (valid_end + base) as u64;
}
