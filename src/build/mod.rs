//! Building commits in perfbisect's worktrees and caching their artifacts per (commit, recipe).
//! Builds may run in parallel (one worktree slot per job); a failed build is recorded with its
//! log's tail so it is skipped, not retried, unless asked. Rust projects are built through
//! [`cargo`], which finds the executables by itself. Artifacts are stored content-addressed
//! ([`cas`]): identical files across commits take their space once.

pub mod cargo;
pub mod carry;
pub mod cas;
pub mod diff;
pub mod guard;
pub mod stale;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use gix::ObjectId;
use rayon::prelude::*;

use crate::config::Build;
use crate::git::worktree::Worktree;
use crate::process::{self, Output, Spec, Status};
use crate::store::cache::Cache;

/// What the cache knows about a commit's build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Artifacts are cached here.
    Cached(PathBuf),
    /// The build failed before; the tail of its log.
    Failed(String),
    Missing,
}

/// Look a commit up in the cache.
pub fn state(cache: &Cache, build: &Build, commit: &ObjectId) -> State {
    let recipe = build.recipe_hash();
    let art = cache.artifacts(commit, recipe);
    if art.is_dir() {
        return State::Cached(art);
    }
    match fs::read_to_string(cache.failed(commit, recipe)) {
        Ok(tail) => State::Failed(tail),
        Err(_) => State::Missing,
    }
}

/// The result of one build.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub commit: ObjectId,
    pub result: Result<PathBuf, String>,
    pub seconds: f64,
    /// Stopped by Ctrl-C: neither cached nor recorded as failed.
    pub interrupted: bool,
}

/// Build `commits` (none of which is cached), up to `jobs` at once, calling `done` as each
/// finishes. Each job owns one worktree slot and takes a contiguous run of commits, so
/// successive builds in a slot are incremental.
pub fn build_all(
    git_dir: &Path,
    cache: &Cache,
    build: &Build,
    commits: &[ObjectId],
    jobs: usize,
    done: &(dyn Fn(&Outcome) + Sync),
) -> anyhow::Result<Vec<Outcome>> {
    let pristine = stale::pristine_required(cache, build.incremental, build.recipe_hash());
    let _doing = crate::base::interrupt::doing(crate::base::interrupt::Activity::Building);
    let jobs = jobs.clamp(1, commits.len().max(1));
    let chunk = chunk_len(commits.len(), jobs);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .context("cannot start build threads")?;
    let results: Vec<anyhow::Result<Vec<Outcome>>> = pool.install(|| {
        commits
            .chunks(chunk)
            .enumerate()
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|(slot, part)| {
                // gix repositories stay on one thread: each job opens its own.
                let repo = gix::open(git_dir)
                    .with_context(|| format!("cannot open {}", git_dir.display()))?;
                let wt = Worktree::slot(&cache.worktrees(), slot);
                let mut out = Vec::new();
                for &c in part {
                    if crate::base::interrupt::requested() {
                        break;
                    }
                    let o = build_one(&repo, cache, build, &wt, c, pristine)?;
                    if o.result.is_ok() {
                        crate::base::interrupt::kept_build();
                    }
                    done(&o);
                    let stop = o.interrupted;
                    out.push(o);
                    if stop {
                        break;
                    }
                }
                Ok(out)
            })
            .collect()
    });
    let mut all = Vec::new();
    for r in results {
        all.extend(r?);
    }
    Ok(all)
}

/// How [`build_all`] splits `n` commits among `jobs` worktrees: each builds a run of this many
/// of them, in order.
fn chunk_len(n: usize, jobs: usize) -> usize {
    n.div_ceil(jobs.clamp(1, n.max(1))).max(1)
}

/// The commits [`build_all`] is building now, by their index in what it was given, when those
/// marked in `finished` are done: the first unfinished one of each worktree's run.
pub fn in_flight(finished: &[bool], jobs: usize) -> Vec<usize> {
    let chunk = chunk_len(finished.len(), jobs);
    finished
        .chunks(chunk)
        .enumerate()
        .filter_map(|(slot, part)| part.iter().position(|f| !f).map(|i| slot * chunk + i))
        .collect()
}

