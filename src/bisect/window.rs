//! Windows of time: the samples of positions taken side by side (interleaved rounds, or one
//! commit's runs back to back), the evidence a decision may use (only samples of shared
//! windows), what gets positions measured together, the comparisons over several windows,
//! and the drift of the machine (the same build in different windows).

use std::collections::BTreeMap;

use super::classify::*;
use super::state::*;
use super::types::*;

/// The samples that may be compared for a set of positions: per window holding runs of every
/// one of them (a stratum), the finite samples of each, in the order asked.
#[derive(Debug, Clone, Default)]
pub(super) struct Evidence {
    pub(super) strata: Vec<Vec<Vec<f64>>>,
    /// Runs (failed ones too) of each position within these windows.
    pub(super) attempts: Vec<usize>,
    /// The newest window of this search holding every position: more runs go there.
    pub(super) extend: Option<(u64, u32)>,
}

impl Evidence {
    /// Every finite sample of the `i`th position in these windows.
    pub(super) fn pooled(&self, i: usize) -> Vec<f64> {
        self.strata
            .iter()
            .flat_map(|s| s[i].iter().copied())
            .collect()
    }

    /// Fewest runs of any of the positions.
    pub(super) fn fewest(&self) -> usize {
        self.attempts.iter().copied().min().unwrap_or(0)
    }
}

impl Search {
    /// The three-way verdict of the probe (the evidence's middle position) against the old
    /// (first) and new (last) positions.
    pub(super) fn classify_ev(&self, ev: &Evidence) -> Option<Classified> {
        let mo = stats::median(&ev.pooled(0))?;
        let mx = stats::median(&ev.pooled(1))?;
        let mn = stats::median(&ev.pooled(2))?;
        let co = self.compare_ev(ev, 0, 1)?;
        let cn = self.compare_ev(ev, 1, 2)?;
        Some(classify_cmp(
            co,
            cn,
            mo,
            mn,
            mx,
            &self.params,
            self.det,
            true,
        ))
    }

    /// Stored samples with the window of time each was taken in: samples of several
    /// positions in one window (an earlier search's, or `run`'s interleaved rounds) may be
    /// compared with each other. Window 0 (imported rows) is no window.
    pub fn add_stored(&mut self, pos: usize, samples: &[Stored]) {
        if pos >= self.points.len() || samples.is_empty() {
            return;
        }
        let values: Vec<f64> = samples.iter().map(|s| s.value).collect();
        self.add_samples(pos, &values);
        for s in samples.iter().filter(|s| s.window != 0) {
            let w = self.window_mut(s.window, false);
            w.runs.entry(pos).or_default().push(s.value);
            w.moments = w.moments.max(s.moment.saturating_add(1));
            if !s.shared {
                w.own.insert(pos);
            }
        }
    }

    /// The answer to [`Action::Window`]: the runs of each position in `window`, whose rounds
    /// were numbered from `first_moment` (`rounds` of them ran).
    pub fn add_window(
        &mut self,
        window: u64,
        first_moment: u32,
        rounds: u32,
        values: &[(usize, Vec<f64>)],
    ) {
        let limit = self.fail_limit();
        let len = self.points.len();
        self.answers += 1;
        let answer = self.answers;
        let w = self.window_mut(window, true);
        w.touched = answer;
        w.moments = w.moments.max(first_moment.saturating_add(rounds));
        for (pos, v) in values.iter().filter(|(p, _)| *p < len) {
            w.runs.entry(*pos).or_default().extend_from_slice(v);
            w.own.insert(*pos);
        }
        let mut any = false;
        for (pos, v) in values.iter().filter(|(p, _)| *p < len) {
            if !v.is_empty() {
                any = true;
                self.points[*pos].record(v, limit);
            }
        }
        if any {
            self.stalls = 0;
        }
    }

    fn window_mut(&mut self, id: u64, fresh: bool) -> &mut Win {
        let i = match self.windows.iter().position(|w| w.id == id) {
            Some(i) => i,
            None => {
                self.windows.push(Win {
                    id,
                    fresh,
                    ..Win::default()
                });
                self.windows.len() - 1
            }
        };
        &mut self.windows[i]
    }

