//! The check of the builds a verdict stands on: each cached incremental build compared with a
//! pristine rebuild of the same commit (see [`crate::build::stale`]), with a line per rebuild,
//! a heartbeat while it runs, and what the rebuilds cost for the summaries of `find`, `report`
//! and `run`.

use std::cell::Cell;
use std::time::Instant;

use gix::ObjectId;

use crate::base::paths::indent;
use crate::build::{self, Check};
use crate::config::Test;
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
    /// builds of the same commits (see [`build::stale`]). Where the bytes differ, the two
    /// builds are measured side by side with `tests` ([`Workspace::measure_both`]) before
    /// anything is decided: the same numbers keep the incremental build (the bytes that
    /// differ, a stamped date or path, change nothing the tests see), other numbers (or no
    /// test to measure with) make it stale. When one was stale, every build of this project is
    /// pristine from now on and every cached incremental build is dropped, its samples set
    /// aside: `stale` is true, and the caller searches again.
    pub fn check_builds(&self, ids: &[ObjectId], tests: &[&Test]) -> anyhow::Result<Checked> {
        self.check_builds_jobs(ids, 1, tests)
    }

    /// [`Workspace::check_builds`], up to `jobs` rebuilds at once: those of builds made in
    /// different worktree slots, each in its own build's slot.
    pub fn check_builds_jobs(
        &self,
        ids: &[ObjectId],
        jobs: usize,
        tests: &[&Test],
    ) -> anyhow::Result<Checked> {
        let started = Instant::now();
        let build = &self.config.build;
        let mut stale = Vec::new();
        let mut same = Vec::new();
        let mut measured_same = Vec::new();
        let mut builds = 0;
        let bar = self.progress.bar(ids.len() as u64, "check");
        let beat = self
            .progress
            .heartbeat("checking builds against pristine ones");
        let mut early = self.rebuild_at_once(ids, jobs);
        for id in ids {
            let short = git::short(id);
            let kept = self.kept_rebuilt(id);
            let check = match kept
                .map(|r| (Ok(Check::Differs(Box::new(r))), None))
                .or_else(|| early.remove(id))
            {
                Some((check, took)) => {
                    let check = check?;
                    bar.inc(1);
                    if let Some(t) = took {
                        builds += 1;
                        self.note(&format!(
                            "perfbisect: pristine build of {short} done in {} (beside the others)",
                            crate::base::text::fmt_secs(t.as_secs_f64())
                        ));
                    }
                    check
                }
                None => {
                    let began: Cell<Option<Instant>> = Cell::new(None);
                    // A pristine rebuild takes as long as a first build (minutes on a large
                    // project): said when it starts, so the wait has a reason.
                    let rebuilding = || {
                        began.set(Some(Instant::now()));
                        bar.set_message(format!("rebuilding {short} pristine"));
                        beat.set(format!("rebuilding {short} in a clean worktree"));
                        self.note(&format!(
                            "perfbisect: rebuilding {short} in a clean worktree, to check its \
                             incremental build (a pristine build)"
                        ));
                    };
                    let check = build::check_pristine(
                        self.repo.git_dir(),
                        &self.cache,
                        build,
                        *id,
                        &rebuilding,
                    )?;
                    bar.inc(1);
                    if let Some(t) = began.get() {
                        builds += 1;
                        let result = match &check {
                            Check::Same => "the same bytes as its incremental build".to_string(),
                            Check::Differs(r) => {
                                format!("other bytes than its incremental build: {}", r.what)
                            }
                            _ => "failed".to_string(),
                        };
                        self.note(&format!(
                            "perfbisect: pristine build of {short} done in {}: {result}",
                            crate::base::text::fmt_secs(t.elapsed().as_secs_f64())
                        ));
                    }
                    check
                }
            };
            match check {
                Check::Same => same.push(short),
                Check::Differs(r) => {
                    beat.set(format!(
                        "measuring {short}'s incremental and pristine builds"
                    ));
                    let said = self.measure_both(&r, tests)?;
                    match said {
                        Some((true, numbers)) => {
                            self.note(&format!(
                                "perfbisect: {short}'s incremental and pristine builds differ in \
                                 {}, but measure the same side by side ({numbers}): the \
                                 incremental build stands, and nothing is searched again",
                                r.what
                            ));
                            r.keep_incremental(&self.cache, build)?;
                            measured_same.push(short);
                        }
                        other => {
                            let numbers = match other {
                                Some((_, n)) => format!("; side by side they measure {n}"),
                                None => String::new(),
                            };
                            let what = format!("{short} (in {}{numbers})", r.what);
                            r.replace(&self.cache, build)?;
                            stale.push(what);
                        }
                    }
                }
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
        self.distrust(&stale)?;
        Ok(done(true))
    }

    /// Says which incremental builds differed from pristine ones (`stale`), and drops every
    /// cached incremental build of the project: none is trusted any more.
    fn distrust(&self, stale: &[String]) -> anyhow::Result<()> {
        let build = &self.config.build;
        let list = match stale {
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
        Ok(())
    }

    /// The pristine build of `id` made beside a measurement that showed other bytes, while
    /// the cached incremental build it was compared with is still the one in place.
    fn kept_rebuilt(&self, id: &ObjectId) -> Option<build::Rebuilt> {
        let mut kept = self.rebuilt.lock().unwrap_or_else(|e| e.into_inner());
        let i = kept.iter().position(|r| r.commit == *id)?;
        let r = kept.swap_remove(i);
        let now = build::cas::read_manifest(&self.cache, id, self.config.build.recipe_hash());
        now.is_some_and(|m| !m.pristine && m.digest == r.old.digest && r.cached.is_dir())
            .then_some(r)
    }

    /// The incremental build and the pristine build of `r.commit` measured side by side
    /// (one run of each in turn) with each of `tests`, and whether every test measured them
    /// the same: values without spread (a test declared deterministic) equal; a count of
    /// instructions within a tenth of the threshold (the rule a search calls a count exact
    /// by); other metrics not told apart by the rank test and the threshold, as two commits
    /// are. With the numbers, for the note. `None` when nothing measured them (no test, or
    /// failed runs). The runs are not stored: they are of builds, not of the commit's level.
    pub fn measure_both(
        &self,
        r: &build::Rebuilt,
        tests: &[&Test],
    ) -> anyhow::Result<Option<(bool, String)>> {
        if tests.is_empty() {
            return Ok(None);
        }
        let pristine = r.entry();
        let mut all_same = true;
        let mut said = Vec::new();
        for test in tests {
            let counted = matches!(test.metric, crate::config::Metric::Instructions);
            let runs = if test.deterministic || counted {
                2
            } else {
                test.repeats.max(5)
            };
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let warn = |w: &str| self.warn(w);
            for _ in 0..runs {
                for (dir, out) in [(&r.cached, &mut a), (&pristine, &mut b)] {
                    if crate::base::interrupt::requested() {
                        return Ok(None);
                    }
                    let ctx = self.run_context(test, r.commit, dir);
                    crate::measure::batch(
                        &ctx,
                        1,
                        &mut |s| {
                            if let Some(v) = s.value.filter(|v| v.is_finite()) {
                                out.push(v);
                            }
                            Ok(())
                        },
                        &warn,
                    )?;
                }
            }
            if a.is_empty() || b.is_empty() {
                return Ok(None);
            }
            let same = same_measure(test, counted, &a, &b);
            all_same &= same;
            let (ma, mb) = (
                crate::stats::median(&a).unwrap_or(f64::NAN),
                crate::stats::median(&b).unwrap_or(f64::NAN),
            );
            let (la, lb) = crate::report::units::level_pair(
                ma,
                mb,
                &test.unit(),
                test.deterministic || counted,
            );
            said.push(format!(
                "`{}` {la} incremental, {lb} pristine, medians of {runs} runs each",
                test.name,
            ));
        }
        Ok(Some((all_same, said.join("; "))))
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
        let kept: Vec<ObjectId> = self
            .rebuilt
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|r| r.commit)
            .collect();
        for id in ids.iter().filter(|id| !kept.contains(id)) {
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
                            .map(|id| {
                                (
                                    id,
                                    build::check_beside(git_dir, cache, build, id, say, false),
                                )
                            })
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

/// Whether `test` measured two builds the same: `a` and `b` its values on each (see
/// [`Workspace::measure_both`]).
fn same_measure(test: &Test, counted: bool, a: &[f64], b: &[f64]) -> bool {
    let (ma, mb) = (
        crate::stats::median(a).unwrap_or(f64::NAN),
        crate::stats::median(b).unwrap_or(f64::NAN),
    );
    if counted || test.deterministic {
        if ma == mb {
            return true;
        }
        if !counted {
            return false;
        }
        // A count's jitter (a few instructions in billions) is no difference: within a tenth
        // of the threshold, as a search calls a count's runs exact.
        let rel = match test.threshold {
            crate::stats::threshold::Threshold::Relative(r) => r.abs(),
            crate::stats::threshold::Threshold::Absolute(x) if ma != 0.0 => (x / ma).abs(),
            crate::stats::threshold::Threshold::Absolute(_) => 0.0,
        };
        return ma != 0.0 && ((mb - ma) / ma).abs() <= rel / 10.0;
    }
    crate::stats::compare::differ_declared(a, b, test.alpha, test.threshold, false)
        .is_none_or(|d| !d.differs)
}
