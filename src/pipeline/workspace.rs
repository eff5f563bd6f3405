//! The workspace every command works in: the repository, the config, the cache and its lock,
//! and the steps they share (load samples, build what is missing, measure and store).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::Context as _;
use gix::ObjectId;

use crate::base::paths::indent;
use crate::base::progress::Progress;
use crate::build::{self, State};
use crate::config::{Config, Test};
use crate::git::{self, CommitInfo, Repo};
use crate::measure;
use crate::pipeline::fingerprint::Fingerprint;
use crate::pipeline::samples::Samples;
use crate::store::cache::{Cache, CacheLock};
use crate::store::{commit_key, Appender, Sample};

/// How chatty to be.
#[derive(Debug, Clone, Copy, Default)]
pub struct Verbosity {
    pub quiet: bool,
    pub verbose: u8,
    pub progress: bool,
}

/// Where perfbisect works.
pub struct Workspace {
    pub repo: Repo,
    pub config: Config,
    pub cache: Cache,
    pub verbosity: Verbosity,
    pub progress: Progress,
    /// Use the samples of every fingerprint, not only this machine's (`--any-fingerprint`).
    pub any_fingerprint: bool,
    fingerprint: OnceLock<Fingerprint>,
    /// Pristine builds made beside a measurement that showed other bytes, kept for the check
    /// after the search to settle without building them again.
    pub(crate) rebuilt: std::sync::Mutex<Vec<crate::build::Rebuilt>>,
    _lock: Option<CacheLock>,
}

/// The options that pick the repository, config and cache.
#[derive(Debug, Clone, Default)]
pub struct Locations {
    pub repo: Option<PathBuf>,
    pub config: Option<PathBuf>,
    pub cache: Option<PathBuf>,
}

impl Workspace {
    /// Open the repository, read the config and open the cache; `lock` takes the cache lock
    /// for commands that write.
    pub fn open(loc: &Locations, verbosity: Verbosity, lock: bool) -> anyhow::Result<Workspace> {
        let repo = Repo::open(loc.repo.as_deref())?;
        let config_path = crate::config::locate(loc.config.as_deref(), Some(repo.dir()))?;
        let config = crate::config::load(&config_path)?;
        let cache_dir = loc
            .cache
            .clone()
            .or_else(|| std::env::var_os("PERFBISECT_CACHE").map(PathBuf::from))
            .unwrap_or_else(|| config.dir.join("cache"));
        let cache = Cache::open(&cache_dir)?;
        // What harnesses reported as their unit in earlier invocations.
        for t in config.tests.values() {
            if matches!(t.metric, crate::config::Metric::Harness(_)) {
                t.tool_unit
                    .set(cache.store().tool_unit(&t.name, t.definition_hash()));
            }
        }
        let lock = if lock {
            Some(cache.lock(verbosity.quiet)?)
        } else {
            None
        };
        let ws = Workspace {
            repo,
            config,
            cache,
            progress: Progress::new(verbosity.progress, verbosity.quiet),
            verbosity,
            any_fingerprint: false,
            fingerprint: OnceLock::new(),
            rebuilt: Default::default(),
            _lock: lock,
        };
        if ws._lock.is_some() {
            // A writer may measure: nothing a killed perfbisect left runs beside it.
            for left in crate::process::end_leftovers() {
                ws.warn(&left.to_string());
            }
        }
        Ok(ws)
    }

    /// This machine's fingerprint with this config (computed once, when first needed: it
    /// runs the `[fingerprint]` commands).
    pub fn fingerprint(&self) -> &Fingerprint {
        self.fingerprint
            .get_or_init(|| Fingerprint::current(&self.config))
    }

    /// The fingerprint `test`'s samples record here: the machine's, with the test's counter,
    /// pinned CPUs and randomisation setting when it has them.
    pub fn test_fingerprint(&self, test: &Test) -> Fingerprint {
        self.fingerprint().for_test(test)
    }

