//! The layout of a plot: the title, the main panel (band, medians, stake, markers and their
//! labels, axes), the legend, and the box-plot panel on the same y scale.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::model::*;
use super::primitives::*;
use super::primitives::{Area, DrawResult, Rect};
use crate::report::units::{nice_ticks, quantity, quantity_short, strip_word_unit, tick_labels};
use crate::stats;

mod markers;

pub(super) fn draw<DB: DrawingBackend>(root: &Area<DB>, c: &Chart) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (w, h) = (c.width as i32, c.height as i32);
    let narrow = w < 600;
    let pad = if narrow { 8 } else { 16 };
    let small = if narrow { 10.0 } else { 11.0 };
    let mut y = title(root, c, pad, small)?;

    // What is drawn, for the legend and the y range.
    let plot_w_guess = (w - 2 * pad - 60) as f64 * if c.boxes.is_empty() { 1.0 } else { 0.74 };
    let capacity = match c.style {
        Style::Band => (plot_w_guess / 3.0).max(3.0) as usize,
        Style::Line { points } => points.max(3),
    };
    let (points, downsampled) = drawn_points(&c.commits, capacity);
    let any_failed = c.commits.iter().any(|p| p.failed);

    let YRange {
        lo,
        hi,
        pool,
        stake,
    } = y_range(c, &points);
    if !lo.is_finite() || !hi.is_finite() {
        // Nothing measured: say so in the middle of the picture.
        label(
            root,
            "no measurements in this range",
            (w / 2, (y + h) / 2),
            14.0,
            &colour::MUTED,
            HPos::Center,
            VPos::Center,
        )?;
        return Ok(());
    }
    let (lo, hi) = padded(lo, hi);
    let seen = Seen {
        failed: any_failed,
        downsampled,
        off_scale: pool.iter().any(|&v| v < lo || v > hi),
        gaps: !downsampled && points.windows(2).any(|p| p[1].0 > p[0].0 + 1),
    };

    // Legend, wrapped to the width.
    y = legend(root, c, (pad, y + 2), w - pad, small, seen)? + 8;

    let bottom_area = if c.commits.is_empty() { 52 } else { 44 };
    // A picture of boxes alone has its heading in a row of its own above them; beside a
    // commit chart the labels under the boxes say what they are.
    let boxes_heading = c.commits.is_empty() && !c.boxes_title.is_empty();
    if boxes_heading {
        label(
            root,
            &fit(root, &c.boxes_title, small, w - 2 * pad),
            (w / 2, y),
            small,
            &colour::MUTED,
            HPos::Center,
            VPos::Top,
        )?;
        y += small as i32 + 6;
    }
    let plot_top = y + 4;
    let plot_bottom = h - bottom_area;
    if plot_bottom - plot_top < 20 || w - 2 * pad < 60 {
        // No room for a plot (a picture a few pixels tall): the title is all it can hold.
        return Ok(());
    }
    let n_ticks = ((plot_bottom - plot_top) / 36).clamp(4, 10) as usize;
    let ticks = nice_ticks(lo, hi, n_ticks);
    let mut tick_text = tick_labels(&ticks, &c.unit);
    // A word unit on every tick ("88.5 M instructions") takes the room of the plot on a
    // narrow picture: there the ticks are numbers and the subtitle names the unit.
    let widest = |t: &[String]| t.iter().map(|t| text_width(root, t, small)).max();
    if widest(&tick_text).unwrap_or(0) > w / 6 && !c.unit.is_empty() {
        tick_text = tick_text
            .into_iter()
            .map(|t| strip_word_unit(t, &c.unit))
            .collect();
    }
    let label_w = tick_text
        .iter()
        .map(|t| text_width(root, t, small))
        .max()
        .unwrap_or(0);
    let left = pad + label_w + 8;
    let right = w - pad;
    // The boxes' panel holds at least each box's shortest labels (a short hash and "..", the
    // median without its unit word), never cut.
    let box_need = c
        .boxes
        .iter()
        .map(|b| {
            let span = b
                .sub
                .split_once("..")
                .map_or(b.sub.clone(), |(a, _)| format!("{a}.."));
            let median = stats::median(&b.values)
                .map(|m| quantity_short(m, &c.unit))
                .unwrap_or_default();
            text_width(root, &span, small - 1.0).max(text_width(root, &median, small - 1.0)) + 8
        })
        .max()
        .unwrap_or(0)
        * c.boxes.len() as i32;
    let (main, side) = panel_rects(
        c,
        box_need,
        Rect {
            left,
            top: plot_top,
            right,
            bottom: plot_bottom,
        },
    );
    let ymap = YMap {
        lo,
        hi,
        top: plot_top,
        bottom: plot_bottom,
    };

    // Grid and y labels, across both panels.
    let grid_right = side.map_or(right, |s| s.right);
    grid(root, &ticks, &tick_text, (left, grid_right), &ymap, small)?;

    if let Some(m) = main {
        main_panel(root, c, m, &ymap, &points, stake, small)?;
    }
    if let Some(s) = side {
        box_panel(root, c, s, &ymap, stake.filter(|_| main.is_none()), small)?;
        if main.is_some() {
            if let Some(k) = stake.filter(|k| k.in_view) {
                let py = ymap.px(k.value);
                dashed(
                    root,
                    (s.left, py),
                    (s.right, py),
                    colour::STAKE.stroke_width(2),
                    6,
                )?;
            }
        }
    }
    Ok(())
}

