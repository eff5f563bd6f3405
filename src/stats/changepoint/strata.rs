//! Which commits' levels were measured on one machine state, and what a step between strata
//! may rest on. Windows of time connected by the commits measured in them form a stratum:
//! within one, every window's effect is estimated from those links, so its levels compare on
//! one machine state. (Runs with no window of their own, imported rows without a round, are
//! a pool of their machine: each its own moment, their noise holds the machine's moves, and
//! the pool is one window.) Between strata nothing links the machine's states: a stratum is
//! one draw of them, whatever the number of runs it holds. A step between strata is then
//! judged on strata as units, by ranks and within each named machine only
//! ([`Strata::across`]): one slow night, one session at another speed or one machine's
//! handover is one unit and can never make a step certain alone.

use crate::stats::compare::{mann_whitney_exact, stratified_rank_test};

/// Commits on each side of a boundary whose strata are the units of [`Strata::across`].
pub(super) const UNIT_SPAN: usize = 40;

/// The strata of a model's commits.
pub(super) struct Strata {
    /// Each kept commit's stratum.
    pub(super) of: Vec<u32>,
    /// Each stratum's machine, or [`MIXED`] where its windows are on several (a commit
    /// measured on two machines links them: their effects are estimated like any).
    pub(super) machine: Vec<u64>,
    /// Each dense window's stratum.
    pub(super) of_window: Vec<u32>,
    /// Each stratum's scale: the named machine whose windows its effects are centred on (the
    /// one with most runs in it; a stratum on no named machine, 0, is centred on all).
    pub(super) scale: Vec<u64>,
    /// Each dense window: its effect is of the stratum's scale (centred to average 0).
    pub(super) centre: Vec<bool>,
    /// Windows per stratum.
    pub(super) windows: Vec<u32>,
    /// Changes of stratum up to each commit: [a, c) lies in one stratum when equal at a and c-1.
    switches: Vec<u32>,
}

/// The machine of a stratum whose windows lie on several machines.
pub(super) const MIXED: u64 = u64::MAX;

/// The units of a step between strata: per machine, the levels of the strata that lie wholly
/// on the old side and wholly on the new side, and the machines each side was measured on.
#[derive(Debug, Clone, Default)]
pub(super) struct Units {
    pub(super) by_machine: Vec<(u64, Vec<f64>, Vec<f64>)>,
}

/// What the units say of a step: its p-value (ranks, within each machine), the smallest
/// p-value units this many could give, and the change they show (the difference of the
/// sides' median units, each machine weighed by its units).
#[derive(Debug, Clone, Copy)]
pub(super) struct Across {
    pub(super) p: f64,
    pub(super) best: f64,
    pub(super) delta: f64,
}

impl Units {
    /// No machine holds units on both sides, and each side holds some: the two sides were
    /// measured on different machines only.
    pub(super) fn machines_apart(&self) -> bool {
        let left = self.by_machine.iter().any(|m| !m.1.is_empty());
        let right = self.by_machine.iter().any(|m| !m.2.is_empty());
        left && right
            && !self
                .by_machine
                .iter()
                .any(|m| !m.1.is_empty() && !m.2.is_empty())
    }

    /// The rank test of the units, machine by machine (van Elteren's over several); `None`
    /// where no machine holds units on both sides.
    pub(super) fn test(&self) -> Option<Across> {
        let both: Vec<&(u64, Vec<f64>, Vec<f64>)> = self
            .by_machine
            .iter()
            .filter(|m| !m.1.is_empty() && !m.2.is_empty())
            .collect();
        if both.is_empty() {
            return None;
        }
        let strata: Vec<(&[f64], &[f64])> = both
            .iter()
            .map(|m| (m.1.as_slice(), m.2.as_slice()))
            .collect();
        let p = rank_p(&strata)?;
        // The same sizes completely apart: the most these units can say.
        let apart: Vec<(Vec<f64>, Vec<f64>)> = both
            .iter()
            .map(|m| {
                let l = (0..m.1.len()).map(|i| i as f64).collect();
                let r = (0..m.2.len()).map(|i| (m.1.len() + i) as f64).collect();
                (l, r)
            })
            .collect();
        let apart: Vec<(&[f64], &[f64])> = apart
            .iter()
            .map(|(l, r)| (l.as_slice(), r.as_slice()))
            .collect();
        let best = rank_p(&apart).unwrap_or(1.0);
        let (mut num, mut den) = (0.0, 0.0);
        for m in &both {
            let med = |v: &[f64]| {
                let mut v = v.to_vec();
                crate::stats::summary::median_in_place(&mut v).unwrap_or(0.0)
            };
            let (nl, nr) = (m.1.len() as f64, m.2.len() as f64);
            let wt = nl * nr / (nl + nr);
            num += wt * (med(&m.2) - med(&m.1));
            den += wt;
        }
        Some(Across {
            p,
            best,
            delta: num / den,
        })
    }
}

