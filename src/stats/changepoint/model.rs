//! The model of what the store holds: a run's value (a logarithm for a positive metric) is its
//! commit's level plus its window's effect plus noise. Every window of time is a machine state
//! with an effect of its own, a window of one build included: its effect is estimated where
//! the build was measured in other windows too (then its runs tell the state, not the level),
//! and within each stratum of windows linked by commits the effects are solved exactly. A
//! named machine's strata are put on the scale of the others by what neighbouring commits
//! show ([`Model::machine_offsets`]): a move seen only across machines is the machines'. A
//! stratum holding a named machine's windows (its nights) is centred on them, not on every
//! window: its lone nights elsewhere show that machine's usual state, not a session's.
//! Fitted here: the effects, each commit's level and the variance of that level (the runs'
//! noise over how many independent moments it has, plus the commit-to-commit jitter of
//! builds).

use super::super::summary::median_in_place;
use super::fit::{
    build_key, clipped_runs, commit_level, fit_offsets, lone_windows_pooled, overlap_offsets,
    wide_spread, Scale, CLIP_K, NONE,
};
use super::point::{Obs, Runs};
use super::spread::{self, scaled_sigma, MIN_DIFFS};
use super::strata::Strata;

/// Commits summed together for the window effects (a fixed size: the float sums must not
/// depend on the machine's cores).
const EFFECT_CHUNK: usize = 512;
/// Rounds of the alternating fit of commit levels and window effects.
const ROUNDS: usize = 4;

/// The commits with at least one finite run, on the scale of the analysis.
pub(super) struct Model {
    /// Position in the series of each kept commit.
    pub(super) pos: Vec<usize>,
    /// How values map to the analysis scale (logarithms, or centred and scaled).
    scale: Scale,
    /// Each kept commit's runs: value (on the analysis scale) and dense window (`NONE`: a
    /// moment of its own, no effect to estimate).
    runs: Vec<Vec<(f64, u32)>>,
    /// A kept commit's build is the previous kept commit's: no step can lie between them.
    pub(super) joined: Vec<bool>,
    /// The window effect of each dense window (0 for a window of one commit).
    effect: Vec<f64>,
    /// Some window holds runs of two or more builds: levels are told apart from drift.
    pub(super) tied: bool,
    /// Per window: a machine's pool of runs taken with no window (each its own moment).
    pool: Vec<bool>,
    /// Per window holding one build's runs only (a night of a cron, a run of one commit):
    /// the machine that took them.
    night: Vec<Option<u64>>,
    /// Which commits' levels were measured on one machine state (windows linked by commits).
    pub(super) strata: Strata,
    /// Named machines put on the scale of the most measured one: each machine, its offset
    /// (analysis scale) and how many times the commits in order cross to it from another.
    pub(super) machines: Vec<MachineOffset>,
    /// What [`Model::align`] moved each stratum's levels by (analysis scale).
    aligned: Vec<f64>,
    /// Where windows are bridged by few commits (the effects solved exactly): each window
    /// effect's variance and each commit's share of each of its windows.
    pub(super) bridge: Option<super::effects::Bridge>,
    /// Each commit's level (window effects removed, outlier runs clipped).
    pub(super) level: Vec<f64>,
    /// Independent moments of each commit.
    pub(super) n: Vec<usize>,
    /// The variance of each commit's runs about its level (clipped as the level is).
    spread: Vec<f64>,
    /// Each commit's share of its runs (1, or 1/k where k commits show one build's runs).
    share: Vec<f64>,
    /// σ of one run from repeats of a commit; `None` without 3 pairs.
    pub(super) sigma: Option<f64>,
    /// The variance of one clipped run about its commit's level, pooled over the commits
    /// (each at most 10 runs, each build once): what a contrast of runs is tested against.
    pooled: Option<f64>,
    /// Variance of a commit level beyond its runs' noise: build-to-build jitter.
    pub(super) tau2: f64,
    /// The same for commits of a stratum holding several (none where the jitter was read
    /// across machine states only: it holds their moves, not the builds').
    pub(super) tau2_together: f64,
    /// Pairs of runs or commit differences the noise was estimated from (the test's degrees
    /// of freedom).
    pub(super) df: f64,
    /// The median of each commit's runs as measured.
    pub(super) medians: Vec<f64>,
}

/// A named machine's offset against the most measured machine, as neighbouring commits show it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct MachineOffset {
    pub(super) machine: u64,
    /// Its levels less the reference machine's (analysis scale), from the commits beside it.
    pub(super) offset: f64,
    /// Times the commits in order pass from another machine to this one: one handover is
    /// one, nights alternating are many.
    pub(super) crossings: usize,
    /// Commits of this machine whose neighbours on another gave the offset.
    pub(super) pairs: usize,
}

