//! `perfbisect calibrate TEST [REV]`: A/A runs of one build to measure this test's noise on
//! this machine, and the repeats needed to see its threshold. The result is kept in the cache
//! so `run` and `find` can warn when a threshold is below what their repeats can detect.

use serde::{Deserialize, Serialize};

use crate::cli::{CalibrateArgs, Format, Global};
use crate::config::Test;
use crate::pipeline::{Batch, Workspace};
use crate::report::fmt_num;
use crate::stats::{self, Threshold};
use crate::store::cache::Cache;

use super::{check_format, locations, verbosity, Interrupted};

/// Power asked of the repeats recommendation.
const POWER: f64 = 0.95;

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
}

fn relative(t: Threshold, median: f64) -> f64 {
    match t {
        Threshold::Relative(r) => r,
        Threshold::Absolute(a) if median != 0.0 => a / median.abs(),
        Threshold::Absolute(_) => 0.0,
    }
}

/// The stored calibration of a test, if any.
pub fn load(cache: &Cache, test: &str) -> Option<Calibration> {
    let text = std::fs::read_to_string(cache.root.join("calibration").join(format!("{test}.json")))
        .ok()?;
    serde_json::from_str(&text).ok()
}

/// A warning when the test's threshold is below what its repeats can detect, per the stored
/// calibration.
pub fn threshold_warning(cache: &Cache, test: &Test) -> Option<String> {
    let c = load(cache, &test.name)?;
    let detectable =
        stats::min_detectable_change(c.noise_cv, test.repeats, test.repeats, test.alpha);
    let threshold = relative(test.threshold, c.median);
    (detectable > threshold && threshold > 0.0).then(|| {
        format!(
            "test `{}`: with {} repeats and {:.2} % noise (calibrated) a change below {:.2} % cannot be detected, but the threshold is {:.2} %; set `repeats = {}` or raise the threshold",
            test.name,
            test.repeats,
            c.noise_cv * 100.0,
            detectable * 100.0,
            threshold * 100.0,
            stats::repeats_needed(c.noise_cv, threshold, test.alpha, POWER)
        )
    })
}

pub fn calibrate(g: &Global, args: CalibrateArgs) -> anyhow::Result<()> {
    check_format(args.format, &[Format::Text, Format::Json], "calibrate")?;
    if args.runs < 5 {
        crate::usage!("--runs {}: calibration needs at least 5 runs", args.runs);
    }
    let ws = Workspace::open(&locations(g), verbosity(g), true)?;
    let test = ws.config.test(&args.test)?.clone();
    let id = match &args.rev {
        Some(r) => ws.repo.resolve(r)?,
        None => ws.repo.head()?,
    };
    let info = ws.repo.info(id)?;
    let (art, _) = ws.ensure_built(&id)?;
    let Some(art) = art else {
        anyhow::bail!(
            "{} {} does not build; calibrate on another revision",
            info.short(),
            info.subject
        );
    };
    let mut appender = ws.appender(&test)?;
    let bar = ws.progress.bar(args.runs as u64, "calibrate");
    let got = ws.measure(
        &mut appender,
        Batch {
            test: &test,
            commit: id,
            artifacts: &art,
            runs: args.runs,
            round: 0,
        },
        &mut |_| bar.inc(1),
    )?;
    bar.finish_and_clear();
    // Stopped by Ctrl-C: the runs made are in the store, but a calibration from a part of
    // them would stand for the full count; keep none, exit 130 as `run` does.
    if crate::interrupt::requested() {
        return Err(Interrupted.into());
    }
    let vals: Vec<f64> = got.iter().filter_map(|s| s.value).collect();
    let Some(sum) = stats::summarize(&vals) else {
        anyhow::bail!(
            "no run of `{}` produced a value; see `perfbisect show {} --format csv`",
            test.name,
            test.name
        );
    };
    let noise_cv = stats::robust_cv(&vals).unwrap_or(0.0);
    let sigma = noise_cv * sum.median.abs();
    let outliers = if sigma > 0.0 {
        vals.iter()
            .filter(|v| (*v - sum.median).abs() > 3.5 * sigma)
            .count()
    } else {
        vals.iter().filter(|v| **v != sum.median).count()
    };
    let trend = stats::mann_kendall(&vals, test.alpha);
    let threshold = relative(test.threshold, sum.median);
    let cal = Calibration {
        test: test.name.clone(),
        commit: id.to_string(),
        runs: got.len(),
        failed: got.len() - vals.len(),
        median: sum.median,
        noise_cv,
        std_dev_pct: sum.cv_percent(),
        outlier_rate: outliers as f64 / vals.len() as f64,
        drift_p: trend.map(|t| t.p_value),
        drift_per_run: trend.map(|t| {
            if sum.median != 0.0 {
                t.sen_slope / sum.median.abs()
            } else {
                0.0
            }
        }),
        threshold,
        detectable_with_repeats: stats::min_detectable_change(
            noise_cv,
            test.repeats,
            test.repeats,
            test.alpha,
        ),
        repeats_needed: if threshold > 0.0 {
            stats::repeats_needed(noise_cv, threshold, test.alpha, POWER)
        } else {
            test.max_repeats
        },
    };
    let dir = ws.cache.root.join("calibration");
    std::fs::create_dir_all(&dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
    serde_json::to_writer_pretty(&mut tmp, &cal)?;
    tmp.persist(dir.join(format!("{}.json", test.name)))?;

    match args.format {
        Format::Json => print!("{}", crate::report::json_pretty(&cal)?),
        _ => {
            let unit = if test.unit().is_empty() {
                String::new()
            } else {
                format!(" {}", test.unit())
            };
            println!(
                "{}: {} A/A runs of {} {}{}",
                test.name,
                cal.runs,
                info.short(),
                info.subject,
                if args.rev.is_none() {
                    " (HEAD: no REV given)"
                } else {
                    ""
                }
            );
            println!(
                "median {}{unit}, noise {:.2} % (robust, MAD), std dev {:.2} % of mean, outliers {:.1} % of runs",
                fmt_num(cal.median),
                cal.noise_cv * 100.0,
                cal.std_dev_pct,
                cal.outlier_rate * 100.0
            );
            if let (Some(p), Some(s)) = (cal.drift_p, cal.drift_per_run) {
                let verdict = if p < test.alpha {
                    "DRIFT: the machine's state changes during runs"
                } else {
                    "no drift"
                };
                println!(
                    "drift over the runs: {:+.4} % per run, p = {:.3}: {verdict}",
                    s * 100.0,
                    p
                );
            }
            println!(
                "with repeats = {} a change of {:.2} % or more is detectable at alpha {}; the threshold is {:.2} %",
                test.repeats,
                cal.detectable_with_repeats * 100.0,
                test.alpha,
                threshold * 100.0
            );
            println!(
                "repeats needed to detect the threshold with 95 % power: {}{}",
                cal.repeats_needed,
                if cal.repeats_needed > test.repeats {
                    " (raise `repeats` or the threshold)"
                } else {
                    ""
                }
            );
            if cal.failed > 0 {
                println!("{} runs failed", cal.failed);
            }
        }
    }
    Ok(())
}
