//! Random nights: perfbisect's commands simulated over a generated history, each at a machine
//! state of its own, and what the change-point model then says.
//!
//! A history is a chain of commits with a true level each (one build each, a little jitter
//! between builds, an optional step), and a store of runs. Commands add runs as the real ones
//! do: `find` drives the real search ([`perfbisect::bisect::drive`]) on a simulated lab whose
//! windows are the real search's; `run A..B` measures its commits in one session of
//! interleaved rounds and then tops up the steps the real detector leaves undecided, as
//! `run` does; `run C --again` measures one commit in a session of its own; an import adds
//! one cron round a night (a round of its own, a named machine). Each command runs at a
//! machine state drawn for it (×0.85, ×1.00, ×1.15 or ×1.30), an import at its machine's
//! speed. The views then read the store through the real pipeline
//! ([`perfbisect::pipeline::rows::detection`]): the whole history (`detect`) and a range of it
//! (`detect RANGE`, `report RANGE`).
//!
//! Shared by the property test (tests/suite/nights.rs) and the benchmark (scripts/bench-nights.sh):
//! only the crate's public interface is used, so the benchmark builds the same file against
//! the build before a change too. (The lines between `nights:machine` marks use the run's
//! machine, which older builds do not read: the benchmark drops them there.)

#![allow(dead_code)]

use perfbisect::bisect::{self, Lab, Measured, Params, Search, Stored};
use perfbisect::git::CommitInfo;
use perfbisect::pipeline::rows::{CommitRow, Status};
use perfbisect::stats::{changepoint, Detection, Threshold};
use perfbisect::store::Run;

/// SplitMix64: seeded, reproducible, no dependency.
#[derive(Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn gauss(&mut self) -> f64 {
        let u1 = self.unit().max(1e-300);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    pub fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.range(0, from.len() - 1)]
    }
}

/// One stored run as the store would hold it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimRun {
    pub value: f64,
    /// The measuring session (0 for an imported row).
    pub window: u64,
    pub moment: u32,
    /// An imported row's round (its key) and time.
    pub round: u64,
    pub time: u64,
    pub imported: bool,
    /// The machine that measured it (0: this one).
    pub machine: u64,
}

impl Run for SimRun {
    fn value(&self) -> Option<f64> {
        Some(self.value)
    }
    fn moment_key(&self) -> (u64, u64) {
        if self.imported {
            (self.round, self.time)
        } else {
            (self.window, u64::from(self.moment))
        }
    }
    fn imported(&self) -> bool {
        self.imported
    }
    // nights:machine begin
    fn machine(&self) -> u64 {
        self.machine
    }
    // nights:machine end
}

/// The machine states a command may run at.
pub const STATES: [f64; 4] = [0.85, 1.0, 1.15, 1.3];

/// The test's settings (those of tests/suite/evidence.rs: 2 % noise, a 2 % threshold, 5 repeats).
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    pub cv: f64,
    /// Build-to-build jitter of the true level (relative sd).
    pub jitter: f64,
    pub threshold: f64,
    pub repeats: usize,
    pub max_repeats: usize,
    /// Whether `run --shard` tops up the steps its own commits leave undecided (as `run` does
    /// since issue 56; the builds before measured a shard's commits and stopped).
    pub shard_top_up: bool,
    /// Most runs a commit gets while `run`'s top-up still finds a step too few runs to decide:
    /// the budget `find`, `step` and `compare` spend on an open decision, at its least (twice
    /// `max_repeats`: a build as quick as 60 runs); `NIGHTS_TOP_UP_BUDGET=0`: `max_repeats`,
    /// as `run` topped up before.
    pub budget: usize,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            cv: 0.02,
            jitter: 0.002,
            threshold: 0.02,
            repeats: 5,
            max_repeats: 30,
            // The benchmark runs the builds before as they were (NIGHTS_SHARD_TOP_UP=0).
            shard_top_up: std::env::var("NIGHTS_SHARD_TOP_UP").map_or(true, |v| v != "0"),
            budget: if std::env::var("NIGHTS_TOP_UP_BUDGET").is_ok_and(|v| v == "0") {
                30
            } else {
                2 * 30
            },
        }
    }
}

