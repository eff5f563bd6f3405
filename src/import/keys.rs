//! What makes an imported row the same as a stored sample, and the stored samples' keys of
//! one test held as 8-byte hashes, sorted: a store of ten million samples costs 80 MB to
//! check against, not ten million keys.
//!
//! A sample answers to keys of three kinds:
//! - a run of a measuring window (one perfbisect made, or the import of an export of one):
//!   the window is a random id per session, so window, moment, time and value name the run;
//! - a cron row: commit, value, time and the round and machine it names;
//! - an imported sample as an export lists it again: the round only as its number, no machine.

use std::hash::{Hash, Hasher};

use crate::store::{Sample, Store};

/// The kinds of key (see the module's text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Run,
    Row,
    Exported,
}

/// The key of `kind` of sample `s`, as 64 bits (foldhash's quality hash with fixed seeds: the
/// same for the whole import; hashes are never stored). Two different keys share a hash with
/// a chance of about one in 2^64 per pair: at ten million stored samples against a million
/// new rows, one import in two million would take one new row for a stored one.
fn hash(kind: Kind, s: &Sample) -> u64 {
    use std::hash::BuildHasher;
    let mut h = foldhash::quality::FixedState::with_seed(0x7065_7266_6269_7365).build_hasher();
    kind.hash(&mut h);
    s.commit.hash(&mut h);
    s.value.map_or(0, f64::to_bits).hash(&mut h);
    s.time.hash(&mut h);
    match kind {
        Kind::Run => {
            s.window.hash(&mut h);
            s.moment.hash(&mut h);
        }
        Kind::Row => {
            let import = s.import.as_ref();
            import.and_then(|i| i.round.as_deref()).hash(&mut h);
            import.and_then(|i| i.machine.as_deref()).hash(&mut h);
        }
        Kind::Exported => s.round.hash(&mut h),
    }
    h.finish()
}

/// The key an imported row's sample is looked up by (`exported`: a run of an export).
pub(crate) fn new_row(s: &Sample, exported: bool) -> u64 {
    let kind = if s.window != 0 {
        Kind::Run
    } else if exported {
        Kind::Exported
    } else {
        Kind::Row
    };
    hash(kind, s)
}

/// The key a stored sample answers to among those rows of a cron file (`export` false) or of
/// an export are looked up by; none for a failed run.
fn stored(s: &Sample, export: bool) -> Option<u64> {
    s.value?;
    if s.window != 0 {
        return export.then(|| hash(Kind::Run, s));
    }
    s.import.as_ref()?;
    Some(hash(if export { Kind::Exported } else { Kind::Row }, s))
}

/// The keys of one test's stored samples, as hashes in an open-addressing table (a key
/// stored twice is there twice), with a bit per slot for a key an import's row has matched:
/// about 13 bytes per stored sample, and one or two cache misses per row looked up.
pub(crate) struct StoredKeys {
    slots: Vec<u64>,
    taken: Vec<u64>,
    len: usize,
}

impl StoredKeys {
    /// The keys of `test`'s stored samples of the kind that rows of this file are looked up
    /// by (an export's runs, or a cron's rows), read record by record.
    pub fn load(store: &Store, test: &str, export: bool) -> anyhow::Result<StoredKeys> {
        let expected = match store.index_state(test)? {
            crate::store::IndexState::Current { records, .. } => records as usize,
            _ => 0,
        };
        // Decoded and hashed on every core; only the table's inserts are one after another.
        let (parts, _) = store.visit_parts::<Sample, Vec<u64>>(
            test,
            rayon::current_num_threads(),
            &Vec::new,
            &|hashes, _, s| hashes.extend(stored(&s, export)),
        )?;
        let mut keys = StoredKeys::with_capacity(expected);
        for h in parts.into_iter().flatten() {
            keys.insert(h);
        }
        Ok(keys)
    }

    fn with_capacity(n: usize) -> StoredKeys {
        let size = (n + n / 2 + 1).next_power_of_two().max(16);
        StoredKeys {
            slots: vec![0; size],
            taken: vec![0; size.div_ceil(64)],
            len: 0,
        }
    }

    /// 0 marks an empty slot.
    fn nonzero(h: u64) -> u64 {
        h.max(1)
    }

    fn insert(&mut self, h: u64) {
        if (self.len + 1) * 10 > self.slots.len() * 7 {
            let old = std::mem::take(&mut self.slots);
            *self = StoredKeys::with_capacity(old.len());
            for v in old.into_iter().filter(|&v| v != 0) {
                self.insert(v);
            }
        }
        let mask = self.slots.len() - 1;
        let mut i = Self::nonzero(h) as usize & mask;
        while self.slots[i] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = Self::nonzero(h);
        self.len += 1;
    }

    /// Whether a stored sample answers to the key `h` that no earlier row took; takes it if so.
    pub fn take(&mut self, h: u64) -> bool {
        let h = Self::nonzero(h);
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        loop {
            match self.slots[i] {
                0 => return false,
                v if v == h && self.taken[i / 64] & (1 << (i % 64)) == 0 => {
                    self.taken[i / 64] |= 1 << (i % 64);
                    return true;
                }
                _ => i = (i + 1) & mask,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// A key stored n times is taken n times, then no more; keys never stored are not
        /// taken, however full the table grew.
        #[test]
        fn stored_keys_are_taken_as_often_as_they_are_stored(
            stored in proptest::collection::vec(0u64..64, 0..400),
            asked in proptest::collection::vec(0u64..80, 0..600),
        ) {
            let mut keys = StoredKeys::with_capacity(0);
            for &k in &stored {
                keys.insert(k);
            }
            let mut left: HashMap<u64, usize> = HashMap::new();
            for &k in &stored {
                *left.entry(k.max(1)).or_default() += 1;
            }
            for &k in &asked {
                let n = left.entry(k.max(1)).or_default();
                let expect = *n > 0;
                if expect {
                    *n -= 1;
                }
                prop_assert_eq!(keys.take(k), expect, "key {}", k);
            }
        }
    }
}
