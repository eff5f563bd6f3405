//! Culprit assembly: the evidence of one step, and the verdict of a whole search.

use super::classify::*;
use super::state::*;
use super::types::*;

impl Search {
    pub(super) fn finish_hunt(&mut self) -> Flow {
        let mut found = std::mem::take(&mut self.hunt.found);
        let failed = std::mem::take(&mut self.hunt.failed);
        if !found.is_empty() {
            for (reason, _) in &failed {
                self.notes.push(format!("inconclusive sub-range: {reason}"));
            }
            found.sort_by(|a, b| {
                b.rel_change
                    .abs()
                    .total_cmp(&a.rel_change.abs())
                    .then(a.pos.cmp(&b.pos))
            });
            return self.finish(Outcome::Culprits(found));
        }
        let reason = if failed.is_empty() {
            "no culprit found".to_string()
        } else {
            failed
                .iter()
                .map(|(r, _)| r.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        };
        let best_guess = failed.into_iter().filter_map(|(_, g)| g).max_by(|a, b| {
            a.rel_change
                .abs()
                .total_cmp(&b.rel_change.abs())
                .then(b.pos.cmp(&a.pos))
        });
        self.finish(Outcome::Inconclusive { reason, best_guess })
    }

    /// An unconfirmed best guess that the step of `seg` lies at `pos` (from the last commit
    /// classified at the old level, `parent`), every commit of the segment still a candidate:
    /// `None` when the runs side by side move the other way than the segment's ends do (a
    /// guess must not contradict the evidence it came from).
    pub(super) fn guess(&self, seg: &Segment, parent: usize, pos: usize) -> Option<Culprit> {
        let c = self.culprit(parent, pos, seg.lo + 1..=seg.hi, false);
        let agrees =
            c.rel_change.is_finite() && c.rel_change != 0.0 && (c.rel_change > 0.0) == seg.up;
        agrees.then_some(c)
    }

    pub(super) fn culprit(
        &self,
        parent: usize,
        pos: usize,
        candidates: std::ops::RangeInclusive<usize>,
        verified: bool,
    ) -> Culprit {
        // The samples of both taken side by side (the probe windows and the verification).
        let ev = self.evidence(&[parent, pos]);
        let (a, b) = (ev.pooled(0), ev.pooled(1));
        let c = self.compare_ev(&ev, 0, 1).unwrap_or(Cmp {
            before: f64::NAN,
            after: f64::NAN,
            rel: f64::NAN,
            p: f64::NAN,
            differs: false,
        });
        let (interval, windows) = if self.det {
            (Some((c.rel, c.rel)).filter(|_| c.rel.is_finite()), 0)
        } else {
            let strata = self.strata_of(&ev, 0, 1);
            let step = stats::step::estimate_with_interval(&strata);
            (
                step.and_then(|s| s.interval),
                if self.windowed() { strata.len() } else { 0 },
            )
        };
        Culprit {
            pos,
            parent,
            candidates: candidates.collect(),
            before: c.before,
            // The level the change estimated window by window gives (the new side's own
            // median can differ when the machine's speed moved between windows): the levels
            // printed give the change printed.
            after: if windows > 1 && c.rel.is_finite() {
                c.before + c.rel * c.before.abs()
            } else {
                c.after
            },
            n_before: a.len(),
            n_after: b.len(),
            rel_change: c.rel,
            interval,
            windows,
            p_value: c.p,
            verified,
            reruns: 0,
            rerun_windows: 0,
        }
    }
}

impl Search {
    /// Whether commits compare as exact values, from the runs of positions `lo` and `hi`:
    /// a declared deterministic test whose runs there agree, a count whose runs spread far
    /// less than the threshold (one run per commit, a move counting only beyond that spread),
    /// or runs without any spread. Sets `det` (and the counts' tolerance); returns true when a
    /// declared deterministic test's runs differ (it is then treated as noisy).
    pub(super) fn settle_exact(&mut self, lo: usize, hi: usize) -> bool {
        let (a, b) = (&self.points[lo].samples, &self.points[hi].samples);
        let spread = has_spread(a) || has_spread(b);
        let disproved = self.params.deterministic && spread;
        if disproved {
            self.no_det = true;
        }
        let counted_exact = !self.no_det && self.params.counted && {
            let level = stats::median(a).unwrap_or(0.0);
            let limit = self.relative_threshold(level) / 10.0;
            a.len() >= 2 && b.len() >= 2 && limit > 0.0 && rel_spread(a).max(rel_spread(b)) <= limit
        };
        if counted_exact && spread {
            let level = stats::median(a).unwrap_or(0.0);
            self.params.tolerance = self.relative_threshold(level) / 10.0;
        }
        self.det = !self.no_det
            && ((self.params.deterministic && !spread)
                || counted_exact
                || (zero_spread(a) && zero_spread(b)));
        disproved
    }

