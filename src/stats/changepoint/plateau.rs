//! Exact values: a metric whose every commit repeats one number (a struct size, an allocation
//! count) needs no statistics. Its commits form plateaus of equal values, and every change of
//! value that reaches the threshold is a change point at its exact commit, judged against the
//! previous measured commit's value: decided where both plateaus beside it stand on two
//! independent runs at least, undecided where one stands on a single run (one run cannot
//! tell a level from an outlier; a second run of it decides). Exact between two measured
//! commits only: across commits not measured, the change is exact but the commit's own share
//! of it is not, and its interval says so.

use super::super::threshold::rel_change;
use super::super::threshold::Threshold;
use super::confirm::MAX_UNDECIDED;
use super::model::Model;
use super::point::{ChangePoint, Detection, Reason, Undecided};
use crate::stats::step::StepTest;

/// One neighbouring pair of commits in this many (or one) may differ in value for values to
/// count as plateaus.
const RARE: usize = 4;

/// The exact path, where it applies: every commit's runs equal, and the test declared
/// deterministic, or every commit run twice or more, or values changing rarely (at most one
/// neighbouring pair in [`RARE`], or one: plateaus four commits long on average); `force`:
/// the statistics found no noise within their segments, so the plateaus are all there is.
/// `None` where it does not apply, or where no value is seen to repeat: quantised noise
/// (whole milliseconds) repeats values too, but changes value at most neighbouring commits.
/// (A runs test would not tell plateaus from noise: values that repeat near each other, as
/// those of a series with steps do, fail it too.)
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
        if changes > (m.saturating_sub(1) / RARE).max(1) {
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
                // Exact between measured neighbours; across unmeasured commits, the commit's
                // own share may be any part of it.
                interval: (model.pos[j] > model.pos[j - 1] + 1)
                    .then(|| super::point::across_unmeasured(rel_change(before, after))),
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
                interval: None,
            });
        }
    }
    // As many as the statistics list: the largest moves.
    if out.undecided.len() > MAX_UNDECIDED {
        out.undecided
            .sort_by(|a, b| b.rel_change.abs().total_cmp(&a.rel_change.abs()));
        out.undecided.truncate(MAX_UNDECIDED);
        out.undecided.sort_by_key(|u| u.index);
    }
    Some(out)
}