/// A generated history and its store.
pub struct History {
    pub setup: Setup,
    /// The true level of each commit's build.
    pub level: Vec<f64>,
    /// Where the level steps (the first commit of the new level), and by how much.
    pub steps: Vec<(usize, f64)>,
    pub runs: Vec<Vec<SimRun>>,
    pub built: Vec<bool>,
    windows: u64,
    clock: u64,
    rng: Rng,
    /// The commands run, as a person would type them (with the machine's state).
    pub log: Vec<String>,
}

impl History {
    /// `n` commits at 1000, each step `(at, size)` moving every commit from `at` on.
    pub fn new(n: usize, steps: &[(usize, f64)], setup: Setup, seed: u64) -> History {
        let mut rng = Rng(seed ^ 0x6e69_6768_7473);
        let level = (0..n)
            .map(|i| {
                let f: f64 = steps
                    .iter()
                    .filter(|(at, _)| i >= *at)
                    .map(|(_, s)| 1.0 + s)
                    .product();
                1000.0 * f * (1.0 + setup.jitter * rng.gauss())
            })
            .collect();
        History {
            setup,
            level,
            steps: steps.to_vec(),
            runs: vec![Vec::new(); n],
            built: vec![false; n],
            windows: 0,
            clock: 1_700_000_000,
            rng,
            log: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.level.len()
    }

    fn sample(&mut self, c: usize, state: f64) -> f64 {
        self.clock += 1;
        let mut v = self.level[c] * state * (1.0 + self.setup.cv * self.rng.gauss());
        // Rare outlier runs, as a shared machine gives them.
        if self.rng.chance(0.02) {
            v *= 1.05 + 0.05 * self.rng.unit();
        }
        v
    }

    fn window(&mut self) -> u64 {
        self.windows += 1;
        self.windows
    }

    fn push(&mut self, c: usize, value: f64, window: u64, moment: u32) {
        self.runs[c].push(SimRun {
            value,
            window,
            moment,
            round: 0,
            time: self.clock,
            imported: false,
            machine: 0,
        });
    }

    fn params(&self) -> Params {
        Params {
            alpha: 0.01,
            threshold: Threshold::Relative(self.setup.threshold),
            repeats: self.setup.repeats,
            max_repeats: self.setup.max_repeats,
            deterministic: false,
            interleave: true,
            counted: false,
            tolerance: 0.0,
            ..Params::default()
        }
    }

    /// `find` over commits `lo..=hi` (`lo` the old end) at the machine's `state`.
    pub fn find(&mut self, lo: usize, hi: usize, state: f64) {
        self.log.push(format!("find {lo}..{hi} at x{state:.2}"));
        let len = hi - lo + 1;
        let mut search = Search::new(len, self.params());
        let mut lab = FindLab { h: self, lo, state };
        // The simulated lab cannot fail.
        let _ = bisect::drive(&mut search, &mut lab, len, 1);
    }

    /// `run` over `lo..=hi` (every commit, or shard `(i, n)`: every nth from the ith), at
    /// `state`: one session of interleaved rounds, then the top-up of the steps left
    /// undecided over the range with its old end (a shard: over its own commits), as `run`
    /// does.
    pub fn run(
        &mut self,
        lo: usize,
        hi: usize,
        shard: Option<(usize, usize)>,
        again: bool,
        state: f64,
    ) {
        self.log.push(format!(
            "run {lo}..{hi}{}{} at x{state:.2}",
            shard.map_or(String::new(), |(i, n)| format!(" --shard {i}/{n}")),
            if again { " --again" } else { "" }
        ));
        let picked: Vec<usize> = (lo..=hi)
            .filter(|j| shard.is_none_or(|(i, n)| (j - lo) % n == i - 1))
            .collect();
        let want: Vec<(usize, usize)> = picked
            .iter()
            .map(|&c| {
                let need = if again {
                    self.setup.repeats
                } else {
                    self.setup.repeats.saturating_sub(self.runs[c].len())
                };
                (c, need)
            })
            .filter(|x| x.1 > 0)
            .collect();
        self.rounds(&want, state);
        // A shard tops up over its own commits (the simulation's shards hold their Nth
        // commits only, not the range's ends).
        match shard {
            None => self.top_up(&(lo.saturating_sub(1)..=hi).collect::<Vec<_>>(), state),
            Some(_) if self.setup.shard_top_up => self.top_up(&picked, state),
            Some(_) => {}
        }
    }

    /// One session measuring `want` (commit, runs) in interleaved rounds.
    fn rounds(&mut self, want: &[(usize, usize)], state: f64) {
        if want.is_empty() {
            return;
        }
        let w = self.window();
        let most = want.iter().map(|x| x.1).max().unwrap_or(0);
        for k in 0..most {
            for &(c, n) in want {
                if k < n {
                    self.built[c] = true;
                    let v = self.sample(c, state);
                    self.push(c, v, w, k as u32);
                }
            }
        }
    }

    /// `run`'s top-up over `chain` (commits, oldest first): the builds beside each undecided
    /// step measured more, side by side, up to six passes.
    fn top_up(&mut self, chain: &[usize], state: f64) {
        let s = self.setup;
        for _ in 0..6 {
            let rows = self.rows_of(chain);
            let d = self.detect_rows(&rows);
            let mut want: std::collections::BTreeMap<usize, usize> = Default::default();
            for u in &d.undecided {
                let has = |j: &usize| !rows[*j].values.is_empty();
                let (Some(b), Some(a)) = (
                    (0..u.index).rev().find(has),
                    (u.index..rows.len()).find(has),
                ) else {
                    continue;
                };
                let apart = u.why == changepoint::Reason::MeasuredApart;
                let plan: Vec<(usize, usize)> = [(b, u.runs.0), (a, u.runs.1)]
                    .into_iter()
                    .map(|(j, seen)| {
                        let own = rows[j].values.len();
                        let (room, seen) = if apart {
                            (s.max_repeats, 0)
                        } else {
                            (s.budget.saturating_sub(own), seen)
                        };
                        (
                            j,
                            u.runs_needed.saturating_sub(seen).max(s.repeats).min(room),
                        )
                    })
                    .collect();
                if apart && plan.iter().any(|p| p.1 == 0) {
                    continue;
                }
                for (j, more) in plan.into_iter().filter(|p| p.1 > 0) {
                    let e = want.entry(chain[j]).or_default();
                    *e = (*e).max(more);
                }
            }
            if want.is_empty() {
                break;
            }
            let plan: Vec<(usize, usize)> = want.into_iter().collect();
            self.rounds(&plan, state);
        }
    }

    /// A cron round a night on `machine` (named by a number, 1 and up) of speed `speed`, for
    /// each commit of `commits`, `runs` runs each (one measurement: the round's).
    pub fn import(&mut self, commits: &[usize], machine: u64, speed: f64, runs: usize) {
        self.log.push(format!(
            "import {} nights on machine {machine} (x{speed:.2}): {commits:?}",
            commits.len()
        ));
        for &c in commits {
            self.clock += 86_400;
            let round = self.rng.next_u64() | 1;
            // Night to night the machine moves a little.
            let night = speed * (1.0 + 0.005 * self.rng.gauss());
            for _ in 0..runs {
                let value = self.sample(c, night);
                self.runs[c].push(SimRun {
                    value,
                    window: 0,
                    moment: 0,
                    round,
                    time: self.clock,
                    imported: true,
                    machine,
                });
            }
        }
    }

    /// The rows of commits `lo..=hi` as the pipeline has them.
    pub fn rows(&self, lo: usize, hi: usize) -> Vec<CommitRow<SimRun>> {
        self.rows_of(&(lo..=hi).collect::<Vec<_>>())
    }

    /// The rows of `chain` (commits, oldest first), as [`History::rows`].
    pub fn rows_of(&self, chain: &[usize]) -> Vec<CommitRow<SimRun>> {
        chain
            .iter()
            .map(|&j| {
                let records = self.runs[j].clone();
                let values: Vec<f64> = records.iter().map(|r| r.value).collect();
                let mut id = [0u8; 20];
                id[..8].copy_from_slice(&(j as u64 + 1).to_be_bytes());
                CommitRow {
                    commit: CommitInfo {
                        id: gix::ObjectId::from_bytes_or_panic(&id),
                        subject: format!("commit {j}"),
                        author: "sim".into(),
                        time: j as i64,
                    },
                    status: if values.is_empty() {
                        Status::Missing
                    } else {
                        Status::Ok
                    },
                    own: records.len(),
                    values,
                    records,
                    same_build_as: None,
                    joins_previous: false,
                }
            })
            .collect()
    }

    fn detect_rows(&self, rows: &[CommitRow<SimRun>]) -> Detection {
        let opts = changepoint::Options {
            threshold: Threshold::Relative(self.setup.threshold),
            ..changepoint::Options::default()
        };
        perfbisect::pipeline::rows::detection(rows, &opts, &self.params())
    }

    /// What `detect` says over `lo..=hi`, its positions made the history's.
    pub fn detect(&self, lo: usize, hi: usize) -> Detection {
        let mut d = self.detect_rows(&self.rows(lo, hi));
        for c in &mut d.points {
            c.index += lo;
            c.last_before += lo;
        }
        for u in &mut d.undecided {
            u.index += lo;
            u.last_before += lo;
        }
        d
    }

    /// Whether some commit before `at` and some from `at` on were measured: else no view of
    /// the runs can show a step at `at`.
    pub fn bracketed(&self, at: usize) -> bool {
        let has = |j: usize| !self.runs[j].is_empty();
        (0..at).any(has) && (at..self.len()).any(has)
    }

    /// Whether the last commit measured before `at` and the first measured from `at` on were
    /// compared on one machine state: runs of both in one window, or windows chained by
    /// commits measured in both (an imported round is a window of its own).
    pub fn linked(&self, at: usize) -> bool {
        let has = |j: &usize| !self.runs[*j].is_empty();
        let (Some(b), Some(a)) = ((0..at).rev().find(has), (at..self.len()).find(has)) else {
            return false;
        };
        let key = |r: &SimRun| {
            if r.imported {
                (1u8, r.round)
            } else {
                (0u8, r.window)
            }
        };
        // Union-find over commits through shared windows.
        let n = self.len();
        let mut parent: Vec<usize> = (0..n).collect();
        fn root(p: &mut [usize], mut x: usize) -> usize {
            while p[x] != x {
                p[x] = p[p[x]];
                x = p[x];
            }
            x
        }
        let mut first: std::collections::HashMap<(u8, u64), usize> = Default::default();
        for (c, runs) in self.runs.iter().enumerate() {
            for r in runs {
                let k = key(r);
                match first.get(&k) {
                    None => {
                        first.insert(k, c);
                    }
                    Some(&o) => {
                        let (x, y) = (root(&mut parent, o), root(&mut parent, c));
                        parent[x] = y;
                    }
                }
            }
        }
        root(&mut parent, a) == root(&mut parent, b)
    }

    /// Whether the runs show a step at `at` with no link: the last commit measured before it
    /// against the first measured from it on, every run of each (their machine states and
    /// all), move by the threshold the step's way at p < 5 % (Welch's t test of the
    /// logarithms). Otherwise the machine states or the noise hid the step: these runs show
    /// no move, and no detector could name one from them.
    pub fn apart_shown(&self, at: usize) -> bool {
        let has = |j: &usize| !self.runs[*j].is_empty();
        let (Some(b), Some(a)) = ((0..at).rev().find(has), (at..self.len()).find(has)) else {
            return false;
        };
        let logs = |j: usize| -> Vec<f64> { self.runs[j].iter().map(|r| r.value.ln()).collect() };
        let (lb, la) = (logs(b), logs(a));
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let rel = (mean(&la) - mean(&lb)).exp() - 1.0;
        let up = self.steps.first().is_some_and(|s| s.1 > 0.0);
        let p = perfbisect::stats::compare::welch_t(&la, &lb).map_or(1.0, |t| t.p_value);
        (rel > 0.0) == up && rel.abs() >= self.setup.threshold * (1.0 - 1e-9) && p < 0.05
    }

    /// The bound on any detector's power at a step at `at` (issue 56): a test that is told
    /// the step's commit, and reads every window (a session, an imported round) holding runs
    /// on both sides of it, where the window's machine state cancels: the least-squares step
    /// of the logarithms within windows, against the runs' known noise, two-sided at `alpha`,
    /// paying nothing for choosing where the step is. A detector that must find the commit
    /// among all the others decides no more steps than it, bar chance.
    pub fn oracle(&self, at: usize, alpha: f64) -> bool {
        self.oracle_p(at).is_some_and(|p| p < alpha)
    }

    /// The bound's p-value (`None`: no window across, or the step the wrong way).
    pub fn oracle_p(&self, at: usize) -> Option<f64> {
        let mut by: std::collections::HashMap<(u8, u64), [f64; 5]> = Default::default();
        for (c, runs) in self.runs.iter().enumerate() {
            let x = if c >= at { 1.0 } else { 0.0 };
            for r in runs {
                let k = if r.imported {
                    (1u8, r.round)
                } else {
                    (0u8, r.window)
                };
                let y = r.value.ln();
                let s = by.entry(k).or_default();
                s[0] += 1.0;
                s[1] += x;
                s[2] += y;
                s[3] += x * x;
                s[4] += x * y;
            }
        }
        let (mut sxx, mut sxy) = (0.0, 0.0);
        for [n, sx, sy, xx, xy] in by.into_values() {
            sxx += xx - sx * sx / n;
            sxy += xy - sx * sy / n;
        }
        if sxx <= 1e-12 {
            return None;
        }
        let step = sxy / sxx;
        let z = step * sxx.sqrt() / self.setup.cv;
        let p = statrs::function::erf::erfc(z.abs() / std::f64::consts::SQRT_2);
        let up = self.steps.first().is_some_and(|s| s.1 > 0.0);
        ((step > 0.0) == up).then_some(p)
    }
}

/// The real search's view of a history's commits `lo..`, measuring at one machine state.
struct FindLab<'a> {
    h: &'a mut History,
    lo: usize,
    state: f64,
}

