//! Which commits' levels were measured on one machine state. Windows of time connected by
//! the commits measured in them form a stratum: within one, the window effects are estimated
//! (or there is one window), so its levels are compared on one machine state. Commits measured
//! in no window (imported rows without a round: each its own moment) are free: their noise
//! holds the machine's moves. The levels of two strata differ by the machine's states as well
//! as by their commits: a step the runs show only across strata is one the machine may explain
//! unless the store shows how far strata move (see [`super::model::Model::variances`]).

/// The stratum of a commit no window ties to another build.
pub(super) const FREE: u32 = u32::MAX;

/// The strata of a model's commits.
pub(super) struct Strata {
    /// Each kept commit's stratum ([`FREE`]: none).
    pub(super) of: Vec<u32>,
    /// Per stratum: Σ (n_w / N)² over its windows, the share of one window's machine state in
    /// the stratum's mean level (runs counted by their commit's share).
    exposure: Vec<f64>,
    /// The variance of a window's machine state and its degrees of freedom from builds
    /// measured in several windows each holding that build alone (`run COMMIT --again`,
    /// rounds of a cron that measured one commit twice): the spread of the build's window
    /// means beyond what its runs' noise within a window gives. `None` without such builds.
    pub(super) repeated: Option<(f64, f64)>,
    /// Changes of stratum up to each commit: [a, c) lies in one stratum when equal at a and c-1.
    switches: Vec<u32>,
}

