//! What makes an imported row the same as a stored sample, and the stored samples' keys of
//! one test held as 8-byte hashes, sorted: a store of ten million samples costs 80 MB to
//! check against, not ten million keys.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use crate::store::{Import, Sample, Store};

/// What makes a row the same as a stored sample: imported twice, it is stored once.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    /// A run of a measuring window (one perfbisect made, or the import of an export of one):
    /// the window is a random id per session, so window, moment, time and value name the run.
    Run {
        commit: [u8; 20],
        window: u64,
        moment: u32,
        time: u64,
        value: u64,
    },
    /// A cron row: everything it says.
    Row {
        commit: [u8; 20],
        value: u64,
        time: u64,
        import: Import,
    },
    /// An imported sample as an export lists it again: the round only as its number, no
    /// machine.
    Exported {
        commit: [u8; 20],
        value: u64,
        time: u64,
        round: u32,
    },
}

impl Key {
    /// The keys a stored sample answers to (none for a failed run).
    fn stored(s: &Sample) -> Vec<Key> {
        let Some(v) = s.value else {
            return Vec::new();
        };
        let (commit, value, time) = (s.commit, v.to_bits(), s.time);
        if s.window != 0 {
            return vec![Key::Run {
                commit,
                window: s.window,
                moment: s.moment,
                time,
                value,
            }];
        }
        let Some(import) = &s.import else {
            return Vec::new();
        };
        vec![
            Key::Row {
                commit,
                value,
                time,
                import: import.clone(),
            },
            Key::Exported {
                commit,
                value,
                time,
                round: s.round,
            },
        ]
    }

    /// The key an imported row's sample is looked up by.
    pub(crate) fn new_row(s: &Sample, exported: bool) -> Key {
        let value = s.value.map_or(0, f64::to_bits);
        if s.window != 0 {
            Key::Run {
                commit: s.commit,
                window: s.window,
                moment: s.moment,
                time: s.time,
                value,
            }
        } else if exported {
            Key::Exported {
                commit: s.commit,
                value,
                time: s.time,
                round: s.round,
            }
        } else {
            Key::Row {
                commit: s.commit,
                value,
                time: s.time,
                import: s.import.clone().unwrap_or_default(),
            }
        }
    }
}

impl Key {
    /// The key as 64 bits (the standard library's SipHash with its fixed keys: the same for
    /// the whole import; hashes are never stored). Two different
    /// keys share a hash with a chance of about one in 2^64 per pair; at ten million stored
    /// samples against a million new rows that is one import in two million that would take
    /// one new row for a stored one.
    fn hash64(&self) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }

    /// Whether this is the kind of key an export's runs are looked up by (`export`) or a cron
    /// row's.
    fn of_kind(&self, export: bool) -> bool {
        match self {
            Key::Row { .. } => !export,
            Key::Run { .. } | Key::Exported { .. } => export,
        }
    }
}

/// The keys of one test's stored samples, as hashes, sorted (a key stored twice is there
/// twice), with how many of each the import has matched so far.
pub(crate) struct StoredKeys {
    hashes: Vec<u64>,
    taken: HashMap<u64, u32>,
}

impl StoredKeys {
    /// The keys of `test`'s stored samples of the kind that rows of this file are looked up
    /// by (an export's runs, or a cron's rows), read record by record.
    pub fn load(store: &Store, test: &str, export: bool) -> anyhow::Result<StoredKeys> {
        let mut hashes = Vec::new();
        store.for_each(test, &mut |s| {
            for k in Key::stored(s) {
                if k.of_kind(export) {
                    hashes.push(k.hash64());
                }
            }
        })?;
        hashes.sort_unstable();
        Ok(StoredKeys {
            hashes,
            taken: HashMap::new(),
        })
    }

    /// Whether a stored sample answers to `key` that no earlier row took; takes it if so.
    pub fn take(&mut self, key: &Key) -> bool {
        let h = key.hash64();
        let lo = self.hashes.partition_point(|&x| x < h);
        let n = self.hashes[lo..].partition_point(|&x| x == h) as u32;
        if n == 0 {
            return false;
        }
        let taken = self.taken.entry(h).or_default();
        if *taken < n {
            *taken += 1;
            true
        } else {
            false
        }
    }
}
