//! The search state: positions and their samples, the ends, the hunt over sub-ranges, and the
//! choice of the next probe.

use super::*;

/// The bisection state machine. Create one per search with [`Search::new`], feed it stored
/// samples, then loop over [`Search::next_action`].
#[derive(Debug, Clone)]
pub struct Search {
    pub(super) params: Params,
    pub(super) build_cost: f64,
    pub(super) points: Vec<Point>,
    pub(super) probed: Vec<usize>,
    pub(super) det: bool,
    pub(super) phase: Phase,
    pub(super) hunt: Hunt,
    pub(super) notes: Vec<String>,
    pub(super) stalls: usize,
    /// How reports name each position (short hash and subject); `position N` without them.
    pub(super) labels: Vec<String>,
    /// Runs of one commit were seen to differ: never exact comparisons again.
    pub(super) no_det: bool,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Point {
    /// Finite samples only; `attempts` also counts the runs that gave no number.
    pub(super) samples: Vec<f64>,
    pub(super) attempts: usize,
    /// Failed runs since the last one that gave a number.
    pub(super) fail_streak: usize,
    /// Its test failed `repeats` times in a row: stepped around like an unbuildable commit.
    pub(super) failing: bool,
    pub(super) unbuildable: bool,
    pub(super) built: bool,
    /// Stepped around: unbuildable, or gave no number, or cannot be topped up to a verdict.
    pub(super) skipped: bool,
}

impl Point {
    pub(super) fn measurable(&self) -> bool {
        !self.unbuildable && !self.skipped && !self.failing
    }

