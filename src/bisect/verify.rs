//! Verification before a culprit is reported: the direct parent/culprit check and the
//! interleaved re-runs, each further look at a halved α.

use super::classify::*;
use super::state::*;
use super::types::*;

impl Search {
    /// Fresh interleaved samples of a [`Action::Verify`], taken in `window`; ignored when no
    /// verification is pending.
    pub fn record_verify(&mut self, window: u64, old: &[f64], new: &[f64]) {
        if !matches!(self.phase, Phase::Hunt) {
            return;
        }
        let Some(seg) = self.hunt.active.as_mut() else {
            return;
        };
        let Stage::Verify(v) = &mut seg.stage else {
            return;
        };
        let Some(asked) = v.asked.take() else {
            return;
        };
        self.stalls = 0;
        let old_f = finite(old);
        let new_f = finite(new);
        v.old.extend_from_slice(&old_f);
        v.new.extend_from_slice(&new_f);
        // Count what was asked, not what arrived, so empty answers still end the verification.
        v.runs += asked.max(old.len()).max(new.len());
        v.rounds += 1;
        let (lo, hi) = (seg.lo, seg.hi);
        let rounds = old.len().max(new.len()) as u32;
        let first = self
            .windows
            .iter()
            .find(|w| w.id == window)
            .map_or(0, |w| w.moments);
        self.add_window(
            window,
            first,
            rounds,
            &[(lo, old.to_vec()), (hi, new.to_vec())],
        );
    }

    pub(super) fn check_step(&mut self, seg: &mut Segment) -> SegFlow {
        let (lo, hi) = (seg.lo, seg.hi);
        // Parent and culprit measured side by side (normally both were in the last probe's
        // window); a window of both when they never were.
        if self.evidence(&[lo, hi]).strata.is_empty() {
            if let Some(a) = self.ensure(&[lo, hi], self.first_runs()) {
                return SegFlow::Act(a);
            }
        }
        let Some(c) = self.compare_pos(lo, hi) else {
            return SegFlow::Failed(
                format!(
                    "{} and {} could not be compared",
                    self.name(lo),
                    self.name(hi)
                ),
                None,
            );
        };
        let same_dir = (c.after > c.before) == seg.up;
        if c.differs && same_dir {
            seg.stage = Stage::Verify(Verification::default());
            return SegFlow::Again;
        }
        // In doubt while the runs do not show the move short of the threshold (its interval):
        // medians of a step above it fall below it in one look of several.
        let ev = self.evidence(&[lo, hi]);
        let reaches = !self.short_of_threshold(&self.strata_of(&ev, 0, 1), Some(seg.up));
        if !self.det && (self.promising(&c, seg.up) || reaches) {
            let have = ev.fewest();
            if let Some(a) = self.ensure(&[lo, hi], (2 * have.max(1)).min(self.params.max_repeats))
            {
                return SegFlow::Act(a);
            }
        }
        // `max_repeats` spent and the move's interval still reaches the threshold: more runs,
        // up to the budget, before the pair is given up on.
        if !self.det && reaches {
            if let Some(a) = self.beyond(&[lo, hi], ev.fewest(), 0) {
                return SegFlow::Act(a);
            }
        }
        // Every run spent: a real move the range's way that the runs cannot tell from a step
        // of the threshold is re-run as one (the verification decides).
        if !self.det && same_dir && c.p < self.params.alpha && reaches {
            seg.stage = Stage::Verify(Verification::default());
            return SegFlow::Again;
        }
        // A real move that is too small to matter reads differently from no move at all, and
        // one the other way than the range's reads differently from both.
        let how = if c.differs {
            format!(
                "moves the other way than the range does ({} to {}, {:+.2} %, {})",
                fmt_num(c.before),
                fmt_num(c.after),
                c.rel * 100.0,
                self.p_text(c.p)
            )
        } else if c.p < self.params.alpha && !self.params.threshold.reached(c.before, c.after) {
            format!(
                "moves {:+.2} % ({} to {}, {}), below the {} threshold",
                c.rel * 100.0,
                fmt_num(c.before),
                fmt_num(c.after),
                self.p_text(c.p),
                threshold_text(&self.params.threshold)
            )
        } else {
            format!(
                "does not differ from it ({} to {}, {:+.2} %, {})",
                fmt_num(c.before),
                fmt_num(c.after),
                c.rel * 100.0,
                self.p_text(c.p)
            )
        };
        let why = format!(
            "{} against its parent {} {how}",
            self.name(hi),
            self.name(lo)
        );
        if let Some(flow) = self.back_off(seg, &why) {
            return flow;
        }
        SegFlow::Failed(
            format!("{why}: the change may be spread over several commits"),
            self.guess(seg, lo, hi),
        )
    }

