//! Pure statistics of perfbisect: summaries, two-sample tests, trend, down-sampling,
//! change-point detection and the `detect --input` CSV reader. No I/O beyond parsing text.

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
