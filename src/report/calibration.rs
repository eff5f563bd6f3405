//! What `calibrate` prints: the noise of a test on this machine, the repeats its threshold
//! needs, and each way of measuring it side by side.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::config::Test;
use crate::git::CommitInfo;

use crate::base::text::{count, fmt_num};

/// What a calibration found; stored as `cache/calibration/<test>.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    pub test: String,
    pub commit: String,
    pub runs: usize,
    pub failed: usize,
    pub median: f64,
    /// Robust coefficient of variation: 1.4826 MAD / median.
    pub noise_cv: f64,
    /// Classic std dev as % of mean.
    pub std_dev_pct: f64,
    /// Share of runs more than 3.5 robust sigmas from the median.
    pub outlier_rate: f64,
    /// Mann-Kendall over the run order: p-value and Sen's slope as a share of the median per run.
    pub drift_p: Option<f64>,
    pub drift_per_run: Option<f64>,
    /// The test's threshold as a relative change.
    pub threshold: f64,
    /// Smallest relative change `repeats` runs per side detect at alpha.
    pub detectable_with_repeats: f64,
    /// Runs per side needed to detect the threshold with 95 % power at alpha.
    pub repeats_needed: usize,
    /// Each metric measured here (the test's own, wall time, instructions): its spread, its
    /// drift over the runs, and the runs a decision about the threshold needs with it.
    #[serde(default)]
    pub metrics: Vec<MetricNoise>,
}

/// The noise of one way of measuring the test's command.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MetricNoise {
    /// `wall`, `instructions` or the test's own metric.
    pub metric: String,
    /// What produced it (`test`: the test's runs; a counter's name).
    pub source: String,
    pub runs: usize,
    pub median: f64,
    pub noise_cv: f64,
    /// (max - min) / median over the runs.
    pub spread: f64,
    /// Mann-Kendall over the run order, and the range of the medians of five blocks of runs
    /// in time (what the machine's drift moved, relative to the median).
    pub drift_p: Option<f64>,
    pub drift_range: f64,
    /// Runs per side a decision about the threshold needs (95 % power at alpha); 1 when the
    /// spread is under a tenth of the threshold and values are compared as exact.
    pub runs_needed: usize,
}

/// The text of a calibration of `test` on `info` (`head`: no REV was given, HEAD was used);
/// `other_note` says why the other way of measuring was not measured.
pub fn text(
    cal: &Calibration,
    test: &Test,
    info: &CommitInfo,
    head: bool,
    other_note: Option<&str>,
) -> String {
    let threshold = cal.threshold;
    let mut o = String::new();
    let unit = if test.unit().is_empty() {
        String::new()
    } else {
        format!(" {}", test.unit())
    };
    writeln!(
        o,
        "{}: {} A/A runs of {} {}{}",
        test.name,
        cal.runs,
        info.short(),
        info.subject,
        if head { " (HEAD: no REV given)" } else { "" }
    )
    .unwrap();
    writeln!(o,
        "median {}{unit}, noise {:.2} % (robust, MAD), std dev {:.2} % of mean, outliers {:.1} % of runs",
        fmt_num(cal.median),
        cal.noise_cv * 100.0,
        cal.std_dev_pct,
        cal.outlier_rate * 100.0
    ).unwrap();
    if let (Some(p), Some(s)) = (cal.drift_p, cal.drift_per_run) {
        let verdict = if p < test.alpha {
            "DRIFT: the machine's state changes during runs"
        } else {
            "no drift"
        };
        writeln!(
            o,
            "drift over the runs: {:+.4} % per run, p = {:.3}: {verdict}",
            s * 100.0,
            p
        )
        .unwrap();
    }
    writeln!(o,
        "with repeats = {} a change of {:.2} % or more is detectable at alpha {}; the threshold is {:.2} %",
        test.repeats,
        cal.detectable_with_repeats * 100.0,
        test.alpha,
        threshold * 100.0
    ).unwrap();
    writeln!(
        o,
        "repeats needed to detect the threshold with 95 % power: {}{}",
        cal.repeats_needed,
        if cal.repeats_needed > test.repeats {
            " (raise `repeats` or the threshold)"
        } else {
            ""
        }
    )
    .unwrap();
    if cal.failed > 0 {
        writeln!(o, "{} failed", count(cal.failed, "run")).unwrap();
    }
    writeln!(
        o,
        "for a decision about the threshold ({:.2} %), measured here:",
        threshold * 100.0
    )
    .unwrap();
    writeln!(
        o,
        "  {:<14} {:>5} {:>14} {:>9} {:>9} {:>10}  runs per side a decision needs",
        "metric", "runs", "median", "noise", "spread", "drift"
    )
    .unwrap();
    for m in &cal.metrics {
        let needed = if m.runs_needed == 1 && m.spread <= threshold / 10.0 {
            "1 (spread under a tenth of the threshold: compared as exact)".to_string()
        } else if m.runs_needed == usize::MAX {
            "no number of runs (no threshold)".to_string()
        } else if m.runs_needed > test.max_repeats {
            format!(
                "{} (more than max_repeats, {})",
                m.runs_needed, test.max_repeats
            )
        } else {
            m.runs_needed.to_string()
        };
        writeln!(
            o,
            "  {:<14} {:>5} {:>14} {:>8.3}% {:>8.3}% {:>9.3}%  {needed}{}",
            m.metric,
            m.runs,
            fmt_num(m.median),
            m.noise_cv * 100.0,
            m.spread * 100.0,
            m.drift_range * 100.0,
            if m.source.is_empty() || m.source == "the test's runs" {
                String::new()
            } else {
                format!("  [{}]", m.source)
            }
        )
        .unwrap();
    }
    if let Some(n) = other_note {
        writeln!(o, "  {n}").unwrap();
    }
    o
}
