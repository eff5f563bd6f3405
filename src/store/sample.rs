//! What the store holds: one run of one test on one commit ([`Sample`]), its provenance when
//! imported, the layout's constants, what a load found, and the statistics' view of runs
//! taken back to back (moments).

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// File header: magic then the format version (u32, little endian).
pub(crate) const MAGIC: &[u8; 8] = b"PBSTORE\0";
/// The file format this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// The record layout this build writes; newer records are skipped with a warning. Versions 1
/// (before fingerprints and imports) and 2 (before windows and moments) are still read: see
/// [`SampleV1`] and [`SampleV2`]. A version-3 record of a sample another tool measured ends
/// with a trailer holding its origin and spread ([`super::origin`]): readers before it read
/// past it, so it needed no new layout.
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
    /// [`crate::pipeline::fingerprint::Fingerprint::id`] of the machine and setup that measured it; 0 when
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
    /// The tool and series it was read from, when another tool measured it (stored in the
    /// record's trailer: see [`super::origin`]).
    #[serde(skip)]
    pub origin: Option<Arc<super::origin::Origin>>,
    /// The spread that tool reported around the number (never samples).
    #[serde(skip)]
    pub spread: Vec<super::origin::Spread>,
}

impl Sample {
    /// The commit as a gix id.
    pub fn commit_id(&self) -> gix::ObjectId {
        gix::ObjectId::from_bytes_or_panic(&self.commit)
    }

    /// [`machine_key`] of the run: the machine named by an import, else its fingerprint.
    pub fn machine_key(&self) -> u64 {
        machine_key(
            self.fingerprint,
            self.import.as_ref().map(|i| i.machine.as_deref()),
        )
    }

    /// What makes runs one measurement: its window and moment (runs of one commit taken back
    /// to back share it). An imported row (no window) is told apart by its round and time:
    /// rows of one commit that share both were taken together; a row with neither is a
    /// measurement of its own ([`INDEPENDENT`]), never one with the commit's other rows.
    pub fn moment_key(&self) -> (u64, u64) {
        let round = self.import.as_ref().and_then(|i| i.round.as_deref());
        moment_key(
            self.window,
            self.moment,
            round.map(str::as_bytes),
            self.time,
        )
    }
}

/// The machine a run was measured on, as a key of 32 bits (0: none named): an imported row's
/// machine by its name, a run measured here by its fingerprint (what it depends on besides
/// the commit: CPU, kernel, compiler, setup). Two machines' runs compare only through what
/// links them (see [`crate::stats::changepoint`]).
pub(crate) fn machine_key(fingerprint: u64, machine: Option<Option<&str>>) -> u64 {
    let k = match machine {
        Some(name) => name.map_or(0, |n| {
            use std::hash::BuildHasher;
            foldhash::fast::FixedState::with_seed(2).hash_one(n)
        }),
        None => fingerprint,
    };
    // Folded to 32 bits (an observation has room for no more), never 0 for a machine.
    let folded = (k ^ (k >> 32)) & 0xffff_ffff;
    if k != 0 && folded == 0 {
        1
    } else {
        folded
    }
}

/// The moment key of a run that shares its moment with no other run: an imported row with no
/// round and no timestamp (nothing says it was taken together with another row). Every
/// grouping by moment gives such a run a group of its own. No measured run has it (their
/// windows are never 0).
pub const INDEPENDENT: (u64, u64) = (0, 0);

/// [`Sample::moment_key`] of a record's fields (the round's name as bytes).
pub(crate) fn moment_key(window: u64, moment: u32, round: Option<&[u8]>, time: u64) -> (u64, u64) {
    if window == 0 {
        let round = round
            .map(|r| {
                // Compared within this process only: a fast hash will do.
                use std::hash::BuildHasher;
                foldhash::fast::FixedState::with_seed(1).hash_one(r).max(1)
            })
            .unwrap_or(0);
        (round, time)
    } else {
        (window, u64::from(moment))
    }
}