    /// A parent and culprit on one level, or re-runs that do not confirm them, most often
    /// mean a probe was misplaced on the way (one look in a few dozen at a step 1.4 times the
    /// threshold): the sub-range backs off to the bounds placed before both and is searched
    /// again, each probe placed again on at least twice the first runs taken from then on (the
    /// runs that misled it are left out), rather than given up.
    /// `None` after [`MAX_BACKOFFS`] of them, or with nothing before them (the ends).
    pub(super) fn back_off(&mut self, seg: &mut Segment, why: &str) -> Option<SegFlow> {
        if self.det || seg.retries >= MAX_BACKOFFS {
            return None;
        }
        let (lo, hi) = (seg.lo, seg.hi);
        // First the bounds placed just before the pair (the last probe misled most often);
        // then the sub-range's own bounds (an early probe misplaced leaves every later one
        // on one level with it).
        let keep = |xs: &[usize], drop: usize| -> Vec<usize> {
            if seg.retries == 0 {
                xs.iter().copied().filter(|&p| p != drop).collect()
            } else {
                xs.iter().copied().take(1).collect()
            }
        };
        let olds = keep(&seg.olds, lo);
        let news = keep(&seg.news, hi);
        let new_lo = olds.iter().copied().filter(|&p| p < lo).max();
        let new_hi = news.iter().copied().filter(|&p| p > hi).min();
        if new_lo.is_none() && new_hi.is_none() {
            return None;
        }
        if let Some(p) = new_lo {
            seg.lo = p;
            seg.olds = olds;
        }
        if let Some(p) = new_hi {
            seg.hi = p;
            seg.news = news;
        }
        seg.retries += 1;
        seg.since = self.answers + 1;
        seg.probe = None;
        seg.stage = Stage::Bisect;
        self.notes.push(format!(
            "{why}: searched {} again, each probe on more runs",
            self.span(seg.lo, seg.hi)
        ));
        Some(SegFlow::Again)
    }

    /// The culprit of `seg` (its bounds), confirmed, with the re-runs its verification took.
    fn confirmed(&self, seg: &Segment) -> Culprit {
        let (lo, hi) = (seg.lo, seg.hi);
        let mut c = self.culprit(lo, hi, lo + 1..=hi, true);
        if let Stage::Verify(v) = &seg.stage {
            c.reruns = v.old.len() + v.new.len();
            c.rerun_windows = v.rounds as usize;
        }
        c
    }

    pub(super) fn verify_runs(&self, lo: usize, hi: usize) -> usize {
        if self.det {
            return 1;
        }
        let (r, max) = (self.params.repeats, self.params.max_repeats);
        let rel = self.compare_pos(lo, hi).map_or(0.0, |c| c.rel.abs());
        let cv = self.noise_of(&self.evidence(&[lo, hi]));
        if rel > 0.0 && rel.is_finite() && cv > 0.0 {
            stats::repeats_needed(cv, rel, self.params.alpha, VERIFY_POWER).clamp(r, max)
        } else {
            r
        }
    }

    pub(super) fn verify_step(&mut self, seg: &mut Segment) -> SegFlow {
        let (lo, hi) = (seg.lo, seg.hi);
        // Stored samples alone can be unlucky, and nothing could catch it: no verdict without
        // the re-run, only a best guess.
        if !self.points[lo].measurable() || !self.points[hi].measurable() {
            return SegFlow::Failed(
                format!(
                    "{} differs from its parent {} in the stored samples, but they cannot be \
                     built or measured again to verify it",
                    self.name(hi),
                    self.name(lo)
                ),
                self.guess(seg, lo, hi),
            );
        }
        let runs_so_far = match &seg.stage {
            Stage::Verify(v) => {
                if let Some(runs) = v.asked {
                    return SegFlow::Act(Action::Verify {
                        parent: lo,
                        culprit: hi,
                        runs,
                    });
                }
                v.runs
            }
            _ => return SegFlow::Again,
        };
        if runs_so_far == 0 {
            return self.first_verify(seg);
        }
        self.judge_reruns(seg, runs_so_far)
    }

    /// The first look of a verification: a deterministic metric's stored runs, or an
    /// earlier search's re-runs of these two, when there are any; else the first re-runs.
    fn first_verify(&mut self, seg: &mut Segment) -> SegFlow {
        let (lo, hi) = (seg.lo, seg.hi);
        // A deterministic metric re-run before (an earlier search's verification is in the
        // store) has nothing more to say: two equal runs each side already confirm it.
        if self.det && self.points[lo].samples.len() >= 2 && self.points[hi].samples.len() >= 2 {
            if let Some(c) = self.compare_pos(lo, hi) {
                if c.differs && (c.after > c.before) == seg.up {
                    return SegFlow::Found(self.confirmed(seg));
                }
            }
        }
        // An earlier search's verification of these two (a stored window in which exactly
        // parent and culprit were measured, interleaved) is such a re-run already: judged
        // as if made now. (Commits whose builds are byte-identical to one of them show its
        // runs too; they were not measured there themselves.)
        let earlier: Vec<&Win> = self
            .windows
            .iter()
            .filter(|w| {
                self.windowed()
                    && !w.fresh
                    && w.own.len() == 2
                    && w.own.contains(&lo)
                    && w.own.contains(&hi)
            })
            .collect();
        if !earlier.is_empty() {
            let (old, new): (Vec<f64>, Vec<f64>) = (
                earlier.iter().flat_map(|w| finite(&w.runs[&lo])).collect(),
                earlier.iter().flat_map(|w| finite(&w.runs[&hi])).collect(),
            );
            let runs = earlier
                .iter()
                .map(|w| w.runs[&lo].len().min(w.runs[&hi].len()))
                .sum::<usize>();
            // Each stored window is one round of that verification: the same α it spent
            // on its last look (round k at α / 2^(k-1)), so a second search over the same
            // cache says what the first one did (testing its runs at the full α once
            // passed a p of 0.003 that the first search's fourth round had failed).
            let rounds = u32::try_from(earlier.len()).unwrap_or(u32::MAX);
            if let Stage::Verify(v) = &mut seg.stage {
                v.old = old;
                v.new = new;
                v.runs = runs;
                v.rounds = rounds;
            }
            return SegFlow::Again;
        }
        let runs = self.verify_runs(lo, hi);
        ask(seg, runs)
    }

