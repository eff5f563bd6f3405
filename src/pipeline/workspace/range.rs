//! The commits a command is about: a range's, a chain with its old end, or every commit with
//! stored results in the order ranges use.

use gix::ObjectId;

use super::context::Workspace;
use crate::git::CommitInfo;
use crate::pipeline::samples::Samples;
use crate::store::commit_key;

impl Workspace {
    /// The commits of `range`, oldest first.
    pub fn range_commits(&self, range: &str) -> anyhow::Result<Vec<CommitInfo>> {
        Ok(self.repo.range(range)?.commits)
    }

    /// The old end of `range` (when it has one: `A..B` does, a root's history does not) and
    /// then its commits: the chain `find` and `report` search, whose old end's runs are the
    /// level before the range's first commit. The flag says whether the old end is first.
    pub fn chain_commits(&self, range: &str) -> anyhow::Result<(Vec<CommitInfo>, bool)> {
        let r = self.repo.range(range)?;
        Ok(match r.base {
            Some(base) => {
                let mut all = Vec::with_capacity(r.commits.len() + 1);
                all.push(base);
                all.extend(r.commits);
                (all, true)
            }
            None => (r.commits, false),
        })
    }

    /// How many commits lie on `new`'s first-parent chain between `old` and `new` (neither
    /// counted): the commits a step between two measured commits may also lie on. `None` when
    /// `old` is not on that chain.
    pub fn commits_between(&self, old: ObjectId, new: ObjectId) -> Option<usize> {
        let ids = self.repo.walk(new, Some(old)).ok()?;
        let first = ids.first()?;
        let parent = self.repo.first_parent(*first).ok().flatten();
        (parent == Some(old)).then(|| ids.len() - 1)
    }

    /// The commits of `range`, or without one every commit with samples that the repository
    /// holds, oldest first: those on HEAD's first-parent chain in its order, and those off it
    /// (not reachable from HEAD, as during a `git bisect`, or on other branches) merged in by
    /// commit time (then author time and id). Stored results of commits the repository does
    /// not have (rebased away, another clone) are left out with a warning.
    pub fn commits<R>(
        &self,
        range: Option<&str>,
        samples: &Samples<R>,
    ) -> anyhow::Result<Vec<CommitInfo>> {
        if let Some(r) = range {
            return self.range_commits(r);
        }
        // Commits with samples of their own, and those whose identical builds have some.
        let mut with_results: std::collections::HashSet<[u8; 20]> =
            samples.by_commit.keys().copied().collect();
        for (k, others) in &samples.twins {
            if others.iter().any(|o| samples.by_commit.contains_key(o)) {
                with_results.insert(*k);
            }
        }
        if with_results.is_empty() {
            return Ok(Vec::new());
        }
        let gix = self.repo.gix();
        let commit_time = |id: ObjectId| -> i64 {
            gix.find_commit(id)
                .ok()
                .and_then(|c| c.time().ok())
                .map_or(0, |t| t.seconds)
        };
        // HEAD's chain first: its order is the one ranges use, whatever the clocks say.
        let mut chain = Vec::new();
        let mut on_chain = std::collections::HashSet::new();
        if let Ok(head) = self.repo.head() {
            for id in self.repo.walk(head, None)? {
                let key = commit_key(&id);
                if with_results.contains(&key) {
                    on_chain.insert(key);
                    chain.push((commit_time(id), self.repo.info(id)?));
                }
            }
        }
        let mut rest = Vec::new();
        let mut unknown = 0usize;
        for key in &with_results {
            if on_chain.contains(key) {
                continue;
            }
            let id = ObjectId::from_bytes_or_panic(key);
            if gix.find_commit(id).is_err() {
                unknown += 1;
                continue;
            }
            rest.push((commit_time(id), self.repo.info(id)?));
        }
        rest.sort_by_key(|(t, c)| (*t, c.time, c.id));
        if unknown > 0 {
            self.warn(&format!(
                "{unknown} commit{} with stored results {} not in this repository (rebased away, or from another clone); not listed",
                if unknown == 1 { "" } else { "s" },
                if unknown == 1 { "is" } else { "are" },
            ));
        }
        // Merge the two by commit time; on a tie the chain's commit comes first.
        let mut out = Vec::with_capacity(chain.len() + rest.len());
        let mut rest = rest.into_iter().peekable();
        for (t, c) in chain {
            while let Some((_, r)) = rest.next_if(|(rt, _)| *rt < t) {
                out.push(r);
            }
            out.push(c);
        }
        out.extend(rest.map(|(_, r)| r));
        Ok(out)
    }
}