/// What statistics over commits read of a stored run: a whole [`Sample`], or only its
/// [`crate::store::Observation`] when nothing else of it is shown. (`Sync`: rows are read
/// on every core.)
pub trait Run: Sync {
    /// The metric; `None` for a failed run.
    fn value(&self) -> Option<f64>;
    /// [`Sample::moment_key`].
    fn moment_key(&self) -> (u64, u64);
    /// Taken in by `perfbisect import`, not measured here.
    fn imported(&self) -> bool;
    /// The window of time the run was taken in ([`Sample::window`]; 0: none, an imported row).
    fn window(&self) -> u64 {
        if self.imported() {
            0
        } else {
            self.moment_key().0
        }
    }
    /// The machine that measured it, as a key (0: this machine, or none named): runs of two
    /// machines are compared only through what links them.
    fn machine(&self) -> u64 {
        0
    }
}

impl Run for Sample {
    fn value(&self) -> Option<f64> {
        self.value
    }
    fn moment_key(&self) -> (u64, u64) {
        Sample::moment_key(self)
    }
    fn imported(&self) -> bool {
        self.import.is_some()
    }
    fn machine(&self) -> u64 {
        self.machine_key()
    }
}

/// One number per measurement: the median of each group of runs taken back to back (a
/// moment; see [`Sample::moment_key`]), in the order the groups first appear. Statistics that
/// treat their inputs as independent (change points, p-values over commits) take these, not
/// every run: five runs one after the other are one look at the machine, not five.
pub fn moment_values<'s, R: Run + 's>(records: impl IntoIterator<Item = &'s R>) -> Vec<f64> {
    moments(records).into_iter().map(|(v, _, _)| v).collect()
}

