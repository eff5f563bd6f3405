//! Building what a command needs: the state of a commit's build, the builds that are missing
//! (with their progress), and the clean worktrees a changed machine starts from.

use std::path::PathBuf;

use anyhow::Context as _;
use gix::ObjectId;

use super::context::Workspace;
use crate::base::paths::indent;
use crate::build::{self, State};
use crate::git;

impl Workspace {
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
}