/// The two-sided p of a rank test over `strata` (Mann-Whitney's for one, exact when small).
fn rank_p(strata: &[(&[f64], &[f64])]) -> Option<f64> {
    match strata {
        [(a, b)] => mann_whitney_exact(a, b).map(|t| t.p_value),
        _ => stratified_rank_test(strata).map(|t| t.p_value),
    }
}

impl Strata {
    /// The strata of commits whose runs are `runs` (value and dense window), each window on
    /// the machine `machine_of[w]`: a commit joins every window it was measured in.
    pub(super) fn new(runs: &[Vec<(f64, u32)>], machine_of: &[u64]) -> Strata {
        let windows = machine_of.len();
        let mut parent: Vec<u32> = (0..windows as u32).collect();
        fn root(parent: &mut [u32], mut x: u32) -> u32 {
            while parent[x as usize] != x {
                parent[x as usize] = parent[parent[x as usize] as usize];
                x = parent[x as usize];
            }
            x
        }
        for r in runs {
            // The root of the commit's first window; a window already under it (most, once
            // the first commits tied them) costs one load.
            let mut first: Option<u32> = None;
            for &(_, w) in r {
                match first {
                    None => first = Some(root(&mut parent, w)),
                    Some(f) if parent[w as usize] != f => {
                        let b = root(&mut parent, w);
                        if b != f {
                            let (lo, hi) = (f.min(b), f.max(b));
                            parent[hi as usize] = lo;
                            first = Some(lo);
                        }
                    }
                    Some(_) => {}
                }
            }
        }
        // Dense stratum numbers in order of first appearance over the commits.
        let none = u32::MAX;
        let mut dense = vec![none; windows];
        let mut count = 0u32;
        let mut of = Vec::with_capacity(runs.len());
        for r in runs {
            let s = match r.first() {
                None => none,
                Some(&(_, w)) => {
                    let x = root(&mut parent, w) as usize;
                    if dense[x] == none {
                        dense[x] = count;
                        count += 1;
                    }
                    dense[x]
                }
            };
            of.push(s);
        }
        let mut of_window = vec![0u32; windows];
        let mut machine = vec![None::<u64>; count as usize];
        let mut per = vec![0u32; count as usize];
        for w in 0..windows {
            let x = root(&mut parent, w as u32) as usize;
            if dense[x] == none {
                // A window no kept commit holds (never: every window has a run).
                dense[x] = count;
                count += 1;
                machine.push(None);
                per.push(0);
            }
            let s = dense[x];
            of_window[w] = s;
            per[s as usize] += 1;
            let m = &mut machine[s as usize];
            *m = match *m {
                None => Some(machine_of[w]),
                Some(x) if x == machine_of[w] => Some(x),
                Some(_) => Some(MIXED),
            };
        }
        // Runs per window, then per stratum and named machine: the scale each is centred on.
        // A named machine's windows are its nights: draws of its usual state, which its lone
        // nights outside the stratum show too; a session here is one state of its own.
        let mut runs_in = vec![0usize; windows];
        for &(_, w) in runs.iter().flatten() {
            runs_in[w as usize] += 1;
        }
        let mut by: Vec<Vec<(u64, usize)>> = vec![Vec::new(); count as usize];
        for w in (0..windows).filter(|&w| machine_of[w] != 0) {
            let list = &mut by[of_window[w] as usize];
            match list.iter_mut().find(|x| x.0 == machine_of[w]) {
                Some(x) => x.1 += runs_in[w],
                None => list.push((machine_of[w], runs_in[w])),
            }
        }
        let scale: Vec<u64> = by
            .iter()
            .map(|l| {
                l.iter()
                    .max_by(|x, y| x.1.cmp(&y.1).then(y.0.cmp(&x.0)))
                    .map_or(0, |x| x.0)
            })
            .collect();
        let centre = (0..windows)
            .map(|w| {
                let s = scale[of_window[w] as usize];
                s == 0 || machine_of[w] == s
            })
            .collect();
        let mut switches = Vec::with_capacity(of.len());
        let mut k = 0u32;
        for j in 0..of.len() {
            if j > 0 && of[j] != of[j - 1] {
                k += 1;
            }
            switches.push(k);
        }
        Strata {
            of,
            machine: machine.into_iter().map(|m| m.unwrap_or(0)).collect(),
            of_window,
            scale,
            centre,
            windows: per,
            switches,
        }
    }

