//! The check of the builds a verdict stands on: each cached incremental build compared with a
//! pristine rebuild of the same commit (see [`crate::build::stale`]), with a line per rebuild,
//! a heartbeat while it runs, and what the rebuilds cost for the summaries of `find`, `report`
//! and `run`.

use std::cell::Cell;
use std::time::Instant;

use gix::ObjectId;

use crate::base::paths::indent;
use crate::build::{self, Check};
use crate::git;
use crate::pipeline::workspace::Workspace;

/// What a check of builds found and cost.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Checked {
    /// An incremental build differed from its pristine build: the caller measures again.
    pub stale: bool,
    /// Pristine rebuilds made (commits whose build was pristine already, or not cached, need
    /// none); they are builds this invocation performed.
    pub builds: usize,
    /// Wall time of the whole check, seconds.
    pub seconds: f64,
}

impl Workspace {
    /// Compare the cached incremental builds of `ids` (the evidence for a step) with pristine
    /// builds of the same commits (see [`build::stale`]). When one was stale, every build of
    /// this project is pristine from now on and every cached incremental build is dropped, its
    /// samples set aside: `stale` is true, and the caller searches again.
    pub fn check_builds(&self, ids: &[ObjectId]) -> anyhow::Result<Checked> {
        self.check_builds_jobs(ids, 1)
    }

