//! The pieces every panel is drawn with: the shipped font, the colours, a pixel rectangle and
//! y mapping, text that fits, labels, triangles, dashed lines, and the points a band keeps.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::model::PlotCommit;
use crate::stats;

/// A drawing area of any backend, and what drawing on it returns.
pub(super) type Area<DB> = DrawingArea<DB, Shift>;
pub(super) type DrawResult<DB> =
    Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// The font every plot's text is drawn with (DejaVu Sans 2.37, licence beside it).
pub(super) static FONT: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");

/// The family name the font is registered under; SVG text names it, so a browser uses its own
/// sans-serif font when it shows an SVG.
pub(super) const FAMILY: &str = "sans-serif";

/// Colours, chosen to stay apart for colour-blind readers (blue against orange and red).
pub(super) mod colour {
    use plotters::style::RGBColor;
    pub const TEXT: RGBColor = RGBColor(33, 37, 41);
    pub const MUTED: RGBColor = RGBColor(99, 106, 114);
    pub const GRID: RGBColor = RGBColor(228, 231, 235);
    pub const AXIS: RGBColor = RGBColor(150, 155, 160);
    pub const BAND: RGBColor = RGBColor(66, 133, 244);
    pub const MEDIAN: RGBColor = RGBColor(20, 70, 160);
    pub const STAKE: RGBColor = RGBColor(30, 130, 60);
    pub const CULPRIT: RGBColor = RGBColor(200, 30, 30);
    pub const CHANGE: RGBColor = RGBColor(215, 110, 0);
    pub const BOX: RGBColor = RGBColor(66, 133, 244);
    pub const BOX_AFTER: RGBColor = RGBColor(220, 80, 60);
}

/// Register the shipped font with plotters, once per process.
pub(super) fn register_font() -> anyhow::Result<()> {
    static ONCE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *ONCE
        .get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    if ok {
        Ok(())
    } else {
        anyhow::bail!("the font shipped with perfbisect cannot be read (a corrupt build?)")
    }
}

pub(super) fn font(size: f64) -> TextStyle<'static> {
    (FAMILY, size).into_font().color(&colour::TEXT)
}

/// A commit's min, median and max, when it has values.
pub(super) fn levels(values: &[f64]) -> Option<(f64, f64, f64)> {
    // An infinite value (a metric that overflowed) cannot be placed on an axis.
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    stats::summarize(&finite).map(|s| (s.min, s.median, s.max))
}

/// Pixel rectangle of a panel.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rect {
    pub(super) left: i32,
    pub(super) top: i32,
    pub(super) right: i32,
    pub(super) bottom: i32,
}

impl Rect {
    pub(super) fn width(&self) -> i32 {
        self.right - self.left
    }
}

/// Maps values to pixel rows.
#[derive(Debug, Clone, Copy)]
pub(super) struct YMap {
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) top: i32,
    pub(super) bottom: i32,
}

impl YMap {
    pub(super) fn px(&self, v: f64) -> i32 {
        let t = (v - self.lo) / (self.hi - self.lo);
        let y = self.bottom as f64 - t * (self.bottom - self.top) as f64;
        y.round().clamp(-10_000.0, 10_000.0) as i32
    }
}

impl YMap {
    /// [`YMap::px`] held inside the plot: values beyond the range sit on its edge.
    pub(super) fn px_in(&self, v: f64) -> i32 {
        self.px(v)
            .clamp(self.top.min(self.bottom), self.bottom.max(self.top))
    }
}

pub(super) fn text_width<DB: DrawingBackend>(area: &Area<DB>, s: &str, size: f64) -> i32 {
    area.estimate_text_size(s, &font(size))
        .map(|(w, _)| w as i32)
        .unwrap_or((s.chars().count() as f64 * size * 0.6) as i32)
}

/// `s` cut to fit `max` pixels, with an ellipsis when cut.
pub(super) fn fit<DB: DrawingBackend>(area: &Area<DB>, s: &str, size: f64, max: i32) -> String {
    if text_width(area, s, size) <= max {
        return s.to_string();
    }
    let mut chars: Vec<char> = s.chars().collect();
    while !chars.is_empty() {
        chars.pop();
        let t: String = chars.iter().collect::<String>() + "…";
        if text_width(area, &t, size) <= max {
            return t;
        }
    }
    String::new()
}

