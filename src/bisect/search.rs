//! The search's moves: creating it, taking samples, the ends, the hunt over sub-ranges, and
//! the choice of the next probe (its state is in `state`).

use super::classify::*;
use super::driver::*;
use super::state::*;
use super::types::*;
use super::window::*;

impl Search {
    /// A search over positions `0..len` (`len` = m+1); position 0 is the old end.
    pub fn new(len: usize, params: Params) -> Search {
        Search {
            params: params.sanitized(),
            build_cost: DEFAULT_BUILD_COST,
            points: vec![Point::default(); len],
            windows: Vec::new(),
            probed: Vec::new(),
            det: params.deterministic,
            phase: Phase::Ends,
            hunt: Hunt::default(),
            notes: Vec::new(),
            stalls: 0,
            labels: Vec::new(),
            no_det: false,
            min_detectable: None,
            decisions: Vec::new(),
            answers: 0,
            ends_rechecked: false,
            redo_ends: false,
        }
    }

    /// Names of the positions for notes and reasons (e.g. short hash and subject).
    pub fn set_labels(&mut self, labels: Vec<String>) {
        self.labels = labels;
    }

    /// `A`, or `A .. B (n commits)` for a span of positions.
    pub(super) fn span(&self, a: usize, b: usize) -> String {
        if a >= b {
            self.name(a)
        } else {
            format!(
                "{} .. {} ({} commits)",
                self.name(a),
                self.name(b),
                b - a + 1
            )
        }
    }

    /// `p = 0.012`, or `deterministic` where runs are compared as plain numbers.
    pub(super) fn p_text(&self, p: f64) -> String {
        if self.det {
            "exact values".into()
        } else {
            let p = fmt_p(p);
            if p.starts_with('<') {
                format!("p {p}")
            } else {
                format!("p = {p}")
            }
        }
    }

    pub(super) fn name(&self, pos: usize) -> String {
        self.labels
            .get(pos)
            .cloned()
            .unwrap_or_else(|| format!("position {pos}"))
    }

    /// Failed runs in a row after which a commit that built counts as unmeasurable.
    pub(super) fn fail_limit(&self) -> usize {
        self.params.repeats.max(2)
    }

    /// Positions whose test failed `repeats` times in a row: stepped around, for the report.
    pub fn failing(&self) -> Vec<usize> {
        (0..self.points.len())
            .filter(|&p| self.points[p].failing)
            .collect()
    }

    /// Cost of one build in units of one measurement round of `repeats` runs (default 4). Higher
    /// values make the search favour cached builds and stored samples over better splits.
    pub fn set_build_cost(&mut self, rounds: f64) {
        if rounds.is_finite() && rounds >= 0.0 {
            self.build_cost = rounds;
        }
    }

    /// Samples taken back to back, outside any window shared with other positions: stored
    /// ones, or the answer to [`Action::Measure`]; NaN stands for a run that gave no number.
    /// A noisy search compares them with nothing measured at another time (they still tell it
    /// the commit's noise and spread); a deterministic one uses them as they are.
    pub fn add_samples(&mut self, pos: usize, samples: &[f64]) {
        if samples.is_empty() {
            return;
        }
        self.stalls = 0;
        let limit = self.fail_limit();
        if let Some(p) = self.points.get_mut(pos) {
            p.record(samples, limit);
        }
    }

    /// This commit cannot be built (or tested): it is stepped around.
    pub fn mark_unbuildable(&mut self, pos: usize) {
        if let Some(p) = self.points.get_mut(pos) {
            if !p.unbuildable {
                p.unbuildable = true;
                self.stalls = 0;
            }
        }
    }

    /// Cost hint: this commit's build is cached, so probing it is cheap.
    pub fn mark_built(&mut self, pos: usize) {
        if let Some(p) = self.points.get_mut(pos) {
            p.built = true;
        }
    }

    /// The commits probed so far, in the order they were first probed (for the report).
    pub fn probed(&self) -> &[usize] {
        &self.probed
    }