impl Lab for FindLab<'_> {
    fn build(&mut self, set: &[usize], _jobs: usize) -> anyhow::Result<(Vec<bool>, usize)> {
        let mut n = 0;
        for &p in set {
            if !self.h.built[self.lo + p] {
                self.h.built[self.lo + p] = true;
                n += 1;
            }
        }
        Ok((vec![true; set.len()], n))
    }
    fn cached(&self, pos: usize) -> bool {
        self.h.built[self.lo + pos]
    }
    fn unbuildable(&self, _pos: usize) -> bool {
        false
    }
    fn stored(&self, pos: usize) -> Vec<Stored> {
        // A noisy search compares what it measures here: imported rows are not its evidence.
        self.h.runs[self.lo + pos]
            .iter()
            .filter(|r| !r.imported)
            .map(|r| Stored {
                value: r.value,
                window: r.window,
                moment: r.moment,
                shared: false,
            })
            .collect()
    }
    fn measure(&mut self, pos: usize, runs: usize) -> anyhow::Result<Vec<f64>> {
        let w = self.h.window();
        let c = self.lo + pos;
        let values: Vec<f64> = (0..runs).map(|_| self.h.sample(c, self.state)).collect();
        for &v in &values {
            self.h.push(c, v, w, 0);
        }
        Ok(values)
    }
    fn measure_window(
        &mut self,
        positions: &[usize],
        runs: usize,
        window: Option<(u64, u32)>,
    ) -> anyhow::Result<Measured> {
        let (id, first) = window.unwrap_or_else(|| (self.h.window(), 0));
        let mut values = vec![Vec::new(); positions.len()];
        for k in 0..runs {
            for (i, &p) in positions.iter().enumerate() {
                let c = self.lo + p;
                let v = self.h.sample(c, self.state);
                self.h.push(c, v, id, first + k as u32);
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
    fn interrupted(&self) -> bool {
        false
    }
}

/// The kinds of schedule the families draw from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `find`, `run A..B` (some sharded), `run C [--again]`, each at a random machine state.
    Commands,
    /// Cron rounds imported from one or two named machines (one commit a night), then a few
    /// commands here.
    Imports,
}

/// A random night-like schedule over `h` (see [`Kind`]).
pub fn random_nights(h: &mut History, kind: Kind, rng: &mut Rng) {
    let n = h.len();
    if kind == Kind::Imports {
        let every = rng.range(1, 2);
        let nights: Vec<usize> = (0..n).step_by(every).collect();
        let speed_b = rng.pick(&[0.9, 1.1, 1.2]);
        match rng.range(0, 2) {
            0 => h.import(&nights, 1, 1.0, rng.range(1, 5)),
            1 => {
                // Two machines alternating nights.
                let runs = rng.range(1, 5);
                let (a, b): (Vec<usize>, Vec<usize>) =
                    nights.iter().partition(|&&c| (c / every).is_multiple_of(2));
                h.import(&a, 1, 1.0, runs);
                h.import(&b, 2, speed_b, runs);
            }
            _ => {
                // A handover at a random night.
                let runs = rng.range(1, 5);
                let cut = rng.range(n / 4, 3 * n / 4);
                let (a, b): (Vec<usize>, Vec<usize>) = nights.iter().partition(|&&c| c < cut);
                h.import(&a, 1, 1.0, runs);
                h.import(&b, 2, speed_b, runs);
            }
        }
    }
    if rng.chance(0.5) {
        let s = rng.pick(&STATES);
        h.find(0, n - 1, s);
    }
    for _ in 0..rng.range(1, 3) {
        let lo = rng.range(0, n - 4);
        let hi = (lo + rng.range(3, 20)).min(n - 1);
        let shard = rng.chance(0.3).then(|| {
            let k = rng.range(2, 5);
            (rng.range(1, k), k)
        });
        let s = rng.pick(&STATES);
        h.run(lo, hi, shard, false, s);
    }
    for _ in 0..rng.range(0, 4) {
        let c = rng.range(0, n - 1);
        let again = rng.chance(0.5);
        let s = rng.pick(&STATES);
        h.run(c, c, None, again, s);
    }
    if rng.chance(0.3) {
        let s = rng.pick(&STATES);
        h.run(n - 1, n - 1, None, true, s);
    }
}

/// What the views said of one history.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// Certain steps at no true step (over the views read: the whole history and a range).
    pub false_certain: usize,
    /// Undecided steps at no true step (the whole history's view): what a person is asked to
    /// measure again.
    pub false_undecided: usize,
    /// Where a true step lies: decided at its commit (span holding it), and whether the model
    /// had a link across it.
    pub decided: bool,
    pub linked: bool,
    /// The bound: a test told the step's commit decides it ([`History::oracle`]).
    pub oracle: bool,
    /// Commits before and after the step were measured (a step outside every measured commit
    /// is nobody's to see).
    pub bracketed: bool,
    /// Undecided with a span holding it, or decided.
    pub seen: bool,
    /// With no link: the runs across the step show it ([`History::apart_shown`]); else the
    /// machine states or the noise hid it.
    pub shown: bool,
    pub note: String,
}