    /// Whether decisions compare only samples taken in the same windows of time (a noisy
    /// metric with interleaving on).
    pub fn windowed(&self) -> bool {
        self.params.interleave && !self.det
    }

    /// How the machine moved while this search measured: the same build in different windows
    /// of time (this search's and the store's).
    pub fn drift(&self) -> Option<Drift> {
        drift_of(&self.windows, self.params.alpha)
    }

    /// Runs this search made, and of them the runs of commits measured again beside a probe
    /// (the bounds of its window, the ends, the verification's parent): what interleaving
    /// cost. Returns `(windows opened, runs in them, runs of positions other than the probe)`.
    pub fn interleaving(&self) -> (usize, usize, usize) {
        let fresh: Vec<&Win> = self.windows.iter().filter(|w| w.fresh).collect();
        let runs: usize = fresh
            .iter()
            .map(|w| w.runs.values().map(Vec::len).sum::<usize>())
            .sum();
        // In a window of k positions, k - 1 of them are there for the comparison.
        let beside: usize = fresh
            .iter()
            .filter(|w| w.runs.len() > 1)
            .map(|w| {
                let most = w.runs.values().map(Vec::len).max().unwrap_or(0);
                w.runs.values().map(Vec::len).sum::<usize>() - most
            })
            .sum();
        (fresh.len(), runs, beside)
    }

    /// The samples of `ps` that may be compared with each other: in a windowed search those of
    /// every window that holds runs of all of them; otherwise all samples of each, pooled.
    pub(super) fn evidence(&self, ps: &[usize]) -> Evidence {
        self.evidence_in(ps, 0)
    }

    /// [`Search::evidence`] in the windows measured from the `since`th answer on
    /// ([`Win::touched`]; 0: every window) in a windowed search; otherwise every sample.
    pub(super) fn evidence_in(&self, ps: &[usize], since: usize) -> Evidence {
        if !self.windowed() {
            return Evidence {
                strata: vec![ps.iter().map(|&p| self.points[p].samples.clone()).collect()],
                attempts: ps.iter().map(|&p| self.points[p].attempts).collect(),
                extend: None,
            };
        }
        let mut ev = Evidence {
            attempts: vec![0; ps.len()],
            ..Evidence::default()
        };
        for w in self.windows.iter().filter(|w| w.touched >= since) {
            if !ps
                .iter()
                .all(|p| w.runs.get(p).is_some_and(|v| !v.is_empty()))
            {
                continue;
            }
            let mut stratum = Vec::with_capacity(ps.len());
            for (i, p) in ps.iter().enumerate() {
                let runs = &w.runs[p];
                ev.attempts[i] += runs.len();
                stratum.push(runs.iter().copied().filter(|x| x.is_finite()).collect());
            }
            ev.strata.push(stratum);
            if w.fresh {
                ev.extend = Some((w.id, w.moments));
            }
        }
        ev
    }

    /// What gets every position of `ps` to `n` runs (up to `max_repeats`) where they may be
    /// compared: in a windowed search one window of all of them, run round by round (the
    /// newest one of this search is extended); otherwise the position with the fewest runs,
    /// back to back. `None` when they have them, or when one of them cannot be measured.
    pub(super) fn ensure(&self, ps: &[usize], n: usize) -> Option<Action> {
        self.ensure_in(ps, n, 0)
    }

    /// [`Search::ensure`] counting runs in the windows measured from the `since`th answer on.
    pub(super) fn ensure_in(&self, ps: &[usize], n: usize, since: usize) -> Option<Action> {
        self.ensure_upto(ps, n.min(self.params.max_repeats), since)
    }

    /// The most runs each of `ps` may get while the evidence of a decision over them still
    /// straddles the threshold: `--max-runs` when given, else [`budget_of`] the runs whose
    /// own time adds up to one build of them (the smallest such budget known). Runs are cheap
    /// next to a build: a decision spends up to a build's time before it gives up.
    pub fn budget(&self, ps: &[usize]) -> usize {
        let max = self.params.max_repeats;
        if let Some(n) = self.params.max_runs {
            return n.max(max);
        }
        if self.det {
            return max;
        }
        let timed = ps
            .iter()
            .filter_map(|&p| self.points.get(p).map(|pt| pt.budget))
            .filter(|&b| b > 0)
            .min();
        budget_of(max, timed)
    }