/// Commits apart at most (in order of the commits measured) for two commits of one window to
/// tell the jitter of builds.
const PAIR_GAP: usize = 3;
/// Commits apart at most for a commit of another machine to be a neighbour of one.
const NEIGHBOUR: usize = 3;

impl Model {
    /// The kept commits of `runs` (positions with a finite value), with `share` and `joined`
    /// per series position (empty: 1 and false).
    pub(super) fn new(runs: Runs) -> Model {
        let Runs {
            commits: runs,
            share,
            joined,
        } = runs;
        let finite = |o: &&Obs| o.value.is_finite();
        let scale = Scale::of(runs.iter().flatten().filter(finite).map(|o| o.value));
        let (mut pos, mut sh, mut jn, mut medians) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut kept: Vec<Vec<(f64, u32)>> = Vec::new();
        // Dense windows in order of first appearance, one lookup a run: millions of cron rows
        // pass here. Runs without a window are their machine's pool (one window a machine).
        // Per dense window: the first build seen in it, whether another was, its machine.
        let mut ids: std::collections::HashMap<u64, u32, foldhash::fast::RandomState> =
            Default::default();
        let mut pools: std::collections::HashMap<u64, u32, foldhash::fast::RandomState> =
            Default::default();
        let mut seen: Vec<(u64, bool)> = Vec::new();
        let mut machine_of: Vec<u64> = Vec::new();
        let mut pool: Vec<bool> = Vec::new();
        let mut buf = Vec::new();
        let mut run_of_joined = false;
        for (i, r) in runs.into_iter().enumerate() {
            run_of_joined |= joined.get(i).copied().unwrap_or(false);
            // (-0.0 is 0.0: a median must not take its sign from the order of the runs.)
            let plain = |v: f64| if v == 0.0 { 0.0 } else { v };
            buf.clear();
            buf.extend(r.iter().filter(finite).map(|o| plain(o.value)));
            let Some(median) = median_in_place(&mut buf) else {
                continue;
            };
            let j = pos.len();
            // A commit joins the previous kept one when every commit between is the same build.
            jn.push(j > 0 && run_of_joined && joined.get(i).copied().unwrap_or(false));
            run_of_joined = true;
            pos.push(i);
            medians.push(median);
            let s = share.get(i).copied().unwrap_or(1.0);
            sh.push(if s > 0.0 && s.is_finite() { s } else { 1.0 });
            // Rows of one byte-identical build show the same runs: one build, whichever rows
            // show it. A window holding only its runs ties no two builds together.
            let build = build_key(r.iter().filter(finite).map(|o| (plain(o.value), o.window)));
            let mut dense = |o: &Obs| {
                let (map, key) = if o.window == 0 {
                    (&mut pools, o.machine)
                } else {
                    (&mut ids, o.window)
                };
                let d = *map.entry(key).or_insert_with(|| {
                    seen.push((build, false));
                    machine_of.push(o.machine);
                    pool.push(o.window == 0);
                    (seen.len() - 1) as u32
                });
                let e = &mut seen[d as usize];
                e.1 |= e.0 != build;
                d
            };
            kept.push(
                r.iter()
                    .filter(finite)
                    .map(|o| (scale.to(plain(o.value)), dense(o)))
                    .collect(),
            );
        }
        lone_windows_pooled(&mut kept, &mut seen, &mut machine_of, &mut pool, &mut pools);
        // Windows of interleaved rounds tie builds (levels told from drift); a pool does not:
        // its runs are each a moment of their own.
        let tied = seen.iter().zip(&pool).any(|(s, p)| s.1 && !p);
        let strata = Strata::new(&kept, &machine_of);
        let night = (0..seen.len())
            .map(|w| (!seen[w].1 && !pool[w]).then_some(machine_of[w]))
            .collect();
        // A commit's independent moments that tell its level: its runs in windows it shares
        // with other builds (a window of its build alone has an effect of its own, which takes
        // those runs' mean where the build was measured elsewhere too); all of them where it
        // has no other.
        let shares = |w: u32| seen[w as usize].1 || pool[w as usize];
        let n = kept
            .iter()
            .map(|r| match r.iter().filter(|x| shares(x.1)).count() {
                0 => r.len(),
                k => k,
            })
            .collect();
        Model {
            pos,
            scale,
            joined: jn,
            effect: vec![0.0; seen.len()],
            tied,
            pool,
            night,
            strata,
            machines: Vec::new(),
            aligned: Vec::new(),
            bridge: None,
            level: Vec::new(),
            spread: Vec::new(),
            n,
            share: sh,
            sigma: None,
            pooled: None,
            tau2: 0.0,
            tau2_together: 0.0,
            df: 1.0,
            medians,
            runs: kept,
        }
    }