/// Check out and build one commit in `wt` (emptied first when `pristine`), caching artifacts
/// or recording the failure.
pub fn build_one(
    repo: &gix::Repository,
    cache: &Cache,
    build: &Build,
    wt: &Worktree,
    commit: ObjectId,
    pristine: bool,
) -> anyhow::Result<Outcome> {
    let dest = cache.artifacts(&commit, build.recipe_hash());
    build_into(repo, cache, build, wt, commit, pristine, &dest, true).map(|(o, _)| o)
}

/// [`build_one`] into `dest`; the manifest is written (before the entry goes into place) only
/// when `keep` says this is the commit's cached entry. Returns the manifest of what was built.
#[allow(clippy::too_many_arguments)]
fn build_into(
    repo: &gix::Repository,
    cache: &Cache,
    build: &Build,
    wt: &Worktree,
    commit: ObjectId,
    pristine: bool,
    dest: &Path,
    keep: bool,
) -> anyhow::Result<(Outcome, Option<cas::Manifest>)> {
    let start = Instant::now();
    let recipe = build.recipe_hash();
    fs::create_dir_all(cache.worktrees())?;
    if pristine {
        wt.clear()?;
    }
    let log_path = cache.log(&commit, recipe);
    fs::create_dir_all(log_path.parent().expect("log has a parent"))?;
    let failure = |tail: String| -> anyhow::Result<(Outcome, Option<cas::Manifest>)> {
        if keep {
            record_failure(cache, &commit, recipe, &tail)?;
        }
        Ok((
            Outcome {
                commit,
                result: Err(tail),
                seconds: start.elapsed().as_secs_f64(),
                interrupted: false,
            },
            None,
        ))
    };
    // A commit whose objects are missing (a partial mirror), or whose submodule pin is not in
    // the user's clone, cannot be built, like one that does not compile: the others still are.
    let switched = match wt.switch(repo, commit) {
        Ok(s) => s,
        Err(e) => {
            if let Some(why) = crate::git::worktree::unbuildable(&e) {
                return failure(why);
            }
            return Err(e.context(format!(
                "cannot check out {commit} into {}",
                wt.dir.display()
            )));
        }
    };
    let interrupted = || Outcome {
        commit,
        result: Err("interrupted".into()),
        seconds: start.elapsed().as_secs_f64(),
        interrupted: true,
    };
    let mut executables = Vec::new();
    if let Some(cargo_build) = &build.cargo {
        fs::File::create(&log_path)
            .with_context(|| format!("cannot create {}", log_path.display()))?;
        let mut env: Vec<(String, String)> = build
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        env.push(("PERFBISECT_COMMIT".into(), commit.to_string()));
        env.push((
            "PERFBISECT_CONFIG_DIR".into(),
            build.config_dir.display().to_string(),
        ));
        let run = cargo::Run {
            worktree: &wt.dir,
            env,
            deadline: start + build.timeout,
            timeout: build.timeout,
            log: &log_path,
            scratch: &cache.tmp(),
        };
        match cargo::build(cargo_build, &run)? {
            cargo::Built::Executables(exes) => executables = exes,
            cargo::Built::Failed(why) => {
                return failure(format!("{why}\n{}", process::file_tail(&log_path)))
            }
            cargo::Built::Interrupted => return Ok((interrupted(), None)),
        }
    }
    if let Some(cmd) = &build.command {
        let log = fs::File::create(&log_path)
            .with_context(|| format!("cannot create {}", log_path.display()))?;
        let mut env: Vec<(String, String)> = build
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        env.push(("PERFBISECT_COMMIT".into(), commit.to_string()));
        env.push((
            "PERFBISECT_CONFIG_DIR".into(),
            build.config_dir.display().to_string(),
        ));
        let fin = process::run(Spec {
            command: cmd,
            dir: &wt.dir,
            env,
            timeout: build.timeout,
            output: Output::File(log),
            interrupt: Some(&crate::base::interrupt::REQUESTED),
            kill_leftovers: true,
            own_rss: false,
            extra: Default::default(),
        })?;
        match fin.status {
            Status::Interrupted => return Ok((interrupted(), None)),
            s if !s.success() => {
                let what = if s == Status::TimedOut {
                    format!(
                        "build timed out after {}",
                        humantime::format_duration(build.timeout)
                    )
                } else {
                    format!("build failed ({s})")
                };
                return failure(format!("{what}\n{}", process::file_tail(&log_path)));
            }
            _ => {}
        }
    }
    let mark = Mark {
        started: start,
        pristine: switched.fresh,
        slot: wt.index,
        manifest_of: keep.then_some((&commit, recipe)),
    };
    match copy_artifacts(cache, &wt.dir, &build.artifacts, &executables, dest, mark) {
        Ok(m) => {
            if keep {
                stale::after_build(cache, &commit, recipe, &m);
            }
            Ok((
                Outcome {
                    commit,
                    result: Ok(dest.to_path_buf()),
                    seconds: start.elapsed().as_secs_f64(),
                    interrupted: false,
                },
                Some(m),
            ))
        }
        Err(ArtifactError::Missing(a)) => failure(format!(
            "artifact `{a}` does not exist after the build\n{}",
            process::file_tail(&log_path)
        )),
        Err(ArtifactError::Io(e)) => Err(e),
    }
}

