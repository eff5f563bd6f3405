//! What `triage` is asked for and what it did, and the clock its findings are stamped with.

use std::time::Duration;

use crate::report::triage::{Left, Posted};
use crate::store::findings::Findings;

/// What `triage` was asked for.
pub struct Options<'a> {
    /// `all`, or test names separated by commas.
    pub tests: &'a str,
    /// The history to look at (default: every stored commit of the tests, up to HEAD).
    pub range: Option<&'a str>,
    pub jobs: usize,
    /// Budget of a nightly job: no new search starts once this many builds were made or this
    /// much time went by; what is left is said and kept for the next run.
    pub max_builds: Option<usize>,
    pub max_time: Option<Duration>,
    /// Post to this repository (`OWNER/REPO`) with `gh`.
    pub attach: Option<String>,
    pub label: String,
    /// Say what would be posted, post nothing.
    pub dry_run: bool,
    /// The global options to repeat in reproduce commands.
    pub invocation: String,
}

/// What one `triage` did.
pub struct Outcome {
    /// Every finding kept, after this run.
    pub findings: Findings,
    /// The commits whose finding is new or changed this run.
    pub changed: Vec<String>,
    pub left: Vec<Left>,
    pub posted: Vec<Posted>,
    /// Posts that failed (left for the next run).
    pub failures: Vec<String>,
    /// Changes of the machine said this run (each once), with what they did to each test.
    pub eras: Vec<crate::pipeline::eras::Change>,
    /// Searches made, builds performed, runs stored, seconds.
    pub searches: usize,
    pub builds: usize,
    pub runs: usize,
    pub seconds: f64,
}

/// Now, in seconds since the Unix epoch: when a finding changed.
pub(super) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
