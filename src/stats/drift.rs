//! How much a machine's speed moved while it measured: the same builds at different times.

use super::compare::mann_whitney_u;
use super::summary::median;

/// The smallest drift (relative: 0.01 %) a report says: below it a note reads "0.00 %" or
/// "0.00001435 %", a move no one could act on.
pub const SAID_FROM: f64 = 1e-4;

/// The move of the machine between rounds of interleaved runs.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RoundDrift {
    /// (highest - lowest) round level, as a share of the typical level: each run is divided
    /// by the median of its own build's runs, and a round's level is the median of those
    /// ratios, so the builds' own differences drop out.
    pub rel: f64,
    /// Rounds with at least 3 such ratios.
    pub rounds: usize,
    /// Rank test of the lowest round's ratios against the highest's.
    pub p_value: f64,
}

/// The drift between rounds from `(build, round, value)` triples (a build is any key of a
/// commit measured in several rounds). `None` with fewer than two rounds of at least three
/// ratios, or no build measured twice.
pub fn between_rounds(runs: &[(usize, u32, f64)]) -> Option<RoundDrift> {
    use std::collections::BTreeMap;
    let mut by_build: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for &(b, _, v) in runs.iter().filter(|r| r.2.is_finite()) {
        by_build.entry(b).or_default().push(v);
    }
    let level: BTreeMap<usize, f64> = by_build
        .iter()
        .filter(|(_, v)| v.len() >= 2)
        .filter_map(|(&b, v)| median(v).filter(|m| *m != 0.0).map(|m| (b, m)))
        .collect();
    let mut by_round: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for &(b, r, v) in runs.iter().filter(|r| r.2.is_finite()) {
        if let Some(m) = level.get(&b) {
            by_round.entry(r).or_default().push(v / m);
        }
    }
    let rounds: Vec<(f64, Vec<f64>)> = by_round
        .into_values()
        .filter(|v| v.len() >= 3)
        .filter_map(|v| median(&v).map(|m| (m, v)))
        .collect();
    if rounds.len() < 2 {
        return None;
    }
    let lo = rounds.iter().min_by(|a, b| a.0.total_cmp(&b.0))?;
    let hi = rounds.iter().max_by(|a, b| a.0.total_cmp(&b.0))?;
    let p = mann_whitney_u(&lo.1, &hi.1).map_or(1.0, |t| t.p_value);
    Some(RoundDrift {
        rel: hi.0 - lo.0,
        rounds: rounds.len(),
        p_value: p,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_that_slows_down_between_rounds_is_seen_and_one_that_does_not_is_not() {
        // 20 builds at their own levels, 4 rounds; round 2 runs 5 % slow on every build.
        let mut runs = Vec::new();
        for b in 0..20usize {
            let level = 100.0 + 10.0 * b as f64;
            for r in 0..4u32 {
                let noise = 1.0 + 0.002 * (((b * 7 + r as usize * 3) % 5) as f64 - 2.0);
                let speed = if r == 2 { 1.05 } else { 1.0 };
                runs.push((b, r, level * speed * noise));
            }
        }
        let d = between_rounds(&runs).unwrap();
        assert!((d.rel - 0.05).abs() < 0.01, "{d:?}");
        assert!(d.p_value < 1e-4, "{d:?}");
        assert_eq!(d.rounds, 4);
        let flat: Vec<(usize, u32, f64)> = runs
            .iter()
            .map(|&(b, r, v)| (b, r, if r == 2 { v / 1.05 } else { v }))
            .collect();
        let d = between_rounds(&flat).unwrap();
        assert!(d.rel < 0.01 && d.p_value > 0.01, "{d:?}");
        assert!(between_rounds(&runs[..2]).is_none());
    }
}