    /// Every commit of [a, c) lies in one stratum (or c <= a + 1).
    pub(super) fn single(&self, a: usize, c: usize) -> bool {
        c <= a + 1 || self.switches[c - 1] == self.switches[a]
    }

    /// How many commits each stratum holds.
    pub(super) fn sizes(&self) -> Vec<usize> {
        let mut size = vec![0usize; self.windows.len()];
        for &k in &self.of {
            size[k as usize] += 1;
        }
        size
    }

    /// The commits `j` whose level lies in another stratum than the previous commit's.
    pub(super) fn switch(&self, j: usize) -> bool {
        j > 0 && self.of[j] != self.of[j - 1]
    }

    /// The machine commit `j` was measured on ([`MIXED`] for a stratum on several).
    pub(super) fn machine_of(&self, j: usize) -> u64 {
        self.machine[self.of[j] as usize]
    }

    /// The strata holding commits on both sides of `b` within [a, c), in order.
    pub(super) fn straddling(&self, a: usize, b: usize, c: usize) -> Vec<u32> {
        let mut left: Vec<u32> = self.of[a..b].to_vec();
        left.sort_unstable();
        left.dedup();
        let mut both: Vec<u32> = self.of[b..c]
            .iter()
            .copied()
            .filter(|s| left.binary_search(s).is_ok())
            .collect();
        both.sort_unstable();
        both.dedup();
        both
    }

    /// The units of the step at `b` between [a, b) and [b, c): each stratum that holds
    /// commits of one side only (of the [`UNIT_SPAN`] nearest a side), its weighted mean level
    /// there, grouped by machine. A stratum holding both sides is compared within itself
    /// ([`Strata::within`]), not here.
    pub(super) fn units(&self, y: &[f64], w: &[f64], a: usize, b: usize, c: usize) -> Units {
        let both = self.straddling(a, b, c);
        let lo = a.max(b.saturating_sub(UNIT_SPAN));
        let hi = c.min(b + UNIT_SPAN);
        // Per stratum (in order of appearance): side, weight, weighted sum.
        let mut seen: Vec<(u32, bool, f64, f64)> = Vec::new();
        for j in lo..hi {
            let s = self.of[j];
            if both.binary_search(&s).is_ok() || w[j].is_nan() || w[j] <= 0.0 {
                continue;
            }
            let right = j >= b;
            match seen.iter_mut().rev().find(|e| e.0 == s) {
                Some(e) => {
                    e.2 += w[j];
                    e.3 += w[j] * y[j];
                }
                None => seen.push((s, right, w[j], w[j] * y[j])),
            }
        }
        let mut by_machine: Vec<(u64, Vec<f64>, Vec<f64>)> = Vec::new();
        for (s, right, wt, sum) in seen {
            let m = self.machine[s as usize];
            let i = match by_machine.iter().position(|e| e.0 == m) {
                Some(i) => i,
                None => {
                    by_machine.push((m, Vec::new(), Vec::new()));
                    by_machine.len() - 1
                }
            };
            let v = sum / wt;
            if right {
                by_machine[i].2.push(v);
            } else {
                by_machine[i].1.push(v);
            }
        }
        by_machine.sort_by_key(|e| e.0);
        Units { by_machine }
    }
}