    /// Count runs (NaN = failed) towards the streak of failures; `limit` in a row and the
    /// commit is no longer measured.
    pub(super) fn record(&mut self, runs: &[f64], limit: usize) {
        self.attempts += runs.len();
        for &x in runs {
            if x.is_finite() {
                self.samples.push(x);
                self.fail_streak = 0;
            } else {
                self.fail_streak += 1;
            }
        }
        if self.fail_streak >= limit {
            self.failing = true;
        }
    }
    pub(super) fn usable(&self) -> bool {
        !self.skipped && (!self.unbuildable || !self.samples.is_empty())
    }
}

#[derive(Debug, Clone)]
pub(super) enum Phase {
    Ends,
    Hunt,
    Done(Outcome),
}

#[derive(Debug, Clone, Default)]
pub(super) struct Hunt {
    pub(super) active: Option<Segment>,
    /// Sub-ranges found by a between-level probe, searched after the active one.
    pub(super) pending: Vec<Segment>,
    pub(super) found: Vec<Culprit>,
    pub(super) failed: Vec<(String, Option<Culprit>)>,
}

/// A sub-range `(lo, hi]` whose bounds differ: `lo` is old-like, `hi` new-like.
#[derive(Debug, Clone)]
pub(super) struct Segment {
    pub(super) lo: usize,
    pub(super) hi: usize,
    /// Every commit classified at this sub-range's old (new) level: probes are compared with the
    /// pooled samples, which pins the levels far better than the bounds' few runs alone.
    pub(super) olds: Vec<usize>,
    pub(super) news: Vec<usize>,
    /// Direction of the change, so a verification that flips sign does not count.
    pub(super) up: bool,
    /// Made by splitting at a between-level probe: a second step is a priori rare, so its
    /// verification uses the same α/10 as the split.
    pub(super) split: bool,
    pub(super) probe: Option<usize>,
    pub(super) stage: Stage,
}

#[derive(Debug, Clone)]
pub(super) enum Stage {
    Bisect,
    Check,
    Verify(Verification),
}

#[derive(Debug, Clone, Default)]
pub(super) struct Verification {
    pub(super) old: Vec<f64>,
    pub(super) new: Vec<f64>,
    pub(super) runs: usize,
    /// Rounds answered so far: each further look at the same data spends a halved α.
    pub(super) rounds: u32,
    pub(super) asked: Option<usize>,
}

pub(super) enum Flow {
    Act(Action),
    Again,
}

pub(super) enum SegFlow {
    Act(Action),
    Again,
    Found(Culprit),
    Failed(String, Option<Culprit>),
}

impl Search {
    /// A search over positions `0..len` (`len` = m+1); position 0 is the old end.
    pub fn new(len: usize, params: Params) -> Search {
        Search {
            params: params.sanitized(),
            build_cost: DEFAULT_BUILD_COST,
            points: vec![Point::default(); len],
            probed: Vec::new(),
            det: params.deterministic,
            phase: Phase::Ends,
            hunt: Hunt::default(),
            notes: Vec::new(),
            stalls: 0,
            labels: Vec::new(),
            no_det: false,
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
            "deterministic".into()
        } else {
            format!("p = {}", fmt_p(p))
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

    /// Samples already stored (from earlier runs or imported cron rounds): used before anything is
    /// built. Also how the caller answers [`Action::Measure`]; NaN stands for a run that gave no number.
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

    /// The next thing to do. Deterministic: the same inputs give the same sequence of actions.
    pub fn next_action(&mut self) -> Action {
        if let Phase::Done(o) = &self.phase {
            return Action::Done(o.clone());
        }
        self.stalls += 1;
        // Exact comparisons are only right while no commit's runs differ: once one does (a
        // verification's second run, say), start over as a noisy search on what is known.
        if self.det {
            if let Some(p) = (0..self.points.len()).find(|&p| has_spread(&self.points[p].samples)) {
                self.notes.push(format!(
                    "runs of {} differ, so the test is not deterministic{}; searched again as a noisy test",
                    self.name(p),
                    if self.params.deterministic { " as declared" } else { "" }
                ));
                self.det = false;
                self.params.deterministic = false;
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
        if self.det {
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

    pub(super) fn measure_up_to(&self, pos: usize, n: usize) -> Option<Action> {
        let p = &self.points[pos];
        (p.measurable() && p.attempts < n).then(|| Action::Measure {
            pos,
            runs: n - p.attempts,
        })
    }

    /// Doubles the side with fewer runs, so a two-sample comparison gains power where it lacks it.
    pub(super) fn top_up_pair(&self, a: usize, b: usize) -> Option<Action> {
        let max = self.params.max_repeats;
        let mut sides: Vec<usize> = [a, b]
            .into_iter()
            .filter(|&p| self.points[p].measurable() && self.points[p].attempts < max)
            .collect();
        sides.sort_by_key(|&p| self.points[p].attempts);
        let p = *sides.first()?;
        self.measure_up_to(p, (2 * self.points[p].attempts.max(1)).min(max))
    }

    /// Not yet significant, but worth more runs: a smallish p-value, or medians that already show
    /// the expected change (rank tests on a handful of runs are easily swamped by two outliers).
    pub(super) fn promising(&self, c: &Cmp, up: bool) -> bool {
        let same_dir = (c.after > c.before) == up;
        same_dir && (c.p < PROMISING_P || self.params.threshold.reached(c.before, c.after))
    }

    pub(super) fn pool(&self, ps: &[usize]) -> Vec<f64> {
        ps.iter()
            .flat_map(|&p| self.points[p].samples.iter().copied())
            .collect()
    }

    pub(super) fn compare_pos(&self, a: usize, b: usize) -> Option<Cmp> {
        compare(
            &self.points[a].samples,
            &self.points[b].samples,
            &self.params,
            self.det,
        )
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

    pub(super) fn step_ends(&mut self) -> Flow {
        let len = self.points.len();
        if len < 2 {
            return self.finish(Outcome::Inconclusive {
                reason: "the range holds no commits".into(),
                best_guess: None,
            });
        }
        if !self.points[0].usable() {
            return self.finish(Outcome::Inconclusive {
                reason: format!(
                    "the old end {} cannot be built and has no stored samples",
                    self.name(0)
                ),
                best_guess: None,
            });
        }
        // An unbuildable new end is nudged down to the newest measurable commit.
        let Some(hi) = (1..len).rev().find(|&p| self.points[p].usable()) else {
            return self.finish(Outcome::Inconclusive {
                reason: "no commit of the range can be built or has stored samples".into(),
                best_guess: None,
            });
        };
        self.touch(0);
        self.touch(hi);
        let first = self.first_runs();
        let max = self.params.max_repeats;
        for end in [0, hi] {
            if let Some(a) = self.measure_up_to(end, first) {
                return Flow::Act(a);
            }
            if self.points[end].samples.is_empty() {
                let n = (self.points[end].attempts + first).min(max);
                if let Some(a) = self.measure_up_to(end, n) {
                    return Flow::Act(a);
                }
                if end == 0 {
                    let why = if self.points[0].failing {
                        format!(
                            "its test failed {} times in a row",
                            self.points[0].fail_streak
                        )
                    } else {
                        "no run gave a number".to_string()
                    };
                    return self.finish(Outcome::Inconclusive {
                        reason: format!("the old end {} cannot be measured: {why}", self.name(0)),
                        best_guess: None,
                    });
                }

                self.points[end].skipped = true;
                return Flow::Again;
            }
        }
        let spread = has_spread(&self.points[0].samples) || has_spread(&self.points[hi].samples);
        if self.params.deterministic && spread {
            self.notes.push(
                "the test is declared deterministic but its runs differ at the ends; treated as noisy"
                    .into(),
            );
            self.no_det = true;
        }
        self.det = !self.no_det
            && ((self.params.deterministic && !spread)
                || (zero_spread(&self.points[0].samples) && zero_spread(&self.points[hi].samples)));
        let Some(c) = self.compare_pos(0, hi) else {
            return self.finish(Outcome::Inconclusive {
                reason: "the ends could not be compared".into(),
                best_guess: None,
            });
        };
        if c.differs {
            if hi + 1 < len {
                self.notes.push(format!(
                    "{} cannot be built or measured and {} not searched",
                    self.span(hi + 1, len - 1),
                    if hi + 2 == len { "was" } else { "were" }
                ));
            }
            self.hunt.active = Some(Segment {
                lo: 0,
                hi,
                olds: vec![0],
                news: vec![hi],
                up: c.after > c.before,
                split: false,
                probe: None,
                stage: Stage::Bisect,
            });
            self.phase = Phase::Hunt;
            return Flow::Again;
        }
        // Someone asked because they saw a change: medians that show one earn more runs before
        // "no change" is said.
        if !self.det && self.promising(&c, c.after > c.before) {
            if let Some(a) = self.top_up_pair(0, hi) {
                return Flow::Act(a);
            }
        }
        let min_detectable = if self.det {
            0.0
        } else {
            stats::min_detectable_change(
                self.noise_cv(),
                self.points[0].samples.len(),
                self.points[hi].samples.len(),
                self.params.alpha,
            )
        };
        if hi + 1 < len {
            return self.finish(Outcome::Inconclusive {
                reason: format!(
                    "no change between {} and {} (medians {} and {}, {}); {} cannot be built or measured",
                    self.name(0),
                    self.name(hi),
                    fmt_num(c.before),
                    fmt_num(c.after),
                    self.p_text(c.p),
                    self.span(hi + 1, len - 1)
                ),
                best_guess: None,
            });
        }
        self.finish(Outcome::NoChange {
            before: c.before,
            after: c.after,
            p_value: c.p,
            min_detectable,
        })
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

    /// Expected information per unit of cost (build + runs still missing); ties go to the older
    /// commit so that without hints the choice is `git bisect`'s midpoint.
    pub(super) fn pick(&self, lo: usize, hi: usize) -> Option<usize> {
        let k = (hi - lo) as f64;
        let first = self.first_runs();
        let mut best: Option<(usize, f64)> = None;
        for p in lo + 1..hi {
            let pt = &self.points[p];
            if !pt.usable() {
                continue;
            }
            let a = (p - lo) as f64;
            let b = (hi - p) as f64;
            let gain = k.log2() - (a * a.log2() + b * b.log2()) / k;
            let missing = if pt.measurable() {
                first.saturating_sub(pt.attempts)
            } else {
                0
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
            return match self.pick(seg.lo, seg.hi) {
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
        let first = self.first_runs();
        let max = self.params.max_repeats;
        if let Some(a) = self.measure_up_to(x, first) {
            return SegFlow::Act(a);
        }
        if self.points[x].samples.is_empty() {
            let n = (self.points[x].attempts + first).min(max);
            if let Some(a) = self.measure_up_to(x, n) {
                return SegFlow::Act(a);
            }
            if self.points[x].failing {
                // Listed with the failures' output by the caller (`Search::failing`).
                self.points[x].skipped = true;
                seg.probe = None;
            } else {
                self.step_around(seg, x, "gave no usable number");
            }
            return SegFlow::Again;
        }
        let (lo, hi) = (seg.lo, seg.hi);
        let old_pool = self.pool(&seg.olds);
        let new_pool = self.pool(&seg.news);
        let Some(cls) = classify_against(
            &old_pool,
            &new_pool,
            &self.points[x].samples,
            &self.params,
            self.det,
        ) else {
            self.step_around(seg, x, "could not be compared");
            return SegFlow::Again;
        };
        let confirmed = self.det
            || !self.points[x].measurable()
            || self.points[x].attempts >= (2 * self.params.repeats).min(max);
        match cls.verdict {
            Verdict::New | Verdict::Old => self.settle(seg, x, cls.verdict),
            Verdict::Between if confirmed => {
                let m_lo = stats::median(&self.points[lo].samples).unwrap_or(0.0);
                let m_x = stats::median(&self.points[x].samples).unwrap_or(0.0);
                let m_hi = stats::median(&self.points[hi].samples).unwrap_or(0.0);
                self.hunt.pending.push(Segment {
                    lo: x,
                    hi,
                    olds: vec![x],
                    news: std::mem::replace(&mut seg.news, vec![x]),
                    up: m_hi > m_x,
                    split: true,
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
            Verdict::Between | Verdict::MaybeBetween => {
                // Both comparisons matter: the side with fewer pooled samples gets topped up.
                let side = if new_pool.len() < old_pool.len() {
                    (hi, new_pool.len())
                } else {
                    (lo, old_pool.len())
                };
                self.escalate(seg, x, Some(side), cls)
            }
            Verdict::Unknown => {
                let side = if cls.doubt_new_side {
                    (hi, new_pool.len())
                } else {
                    (lo, old_pool.len())
                };
                self.escalate(seg, x, Some(side), cls)
            }
        }
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

    /// More runs for an unclassified probe: first the doubtful side until its pooled samples
    /// match the probe's (Pinpoint adds attempts to the side with fewer), then the probe itself,
    /// doubling. Once nothing can grow, the verdict without the grey zone stands if there is one.
    pub(super) fn escalate(
        &mut self,
        seg: &mut Segment,
        x: usize,
        far: Option<(usize, usize)>,
        cls: Classified,
    ) -> SegFlow {
        let leans_new = cls.leans_new;
        let max = self.params.max_repeats;
        let ax = self.points[x].attempts;
        if let Some((f, pooled)) = far {
            if pooled < ax {
                let n = (self.points[f].attempts + ax - pooled).min(max);
                if let Some(a) = self.measure_up_to(f, n) {
                    return SegFlow::Act(a);
                }
            }
        }
        if let Some(a) = self.measure_up_to(x, (2 * ax.max(1)).min(max)) {
            return SegFlow::Act(a);
        }
        if let Some((f, _)) = far {
            let af = self.points[f].attempts;
            if let Some(a) = self.measure_up_to(f, (2 * af.max(1)).min(max)) {
                return SegFlow::Act(a);
            }
        }
        if let Some(v) = cls.fallback {
            return self.settle(seg, x, v);
        }
        if !self.points[x].measurable() {
            // Stored samples that cannot be topped up: like an unbuildable commit, step around it.
            self.step_around(seg, x, "stayed unclassified and cannot be measured further");
            return SegFlow::Again;
        }
        let (lo, hi) = (seg.lo, seg.hi);
        let med = |p: usize| stats::median(&self.points[p].samples).unwrap_or(f64::NAN);
        let reason = format!(
            "{} stayed unclassified after {} runs (median {} between the old level {} of {} \
             and the new level {} of {}); the culprit is one of {}",
            self.name(x),
            self.points[x].samples.len(),
            fmt_num(med(x)),
            fmt_num(med(lo)),
            self.name(lo),
            fmt_num(med(hi)),
            self.name(hi),
            self.span(lo + 1, hi)
        );
        let guess = if leans_new {
            self.culprit(lo, x, lo + 1..=hi, false)
        } else {
            self.culprit(x, hi, lo + 1..=hi, false)
        };
        SegFlow::Failed(reason, Some(guess))
    }
}

impl Search {
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
    fn mark_unbuildable(&mut self, pos: usize) {
        Search::mark_unbuildable(self, pos)
    }
    fn mark_built(&mut self, pos: usize) {
        Search::mark_built(self, pos)
    }
    fn record_verify(&mut self, old: &[f64], new: &[f64]) {
        Search::record_verify(self, old, new)
    }
    fn build_set(&self, pos: usize, jobs: usize) -> Vec<usize> {
        Search::build_set(self, pos, jobs)
    }
}