    /// Some run of commit `j` (window effects removed) lies within ±CLIP_K σ of `level`
    /// (analysis scale): the commit's own runs hold that level too (two outlier runs of three
    /// made its median, not a level of its own).
    pub(super) fn reaches(&self, j: usize, level: f64) -> bool {
        let Some(s) = self.sigma else {
            return false;
        };
        self.runs[j]
            .iter()
            .any(|&(x, w)| (x - self.eff(w) - level).abs() <= CLIP_K * s)
    }

    /// A distance (analysis scale) beyond twice what clipping lets a run stray.
    pub(super) fn far(&self, d: f64) -> bool {
        self.sigma.is_some_and(|s| d > 2.0 * CLIP_K * s)
    }

    /// The distance of two measured values on the analysis scale.
    pub(super) fn distance(&self, a: f64, b: f64) -> f64 {
        (self.scale.to(b) - self.scale.to(a)).abs()
    }

    /// The value of `v` (analysis scale) as measured.
    pub(super) fn back(&self, v: f64) -> f64 {
        self.scale.back(v)
    }

    pub(super) fn len(&self) -> usize {
        self.pos.len()
    }

    /// Each commit's independent moments times its share of them.
    pub(super) fn moments(&self) -> Vec<f64> {
        self.n
            .iter()
            .zip(&self.share)
            .map(|(&n, s)| n as f64 * s)
            .collect()
    }

    /// The runs of the commits [a, b) as measured (analysis scale) when every one of them
    /// shows the same runs (one build's); `None` otherwise.
    pub(super) fn one_build(&self, a: usize, b: usize) -> Option<Vec<f64>> {
        let first = self.runs.get(a)?;
        self.runs[a..b]
            .iter()
            .all(|r| r == first)
            .then(|| first.iter().map(|x| x.0).collect())
    }

    /// Each level's variance from its runs' noise alone (no jitter of builds): σ² (or its own
    /// wider spread) over its independent moments, over its share. `None` without σ.
    pub(super) fn noise_variances(&self) -> Option<Vec<f64>> {
        let sw = self.sigma?;
        Some(
            (0..self.len())
                .map(|j| self.runs_noise(j, sw) / self.share[j])
                .collect(),
        )
    }

    /// Commit `j`'s level's variance from its runs (before its share): σ² over its
    /// independent moments, or its own spread where its runs spread wider than the pooled σ
    /// (two outlier runs of three).
    fn runs_noise(&self, j: usize, sw: f64) -> f64 {
        self.run_var(j, sw) / self.n[j] as f64
    }

    /// The mean square of the clipped runs about their commits' levels, each commit's
    /// squares on its runs less one, each build once, less a degree of freedom for each
    /// window effect estimated. Unlike σ (a median of differences, robust but on
    /// about a third of the pairs' degrees of freedom) it holds the whole spread the levels'
    /// means carry, the clipped tails included, on the degrees of freedom a t test counts.
    fn pooled_var(&self) -> Option<f64> {
        let (mut sum, mut df) = (0.0, 0.0);
        for ((r, s), v) in self.runs.iter().zip(&self.share).zip(&self.spread) {
            let k = r.len().saturating_sub(1) as f64;
            sum += s * k * v;
            df += s * k;
        }
        // Less one for each window effect estimated beyond one a stratum (a night's effect
        // taken from its one reading leaves it no residual).
        df -= self.effect.len().saturating_sub(self.strata.windows.len()) as f64;
        (df >= 3.0 && sum > 0.0).then(|| sum / df)
    }

    /// The pooled mean square of runs ([`Model::pooled_var`]) as last fitted.
    pub(super) fn pooled(&self) -> Option<f64> {
        self.pooled
    }

    /// The variance of one of commit `j`'s runs in a contrast of runs: the pooled mean square,
    /// or the commit's own where wider (two moments or more: a commit alone on a side, one of
    /// its two runs an outlier, is no level told apart).
    pub(super) fn contrast_run_var(&self, j: usize, pooled: f64) -> f64 {
        let own = if self.n[j] >= 2 { self.spread[j] } else { 0.0 };
        pooled.max(own)
    }

    /// What level `j`'s inflation by the series' tails (`f`: how much wider its level spreads
    /// than its variance on σ says) leaves to a contrast of its runs on
    /// [`Model::contrast_run_var`]: σ is a median of pairs, robust to the outlier runs the
    /// mean square holds, so the part of `f` that the wider variance per run already carries
    /// is taken out (else a contrast of runs pays it twice); never below 1.
    pub(super) fn contrast_inflation(&self, j: usize, pooled: f64, f: f64) -> f64 {
        let Some(sw) = self.sigma.filter(|s| *s > 0.0) else {
            return f;
        };
        (f * self.run_var(j, sw) / self.contrast_run_var(j, pooled)).max(1.0)
    }