    /// Side remarks for the report: sub-ranges that stayed inconclusive while others gave a
    /// culprit, commits stepped around, an unbuildable new end.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The sub-range being searched now, `(last old-like, first new-like)`, for progress output;
    /// `None` before the ends are known to differ and once the search is done.
    pub fn interval(&self) -> Option<(usize, usize)> {
        match self.phase {
            Phase::Hunt => self.hunt.active.as_ref().map(|s| (s.lo, s.hi)),
            _ => None,
        }
    }

    /// Whether the search treats the metric as deterministic (flag, or zero spread on both ends).
    pub fn is_deterministic(&self) -> bool {
        self.det
    }

    /// The smallest relative change the runs of the ends could have seen (80 % power at α),
    /// once they were compared: 0 for a deterministic metric.
    pub fn min_detectable(&self) -> Option<f64> {
        self.min_detectable
    }

    /// The next thing to do. Deterministic: the same inputs give the same sequence of actions.
    pub fn next_action(&mut self) -> Action {
        if let Phase::Done(o) = &self.phase {
            return Action::Done(o.clone());
        }
        self.stalls += 1;
        // Exact comparisons are only right while no commit's runs differ: once one does (a
        // verification's second run, say), start over as a noisy search on what is known.
        if self.det && self.params.tolerance == 0.0 && self.params.counted {
            // A count's jitter (33 instructions in 2.17 billion) is no sign of noise: where
            // every commit's runs spread within a tenth of the threshold (the rule that calls
            // a count's runs exact, see `settle_exact`), values compare within that from now on.
            let limit =
                |xs: &[f64]| self.relative_threshold(stats::median(xs).unwrap_or(0.0)) / 10.0;
            let jitter = self.points.iter().any(|p| has_spread(&p.samples));
            let within = self
                .points
                .iter()
                .all(|p| !has_spread(&p.samples) || rel_spread(&p.samples) <= limit(&p.samples));
            if jitter && within {
                let level = self
                    .points
                    .iter()
                    .find(|p| has_spread(&p.samples))
                    .and_then(|p| stats::median(&p.samples))
                    .unwrap_or(0.0);
                self.params.tolerance = self.relative_threshold(level) / 10.0;
            }
        }
        if self.det {
            let limit = self.params.tolerance;
            let spreads = |xs: &[f64]| {
                if limit > 0.0 {
                    rel_spread(xs) > limit
                } else {
                    has_spread(xs)
                }
            };
            if let Some(p) = (0..self.points.len()).find(|&p| spreads(&self.points[p].samples)) {
                self.notes.push(format!(
                    "runs of {} differ, so the test is not deterministic{}; searched again as a noisy test",
                    self.name(p),
                    if self.params.deterministic { " as declared" } else { "" }
                ));
                self.det = false;
                self.params.deterministic = false;
                self.params.tolerance = 0.0;
                self.no_det = true;
                self.phase = Phase::Ends;
                self.hunt = Hunt::default();
            }
        }
        if self.stalls > MAX_STALLS {
            return self.finish_action(Outcome::Inconclusive {
                reason: "the caller stopped feeding results back".into(),
                best_guess: None,
            });
        }
        // Every `Again` consumes a probe, a bound or a sub-range, so this bound is never reached;
        // it only guarantees termination if that reasoning has a hole.
        let cap = 64 + 16 * self.points.len();
        for _ in 0..cap {
            let flow = match self.phase {
                Phase::Ends => self.step_ends(),
                Phase::Hunt => self.step_hunt(),
                Phase::Done(ref o) => return Action::Done(o.clone()),
            };
            if let Flow::Act(a) = flow {
                return a;
            }
        }
        self.finish_action(Outcome::Inconclusive {
            reason: "internal error: the search made no progress".into(),
            best_guess: None,
        })
    }

