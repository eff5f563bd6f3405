//! The samples of one test as every command sees them: grouped by commit, with what was set
//! aside (stale definitions, stale builds, other machines) and the byte-identical builds
//! whose samples a commit shares.

use std::collections::{BTreeMap, HashMap};

use gix::ObjectId;

use crate::store::{commit_key, Sample};

/// Samples of one test, grouped by commit: those of the current test and build definitions
/// and of this machine's fingerprint (or every fingerprint with `--any-fingerprint`), plus
/// imported ones.
///
/// `R` is what is kept of each run: the whole [`Sample`], or an
/// [`crate::store::Observation`] for statistics over a long history.
#[derive(Debug)]
pub struct Samples<R = Sample> {
    /// (foldhash: the keys are commit ids, and millions of samples are filed by them.)
    pub by_commit: HashMap<[u8; 20], Vec<R>, foldhash::fast::RandomState>,
    /// Samples ignored because the test or build definition changed since.
    pub stale: usize,
    /// Samples set aside because they were measured on an incremental build that was found
    /// stale, or may be (see [`crate::build::stale`]).
    pub set_aside: usize,
    /// Samples set aside because another machine or setup measured them, by fingerprint id.
    pub other_fingerprints: BTreeMap<u64, usize>,
    /// Commits whose builds are byte-identical (same artifact digest), each with the others:
    /// they measure the same, so they share their samples.
    pub twins: HashMap<[u8; 20], Vec<[u8; 20]>>,
}

impl<R> Default for Samples<R> {
    fn default() -> Self {
        Samples {
            by_commit: HashMap::default(),
            stale: 0,
            set_aside: 0,
            other_fingerprints: BTreeMap::new(),
            twins: HashMap::new(),
        }
    }
}

impl<R> Samples<R> {
    /// The commit's own records (ok and failed), without those of identical builds.
    pub fn own(&self, id: &ObjectId) -> &[R] {
        self.by_commit
            .get(&commit_key(id))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// All records (ok and failed) of a commit: its own, then those of commits whose build is
    /// byte-identical to its own.
    pub fn records(&self, id: &ObjectId) -> Vec<&R> {
        let key = commit_key(id);
        let mut out: Vec<&R> = self.own(id).iter().collect();
        for t in self.twins.get(&key).into_iter().flatten() {
            out.extend(self.by_commit.get(t).into_iter().flatten());
        }
        out
    }

    /// The identical builds whose samples a commit uses (those with samples), oldest id first.
    pub fn shared_from(&self, id: &ObjectId) -> Vec<ObjectId> {
        let mut out: Vec<ObjectId> = self
            .twins
            .get(&commit_key(id))
            .into_iter()
            .flatten()
            .filter(|t| self.by_commit.get(*t).is_some_and(|v| !v.is_empty()))
            .map(|t| ObjectId::from_bytes_or_panic(t))
            .collect();
        out.sort();
        out
    }

    /// Metric values of the successful runs of a commit (and of its identical builds).
    pub fn values(&self, id: &ObjectId) -> Vec<f64>
    where
        R: crate::store::Run,
    {
        self.records(id).iter().filter_map(|s| s.value()).collect()
    }

    /// Learn that `a` and `b` built byte-identical artifacts.
    pub fn add_twins(&mut self, group: &[[u8; 20]]) {
        for &a in group {
            let others: Vec<[u8; 20]> = group.iter().copied().filter(|&b| b != a).collect();
            let e = self.twins.entry(a).or_default();
            for b in others {
                if !e.contains(&b) {
                    e.push(b);
                }
            }
        }
    }
}

impl Samples {
    /// Add a sample measured now, so later commits of the same invocation see it.
    pub fn push(&mut self, s: Sample) {
        self.by_commit.entry(s.commit).or_default().push(s);
    }
}
