//! The workspace itself: opening the repository, config and cache (and its lock), this
//! machine's fingerprint, and the notes and warnings a command says.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::base::progress::Progress;
use crate::config::{Config, Test};
use crate::git::Repo;
use crate::pipeline::fingerprint::Fingerprint;
use crate::pipeline::samples::Samples;
use crate::store::cache::{Cache, CacheLock};

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
}