    pub(super) fn finish_action(&mut self, o: Outcome) -> Action {
        self.phase = Phase::Done(o.clone());
        Action::Done(o)
    }

    pub(super) fn finish(&mut self, o: Outcome) -> Flow {
        Flow::Act(self.finish_action(o))
    }

    pub(super) fn first_runs(&self) -> usize {
        // A count whose noise the search already knows: one run of a probe can place it.
        if self.det || self.pooled_noise().is_some() {
            1
        } else {
            self.params.repeats
        }
    }

    pub(super) fn touch(&mut self, pos: usize) {
        if !self.probed.contains(&pos) {
            self.probed.push(pos);
        }
    }

    /// Not yet significant, but worth more runs: a smallish p-value, or medians that already show
    /// the expected change (rank tests on a handful of runs are easily swamped by two outliers).
    pub(super) fn promising(&self, c: &Cmp, up: bool) -> bool {
        let same_dir = (c.after > c.before) == up;
        same_dir && (c.p < PROMISING_P || self.params.threshold.reached(c.before, c.after))
    }

    pub(super) fn step_hunt(&mut self) -> Flow {
        let Some(mut seg) = self.hunt.active.take() else {
            if let Some(next) = self.hunt.pending.pop() {
                self.hunt.active = Some(next);
                return Flow::Again;
            }
            return self.finish_hunt();
        };
        let flow = match seg.stage {
            Stage::Bisect => self.bisect_step(&mut seg),
            Stage::Check => self.check_step(&mut seg),
            Stage::Verify(_) => self.verify_step(&mut seg),
        };
        if std::mem::take(&mut self.redo_ends) {
            self.hunt = Hunt::default();
            self.phase = Phase::Ends;
            return Flow::Again;
        }
        match flow {
            SegFlow::Act(a) => {
                self.hunt.active = Some(seg);
                Flow::Act(a)
            }
            SegFlow::Again => {
                self.hunt.active = Some(seg);
                Flow::Again
            }
            SegFlow::Found(c) => {
                self.hunt.found.push(c);
                Flow::Again
            }
            SegFlow::Failed(reason, guess) => {
                self.hunt.failed.push((reason, guess));
                Flow::Again
            }
        }
    }

    /// The commits a probe of `seg` is measured beside: the nearest ones on each side that can
    /// be measured again (the bounds, unless they cannot); the bounds themselves when neither
    /// can, so stored windows may still hold all three.
    pub(super) fn anchors(&self, seg: &Segment) -> (usize, usize) {
        let ok = |p: &usize| self.points[*p].measurable();
        let a = seg
            .olds
            .iter()
            .copied()
            .filter(ok)
            .max()
            .filter(|_| !ok(&seg.lo))
            .unwrap_or(seg.lo);
        let b = seg
            .news
            .iter()
            .copied()
            .filter(ok)
            .min()
            .filter(|_| !ok(&seg.hi))
            .unwrap_or(seg.hi);
        (a, b)
    }

    /// Expected information per unit of cost (build + runs still missing); ties go to the older
    /// commit so that without hints the choice is `git bisect`'s midpoint.
    pub(super) fn pick(&self, seg: &Segment) -> Option<usize> {
        let (lo, hi) = (seg.lo, seg.hi);
        let (a, b) = self.anchors(seg);
        let k = (hi - lo) as f64;
        let first = self.first_runs();
        let windowed = self.windowed();
        let mut best: Option<(usize, f64)> = None;
        for p in lo + 1..hi {
            let pt = &self.points[p];
            if !pt.usable() {
                continue;
            }
            let x = (p - lo) as f64;
            let y = (hi - p) as f64;
            let gain = k.log2() - (x * x.log2() + y * y.log2()) / k;
            // Runs still missing where the probe can be compared: in a window with both
            // anchors (all three measured again), else its own.
            let missing = if !pt.measurable() {
                0
            } else if windowed {
                let ev = self.evidence(&[a, p, b]);
                3 * first.saturating_sub(ev.fewest())
            } else {
                first.saturating_sub(pt.attempts)
            };
            let build = if missing > 0 && !pt.built {
                self.build_cost
            } else {
                0.0
            };
            let cost = 0.05 + missing as f64 / first as f64 + build;
            let score = gain / cost;
            if best.is_none_or(|(_, s)| score > s) {
                best = Some((p, score));
            }
        }
        best.map(|(p, _)| p)
    }