pub(super) fn label<DB: DrawingBackend>(
    area: &Area<DB>,
    s: &str,
    at: (i32, i32),
    size: f64,
    colour: &RGBColor,
    h: HPos,
    v: VPos,
) -> DrawResult<DB> {
    let style = font(size).color(colour).pos(Pos::new(h, v));
    area.draw(&Text::new(s.to_string(), at, style))
}

/// A small filled triangle pointing up (`up`) or down with its tip at `tip`: a run beyond
/// the edge of the scale.
pub(super) fn triangle<DB: DrawingBackend>(
    area: &Area<DB>,
    tip: (i32, i32),
    up: bool,
    colour: RGBColor,
) -> DrawResult<DB> {
    let d = if up { 7 } else { -7 };
    area.draw(&Polygon::new(
        vec![tip, (tip.0 - 4, tip.1 + d), (tip.0 + 4, tip.1 + d)],
        colour.filled(),
    ))
}

/// A dashed straight line.
pub(super) fn dashed<DB: DrawingBackend>(
    area: &Area<DB>,
    from: (i32, i32),
    to: (i32, i32),
    style: ShapeStyle,
    dash: i32,
) -> DrawResult<DB> {
    let (dx, dy) = ((to.0 - from.0) as f64, (to.1 - from.1) as f64);
    let len = (dx * dx + dy * dy).sqrt();
    if len < 1.0 {
        return Ok(());
    }
    let mut t = 0.0;
    while t < len {
        let e = (t + dash as f64).min(len);
        let p = |s: f64| {
            (
                from.0 + (dx * s / len).round() as i32,
                from.1 + (dy * s / len).round() as i32,
            )
        };
        area.draw(&PathElement::new(vec![p(t), p(e)], style))?;
        t += 2.0 * dash as f64;
    }
    Ok(())
}

/// The points to draw for the commits: every measured commit, or, when more than
/// `capacity`, the medians down-sampled with LTTB; each drawn point carries the min and max
/// of the commits it stands for, so no extreme is hidden by the down-sampling.
/// Returns (commit index, min, median, max, down-sampled).
pub(super) fn drawn_points(
    commits: &[PlotCommit],
    capacity: usize,
) -> (Vec<(usize, f64, f64, f64)>, bool) {
    let all: Vec<(usize, f64, f64, f64)> = commits
        .iter()
        .enumerate()
        .filter_map(|(i, c)| levels(&c.values).map(|(lo, m, hi)| (i, lo, m, hi)))
        .collect();
    if all.len() <= capacity.max(3) {
        return (all, false);
    }
    let pts: Vec<(f64, f64)> = all.iter().map(|p| (p.0 as f64, p.2)).collect();
    let kept = stats::lttb(&pts, capacity.max(3));
    let kept_idx: Vec<usize> = kept.iter().map(|p| p.0 as usize).collect();
    // Each kept point stands for the commits nearer to it than to its neighbours.
    let mut out = Vec::with_capacity(kept_idx.len());
    let mut j = 0;
    for (k, &i) in kept_idx.iter().enumerate() {
        let upto = match kept_idx.get(k + 1) {
            Some(&next) => (i + next) / 2,
            None => usize::MAX,
        };
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        let mut median = f64::NAN;
        while j < all.len() && all[j].0 <= upto {
            lo = lo.min(all[j].1);
            hi = hi.max(all[j].3);
            if all[j].0 == i {
                median = all[j].2;
            }
            j += 1;
        }
        out.push((i, lo, median, hi));
    }
    (out, true)
}

/// Tukey box: (whisker low, P25, median, P75, whisker high, outliers).
pub(super) fn tukey(values: &[f64]) -> Option<(f64, f64, f64, f64, f64, Vec<f64>)> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let s = stats::summarize(&finite)?;
    let iqr = s.p75 - s.p25;
    let (fence_lo, fence_hi) = (s.p25 - 1.5 * iqr, s.p75 + 1.5 * iqr);
    let inside = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v >= fence_lo && *v <= fence_hi);
    let lo = inside.clone().fold(f64::INFINITY, f64::min);
    let hi = inside.fold(f64::NEG_INFINITY, f64::max);
    let mut out: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && (*v < fence_lo || *v > fence_hi))
        .collect();
    out.sort_by(f64::total_cmp);
    out.dedup();
    Some((lo.min(s.p25), s.p25, s.median, s.p75, hi.max(s.p75), out))
}
