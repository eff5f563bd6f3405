//! Unicode sparklines (`▁▂▃▄▅▆▇█`) of commit medians: a picture of a range that renders in
//! any terminal and issue tracker, with no image to host.

use crate::pipeline::rows::CommitRow;
use crate::stats;

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// Most characters a sparkline takes; longer series are down-sampled with LTTB, which keeps
/// the peaks and steps a plain stride would skip.
pub const MAX_WIDTH: usize = 60;

/// The sparkline of `values` (NaN: no value, drawn as a space), at most `width` characters,
/// scaled from the smallest to the largest value. A flat series is a row of `▄`.
pub fn sparkline(values: &[f64], width: usize) -> String {
    let pts: Vec<(f64, f64)> = values
        .iter()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .map(|(i, &v)| (i as f64, v))
        .collect();
    let (lo, hi) = pts
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.1), b.max(p.1))
        });
    let bar = |v: f64| -> char {
        if !v.is_finite() {
            ' '
        } else if hi <= lo {
            BARS[3]
        } else {
            let k = ((v - lo) / (hi - lo) * 7.0).round() as usize;
            BARS[k.min(7)]
        }
    };
    if values.len() <= width.max(1) {
        return values.iter().map(|&v| bar(v)).collect();
    }
    // Down-sample the measured points; gaps are not worth a character at this scale.
    stats::lttb(&pts, width.max(3))
        .iter()
        .map(|p| bar(p.1))
        .collect()
}

/// One line for a report: the sparkline of the per-commit medians of `rows` (a searched
/// chain: the old end, then the range's commits; commits without results left out) and what
/// it shows, e.g. `▁▁▁▁▇██ medians of 22 measured of the old end and the range's 23 commits,
/// oldest first; lowest 986.8 units, highest 1086 units`. `None` when no commit has results.
pub fn medians_line(rows: &[CommitRow], unit: &str) -> Option<String> {
    let medians: Vec<f64> = rows
        .iter()
        .filter_map(|r| stats::median(&r.values))
        .collect();
    if medians.is_empty() {
        return None;
    }
    let lo = medians.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = medians.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let range = rows.len().saturating_sub(1);
    let chain = format!(
        "the old end and the range's {range} commit{}",
        if range == 1 { "" } else { "s" }
    );
    let of = if medians.len() == rows.len() {
        chain
    } else {
        format!("{} measured of {chain}", medians.len())
    };
    let sampled = if medians.len() > MAX_WIDTH {
        format!(", down-sampled to {MAX_WIDTH}")
    } else {
        String::new()
    };
    Some(format!(
        "{} medians of {of}, oldest first{sampled}; lowest {}, highest {}",
        sparkline(&medians, MAX_WIDTH),
        super::units::quantity(lo, unit),
        super::units::quantity(hi, unit)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_follow_the_values() {
        assert_eq!(
            sparkline(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], 60),
            "▁▂▃▄▅▆▇█"
        );
        assert_eq!(sparkline(&[5.0, 5.0, 5.0], 60), "▄▄▄");
        assert_eq!(sparkline(&[1.0, f64::NAN, 2.0], 60), "▁ █");
        assert_eq!(sparkline(&[], 60), "");
        // A step survives down-sampling, and the width is kept.
        let mut v = vec![100.0; 500];
        v[250..].fill(110.0);
        v[100] = 140.0;
        let s = sparkline(&v, 40);
        assert_eq!(s.chars().count(), 40);
        assert!(s.starts_with('▁') && s.ends_with('▃'), "{s}");
        assert!(s.contains('█'), "the spike is kept: {s}");
    }
}
