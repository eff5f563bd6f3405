//! Exact values: a metric whose every commit repeats one number (a struct size, an allocation
//! count) needs no statistics. Its commits form plateaus of equal values, and every change of
//! value that reaches the threshold is a change point at its exact commit, judged against the
//! previous measured commit's value: decided where both plateaus beside it stand on two
//! independent runs at least, undecided where one stands on a single run (one run cannot
//! tell a level from an outlier; a second run of it decides).

use super::super::compare::norm_sf;
use super::super::threshold::rel_change;
use super::super::threshold::Threshold;
use super::model::Model;
use super::point::{ChangePoint, Detection, Reason, Undecided};
use crate::stats::step::StepTest;

/// The exact path, where it applies: every commit's runs equal, and the test declared
/// deterministic, or every commit run twice or more, or values changing rarely (at most one
/// neighbouring pair in ten, or one), or in plateaus far longer than values that merely
/// repeat would make (a runs test at p < [`CLUSTERED_P`]); `force`: the statistics found no
/// noise within their segments, so the plateaus are all there is. `None` where it does not
/// apply, or where no value is seen to repeat: quantised noise (whole milliseconds) repeats values too, but changes value about as
/// often as values drawn at random would.
pub(super) fn exact(
    model: &Model,
    deterministic: bool,
    threshold: Threshold,
    force: bool,
) -> Option<Detection> {
    if !model.flat_runs() {
        return None;
    }
    let values = &model.medians;
    let m = values.len();
    if !(deterministic || force || model.repeated()) {
        let changes = values.windows(2).filter(|w| w[0] != w[1]).count();
        let rare = changes <= (m.saturating_sub(1) / 10).max(1);
        if !rare && runs_test_p(values, &model.joined) >= CLUSTERED_P {
            return None;
        }
    }
    let moments = model.moments();
    // Each commit's plateau: its first commit, and the independent runs it stands on.
    let mut start = vec![0usize; m];
    for j in 1..m {
        start[j] = if values[j] == values[j - 1] {
            start[j - 1]
        } else {
            j
        };
    }
    let evidence = |a: usize, b: usize| moments[a..b].iter().sum::<f64>();
    // Only values seen to repeat show there is no noise: commits measured once each, every
    // one a value of its own, say nothing (two of them are no exact step, nor an undecided).
    if !deterministic && (0..m).all(|j| evidence(start[j], j + 1) < 2.0 - 1e-9) {
        return None;
    }
    let mut out = Detection::default();
    for j in (1..m).filter(|&j| values[j] != values[j - 1]) {
        let (before, after) = (values[j - 1], values[j]);
        if !threshold.reached(before, after) {
            continue;
        }
        let end = (j + 1..m).find(|&k| start[k] == k).unwrap_or(m);
        let sides = (evidence(start[j - 1], j), evidence(j, end));
        if deterministic || sides.0.min(sides.1) >= 2.0 - 1e-9 {
            out.points.push(ChangePoint {
                index: model.pos[j],
                last_before: model.pos[j - 1],
                before,
                after,
                rel_change: rel_change(before, after),
                p_value: 0.0,
                test: StepTest::Exact,
                deterministic: true,
                interval: None,
                windows: 0,
            });
        } else {
            let runs = (sides.0.round() as usize, sides.1.round() as usize);
            out.undecided.push(Undecided {
                index: model.pos[j],
                last_before: model.pos[j - 1],
                why: Reason::OneRun,
                before,
                after,
                rel_change: rel_change(before, after),
                p_value: 1.0,
                runs_needed: 2,
                runs,
            });
        }
    }
    Some(out)
}

/// A runs test's p below which values are in plateaus, not drawn at random.
const CLUSTERED_P: f64 = 0.001;

/// The Wald-Wolfowitz runs test over the values of the commits (one per build: a commit of
/// the previous one's build repeats it, no draw of its own): the chance of so few changes of
/// value were the same values in a random order (normal approximation, one-sided).
fn runs_test_p(values: &[f64], joined: &[bool]) -> f64 {
    let v: Vec<f64> = values
        .iter()
        .zip(joined.iter().chain(std::iter::repeat(&false)))
        .filter(|(_, j)| !**j)
        .map(|(x, _)| *x)
        .collect();
    let n = v.len() as f64;
    if v.len() < 3 {
        return 1.0;
    }
    let mut sorted = v.clone();
    sorted.sort_by(f64::total_cmp);
    let groups: Vec<f64> = sorted
        .chunk_by(|a, b| a == b)
        .map(|g| g.len() as f64 / n)
        .collect();
    // Values that mostly differ are noise, however they are ordered.
    if groups.len() as f64 > n / 2.0 {
        return 1.0;
    }
    // In shares of the commits (a = Σ p², b = Σ p³): the sums of counts cancel to the last
    // digit over a million commits.
    let a: f64 = groups.iter().map(|p| p * p).sum();
    let b: f64 = groups.iter().map(|p| p * p * p).sum();
    let runs = 1.0 + v.windows(2).filter(|w| w[0] != w[1]).count() as f64;
    let mean = n + 1.0 - n * a;
    let var = n * n / (n - 1.0) * (a * a + a * (1.0 + 1.0 / n) - 2.0 * b - 1.0 / n);
    if var.is_nan() || var <= 0.0 {
        return 1.0;
    }
    norm_sf((mean - runs) / var.sqrt())
}