    pub(super) fn bisect_step(&mut self, seg: &mut Segment) -> SegFlow {
        let Some(x) = seg.probe else {
            return match self.pick(seg) {
                Some(x) => {
                    seg.probe = Some(x);
                    self.touch(x);
                    SegFlow::Again
                }
                None => {
                    seg.stage = Stage::Check;
                    SegFlow::Again
                }
            };
        };
        let max = self.params.max_repeats;
        // After a back-off, a probe is placed on more runs than the first (a misplaced
        // probe is what left a parent and culprit on one level).
        let first = if seg.retries > 0 {
            self.first_runs().max(2 * self.params.repeats).min(max)
        } else {
            self.first_runs()
        };
        let (a, b) = self.anchors(seg);
        let ps = [a, x, b];
        if self.points[x].failing {
            // Listed with the failures' output by the caller (`Search::failing`).
            self.points[x].skipped = true;
            seg.probe = None;
            return SegFlow::Again;
        }
        if let Some(act) = self.ensure_in(&ps, first, seg.since) {
            return SegFlow::Act(act);
        }
        if self.ends_again(seg, &ps) {
            return SegFlow::Again;
        }
        let ev = self.evidence_in(&ps, seg.since);
        if ev.pooled(1).is_empty() {
            if self.points[x].measurable() {
                if let Some(act) = self.ensure_in(&ps, ev.fewest() + first, seg.since) {
                    return SegFlow::Act(act);
                }
            }
            if self.points[x].failing {
                self.points[x].skipped = true;
                seg.probe = None;
            } else if self.points[x].samples.is_empty() {
                self.step_around(seg, x, "gave no usable number");
            } else {
                self.step_around(
                    seg,
                    x,
                    "has no runs taken side by side with the commits around it and cannot be measured again",
                );
            }
            return SegFlow::Again;
        }
        let Some(cls) = self.classify_ev(&ev) else {
            self.step_around(seg, x, "could not be compared");
            return SegFlow::Again;
        };
        let ax = ev.attempts[1];
        let confirmed =
            self.det || !self.points[x].measurable() || ax >= (2 * self.params.repeats).min(max);
        let minor = self.beside_a_minor_step(&ps, &ev, &cls, confirmed);
        if minor == Some(Minor::InDoubt) && ev.fewest() < max {
            return self.escalate(seg, x, &ps, &ev, cls);
        }
        if let Some(Minor::Place(verdict)) = minor {
            let placed = if verdict == Verdict::New {
                Placed::NewLike
            } else {
                Placed::OldLike
            };
            self.decided(x, placed, &ev);
            return self.settle(seg, x, verdict);
        }
        match cls.verdict {
            Verdict::New | Verdict::Old => {
                let placed = if cls.verdict == Verdict::New {
                    Placed::NewLike
                } else {
                    Placed::OldLike
                };
                self.decided(x, placed, &ev);
                self.settle(seg, x, cls.verdict)
            }
            Verdict::Between if confirmed => {
                self.decided(x, Placed::Between, &ev);
                let m_lo = stats::median(&ev.pooled(0)).unwrap_or(0.0);
                let m_x = stats::median(&ev.pooled(1)).unwrap_or(0.0);
                let m_hi = stats::median(&ev.pooled(2)).unwrap_or(0.0);
                let hi = seg.hi;
                self.hunt.pending.push(Segment {
                    lo: x,
                    hi,
                    olds: vec![x],
                    news: std::mem::replace(&mut seg.news, vec![x]),
                    up: m_hi > m_x,
                    split: true,
                    retries: 0,
                    since: 0,
                    probe: None,
                    stage: Stage::Bisect,
                });
                seg.hi = x;
                seg.up = m_x > m_lo;
                seg.split = true;
                seg.probe = None;
                SegFlow::Again
            }
            // A second step is rare and a false one costs a whole sub-search: the probe's runs
            // are doubled and the stricter test repeated before the range is split.
            Verdict::Between | Verdict::MaybeBetween | Verdict::Unknown => {
                self.escalate(seg, x, &ps, &ev, cls)
            }
        }
    }