/// The views of `h`: `detect` over the whole history and `detect RANGE` over a random range
/// holding the step (if any); certain steps away from the truth counted, the step's own
/// looked up.
pub fn judge(h: &History, rng: &mut Rng) -> Verdict {
    let n = h.len();
    let mut v = Verdict::default();
    let step = h.steps.first().map(|s| s.0);
    let lo = rng.range(0, n / 4);
    let hi = rng.range(3 * n / 4, n - 1);
    let holds = |span: (usize, usize), at: usize| span.0 < at && at <= span.1;
    for (a, b) in [(0, n - 1), (lo, hi)] {
        let d = h.detect(a, b);
        for c in &d.points {
            let right = h.steps.iter().any(|s| holds((c.last_before, c.index), s.0));
            if !right {
                v.false_certain += 1;
                v.note += &format!(
                    "[{a}..{b}] certain {:+.2}% at {} (after {}) p={:.1e}; ",
                    100.0 * c.rel_change,
                    c.index,
                    c.last_before,
                    c.p_value
                );
            }
        }
        if (a, b) == (0, n - 1) {
            v.false_undecided = d
                .undecided
                .iter()
                .filter(|u| !h.steps.iter().any(|s| holds((u.last_before, u.index), s.0)))
                .count();
        }
        if let Some(s) = step {
            if (a, b) == (0, n - 1) {
                v.decided = d.points.iter().any(|c| holds((c.last_before, c.index), s));
                v.seen = v.decided
                    || d.undecided
                        .iter()
                        .any(|u| holds((u.last_before, u.index), s));
                v.linked = h.linked(s);
                v.oracle = h.oracle(s, changepoint::Options::default().alpha);
                v.bracketed = h.bracketed(s);
                v.shown = h.apart_shown(s);
                if !v.decided {
                    v.note += &format!(
                        "step at {s} (bound p={:.1e}): ",
                        h.oracle_p(s).unwrap_or(1.0)
                    );
                    for c in &d.points {
                        v.note += &format!(
                            "certain {:+.1}% ({}, {}] p={:.1e}; ",
                            100.0 * c.rel_change,
                            c.last_before,
                            c.index,
                            c.p_value
                        );
                    }
                    for u in &d.undecided {
                        v.note += &format!(
                            "undecided {:?} {:+.1}% ({}, {}] p={:.1e}; ",
                            u.why,
                            100.0 * u.rel_change,
                            u.last_before,
                            u.index,
                            u.p_value
                        );
                    }
                }
            }
        }
    }
    v
}

