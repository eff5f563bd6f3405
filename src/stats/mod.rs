//! Pure statistics of perfbisect: summaries, two-sample tests, trend, down-sampling,
//! change-point detection and the `detect --input` CSV reader. No I/O beyond parsing text.
//!
//! **Where a step is decided** (a map: the parts live where their inputs are):
//! - *Is there a step between two sets of runs?* The pair rule: [`compare::differ`] and its
//!   kin (rank test, t test on pooled noise, exact values, strata), used by the search through
//!   [`crate::bisect::classify`] (a probe against the two levels: old, new or the grey zone) and
//!   confirmed by `bisect/verify.rs` (parent against culprit again, interleaved, at a
//!   halved α) before `bisect/culprit.rs` assembles the verdict.
//! - *How big is it?* [`step`]: the one size every view reads, window by window, with its
//!   interval.
//! - *Where in a history did the level move?* The detector, [`changepoint`]: its model
//!   (`model`, `strata`, `effects`), the segmentation (`segment`) and the decision of each
//!   boundary (`confirm`: certain, undecided with its reason, or nothing).
//! - *What do runs taken side by side say of a detected step?* [`crate::pipeline::rows`]:
//!   `side_by_side` restates a step's size and p from the pairs measured together, and moves a
//!   step whose side-by-side runs do not tell the sides apart to the undecided ones.
//! - *How is it said?* [`crate::report::steps`] (an undecided step's reason, a step's span,
//!   exact values), and [`crate::report::finding::Finding`] for a search's culprit.

pub mod changepoint;
pub mod compare;
pub mod drift;
pub mod input;
pub mod lttb;
pub mod step;
pub mod summary;
#[cfg(test)]
pub(crate) mod testing;
pub mod threshold;
pub mod trend;

pub use changepoint::{detect, detect_all, ChangePoint, Detection, Options, Undecided};
pub use compare::{
    bootstrap_median_ratio, differ, differ_declared, differ_strata, differ_t, mann_whitney_u,
    min_detectable_change, min_detectable_change_t, pooled_rel_var, pooled_t, repeats_needed,
    robust_cv, stratified_rank_test, welch_t, Difference, PooledNoise, TestResult,
};
pub use input::{read_series_csv, InputError, Series};
pub use lttb::lttb;
pub use step::Step;
pub use summary::{median, percentile, summarize, Summary};
pub use threshold::{rel_change, Threshold};
pub use trend::{mann_kendall, mann_kendall_by, Trend, TrendDirection};