    /// A probe off both levels where one of its two sides moves by less than
    /// [`MINOR_STEP`] times the threshold: that side's step is about the threshold, and
    /// naming its commit would cost many times the runs of the whole search (each probe of it
    /// and its verification sized to tell a move of the threshold from one just below it:
    /// curl's -1.1 % beside a +7.7 % step took 15 of 25 minutes). The probe is placed on the
    /// side of the larger step, which the search goes on to name, and a note gives the second
    /// step's size and span (when both sides differ at α/10), for a search of its own.
    /// [`Minor::InDoubt`] when the smaller step measures 1.5 times the threshold or more but
    /// the count's noise leaves that in doubt (a single run a side moves curl's -1.2 % to
    /// -1.9 %): more runs before a sub-search is opened. `None`: the usual rules.
    pub(super) fn beside_a_minor_step(
        &mut self,
        ps: &[usize; 3],
        ev: &Evidence,
        cls: &Classified,
        confirmed: bool,
    ) -> Option<Minor> {
        // A count with its noise known: one run a side tells a level apart, so a probe off
        // both levels is placed at once. Anything noisier first gets the runs a split would
        // (a confirmed step at α/10): a timed probe reading between the levels by chance
        // would otherwise be placed on a coin flip.
        let settled = if self.pooled_noise().is_some() {
            matches!(cls.verdict, Verdict::Between | Verdict::MaybeBetween)
        } else {
            cls.verdict == Verdict::Between && confirmed
        };
        if self.det || !settled {
            return None;
        }
        let m = |i: usize| stats::median(&ev.pooled(i));
        let (lo, mx, hi) = (m(0)?, m(1)?, m(2)?);
        // The sizes the comparisons themselves estimated (window by window).
        let before = self.compare_ev(ev, 0, 1)?.rel;
        let after = self.compare_ev(ev, 1, 2)?.rel;
        let limit = MINOR_STEP * self.relative_threshold(lo);
        let small = before.abs().min(after.abs());
        if small >= limit {
            // One standard error of the smaller step, from the pooled noise and its runs.
            let (i, j) = if before.abs() < after.abs() {
                (0, 1)
            } else {
                (1, 2)
            };
            let (na, nb) = (ev.pooled(i).len().max(1), ev.pooled(j).len().max(1));
            let in_doubt = self.pooled_noise().is_some_and(|n| {
                small - (n.rel_var * (1.0 / na as f64 + 1.0 / nb as f64)).sqrt() < limit
            });
            return in_doubt.then_some(Minor::InDoubt);
        }
        // The larger step lies before the probe: it is new-like; after it, old-like.
        let (verdict, rel, (i, j)) = if before.abs() > after.abs() {
            (Verdict::New, after, (1, 2))
        } else {
            (Verdict::Old, before, (0, 1))
        };
        // Only a step at α/10 is said: at α, over the many looks a search takes, runs of one
        // level show a "step" too often (the simulation's seeds did).
        if cls.verdict == Verdict::Between {
            let p = self.compare_ev(ev, i, j).map_or(f64::NAN, |c| c.p);
            let thr = threshold_text(&self.params.threshold);
            self.notes.push(format!(
                "a second, smaller step of {:+.2} % lies between {} and {} (medians {} and {}, \
                 {}): within {MINOR_STEP} times the threshold ({thr}), so not searched here \
                 (telling it from the threshold would take many times this search's runs); a \
                 `find` over that span names its commit",
                rel * 100.0,
                self.name(ps[i]),
                self.name(ps[j]),
                fmt_num(if i == 0 { lo } else { mx }),
                fmt_num(if i == 0 { mx } else { hi }),
                self.p_text(p),
            ));
        }
        Some(Minor::Place(verdict))
    }

