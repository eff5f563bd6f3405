//! What a plot shows: the commits with their values, the markers (culprits, change points,
//! best guesses), the box groups and the size and style of the picture.

/// One commit on the x axis.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotCommit {
    /// Short hash.
    pub label: String,
    /// Metric values of its successful runs (none: not measured, or it failed).
    pub values: Vec<f64>,
    /// It does not build, or its runs all failed: marked with a cross.
    pub failed: bool,
}

/// What a vertical marker stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    /// A commit `find` named (solid red).
    Culprit,
    /// A change point `detect` found (dashed orange).
    ChangePoint,
    /// A commit `find` could not confirm: the best guess of an inconclusive search, or a
    /// culprit its interleaved re-runs did not confirm (dashed red, its label says so).
    Guess,
}

/// A vertical marker before the commit at `index` (the first commit of a new level).
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub index: usize,
    /// Short hash, written beside the marker.
    pub label: String,
    pub kind: MarkerKind,
}

/// One box of the box-plot panel.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxGroup {
    /// First line under the box ("before", "after").
    pub label: String,
    /// Second line (a short hash or a commit span).
    pub sub: String,
    pub values: Vec<f64>,
    /// Drawn in the culprit's colour (an "after" box).
    pub highlight: bool,
}

/// How the commits are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Min–max band and median line; long ranges down-sampled to what the width can show.
    Band,
    /// Only the medians, down-sampled with LTTB to this many points, as dots on a line
    /// (curl's "full range, 20 data points").
    Line { points: usize },
}

/// Everything one picture shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub subtitle: String,
    /// The test's unit (axis labels carry it, with SI prefixes).
    pub unit: String,
    pub commits: Vec<PlotCommit>,
    pub markers: Vec<Marker>,
    pub stake: Option<f64>,
    /// The second panel; empty for none. Without commits the boxes fill the picture.
    pub boxes: Vec<BoxGroup>,
    /// Heading of a picture of boxes alone (beside a commit chart the labels under the boxes
    /// say what they are).
    pub boxes_title: String,
    pub style: Style,
    pub width: u32,
    pub height: u32,
}
