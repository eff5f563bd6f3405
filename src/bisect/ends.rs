//! The ends of the range, measured before any probe: they differ (the hunt starts over them),
//! show no change, or cannot say either.

use super::classify::*;
use super::state::*;
use super::types::*;
use super::window::*;

impl Search {
    /// The `Ends` phase: the old end and the newest measurable commit measured side by side
    /// until they differ, show no change, or cannot tell.
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
        // Counted before `settle_exact` below, which can change what `first_runs` says: the
        // window asked for when the ends were never side by side has this count.
        let first = self.first_runs();
        if let Some(flow) = self.measure_ends(hi, first) {
            return flow;
        }
        if self.settle_exact(0, hi) {
            self.notes.push(
                "the test is declared deterministic but its runs differ at the ends; treated as noisy"
                    .into(),
            );
        }
        let ev = self.evidence(&[0, hi]);
        let Some(c) = self.compare_ev(&ev, 0, 1) else {
            // Measured, but never side by side (stored samples only): a window of both.
            if let Some(a) = self.ensure(&[0, hi], first) {
                return Flow::Act(a);
            }
            return self.finish(Outcome::Inconclusive {
                reason: format!(
                    "the ends {} and {} could not be compared (no runs of both taken side by side, and one cannot be measured again)",
                    self.name(0),
                    self.name(hi)
                ),
                best_guess: None,
            });
        };
        if c.differs {
            // While the step's interval still reaches back over the threshold, more runs up
            // to the budget: a range without a change shows one on a few runs a side now and
            // then, and a hunt started on it can only end inconclusive (its pairs never
            // differ). The hunt starts on a step its runs show.
            if !self.det && !self.past_threshold(&self.strata_of(&ev, 0, 1)) {
                if let Some(a) = self.beyond(&[0, hi], ev.fewest(), 0) {
                    return Flow::Act(a);
                }
            }
            return self.start_hunt(hi, c.after > c.before);
        }
        self.ends_alike(hi, &ev, &c)
    }

    /// Runs of both ends (`first` each); `Some` of what to do until they hold a number each.
    fn measure_ends(&mut self, hi: usize, first: usize) -> Option<Flow> {
        let max = self.params.max_repeats;
        // A commit whose test keeps failing: the old end ends the search, a new end is
        // stepped around.
        for end in [0, hi] {
            let p = &self.points[end];
            if p.samples.is_empty() && (p.failing || (!p.measurable() && p.attempts > 0)) {
                if end == 0 {
                    let why = if self.points[0].failing {
                        format!(
                            "its test failed {} times in a row",
                            self.points[0].fail_streak
                        )
                    } else {
                        "no run gave a number".to_string()
                    };
                    return Some(self.finish(Outcome::Inconclusive {
                        reason: format!("the old end {} cannot be measured: {why}", self.name(0)),
                        best_guess: None,
                    }));
                }
                self.points[end].skipped = true;
                return Some(Flow::Again);
            }
        }
        if let Some(a) = self.ensure(&[0, hi], first) {
            return Some(Flow::Act(a));
        }
        for end in [0, hi] {
            if self.points[end].samples.is_empty() {
                // Runs that gave no number but not yet enough to give up: more of them.
                let n = (self.points[end].attempts + first).min(max);
                if self.points[end].measurable() && self.points[end].attempts < n {
                    if let Some(a) = self.ensure(&[0, hi], self.evidence(&[0, hi]).fewest() + first)
                    {
                        return Some(Flow::Act(a));
                    }
                }
                if end == 0 {
                    return Some(self.finish(Outcome::Inconclusive {
                        reason: format!(
                            "the old end {} cannot be measured: no run gave a number",
                            self.name(0)
                        ),
                        best_guess: None,
                    }));
                }
                self.points[end].skipped = true;
                return Some(Flow::Again);
            }
        }
        None
    }

    /// The ends `0` and `hi`, compared as `c`, do not differ yet: more runs, a step searched
    /// all the same (its interval reaches the threshold), or the verdict.
    fn ends_alike(&mut self, hi: usize, ev: &Evidence, c: &Cmp) -> Flow {
        let max = self.params.max_repeats;
        let (n0, nhi) = (ev.pooled(0).len(), ev.pooled(1).len());
        let mdc = if self.det {
            0.0
        } else if self.params.counted {
            stats::min_detectable_change_t(self.noise_of(ev), n0, nhi, self.params.alpha)
        } else {
            stats::min_detectable_change(self.noise_of(ev), n0, nhi, self.params.alpha)
        };
        let thr = self.relative_threshold(c.before);
        // Someone asked because they saw a change: medians that show one earn more runs before
        // "no change" is said; and "no change" is only said when these runs could have seen
        // a change of the threshold, and show the change within it (its interval: a noise
        // estimated from a few runs can be far too small).
        let up = c.after > c.before;
        let strata = self.strata_of(ev, 0, 1);
        let within = self.short_of_threshold(&strata, None);
        let interval = (!self.det)
            .then(|| stats::step::estimate_with_interval(&strata))
            .flatten()
            .and_then(|s| s.interval);
        let reaches = !self.det && !self.short_of_threshold(&strata, Some(up));
        if !self.det && (self.promising(c, up) || mdc > thr || !within) {
            let have = ev.fewest();
            if have < max {
                if let Some(a) = self.ensure(&[0, hi], (2 * have.max(1)).min(max)) {
                    return Flow::Act(a);
                }
            }
        }
        // `max_repeats` spent and the evidence still straddles the threshold (its interval
        // reaches it, or the runs are too few to have seen it): runs are cheap next to a
        // build, so more of them, up to the budget, before anything is given up.
        if !self.det && (mdc > thr || !within) {
            if let Some(a) = self.beyond(&[0, hi], ev.fewest(), 0) {
                return Flow::Act(a);
            }
        }
        // Every run spent: a real move (p < α) whose medians miss the threshold while its
        // interval reaches it is not "no change" (the runs cannot tell it from a step of the
        // threshold); it is searched as a step, its size said with the culprit.
        if reaches && c.p < self.params.alpha {
            if let Some((lo, hi_rel)) = interval {
                self.notes.push(format!(
                    "the ends differ by {:+.2} % ({}), less than the {} threshold in their \
                     medians, but the change's 95 % interval ({:+.2} % to {:+.2} %) reaches it: \
                     searched as a step",
                    c.rel * 100.0,
                    self.p_text(c.p),
                    threshold_text(&self.params.threshold),
                    lo * 100.0,
                    hi_rel * 100.0
                ));
            }
            return self.start_hunt(hi, up);
        }
        self.no_change(hi, ev, c, mdc, (n0, nhi))
    }

    /// The verdict on ends that do not differ, given the smallest change `mdc` their runs
    /// (`n0` and `nhi`) could have seen: no change, or inconclusive (part of the range
    /// unmeasurable, or too noisy for the threshold).
    fn no_change(
        &mut self,
        hi: usize,
        ev: &Evidence,
        c: &Cmp,
        mdc: f64,
        (n0, nhi): (usize, usize),
    ) -> Flow {
        let len = self.points.len();
        let thr = self.relative_threshold(c.before);
        self.min_detectable = Some(mdc);
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
        if mdc > thr {
            return self.finish(Outcome::Inconclusive {
                reason: format!(
                    "the runs of the ends do not show a change ({} {} to {} {}, {:+.2} %, {}, \
                     not below α = {}), and {} and {} run{} of them show one reliably (80 % of \
                     the time) only from {} %, while the threshold is {}; the noise here ({} %{}) \
                     is too large for {}{}",
                    self.name(0),
                    fmt_num(c.before),
                    self.name(hi),
                    fmt_num(c.after),
                    c.rel * 100.0,
                    self.p_text(c.p),
                    self.params.alpha,
                    n0,
                    nhi,
                    if n0 == 1 && nhi == 1 { "" } else { "s" },
                    fmt_num(mdc * 100.0),
                    threshold_text(&self.params.threshold),
                    fmt_num(self.noise_of(ev) * 100.0),
                    if self.windowed() {
                        ", within windows of interleaved runs"
                    } else {
                        ""
                    },
                    self.spent(&[0, hi]),
                    self.deciding_runs(self.noise_of(ev), thr)
                ),
                best_guess: None,
            });
        }
        self.finish(Outcome::NoChange {
            before: c.before,
            after: c.after,
            p_value: c.p,
            min_detectable: mdc,
        })
    }

    /// The ends `0` and `hi` differ (the range moves `up` or down): the hunt over them.
    fn start_hunt(&mut self, hi: usize, up: bool) -> Flow {
        let len = self.points.len();
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
            up,
            split: false,
            retries: 0,
            since: 0,
            probe: None,
            stage: Stage::Bisect,
        });
        self.phase = Phase::Hunt;
        Flow::Again
    }
}
