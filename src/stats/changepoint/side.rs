//! The step between two segments as the windows of time that hold runs of both sides show it:
//! least squares of the runs with one level a side and an effect per window, so every
//! window's machine state cancels and a window holding one side only tells nothing of the
//! step (its effect takes it). Commits linked by a chain of windows compare as well as the
//! windows on the chain show: no effect estimated with free levels stands between them.

use super::model::Model;
use super::spread::Tails;

/// One commit's runs in one window: its side of the step, their sum and count (moments).
struct Cell {
    commit: usize,
    after: bool,
    sum: f64,
    n: f64,
}

/// The step at `b` between the commits [a, b) and [b, c) of `model` as the windows holding
/// runs of both sides show it (see the module): its estimate (analysis scale) and variance.
/// Each run's noise is the pooled mean square of runs, or its commit's wider spread, over
/// its moments; each commit's jitter of builds τ² counts once, however many windows hold
/// it; each commit's term is widened by its level's inflation in `tails` (the tails the
/// series shows beyond its noise; for the step `tested` at `b`, without the difference at
/// `b` where two windows or more hold both sides). Runs shown on several commits (one
/// build's) count once, where first seen; a build on both sides counts nowhere. `None` where no window ties builds, without a
/// pooled noise, or where no window holds both sides.
pub(super) fn side_by_side(
    model: &Model,
    (a, b, c): (usize, usize, usize),
    tails: &Tails,
    tested: bool,
) -> Option<(f64, f64)> {
    if !model.tied {
        return None;
    }
    let pooled = model.pooled()?;
    let windows = cells(model, (a, b, c))?;
    // The step tested is no tail of its own noise where two windows or more show it; one
    // session's chance step, in a window alone, keeps its difference in the tails.
    let without = (tested && windows.len() >= 2).then_some(b);
    estimate(model, &windows, pooled, &|j| tails.at(j, without))
}

/// [`side_by_side`] once without each window holding both sides in turn (an outlier run, a
/// session's own state: what one window alone shows); empty where fewer than two hold both.
pub(super) fn without_each_window(
    model: &Model,
    (a, b, c): (usize, usize, usize),
    tails: &Tails,
) -> Vec<Option<(f64, f64)>> {
    let (true, Some(pooled)) = (model.tied, model.pooled()) else {
        return Vec::new();
    };
    let Some(mut windows) = cells(model, (a, b, c)) else {
        return Vec::new();
    };
    if windows.len() < 2 {
        return Vec::new();
    }
    (0..windows.len())
        .map(|k| {
            let out = windows.remove(k);
            let e = estimate(model, &windows, pooled, &|j| tails.at(j, Some(b)));
            windows.insert(k, out);
            e
        })
        .collect()
}

/// The least-squares step of the runs in `windows` (each window's state cancelling) and its
/// variance (see [`side_by_side`]).
fn estimate(
    model: &Model,
    windows: &[Vec<Cell>],
    pooled: f64,
    inflation: &dyn Fn(usize) -> f64,
) -> Option<(f64, f64)> {
    let side = |e: &Cell| if e.after { 1.0 } else { 0.0 };
    // Per window the runs' mean side; each cell's share of the estimate is n (side - mean).
    let mean_side: Vec<f64> = windows
        .iter()
        .map(|cells| {
            let n: f64 = cells.iter().map(|e| e.n).sum();
            cells.iter().map(|e| e.n * side(e)).sum::<f64>() / n
        })
        .collect();
    let (mut num, mut den) = (0.0, 0.0);
    for (cells, s) in windows.iter().zip(&mean_side) {
        for e in cells {
            den += e.n * (side(e) - s).powi(2);
            num += (side(e) - s) * e.sum;
        }
    }
    if den <= 0.0 {
        return None;
    }
    // var = Σ c² σ_j²/n over cells + τ² Σ_j (Σ_k c_jk)², c = n (side - mean side) / den.
    let mut noise = 0.0;
    let mut per_commit = std::collections::BTreeMap::<usize, f64>::new();
    for (cells, s) in windows.iter().zip(&mean_side) {
        for e in cells {
            let coef = e.n * (side(e) - s) / den;
            let f = model.contrast_inflation(e.commit, pooled, inflation(e.commit));
            noise += coef * coef * f * model.contrast_run_var(e.commit, pooled) / e.n;
            *per_commit.entry(e.commit).or_default() += coef;
        }
    }
    // (A commit in a window with another build lies in a stratum holding several.)
    let jitter: f64 = per_commit.values().map(|x| x * x).sum::<f64>() * model.tau2_together;
    Some((num / den, noise + jitter))
}

/// The runs of [a, c) (clipped as the levels clip them) by window, in window order, in the
/// windows that hold runs of both sides of `b` only; `None` where none does.
fn cells(model: &Model, (a, b, c): (usize, usize, usize)) -> Option<Vec<Vec<Cell>>> {
    let mut by: std::collections::HashMap<u32, Vec<Cell>> = Default::default();
    let mut builds: std::collections::HashMap<Vec<u64>, (usize, bool)> = Default::default();
    let mut dropped: Vec<usize> = Vec::new();
    for j in a..c {
        let after = j >= b;
        if model.shared(j) {
            let key: Vec<u64> = model
                .runs_of(j)
                .iter()
                .flat_map(|&(x, w)| [x.to_bits(), u64::from(w)])
                .collect();
            match builds.get(&key) {
                Some(&(first, was_after)) => {
                    if was_after != after {
                        dropped.push(first);
                    }
                    continue;
                }
                None => {
                    builds.insert(key, (j, after));
                }
            }
        }
        for (x, w) in model.clipped(j) {
            if !model.has_effect(w) {
                continue;
            }
            // (Commits come in order: this commit's cell, if any, is its window's last.)
            let cells = by.entry(w).or_default();
            match cells.last_mut().filter(|e| e.commit == j) {
                Some(e) => {
                    e.sum += x;
                    e.n += 1.0;
                }
                None => cells.push(Cell {
                    commit: j,
                    after,
                    sum: x,
                    n: 1.0,
                }),
            }
        }
    }
    let mut windows: Vec<(u32, Vec<Cell>)> = by
        .into_iter()
        .map(|(w, mut cells)| {
            cells.retain(|e| !dropped.contains(&e.commit));
            (w, cells)
        })
        .filter(|(_, cells)| cells.iter().any(|e| e.after) && cells.iter().any(|e| !e.after))
        .collect();
    // (In window order: float sums must not depend on a hash's order.)
    windows.sort_unstable_by_key(|x| x.0);
    (!windows.is_empty()).then(|| windows.into_iter().map(|x| x.1).collect())
}