    /// Commit `j`'s runs are shown on other commits too (one build's).
    pub(super) fn shared(&self, j: usize) -> bool {
        self.share[j] < 1.0
    }

    /// Commit `j`'s runs as kept (analysis scale, dense window).
    pub(super) fn runs_of(&self, j: usize) -> &[(f64, u32)] {
        &self.runs[j]
    }

    /// Commit `j`'s runs clipped as its level clips them, window effects kept.
    pub(super) fn clipped(&self, j: usize) -> Vec<(f64, u32)> {
        clipped_runs(&self.runs[j], &self.effect, self.sigma)
    }

    /// The machine of window `w` where it holds one build's runs only (a night); `None` for
    /// a window tying builds, a pool, or no window.
    pub(super) fn night(&self, w: u32) -> Option<u64> {
        self.night.get(w as usize).copied().flatten()
    }

    /// Some window holds one build's runs only.
    pub(super) fn has_nights(&self) -> bool {
        self.night.iter().any(Option::is_some)
    }

    /// Window `w` is a window of time with an effect of its own (not a machine's pool of runs
    /// each its own moment).
    pub(super) fn has_effect(&self, w: u32) -> bool {
        w != NONE && !self.pool[w as usize]
    }

    /// The variance of one of commit `j`'s runs: σ², or its own spread where wider (over
    /// three moments or more).
    fn run_var(&self, j: usize, sw: f64) -> f64 {
        let own = match self.n[j] {
            0 | 1 => 0.0,
            // Two runs: their spread is too rough a variance, but for an outlier run.
            2 => self.spread[j] * f64::from(self.outlier_widening(self.spread[j], 2.0) > 1.0),
            _ => self.spread[j],
        };
        (sw * sw).max(own)
    }

    /// Each level's distance from the median of it and the two levels on each side of it.
    pub(super) fn local_deviations(&self) -> Vec<f64> {
        let m = self.level.len();
        (0..m)
            .map(|j| {
                let (a, b) = (j.saturating_sub(2), (j + 3).min(m));
                let mut buf = [0.0f64; 5];
                buf[..b - a].copy_from_slice(&self.level[a..b]);
                self.level[j] - median_in_place(&mut buf[..b - a]).unwrap_or(self.level[j])
            })
            .collect()
    }

    /// Every commit's runs are one value each (sizes, counts).
    pub(super) fn flat_runs(&self) -> bool {
        self.runs.iter().all(|r| r.iter().all(|x| x.0 == r[0].0))
    }

    /// Every commit was run at least twice.
    pub(super) fn repeated(&self) -> bool {
        self.runs.iter().all(|r| r.len() >= 2)
    }

    /// Fits the window effects and the commit levels jointly (alternating means of clipped
    /// residuals), then the noise: σ of a run from repeats of a commit, τ² of a commit level
    /// from the differences of neighbouring levels. Returns each level's variance; `None` when
    /// nothing shows the noise (no repeats, and neighbouring levels that differ once or by one
    /// amount): no test can decide anything then.
    pub(super) fn fit(&mut self) -> Option<Vec<f64>> {
        self.fit_levels();
        self.machine_offsets();
        self.variances(&[])
    }

    /// The window effects and commit levels (alternating, see [`Model::fit`]).
    fn fit_levels(&mut self) {
        use rayon::prelude::*;
        // Only strata of several windows hold effects to estimate: elsewhere each is 0.
        let linked = self.strata.windows.iter().any(|&k| k > 1);
        let rounds = if linked { ROUNDS } else { 1 };
        let mut settled = !linked;
        for _ in 0..rounds {
            self.sigma = self.within_sigma();
            let effect = &self.effect;
            let sigma = self.sigma;
            (self.level, self.spread) = self
                .runs
                .par_iter()
                .map(|r| commit_level(r, effect, sigma))
                .unzip();
            if linked {
                let effect = self.window_effects();
                let tol = 1e-9 * self.sigma.unwrap_or(1.0);
                let moved = effect
                    .iter()
                    .zip(&self.effect)
                    .any(|(a, b)| (a - b).abs() > tol);
                self.effect = effect;
                // Windows that each hold every commit settle at once: the levels would not move.
                if !moved {
                    settled = true;
                    break;
                }
            }
        }
        if !settled {
            // Windows bridged by few commits: the effects solved exactly, then the levels
            // again, and what the effects' own uncertainty adds to a contrast of levels.
            let sigma = self.sigma;
            let clip = |r: &[(f64, u32)], e: &[f64]| clipped_runs(r, e, sigma);
            let (effect, bridge) = super::effects::bridged(
                &self.runs,
                &self.effect,
                NONE,
                &self.strata.of_window,
                &self.strata.centre,
                clip,
            );
            self.effect = effect;
            self.sigma = self.within_sigma();
            self.bridge = Some(bridge.with_sigma(self.sigma.unwrap_or(0.0)));
            self.relevel();
        }
        self.sigma = self.within_sigma();
    }