/// The title and subtitle at the top; returns the y below them.
fn title<DB: DrawingBackend>(
    root: &Area<DB>,
    c: &Chart,
    pad: i32,
    small: f64,
) -> Result<i32, DrawingAreaErrorKind<DB::ErrorType>> {
    let w = c.width as i32;
    let title_size = if w < 600 { 15.0 } else { 18.0 };
    let mut y = pad - 4;
    label(
        root,
        &fit(root, &c.title, title_size, w - 2 * pad),
        (pad, y),
        title_size,
        &colour::TEXT,
        HPos::Left,
        VPos::Top,
    )?;
    y += title_size as i32 + 6;
    if !c.subtitle.is_empty() {
        label(
            root,
            &fit(root, &c.subtitle, small + 1.0, w - 2 * pad),
            (pad, y),
            small + 1.0,
            &colour::MUTED,
            HPos::Left,
            VPos::Top,
        )?;
        y += small as i32 + 8;
    }
    Ok(y)
}

/// The values the y axis must show, before its padding.
struct YRange {
    lo: f64,
    hi: f64,
    /// Every run drawn (of the band and of the boxes), to tell whether some lie off the scale.
    pool: Vec<f64>,
    stake: Option<Stake>,
}

/// The y range of `points`, the runs and the boxes, and the stake when it is near them;
/// `lo` and `hi` are not finite when nothing was measured.
///
/// The y range covers the medians and the runs, except far outliers: a run 30 % off in a
/// 1 % noise series would squash a 3 % step into a few pixels. Runs beyond 1.5 IQR of all
/// runs (and beyond every median) are drawn at the edge, marked with a triangle.
fn y_range(c: &Chart, points: &[(usize, f64, f64, f64)]) -> YRange {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for &(_, _, m, _) in points {
        if m.is_finite() {
            lo = lo.min(m);
            hi = hi.max(m);
        }
    }
    let mut pool: Vec<f64> = Vec::new();
    if c.style == Style::Band {
        pool.extend(
            c.commits
                .iter()
                .flat_map(|p| p.values.iter().copied())
                .filter(|v| v.is_finite()),
        );
    }
    if let Some(s) = stats::summarize(&pool) {
        let iqr = s.p75 - s.p25;
        lo = lo.min(s.min.max(s.p25 - 1.5 * iqr));
        hi = hi.max(s.max.min(s.p75 + 1.5 * iqr));
    }
    // Each box's whiskers on its own: over the runs of all levels pooled, one level of exact
    // counts holding most runs would fence every other level off the chart.
    for b in &c.boxes {
        let v: Vec<f64> = b.values.iter().copied().filter(|v| v.is_finite()).collect();
        if let Some(s) = stats::summarize(&v) {
            let iqr = s.p75 - s.p25;
            lo = lo.min(s.min.max(s.p25 - 1.5 * iqr));
            hi = hi.max(s.max.min(s.p75 + 1.5 * iqr));
        }
        pool.extend(v);
    }
    // The stake joins the y range when it is near the data; a stake far away would squash
    // the data into a line, so it is then only named at the edge it lies beyond.
    let stake = c.stake.filter(|s| s.is_finite()).map(|s| {
        let reach = (hi - lo).max(0.1 * ((lo + hi) / 2.0).abs());
        let near = !lo.is_finite() || (s >= lo - reach && s <= hi + reach);
        if near {
            lo = lo.min(s);
            hi = hi.max(s);
        }
        Stake {
            value: s,
            in_view: near,
            above: s > hi,
        }
    });
    YRange {
        lo,
        hi,
        pool,
        stake,
    }
}