    /// The first probe's window measures the ends again beside it: when the ends, over
    /// every window holding both, no longer differ, their first runs showed a change that
    /// is not there (a range without one shows it on a few runs a side now and then, and a
    /// hunt started on it can only end inconclusive). The search goes back to the ends, once,
    /// with every run of them; `true` when it does.
    fn ends_again(&mut self, seg: &Segment, ps: &[usize; 3]) -> bool {
        let top = seg.lo == 0
            && seg.retries == 0
            && seg.olds == [0]
            && seg.news == [seg.hi]
            && ps[0] == 0
            && ps[2] == seg.hi;
        if self.det || self.ends_rechecked || !top || !self.hunt.found.is_empty() {
            return false;
        }
        if !self.hunt.failed.is_empty() || !self.hunt.pending.is_empty() {
            return false;
        }
        self.ends_rechecked = true;
        let ev = self.evidence(&[0, seg.hi]);
        let shown = self.compare_ev(&ev, 0, 1).is_some_and(|c| c.differs)
            && self.past_threshold(&self.strata_of(&ev, 0, 1));
        self.redo_ends = !shown;
        self.redo_ends
    }

    /// Keep what was concluded about probe `x` from `ev` (old side, probe, new side) for the
    /// driver to say.
    pub(super) fn decided(&mut self, x: usize, placed: Placed, ev: &Evidence) {
        let med = |i: usize| stats::median(&ev.pooled(i)).unwrap_or(f64::NAN);
        self.decisions.push(Decision {
            pos: x,
            placed,
            old: med(0),
            probe: med(1),
            new: med(2),
            runs: ev.attempts[1],
        });
    }

    pub(super) fn settle(&mut self, seg: &mut Segment, x: usize, verdict: Verdict) -> SegFlow {
        if verdict == Verdict::New {
            seg.hi = x;
            seg.news.push(x);
        } else {
            seg.lo = x;
            seg.olds.push(x);
        }
        seg.probe = None;
        SegFlow::Again
    }

    pub(super) fn step_around(&mut self, seg: &mut Segment, x: usize, why: &str) {
        self.points[x].skipped = true;
        seg.probe = None;
        let name = self.name(x);
        self.notes.push(format!("{name} {why}; stepped around it"));
    }

