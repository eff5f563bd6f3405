//! The simulated world of the tests: a level per position, Gaussian noise of a given CV, rare
//! ×1.3 outliers, unbuildable commits; a [`Lab`] whose builds count rounds as real ones would.

use super::*;

/// SplitMix64: a tiny seeded PRNG so the oracle is reproducible without the rand crate.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(super) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub(super) fn gauss(&mut self) -> f64 {
        let u1 = self.unit().max(1e-300);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Ground truth: a level per position, Gaussian noise of a given CV, rare ×1.3 outliers.
pub(super) struct World {
    pub(super) levels: Vec<f64>,
    pub(super) cv: f64,
    pub(super) outliers: f64,
    pub(super) unbuildable: Vec<bool>,
    pub(super) rng: Rng,
    /// Attempted builds (built or found unbuildable).
    pub(super) built: Vec<bool>,
    /// Positions that build but whose test fails every run (NaN).
    pub(super) failing: Vec<bool>,
}

impl World {
    pub(super) fn new(levels: Vec<f64>, cv: f64, seed: u64) -> World {
        let n = levels.len();
        World {
            levels,
            cv,
            outliers: if cv > 0.0 { 0.02 } else { 0.0 },
            unbuildable: vec![false; n],
            built: vec![false; n],
            failing: vec![false; n],
            rng: Rng(seed),
        }
    }
    pub(super) fn sample(&mut self, pos: usize) -> f64 {
        if self.failing[pos] {
            return f64::NAN;
        }
        let mut v = self.levels[pos] * (1.0 + self.cv * self.rng.gauss());
        if self.outliers > 0.0 && self.rng.unit() < self.outliers {
            v *= 1.3;
        }
        v
    }
}

impl Lab for World {
    fn build(&mut self, set: &[usize], _jobs: usize) -> anyhow::Result<(Vec<bool>, usize)> {
        let mut builds = 0;
        let ok = set
            .iter()
            .map(|&p| {
                if !self.built[p] {
                    self.built[p] = true;
                    builds += 1;
                }
                !self.unbuildable[p]
            })
            .collect();
        Ok((ok, builds))
    }
    fn cached(&self, pos: usize) -> bool {
        self.built[pos] && !self.unbuildable[pos]
    }
    fn unbuildable(&self, pos: usize) -> bool {
        self.built[pos] && self.unbuildable[pos]
    }
    fn stored(&self, _pos: usize) -> Vec<f64> {
        Vec::new()
    }
    fn measure(&mut self, pos: usize, runs: usize) -> anyhow::Result<Vec<f64>> {
        assert!(runs > 0, "asked for zero runs");
        Ok((0..runs).map(|_| self.sample(pos)).collect())
    }
    fn measure_interleaved(
        &mut self,
        a: usize,
        b: usize,
        runs: usize,
    ) -> anyhow::Result<(Vec<f64>, Vec<f64>)> {
        assert!(runs > 0);
        let (mut va, mut vb) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            va.push(self.sample(a));
            vb.push(self.sample(b));
        }
        Ok((va, vb))
    }
    fn interrupted(&self) -> bool {
        false
    }
}