impl Strata {
    /// The strata of commits whose runs are `runs` (value, dense window or `none`) over the
    /// dense windows `tied` (whether each holds runs of two builds or more), each commit
    /// counting `share` of its runs: a commit joins every window it was measured in.
    pub(super) fn new(runs: &[Vec<(f64, u32)>], tied: &[bool], share: &[f64]) -> Strata {
        let none = u32::MAX;
        let windows = tied.len();
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
            for &(_, w) in r.iter().filter(|x| x.1 != none) {
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
        // Dense stratum numbers in order of first appearance.
        let mut dense = vec![none; windows];
        let mut count = 0u32;
        let mut stratum_of = |w: u32, parent: &mut [u32]| {
            let r = root(parent, w) as usize;
            if dense[r] == none {
                dense[r] = count;
                count += 1;
            }
            dense[r]
        };
        let of: Vec<u32> = runs
            .iter()
            .map(|r| match r.iter().find(|x| x.1 != none) {
                None => FREE,
                Some(x) => stratum_of(x.1, &mut parent),
            })
            .collect();
        let mut size = vec![0.0; windows];
        for (r, s) in runs.iter().zip(share) {
            for &(_, w) in r.iter().filter(|x| x.1 != none) {
                size[w as usize] += s;
            }
        }
        let window_stratum: Vec<u32> = (0..windows as u32)
            .map(|w| stratum_of(w, &mut parent))
            .collect();
        let mut total = vec![0.0; count as usize];
        for (w, &n) in size.iter().enumerate() {
            total[window_stratum[w] as usize] += n;
        }
        let mut exposure = vec![0.0; count as usize];
        for (w, &n) in size.iter().enumerate() {
            let s = window_stratum[w] as usize;
            if total[s] > 0.0 {
                exposure[s] += (n / total[s]).powi(2);
            }
        }
        let mut switches = Vec::with_capacity(of.len());
        let mut k = 0u32;
        for j in 0..of.len() {
            if j > 0 && of[j] != of[j - 1] {
                k += 1;
            }
            switches.push(k);
        }
        // (Only builds alone in windows tell it: none where every window ties builds.)
        let repeated = if tied.iter().all(|t| *t) {
            None
        } else {
            repeated_windows(runs, tied, share)
        };
        Strata {
            of,
            exposure,
            repeated,
            switches,
        }
    }

    /// Every commit of [a, c) lies in one stratum (or c <= a + 1).
    pub(super) fn single(&self, a: usize, c: usize) -> bool {
        c <= a + 1 || self.switches[c - 1] == self.switches[a]
    }

    /// The commits `j` whose level lies in another stratum than the previous commit's.
    pub(super) fn switch(&self, j: usize) -> bool {
        j > 0 && self.of[j] != self.of[j - 1]
    }

    /// The difference of the weighted mean levels of [b, c) and [a, b) (levels `y`, weights
    /// `w`, inverse variances) from contrasts within strata only — each stratum holding
    /// commits on both sides gives its own, free commits one together — combined by inverse
    /// variance: the difference and its variance. `None` where no stratum holds both sides.
    pub(super) fn within(
        &self,
        y: &[f64],
        w: &[f64],
        a: usize,
        b: usize,
        c: usize,
    ) -> Option<(f64, f64)> {
        // Per stratum: weight and weighted sum on each side.
        let mut map: std::collections::HashMap<u32, [f64; 4], foldhash::fast::RandomState> =
            Default::default();
        for j in a..c {
            let k = if j < b { 0 } else { 2 };
            let e = map.entry(self.of[j]).or_default();
            e[k] += w[j];
            e[k + 1] += w[j] * y[j];
        }
        // (Summed in stratum order: the same total whatever the map's order.)
        let mut acc: Vec<(u32, [f64; 4])> = map.into_iter().collect();
        acc.sort_unstable_by_key(|x| x.0);
        let (mut num, mut den) = (0.0, 0.0);
        for (_, [wl, sl, wr, sr]) in acc {
            if wl > 0.0 && wr > 0.0 {
                let v = 1.0 / wl + 1.0 / wr;
                num += (sr / wr - sl / wl) / v;
                den += 1.0 / v;
            }
        }
        (den > 0.0).then(|| (num / den, 1.0 / den))
    }

    /// How many windows' machine states the difference of the weighted mean levels of [b, c)
    /// and [a, b) holds: Σ over strata of (its share of the new side's weight less its share
    /// of the old side's)² times its exposure. Free commits add none.
    pub(super) fn exposure(&self, w: &[f64], a: usize, b: usize, c: usize) -> f64 {
        let (wl, wr): (f64, f64) = (w[a..b].iter().sum(), w[b..c].iter().sum());
        if wl <= 0.0 || wr <= 0.0 {
            return 0.0;
        }
        let mut map: std::collections::HashMap<u32, f64, foldhash::fast::RandomState> =
            Default::default();
        for (j, (&s, wj)) in self.of[a..c].iter().zip(&w[a..c]).enumerate() {
            if s != FREE {
                *map.entry(s).or_default() += if a + j < b { -wj / wl } else { wj / wr };
            }
        }
        let mut acc: Vec<(u32, f64)> = map.into_iter().collect();
        acc.sort_unstable_by_key(|x| x.0);
        acc.iter()
            .map(|&(s, d)| d * d * self.exposure[s as usize])
            .sum()
    }

    /// The exposure of the stratum of commit `j` (0 for a free one).
    pub(super) fn exposure_of(&self, j: usize) -> f64 {
        match self.of[j] {
            FREE => 0.0,
            s => self.exposure[s as usize],
        }
    }
}

/// [`Strata::repeated`]: per build measured in two or more windows that each hold it alone,
/// a one-way analysis of variance of its runs by window (each build once: its commits' shares
/// summed), pooled over the builds.
fn repeated_windows(runs: &[Vec<(f64, u32)>], tied: &[bool], share: &[f64]) -> Option<(f64, f64)> {
    let none = u32::MAX;
    // Pooled: between-window sum of squares and its df, within-window ones, and the
    // df-weighted size of a window (n0).
    let (mut ssb, mut dfb, mut ssw, mut dfw, mut n0) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let mut groups: Vec<(u32, f64, f64, f64)> = Vec::new();
    for (r, &s) in runs.iter().zip(share) {
        groups.clear();
        for &(x, w) in r {
            if w == none || tied[w as usize] {
                continue;
            }
            match groups.iter_mut().find(|g| g.0 == w) {
                Some(g) => {
                    g.1 += 1.0;
                    g.2 += x;
                    g.3 += x * x;
                }
                None => groups.push((w, 1.0, x, x * x)),
            }
        }
        if groups.len() < 2 {
            continue;
        }
        let n: f64 = groups.iter().map(|g| g.1).sum();
        let grand = groups.iter().map(|g| g.2).sum::<f64>() / n;
        let k = groups.len() as f64;
        for g in &groups {
            let mean = g.2 / g.1;
            ssb += s * g.1 * (mean - grand).powi(2);
            ssw += s * (g.3 - g.1 * mean * mean).max(0.0);
            dfw += s * (g.1 - 1.0);
        }
        dfb += s * (k - 1.0);
        n0 += s * (n - groups.iter().map(|g| g.1 * g.1).sum::<f64>() / n);
    }
    if dfb < 1.0 - 1e-9 {
        return None;
    }
    let msb = ssb / dfb;
    let msw = if dfw > 0.0 { ssw / dfw } else { 0.0 };
    let n0 = n0 / dfb;
    Some((((msb - msw) / n0.max(1.0)).max(0.0), dfb))
}