    /// Each commit's level and spread again, from the effects as they are.
    fn relevel(&mut self) {
        use rayon::prelude::*;
        let (effect, sigma) = (&self.effect, self.sigma);
        (self.level, self.spread) = self
            .runs
            .par_iter()
            .map(|r| commit_level(r, effect, sigma))
            .unzip();
    }

    /// Whether there are strata to put on one scale: two or more, over three commits or more.
    /// (Else [`Model::align`] moves nothing, and the segmentations it reads need not be made.)
    pub(super) fn alignable(&self) -> bool {
        self.strata.windows.len() >= 2 && self.len() >= 3
    }

    /// Puts the strata on one scale for the segmentation: each stratum of two commits or more
    /// is moved by its levels' weighted mean distance from the levels of the other commits it
    /// is compared with (fitted together, least squares): given the segmentation's boundaries
    /// `bounds`, the other commits of each of its segments; without them (`None`), the other
    /// commits among its own (between its first and last commit: strata far apart tell
    /// nothing of each other's states). A commit measured alone (a night, a run of one
    /// commit) stays as measured: its reading is all that tells its level. Where none does,
    /// the heaviest stratum stays. The offsets replace those of an earlier call and go into
    /// the window effects, so every level reads them (`y`, `w`: the levels as weighed now).
    /// Returns whether any level moved. The evidence for a step never rests on this:
    /// contrasts within strata and strata as units do not read the offsets (see
    /// [`super::confirm`]).
    pub(super) fn align(&mut self, y: &[f64], w: &[f64], bounds: Option<&[usize]>) -> bool {
        if !self.alignable() {
            return false;
        }
        let (m, k) = (y.len(), self.strata.windows.len());
        let of = &self.strata.of;
        self.aligned.resize(k, 0.0);
        // The levels as measured.
        let y: Vec<f64> = (0..m)
            .map(|j| y[j] + self.aligned[of[j] as usize])
            .collect();
        let (mut weight, mut commits) = (vec![0.0; k], vec![0usize; k]);
        let (mut first, mut last) = (vec![usize::MAX; k], vec![0usize; k]);
        for j in 0..m {
            let s = of[j] as usize;
            weight[s] += w[j];
            commits[s] += 1;
            first[s] = first[s].min(j);
            last[s] = j;
        }
        // Which strata move: those of two commits or more, but one (the heaviest) where no
        // commit stands alone.
        let mut free: Vec<bool> = commits.iter().map(|&n| n >= 2).collect();
        if commits.iter().all(|&n| n != 1) {
            if let Some(h) = (0..k).max_by(|&x, &z| weight[x].total_cmp(&weight[z])) {
                free[h] = false;
            }
        }
        let mut o = vec![0.0; k];
        if free.iter().any(|f| *f) {
            match bounds {
                Some(bounds) => fit_offsets(&y, w, of, &free, bounds, &mut o),
                None => overlap_offsets(&y, w, of, &free, &first, &last, &mut o),
            }
        }
        let delta: Vec<f64> = o.iter().zip(&self.aligned).map(|(n, a)| n - a).collect();
        if delta.iter().all(|x| x.abs() < 1e-12) {
            return false;
        }
        for (win, e) in self.effect.iter_mut().enumerate() {
            *e += delta[self.strata.of_window[win] as usize];
        }
        self.aligned = o;
        self.relevel();
        true
    }

    /// The variance the window effects' estimates add to `Σ coef_j level_j` (commits of one
    /// stratum, coefficients summing to 0): none where every window holds every commit (the
    /// effects settled at once), else through the links ([`super::effects::Bridge::var`]).
    pub(super) fn effects_var(&self, coef: &[(usize, f64)]) -> f64 {
        self.bridge
            .as_ref()
            .map_or(0.0, |b| b.var(coef, &self.runs))
    }

    /// Commit `j`'s level as measured: before [`Model::align`] moved its stratum.
    pub(super) fn raw_level(&self, j: usize) -> f64 {
        self.level[j] + self.aligned.get(self.strata.of[j] as usize).unwrap_or(&0.0)
    }

