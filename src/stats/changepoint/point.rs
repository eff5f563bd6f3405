//! What change-point detection reports: a confirmed shift of the level.
/// One detected shift of the level.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ChangePoint {
    /// Position in `series` of the first (measured) commit of the new level.
    pub index: usize,
    /// Position of the last measured commit of the old level: the step lies somewhere after
    /// it, up to `index`; the `index - last_before - 1` commits between were not measured.
    pub last_before: usize,
    /// Median level of the segment before (near the boundary, drift removed).
    pub before: f64,
    /// Median level of the segment after (near the boundary, drift removed).
    pub after: f64,
    /// Relative change of the levels, [`super::threshold::rel_change`]: `(after - before) / |before|`.
    pub rel_change: f64,
    /// The step's two-sided p-value, from the test `test` names (0 for an exact change).
    pub p_value: f64,
    /// The test behind `p_value`: the detector's t test of the neighbouring segments' levels,
    /// or, where the commit and its parent were measured side by side, the test `find`
    /// applies to a culprit and its parent.
    pub test: crate::stats::step::StepTest,
    /// The series has no noise (every commit's samples equal, values change rarely): the point
    /// is an exact change of value and `p_value` is no test's result.
    pub deterministic: bool,
    /// 95 % interval of `rel_change`, when runs taken side by side across the boundary gave
    /// the levels and the change (see [`crate::stats::step`]); for an exact change across
    /// commits not measured, the commit's own share ([`across_unmeasured`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<(f64, f64)>,
    /// Windows of time holding runs of both sides that gave `before`, `after` and
    /// `rel_change`, estimated as a culprit's are (0: the levels of the stored runs next to
    /// the boundary, as detected).
    pub windows: usize,
}

/// The interval of one commit's own share of an exact change measured across commits that
/// were not measured (`rel` the change between the measured neighbours): anything from none
/// of it (the unmeasured commits before made it all) to all of it. An exact count is exact
/// between two measured commits, never across an unmeasured one.
pub fn across_unmeasured(rel: f64) -> (f64, f64) {
    (rel.min(0.0), rel.max(0.0))
}

/// A step the runs show but are too few to decide at α: more runs of the builds on either
/// side settle it (`run` measures them; `detect` says which and how many).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Undecided {
    /// Position in the series of the first commit of the possible new level.
    pub index: usize,
    /// Position of the last measured commit of the old level (as a change point's).
    pub last_before: usize,
    /// What leaves it undecided, and so what decides it.
    pub why: Reason,
    /// Levels next to it (as a change point's), and their relative change.
    pub before: f64,
    pub after: f64,
    pub rel_change: f64,
    /// The test's p-value before any correction (1 for a step measured apart, which no
    /// p-value of these runs can decide, and for exact values).
    pub p_value: f64,
    /// Independent runs (one per moment) on each side that the test saw.
    pub runs: (usize, usize),
    /// Runs a side the test needs to decide at α (80 % power, if the step is as large as it
    /// looks).
    pub runs_needed: usize,
    /// The 95 % interval of `rel_change` from the runs taken side by side across it, where
    /// they gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<(f64, f64)>,
}

/// What leaves a step undecided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// The runs on a side are too few for the test to decide at α: more of them decide it.
    FewRuns,
    /// The two sides were measured only on different machine states (no window of time, nor
    /// chain of windows, holds both): the machine may explain the move. Runs of both sides
    /// taken side by side decide it.
    MeasuredApart,
    /// The two sides were measured on different named machines only (a handover): as far as
    /// the runs can tell, the move is the machines' difference. Runs of both sides on one
    /// machine decide whether a commit moved too.
    Machines,
    /// A side stands on commits measured once each (exact values on one run, or a lone level
    /// at an end), too few to tell a level from outlier runs: more runs of them decide.
    OneRun,
    /// The runs taken side by side across it do not tell the sides apart (their 95 % interval
    /// of the change holds none): more runs side by side decide it.
    SideBySide,
    /// The runs taken side by side across it show a step the machine's nights beside it (each
    /// commit's reading against that machine's other nights) contradict: an outlier run, or
    /// a session's state. More runs side by side, or nights, decide it.
    Nights,
}

/// What change-point detection found: the confirmed points, and the steps it could not yet
/// decide for want of runs.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Detection {
    pub points: Vec<ChangePoint>,
    pub undecided: Vec<Undecided>,
}

/// One independent measurement of a commit: its value, the window of time it was taken in
/// (0: none known; a moment of its own) and the machine that took it (0: this one, or none
/// named).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Obs {
    pub value: f64,
    pub window: u64,
    pub machine: u64,
}

/// What [`super::detect_runs`] reads: per commit (in commit order) its independent measurements, and
/// optionally each commit's share of them and whether its build is the previous commit's.
#[derive(Debug, Clone, Default)]
pub struct Runs {
    pub commits: Vec<Vec<Obs>>,
    /// 1 for a commit's own runs; 1/k where k commits show one build's runs (each run counted
    /// once over them). Empty: all 1.
    pub share: Vec<f64>,
    /// The commit's build is byte-identical to the previous commit's: no step between them.
    /// Empty: none.
    pub joined: Vec<bool>,
}

impl Runs {
    /// Each value a moment of its own, no windows (a CSV's rows).
    pub fn plain(series: &[Vec<f64>]) -> Runs {
        Runs {
            commits: series
                .iter()
                .map(|s| {
                    s.iter()
                        .map(|&value| Obs {
                            value,
                            window: 0,
                            machine: 0,
                        })
                        .collect()
                })
                .collect(),
            ..Runs::default()
        }
    }
}