    /// The step from `parent`'s runs to `culprit`'s, stated as a search with `params` states a
    /// culprit and its parent: exact values where their runs say so (the rule the search
    /// applies to its ends), else the test on the runs taken side by side. With whether the
    /// values were compared exactly; `None` when the runs compare to nothing.
    pub fn pair(params: Params, parent: &[Stored], culprit: &[Stored]) -> Option<(Culprit, bool)> {
        let mut s = Search::new(2, params);
        s.add_stored(0, parent);
        s.add_stored(1, culprit);
        s.settle_exact(0, 1);
        let r = s.culprit(0, 1, 1..=1, false);
        (r.before.is_finite() && r.after.is_finite() && r.rel_change.is_finite())
            .then_some((r, s.det))
    }

    /// `c` stated as exact values where every stored run of its parent (`parent`) and of
    /// itself (`culprit`) compare exactly by [`Search::pair`]'s rule (runs without spread, or
    /// a count whose runs spread far less than the threshold) although the search, which
    /// began on one run a commit, did not call the metric exact: `None` otherwise. One
    /// classification of exact values in `find` and every view of the store.
    pub fn restate_exact(
        &self,
        c: &Culprit,
        parent: &[Stored],
        culprit: &[Stored],
    ) -> Option<Culprit> {
        if self.det {
            return None;
        }
        let (mut r, det) = Search::pair(self.params, parent, culprit)?;
        if !det || r.before == r.after {
            return None;
        }
        r.pos = c.pos;
        r.parent = c.parent;
        r.candidates = c.candidates.clone();
        r.verified = c.verified;
        r.reruns = c.reruns;
        r.rerun_windows = c.rerun_windows;
        Some(r)
    }

    /// `c`'s numbers read again from every stored run of its parent (`parent`) and of itself
    /// (`culprit`), identical builds' runs included, as a later `report` of the same range reads
    /// them: the search that named `c` compared only the runs it was given and took, while runs
    /// of byte-identical builds taken side by side in its own windows reach the store under
    /// their own commits. One number for one step in `find` and `report` alike. The search's
    /// rules (deterministic or not, counted, the tolerance) are kept; `c` is returned as it is
    /// when the stored runs compare to nothing.
    pub fn restate(&self, c: &Culprit, parent: &[Stored], culprit: &[Stored]) -> Culprit {
        let mut s = Search::new(self.points.len(), self.params);
        s.det = self.det;
        s.no_det = self.no_det;
        s.add_stored(c.parent, parent);
        s.add_stored(c.pos, culprit);
        let mut r = s.culprit(c.parent, c.pos, c.pos..=c.pos, c.verified);
        if !(r.before.is_finite() && r.after.is_finite() && r.rel_change.is_finite()) {
            return c.clone();
        }
        r.candidates = c.candidates.clone();
        r.reruns = c.reruns;
        r.rerun_windows = c.rerun_windows;
        r
    }
}