enum ArtifactError {
    Missing(String),
    Io(anyhow::Error),
}

/// How a build's manifest describes it, and whose cached entry it is (`None`: a build to
/// compare with, whose manifest is not written).
struct Mark<'a> {
    pristine: bool,
    slot: usize,
    /// When the build started: its time goes into the manifest.
    started: Instant,
    manifest_of: Option<(&'a ObjectId, u64)>,
}

/// Copy artifacts (and the executables cargo reported, each under its target's name) into a
/// temp dir, then rename it into place: a crash or a full disk leaves no half entry.
fn copy_artifacts(
    cache: &Cache,
    worktree: &Path,
    artifacts: &[String],
    executables: &[(String, PathBuf)],
    dest: &Path,
    mark: Mark<'_>,
) -> Result<cas::Manifest, ArtifactError> {
    let tmp_root = cache.tmp();
    fs::create_dir_all(&tmp_root)
        .and_then(|()| fs::create_dir_all(dest.parent().expect("artifacts have a parent")))
        .map_err(|e| {
            ArtifactError::Io(anyhow::Error::new(e).context("cannot create cache dirs"))
        })?;
    let tmp = tempfile::Builder::new()
        .prefix("artifacts.")
        .tempdir_in(&tmp_root)
        .map_err(|e| ArtifactError::Io(e.into()))?;
    for a in artifacts {
        let src = worktree.join(a);
        if !src.exists() {
            return Err(ArtifactError::Missing(a.clone()));
        }
        let to = tmp.path().join(a);
        copy_tree(worktree, &src, &to).map_err(|e| {
            ArtifactError::Io(e.context(format!("cannot copy artifact `{a}` into the cache")))
        })?;
    }
    for (name, src) in executables {
        if !src.is_file() {
            return Err(ArtifactError::Missing(name.clone()));
        }
        let to = tmp.path().join(name);
        copy_tree(worktree, src, &to).map_err(|e| {
            ArtifactError::Io(e.context(format!("cannot copy executable `{name}` into the cache")))
        })?;
        strip_debug(&to);
    }
    // Into the object store, and the manifest before the entry: an entry in place always has
    // its manifest (a crash in between leaves a manifest of a build that is missing, which
    // the next build of that commit rewrites).
    let mut manifest = cas::intern(cache, tmp.path()).map_err(ArtifactError::Io)?;
    manifest.pristine = mark.pristine;
    manifest.slot = Some(mark.slot);
    manifest.build_ms = u64::try_from(mark.started.elapsed().as_millis()).ok();
    if let Some((commit, recipe)) = mark.manifest_of {
        cas::write_manifest(cache, commit, recipe, &manifest).map_err(ArtifactError::Io)?;
    }
    let path = tmp.keep();
    if let Err(e) = fs::rename(&path, dest) {
        let _ = fs::remove_dir_all(&path);
        if dest.is_dir() {
            // Another process cached the same build first; theirs is as good as ours.
            return Ok(manifest);
        }
        return Err(ArtifactError::Io(
            anyhow::Error::new(e).context(format!("cannot move artifacts to {}", dest.display())),
        ));
    }
    crate::store::try_sync_dir(dest.parent().expect("artifacts have a parent"))
        .map_err(ArtifactError::Io)?;
    Ok(manifest)
}