    /// The re-runs so far (`runs_so_far` each side) judged at this round's α: the culprit
    /// confirmed, more re-runs, a back-off or a failed verification.
    fn judge_reruns(&mut self, seg: &mut Segment, runs_so_far: usize) -> SegFlow {
        let (lo, hi) = (seg.lo, seg.hi);
        let max = self.params.max_repeats;
        // Looking again after each extension would let a false difference through far more often
        // than α: round k tests at α / 2^(k-1), so all rounds together stay below 2α.
        let base = if seg.split {
            self.params.alpha / 10.0
        } else {
            self.params.alpha
        };
        let alpha = match &seg.stage {
            Stage::Verify(v) => base / 2f64.powi(v.rounds.saturating_sub(1).min(30) as i32),
            _ => base,
        };
        let (c, reaches) = match &seg.stage {
            Stage::Verify(v) => {
                let params = Params {
                    alpha,
                    ..self.params
                };
                (
                    compare(&v.old, &v.new, &params, self.det),
                    !self.short_of_threshold(&[(&v.old, &v.new)], Some(seg.up)),
                )
            }
            _ => (None, false),
        };
        let Some(c) = c else {
            if runs_so_far < max {
                let runs = self.first_runs().min(max - runs_so_far);
                return ask(seg, runs);
            }
            return SegFlow::Failed(
                format!(
                    "verification of {} against {} gave no usable numbers",
                    self.name(hi),
                    self.name(lo)
                ),
                self.guess(seg, lo, hi),
            );
        };
        if c.differs && (c.after > c.before) == seg.up {
            return SegFlow::Found(self.confirmed(seg));
        }
        // More re-runs while they show a move the range's way, or cannot yet show the move
        // short of the threshold (a handful of runs against it proves nothing).
        if !self.det && (self.promising(&c, seg.up) || reaches) && runs_so_far < max {
            let runs = runs_so_far.min(max - runs_so_far).max(1);
            return ask(seg, runs);
        }
        // Still in doubt with `max_repeats` spent (the interval reaches the threshold): more
        // re-runs up to the budget, each look at its halved α.
        let budget = self.budget(&[lo, hi]);
        if !self.det && reaches && runs_so_far < budget {
            let runs = runs_so_far.min(budget - runs_so_far).max(1);
            return ask(seg, runs);
        }
        // All re-runs made: a real move the range's way (at this round's α) whose interval
        // reaches the threshold confirms the culprit; its medians' size is said with it.
        let same_dir = (c.after > c.before) == seg.up;
        if !self.det && same_dir && c.p < alpha && reaches {
            self.notes.push(format!(
                "the re-runs of {} against {} moved {:+.2} % ({}), less than the {} threshold in \
                 their medians but not shown to be below it",
                self.name(hi),
                self.name(lo),
                c.rel * 100.0,
                self.p_text(c.p),
                threshold_text(&self.params.threshold)
            ));
            return SegFlow::Found(self.confirmed(seg));
        }
        let why = format!(
            "{runs_so_far} interleaved runs each of {} and {} gave medians {} and {} \
             ({:+.2} %, {})",
            self.name(lo),
            self.name(hi),
            fmt_num(c.before),
            fmt_num(c.after),
            c.rel * 100.0,
            self.p_text(c.p)
        );
        if let Some(flow) = self.back_off(seg, &format!("the re-runs did not confirm: {why}")) {
            return flow;
        }
        SegFlow::Failed(
            format!("verification failed: {why}"),
            self.guess(seg, lo, hi),
        )
    }
}

/// Ask for `runs` more interleaved re-runs of `seg`'s parent and culprit.
fn ask(seg: &mut Segment, runs: usize) -> SegFlow {
    if let Stage::Verify(v) = &mut seg.stage {
        v.asked = Some(runs);
    }
    SegFlow::Act(Action::Verify {
        parent: seg.lo,
        culprit: seg.hi,
        runs,
    })
}
