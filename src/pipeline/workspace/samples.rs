//! Loading a test's stored samples: this machine's (or every machine's, or only the others'),
//! of all commits or of a few, with the builds that are byte-identical to theirs.

use std::collections::HashMap;

use gix::ObjectId;

use super::context::Workspace;
use crate::build;
use crate::config::Test;
use crate::pipeline::samples::Samples;
use crate::store::commit_key;

impl Workspace {
    /// The byte-identical builds among the cached ones of the current recipe (from their
    /// manifests), for [`Samples::twins`].
    pub fn find_twins<R>(&self, samples: &mut Samples<R>) {
        let recipe = self.config.build.recipe_hash();
        let mut groups: HashMap<String, Vec<[u8; 20]>> = HashMap::new();
        for (commit, digest) in build::stale::trusted_digests(&self.cache, recipe) {
            groups.entry(digest).or_default().push(commit);
        }
        samples.twins.clear();
        for g in groups.values().filter(|g| g.len() > 1) {
            samples.add_twins(g);
        }
    }

    /// After `id` was built: the commits whose builds are byte-identical to it, now known.
    pub fn learn_twins(&self, samples: &mut Samples, id: &ObjectId) {
        let recipe = self.config.build.recipe_hash();
        let Some(m) =
            build::cas::manifest_or_hash(&self.cache, id, recipe, &self.config.build.artifacts)
        else {
            return;
        };
        let key = commit_key(id);
        let mut group = vec![key];
        for (commit, digest) in build::stale::trusted_digests(&self.cache, recipe) {
            if digest == m.digest && commit != key {
                group.push(commit);
            }
        }
        if group.len() > 1 {
            samples.add_twins(&group);
        }
    }

    /// Load the stored samples of `test`, keeping only those of the current definitions.
    pub fn samples(&self, test: &Test) -> anyhow::Result<Samples> {
        self.samples_for(test, None)
    }

    /// [`Workspace::samples`] of the commits `scope` names (and of the commits whose builds
    /// are byte-identical to theirs), read through the store's index: a command about a few
    /// commits reads their records, not all of history. `None`: every commit.
    pub fn samples_for(&self, test: &Test, scope: Option<&[ObjectId]>) -> anyhow::Result<Samples> {
        self.samples_as(test, scope)
    }

    /// [`Workspace::samples_for`], keeping `R` of each run: [`crate::store::Observation`]s
    /// when only statistics over the commits are wanted (a fifth of the memory, no text
    /// copied).
    pub fn samples_as<R: crate::store::Keep>(
        &self,
        test: &Test,
        scope: Option<&[ObjectId]>,
    ) -> anyhow::Result<Samples<R>> {
        let pick = if self.any_fingerprint {
            Pick::Any
        } else {
            Pick::Here
        };
        self.samples_picked(test, scope, pick)
    }

    /// The samples of `test` (of the commits `scope` names, or all) that [`Workspace::samples`]
    /// sets aside as measured under other fingerprints (another machine, or this one before
    /// its toolchain or kernel changed): what [`crate::pipeline::eras`] shows as earlier
    /// eras. Each keeps its fingerprint.
    pub fn other_fingerprints(
        &self,
        test: &Test,
        scope: Option<&[ObjectId]>,
    ) -> anyhow::Result<Samples> {
        self.samples_picked(test, scope, Pick::Others)
    }