/// Drop the debug information of a cached cargo executable (bench profiles carry tens of MB
/// of it per commit), keeping its symbol table: what a profile of the culprit needs to name
/// functions. Best effort: without binutils' `strip`, the copy stays whole.
fn strip_debug(exe: &Path) {
    let _ = std::process::Command::new("strip")
        .arg("--strip-debug")
        .arg(exe)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
}

/// Copy the artifact `src` (a file or a directory) of the worktree `root` to `to`. A symbolic
/// link is copied as what it points to (a `libfoo.so` link to its versioned library) only when
/// that lies inside the worktree: one pointing out of it (`/etc`, `~/.ssh`, `../..`) would
/// pull a file from anywhere on the machine into the cache, so it is an error naming it.
fn copy_tree(root: &Path, src: &Path, to: &Path) -> anyhow::Result<()> {
    if let Some(p) = to.parent() {
        fs::create_dir_all(p)?;
    }
    if fs::symlink_metadata(src)?.file_type().is_symlink() {
        let target = fs::canonicalize(src)
            .with_context(|| format!("{} is a link to nothing", src.display()))?;
        let inside = fs::canonicalize(root).is_ok_and(|r| target.starts_with(r));
        if !inside {
            anyhow::bail!(
                "{} is a symbolic link to {}, outside the worktree: perfbisect copies only the \
                 build's own files into the cache",
                src.display(),
                target.display()
            );
        }
    }
    if src.is_dir() {
        fs::create_dir_all(to)?;
        for e in fs::read_dir(src)? {
            let e = e?;
            copy_tree(root, &e.path(), &to.join(e.file_name()))?;
        }
    } else {
        fs::copy(src, to)?;
        fs::File::open(to)?.sync_all()?;
    }
    Ok(())
}

