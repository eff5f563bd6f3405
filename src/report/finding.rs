//! One culprit as every view states it: the [`Finding`], assembled once from a finished search
//! ([`super::find::FindReport::finding`]). `find --format json` (and `report`'s JSON) serialize it as it is; the
//! text, the Markdown report and the issue body read their culprit's commits, levels, change,
//! evidence and commands from it. A field added here is in the JSON at once, and one line in
//! each renderer that should say it.

use serde::Serialize;

use crate::bisect::Culprit;
use crate::git::CommitInfo;

/// A level of a culprit: the median of `n` runs (or, after a window-adjusted change, the
/// parent's level moved by it).
#[derive(Debug, Clone, Serialize)]
pub struct Level {
    pub median: f64,
    pub n: usize,
}

/// One culprit (or best guess) of a search, as `find`, `report`, `triage`'s issue and the JSON
/// state it (src/guide/json.md, `#culprit`).
#[derive(Debug, Clone, Serialize)]
pub struct Finding<'a> {
    /// The search's own record of it: positions among the report's commits, for the views
    /// that place it among them (the rows around it, its candidates).
    #[serde(skip)]
    pub culprit: &'a Culprit,
    /// The first commit at the new level.
    #[serde(skip)]
    pub at: &'a CommitInfo,
    /// The last commit measured at the old level.
    #[serde(skip)]
    pub last_old: &'a CommitInfo,
    pub commit: String,
    pub subject: String,
    pub author: String,
    pub date: String,
    pub parent: String,
    pub before: Level,
    pub after: Level,
    pub rel_change: f64,
    /// The 95 % interval of `rel_change`, when the runs allow one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rel_change_interval: Option<[f64; 2]>,
    /// Windows of time in which the `before` and `after` runs were taken side by side (0:
    /// every sample pooled, or exact values); the change is estimated window by window.
    pub windows: usize,
    pub p_value: f64,
    pub candidates: Vec<String>,
    pub verified: bool,
    /// Runs of parent and culprit taken interleaved to confirm the step (both sides, each
    /// run once; 0: confirmed by exact values, or not confirmed) and their windows of time.
    pub reruns: usize,
    pub rerun_windows: usize,
    pub kind: &'static str,
    /// The merge commit that brought this culprit into the searched range's first-parent chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge: Option<String>,
    /// Why this culprit moved (the profile's answer, or `{"unavailable": why}`), when profiled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<serde_json::Value>,
    /// The commands that reproduce it, as pasted into a shell in the repository: the
    /// before/after comparison, and a `git bisect run` over the step.
    pub reproduce: Vec<String>,
}

impl Finding<'_> {
    /// The finding as `triage`'s ledger keeps it for `test` (a test of `unit`, compared as
    /// exact values where `deterministic`), with the functions its profile moved most: one
    /// record a test, the candidates kept only where several commits may be the culprit.
    pub fn ledger_step(
        &self,
        test: &crate::config::Test,
        deterministic: bool,
        why: Vec<String>,
    ) -> crate::store::findings::TestStep {
        crate::store::findings::TestStep {
            test: test.name.clone(),
            parent: self.parent.clone(),
            before: self.before.median,
            after: self.after.median,
            rel_change: self.rel_change,
            interval: self.rel_change_interval.map(|[lo, hi]| (lo, hi)),
            p_value: self.p_value,
            deterministic,
            runs: (self.before.n, self.after.n),
            unit: test.unit(),
            kind: self.kind.into(),
            why,
            posted: false,
            candidates: if self.candidates.len() > 1 {
                self.candidates.clone()
            } else {
                Vec::new()
            },
            reruns: self.reruns,
            rerun_windows: self.rerun_windows,
        }
    }
}