/// One family's tally.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub histories: usize,
    pub false_certain: usize,
    pub false_undecided: usize,
    pub with_false: usize,
    pub linked: usize,
    pub linked_decided: usize,
    /// Of `linked`, those the bound decides ([`History::oracle`]), and those decided of them.
    pub oracle_decided: usize,
    pub both_decided: usize,
    pub unlinked: usize,
    pub unlinked_seen: usize,
    /// Of `unlinked`, those whose runs show the move ([`Verdict::shown`]), and those seen.
    pub unlinked_shown: usize,
    pub shown_seen: usize,
    pub examples: Vec<String>,
    /// Histories whose linked step was not decided at its commit.
    pub misses: Vec<String>,
    /// Histories whose step with no link was not seen, where the runs show it.
    pub unseen: Vec<String>,
}

impl Tally {
    pub fn add(&mut self, v: &Verdict, has_step: bool, log: &[String]) {
        self.histories += 1;
        self.false_certain += v.false_certain;
        self.false_undecided += v.false_undecided;
        if v.false_certain > 0 {
            self.with_false += 1;
            if self.examples.len() < 3 {
                self.examples
                    .push(format!("{} || {}", log.join("; "), v.note));
            }
        }
        if has_step {
            if v.linked {
                self.linked += 1;
                self.linked_decided += usize::from(v.decided);
                self.oracle_decided += usize::from(v.oracle);
                self.both_decided += usize::from(v.oracle && v.decided);
                if !v.decided && self.misses.len() < 8 {
                    self.misses
                        .push(format!("{} || {}", log.join("; "), v.note));
                }
            } else if v.bracketed {
                self.unlinked += 1;
                self.unlinked_seen += usize::from(v.seen);
                self.unlinked_shown += usize::from(v.shown);
                self.shown_seen += usize::from(v.shown && v.seen);
                if !v.seen && v.shown && self.unseen.len() < 8 {
                    self.unseen
                        .push(format!("{} || {}", log.join("; "), v.note));
                }
            }
        }
    }
}