/// `lo..hi` widened so that nothing drawn touches the plot's edges.
fn padded(lo: f64, hi: f64) -> (f64, f64) {
    let span = hi - lo;
    let padding = if span > 0.0 {
        span * 0.08
    } else if lo.fract() == 0.0 {
        // A flat count or size: whole units around it, not ticks at 2.01 bytes.
        (lo.abs() * 0.01).max(2.0)
    } else if lo != 0.0 {
        lo.abs() * 0.01
    } else {
        1.0
    };
    (lo - padding, hi + padding)
}

/// The main panel and the box panel in the plot's rectangle `plot`: one of them alone fills
/// it, both share it (the commits the wider part).
fn panel_rects(c: &Chart, box_need: i32, plot: Rect) -> (Option<Rect>, Option<Rect>) {
    if c.commits.is_empty() {
        (None, Some(plot))
    } else if c.boxes.is_empty() {
        (Some(plot), None)
    } else {
        // 28 % of the width for the boxes, more when their labels need it (a narrow
        // picture), up to half.
        let width = plot.right - plot.left;
        let split = (plot.left + (width as f64 * 0.72) as i32)
            .min(plot.right - 20 - box_need)
            .max(plot.left + width / 2);
        (
            Some(Rect {
                right: split,
                ..plot
            }),
            Some(Rect {
                left: split + 20,
                ..plot
            }),
        )
    }
}

/// A grid line and a label at each tick, from `x.0` to `x.1`.
fn grid<DB: DrawingBackend>(
    root: &Area<DB>,
    ticks: &[f64],
    tick_text: &[String],
    x: (i32, i32),
    ymap: &YMap,
    small: f64,
) -> DrawResult<DB> {
    let (left, right) = x;
    for (t, s) in ticks.iter().zip(tick_text) {
        let py = ymap.px(*t);
        root.draw(&PathElement::new(
            vec![(left, py), (right, py)],
            colour::GRID.stroke_width(1),
        ))?;
        label(
            root,
            s,
            (left - 6, py),
            small,
            &colour::MUTED,
            HPos::Right,
            VPos::Center,
        )?;
    }
    Ok(())
}
/// Draw the legend from `at`, wrapping before `right`; returns the y below it.
/// What the legend needs to explain besides the chart's own parts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seen {
    /// Some commit has no result (crosses).
    pub(super) failed: bool,
    /// The commits were down-sampled.
    pub(super) downsampled: bool,
    /// Some runs lie beyond the y range (triangles at the edge).
    pub(super) off_scale: bool,
    /// The median line crosses commits without values (dotted there).
    pub(super) gaps: bool,
}

