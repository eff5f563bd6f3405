//! Where a confirmed step lies: the commits its runs and levels cannot tell apart from its
//! boundary (a span), by the runs taken side by side and by the levels, each commit judged on
//! its own machine state.

use super::confirm::{Ctx, LEVEL_SPAN};

/// How much worse a boundary may fit than the best (twice the log-likelihood) and still be
/// where the step lies: χ²₁ at 0.001, as strict as a step's own test (a boundary placed by
/// less blames a commit the runs do not place).
const PLACE_CHI2: f64 = 10.83;
/// The degrees of freedom of the Student t whose likelihood places a boundary among commits
/// measured alone: one reading at neither level (a run on a slow night, an outlier) moves its
/// place by little.
const PLACE_NU: f64 = 4.0;

impl Ctx<'_> {
    /// Where the step at `b` between [a, b) and [b, c) lies: the positions [`Ctx::level_span`]
    /// places it at, and every split the runs taken side by side fit nearly as well as the
    /// best ([`PLACE_CHI2`] on their z²: a commit whose runs lie between the two levels, or one
    /// outlier run on the step's commit, widens the span to the commits the runs cannot tell
    /// apart). Returns the last commit before the first such position and the last one.
    pub(super) fn span(&self, a: usize, b: usize, c: usize) -> (usize, usize) {
        let lo = (a + 1).max(b.saturating_sub(LEVEL_SPAN));
        let hi = c.min(b + LEVEL_SPAN + 1);
        let (first, last) = self.level_span(a, b, c);
        // Where windows hold runs of both sides, every split they fit nearly as well as the
        // best (a commit measured between the two levels) may be the step's.
        let paired = |t: usize| {
            super::side::side_by_side(self.model, (a, t, c), self.tails, false)
                .map(|(d, v)| d * d / v)
                .filter(|q| q.is_finite())
        };
        let Some(here) = paired(b) else {
            return (first, last);
        };
        let fits: Vec<(usize, f64)> = (lo..hi)
            .filter(|&t| !self.model.joined[t])
            .filter_map(|t| {
                if t == b {
                    Some((t, here))
                } else {
                    paired(t).map(|q| (t, q))
                }
            })
            .collect();
        let best = fits.iter().map(|x| x.1).fold(here, f64::max);
        let near = fits
            .iter()
            .filter(|x| x.1 >= best - PLACE_CHI2)
            .map(|x| x.0);
        let (lo_t, hi_t) = near.fold((b, b), |(l, h), t| (l.min(t), h.max(t)));
        (first.min(lo_t - 1), last.max(hi_t))
    }

    /// Where the levels place the step at `b` between [a, b) and [b, c): every position `t`
    /// (within [`LEVEL_SPAN`] commits of `b`, where a boundary may be) whose split fits the
    /// levels nearly as well as `b`'s ([`PLACE_CHI2`]), each level judged by a Student t likelihood
    /// ([`PLACE_NU`]); the last commit before the first such position, and the last such
    /// position. A commit is judged against the old and the new level of its own stratum
    /// where that holds commits on both sides (compared on one machine state, with the
    /// model's variances); a commit measured alone in its stratum against the other such
    /// commits, by their own spread (nights of one machine read alike; a session of another
    /// state reads as neither level); a commit of a stratum on one side only places nothing
    /// (its state is its stratum's, and no level beside it tells that). Commits between the
    /// two are at neither level as far as their runs tell: blaming `b` alone would blame a
    /// commit the runs do not place.
    fn level_span(&self, a: usize, b: usize, c: usize) -> (usize, usize) {
        let lo = (a + 1).max(b.saturating_sub(LEVEL_SPAN));
        let hi = c.min(b + LEVEL_SPAN + 1);
        let (from, to) = (a.max(b.saturating_sub(LEVEL_SPAN)), c.min(b + LEVEL_SPAN));
        let strata = &self.model.strata;
        // On one machine state the levels compare as they are: the segmentation's boundary
        // is the best estimate of the step's place, as it always was.
        if strata.single(from, to) {
            return (b - 1, b);
        }
        let both = strata.straddling(from, b, to);
        let alone = |j: usize| {
            let s = strata.of[j];
            !(from..to).any(|i| i != j && strata.of[i] == s)
        };
        // Classes: each straddling stratum, then the commits measured alone, then the rest.
        let class = |j: usize| match both.binary_search(&strata.of[j]) {
            Ok(i) => i,
            Err(_) if alone(j) => both.len(),
            Err(_) => both.len() + 1,
        };
        let mut acc = vec![[0.0f64; 4]; both.len() + 2];
        for j in from..to {
            let k = if j < b { 0 } else { 2 };
            acc[class(j)][k] += self.w[j];
            acc[class(j)][k + 1] += self.w[j] * self.y[j];
        }
        // The commits measured alone: their spread about their side's level (a robust sd).
        let lone: Vec<usize> = (from..to).filter(|&j| class(j) == both.len()).collect();
        let spread = {
            let side = |j: usize| if j < b { 0 } else { 2 };
            let level = |k: usize| acc[both.len()][k + 1] / acc[both.len()][k];
            let mut d: Vec<f64> = lone
                .iter()
                .map(|&j| (self.y[j] - level(side(j))).abs())
                .collect();
            crate::stats::summary::median_in_place(&mut d).map(|m| 1.4826 * m)
        };
        // Each commit's class levels without itself (a reading cannot vouch for its own level).
        let levels = |j: usize| {
            let [mut wl, mut sl, mut wr, mut sr] = acc[class(j)];
            if j < b {
                (wl, sl) = (wl - self.w[j], sl - self.w[j] * self.y[j]);
            } else {
                (wr, sr) = (wr - self.w[j], sr - self.w[j] * self.y[j]);
            }
            (wl > 1e-12 * self.w[j] && wr > 1e-12 * self.w[j]).then(|| (sl / wl, sr / wr))
        };
        // Within a stratum the runs' own noise (Gaussian); a commit measured alone by a
        // Student t (one reading on a slow night moves its place by little).
        let rho = |j: usize, level: f64| match class(j) {
            k if k < both.len() => (self.y[j] - level).powi(2) * self.w[j],
            _ => match spread {
                Some(sd) if sd > 0.0 && lone.len() >= 6 => {
                    let r2 = ((self.y[j] - level) / sd).powi(2);
                    (PLACE_NU + 1.0) * (r2 / PLACE_NU).ln_1p()
                }
                _ => 0.0,
            },
        };
        // What moving commit j to the new side costs (nothing where its class places nothing).
        // A commit alone on its side of a stratum holding both is that side's level there: it
        // is placed by its distance from the other side's (a culprit compared side by side
        // with its parent, the only new commit of its windows nearby, stays where it is).
        let to_new = |j: usize| match levels(j) {
            Some((old, new)) if class(j) <= both.len() => rho(j, new) - rho(j, old),
            None if class(j) < both.len() => {
                let [wl, sl, wr, sr] = acc[class(j)];
                match j < b {
                    true if wr > 0.0 => rho(j, sr / wr),
                    false if wl > 0.0 => -rho(j, sl / wl),
                    _ => 0.0,
                }
            }
            _ => 0.0,
        };
        let (mut first, mut last) = (b, b);
        let mut cost = 0.0;
        for t in (lo..b).rev() {
            cost += to_new(t);
            if !self.model.joined[t] && cost <= PLACE_CHI2 {
                first = t;
            }
        }
        cost = 0.0;
        for t in b + 1..hi {
            cost -= to_new(t - 1);
            if !self.model.joined[t] && cost <= PLACE_CHI2 {
                last = t;
            }
        }
        (first - 1, last)
    }
}
