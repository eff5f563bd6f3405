//! A machine's nights: windows of time that each hold one build's runs (a cron round a night,
//! a run of one commit), read against that machine's other nights. Where the build was
//! measured in other windows too, the model gives such a night an effect of its own (its runs
//! tell the night's state, not the level); yet a machine's nights differ from one another by
//! little, and read side by side with its other nights they still say where the commit's
//! level lies. A step the runs taken side by side decide must not be one the machine's nights
//! contradict (one outlier run in a session, beside nights that show the commit at its
//! neighbours' level).

use super::model::Model;
use super::spread::MIN_DIFFS;
use crate::stats::summary::median_in_place;

/// Every commit's nights, and each machine's spread from one night to the next.
pub(super) struct Nights {
    /// Per kept commit: (machine slot, its reading: the median over its nights on that
    /// machine of the median of its runs each night), one a machine.
    of: Vec<Vec<(usize, f64)>>,
    /// Per machine slot: the robust sd of the difference of two neighbouring nights (their
    /// states, the builds' jitter and the runs' noise together); `None` with fewer than
    /// [`MIN_DIFFS`] such differences.
    sd: Vec<Option<f64>>,
}

impl Nights {
    /// The nights of `model` (analysis scale). Commits of one build as the one before show
    /// that build's nights again: they are read once.
    pub(super) fn new(model: &Model) -> Nights {
        let m = model.len();
        // Most series hold no such window (plain series, years of pooled cron rows): nothing
        // to keep per commit.
        if !model.has_nights() {
            return Nights {
                of: Vec::new(),
                sd: Vec::new(),
            };
        }
        let mut machines: Vec<u64> = Vec::new();
        let mut of: Vec<Vec<(usize, f64)>> = vec![Vec::new(); m];
        let mut windows: Vec<(u32, Vec<f64>)> = Vec::new();
        for (j, nights) in of.iter_mut().enumerate() {
            if model.joined[j] {
                continue;
            }
            windows.clear();
            for &(x, w) in model.runs_of(j) {
                if model.night(w).is_none() {
                    continue;
                }
                match windows.iter_mut().find(|e| e.0 == w) {
                    Some(e) => e.1.push(x),
                    None => windows.push((w, vec![x])),
                }
            }
            // Per machine, the median of the commit's nights (several nights of one commit
            // are one reading of its level: their spread is no neighbour's).
            let mut per: Vec<(usize, Vec<f64>)> = Vec::new();
            for (w, runs) in windows.iter_mut() {
                let machine = model.night(*w).unwrap_or_default();
                let slot = match machines.iter().position(|&k| k == machine) {
                    Some(s) => s,
                    None => {
                        machines.push(machine);
                        machines.len() - 1
                    }
                };
                let Some(r) = median_in_place(runs) else {
                    continue;
                };
                match per.iter_mut().find(|e| e.0 == slot) {
                    Some(e) => e.1.push(r),
                    None => per.push((slot, vec![r])),
                }
            }
            for (slot, mut r) in per {
                if let Some(x) = median_in_place(&mut r) {
                    nights.push((slot, x));
                }
            }
        }
        // Neighbouring nights of one machine, in commit order: their differences are two
        // nights' spread (a step between two of them is one difference of many: the median
        // holds).
        let sd = (0..machines.len())
            .map(|slot| {
                let seq: Vec<f64> = of
                    .iter()
                    .flat_map(|n| n.iter().filter(|e| e.0 == slot).map(|e| e.1))
                    .collect();
                let d: Vec<f64> = seq.windows(2).map(|p| (p[1] - p[0]).abs()).collect();
                if d.len() < MIN_DIFFS {
                    return None;
                }
                // The mean absolute difference, not a median: a machine's nights have heavy
                // tails (a slow night, a wandering state), and a disagreement is judged
                // against all of them.
                let s =
                    (std::f64::consts::PI / 2.0).sqrt() * d.iter().sum::<f64>() / d.len() as f64;
                (s > 0.0 && s.is_finite()).then_some(s)
            })
            .collect();
        Nights { of, sd }
    }

    /// The step at `b` between [a, b) and [b, c) as each machine's nights beside it show it
    /// (within `span` commits): per machine the mean of its first `k` nights after less that
    /// of its last `k` before (a machine's state wanders from night to night: the nights next
    /// to each other differ by the least; more of them hold a level better), machines
    /// combined by their variances (each night's half the variance of two neighbours'
    /// difference); its estimate and variance, `None` where no machine has nights on both
    /// sides.
    pub(super) fn step(
        &self,
        (a, b, c): (usize, usize, usize),
        span: usize,
        k: usize,
    ) -> Option<(f64, f64)> {
        let (lo, hi) = (a.max(b.saturating_sub(span)), c.min(b + span));
        let (mut num, mut den) = (0.0, 0.0);
        for (slot, sd) in self.sd.iter().enumerate() {
            let Some(sd) = sd else { continue };
            let reading = |j: usize| self.of[j].iter().find(|e| e.0 == slot).map(|e| e.1);
            // (Sums and counts, no buffers: every boundary's test reads these.)
            let sum = |it: &mut dyn Iterator<Item = f64>| {
                it.take(k).fold((0.0, 0usize), |(s, n), x| (s + x, n + 1))
            };
            let (sb, nb) = sum(&mut (lo..b).rev().filter_map(reading));
            let (sa, na) = sum(&mut (b..hi).filter_map(reading));
            if nb == 0 || na == 0 {
                continue;
            }
            let (x, y) = (sb / nb as f64, sa / na as f64);
            let var = sd * sd * (1.0 / nb as f64 + 1.0 / na as f64) / 2.0;
            num += (y - x) / var;
            den += 1.0 / var;
        }
        (den > 0.0).then(|| (num / den, 1.0 / den))
    }
}