/// [`moment_values`], each with the window of time it was taken in (a measured run's window,
/// an imported row's round (hashed), 0 where neither is known) and its machine
/// ([`Run::machine`]). Runs of several commits in one window were taken side by side:
/// change-point detection estimates the window's effect.
pub fn moments<'s, R: Run + 's>(records: impl IntoIterator<Item = &'s R>) -> Vec<(f64, u64, u64)> {
    // Most moments hold one run (interleaved rounds, cron rows): each found by a map, not a
    // scan of the groups so far (a commit of thousands of cron rows would cost millions), and
    // no list per group unless a group has several runs.
    let records = records.into_iter();
    let hint = records.size_hint().0;
    let mut at: std::collections::HashMap<(u64, u64), usize, foldhash::fast::RandomState> =
        std::collections::HashMap::with_capacity_and_hasher(hint, Default::default());
    let mut counts: Vec<usize> = Vec::with_capacity(hint);
    let mut windows: Vec<(u64, u64)> = Vec::with_capacity(hint);
    let mut vals: Vec<(usize, f64)> = Vec::with_capacity(hint);
    for s in records {
        let Some(v) = s.value().filter(|v| v.is_finite()) else {
            continue;
        };
        let next = counts.len();
        let key = s.moment_key();
        let g = if key == INDEPENDENT {
            next
        } else {
            *at.entry(key).or_insert(next)
        };
        if g == next {
            counts.push(0);
            windows.push((key.0, s.machine()));
        }
        counts[g] += 1;
        vals.push((g, v));
    }
    if vals.len() == counts.len() {
        // One run per moment: the groups are the values, in the order they came.
        return vals
            .into_iter()
            .map(|(g, v)| (v, windows[g].0, windows[g].1))
            .collect();
    }
    let mut start = Vec::with_capacity(counts.len());
    let mut sum = 0;
    for &c in &counts {
        start.push(sum);
        sum += c;
    }
    let mut flat = vec![0.0; vals.len()];
    let mut fill = start.clone();
    for (g, v) in vals {
        flat[fill[g]] = v;
        fill[g] += 1;
    }
    start
        .iter()
        .zip(&counts)
        .zip(&windows)
        .filter_map(|((&a, &n), &w)| match &flat[a..a + n] {
            [one] => Some((*one, w.0, w.1)),
            group => crate::stats::median(group).map(|m| (m, w.0, w.1)),
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

/// [`borrowed_text`], interned ([`intern`]).
pub(crate) fn interned_text<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<std::sync::Arc<str>>, D::Error> {
    let s: Option<&'de str> = Deserialize::deserialize(d)?;
    Ok(s.map(intern))
}

/// One shared copy of each text read (a round's or a machine's name): a store of millions of
/// imported rows names a few thousand rounds and a machine or two, so the samples hold
/// pointers, not millions of copies. Bounded: past a few thousand texts it starts over.
pub fn intern(text: &str) -> std::sync::Arc<str> {
    use std::cell::RefCell;
    use std::collections::HashSet;
    use std::sync::Arc;
    thread_local! {
        static TEXTS: RefCell<HashSet<Arc<str>, foldhash::fast::FixedState>> =
            RefCell::new(HashSet::default());
    }
    TEXTS.with(|t| {
        let mut t = t.borrow_mut();
        if let Some(a) = t.get(text) {
            return a.clone();
        }
        if t.len() >= 8192 {
            t.clear();
        }
        let a: Arc<str> = Arc::from(text);
        t.insert(a.clone());
        a
    })
}

/// Reads text by borrowing it from the record being decoded: its length is then checked
/// against the bytes that are there before anything is allocated (a corrupt length cannot ask
/// for gigabytes), and without bincode's per-field limit accounting, which would slow the load
/// of a million samples by half.
pub(crate) fn borrowed_text<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<String>, D::Error> {
    let s: Option<&'de str> = Deserialize::deserialize(d)?;
    Ok(s.map(str::to_owned))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample(
        window: u64,
        moment: u32,
        round: Option<u8>,
        time: u64,
        value: Option<f64>,
    ) -> Sample {
        Sample {
            commit: [1; 20],
            test_hash: 1,
            recipe_hash: 2,
            time,
            round: 0,
            wall: 0.0,
            user: 0.0,
            sys: 0.0,
            max_rss: 0,
            value,
            error: None,
            fingerprint: 0,
            import: round.map(|r| Import {
                round: Some(format!("R{r}").into()),
                ..Import::default()
            }),
            window,
            moment,
        }
    }

    /// The definition: the median of each moment's runs, moments in the order they first
    /// appear, by a plain scan.
    fn by_scan(records: &[Sample]) -> Vec<f64> {
        let mut groups: Vec<((u64, u64), Vec<f64>)> = Vec::new();
        for s in records {
            let Some(v) = s.value().filter(|v| v.is_finite()) else {
                continue;
            };
            let k = s.moment_key();
            match groups.iter_mut().find(|(g, _)| *g == k && k != INDEPENDENT) {
                Some((_, vs)) => vs.push(v),
                None => groups.push((k, vec![v])),
            }
        }
        groups
            .into_iter()
            .filter_map(|(_, vs)| crate::stats::median(&vs))
            .collect()
    }

    #[test]
    fn imported_rows_without_round_or_time_are_each_a_measurement() {
        let rows = [
            sample(0, 0, None, 0, Some(1.0)),
            sample(0, 0, None, 0, Some(2.0)),
            sample(0, 0, None, 0, Some(6.0)),
        ];
        assert_eq!(moment_values(&rows), [1.0, 2.0, 6.0]);
        // A shared round (or timestamp) says they were taken together.
        let rows = [
            sample(0, 0, Some(1), 0, Some(1.0)),
            sample(0, 0, Some(1), 0, Some(2.0)),
            sample(0, 0, None, 5, Some(6.0)),
            sample(0, 0, None, 5, Some(8.0)),
        ];
        assert_eq!(moment_values(&rows), [1.5, 7.0]);
    }

    proptest! {
        #[test]
        fn moment_values_are_each_moments_median_in_order(
            rows in proptest::collection::vec(
                (0u64..3, 0u32..3, proptest::option::of(0u8..3), 0u64..4, proptest::option::of(-5.0f64..5.0)),
                0..60,
            )
        ) {
            let records: Vec<Sample> = rows
                .iter()
                .map(|&(w, m, r, t, v)| sample(if r.is_some() { 0 } else { w }, m, r, t, v))
                .collect();
            prop_assert_eq!(moment_values(&records), by_scan(&records));
        }
    }
}