/// History `k` of a family (see [`family`]), measured, with its generator's state after.
pub fn history(kind: Kind, step: Option<f64>, seed0: u64, k: u64, setup: Setup) -> (History, Rng) {
    let seed = seed0.wrapping_add(k).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5eed;
    let mut rng = Rng(seed);
    let n = 40;
    let steps: Vec<(usize, f64)> = step
        .map(|s| vec![(rng.range(n / 4, 3 * n / 4), s)])
        .unwrap_or_default();
    let mut h = History::new(n, &steps, setup, seed);
    random_nights(&mut h, kind, &mut rng);
    (h, rng)
}

/// Each commit's runs, window by window, for a person to read.
pub fn dump(h: &History) -> String {
    let mut out = String::new();
    for (j, runs) in h.runs.iter().enumerate() {
        let mut by: Vec<(String, Vec<f64>)> = Vec::new();
        for r in runs {
            let k = if r.imported {
                format!("m{}r{:x}", r.machine, r.round % 4096)
            } else {
                format!("w{}", r.window)
            };
            match by.iter_mut().find(|e| e.0 == k) {
                Some(e) => e.1.push(r.value),
                None => by.push((k, vec![r.value])),
            }
        }
        let parts: Vec<String> = by
            .iter()
            .map(|(k, v)| {
                let mean = v.iter().sum::<f64>() / v.len() as f64;
                format!("{k}:{mean:.0}x{}", v.len())
            })
            .collect();
        out += &format!("{j:3} true {:7.1}  {}\n", h.level[j], parts.join(" "));
    }
    out
}

/// A family: `count` histories of `n` commits, each with a step of `step` at a random commit
/// in the middle half (or none), measured by a random schedule of `kind`.
pub fn family(kind: Kind, step: Option<f64>, count: usize, seed0: u64, setup: Setup) -> Tally {
    let mut t = Tally::default();
    for k in 0..count as u64 {
        let (h, mut rng) = history(kind, step, seed0, k, setup);
        let v = judge(&h, &mut rng);
        let mut log = h.log.clone();
        log.insert(0, format!("#{k}"));
        t.add(&v, step.is_some(), &log);
    }
    t
}
