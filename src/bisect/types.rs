//! The vocabulary of the search: its knobs ([`Params`]), the samples it is handed
//! ([`Stored`]), what it asks for ([`Action`]), what it concludes ([`Outcome`], [`Culprit`],
//! [`Class`]), and the constants of its policy (see the module above for the policy itself).

// What every file of the search names, brought in once (the files `use super::types::*`).
pub(super) use crate::base::text::fmt_num;
pub(super) use crate::stats::{self, Threshold};
pub(super) use serde::{Deserialize, Serialize};

/// Below this p-value a comparison that is not yet significant is worth more runs rather than a
/// verdict: the band between α and this value is Pinpoint's "unknown, collect more data".
pub(super) const PROMISING_P: f64 = 0.25;
/// Share of the whole step a probe must sit away from a side before a not-yet-significant
/// difference from that side earns more runs (a possible second step).
pub(super) const GREY_SHARE: f64 = 0.25;
/// Default cost of one build, in units of one measurement round of `repeats` runs.
pub(super) const DEFAULT_BUILD_COST: f64 = 4.0;
/// `next_action` calls without any result fed back before the search gives up, so a caller that
/// silently drops failed runs cannot loop forever.
pub(super) const MAX_STALLS: usize = 64;
/// Fixed so that `classify` is deterministic.
pub(super) const BOOTSTRAP_SEED: u64 = 0x7065_7266_6269_7365;
pub(super) const BOOTSTRAP_RESAMPLES: usize = 2000;
/// A second step found beside a probe is searched only when it moves by this many times the
/// threshold or more ([`super::Search::beside_a_minor_step`]).
pub(super) const MINOR_STEP: f64 = 1.5;

/// Degrees of freedom a counted metric's pooled noise needs before one run a probe is enough:
/// the ends' two runs give 1 each, the first probe's window (two runs each of three commits)
/// 3 more.
pub(super) const POOLED_DF: usize = 4;
/// Times a sub-range whose parent and culprit turned out on one level (or whose re-runs did
/// not confirm them) backs off to the bounds before them and is searched again.
pub(super) const MAX_BACKOFFS: u32 = 3;
/// `step` without `--new` calls a commit new-like only at α divided by this: `git bisect`
/// trusts each of its ⌈log2 N⌉ answers for good.
pub(super) const STEP_STRICTNESS: f64 = 10.0;
/// Power asked of the verification re-runs when sizing them.
pub(super) const VERIFY_POWER: f64 = 0.9;
/// Most runs of one commit the time budget gives (a build of minutes against runs of
/// microseconds would give millions): beyond it `--max-runs` says more.
pub const MAX_BUDGET: usize = 1000;

/// Knobs of the search; the caller takes them from the test's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// Significance level of every two-sample test (default 0.01).
    pub alpha: f64,
    /// Smallest change that matters: two samples differ only when their medians are this far apart.
    pub threshold: Threshold,
    /// Runs per probe at first (default 5).
    pub repeats: usize,
    /// Most runs any one commit gets before its classification is given up (default 30).
    pub max_repeats: usize,
    /// Zero-spread metric (struct size, allocation count): one run per commit and plain
    /// comparisons, like `git bisect`.
    pub deterministic: bool,
    /// Compare only samples taken side by side: every decision of a noisy search measures the
    /// commits it compares in one window of interleaved rounds (default). Off, each commit is
    /// measured back to back on its own and all its samples are pooled, whenever they were
    /// taken (the behaviour drift fools; for benchmarks).
    pub interleave: bool,
    /// A count whose runs barely vary (instructions): when both ends' runs spread by less than
    /// a tenth of the threshold, commits are compared as exact values (one run each), a move
    /// counting only beyond that spread.
    #[serde(default)]
    pub counted: bool,
    /// The relative spread within which exact comparisons call two values equal (set by the
    /// search for a counted metric; 0: only equal values are).
    #[serde(default)]
    pub tolerance: f64,
    /// Most runs any one commit gets while a decision's evidence still straddles the
    /// threshold (`--max-runs`, the test's `max_runs`): the budget, fixed. `None`: as many
    /// as fit in the time of one build of the commits compared
    /// ([`super::Policy::set_run_budget`]), never fewer than `max_repeats`.
    #[serde(default)]
    pub max_runs: Option<usize>,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            alpha: 0.01,
            threshold: Threshold::Relative(0.0),
            repeats: 5,
            max_repeats: 30,
            deterministic: false,
            interleave: true,
            counted: false,
            tolerance: 0.0,
            max_runs: None,
        }
    }
}

impl Params {
    /// Out-of-range knobs would make the search loop or never decide; clamp them instead of failing.
    pub(super) fn sanitized(&self) -> Params {
        let alpha = if self.alpha.is_finite() && self.alpha > 0.0 && self.alpha < 1.0 {
            self.alpha
        } else {
            0.01
        };
        let repeats = self.repeats.max(1);
        // A fixed budget below `max_repeats` caps the doubling too.
        let max_runs = self.max_runs.map(|n| n.max(1));
        let repeats = max_runs.map_or(repeats, |n| repeats.min(n));
        let max_repeats = self.max_repeats.max(repeats);
        Params {
            alpha,
            threshold: self.threshold,
            repeats,
            max_repeats: max_runs.map_or(max_repeats, |n| max_repeats.min(n)),
            deterministic: self.deterministic,
            interleave: self.interleave,
            counted: self.counted,
            tolerance: if self.tolerance.is_finite() && self.tolerance > 0.0 {
                self.tolerance
            } else {
                0.0
            },
            max_runs,
        }
    }
}