pub(super) fn legend<DB: DrawingBackend>(
    root: &Area<DB>,
    c: &Chart,
    at: (i32, i32),
    right: i32,
    size: f64,
    seen: Seen,
) -> Result<i32, DrawingAreaErrorKind<DB::ErrorType>> {
    #[derive(Clone, Copy)]
    enum Swatch {
        Band,
        Median,
        Stake,
        Culprit,
        Guess,
        Change,
        Failed,
        Box,
        OffScale,
    }
    let mut items: Vec<(Swatch, String)> = Vec::new();
    if !c.commits.is_empty() {
        match c.style {
            Style::Band => {
                items.push((
                    Swatch::Band,
                    if seen.downsampled {
                        "min–max (down-sampled)".into()
                    } else {
                        "min–max per commit".into()
                    },
                ));
                items.push((
                    Swatch::Median,
                    if seen.gaps {
                        "median (dotted across unmeasured commits)".into()
                    } else {
                        "median".into()
                    },
                ));
            }
            Style::Line { .. } => items.push((
                Swatch::Median,
                if seen.downsampled {
                    "median, down-sampled (LTTB)".into()
                } else {
                    "median per commit".into()
                },
            )),
        }
    }
    if c.stake.is_some() {
        items.push((Swatch::Stake, "stake".into()));
    }
    if c.markers.iter().any(|m| m.kind == MarkerKind::Culprit) {
        items.push((Swatch::Culprit, "culprit".into()));
    }
    if c.markers.iter().any(|m| m.kind == MarkerKind::Guess) {
        items.push((Swatch::Guess, "not confirmed (a best guess)".into()));
    }
    if c.markers.iter().any(|m| m.kind == MarkerKind::ChangePoint) {
        items.push((Swatch::Change, "change point".into()));
    }
    if seen.failed {
        items.push((Swatch::Failed, "no result (build or runs failed)".into()));
    }
    if seen.off_scale {
        items.push((Swatch::OffScale, "runs off this scale (outliers)".into()));
    }
    if c.commits.is_empty() && !c.boxes.is_empty() {
        items.push((Swatch::Box, "P25–P75, median, whiskers 1.5 IQR".into()));
    }
    let line_h = size as i32 + 6;
    let (mut x, mut y) = at;
    for (sw, text) in items {
        let wtext = text_width(root, &text, size);
        let item_w = 22 + wtext + 16;
        if x + item_w > right && x > at.0 {
            x = at.0;
            y += line_h;
        }
        let cy = y + line_h / 2 - 2;
        match sw {
            Swatch::Band => {
                root.draw(&Rectangle::new(
                    [(x, cy - 5), (x + 16, cy + 5)],
                    colour::BAND.mix(0.2).filled(),
                ))?;
            }
            Swatch::Median => {
                root.draw(&PathElement::new(
                    vec![(x, cy), (x + 16, cy)],
                    colour::MEDIAN.stroke_width(2),
                ))?;
            }
            Swatch::Stake => dashed(
                root,
                (x, cy),
                (x + 16, cy),
                colour::STAKE.stroke_width(2),
                4,
            )?,
            Swatch::Culprit => {
                root.draw(&PathElement::new(
                    vec![(x + 8, cy - 6), (x + 8, cy + 6)],
                    colour::CULPRIT.stroke_width(2),
                ))?;
            }
            Swatch::Change => dashed(
                root,
                (x + 8, cy - 6),
                (x + 8, cy + 6),
                colour::CHANGE.stroke_width(2),
                3,
            )?,
            Swatch::Guess => dashed(
                root,
                (x + 8, cy - 6),
                (x + 8, cy + 6),
                colour::CULPRIT.stroke_width(2),
                3,
            )?,
            Swatch::Failed => {
                root.draw(&Cross::new((x + 8, cy), 4, colour::CULPRIT.stroke_width(2)))?;
            }
            Swatch::Box => {
                root.draw(&Rectangle::new(
                    [(x + 2, cy - 5), (x + 14, cy + 5)],
                    colour::BOX.mix(0.3).filled(),
                ))?;
            }
            Swatch::OffScale => triangle(root, (x + 8, cy - 4), true, colour::MUTED)?,
        }
        label(
            root,
            &text,
            (x + 22, cy),
            size,
            &colour::MUTED,
            HPos::Left,
            VPos::Center,
        )?;
        x += item_w;
    }
    Ok(y + line_h)
}

/// Where a commit sits across the main panel: one column per commit, oldest at the left.
#[derive(Debug, Clone, Copy)]
struct Columns {
    left: i32,
    /// The width of one commit's column, in pixels.
    per: f64,
}

impl Columns {
    /// The centre of commit `i`'s column: its tick, band, median and cross.
    fn x(&self, i: usize) -> i32 {
        self.left + ((i as f64 + 0.5) * self.per).round() as i32
    }

    /// The left edge of commit `i`'s column: a marker before commit `i` stands there.
    fn boundary(&self, i: usize) -> i32 {
        self.left + (i as f64 * self.per).round() as i32
    }
}

