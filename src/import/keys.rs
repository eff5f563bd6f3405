//! What makes an imported row the same as a stored sample, and the stored samples' keys of
//! one test held as 8-byte hashes, sorted: a store of ten million samples costs 80 MB to
//! check against, not ten million keys.
//!
//! A sample answers to keys of three kinds:
//! - a run of a measuring window (one perfbisect made, or the import of an export of one):
//!   the window is a random id per session, so window, moment, time and value name the run;
//! - a cron row: commit, value, time and the round and machine it names;
//! - an imported sample as an export lists it again: the round only as its number, no machine.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use crate::store::{Sample, Store};

/// The kinds of key (see the module's text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Run,
    Row,
    Exported,
}

/// The key of `kind` of sample `s`, as 64 bits (the standard library's SipHash with its fixed
/// keys: the same for the whole import; hashes are never stored). Two different keys share a
/// hash with a chance of about one in 2^64 per pair: at ten million stored samples against a
/// million new rows, one import in two million would take one new row for a stored one.
fn hash(kind: Kind, s: &Sample) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
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

/// The keys a stored sample answers to among those rows of a cron file (`export` false) or of
/// an export are looked up by; none for a failed run.
fn stored(s: &Sample, export: bool, out: &mut Vec<u64>) {
    if s.value.is_none() {
        return;
    }
    if s.window != 0 {
        if export {
            out.push(hash(Kind::Run, s));
        }
        return;
    }
    if s.import.is_none() {
        return;
    }
    out.push(hash(if export { Kind::Exported } else { Kind::Row }, s));
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
        store.for_each(test, &mut |s| stored(s, export, &mut hashes))?;
        hashes.sort_unstable();
        Ok(StoredKeys {
            hashes,
            taken: HashMap::new(),
        })
    }

    /// Whether a stored sample answers to the key `h` that no earlier row took; takes it if so.
    pub fn take(&mut self, h: u64) -> bool {
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