    /// What `show`, `detect` and `find` say when samples of other fingerprints were set aside
    /// (or, with `--any-fingerprint`, used): how many, and what each fingerprint was.
    pub fn fingerprint_note<R>(&self, test: &Test, samples: &Samples<R>) -> Option<String> {
        if samples.other_fingerprints.is_empty() {
            return None;
        }
        let n: usize = samples.other_fingerprints.values().sum();
        let mut out = format!(
            "note: {n} stored sample{} of `{}` {} measured with {} other fingerprint{} and {}:",
            if n == 1 { "" } else { "s" },
            test.name,
            if n == 1 { "was" } else { "were" },
            samples.other_fingerprints.len(),
            if samples.other_fingerprints.len() == 1 {
                ""
            } else {
                "s"
            },
            if self.any_fingerprint {
                "are used (--any-fingerprint)"
            } else {
                "are not used (--any-fingerprint uses them)"
            }
        );
        for (id, k) in &samples.other_fingerprints {
            out += &format!(
                "\n  {k} from {}",
                crate::pipeline::fingerprint::describe(&self.cache.root, *id)
            );
        }
        let here = self.test_fingerprint(test);
        out += &format!(
            "\n  this machine: {}",
            crate::pipeline::fingerprint::describe(&self.cache.root, here.id())
        );
        Some(out)
    }

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

    /// A warning on stderr (kept clear of progress bars); hidden with `-q`.
    pub fn warn(&self, msg: &str) {
        if !self.verbosity.quiet {
            self.progress.println(&format!(
                "perfbisect: {} {msg}",
                crate::base::style::warning_prefix()
            ));
        }
    }