    /// More runs for an unclassified probe: its window (with the anchors) doubles, up to
    /// `max_repeats` runs each. Once nothing can grow, the verdict without the grey zone stands
    /// if there is one.
    pub(super) fn escalate(
        &mut self,
        seg: &mut Segment,
        x: usize,
        ps: &[usize; 3],
        ev: &Evidence,
        cls: Classified,
    ) -> SegFlow {
        let leans_new = cls.leans_new;
        let max = self.params.max_repeats;
        let have = if self.windowed() {
            ev.fewest()
        } else {
            ev.attempts[1]
        };
        if have < max {
            if let Some(a) = self.ensure_in(ps, (2 * have.max(1)).min(max), seg.since) {
                self.decided(x, Placed::Unknown { more_runs: true }, ev);
                return SegFlow::Act(a);
            }
        }
        if let Some(v) = cls.fallback {
            let placed = if v == Verdict::New {
                Placed::NewLike
            } else {
                Placed::OldLike
            };
            self.decided(x, placed, ev);
            return self.settle(seg, x, v);
        }
        self.decided(x, Placed::Unknown { more_runs: false }, ev);
        if !self.points[x].measurable() {
            // Stored samples that cannot be topped up: like an unbuildable commit, step around it.
            self.step_around(seg, x, "stayed unclassified and cannot be measured further");
            return SegFlow::Again;
        }
        let (lo, hi) = (seg.lo, seg.hi);
        let med = |i: usize| stats::median(&ev.pooled(i)).unwrap_or(f64::NAN);
        let (m_lo, m_x, m_hi) = (med(0), med(1), med(2));
        let place = if (m_x - m_lo) * (m_x - m_hi) <= 0.0 {
            "between"
        } else if (m_x - m_lo).abs() < (m_x - m_hi).abs() {
            "beyond the old level, away from"
        } else {
            "beyond the new level, away from"
        };
        let reason = format!(
            "{} stayed unclassified after {}: median {} {place} the old level {} of {} and \
             the new level {} of {} (measured side by side with it){}; the culprit is one of {}",
            self.name(x),
            crate::base::text::count(ev.attempts[1], "run"),
            fmt_num(m_x),
            fmt_num(m_lo),
            self.name(ps[0]),
            fmt_num(m_hi),
            self.name(ps[2]),
            if self.windowed() && ev.strata.len() > 1 {
                format!(" in {} windows", ev.strata.len())
            } else {
                String::new()
            },
            self.span(lo + 1, hi)
        );
        // The parent of a guess is the last commit classified at the old level: the probe
        // stayed unclassified, so it is never named as old-level, whichever way it leans.
        let guess = if leans_new {
            self.guess(seg, lo, x)
        } else {
            self.guess(seg, lo, hi)
        };
        SegFlow::Failed(reason, guess)
    }
}