    /// [`Workspace::check_builds`], up to `jobs` rebuilds at once: those of builds made in
    /// different worktree slots, each in its own build's slot.
    pub fn check_builds_jobs(&self, ids: &[ObjectId], jobs: usize) -> anyhow::Result<Checked> {
        let started = Instant::now();
        let build = &self.config.build;
        let mut stale = Vec::new();
        let mut same = Vec::new();
        let mut builds = 0;
        let bar = self.progress.bar(ids.len() as u64, "check");
        let beat = self
            .progress
            .heartbeat("checking builds against pristine ones");
        let mut early = self.rebuild_at_once(ids, jobs);
        for id in ids {
            let short = git::short(id);
            if let Some((check, took)) = early.remove(id) {
                let check = check?;
                bar.inc(1);
                if let Some(t) = took {
                    builds += 1;
                    self.note(&format!(
                        "perfbisect: pristine build of {short} done in {} (beside the others)",
                        build::fmt_secs(t.as_secs_f64())
                    ));
                }
                match check {
                    Check::Same => same.push(short),
                    Check::Stale { .. } => stale.push(short),
                    Check::Unconfirmed(why) => self.warn(&format!(
                        "a pristine build of {short} (to check its incremental build) failed; the \
                         incremental build stands unconfirmed:\n{}",
                        indent(why.trim_end())
                    )),
                    _ => {}
                }
                continue;
            }
            let began: Cell<Option<Instant>> = Cell::new(None);
            // A pristine rebuild takes as long as a first build (minutes on a large project):
            // said when it starts, so the wait has a reason.
            let rebuilding = || {
                began.set(Some(Instant::now()));
                bar.set_message(format!("rebuilding {short} pristine"));
                beat.set(format!("rebuilding {short} in a clean worktree"));
                self.note(&format!(
                    "perfbisect: rebuilding {short} in a clean worktree, to check its incremental \
                     build (a pristine build)"
                ));
            };
            let check =
                build::check_pristine(self.repo.git_dir(), &self.cache, build, *id, &rebuilding)?;
            bar.inc(1);
            if let Some(t) = began.get() {
                builds += 1;
                let result = match &check {
                    Check::Same => "the same bytes as its incremental build",
                    Check::Stale { .. } => "other bytes than its incremental build",
                    _ => "failed",
                };
                self.note(&format!(
                    "perfbisect: pristine build of {short} done in {}: {result}",
                    build::fmt_secs(t.elapsed().as_secs_f64())
                ));
            }
            match check {
                Check::Same => same.push(short),
                Check::Stale { .. } => stale.push(short),
                Check::Unconfirmed(why) => self.warn(&format!(
                    "a pristine build of {short} (to check its incremental build) failed; the \
                     incremental build stands unconfirmed:\n{}",
                    indent(why.trim_end())
                )),
                _ => {}
            }
        }
        bar.finish_and_clear();
        drop(beat);
        let done = |stale: bool| Checked {
            stale,
            builds,
            seconds: started.elapsed().as_secs_f64(),
        };
        if !same.is_empty() && self.verbosity.verbose > 0 {
            self.note(&format!(
                "the incremental builds of {} are byte-identical to pristine builds",
                same.join(" and ")
            ));
        }
        if stale.is_empty() {
            return Ok(done(false));
        }
        let list = match stale.as_slice() {
            [one] => one.clone(),
            [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
            [] => String::new(),
        };
        let one = stale.len() == 1;
        let why = if one {
            format!(
                "the incremental build of {list} differs from a pristine build of the same commit"
            )
        } else {
            format!(
                "the incremental builds of {list} differ from pristine builds of the same commits"
            )
        };
        let dropped = build::stale::distrust_incremental(&self.cache, build.recipe_hash(), &why)?;
        self.warn(&format!(
            "{why}: the build missed a changed dependency (a Makefile that does not list a \
             header, say), so {} numbers were not the commit's. {} runs are set aside, the \
             {dropped} other cached incremental build{} of this project {} dropped (their runs set \
             aside until a pristine build shows the same bytes), and from now on every build \
             here starts from a clean worktree (`[build] incremental = false` does this from \
             the start)",
            if one { "its" } else { "their" },
            if one { "Its" } else { "Their" },
            if dropped == 1 { "" } else { "s" },
            if dropped == 1 { "is" } else { "are" },
        ));
        Ok(done(true))
    }

    /// With `jobs` above 1, the pristine rebuilds of `ids` on up to `jobs` threads at once, the
    /// builds of one worktree slot all on one thread: each id's check and, when it rebuilt, how
    /// long that took. Empty when they run one after another (one job, or all of one slot).
    #[allow(clippy::type_complexity)]
    fn rebuild_at_once(
        &self,
        ids: &[ObjectId],
        jobs: usize,
    ) -> std::collections::HashMap<ObjectId, (anyhow::Result<Check>, Option<std::time::Duration>)>
    {
        let build = &self.config.build;
        if jobs < 2 || build.cargo.is_some() {
            return Default::default();
        }
        // A pristine rebuild goes in the slot its build was made in: a build that records
        // where it was built (a debug build's `__FILE__` and DWARF paths) is the same bytes only
        // at the same path. Builds of one slot are checked one after another in it; slots are
        // shared out among at most `jobs` threads.
        let recipe = build.recipe_hash();
        let mut by_slot: std::collections::BTreeMap<usize, Vec<ObjectId>> = Default::default();
        for id in ids {
            if let Some(m) = build::cas::read_manifest(&self.cache, id, recipe) {
                if !m.pristine {
                    by_slot.entry(m.slot.unwrap_or(0)).or_default().push(*id);
                }
            }
        }
        if by_slot.len() < 2 {
            return Default::default();
        }
        let mut threads = vec![Vec::new(); jobs.min(by_slot.len())];
        for (k, group) in by_slot.into_values().enumerate() {
            threads[k % jobs].extend(group);
        }
        let git_dir = self.repo.git_dir();
        let cache = &self.cache;
        let say = !self.verbosity.quiet;
        std::thread::scope(|scope| {
            let handles: Vec<_> = threads
                .into_iter()
                .map(|group| {
                    scope.spawn(move || {
                        group
                            .into_iter()
                            .map(|id| (id, check_beside(git_dir, cache, build, id, say, false)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|h| h.join().ok())
                .flatten()
                .collect()
        })
    }
}

/// One pristine check on a thread beside others (or, `measured`, beside a measurement that
/// may be running the build: then other bytes replace nothing, see
/// [`build::check_pristine_then`]): the check and, when it rebuilt, how long that took
/// (said when it starts, unless `say` is off).
pub(crate) fn check_beside(
    git_dir: &std::path::Path,
    cache: &crate::store::cache::Cache,
    build: &crate::config::Build,
    id: ObjectId,
    say: bool,
    measured: bool,
) -> (anyhow::Result<Check>, Option<std::time::Duration>) {
    let began: Cell<Option<Instant>> = Cell::new(None);
    let rebuilding = || {
        began.set(Some(Instant::now()));
        if say {
            eprintln!(
                "perfbisect: rebuilding {} in a clean worktree, to check its incremental build \
                 (a pristine build), beside the {}",
                git::short(&id),
                if measured { "measurement" } else { "others" }
            );
        }
    };
    let check = build::check_pristine_then(git_dir, cache, build, id, &rebuilding, !measured);
    (check, began.get().map(|t| t.elapsed()))
}