    /// A progress note on stderr; hidden with `-q`.
    pub fn note(&self, msg: &str) {
        if !self.verbosity.quiet {
            self.progress.println(msg);
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

    /// Build state of a commit.
    pub fn build_state(&self, id: &ObjectId) -> State {
        build::state(&self.cache, &self.config.build, id)
    }

    /// How a failed build of `id` ended, for an error: the tail of what it printed, indented,
    /// and the path of its full log when there is one.
    pub fn build_failure(&self, id: &ObjectId) -> String {
        let tail = match self.build_state(id) {
            State::Failed(tail) => tail,
            _ => String::new(),
        };
        let log = self.cache.log(id, self.config.build.recipe_hash());
        let mut text = indent(tail.trim_end());
        if log.is_file() {
            text.push_str(&format!(
                "\nits full log: {}",
                crate::base::paths::display_path(&log)
            ));
        }
        text
    }

    /// Build the given commits that are not cached (skipping recorded failures unless
    /// `retry_failed`), up to `jobs` at once.
    pub fn build_missing(
        &self,
        commits: &[ObjectId],
        jobs: usize,
        retry_failed: bool,
    ) -> anyhow::Result<Vec<build::Outcome>> {
        let mut todo = Vec::new();
        for c in commits {
            match self.build_state(c) {
                State::Cached(_) => {}
                State::Failed(_) if !retry_failed => {}
                State::Failed(_) => {
                    build::forget_failure(&self.cache, &self.config.build, c);
                    todo.push(*c);
                }
                State::Missing => todo.push(*c),
            }
        }
        if todo.is_empty() {
            return Ok(Vec::new());
        }
        self.worktrees_for_this_machine()?;
        let bar = self.progress.bar(todo.len() as u64, "build");
        let verbose = self.verbosity.verbose > 0;
        let (progress, quiet) = (&self.progress, self.verbosity.quiet);
        // A heartbeat names the builds still going, never the finished ones, then the count.
        let names: Vec<String> = todo.iter().map(git::short).collect();
        let finished = std::sync::Mutex::new(vec![false; todo.len()]);
        let beat = self.progress.heartbeat("building");
        let building = |finished: &[bool]| {
            let now: Vec<&str> = build::in_flight(finished, jobs)
                .into_iter()
                .map(|i| names[i].as_str())
                .collect();
            let n = finished.iter().filter(|&&f| f).count();
            beat.set_done(
                format!("building {}", crate::base::progress::listed(&now)),
                if names.len() > 1 {
                    format!("{n} of {} done", names.len())
                } else {
                    String::new()
                },
            );
        };
        building(&finished.lock().unwrap_or_else(|e| e.into_inner()));
        let done = |o: &build::Outcome| {
            {
                let mut f = finished.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(i) = todo.iter().position(|c| *c == o.commit) {
                    f[i] = true;
                }
                building(&f);
            }
            // Above the bars (plainly on stderr when they are hidden: CI logs, --no-progress),
            // and not at all with -q, like `note` (the build threads cannot share `self`).
            let say = |msg: String| {
                if !quiet {
                    progress.println(&msg)
                }
            };
            bar.inc(1);
            bar.set_message(git::short(&o.commit));
            match &o.result {
                Ok(_) if verbose => say(format!(
                    "built {} in {}",
                    git::short(&o.commit),
                    crate::base::text::fmt_secs(o.seconds)
                )),
                Err(tail) if !o.interrupted => say(format!(
                    "perfbisect: build of {} failed; it will be skipped (--retry-failed builds it again):\n{}",
                    git::short(&o.commit),
                    indent(tail.trim_end())
                )),
                _ => {}
            }
        };
        let out = build::build_all(
            self.repo.git_dir(),
            &self.cache,
            &self.config.build,
            &todo,
            jobs,
            &done,
        );
        bar.finish_and_clear();
        out
    }

    /// Builds after the machine changed (another fingerprint: a new compiler, another build
    /// recipe) start from clean worktrees: an incremental build over the objects the machine
    /// made before would mix two toolchains' outputs, and the check of incremental builds
    /// would take the new toolchain's other bytes for broken dependency tracking and set the
    /// earlier era's runs aside. The fingerprint the worktrees were built under is kept in
    /// `cache/worktrees.fingerprint` (none yet: they are taken as this machine's).
    fn worktrees_for_this_machine(&self) -> anyhow::Result<()> {
        let record = self.cache.root.join("worktrees.fingerprint");
        let here = format!("{:016x}\n", self.fingerprint().id());
        match std::fs::read_to_string(&record) {
            Ok(t) if t == here => return Ok(()),
            Ok(t) => {
                build::clear_worktrees(&self.cache)?;
                if self.verbosity.verbose > 0 {
                    self.note(&format!(
                        "perfbisect: the worktrees were built under fingerprint {} and this machine's is {}: building from clean worktrees",
                        t.trim(),
                        here.trim()
                    ));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", record.display())),
        }
        crate::store::replace_file(&record, ".worktrees.fingerprint.", here.as_bytes())
    }

    /// Open the store for appending one test's samples, reporting repairs. The fingerprint the
    /// samples will record is kept in the cache, so reports can say what it was.
    pub fn appender(&self, test: &Test) -> anyhow::Result<Appender> {
        self.counter_note(test)?;
        if let Err(e) = self.test_fingerprint(test).save(&self.cache.root) {
            self.warn(&format!(
                "{e:#}; reports will name this fingerprint by its id only"
            ));
        }
        let a = self
            .cache
            .store()
            .appender(&test.name)
            .with_context(|| format!("cannot open the result store of test `{}`", test.name))?;
        for w in &a.warnings {
            self.warn(w);
        }
        Ok(a)
    }

    /// The artifacts of a commit, building it first if needed. `None`: it does not build
    /// (now or before). The flag says whether a build ran now.
    pub fn ensure_built(&self, id: &ObjectId) -> anyhow::Result<(Option<PathBuf>, bool)> {
        match self.build_state(id) {
            State::Cached(p) => return Ok((Some(p), false)),
            State::Failed(_) => return Ok((None, false)),
            State::Missing => {}
        }
        let outcomes = self.build_missing(&[*id], 1, false)?;
        if crate::base::interrupt::requested() {
            return Err(crate::base::interrupt::Interrupted.into());
        }
        let built = !outcomes.is_empty();
        match self.build_state(id) {
            State::Cached(p) => Ok((Some(p), built)),
            _ => Ok((None, built)),
        }
    }

    /// What one run of `test` on `commit`'s build (`artifacts`) is made with, outside any
    /// window (a profile, a one-off).
    pub fn run_context<'a>(
        &'a self,
        test: &'a Test,
        commit: ObjectId,
        artifacts: &'a Path,
    ) -> measure::Context<'a> {
        let b = Batch {
            test,
            commit,
            artifacts,
            runs: 1,
            round: 0,
        };
        self.context(&b, 0)
    }

    fn context<'a>(&'a self, x: &Batch<'a>, window: u64) -> measure::Context<'a> {
        measure::Context {
            test: x.test,
            config_dir: &self.config.dir,
            artifacts: x.artifacts,
            commit: x.commit,
            recipe_hash: self.config.build.recipe_hash(),
            round: x.round,
            fingerprint: self.test_fingerprint(x.test).id(),
            window,
        }
    }

    /// Before `test` is first measured: which counter counts its instructions and why (once
    /// per test and process), or the error that no counter can, naming the Debian package
    /// (exit 2, before anything runs).
    pub fn counter_note(&self, test: &Test) -> anyhow::Result<()> {
        if !matches!(test.metric, crate::config::Metric::Instructions) {
            return Ok(());
        }
        static NOTED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        let sel = crate::process::counter::select(test.counter).map_err(|e| {
            crate::error::UsageError::err(format!(
                "test `{}` cannot count instructions: {e}",
                test.name
            ))
        })?;
        let mut noted = NOTED.lock().unwrap_or_else(|e| e.into_inner());
        if !noted.contains(&test.name) {
            noted.push(test.name.clone());
            let slow = match sel.counter {
                crate::process::counter::Counter::Cachegrind { .. } => {
                    "; a run under Valgrind takes 10 to 50 times as long as a plain one"
                }
                crate::process::counter::Counter::Perf => "",
            };
            self.note(&format!(
                "perfbisect: test `{}` counts instructions with {}: {}{slow}",
                test.name,
                sel.counter.describe(),
                sel.why
            ));
        }
        Ok(())
    }

    /// Keep the unit `test`'s harness reported, for later invocations (best effort: a unit
    /// that cannot be written is learned again from the next run).
    fn keep_unit(&self, test: &Test) {
        if let Some(u) = test.tool_unit.get() {
            let store = self.cache.store();
            let hash = test.definition_hash();
            if store.tool_unit(&test.name, hash).as_deref() != Some(u.as_str()) {
                if let Err(e) = store.set_tool_unit(&test.name, hash, &u) {
                    self.warn(&format!("{e:#}"));
                }
            }
        }
    }

    /// Measure tests that share their command on one commit (see
    /// [`measure::shared_batch`]): `batches[i].runs` samples of each, from one execution per
    /// repeat, each stored (in `appenders[i]`) before the next run starts. Returns the number
    /// of executions.
    pub fn measure_shared(
        &self,
        appenders: &mut [&mut Appender],
        batches: &[Batch<'_>],
        each: &mut dyn FnMut(usize, &Sample),
    ) -> anyhow::Result<usize> {
        let window = crate::store::new_window();
        let ctxs: Vec<measure::Context<'_>> =
            batches.iter().map(|b| self.context(b, window)).collect();
        let runs: Vec<usize> = batches.iter().map(|b| b.runs).collect();
        let mut warned = vec![false; batches.len()];
        let n = measure::shared_batch(
            &ctxs,
            &runs,
            &mut |i, s| {
                appenders[i].append(&s)?;
                crate::base::interrupt::kept_run();
                if let Some(e) = &s.error {
                    if self.verbosity.verbose > 0 || !warned[i] {
                        warned[i] = true;
                        self.warn(&format!(
                            "run of `{}` on {} failed: {}",
                            batches[i].test.name,
                            git::short(&batches[i].commit),
                            e.trim_end()
                        ));
                    }
                }
                each(i, &s);
                Ok(())
            },
            &|w| self.warn(w),
        )?;
        for b in batches {
            self.keep_unit(b.test);
        }
        Ok(n)
    }

    /// Run two batches interleaved (A B A B ...), each sample stored before the next run.
    pub fn measure_interleaved(
        &self,
        appender: &mut Appender,
        a: Batch<'_>,
        b: Batch<'_>,
        each: &mut dyn FnMut(&Sample),
    ) -> anyhow::Result<(Vec<Sample>, Vec<Sample>)> {
        build::cas::mark_used(a.artifacts);
        build::cas::mark_used(b.artifacts);
        let window = crate::store::new_window();
        let (ca, cb) = (self.context(&a, window), self.context(&b, window));
        let mut got = (Vec::new(), Vec::new());
        measure::interleaved(
            &ca,
            &cb,
            a.runs.min(b.runs),
            &mut |side, s| {
                appender.append(&s)?;
                crate::base::interrupt::kept_run();
                each(&s);
                if side {
                    got.1.push(s);
                } else {
                    got.0.push(s);
                }
                Ok(())
            },
            &|w| self.warn(w),
        )?;
        self.keep_unit(a.test);
        Ok(got)
    }

    /// Measure one test on several built commits together, in interleaved rounds (see
    /// [`measure::rounds`]): `batches[i].runs` runs of each, every sample stored before the
    /// next run starts. `window` continues an earlier window of these commits, its rounds
    /// numbered from the given moment on; `None` starts a new one. A commit whose test fails
    /// `limit` runs in a row gets no more runs. Returns the window, the samples of each batch
    /// and what the rounds cost.
    ///
    /// With `parallel` above 1 up to that many runs of a round go at once, each on another
    /// commit: only for metrics the machine's load does not move (those [`crate::pipeline::shards::dependence`]
    /// finds independent of the machine: Cachegrind counts, declared deterministic values).
    #[allow(clippy::too_many_arguments)]
    pub fn measure_window(
        &self,
        appender: &mut Appender,
        batches: &[Batch<'_>],
        window: Option<(u64, u32)>,
        limit: usize,
        parallel: usize,
        each: &mut dyn FnMut(&Sample),
    ) -> anyhow::Result<(u64, Vec<Vec<Sample>>, measure::RoundsDone)> {
        let (window, first_moment) = window.unwrap_or_else(|| (crate::store::new_window(), 0));
        for b in batches {
            build::cas::mark_used(b.artifacts);
        }
        let ctxs: Vec<measure::Context<'_>> =
            batches.iter().map(|b| self.context(b, window)).collect();
        let units: Vec<measure::Unit<'_, '_>> = ctxs
            .iter()
            .zip(batches)
            .map(|(c, b)| measure::Unit::one(c, b.runs))
            .collect();
        let mut got: Vec<Vec<Sample>> = vec![Vec::new(); batches.len()];
        let mut streak = vec![0usize; batches.len()];
        let mut warned = false;
        let done = measure::rounds_parallel(
            &units,
            window ^ u64::from(first_moment).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            first_moment,
            parallel,
            &mut |u, _, s| {
                appender.append(&s)?;
                crate::base::interrupt::kept_run();
                if let Some(e) = &s.error {
                    streak[u] += 1;
                    if self.verbosity.verbose > 0 || !warned {
                        warned = true;
                        self.warn(&format!(
                            "run of `{}` on {} failed: {}",
                            batches[u].test.name,
                            git::short(&batches[u].commit),
                            e.trim_end()
                        ));
                    }
                } else {
                    streak[u] = 0;
                }
                each(&s);
                got[u].push(s);
                Ok(streak[u] < limit.max(1))
            },
            &|w| self.warn(w),
        )?;
        if let Some(b) = batches.first() {
            self.keep_unit(b.test);
        }
        Ok((window, got, done))
    }

    /// Measure tests on many built commits in one session of interleaved rounds (`run`): in
    /// each round every visit (one commit, the tests of one share group) that still needs runs
    /// gets one execution, in an order that changes every round, so that the machine's drift
    /// falls on every commit alike. `appenders[t]` stores test `t`'s samples (`visits[v].tests`
    /// index into them), each before the next run starts. Returns what the rounds cost and
    /// every sample with its visit and test.
    /// `parallel` as for [`Workspace::measure_window`].
    pub fn measure_session(
        &self,
        appenders: &mut [&mut Appender],
        visits: &[Visit<'_>],
        parallel: usize,
        each: &mut dyn FnMut(usize, &Sample),
    ) -> anyhow::Result<(measure::RoundsDone, Vec<SessionSample>)> {
        let window = crate::store::new_window();
        let ctxs: Vec<Vec<measure::Context<'_>>> = visits
            .iter()
            .map(|v| v.batches.iter().map(|b| self.context(b, window)).collect())
            .collect();
        for v in visits {
            if let Some(b) = v.batches.first() {
                build::cas::mark_used(b.artifacts);
            }
        }
        let units: Vec<measure::Unit<'_, '_>> = ctxs
            .iter()
            .zip(visits)
            .map(|(cs, v)| measure::Unit {
                ctxs: cs.iter().collect(),
                runs: v.batches.iter().map(|b| b.runs).collect(),
            })
            .collect();
        let mut got = Vec::new();
        let mut warned = vec![false; appenders.len()];
        let done = measure::rounds_parallel(
            &units,
            window,
            0,
            parallel,
            &mut |u, i, s| {
                let t = visits[u].tests[i];
                appenders[t].append(&s)?;
                crate::base::interrupt::kept_run();
                if let Some(e) = &s.error {
                    if self.verbosity.verbose > 0 || !warned[t] {
                        warned[t] = true;
                        self.warn(&format!(
                            "run of `{}` on {} failed: {}",
                            visits[u].batches[i].test.name,
                            git::short(&visits[u].batches[i].commit),
                            e.trim_end()
                        ));
                    }
                }
                each(t, &s);
                got.push((u, t, s));
                Ok(true)
            },
            &|w| self.warn(w),
        )?;
        for v in visits {
            for b in &v.batches {
                self.keep_unit(b.test);
            }
        }
        Ok((done, got))
    }

    /// Measure a batch of runs of a test on a built commit, storing each before the next
    /// starts; `each` sees every sample after it is stored.
    pub fn measure(
        &self,
        appender: &mut Appender,
        batch: Batch<'_>,
        each: &mut dyn FnMut(&Sample),
    ) -> anyhow::Result<Vec<Sample>> {
        build::cas::mark_used(batch.artifacts);
        let ctx = self.context(&batch, crate::store::new_window());
        let (test, commit) = (batch.test, batch.commit);
        let mut got = Vec::new();
        measure::batch(
            &ctx,
            batch.runs,
            &mut |s| {
                appender.append(&s)?;
                crate::base::interrupt::kept_run();
                if let Some(e) = &s.error {
                    if self.verbosity.verbose > 0 || got.is_empty() {
                        self.warn(&format!(
                            "run of `{}` on {} failed: {}",
                            test.name,
                            git::short(&commit),
                            e.trim_end()
                        ));
                    }
                }
                each(&s);
                got.push(s);
                Ok(())
            },
            &|w| self.warn(w),
        )?;
        self.keep_unit(test);
        Ok(got)
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

/// A sample of a session: the visit it came from, its test (the appender's index), itself.
pub type SessionSample = (usize, usize, Sample);

/// One commit's place in a [`Workspace::measure_session`]: the batches of the tests of one
/// share group it needs runs of (one execution feeds them all), and the index of each test
/// among the session's appenders.
pub struct Visit<'a> {
    pub batches: Vec<Batch<'a>>,
    pub tests: Vec<usize>,
}

/// What to measure: `runs` runs of `test` on `commit`, whose artifacts are at `artifacts`,
/// stored as round `round`.
pub struct Batch<'a> {
    pub test: &'a Test,
    pub commit: ObjectId,
    pub artifacts: &'a Path,
    pub runs: usize,
    pub round: u32,
}
