//! The simulated world of the tests: a level per position, Gaussian noise of a given CV, rare
//! ×1.3 outliers, unbuildable commits; a [`Lab`] whose builds count rounds as real ones would.

use super::types::*;
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

/// Ground truth: a level per position, Gaussian noise of a given CV, rare ×1.3 outliers, and
/// a machine whose speed drifts with the (simulated) clock: every value is multiplied by
/// `1 + drift · sin(2π t / period)`, time passing with every run and build.
pub(super) struct World {
    pub(super) levels: Vec<f64>,
    pub(super) cv: f64,
    pub(super) outliers: f64,
    /// How far an outlier lies: ×(1 + a random share between the two), ×1.3 by default.
    pub(super) outlier_size: (f64, f64),
    pub(super) unbuildable: Vec<bool>,
    pub(super) rng: Rng,
    /// Attempted builds (built or found unbuildable).
    pub(super) built: Vec<bool>,
    /// Positions that build but whose test fails every run (NaN).
    pub(super) failing: Vec<bool>,
    /// Relative amplitude of the drift (0: none) and its period in seconds.
    pub(super) drift: f64,
    pub(super) period: f64,
    /// Seconds since the start; a run takes `run_secs`, a build `build_secs`.
    pub(super) clock: f64,
    pub(super) run_secs: f64,
    pub(super) build_secs: f64,
    /// Windows opened so far (their ids).
    pub(super) windows: u64,
    /// What the driver said the search decided about probes, in order.
    pub(super) decided: Vec<Decision>,
    /// A metric the machine's load does not move (builds may go beside runs), and the builds
    /// the driver asked to check beside each measurement.
    pub(super) counted: bool,
    pub(super) checked: Vec<Vec<usize>>,
}

impl World {
    pub(super) fn new(levels: Vec<f64>, cv: f64, seed: u64) -> World {
        let n = levels.len();
        World {
            levels,
            cv,
            outliers: if cv > 0.0 { 0.02 } else { 0.0 },
            outlier_size: (0.3, 0.3),
            unbuildable: vec![false; n],
            built: vec![false; n],
            failing: vec![false; n],
            rng: Rng(seed),
            drift: 0.0,
            period: 30.0,
            clock: 0.0,
            run_secs: 0.05,
            build_secs: 3.0,
            windows: 0,
            decided: Vec::new(),
            counted: false,
            checked: Vec::new(),
        }
    }

    /// The same world on a machine whose speed drifts by `amplitude` with a `period` in seconds
    /// (the phase set by the seed), runs of `run_secs` and builds of `build_secs`.
    pub(super) fn drifting(
        mut self,
        amplitude: f64,
        period: f64,
        run_secs: f64,
        build_secs: f64,
    ) -> World {
        self.drift = amplitude;
        self.period = period;
        self.run_secs = run_secs;
        self.build_secs = build_secs;
        self.clock = self.rng.unit() * period;
        self
    }

    pub(super) fn sample(&mut self, pos: usize) -> f64 {
        self.clock += self.run_secs;
        if self.failing[pos] {
            return f64::NAN;
        }
        let speed = 1.0 + self.drift * (std::f64::consts::TAU * self.clock / self.period).sin();
        let mut v = self.levels[pos] * speed * (1.0 + self.cv * self.rng.gauss());
        if self.outliers > 0.0 && self.rng.unit() < self.outliers {
            let (lo, hi) = self.outlier_size;
            // One more draw only for a range, so a fixed size keeps every seed's stream.
            let size = if hi > lo {
                lo + (hi - lo) * self.rng.unit()
            } else {
                lo
            };
            v *= 1.0 + size;
        }
        v
    }
}

impl Lab for World {
    fn decided(&mut self, what: &Decision) {
        self.decided.push(*what);
    }
    fn build(&mut self, set: &[usize], _jobs: usize) -> anyhow::Result<(Vec<bool>, usize)> {
        let mut builds = 0;
        let ok = set
            .iter()
            .map(|&p| {
                if !self.built[p] {
                    self.built[p] = true;
                    builds += 1;
                    self.clock += self.build_secs;
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
    fn stored(&self, _pos: usize) -> Vec<Stored> {
        Vec::new()
    }
    fn measure(&mut self, pos: usize, runs: usize) -> anyhow::Result<Vec<f64>> {
        assert!(runs > 0, "asked for zero runs");
        Ok((0..runs).map(|_| self.sample(pos)).collect())
    }
    fn measure_window(
        &mut self,
        positions: &[usize],
        runs: usize,
        window: Option<(u64, u32)>,
    ) -> anyhow::Result<Measured> {
        assert!(runs > 0, "asked for zero runs");
        let (id, first) = window.unwrap_or_else(|| {
            self.windows += 1;
            (self.windows, 0)
        });
        let mut values = vec![Vec::new(); positions.len()];
        for _ in 0..runs {
            for (i, &p) in positions.iter().enumerate() {
                let v = self.sample(p);
                values[i].push(v);
            }
        }
        Ok(Measured {
            window: id,
            first_moment: first,
            rounds: runs as u32,
            values,
        })
    }
    fn builds_beside(&self) -> bool {
        self.counted
    }
    fn check_beside(&mut self, set: &[usize]) {
        self.checked.push(set.to_vec());
    }
    fn build_secs(&self, pos: usize) -> Option<f64> {
        self.built[pos].then_some(self.build_secs)
    }
    fn run_secs(&self) -> Option<f64> {
        Some(self.run_secs)
    }
    fn interrupted(&self) -> bool {
        false
    }
}