pub(super) fn main_panel<DB: DrawingBackend>(
    root: &Area<DB>,
    c: &Chart,
    r: Rect,
    ymap: &YMap,
    points: &[(usize, f64, f64, f64)],
    stake: Option<Stake>,
    small: f64,
) -> DrawResult<DB> {
    let n = c.commits.len().max(1);
    let cols = Columns {
        left: r.left,
        per: r.width() as f64 / n as f64,
    };
    x_axis(root, c, r, cols, small)?;
    if c.style == Style::Band {
        band(root, c, r, ymap, points, cols)?;
    }

    if let Some(k) = stake {
        draw_stake(root, c, r, ymap, k, small)?;
    }

    medians(root, c, ymap, points, cols)?;

    // Commits without a result.
    for (i, p) in c.commits.iter().enumerate() {
        if p.failed {
            root.draw(&Cross::new(
                (cols.x(i), r.bottom - 8),
                4,
                colour::CULPRIT.stroke_width(2),
            ))?;
        }
    }

    let off_top = c.style == Style::Band && points.iter().any(|p| p.3 > ymap.hi);
    markers::draw_markers(root, c, r, |i| cols.boundary(i), off_top, small)
}

/// The axes of the main panel and its x labels: short hashes at a round step that leaves
/// room between them, and a title saying how many commits there are.
fn x_axis<DB: DrawingBackend>(
    root: &Area<DB>,
    c: &Chart,
    r: Rect,
    cols: Columns,
    small: f64,
) -> DrawResult<DB> {
    let n = c.commits.len().max(1);
    root.draw(&PathElement::new(
        vec![(r.left, r.top), (r.left, r.bottom), (r.right, r.bottom)],
        colour::AXIS.stroke_width(1),
    ))?;

    let hash_w = c
        .commits
        .iter()
        .map(|p| text_width(root, &p.label, small))
        .max()
        .unwrap_or(40)
        + 12;
    let fits = (r.width() / hash_w.max(1)).max(1) as usize;
    let mut step = 1usize;
    for s in [
        1usize, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000,
    ] {
        step = s;
        if n.div_ceil(s) <= fits {
            break;
        }
    }
    while n.div_ceil(step) > fits {
        step *= 2;
    }
    for i in (0..n).step_by(step) {
        let x = cols.x(i);
        root.draw(&PathElement::new(
            vec![(x, r.bottom), (x, r.bottom + 4)],
            colour::AXIS.stroke_width(1),
        ))?;
        label(
            root,
            &c.commits[i].label,
            (x, r.bottom + 6),
            small,
            &colour::MUTED,
            HPos::Center,
            VPos::Top,
        )?;
    }
    let axis_title = format!(
        "{} commit{}, oldest first{}",
        n,
        if n == 1 { "" } else { "s" },
        if step > 1 {
            format!("; one label per {step}")
        } else {
            String::new()
        }
    );
    label(
        root,
        &axis_title,
        ((r.left + r.right) / 2, r.bottom + 24),
        small,
        &colour::MUTED,
        HPos::Center,
        VPos::Top,
    )
}

/// The min–max band: runs of neighbouring points as a filled polygon, lone points as a bar,
/// and a triangle at the edge for runs beyond the scale.
fn band<DB: DrawingBackend>(
    root: &Area<DB>,
    c: &Chart,
    r: Rect,
    ymap: &YMap,
    points: &[(usize, f64, f64, f64)],
    cols: Columns,
) -> DrawResult<DB> {
    let mut runs: Vec<Vec<(usize, f64, f64, f64)>> = Vec::new();
    let downsampled = points.len() < c.commits.iter().filter(|p| !p.values.is_empty()).count();
    for &p in points {
        // Neighbouring commits share a band; a commit without values between two breaks
        // it (unless down-sampled, where a gap is narrower than a pixel).
        let joined = runs
            .last()
            .and_then(|run| run.last())
            .is_some_and(|last| downsampled || p.0 == last.0 + 1);
        if joined {
            runs.last_mut().expect("a run").push(p);
        } else {
            runs.push(vec![p]);
        }
    }
    let band = colour::BAND.mix(0.2).filled();
    for run in &runs {
        if run.len() == 1 {
            let (i, a, _, b) = run[0];
            let half = ((cols.per * 0.3).round() as i32).clamp(1, 6);
            let x = cols.x(i);
            // A lone bar is narrow: a stronger tint keeps it visible.
            root.draw(&Rectangle::new(
                [
                    (x - half, ymap.px_in(b)),
                    (x + half, ymap.px_in(a).max(ymap.px_in(b) + 1)),
                ],
                colour::BAND.mix(0.35).filled(),
            ))?;
        } else {
            let mut poly: Vec<(i32, i32)> = run
                .iter()
                .map(|&(i, _, _, b)| (cols.x(i), ymap.px_in(b)))
                .collect();
            poly.extend(
                run.iter()
                    .rev()
                    .map(|&(i, a, _, _)| (cols.x(i), ymap.px_in(a))),
            );
            root.draw(&Polygon::new(poly, band))?;
        }
    }
    for &(i, a, _, b) in points {
        if b > ymap.hi {
            triangle(root, (cols.x(i), r.top + 1), true, colour::MUTED)?;
        }
        if a < ymap.lo {
            triangle(root, (cols.x(i), r.bottom - 1), false, colour::MUTED)?;
        }
    }
    Ok(())
}

