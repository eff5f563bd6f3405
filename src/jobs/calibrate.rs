//! Calibration: A/A runs of one build to measure a test's noise on this machine (with its own
//! metric and another way of measuring the same command), the repeats needed to see its
//! threshold, and the stored result `run` and `find` warn from (`cache/calibration/<test>.json`).

use crate::base::interrupt::Interrupted;
use crate::config::Test;
use crate::pipeline::workspace::{Batch, Workspace};
use crate::report::calibration::{Calibration, MetricNoise};
use crate::stats::{self, Threshold};
use crate::store::cache::Cache;

/// Power asked of the repeats recommendation.
const POWER: f64 = 0.95;

/// The noise of `vals` (in run order) for a decision about `threshold` (relative).
fn metric_noise(
    metric: &str,
    source: &str,
    vals: &[f64],
    threshold: f64,
    alpha: f64,
) -> Option<MetricNoise> {
    let sum = stats::summarize(vals)?;
    let noise_cv = stats::robust_cv(vals).unwrap_or(0.0);
    let spread = if sum.median != 0.0 {
        (sum.max - sum.min) / sum.median.abs()
    } else {
        0.0
    };
    let blocks: Vec<f64> = (0..5)
        .filter_map(|k| {
            let (a, b) = (k * vals.len() / 5, (k + 1) * vals.len() / 5);
            stats::median(&vals[a..b.max(a)])
        })
        .collect();
    let drift_range = if blocks.len() >= 2 && sum.median != 0.0 {
        let lo = blocks.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = blocks.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (hi - lo) / sum.median.abs()
    } else {
        0.0
    };
    let runs_needed = if threshold > 0.0 && spread <= threshold / 10.0 {
        1
    } else if threshold > 0.0 {
        stats::repeats_needed(noise_cv, threshold, alpha, POWER)
    } else {
        usize::MAX
    };
    Some(MetricNoise {
        metric: metric.to_string(),
        source: source.to_string(),
        runs: vals.len(),
        median: sum.median,
        noise_cv,
        spread,
        drift_p: stats::mann_kendall(vals, alpha).map(|t| t.p_value),
        drift_range,
        runs_needed,
    })
}

