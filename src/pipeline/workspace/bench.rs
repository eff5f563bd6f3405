//! One test's bench: what a search (`find`, `step`) asks of the workspace while it runs, in
//! one handle opened once. It holds the test's stored samples and its appender, and answers
//! for builds (states, failures, builds now and beside a measurement, pristine checks beside
//! one, identical builds, build times) and runs (batches and windows, each sample stored
//! before the next run starts), so a search climbs back to the workspace once, to open it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use gix::ObjectId;

use super::context::Workspace;
use super::measure::Batch;
use crate::base::progress::Heartbeat;
use crate::build::{self, Check, State};
use crate::config::Test;
use crate::git;
use crate::measure::RoundsDone;
use crate::pipeline::samples::Samples;
use crate::store::cache::Cache;
use crate::store::{Appender, Sample};

/// One test's bench (see the module): the workspace as context (notes, progress), the test,
/// the samples stored when it was opened, and the appender its runs are stored with.
pub struct Bench<'a> {
    /// The context: notes, warnings, progress and verbosity.
    pub ws: &'a Workspace,
    pub test: &'a Test,
    /// The test's samples as stored when the bench was opened.
    pub stored: Samples,
    appender: Appender,
}

impl Workspace {
    /// Open `test`'s bench: the counter that counts it said (or refused, exit 2, before
    /// anything is built), its stored samples read (with `fingerprints`, what they hold of
    /// other machines said, before this machine's fingerprint is kept), its store opened for
    /// appending.
    pub fn bench<'a>(&'a self, test: &'a Test, fingerprints: bool) -> anyhow::Result<Bench<'a>> {
        self.counter_note(test)?;
        let stored = self.samples(test)?;
        if let Some(n) = fingerprints
            .then(|| self.fingerprint_note(test, &stored))
            .flatten()
        {
            self.note(&n);
        }
        let appender = self.appender(test)?;
        Ok(Bench {
            ws: self,
            test,
            stored,
            appender,
        })
    }
}