    /// Puts each named machine's strata on the scale of the most measured machine: the
    /// median difference of its commits' levels from the levels of the other machines'
    /// commits beside them (at most [`NEIGHBOUR`] commits away), machines taken from the most
    /// measured down. The offset is added to the effects of the machine's windows (strata on
    /// several machines are already on one scale, through the commits that link them).
    /// Steps are rare: over nights alternating machines most neighbours are at one level,
    /// and the median holds the machines' difference; over one handover the offset holds
    /// whatever moved there, which [`super::confirm`] then calls the machines' difference.
    pub(super) fn machine_offsets(&mut self) {
        let m = self.len();
        let of = |j: usize| self.strata.machine_of(j);
        let mut count: Vec<(u64, usize)> = Vec::new();
        for j in 0..m {
            let k = of(j);
            if k == super::strata::MIXED {
                continue;
            }
            match count.iter_mut().find(|c| c.0 == k) {
                Some(c) => c.1 += 1,
                None => count.push((k, 1)),
            }
        }
        if count.len() < 2 {
            return;
        }
        count.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
        let mut done: Vec<u64> = vec![count[0].0];
        let mut offsets: Vec<MachineOffset> = Vec::new();
        for &(k, _) in &count[1..] {
            let mut d = Vec::new();
            for j in (0..m).filter(|&j| of(j) == k) {
                let near = |range: &mut dyn Iterator<Item = usize>| {
                    range
                        .take(NEIGHBOUR)
                        .find(|&i| done.contains(&of(i)))
                        .map(|i| self.level[i])
                };
                let before = near(&mut (0..j).rev());
                let after = near(&mut (j + 1..m));
                let other = match (before, after) {
                    (Some(x), Some(y)) => (x + y) / 2.0,
                    (Some(x), None) | (None, Some(x)) => x,
                    (None, None) => continue,
                };
                d.push(self.level[j] - other);
            }
            let crossings = (1..m)
                .filter(|&j| of(j) == k && of(j - 1) != k && of(j - 1) != super::strata::MIXED)
                .count();
            let pairs = d.len();
            let offset = median_in_place(&mut d).unwrap_or(0.0);
            offsets.push(MachineOffset {
                machine: k,
                offset,
                crossings,
                pairs,
            });
            done.push(k);
        }
        for (w, e) in self.effect.iter_mut().enumerate() {
            let s = self.strata.of_window[w] as usize;
            let k = self.strata.scale[s];
            if let Some(o) = offsets.iter().find(|o| o.machine == k) {
                *e += o.offset;
            }
        }
        self.machines = offsets;
        self.relevel();
    }

    /// Each level's variance (see [`Model::fit`]), the jitter τ² from the differences of
    /// neighbouring levels within the segments of `cut` (a difference across a step is no
    /// jitter). τ² counts only where it clearly exceeds what the runs' noise gives (twice
    /// the relative sd of its estimate): otherwise the runs' noise alone.
    pub(super) fn variances(&mut self, cut: &[usize]) -> Option<Vec<f64>> {
        self.pooled = self.pooled_var();
        let inv_r: Vec<f64> = self.n.iter().map(|&n| 1.0 / n as f64).collect();
        let mut skip = self.joined.clone();
        for &c in cut {
            if let Some(s) = skip.get_mut(c) {
                *s = true;
            }
        }
        // Jitter from commits measured side by side in one window (no machine state, no
        // chain of links between them) where enough are; else from neighbouring levels.
        // Where too few neighbours share a stratum, the jitter read across strata holds their
        // machine states: it is no jitter of commits measured together, whose levels are
        // compared within their stratum on the runs' noise alone.
        let mut across_states = false;
        let d: Vec<(f64, f64)> = match self.window_pairs(&skip) {
            Some(d) if d.len() >= MIN_DIFFS => d,
            _ => {
                across_states = !self.within_strata(&mut skip);
                (1..self.len())
                    .filter(|&j| !skip[j])
                    .map(|j| {
                        let h = (inv_r[j] + inv_r[j - 1]) / 2.0;
                        (self.level[j] - self.level[j - 1], h)
                    })
                    .collect()
            }
        };
        // Without the runs' noise, the jitter is all the spread there is (a robust sd of the
        // differences, each scaled to the typical moments of those read).
        let (s_b, typical) = scaled_sigma(d.clone());
        // Degrees of freedom count each run once (a build's runs shown on k commits are one
        // build's: shares of 1/k), less one for each window effect estimated beyond one a stratum.
        let pairs: f64 = self
            .runs
            .iter()
            .zip(&self.share)
            .map(|(r, s)| s * r.len().min(10).saturating_sub(1) as f64)
            .sum::<f64>()
            - self.effect.len().saturating_sub(self.strata.windows.len()) as f64;
        let builds: f64 = self.share.iter().sum();
        let var: Vec<f64> = match (self.sigma, s_b) {
            (Some(sw), _) => {
                // Fewer differences than MIN_DIFFS cannot tell jitter from the steps among
                // them (three builds, two steps: the differences are the steps); the runs'
                // noise alone then (see `jitter`).
                // Against the noise a mean of runs carries: the runs' mean square (an outlier
                // run moves a mean of few as it moves that, not their robust spread).
                let noise = self.pooled.map_or(sw, f64::sqrt);
                self.tau2 = spread::jitter(&d, noise, (s_b, typical));
                // The commits of each stratum (one alone is compared across states only); the
                // jitter read across states is set aside only where some stratum holds several.
                let size = self.strata.sizes();
                let across_states = across_states && size.iter().any(|&n| n > 1);
                self.tau2_together = if across_states { 0.0 } else { self.tau2 };
                // Jitter that dominates the runs' noise is estimated from the commits, not
                // the pairs of runs: fewer degrees of freedom. (Not where it was read across
                // machine states: levels compared within their stratum then stand on the runs
                // alone.)
                self.df = if self.tau2 > sw * sw * typical && !across_states {
                    builds - 1.0
                } else {
                    pairs
                }
                .max(1.0);
                (0..self.len())
                    .map(|j| {
                        let tau2 = if across_states && size[self.strata.of[j] as usize] > 1 {
                            0.0
                        } else {
                            self.tau2
                        };
                        tau2 + self.runs_noise(j, sw)
                    })
                    .collect()
            }
            (None, Some(sb)) => {
                self.tau2 = sb * sb;
                self.tau2_together = self.tau2;
                self.df = (builds - 2.0).max(1.0);
                vec![sb * sb; self.len()]
            }
            (None, None) => {
                // No repeats and every difference equal (or one): no noise to test against.
                return None;
            }
        };
        Some(var.iter().zip(&self.share).map(|(v, s)| v / s).collect())
    }