impl Search {
    /// The commits worth building while the probe of the active sub-range is measured: the
    /// probe each verdict would pick next (old-like: in `(probe, hi)`, new-like: in
    /// `(lo, probe)`), not built and not known unbuildable, at most `jobs`. Empty outside
    /// the bisection of a sub-range. (Builds beside a measurement are for metrics the
    /// machine's load does not move; the caller decides.)
    pub fn speculative(&self, jobs: usize) -> Vec<usize> {
        let (Phase::Hunt, Some(seg)) = (&self.phase, &self.hunt.active) else {
            return Vec::new();
        };
        let (Some(x), Stage::Bisect) = (seg.probe, &seg.stage) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let halves = [
            Segment {
                lo: x,
                probe: None,
                ..seg.clone()
            },
            Segment {
                hi: x,
                probe: None,
                ..seg.clone()
            },
        ];
        for half in halves {
            if half.hi <= half.lo + 1 {
                continue;
            }
            if let Some(p) = self.pick(&half) {
                let pt = &self.points[p];
                if p != x && !pt.built && pt.measurable() && !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        out.truncate(jobs.max(1));
        out
    }

    /// The builds a verdict will stand on, once the search is sure of them: the probe of a
    /// sub-range with one commit on either side of it (parent or culprit, whatever it shows),
    /// the two bounds of a sub-range with none between (the pair being checked or verified).
    /// Their pristine checks can go beside the last measurements instead of after the search.
    /// Only built positions; none before the hunt or after it.
    pub fn verdict_builds(&self) -> Vec<usize> {
        let (Phase::Hunt, Some(seg)) = (&self.phase, &self.hunt.active) else {
            return Vec::new();
        };
        let mut out = match (seg.hi - seg.lo, seg.probe) {
            (1, _) => vec![seg.lo, seg.hi],
            (2, Some(x)) if x == seg.lo + 1 => vec![x],
            _ => Vec::new(),
        };
        out.retain(|&p| self.points[p].built);
        out
    }

    /// The positions to build in the same round as `pos` when `jobs` builds can run at once:
    /// `pos`, then (while the ends are measured) the other end, then the points that cut the
    /// range still in doubt into `jobs + 1` parts (k-ary search), except where a cached commit
    /// or stored samples already sit near a cut.
    pub fn build_set(&self, pos: usize, jobs: usize) -> Vec<usize> {
        let mut out = vec![pos];
        let len = self.points.len();
        if jobs <= 1 || len < 3 {
            return out;
        }
        let newest = (1..len).rev().find(|&p| self.points[p].usable());
        let (lo, hi, ends) = match (&self.phase, &self.hunt.active) {
            (Phase::Hunt, Some(seg)) => (seg.lo, seg.hi, false),
            (Phase::Ends, _) => match newest {
                Some(hi) => (0, hi, true),
                None => return out,
            },
            _ => return out,
        };
        let needs_build = |p: usize| {
            let pt = &self.points[p];
            pt.measurable() && !pt.built && pt.samples.is_empty()
        };
        if ends {
            for e in [0, hi] {
                if !out.contains(&e) && needs_build(e) {
                    out.push(e);
                }
            }
        }
        if hi <= lo + 1 || out.len() >= jobs {
            out.truncate(jobs);
            return out;
        }
        // Cut points of (lo, hi); `pos` stands for the one nearest to it.
        let cuts = jobs.saturating_sub(if ends { 2 } else { 0 }).max(1);
        let width = (hi - lo) as f64;
        let spacing = width / (cuts + 1) as f64;
        let mut targets: Vec<f64> = (1..=cuts)
            .map(|k| lo as f64 + width * k as f64 / (cuts + 1) as f64)
            .collect();
        if pos > lo && pos < hi {
            if let Some(i) = (0..targets.len()).min_by(|&a, &b| {
                (targets[a] - pos as f64)
                    .abs()
                    .total_cmp(&(targets[b] - pos as f64).abs())
            }) {
                targets.remove(i);
            }
        }
        for t in targets {
            if out.len() >= jobs {
                break;
            }
            let near = |p: usize| (p as f64 - t).abs() <= spacing / 2.0;
            // Already cheap to probe there: nothing to build for this cut.
            let available = (lo + 1..hi).any(|p| {
                near(p)
                    && self.points[p].usable()
                    && (self.points[p].built || !self.points[p].samples.is_empty())
            });
            if available {
                continue;
            }
            let best = (lo + 1..hi)
                .filter(|&p| near(p) && needs_build(p) && !out.contains(&p))
                .min_by(|&a, &b| (a as f64 - t).abs().total_cmp(&(b as f64 - t).abs()));
            if let Some(p) = best {
                out.push(p);
            }
        }
        out
    }
}

impl Policy for Search {
    fn next_action(&mut self) -> Action {
        Search::next_action(self)
    }
    fn add_samples(&mut self, pos: usize, samples: &[f64]) {
        Search::add_samples(self, pos, samples)
    }
    fn add_stored(&mut self, pos: usize, samples: &[Stored]) {
        Search::add_stored(self, pos, samples)
    }
    fn add_window(
        &mut self,
        window: u64,
        first_moment: u32,
        rounds: u32,
        values: &[(usize, Vec<f64>)],
    ) {
        Search::add_window(self, window, first_moment, rounds, values)
    }
    fn mark_unbuildable(&mut self, pos: usize) {
        Search::mark_unbuildable(self, pos)
    }
    fn mark_built(&mut self, pos: usize) {
        Search::mark_built(self, pos)
    }
    fn record_verify(&mut self, window: u64, old: &[f64], new: &[f64]) {
        Search::record_verify(self, window, old, new)
    }
    fn build_set(&self, pos: usize, jobs: usize) -> Vec<usize> {
        Search::build_set(self, pos, jobs)
    }
    fn speculative(&self, jobs: usize) -> Vec<usize> {
        Search::speculative(self, jobs)
    }
    fn verdict_builds(&self) -> Vec<usize> {
        Search::verdict_builds(self)
    }
    fn take_decisions(&mut self) -> Vec<Decision> {
        std::mem::take(&mut self.decisions)
    }
    fn set_run_budget(&mut self, pos: usize, runs: usize) {
        if let Some(p) = self.points.get_mut(pos) {
            p.budget = runs;
        }
    }
}