/// `runs` runs of `test`'s command measured another way (`metric`), not stored: the values,
/// or why there are none.
fn other_way(
    ws: &Workspace,
    test: &Test,
    metric: crate::config::Metric,
    id: gix::ObjectId,
    art: &std::path::Path,
    runs: usize,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<Result<Vec<f64>, String>> {
    let mut t = test.clone();
    t.metric = metric;
    if matches!(t.metric, crate::config::Metric::Instructions) {
        if let Err(e) = crate::process::counter::select(t.counter) {
            return Ok(Err(e.to_string()));
        }
    }
    let ctx = crate::measure::Context {
        test: &t,
        config_dir: &ws.config.dir,
        artifacts: art,
        commit: id,
        recipe_hash: ws.config.build.recipe_hash(),
        round: 0,
        fingerprint: 0,
        window: crate::store::new_window(),
    };
    let mut vals = Vec::new();
    let mut failed = None;
    crate::measure::batch(
        &ctx,
        runs,
        &mut |s| {
            bar.inc(1);
            match s.value {
                Some(v) => vals.push(v),
                None => failed = failed.take().or(s.error),
            }
            Ok(())
        },
        &|w| ws.warn(w),
    )?;
    Ok(match (vals.is_empty(), failed) {
        (true, Some(e)) => Err(e.lines().next().unwrap_or("").to_string()),
        (true, None) => Err("no run".into()),
        _ => Ok(vals),
    })
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

/// Calibrate `test` on the build of `id` (at `art`): `runs` runs of the test, stored like any
/// others, and a few runs measured the other way (instructions for a time metric, wall time
/// for an instructions test), not stored. The result is kept for `run` and `find`; the second
/// value says why the other way was not measured. Stopped by Ctrl-C, nothing is kept (the
/// runs made are in the store, but a part of them would stand for the full count).
pub fn calibrate(
    ws: &Workspace,
    test: &Test,
    id: gix::ObjectId,
    art: &std::path::Path,
    runs: usize,
) -> anyhow::Result<(Calibration, Option<String>)> {
    let (got, other) = measure_both_ways(ws, test, id, art, runs)?;
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
    let (metrics, other_note) = metrics(test, &got, &vals, threshold, other);
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
        metrics,
    };
    let dir = ws.cache.root.join("calibration");
    std::fs::create_dir_all(&dir)?;
    let mut tmp = crate::store::temp_file(&dir, ".calibration.")?;
    serde_json::to_writer_pretty(&mut tmp, &cal)?;
    tmp.persist(dir.join(format!("{}.json", test.name)))?;

    Ok((cal, other_note))
}

/// The other way of measuring: its name, and its values or why it was not measured.
type OtherWay = (&'static str, Result<Vec<f64>, String>);

/// `runs` runs of `test` on the build of `id` (at `art`), stored, then a few measured the
/// other way, not stored; Ctrl-C during either ends the calibration.
fn measure_both_ways(
    ws: &Workspace,
    test: &Test,
    id: gix::ObjectId,
    art: &std::path::Path,
    runs: usize,
) -> anyhow::Result<(Vec<crate::store::Sample>, OtherWay)> {
    let args_runs = runs;
    let mut appender = ws.appender(test)?;
    // The other way of measuring the same command: instructions for a time (or any other)
    // metric, wall time for an instructions test.
    let instr_test = matches!(test.metric, crate::config::Metric::Instructions);
    let other_runs = if instr_test {
        args_runs
    } else {
        args_runs.min(5)
    };
    let bar = ws
        .progress
        .bar((args_runs + other_runs) as u64, "calibrate");
    let got = ws.measure(
        &mut appender,
        Batch {
            test,
            commit: id,
            artifacts: art,
            runs: args_runs,
            round: 0,
        },
        &mut |_| bar.inc(1),
    )?;
    bar.finish_and_clear();
    // Stopped by Ctrl-C: the runs made are in the store, but a calibration from a part of
    // them would stand for the full count; keep none, exit 128 + the signal as `run` does.
    if crate::base::interrupt::requested() {
        return Err(Interrupted.into());
    }
    let other = if instr_test {
        (
            "wall",
            other_way(
                ws,
                test,
                crate::config::Metric::Wall,
                id,
                art,
                other_runs,
                &bar,
            )?,
        )
    } else {
        (
            "instructions",
            other_way(
                ws,
                test,
                crate::config::Metric::Instructions,
                id,
                art,
                other_runs,
                &bar,
            )?,
        )
    };
    bar.finish_and_clear();
    if crate::base::interrupt::requested() {
        return Err(Interrupted.into());
    }
    Ok((got, other))
}

/// The noise of each way of measuring: the test's own metric (`vals`), wall time of the same
/// runs where the metric is neither, and the other way; with why the other way was not
/// measured, if it was not.
fn metrics(
    test: &Test,
    got: &[crate::store::Sample],
    vals: &[f64],
    threshold: f64,
    other: OtherWay,
) -> (Vec<MetricNoise>, Option<String>) {
    let instr_test = matches!(test.metric, crate::config::Metric::Instructions);
    let mut metrics = Vec::new();
    let own = test.metric.describe();
    metrics.extend(metric_noise(
        &own,
        "the test's runs",
        vals,
        threshold,
        test.alpha,
    ));
    let walls: Vec<f64> = got
        .iter()
        .filter(|s| s.value.is_some())
        .map(|s| s.wall)
        .collect();
    if !matches!(test.metric, crate::config::Metric::Wall) && !instr_test {
        metrics.extend(metric_noise(
            "wall",
            "the test's runs",
            &walls,
            threshold,
            test.alpha,
        ));
    }
    let mut other_note = None;
    match &other.1 {
        Ok(v) => {
            let source = if other.0 == "instructions" {
                crate::process::counter::select(test.counter)
                    .map(|s| s.counter.describe())
                    .unwrap_or_default()
            } else {
                "plain runs".to_string()
            };
            metrics.extend(metric_noise(other.0, &source, v, threshold, test.alpha));
        }
        Err(e) => other_note = Some(format!("{}: not measured ({e})", other.0)),
    }
    (metrics, other_note)
}