impl Bench<'_> {
    /// The build state of a commit.
    pub fn state(&self, id: &ObjectId) -> State {
        self.ws.build_state(id)
    }

    /// A commit's cached build, if it has one.
    pub fn artifacts(&self, id: &ObjectId) -> Option<PathBuf> {
        match self.state(id) {
            State::Cached(p) => Some(p),
            _ => None,
        }
    }

    /// How a failed build of `id` ended, for an error (see [`Workspace::build_failure`]).
    pub fn failure(&self, id: &ObjectId) -> String {
        self.ws.build_failure(id)
    }

    /// Build those of `ids` that are neither cached nor known to fail, up to `jobs` at once.
    pub fn build(&self, ids: &[ObjectId], jobs: usize) -> anyhow::Result<Vec<build::Outcome>> {
        self.ws.build_missing(ids, jobs, false)
    }

    /// How long the cached build of `id` took, from its manifest.
    pub fn build_secs(&self, id: &ObjectId) -> Option<f64> {
        let recipe = self.ws.config.build.recipe_hash();
        build::cas::read_manifest(&self.ws.cache, id, recipe)
            .and_then(|m| m.build_ms)
            .map(|ms| ms as f64 / 1000.0)
    }

    /// The other commits whose trusted builds are byte-identical to `id`'s (by their
    /// manifests' digests), in a fixed order; none when `id` has no manifest.
    pub fn identical_builds(&self, id: &ObjectId) -> Vec<ObjectId> {
        let cache = &self.ws.cache;
        let recipe = self.ws.config.build.recipe_hash();
        let Some(mine) = build::cas::read_manifest(cache, id, recipe).map(|m| m.digest) else {
            return Vec::new();
        };
        let key = crate::store::commit_key(id);
        let mut twins: Vec<[u8; 20]> = build::stale::trusted_digests(cache, recipe)
            .into_iter()
            .filter(|(c, d)| *d == mine && *c != key)
            .map(|(c, _)| c)
            .collect();
        twins.sort();
        twins
            .iter()
            .map(|t| ObjectId::from_bytes_or_panic(t))
            .collect()
    }

    /// The test's samples of `ids` as stored now (this bench's runs included).
    pub fn samples_for(&self, ids: &[ObjectId]) -> anyhow::Result<Samples> {
        self.ws.samples_for(self.test, Some(ids))
    }

    /// `runs` runs of the test on `commit`'s build at `artifacts`, each stored before the next
    /// starts; `each` sees every sample after it is stored.
    pub fn measure(
        &mut self,
        commit: ObjectId,
        artifacts: &std::path::Path,
        runs: usize,
        each: &mut dyn FnMut(&Sample),
    ) -> anyhow::Result<Vec<Sample>> {
        let batch = Batch {
            test: self.test,
            commit,
            artifacts,
            runs,
            round: 0,
        };
        self.ws.measure(&mut self.appender, batch, each)
    }

    /// A window of interleaved runs of the test on `commits` (with their builds), `runs` each
    /// (see [`Workspace::measure_window`]).
    pub fn measure_window(
        &mut self,
        commits: &[(ObjectId, PathBuf)],
        runs: usize,
        window: Option<(u64, u32)>,
        parallel: usize,
        each: &mut dyn FnMut(&Sample),
    ) -> anyhow::Result<(u64, Vec<Vec<Sample>>, RoundsDone)> {
        let batches: Vec<Batch<'_>> = commits
            .iter()
            .map(|(commit, artifacts)| Batch {
                test: self.test,
                commit: *commit,
                artifacts,
                runs,
                round: 0,
            })
            .collect();
        let limit = self.test.repeats.max(2);
        self.ws
            .measure_window(&mut self.appender, &batches, window, limit, parallel, each)
    }

    /// The builds of `ids` to make on another thread while a measurement runs (said now,
    /// with `why` they may): [`BuildsBeside::run`] on that thread makes them.
    pub fn builds_beside(&self, ids: Vec<ObjectId>, jobs: usize, why: &str) -> BuildsBeside {
        let names: Vec<String> = ids.iter().map(git::short).collect();
        self.ws.note(&format!(
            "perfbisect: building {} beside the measurement (what the search may probe next; {why})",
            names.join(", "),
        ));
        BuildsBeside {
            git_dir: self.ws.repo.git_dir().to_path_buf(),
            cache: self.ws.cache.clone(),
            build: self.ws.config.build.clone(),
            ids,
            names,
            jobs: jobs.max(1),
            say: !self.ws.verbosity.quiet,
            // A build may outlast the runs beside it: never silent while it is waited for.
            beat: self.ws.progress.heartbeat(""),
        }
    }

    /// Whether `id`'s cached build is incremental and not yet checked against a pristine
    /// one (cargo's builds are trusted, never checked).
    pub fn unchecked(&self, id: &ObjectId) -> bool {
        let build = &self.ws.config.build;
        build.cargo.is_none()
            && build::cas::read_manifest(&self.ws.cache, id, build.recipe_hash())
                .is_some_and(|m| !m.pristine)
    }

    /// The pristine checks of `ids` to make on another thread while a measurement runs, one
    /// after another (said now, with `why` they may): [`ChecksBeside::run`] on that thread
    /// makes them, [`Bench::settle_checks`] says what they found.
    pub fn checks_beside(&self, ids: Vec<ObjectId>, why: &str) -> ChecksBeside {
        let names: Vec<String> = ids.iter().map(git::short).collect();
        self.ws.note(&format!(
            "perfbisect: checking {} against pristine rebuilds beside the measurement (the builds \
             the verdict will stand on; {why})",
            names.join(", "),
        ));
        ChecksBeside {
            git_dir: self.ws.repo.git_dir().to_path_buf(),
            cache: self.ws.cache.clone(),
            build: self.ws.config.build.clone(),
            ids,
            names,
            say: !self.ws.verbosity.quiet,
            beat: self.ws.progress.heartbeat(""),
        }
    }

    /// Say what the checks beside a measurement found, keeping the pristine builds that
    /// showed other bytes for the check after the search (which measures both builds):
    /// how many rebuilt, and what they took.
    pub fn settle_checks(&self, checked: Vec<CheckedBeside>) -> (usize, Duration) {
        let (mut n, mut spent) = (0, Duration::ZERO);
        for (id, check, took) in checked {
            let Some(took) = took else { continue };
            n += 1;
            spent += took;
            let what = match check {
                Ok(Check::Differs(r)) => {
                    let what = format!(
                        "other bytes than its incremental build ({}; both are measured after \
                         the search)",
                        r.what
                    );
                    self.ws
                        .rebuilt
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(*r);
                    what
                }
                Ok(Check::Same) => "the same bytes as its incremental build".to_string(),
                _ => "failed (checked again after the search)".to_string(),
            };
            self.ws.note(&format!(
                "perfbisect: pristine build of {} done beside the measurement in {}: {what}",
                git::short(&id),
                crate::base::text::fmt_secs(took.as_secs_f64())
            ));
        }
        (n, spent)
    }
}