    fn samples_picked<R: crate::store::Keep>(
        &self,
        test: &Test,
        scope: Option<&[ObjectId]>,
        pick: Pick,
    ) -> anyhow::Result<Samples<R>> {
        let store = self.cache.store();
        let th = test.definition_hash();
        let rh = self.config.build.recipe_hash();
        let here_fp = self.test_fingerprint(test);
        let here = here_fp.id();
        // A test whose numbers do not depend on the machine uses the samples of every machine
        // that ran it the same way (the runners of a CI matrix).
        let anywhere = crate::pipeline::shards::dependence(test)
            .independent()
            .then(|| crate::pipeline::fingerprint::setup_part(&here_fp.text()));
        let set_aside = build::stale::set_aside_until(&self.cache, rh);
        let root = &self.cache.root;
        // Each sample is judged as it is read: only those used are kept, in their commit's
        // list (room for all of them reserved at once, from the index's counts), never all of
        // a large store at once besides.
        let counts = match scope {
            None => store.record_counts(&test.name),
            Some(_) => HashMap::new(),
        };
        // What a reader of some of the commits gathers: their samples, what was left out, and
        // which other machines' setups are this one's (asked once per fingerprint).
        type Part<R> = (Samples<R>, HashMap<u64, bool>);
        let admit = |(out, same_setup): &mut Part<R>, s: crate::store::Head, r: R| {
            // Imported rows were measured by someone else's build and test command: a change
            // of this config does not make them stale.
            if !s.imported && (s.test_hash != th || s.recipe_hash != rh) {
                out.stale += 1;
                return;
            }
            // Measured on an incremental build that is (or may be) stale.
            if !s.imported
                && set_aside
                    .get(&s.commit)
                    .is_some_and(|&(from, to)| (from..=to).contains(&s.time))
            {
                out.set_aside += 1;
                return;
            }
            // 0: measured before fingerprints were recorded, on this machine as far as
            // anyone knows.
            let foreign = !s.imported
                && s.fingerprint != 0
                && s.fingerprint != here
                && !anywhere.as_ref().is_some_and(|setup| {
                    *same_setup.entry(s.fingerprint).or_insert_with(|| {
                        crate::pipeline::fingerprint::setup_part_of(root, s.fingerprint)
                            .is_some_and(|other| other == *setup)
                    })
                });
            if foreign {
                *out.other_fingerprints.entry(s.fingerprint).or_default() += 1;
                if pick == Pick::Here {
                    return;
                }
            } else if pick == Pick::Others {
                return;
            }
            out.by_commit
                .entry(s.commit)
                .or_insert_with(|| {
                    Vec::with_capacity(counts.get(&s.commit).map_or(0, |&n| n as usize))
                })
                .push(r);
        };
        let (mut out, loaded) = match scope {
            None => {
                // Every core reads, judges and files its share of the commits.
                let (parts, loaded) = store.visit_parts::<R, Part<R>>(
                    &test.name,
                    rayon::current_num_threads(),
                    &Default::default,
                    &admit,
                )?;
                let mut out = Samples::default();
                for (p, _) in parts {
                    out.by_commit.extend(p.by_commit);
                    out.stale += p.stale;
                    out.set_aside += p.set_aside;
                    for (fp, n) in p.other_fingerprints {
                        *out.other_fingerprints.entry(fp).or_default() += n;
                    }
                }
                (out, loaded)
            }
            Some(ids) => {
                let mut wanted: std::collections::HashSet<[u8; 20]> =
                    ids.iter().map(commit_key).collect();
                if test.shares_identical_builds() {
                    let mut groups: HashMap<String, Vec<[u8; 20]>> = HashMap::new();
                    for (commit, digest) in build::stale::trusted_digests(&self.cache, rh) {
                        groups.entry(digest).or_default().push(commit);
                    }
                    for g in groups.values() {
                        if g.iter().any(|c| wanted.contains(c)) {
                            wanted.extend(g.iter().copied());
                        }
                    }
                }
                let mut l = store.load_commits(&test.name, &wanted)?;
                let mut part: Part<R> = Default::default();
                for s in std::mem::take(&mut l.samples) {
                    let (h, r) = R::from_sample(s);
                    admit(&mut part, h, r);
                }
                (part.0, l)
            }
        };
        if pick == Pick::Others {
            // The same records were read (and their problems said) by the load of this
            // machine's samples.
        } else if self.verbosity.verbose > 0 {
            for w in &loaded.warnings {
                self.warn(w);
            }
        } else {
            // Skipped records are news even without -v (once per load); a torn tail is not:
            // it is a crash's leftover or another process's write in progress.
            let skipped = loaded.warnings.len() - usize::from(loaded.torn_tail);
            if let Some(first) = loaded.warnings.first().filter(|_| skipped > 0) {
                let more = if skipped > 1 {
                    format!(" (and {} more; -v lists them)", skipped - 1)
                } else {
                    String::new()
                };
                self.warn(&format!("{first}{more}"));
            }
        }
        if test.shares_identical_builds() {
            self.find_twins(&mut out);
        }
        Ok(out)
    }
}

/// Which fingerprints' samples a load keeps: this machine's (and those whose numbers compare
/// with them), every one (`--any-fingerprint`), or only the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick {
    Here,
    Any,
    Others,
}
