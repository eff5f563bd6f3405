//! The markers of the main panel: a vertical line before each commit `find` named or `detect`
//! found, and one label per line, placed so that none overlaps another.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::super::model::{Chart, Marker, MarkerKind};
use super::super::primitives::{colour, dashed, label, text_width, Area, DrawResult, Rect};

/// At most this many rows of labels; the markers beyond them are counted in one note.
const MAX_ROWS: usize = 3;

/// The markers at one x position: they share one line position and one label.
type Group<'a> = (i32, Vec<&'a Marker>);

/// Draw the markers of `c` in `r`, each at `boundary(index)`; `off_top`: the band has
/// off-scale triangles at the top edge, which the labels go below.
///
/// One label per line position (markers at the same commit share it), placed on the side of
/// its line where it crosses no other marker's line, stacked in rows so none overlaps another;
/// at most [`MAX_ROWS`] rows, the rest counted in one note.
pub(super) fn draw_markers<DB: DrawingBackend>(
    root: &Area<DB>,
    c: &Chart,
    r: Rect,
    boundary: impl Fn(usize) -> i32,
    off_top: bool,
    small: f64,
) -> DrawResult<DB> {
    let groups = groups(c, boundary);
    // Lines are drawn after the labels, so a label's backing never hides a line.
    labels(root, r, &groups, off_top, small)?;
    lines(root, r, &groups)
}

/// The markers of `c` inside the chart, grouped by the x position of their line, left to
/// right, a culprit first in its group.
fn groups(c: &Chart, boundary: impl Fn(usize) -> i32) -> Vec<Group<'_>> {
    let n = c.commits.len().max(1);
    let mut markers: Vec<&Marker> = c.markers.iter().filter(|m| m.index < n).collect();
    markers.sort_by_key(|m| (m.index, m.kind != MarkerKind::Culprit));
    let mut groups: Vec<Group<'_>> = Vec::new();
    for m in markers {
        let x = boundary(m.index);
        match groups.last_mut() {
            Some((gx, g)) if *gx == x => g.push(m),
            _ => groups.push((x, vec![m])),
        }
    }
    groups
}

/// A group's label and its colour.
fn group_label(g: &[&Marker]) -> (RGBColor, String) {
    // The strongest kind names the group's colour: a culprit, then a guess, then a
    // change point.
    let lead = g
        .iter()
        .copied()
        .min_by_key(|m| match m.kind {
            MarkerKind::Culprit => 0,
            MarkerKind::Guess => 1,
            MarkerKind::ChangePoint => 2,
        })
        .expect("a group has a marker");
    let col = match lead.kind {
        MarkerKind::Culprit | MarkerKind::Guess => colour::CULPRIT,
        MarkerKind::ChangePoint => colour::CHANGE,
    };
    // A change point and a culprit at one commit carry one hash: said once.
    let mut distinct: Vec<&str> = Vec::new();
    for m in g {
        if !distinct.contains(&m.label.as_str()) {
            distinct.push(&m.label);
        }
    }
    let text = if distinct.len() == 1 {
        lead.label.clone()
    } else {
        format!("{} +{} more", lead.label, distinct.len() - 1)
    };
    (col, text)
}

/// The groups' labels in rows at the top of `r`, and a note counting those left out.
fn labels<DB: DrawingBackend>(
    root: &Area<DB>,
    r: Rect,
    groups: &[Group<'_>],
    off_top: bool,
    small: f64,
) -> DrawResult<DB> {
    let lines: Vec<i32> = groups.iter().map(|(x, _)| *x).collect();
    let mut rows: Vec<i32> = Vec::new(); // right end of the last label in each row
    let mut left_out = 0usize;
    for (x, g) in groups {
        let x = *x;
        let (col, text) = group_label(g);
        let tw = text_width(root, &text, small);
        let right = (x + 2, x + 6 + tw);
        let left = (x - 6 - tw, x - 2);
        let crosses =
            |span: (i32, i32)| lines.iter().any(|&l| l != x && l >= span.0 && l <= span.1);
        let fits_right = right.1 <= r.right;
        let fits_left = left.0 >= r.left;
        let (lx, hpos, span) = match (fits_right && !crosses(right), fits_left && !crosses(left)) {
            (true, _) => (x + 4, HPos::Left, right),
            (false, true) => (x - 4, HPos::Right, left),
            _ if fits_right => (x + 4, HPos::Left, right),
            _ => (x - 4, HPos::Right, left),
        };
        let row = rows
            .iter()
            .position(|&end| end < span.0)
            .unwrap_or(rows.len());
        if row >= MAX_ROWS {
            left_out += g.len();
            continue;
        }
        if row == rows.len() {
            rows.push(span.1);
        } else {
            rows[row] = span.1;
        }
        // Below the off-scale triangles when there are any.
        let ly = r.top + if off_top { 11 } else { 3 } + row as i32 * (small as i32 + 5);
        // A white backing keeps the label readable over the band.
        root.draw(&Rectangle::new(
            [(span.0, ly - 1), (span.1, ly + small as i32 + 3)],
            WHITE.mix(0.85).filled(),
        ))?;
        label(root, &text, (lx, ly), small, &col, hpos, VPos::Top)?;
    }
    if left_out > 0 {
        left_out_note(root, r, left_out, off_top, small)?;
    }
    Ok(())
}

/// "3 more markers not labelled", below the last row of labels at the right.
fn left_out_note<DB: DrawingBackend>(
    root: &Area<DB>,
    r: Rect,
    left_out: usize,
    off_top: bool,
    small: f64,
) -> DrawResult<DB> {
    let note = format!(
        "{left_out} more marker{} not labelled (too close together)",
        if left_out == 1 { "" } else { "s" }
    );
    let ly = r.top + if off_top { 11 } else { 3 } + MAX_ROWS as i32 * (small as i32 + 5);
    let tw = text_width(root, &note, small - 1.0);
    root.draw(&Rectangle::new(
        [
            (r.right - tw - 6, ly - 1),
            (r.right - 2, ly + small as i32 + 2),
        ],
        WHITE.mix(0.85).filled(),
    ))?;
    label(
        root,
        &note,
        (r.right - 4, ly),
        small - 1.0,
        &colour::MUTED,
        HPos::Right,
        VPos::Top,
    )
}

/// The groups' lines across `r`, a culprit's over a guess's over a change point's.
fn lines<DB: DrawingBackend>(root: &Area<DB>, r: Rect, groups: &[Group<'_>]) -> DrawResult<DB> {
    for (x, g) in groups {
        let x = *x;
        for kind in [
            MarkerKind::ChangePoint,
            MarkerKind::Guess,
            MarkerKind::Culprit,
        ] {
            if !g.iter().any(|m| m.kind == kind) {
                continue;
            }
            match kind {
                MarkerKind::Culprit => root.draw(&PathElement::new(
                    vec![(x, r.top), (x, r.bottom)],
                    colour::CULPRIT.stroke_width(2),
                ))?,
                MarkerKind::Guess => dashed(
                    root,
                    (x, r.top),
                    (x, r.bottom),
                    colour::CULPRIT.stroke_width(2),
                    5,
                )?,
                MarkerKind::ChangePoint => dashed(
                    root,
                    (x, r.top),
                    (x, r.bottom),
                    colour::CHANGE.stroke_width(2),
                    5,
                )?,
            }
        }
    }
    Ok(())
}