/// Builds to make on another thread beside a measurement (see [`Bench::builds_beside`]).
pub struct BuildsBeside {
    git_dir: PathBuf,
    cache: Cache,
    build: crate::config::Build,
    ids: Vec<ObjectId>,
    names: Vec<String>,
    jobs: usize,
    say: bool,
    beat: Heartbeat,
}

impl BuildsBeside {
    /// Make the builds, each said as it ends; the heartbeat names those still going. Returns
    /// their outcomes and how long they took.
    pub fn run(self) -> (anyhow::Result<Vec<build::Outcome>>, Duration) {
        let t = Instant::now();
        let finished = std::sync::Mutex::new(vec![false; self.ids.len()]);
        let (names, beat, jobs, say) = (&self.names, &self.beat, self.jobs, self.say);
        let building = |f: &[bool]| {
            let now: Vec<&str> = build::in_flight(f, jobs)
                .into_iter()
                .map(|i| names[i].as_str())
                .collect();
            // Several builds of one whole: the time so far is the whole's.
            let what = if now.is_empty() {
                String::new()
            } else {
                format!(
                    "building {} beside the measurement",
                    crate::base::progress::listed(&now)
                )
            };
            beat.set_done(what, "");
        };
        building(&finished.lock().unwrap_or_else(|e| e.into_inner()));
        let ids = &self.ids;
        let out = build::build_all(&self.git_dir, &self.cache, &self.build, ids, jobs, &|o| {
            {
                let mut f = finished.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(i) = ids.iter().position(|c| *c == o.commit) {
                    f[i] = true;
                }
                building(&f);
            }
            if say {
                match &o.result {
                    Ok(_) => eprintln!(
                        "perfbisect: built {} beside the measurement in {}",
                        git::short(&o.commit),
                        crate::base::text::fmt_secs(o.seconds)
                    ),
                    Err(tail) if !o.interrupted => eprintln!(
                        "perfbisect: build of {} failed; it will be skipped:\n{}",
                        git::short(&o.commit),
                        crate::base::paths::indent(tail.trim_end())
                    ),
                    _ => {}
                }
            }
        });
        (out, t.elapsed())
    }
}

/// What one pristine check beside a measurement found: the commit, the check, and how long
/// its rebuild took when it rebuilt.
pub type CheckedBeside = (ObjectId, anyhow::Result<Check>, Option<Duration>);

/// Pristine checks to make on another thread beside a measurement (see
/// [`Bench::checks_beside`]).
pub struct ChecksBeside {
    git_dir: PathBuf,
    cache: Cache,
    build: crate::config::Build,
    ids: Vec<ObjectId>,
    names: Vec<String>,
    say: bool,
    beat: Heartbeat,
}

impl ChecksBeside {
    /// Make the checks one after another (each rebuilds in the worktree its build was made
    /// in); the heartbeat names the one going.
    pub fn run(self) -> Vec<CheckedBeside> {
        let checking = |k: usize| {
            self.beat.set(self.names.get(k).map_or(String::new(), |n| {
                format!("checking {n} against a pristine rebuild beside the measurement")
            }));
        };
        checking(0);
        self.ids
            .iter()
            .enumerate()
            .map(|(k, &id)| {
                let (check, took) = build::check_beside(
                    &self.git_dir,
                    &self.cache,
                    &self.build,
                    id,
                    self.say,
                    true,
                );
                checking(k + 1);
                (id, check, took)
            })
            .collect()
    }
}
