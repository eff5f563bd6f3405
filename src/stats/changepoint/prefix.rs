//! Weighted prefix sums of commit levels: the O(1) segment costs, means and z scores the
//! segmentation and the confirmation share.

use super::super::summary::median_in_place;
/// Weighted prefix sums for O(1) segment costs.
pub(super) struct Prefix {
    w: Vec<f64>,
    s: Vec<f64>,
    q: Vec<f64>,
    /// Subtracted from every level before summing (the median).
    centre: f64,
}

impl Prefix {
    pub(super) fn new(y: &[f64], w: &[f64]) -> Prefix {
        // Centre on the median so long segments of large levels do not cancel digits.
        let mut c = y.to_vec();
        let centre = median_in_place(&mut c).unwrap_or(0.0);
        let n = y.len();
        let (mut pw, mut ps, mut pq) = (vec![0.0; n + 1], vec![0.0; n + 1], vec![0.0; n + 1]);
        for i in 0..n {
            let v = y[i] - centre;
            pw[i + 1] = pw[i] + w[i];
            ps[i + 1] = ps[i] + w[i] * v;
            pq[i + 1] = pq[i] + w[i] * v * v;
        }
        Prefix {
            w: pw,
            s: ps,
            q: pq,
            centre,
        }
    }
    /// The sums up to position `t`: weight, weighted (centred) level, and its square.
    pub(super) fn at(&self, t: usize) -> (f64, f64, f64) {
        (self.w[t], self.s[t], self.q[t])
    }

    pub(super) fn len(&self) -> usize {
        self.w.len() - 1
    }
    /// Weighted sum of squares around the weighted mean of [a, b).
    #[cfg(test)]
    pub(super) fn cost(&self, a: usize, b: usize) -> f64 {
        let w = self.w[b] - self.w[a];
        if w <= 0.0 {
            return 0.0;
        }
        let s = self.s[b] - self.s[a];
        (self.q[b] - self.q[a] - s * s / w).max(0.0)
    }
    /// The weights of [a, b) summed.
    pub(super) fn weight(&self, a: usize, b: usize) -> f64 {
        self.w[b] - self.w[a]
    }
    /// Weighted mean of [a, b) (the centre where it has no weight).
    pub(super) fn mean(&self, a: usize, b: usize) -> f64 {
        self.centre + self.centred_mean(a, b)
    }
    /// Weighted mean of [a, b) less the centre (0 where it has no weight).
    pub(super) fn centred_mean(&self, a: usize, b: usize) -> f64 {
        let w = self.w[b] - self.w[a];
        if w <= 0.0 {
            0.0
        } else {
            (self.s[b] - self.s[a]) / w
        }
    }
    /// z score of the difference of the weighted means of [a, t) and [t, b).
    pub(super) fn z(&self, a: usize, t: usize, b: usize) -> f64 {
        let wl = self.w[t] - self.w[a];
        let wr = self.w[b] - self.w[t];
        if wl <= 0.0 || wr <= 0.0 {
            return 0.0;
        }
        (self.centred_mean(t, b) - self.centred_mean(a, t)) / (1.0 / wl + 1.0 / wr).sqrt()
    }
}