    /// What a decision over `ps` that gave up had spent: `the 100 runs of each that take as
    /// long as one build` or `the 60 runs of each --max-runs allows`.
    pub(super) fn spent(&self, ps: &[usize]) -> String {
        let n = self.budget(ps);
        let why = if self.params.max_runs.is_some() {
            "`--max-runs` (or the test's `max_runs`) allows"
        } else if n > 2 * self.params.max_repeats {
            "that take as long as one build"
        } else {
            "of the budget (twice `max_repeats`; one build's time buys no more)"
        };
        format!("the {n} runs of each {why}")
    }

    /// `; about 240 runs of each would decide it (--max-runs 240)`: the runs a side that
    /// would show a change of the relative threshold `thr` at this noise (`cv`), 80 % of the
    /// time; empty where none would.
    pub(super) fn deciding_runs(&self, cv: f64, thr: f64) -> String {
        let n = stats::repeats_needed(cv, thr, self.params.alpha, 0.8);
        if n == usize::MAX || n == 0 {
            return String::new();
        }
        format!("; about {n} runs of each would decide it (`--max-runs {n}`)")
    }

    /// More runs of `ps` towards `n` each (doubling from what they have), up to their
    /// [`Search::budget`]: what a decision whose evidence straddles the threshold asks once
    /// `max_repeats` is spent. `None` when the budget is spent or one cannot be measured.
    pub(super) fn beyond(&self, ps: &[usize], have: usize, since: usize) -> Option<Action> {
        let limit = self.budget(ps);
        (have < limit)
            .then(|| self.ensure_upto(ps, (2 * have.max(1)).min(limit), since))
            .flatten()
    }

    /// [`Search::ensure_in`] without the `max_repeats` cap (the caller capped `n`).
    pub(super) fn ensure_upto(&self, ps: &[usize], n: usize, since: usize) -> Option<Action> {
        let ev = self.evidence_in(ps, since);
        if !self.windowed() {
            let mut order: Vec<usize> = (0..ps.len()).collect();
            order.sort_by_key(|&i| (ev.attempts[i], i));
            return order.into_iter().find_map(|i| {
                let p = ps[i];
                (self.points[p].measurable() && ev.attempts[i] < n).then(|| Action::Measure {
                    pos: p,
                    runs: n - ev.attempts[i],
                })
            });
        }
        if ps.iter().any(|&p| !self.points[p].measurable()) {
            return None;
        }
        let have = ev.fewest();
        let mut positions = ps.to_vec();
        positions.dedup();
        (have < n).then(|| Action::Window {
            positions,
            runs: n - have,
            window: ev.extend,
        })
    }

    /// The comparison of the `i`th and `j`th positions of `ev`: the test on the runs taken
    /// side by side, the levels the medians of those runs, the change estimated window by
    /// window ([`stats::step`]: the one definition every view of a step reads).
    pub(super) fn compare_ev(&self, ev: &Evidence, i: usize, j: usize) -> Option<Cmp> {
        if self.det || ev.strata.len() <= 1 && !self.params.counted {
            return compare(
                &ev.strata.first()?[i],
                &ev.strata.first()?[j],
                &self.params,
                self.det,
            );
        }
        let strata = self.strata_of(ev, i, j);
        let step = stats::step::estimate(&strata)?;
        let p = if self.params.counted {
            // Counts barely drift: their windows pooled, a t test. Its noise is the one every
            // commit of this search shows once enough runs tell it, so one run a side can
            // decide; before that, Welch's on these runs alone (see `compare`).
            let (a, b) = (ev.pooled(i), ev.pooled(j));
            match self.pooled_noise() {
                Some(noise) => stats::pooled_t(&a, &b, noise)?.p_value,
                None => compare(&a, &b, &self.params, false)?.p,
            }
        } else {
            stats::differ_strata(&strata, self.params.alpha, self.params.threshold)?.p_value
        };
        Some(Cmp {
            before: step.before,
            after: step.after,
            rel: step.rel_change,
            p,
            differs: p < self.params.alpha && self.reaches(step.before, step.rel_change),
        })
    }