    /// The differences of the mean runs of commits next to each other in one window (each
    /// window's commits in commit order, at most [`PAIR_GAP`] apart; none across a boundary
    /// or between commits of one build, as `skip` marks them), each with the mean inverse
    /// runs of its two means (a mean's runs fewer where they spread as an outlier run makes
    /// them: [`Model::outlier_widening`]). `None` where no window holds two commits.
    fn window_pairs(&self, skip: &[bool]) -> Option<Vec<(f64, f64)>> {
        // Per window: the last commit seen in it, its mean run there and its runs there as
        // moments (fewer where they spread clearly wider than the runs' noise).
        let mut last: Vec<Option<(usize, f64, f64)>> = vec![None; self.effect.len()];
        // Per pair of commits (once, however many windows hold both: a search measures a
        // parent and its culprit in window after window): the sum and count of its differences.
        let mut pairs: std::collections::BTreeMap<(usize, usize), (f64, f64, f64)> =
            Default::default();
        let mut by: Vec<(u32, f64, f64, f64)> = Vec::new();
        // Where the last boundary or join lies up to each commit (a pair is kept when none
        // lies after its first commit).
        let mut cut_at = vec![0usize; skip.len()];
        for j in 1..skip.len() {
            cut_at[j] = if skip[j] { j } else { cut_at[j - 1] };
        }
        for (j, r) in self.runs.iter().enumerate() {
            by.clear();
            for &(x, w) in r {
                match by.iter_mut().find(|e| e.0 == w) {
                    Some(e) => {
                        e.1 += x;
                        e.2 += x * x;
                        e.3 += 1.0;
                    }
                    None => by.push((w, x, x * x, 1.0)),
                }
            }
            for &(w, sum, squares, n) in &by {
                // A pool is no window of time: its runs were not taken side by side.
                if self.pool[w as usize] {
                    continue;
                }
                let mean = sum / n;
                let own = (squares - sum * mean) / (n - 1.0).max(1.0);
                let moments = n / self.outlier_widening(own, n);
                if let Some((i, other, m)) = last[w as usize] {
                    // Neighbours only: commits far apart may hold steps between them.
                    if cut_at[j] <= i && j - i <= PAIR_GAP {
                        let e = pairs.entry((i, j)).or_default();
                        e.0 += mean - other;
                        e.1 += (1.0 / moments + 1.0 / m) / 2.0;
                        e.2 += 1.0;
                    }
                }
                last[w as usize] = Some((j, mean, moments));
            }
        }
        let d: Vec<(f64, f64)> = pairs.values().map(|(sum, h, n)| (sum / n, h / n)).collect();
        (!d.is_empty()).then_some(d)
    }

    /// How much wider than the runs' noise σ² a mean of `n` runs spreading `own` (their
    /// sample variance) is to be read: by `own / σ²` where that lies beyond the 99 % point
    /// of σ²'s own spread on n − 1 degrees of freedom (an outlier run among few: the jitter of
    /// builds moves every run of a build alike, and never widens its runs), else 1.
    fn outlier_widening(&self, own: f64, n: f64) -> f64 {
        let Some(sw) = self.sigma.filter(|s| *s > 0.0) else {
            return 1.0;
        };
        let ratio = own / (sw * sw);
        // (Most means spread about as their noise does: no quantile to look up.)
        if n < 2.0 || !ratio.is_finite() || ratio <= 1.0 {
            return 1.0;
        }
        if ratio > wide_spread(n - 1.0) {
            ratio
        } else {
            1.0
        }
    }

