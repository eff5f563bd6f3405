//! The plots perfbisect draws, assembled from per-commit rows: what goes on the x axis, which
//! markers, which boxes. Drawing itself is `plot`'s.

use super::plot::{BoxGroup, Chart, Marker, MarkerKind, PlotCommit, Style};
use crate::config::Test;
use crate::pipeline::rows::{CommitRow, Status};
use crate::stats::ChangePoint;

/// Commits in the "most recent" chart and table of a test's HTML page.
pub const RECENT: usize = 100;

/// Size of the pictures of `--plot` (and of the wide charts of the HTML pages).
pub const WIDE: (u32, u32) = (1000, 520);
/// Size of the HTML pages' charts for narrow screens (phones).
pub const NARROW: (u32, u32) = (400, 360);

/// The first 7 hex digits: what fits under a plot's tick.
pub fn tick_hash(row: &CommitRow) -> String {
    row.commit.id.to_hex_with_len(7).to_string()
}

/// `spec` with every full 40-digit hash cut to 10 digits, so a range typed as full hashes fits
/// in a plot's title.
pub fn abbreviate_hashes(spec: &str) -> String {
    let mut out = String::with_capacity(spec.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() == 40 {
            out.push_str(&run[..10]);
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for ch in spec.chars() {
        if ch.is_ascii_hexdigit() {
            run.push(ch);
        } else {
            flush(&mut run, &mut out);
            out.push(ch);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// "bytes, lower is better: Size of struct foo"
pub fn subtitle(test: &Test) -> String {
    let mut s = String::new();
    if !test.unit().is_empty() {
        s += &test.unit();
        s += ", ";
    }
    s += test.direction.as_str();
    s += " is better";
    if let Some(d) = &test.description {
        s += ": ";
        s += d;
    }
    s
}

/// Markers for detect's change points (`index` positions into `rows`).
pub fn change_point_markers(rows: &[CommitRow], cps: &[ChangePoint]) -> Vec<Marker> {
    cps.iter()
        .filter(|c| c.index < rows.len())
        .map(|c| Marker {
            index: c.index,
            label: tick_hash(&rows[c.index]),
            kind: MarkerKind::ChangePoint,
        })
        .collect()
}

/// The main chart of a test over `rows`: band and median per commit, `markers` (the most
/// important first: the first one or two get before/after boxes in the side panel), the
/// stake, failed commits marked. Without markers the side panel shows the whole range's
/// distribution.
pub fn commit_chart(
    test: &Test,
    title: &str,
    rows: &[CommitRow],
    markers: Vec<Marker>,
    size: (u32, u32),
) -> Chart {
    let commits: Vec<PlotCommit> = rows
        .iter()
        .map(|r| PlotCommit {
            label: tick_hash(r),
            values: r.values.clone(),
            failed: matches!(r.status, Status::BuildFailed | Status::RunFailed),
        })
        .collect();
    let (boxes, boxes_title) = before_after(rows, &markers, if size.0 >= 800 { 2 } else { 1 });
    Chart {
        title: title.to_string(),
        subtitle: subtitle(test),
        unit: test.unit(),
        commits,
        markers,
        stake: test.stake,
        boxes,
        boxes_title,
        style: Style::Band,
        width: size.0,
        height: size.1,
    }
}

/// Boxes of the samples before and after each of the first `pairs` markers, each side
/// reaching to the neighbouring marker (or the end of the range); without markers, one box
/// of everything.
fn before_after(rows: &[CommitRow], markers: &[Marker], pairs: usize) -> (Vec<BoxGroup>, String) {
    let values = |a: usize, b: usize| -> Vec<f64> {
        rows[a..b]
            .iter()
            .flat_map(|r| r.values.iter().copied())
            .collect()
    };
    let mut bounds: Vec<usize> = markers.iter().map(|m| m.index).collect();
    bounds.sort_unstable();
    bounds.dedup();
    let mut boxes = Vec::new();
    let mut seen = Vec::new();
    for m in markers {
        if seen.len() == pairs {
            break;
        }
        if m.index == 0 || m.index >= rows.len() || seen.contains(&m.index) {
            continue;
        }
        seen.push(m.index);
        let prev = bounds
            .iter()
            .copied()
            .filter(|&b| b < m.index)
            .max()
            .unwrap_or(0);
        let next = bounds
            .iter()
            .copied()
            .filter(|&b| b > m.index)
            .min()
            .unwrap_or(rows.len());
        let span = |a: usize, b: usize| {
            if b - a == 1 {
                tick_hash(&rows[a])
            } else {
                format!("{}..{}", tick_hash(&rows[a]), tick_hash(&rows[b - 1]))
            }
        };
        boxes.push(BoxGroup {
            label: "before".into(),
            sub: span(prev, m.index),
            values: values(prev, m.index),
            highlight: false,
        });
        boxes.push(BoxGroup {
            // The commit alone ("best guess 6df1c9d?" is "6df1c9d?", "(merged here)" left out).
            label: format!(
                "after {}",
                m.label
                    .strip_prefix("best guess ")
                    .unwrap_or(&m.label)
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
            ),
            sub: span(m.index, next),
            values: values(m.index, next),
            highlight: true,
        });
    }
    if boxes.is_empty() {
        let n = rows.iter().filter(|r| !r.values.is_empty()).count();
        boxes.push(BoxGroup {
            label: "all runs".into(),
            sub: format!("{n} commit{}", if n == 1 { "" } else { "s" }),
            values: values(0, rows.len()),
            highlight: false,
        });
        return (boxes, "distribution".into());
    }
    (boxes, "runs before / after".into())
}

/// The full range down-sampled to `points` medians with LTTB (curl's "full range"), with
/// change-point markers.
pub fn full_range_chart(
    test: &Test,
    title: &str,
    rows: &[CommitRow],
    markers: Vec<Marker>,
    points: usize,
    size: (u32, u32),
) -> Chart {
    let mut c = commit_chart(test, title, rows, markers, size);
    c.boxes.clear();
    c.boxes_title.clear();
    c.style = Style::Line { points };
    c
}

/// Box plots of the levels between change points (the newest `max` of them) and of the whole
/// range: how the distribution moved.
pub fn distribution_chart(
    test: &Test,
    title: &str,
    rows: &[CommitRow],
    cps: &[ChangePoint],
    max: usize,
    size: (u32, u32),
) -> Chart {
    let mut bounds: Vec<usize> = cps
        .iter()
        .map(|c| c.index)
        .filter(|&i| i < rows.len())
        .collect();
    bounds.sort_unstable();
    bounds.dedup();
    let mut edges = vec![0];
    edges.extend(bounds);
    edges.push(rows.len());
    let mut boxes = Vec::new();
    // Without change points there is one level, the whole range: the box of everything says
    // it; a long range is split into older and the most recent commits instead.
    let no_levels = edges.len() == 2;
    if no_levels {
        let recent = rows.len().saturating_sub(RECENT);
        edges = if recent > 0 {
            vec![0, recent, rows.len()]
        } else {
            Vec::new()
        };
    }
    for w in edges.windows(2) {
        let (a, b) = (w[0], w[1]);
        if a >= b {
            continue;
        }
        // Each real run once: a row showing an identical build's runs does not count them again.
        let values: Vec<f64> = rows[a..b].iter().flat_map(|r| r.own_values()).collect();
        let sub = if b - a == 1 {
            tick_hash(&rows[a])
        } else {
            format!("{}..{}", tick_hash(&rows[a]), tick_hash(&rows[b - 1]))
        };
        boxes.push(BoxGroup {
            label: match (no_levels, a == 0) {
                (true, true) => "older commits".into(),
                (true, false) => format!("last {}", b - a),
                (false, true) => "first level".into(),
                (false, false) => format!("from {}", tick_hash(&rows[a])),
            },
            sub,
            values,
            highlight: false,
        });
    }
    if boxes.len() > max {
        boxes.drain(..boxes.len() - max);
    }
    if boxes.len() > 1 {
        if let Some(last) = boxes.last_mut() {
            last.highlight = true;
        }
    }
    let all: Vec<f64> = rows.iter().flat_map(|r| r.own_values()).collect();
    boxes.push(BoxGroup {
        label: "all runs".into(),
        sub: format!("{} commits", rows.len()),
        values: all,
        highlight: false,
    });
    Chart {
        title: title.to_string(),
        subtitle: subtitle(test),
        unit: test.unit(),
        commits: Vec::new(),
        markers: Vec::new(),
        stake: test.stake,
        boxes,
        boxes_title: if cps.is_empty() {
            String::new()
        } else {
            "levels between change points, newest last".into()
        },
        style: Style::Band,
        width: size.0,
        height: size.1,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn full_hashes_are_cut_in_titles() {
        let full = "395c196a7321056ad0ffb7330c074a1912402cf3";
        assert_eq!(
            super::abbreviate_hashes(&format!("{full}..main")),
            "395c196a73..main"
        );
        assert_eq!(super::abbreviate_hashes("v8.21..HEAD~3"), "v8.21..HEAD~3");
        assert_eq!(super::abbreviate_hashes("cafe..beef"), "cafe..beef");
    }
}