fn record_failure(cache: &Cache, commit: &ObjectId, recipe: u64, tail: &str) -> anyhow::Result<()> {
    let path = cache.failed(commit, recipe);
    let dir = path.parent().expect("failed records have a parent");
    fs::create_dir_all(dir)?;
    // Written in tmp/ (cleaned by `cache gc`), so a crash leaves no stray file in failed/.
    fs::create_dir_all(cache.tmp())?;
    let mut tmp = crate::store::temp_file(&cache.tmp(), "failed.")?;
    std::io::Write::write_all(&mut tmp, tail.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Empty every worktree slot of `cache`: the next build in each starts from a clean checkout.
pub fn clear_worktrees(cache: &Cache) -> anyhow::Result<()> {
    let root = cache.worktrees();
    if let Ok(entries) = fs::read_dir(&root) {
        for e in entries.flatten() {
            if let Some(i) = e.file_name().to_str().and_then(|n| n.parse::<usize>().ok()) {
                Worktree::slot(&root, i).clear()?;
            }
        }
    }
    Ok(())
}

/// Build `commit` again in a clean worktree and put that build in place of the cached one,
/// after the machine changed (a new compiler: what the cache kept was built by the old one).
/// Every worktree slot is emptied first, so the builds after it start from this machine's
/// objects too. The samples of the build it replaces stay as they are (measurements of the
/// machine before), and a failed rebuild records nothing and leaves the cached build alone.
pub fn rebuild_fresh(
    git_dir: &Path,
    cache: &Cache,
    build: &Build,
    commit: ObjectId,
) -> anyhow::Result<Outcome> {
    let recipe = build.recipe_hash();
    let root = cache.worktrees();
    clear_worktrees(cache)?;
    let repo = gix::open(git_dir).with_context(|| format!("cannot open {}", git_dir.display()))?;
    fs::create_dir_all(cache.tmp())?;
    let scratch = tempfile::Builder::new()
        .prefix("rebuild.")
        .tempdir_in(cache.tmp())
        .context("cannot create a directory for a rebuild")?;
    let dest = scratch.path().join("entry");
    let wt = Worktree::slot(&root, 0);
    let _doing = crate::base::interrupt::doing(crate::base::interrupt::Activity::Building);
    let (mut outcome, built) = build_into(&repo, cache, build, &wt, commit, true, &dest, false)?;
    if let (Ok(_), Some(m)) = (&outcome.result, built) {
        let entry = cache.artifacts(&commit, recipe);
        cas::write_manifest(cache, &commit, recipe, &m)?;
        stale::drop_entry(cache, &entry);
        fs::rename(&dest, &entry)
            .with_context(|| format!("cannot move artifacts to {}", entry.display()))?;
        forget_failure(cache, build, &commit);
        outcome.result = Ok(entry);
    }
    Ok(outcome)
}

/// Forget a failed build so it is tried again.
pub fn forget_failure(cache: &Cache, build: &Build, commit: &ObjectId) {
    let _ = fs::remove_file(cache.failed(commit, build.recipe_hash()));
}

/// What comparing a cached incremental build with a pristine build of the same commit showed.
#[derive(Debug)]
pub enum Check {
    /// Built pristine in the first place (or compared before): nothing to do.
    Pristine,
    /// Cargo tracks its dependencies by content: its incremental builds are trusted.
    Trusted,
    /// Not cached (or no manifest): nothing to compare.
    NotCached,
    /// The pristine build failed: the cached one stays as it was, unconfirmed.
    Unconfirmed(String),
    /// The same bytes: the incremental build was right (now recorded as pristine).
    Same,
    /// Other bytes: the pristine build, kept aside (nothing in the cache replaced yet) with
    /// what differs, for the caller to measure beside the incremental one and then settle
    /// ([`Rebuilt::keep_incremental`] or [`Rebuilt::replace`]). Dropped unsettled (a check
    /// beside a measurement that may be running the build), it changes nothing: the check
    /// after the search makes it again.
    Differs(Box<Rebuilt>),
}

/// A pristine build of a commit whose bytes differ from its cached incremental build's.
#[derive(Debug)]
pub struct Rebuilt {
    pub commit: ObjectId,
    /// The cached incremental build's manifest, and the pristine build's.
    pub old: cas::Manifest,
    pub new: cas::Manifest,
    /// What differs: files, the first differing offset and its section ([`diff::describe`]).
    pub what: String,
    /// The cached incremental build's folder.
    pub cached: PathBuf,
    /// Holds the pristine build's folder (`entry`) until it is settled.
    scratch: tempfile::TempDir,
}

impl Rebuilt {
    /// The pristine build's files.
    pub fn entry(&self) -> PathBuf {
        self.scratch.path().join("entry")
    }

    /// The two builds measured the same: the bytes that differ do not change what the tests
    /// see, so the incremental build stands, recorded as checked (as a pristine one is, and
    /// never rebuilt to be checked again); the pristine build goes.
    pub fn keep_incremental(self, cache: &Cache, build: &Build) -> anyhow::Result<()> {
        let mut m = self.old;
        m.pristine = true;
        cas::write_manifest(cache, &self.commit, build.recipe_hash(), &m)
    }

    /// The two builds measured otherwise (or nothing measured them): the incremental build
    /// was stale. The pristine build takes the entry's place; the stale one's samples never
    /// count again.
    pub fn replace(self, cache: &Cache, build: &Build) -> anyhow::Result<()> {
        let recipe = build.recipe_hash();
        let entry = cache.artifacts(&self.commit, recipe);
        stale::mark_stale(cache, &self.commit, recipe, &self.old.digest)?;
        cas::write_manifest(cache, &self.commit, recipe, &self.new)?;
        stale::drop_entry(cache, &entry);
        fs::rename(self.scratch.path().join("entry"), &entry)
            .with_context(|| format!("cannot move artifacts to {}", entry.display()))?;
        Ok(())
    }
}

/// One pristine check on a thread beside others (or, `measured`, beside a measurement that
/// may be running the build): the check and, when it rebuilt, how long that took (said when
/// it starts, unless `say` is off). Other bytes replace nothing ([`Check::Differs`]): the
/// caller settles them, or drops them for the check after the search.
pub fn check_beside(
    git_dir: &Path,
    cache: &Cache,
    build: &Build,
    id: ObjectId,
    say: bool,
    measured: bool,
) -> (anyhow::Result<Check>, Option<std::time::Duration>) {
    let began: std::cell::Cell<Option<Instant>> = std::cell::Cell::new(None);
    let rebuilding = || {
        began.set(Some(Instant::now()));
        if say {
            eprintln!(
                "perfbisect: rebuilding {} in a clean worktree, to check its incremental build \
                 (a pristine build), beside the {}",
                crate::git::short(&id),
                if measured { "measurement" } else { "others" }
            );
        }
    };
    let check = check_pristine(git_dir, cache, build, id, &rebuilding);
    (check, began.get().map(|t| t.elapsed()))
}

/// Rebuild `commit` in a clean worktree at the path of the slot it was built in and compare
/// its artifacts with the cached incremental build's (see [`stale`]). The same path, not any
/// free slot: a build that records where it was built (a debug build's `__FILE__` and DWARF
/// paths) is the same bytes only there. `rebuilding` is called when that rebuild starts (not
/// when there is nothing to compare). Other bytes replace nothing: [`Check::Differs`] holds
/// the pristine build for the caller to settle.
pub fn check_pristine(
    git_dir: &Path,
    cache: &Cache,
    build: &Build,
    commit: ObjectId,
    rebuilding: &dyn Fn(),
) -> anyhow::Result<Check> {
    let recipe = build.recipe_hash();
    if build.cargo.is_some() {
        return Ok(Check::Trusted);
    }
    let entry = cache.artifacts(&commit, recipe);
    let Some(old) = cas::read_manifest(cache, &commit, recipe).filter(|_| entry.is_dir()) else {
        return Ok(Check::NotCached);
    };
    if old.pristine {
        return Ok(Check::Pristine);
    }
    let repo = gix::open(git_dir).with_context(|| format!("cannot open {}", git_dir.display()))?;
    let wt = Worktree::slot(&cache.worktrees(), old.slot.unwrap_or(0));
    fs::create_dir_all(cache.tmp())?;
    let scratch = tempfile::Builder::new()
        .prefix("pristine.")
        .tempdir_in(cache.tmp())
        .context("cannot create a directory for a pristine build")?;
    let dest = scratch.path().join("entry");
    rebuilding();
    let (outcome, built) = build_into(&repo, cache, build, &wt, commit, true, &dest, false)?;
    let new = match (outcome.result, built) {
        (Ok(_), Some(m)) => m,
        (Err(why), _) => return Ok(Check::Unconfirmed(why)),
        (Ok(_), None) => return Ok(Check::Unconfirmed("no artifacts".into())),
    };
    if new.digest == old.digest {
        let mut m = old;
        m.pristine = true;
        cas::write_manifest(cache, &commit, recipe, &m)?;
        return Ok(Check::Same);
    }
    let what = diff::describe(&old, &entry, &new, &dest);
    Ok(Check::Differs(Box::new(Rebuilt {
        commit,
        old,
        new,
        what,
        cached: entry,
        scratch,
    })))
}

#[cfg(test)]
mod tests {
    use super::in_flight;

    #[test]
    fn in_flight_is_the_first_unfinished_commit_of_each_worktree() {
        // One worktree: the oldest unfinished commit only.
        assert_eq!(in_flight(&[true, true, false, false], 1), vec![2]);
        // Two worktrees of 3 and 2 commits; the second is done.
        assert_eq!(in_flight(&[true, false, false, true, true], 2), vec![1]);
        assert_eq!(in_flight(&[false; 5], 2), vec![0, 3]);
        // More jobs than commits: every commit at once.
        assert_eq!(in_flight(&[false, true], 4), vec![0]);
        assert!(in_flight(&[true; 3], 2).is_empty());
        assert!(in_flight(&[], 2).is_empty());
    }
}