    /// The windows of `ev` holding runs of both its `i`th and `j`th positions.
    pub(super) fn strata_of<'e>(
        &self,
        ev: &'e Evidence,
        i: usize,
        j: usize,
    ) -> Vec<(&'e [f64], &'e [f64])> {
        ev.strata
            .iter()
            .map(|s| (s[i].as_slice(), s[j].as_slice()))
            .filter(|(a, b)| !a.is_empty() && !b.is_empty())
            .collect()
    }

    /// Whether a change of `rel` from `before` reaches the threshold.
    pub(super) fn reaches(&self, before: f64, rel: f64) -> bool {
        self.params
            .threshold
            .reached(before, before + rel * before.abs())
    }

    /// Positions `a` and `b` compared on the samples they share a window with.
    pub(super) fn compare_pos(&self, a: usize, b: usize) -> Option<Cmp> {
        let ev = self.evidence(&[a, b]);
        self.compare_ev(&ev, 0, 1)
    }

    /// Robust CV of each position's samples within each window of `ev` (weighted by their
    /// number): the noise the comparison sees, drift within a window included.
    pub(super) fn noise_of(&self, ev: &Evidence) -> f64 {
        let (mut num, mut den) = (0.0, 0.0);
        for stratum in &ev.strata {
            for s in stratum {
                if s.len() >= 2 {
                    if let Some(cv) = stats::robust_cv(s).filter(|c| c.is_finite()) {
                        num += cv * s.len() as f64;
                        den += s.len() as f64;
                    }
                }
            }
        }
        if den > 0.0 {
            num / den
        } else {
            self.noise_cv()
        }
    }

    /// The spread of a counted metric's runs within each commit, pooled over every commit of
    /// this search ([`stats::pooled_rel_var`]), once it rests on [`POOLED_DF`] degrees of
    /// freedom: a count varies alike on every build (the same poll loops), so what many runs
    /// show is what one run of a new commit is judged against. Only each commit's own runs in
    /// windows of time count: the runs an identical build lends it are another commit's too,
    /// and would count twice. `None` for other metrics.
    pub(super) fn pooled_noise(&self) -> Option<stats::PooledNoise> {
        if !self.params.counted || self.det {
            return None;
        }
        // Over the runs there are, not over every commit of the range (which may be long).
        let mut own: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        for w in &self.windows {
            for p in &w.own {
                if let Some(runs) = w.runs.get(p) {
                    own.entry(*p).or_default().extend_from_slice(runs);
                }
            }
        }
        stats::pooled_rel_var(own.values().map(Vec::as_slice)).filter(|n| n.df >= POOLED_DF)
    }

    /// Pooled robust CV of every commit with at least two samples, weighted by their number.
    pub(super) fn noise_cv(&self) -> f64 {
        let (mut num, mut den) = (0.0, 0.0);
        for p in &self.points {
            if p.samples.len() >= 2 {
                if let Some(cv) = stats::robust_cv(&p.samples).filter(|c| c.is_finite()) {
                    num += cv * p.samples.len() as f64;
                    den += p.samples.len() as f64;
                }
            }
        }
        if den > 0.0 {
            num / den
        } else {
            0.0
        }
    }

    /// Whether the runs of `strata` (old side first) show their step short of the threshold
    /// in direction `up` (`None`: either way): the whole 95 % interval of the step
    /// ([`stats::step`]) on the near side of it. A median that misses the threshold is not
    /// that: a step 1.4 times the threshold measures below it in one look of several, and a
    /// search looks many times (the ends, the parent, the re-runs). One run a side has no
    /// interval and shows nothing; a deterministic search compares exact values.
    pub(super) fn short_of_threshold(&self, strata: &[(&[f64], &[f64])], up: Option<bool>) -> bool {
        if self.det {
            return true;
        }
        let Some((lo, hi, thr)) = self.step_interval(strata) else {
            return false;
        };
        match up {
            Some(true) => hi < thr,
            Some(false) => lo > -thr,
            None => lo > -thr && hi < thr,
        }
    }

    /// Whether the runs of `strata` show their step beyond the threshold: the whole interval
    /// of [`Search::short_of_threshold`] past it on one side. What a step's evidence must
    /// show before a hunt starts on it (with its runs still to spend): a range without a
    /// change measures as one on a few runs a side now and then.
    pub(super) fn past_threshold(&self, strata: &[(&[f64], &[f64])]) -> bool {
        if self.det {
            return true;
        }
        self.step_interval(strata)
            .is_some_and(|(lo, hi, thr)| lo >= thr || hi <= -thr)
    }

    /// The 95 % interval of the step of `strata` as [`Search::short_of_threshold`] widens
    /// it, and the threshold relative to its level.
    fn step_interval(&self, strata: &[(&[f64], &[f64])]) -> Option<(f64, f64, f64)> {
        let step = stats::step::estimate_with_interval(strata)?;
        let (lo, hi) = step
            .interval
            .filter(|(l, h)| l.is_finite() && h.is_finite())?;
        // Resampling a handful of runs gives too narrow an interval (five runs' median takes
        // one of three values): at least as wide as the noise every commit of this search
        // shows allows (a median's standard error, 1.25 σ / √n a side).
        let z = 1.96 * 1.2533 * self.noise_cv();
        let se = (1.0 / step.n_before.max(1) as f64 + 1.0 / step.n_after.max(1) as f64).sqrt();
        let (lo, hi) = (
            lo.min(step.rel_change - z * se),
            hi.max(step.rel_change + z * se),
        );
        Some((lo, hi, self.relative_threshold(step.before)))
    }

    /// The threshold as a relative change from `level`.
    pub(super) fn relative_threshold(&self, level: f64) -> f64 {
        match self.params.threshold {
            Threshold::Relative(r) => r.abs(),
            Threshold::Absolute(a) if level != 0.0 && level.is_finite() => a.abs() / level.abs(),
            Threshold::Absolute(_) => 0.0,
        }
    }
}