    /// Leaves out (in `skip`) the differences of neighbouring levels of two strata where
    /// [`MIN_DIFFS`] others are left: such a difference holds the machine's move between the
    /// strata, no jitter of builds nor tail of the noise. (Commits each measured at its own
    /// time are strata of their own: there every difference is one, and all count.)
    pub(super) fn within_strata(&self, skip: &mut [bool]) -> bool {
        let within = (1..self.len())
            .filter(|&j| !skip[j] && !self.strata.switch(j))
            .count();
        let across = (1..self.len()).any(|j| !skip[j] && self.strata.switch(j));
        if within >= MIN_DIFFS {
            for (j, s) in skip.iter_mut().enumerate() {
                *s |= self.strata.switch(j);
            }
            return true;
        }
        !across
    }

    /// σ of one run from pairs of runs of the same commit (window effects removed):
    /// median |x_a - x_b| / (0.6745 √2); `None` without 3 pairs (each build's once) or when
    /// all are equal.
    fn within_sigma(&self) -> Option<f64> {
        let mut d = Vec::new();
        let mut distinct = 0.0;
        for (r, share) in self.runs.iter().zip(&self.share) {
            // At most 10 runs a commit: one commit with thousands must not decide alone.
            let r = &r[..r.len().min(10)];
            distinct += share * (r.len() * r.len().saturating_sub(1) / 2) as f64;
            for i in 0..r.len() {
                for k in i + 1..r.len() {
                    d.push(((r[i].0 - self.eff(r[i].1)) - (r[k].0 - self.eff(r[k].1))).abs());
                }
            }
        }
        if distinct < 3.0 - 1e-9 {
            return None;
        }
        let med = median_in_place(&mut d)?;
        let s = med / (0.674_489_75 * std::f64::consts::SQRT_2);
        (s > 0.0 && s.is_finite()).then_some(s)
    }

    fn eff(&self, w: u32) -> f64 {
        if w == NONE {
            0.0
        } else {
            self.effect[w as usize]
        }
    }

    /// Each tied window's effect: the mean residual of its runs against their commits' levels
    /// (each run's deviation from the current effect clipped at CLIP_K σ), centred so the
    /// effects average 0 over the runs.
    fn window_effects(&self) -> Vec<f64> {
        use rayon::prelude::*;
        let k = self.effect.len();
        let lim = self.sigma.map_or(f64::INFINITY, |s| CLIP_K * s);
        // Per chunk of commits (each holds a sum per window), then added up in chunk order:
        // the same sums on any machine, whatever its cores.
        let chunks: Vec<(Vec<f64>, Vec<usize>)> = self
            .runs
            .par_chunks(EFFECT_CHUNK)
            .zip(self.level.par_chunks(EFFECT_CHUNK))
            .map(|(runs, levels)| {
                let (mut sum, mut cnt) = (vec![0.0; k], vec![0usize; k]);
                for (r, &l) in runs.iter().zip(levels) {
                    for &(x, w) in r {
                        if w != NONE {
                            // The noise about the current effect is clipped, not the effect.
                            let e = self.effect[w as usize];
                            sum[w as usize] += e + (x - l - e).clamp(-lim, lim);
                            cnt[w as usize] += 1;
                        }
                    }
                }
                (sum, cnt)
            })
            .collect();
        let (mut sum, mut cnt) = (vec![0.0; k], vec![0usize; k]);
        for (s, c) in chunks {
            sum.iter_mut().zip(s).for_each(|(a, b)| *a += b);
            cnt.iter_mut().zip(c).for_each(|(a, b)| *a += b);
        }
        // Centred within each stratum: its levels carry its machine state, which nothing
        // ties to another stratum's.
        let of = &self.strata.of_window;
        let strata = self.strata.windows.len();
        let (mut ssum, mut scnt) = (vec![0.0; strata], vec![0usize; strata]);
        for (w, (s, &c)) in sum.iter().zip(&cnt).enumerate() {
            if self.strata.centre[w] {
                ssum[of[w] as usize] += s;
                scnt[of[w] as usize] += c;
            }
        }
        sum.iter()
            .zip(&cnt)
            .enumerate()
            .map(|(w, (s, &c))| {
                let k = of[w] as usize;
                if c > 0 {
                    s / c as f64 - ssum[k] / scnt[k].max(1) as f64
                } else {
                    0.0
                }
            })
            .collect()
    }
}