/// The median line and its dots.
fn medians<DB: DrawingBackend>(
    root: &Area<DB>,
    c: &Chart,
    ymap: &YMap,
    points: &[(usize, f64, f64, f64)],
    cols: Columns,
) -> DrawResult<DB> {
    // Solid between neighbouring commits, dotted across commits without values (a line there
    // would claim measurements that were never made).
    let meds: Vec<(usize, (i32, i32))> = points
        .iter()
        .filter(|p| p.2.is_finite())
        .map(|&(i, _, m, _)| (i, (cols.x(i), ymap.px(m))))
        .collect();
    let downsampled = points.len() < c.commits.iter().filter(|p| !p.values.is_empty()).count();
    let mut solid: Vec<(i32, i32)> = Vec::new();
    for (k, &(i, p)) in meds.iter().enumerate() {
        solid.push(p);
        let next = meds.get(k + 1);
        let gap = next.is_some_and(|&(j, _)| !downsampled && j > i + 1);
        if gap || next.is_none() {
            if solid.len() > 1 {
                root.draw(&PathElement::new(
                    std::mem::take(&mut solid),
                    colour::MEDIAN.stroke_width(2),
                ))?;
            }
            solid.clear();
            if let Some(&(_, q)) = next.filter(|_| gap) {
                dashed(root, p, q, colour::MEDIAN.mix(0.7).stroke_width(1), 3)?;
            }
        }
    }
    let line: Vec<(i32, i32)> = meds.iter().map(|&(_, p)| p).collect();
    if line.len() <= 120 {
        for p in &line {
            root.draw(&Circle::new(*p, 3, colour::MEDIAN.filled()))?;
        }
    }
    Ok(())
}

/// Where the stake goes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stake {
    pub(super) value: f64,
    /// Inside the y range: a dashed line; otherwise a label at the edge it lies beyond.
    pub(super) in_view: bool,
    pub(super) above: bool,
}

/// The stake as a dashed line with its value, or, when far from the data, its value with an
/// arrow at the top or bottom edge.
pub(super) fn draw_stake<DB: DrawingBackend>(
    root: &Area<DB>,
    c: &Chart,
    r: Rect,
    ymap: &YMap,
    k: Stake,
    small: f64,
) -> DrawResult<DB> {
    let text = format!("stake {}", quantity(k.value, &c.unit));
    if !k.in_view {
        let (y, arrow, v) = if k.above {
            (r.top + 2, "↑", VPos::Top)
        } else {
            (r.bottom - 4, "↓", VPos::Bottom)
        };
        return label(
            root,
            &format!("{text} {arrow} (off this scale)"),
            (r.right - 4, y),
            small,
            &colour::STAKE,
            HPos::Right,
            v,
        );
    }
    let py = ymap.px(k.value);
    dashed(
        root,
        (r.left, py),
        (r.right, py),
        colour::STAKE.stroke_width(2),
        6,
    )?;
    label(
        root,
        &text,
        (r.right - 4, py - 3),
        small,
        &colour::STAKE,
        HPos::Right,
        VPos::Bottom,
    )
}