/// The budget of a commit whose test runs `max_repeats` at most before the budget, when
/// `timed` runs take as long as its build (if known): one more doubling at least (twice
/// `max_repeats`), as many as one build's time buys beyond that, [`MAX_BUDGET`] at most.
pub fn budget_of(max_repeats: usize, timed: Option<usize>) -> usize {
    let floor = 2 * max_repeats;
    timed.map_or(floor, |b| b.clamp(floor, MAX_BUDGET.max(floor)))
}

/// How much the same build's level moved between windows of time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    /// The position whose windows' medians moved most.
    pub pos: usize,
    /// (highest - lowest) window median over the median of all its samples.
    pub rel: f64,
    /// Windows it was measured in (with at least 3 finite samples each).
    pub windows: usize,
    /// p-value of the rank test between its lowest and highest window: small when the move is
    /// more than this commit's noise could make.
    pub p_value: f64,
}

/// The largest move of one position's median between windows (each with at least 3 finite
/// samples of it), with a rank test of its lowest against its highest window.
pub(super) fn drift_of(windows: &[Win], alpha: f64) -> Option<Drift> {
    let mut by_pos: BTreeMap<usize, Vec<Vec<f64>>> = BTreeMap::new();
    for w in windows {
        for (&p, runs) in &w.runs {
            let v: Vec<f64> = runs.iter().copied().filter(|x| x.is_finite()).collect();
            if v.len() >= 3 {
                by_pos.entry(p).or_default().push(v);
            }
        }
    }
    let _ = alpha;
    let mut best: Option<Drift> = None;
    for (pos, ws) in by_pos {
        if ws.len() < 2 {
            continue;
        }
        let meds: Vec<f64> = ws.iter().filter_map(|v| stats::median(v)).collect();
        let all: Vec<f64> = ws.iter().flatten().copied().collect();
        let Some(m) = stats::median(&all).filter(|m| *m != 0.0) else {
            continue;
        };
        let (lo_i, hi_i) = (
            (0..meds.len()).min_by(|&a, &b| meds[a].total_cmp(&meds[b]))?,
            (0..meds.len()).max_by(|&a, &b| meds[a].total_cmp(&meds[b]))?,
        );
        let rel = (meds[hi_i] - meds[lo_i]) / m.abs();
        let p = stats::mann_whitney_u(&ws[lo_i], &ws[hi_i]).map_or(1.0, |t| t.p_value);
        if best.is_none_or(|b| rel > b.rel) {
            best = Some(Drift {
                pos,
                rel,
                windows: ws.len(),
                p_value: p,
            });
        }
    }
    best
}