/// A stored sample as a search sees it: its value (NaN for a failed run) and the window of time
/// and moment it was taken in ([`crate::store::Sample::window`]; 0: none, an imported row).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stored {
    pub value: f64,
    pub window: u64,
    pub moment: u32,
    /// A sample of another commit whose build is byte-identical (it stands for this one).
    #[serde(default)]
    pub shared: bool,
}

/// What the caller should do next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Action {
    /// Run the test `runs` more times on `pos` (building it first if needed), back to back,
    /// then call [`Search::add_samples`] (a failed run counts as a NaN sample) or
    /// [`Search::mark_unbuildable`].
    Measure { pos: usize, runs: usize },
    /// Run `positions` side by side, `runs` more runs of each in interleaved rounds (one run of
    /// each per round), building them first if needed; in `window` (its id and the first
    /// round's moment) when it continues one, else in a new window. Then call
    /// [`Search::add_window`].
    Window {
        positions: Vec<usize>,
        runs: usize,
        window: Option<(u64, u32)>,
    },
    /// Run `parent` and `culprit` interleaved (ABAB…) `runs` times each, then call
    /// [`Search::record_verify`].
    Verify {
        parent: usize,
        culprit: usize,
        runs: usize,
    },
    /// The search is over; further calls return the same outcome.
    Done(Outcome),
}

/// The verdict of a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Outcome {
    /// The ends do not differ.
    NoChange {
        /// Median of the old end.
        before: f64,
        /// Median of the new end.
        after: f64,
        /// p-value of the ends' two-sample test.
        p_value: f64,
        /// Smallest relative change this noise and these repeats could have detected.
        min_detectable: f64,
    },
    /// Commits that moved the metric, largest |effect| first.
    Culprits(Vec<Culprit>),
    /// No commit could be named with confidence.
    Inconclusive {
        /// What was seen, for the report.
        reason: String,
        /// The most likely culprit, unverified; its `candidates` list every commit still in doubt.
        best_guess: Option<Culprit>,
    },
}

impl Outcome {
    /// The `verdict` field of `find --format json`: `culprit`, `no-change` or `inconclusive`.
    pub fn verdict(&self) -> &'static str {
        match self {
            Outcome::NoChange { .. } => "no-change",
            Outcome::Culprits(_) => "culprit",
            Outcome::Inconclusive { .. } => "inconclusive",
        }
    }
}

/// A commit that moved the metric, with the evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Culprit {
    /// The first measured commit at the new level.
    pub pos: usize,
    /// The last measured commit at the old level: `pos - 1` unless unbuildable commits sit between.
    pub parent: usize,
    /// Every position that may be the culprit (`parent+1..=pos`): more than one only when
    /// unbuildable neighbours make it ambiguous.
    pub candidates: Vec<usize>,
    /// Median of the runs of `parent` taken side by side with `pos` (the windows of time
    /// holding both; all their samples when the search pools them).
    pub before: f64,
    /// The level of `pos`: the median of its runs in the same windows, or with several
    /// windows `before` moved by `rel_change` (so the levels always give the change).
    pub after: f64,
    /// Runs behind `before`.
    pub n_before: usize,
    /// Runs behind `after`.
    pub n_after: usize,
    /// The change, estimated window by window ([`crate::stats::step`]): always
    /// `(after - before) / |before|`.
    pub rel_change: f64,
    /// 95 % interval of `rel_change` (`None` when the runs are too few to resample).
    #[serde(default)]
    pub interval: Option<(f64, f64)>,
    /// Windows of time the runs behind `before` and `after` were taken in side by side (0: the
    /// search pooled every sample, `[measure] interleave = false`, or compared exact values).
    #[serde(default)]
    pub windows: usize,
    /// p-value of parent vs culprit over all their samples (0 or 1 for deterministic metrics).
    pub p_value: f64,
    /// Whether the search confirmed the difference (always true in [`Outcome::Culprits`];
    /// false in a best guess): by `reruns`, or for exact values by equal runs on each side.
    pub verified: bool,
    /// Runs of parent and culprit (both sides, each run once) taken interleaved to verify the
    /// step, by this search or an earlier one over the same cache; 0 when it was confirmed
    /// without them (exact values already run twice a side) or not confirmed.
    #[serde(default)]
    pub reruns: usize,
    /// Windows of time those re-runs were taken in.
    #[serde(default)]
    pub rerun_windows: usize,
}

/// How a probe compares with the old (and new) side, for `git bisect run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Class {
    /// At the old level: `git bisect` exit code 0.
    OldLike,
    /// Moved away from the old level: exit code 1.
    NewLike,
    /// Cannot tell yet: more runs, or exit code 125 once `max_repeats` is reached.
    Unknown,
}

impl Class {
    /// The `git bisect run` exit code: 0 old, 1 new, 125 cannot tell (skip).
    pub fn exit_code(self) -> i32 {
        match self {
            Class::OldLike => 0,
            Class::NewLike => 1,
            Class::Unknown => 125,
        }
    }
}