pub(super) fn box_panel<DB: DrawingBackend>(
    root: &Area<DB>,
    c: &Chart,
    r: Rect,
    ymap: &YMap,
    stake: Option<Stake>,
    small: f64,
) -> DrawResult<DB> {
    let k = c.boxes.len().max(1) as i32;
    let slot = r.width() / k;
    root.draw(&PathElement::new(
        vec![(r.left, r.bottom), (r.right, r.bottom)],
        colour::AXIS.stroke_width(1),
    ))?;
    if c.commits.is_empty() {
        root.draw(&PathElement::new(
            vec![(r.left, r.top), (r.left, r.bottom)],
            colour::AXIS.stroke_width(1),
        ))?;
    }
    if let Some(k) = stake {
        draw_stake(root, c, r, ymap, k, small)?;
    }
    for (j, b) in c.boxes.iter().enumerate() {
        let cx = r.left + slot * j as i32 + slot / 2;
        let half = ((slot as f64 * 0.28) as i32).clamp(4, 36);
        let col = if b.highlight {
            colour::BOX_AFTER
        } else {
            colour::BOX
        };
        if let Some((wl, q1, med, q3, wh, outliers)) = tukey(&b.values) {
            let stroke = col.stroke_width(2);
            root.draw(&PathElement::new(
                vec![(cx, ymap.px_in(wl)), (cx, ymap.px_in(q1))],
                stroke,
            ))?;
            root.draw(&PathElement::new(
                vec![(cx, ymap.px_in(q3)), (cx, ymap.px_in(wh))],
                stroke,
            ))?;
            for v in [wl, wh] {
                root.draw(&PathElement::new(
                    vec![
                        (cx - half / 2, ymap.px_in(v)),
                        (cx + half / 2, ymap.px_in(v)),
                    ],
                    stroke,
                ))?;
            }
            let (top, bottom) = (ymap.px_in(q3), ymap.px_in(q1).max(ymap.px_in(q3) + 1));
            root.draw(&Rectangle::new(
                [(cx - half, top), (cx + half, bottom)],
                col.mix(0.25).filled(),
            ))?;
            root.draw(&Rectangle::new(
                [(cx - half, top), (cx + half, bottom)],
                stroke,
            ))?;
            root.draw(&PathElement::new(
                vec![(cx - half, ymap.px_in(med)), (cx + half, ymap.px_in(med))],
                colour::TEXT.stroke_width(2),
            ))?;
            for o in outliers.iter().take(200) {
                if *o > ymap.hi {
                    triangle(root, (cx, r.top + 1), true, colour::MUTED)?;
                } else if *o < ymap.lo {
                    triangle(root, (cx, r.bottom - 1), false, colour::MUTED)?;
                } else {
                    root.draw(&Circle::new((cx, ymap.px(*o)), 2, col.stroke_width(1)))?;
                }
            }
        }
        let text_max = slot - 4;
        let n = b.values.iter().filter(|v| v.is_finite()).count();
        let median = stats::median(&b.values);
        let lines = [
            b.label.clone(),
            b.sub.clone(),
            median
                .map(|m| format!("{} (n {n})", quantity(m, &c.unit)))
                .unwrap_or_else(|| "no values".into()),
        ];
        let mut ly = r.bottom + 5;
        for (li, t) in lines.iter().enumerate() {
            if t.is_empty() {
                continue;
            }
            let size = if li == 0 { small } else { small - 1.0 };
            // What does not fit is said shorter, not cut: the name without its commit (the
            // line below starts with it: "after"), the span by its first commit ("6df1c9d.."),
            // the median without its count, then without its unit's word (the axis and the
            // subtitle name it: "88.36 M"). A hash is never cut: a span that does not fit
            // even so is left out.
            let shorter: Vec<String> = match li {
                0 => t
                    .split_whitespace()
                    .next()
                    .map(str::to_string)
                    .into_iter()
                    .collect(),
                1 => t
                    .split_once("..")
                    .map(|(a, _)| vec![format!("{a}.."), a.to_string()])
                    .unwrap_or_default(),
                _ => t
                    .split_once(" (n ")
                    .map(|(m, _)| m.to_string())
                    .into_iter()
                    .chain(median.map(|m| quantity_short(m, &c.unit)))
                    .collect(),
            };
            let Some(shown) = std::iter::once(t.clone())
                .chain(shorter)
                .find(|s| text_width(root, s, size) <= text_max)
                .or_else(|| (li != 1).then(|| fit(root, t, size, text_max)))
            else {
                ly += size as i32 + 3;
                continue;
            };
            label(
                root,
                &shown,
                (cx, ly),
                size,
                if li == 0 {
                    &colour::TEXT
                } else {
                    &colour::MUTED
                },
                HPos::Center,
                VPos::Top,
            )?;
            ly += size as i32 + 3;
        }
    }
    Ok(())
}
