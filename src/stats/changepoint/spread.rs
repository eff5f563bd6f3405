//! How far levels spread beyond what their variances promise: a robust sd from differences of
//! levels, the inflation heavy tails leave, and the clipping of a commit measured once to its
//! neighbours. Plain functions on slices.

use super::super::summary::median_in_place;
/// Fewest differences of neighbouring levels (other builds, not across a boundary) the
/// jitter between commits is estimated from: a median of 5 bears 2 steps among them.
pub(super) const MIN_DIFFS: usize = 5;

/// Robust sd of one level from differences of two levels (`(difference, h)`, h the mean
/// inverse moments of its two levels), each scaled to the typical h of those read (identical
/// builds side by side are one level, not a difference: left out before); and that typical
/// h. See [`sigma_of_diffs`].
pub(super) fn scaled_sigma(d: Vec<(f64, f64)>) -> (Option<f64>, f64) {
    let mut hs: Vec<f64> = d.iter().map(|x| x.1).collect();
    let typical = median_in_place(&mut hs).unwrap_or(1.0);
    let d = d
        .into_iter()
        .map(|(x, h)| x * (typical / h).sqrt())
        .collect();
    (sigma_of_diffs(d), typical)
}

/// Standardised differences beyond this many sd count as this many (heavy tails: an outlier
/// run moves a mean of few runs far).
const JITTER_CLIP: f64 = 3.0;
/// E[min(z², 9)] for a standard normal z: the winsorised square's mean without jitter.
const CLIPPED_SQUARE: f64 = 0.970_709;

/// The jitter of builds, τ² (what a build's own level adds to the variance of its runs' mean),
/// from differences of two levels `(difference, h)` whose runs' noise alone has variance
/// 2 sw² h: what their robust spread (`(sb, typical)`, [`scaled_sigma`] of them) shows beyond
/// that noise, and 0 unless two tests at 0.1 % find the differences clearly wider than it. The robust one (an
/// outlier run in a mean of few runs is no jitter), and their chi-square against the noise,
/// each difference winsorised at [`JITTER_CLIP`] sd, in which each counts by its own
/// precision: two commits measured at length side by side and found equal say more of the
/// jitter than a chance spread of commits measured a few times, and a jitter made up of such a
/// spread caps the weight of every commit measured at length (its side-by-side runs stop
/// deciding a step).
pub(super) fn jitter(d: &[(f64, f64)], sw: f64, (sb, typical): (Option<f64>, f64)) -> f64 {
    use statrs::distribution::{ChiSquared, ContinuousCDF};
    let d: Vec<(f64, f64)> = d
        .iter()
        .copied()
        .filter(|(x, h)| x.is_finite() && *h > 0.0)
        .collect();
    if d.len() < MIN_DIFFS || sw.is_nan() || sw <= 0.0 {
        return 0.0;
    }
    // Neighbours' differences centre on the drift between them, if any (one degree of
    // freedom).
    let med = median_in_place(&mut d.iter().map(|x| x.0).collect::<Vec<_>>()).unwrap_or(0.0);
    let noise = |h: f64| 2.0 * sw * sw * h;
    let clipped = |x: f64, v: f64| ((x - med) * (x - med) / v).min(JITTER_CLIP * JITTER_CLIP);
    let q: f64 = d.iter().map(|&(x, h)| clipped(x, noise(h))).sum();
    let df = (d.len() - 1) as f64;
    let clear = ChiSquared::new(df).map_or(f64::INFINITY, |c| c.inverse_cdf(0.999));
    if q <= clear * CLIPPED_SQUARE {
        return 0.0;
    }
    // The robust test: a MAD of k differences has the spread of a variance on 0.37 k degrees
    // of freedom; the jitter is what it shows beyond the runs' noise at the typical moments
    // read.
    let sb = sb.unwrap_or(0.0);
    let nu = (0.37 * d.len() as f64).max(1.0);
    let robust = ChiSquared::new(nu).map_or(f64::INFINITY, |c| c.inverse_cdf(0.999) / nu);
    if sb * sb > robust * sw * sw * typical {
        sb * sb - sw * sw * typical
    } else {
        0.0
    }
}

/// Robust sd of one level from differences of two levels each (1.4826 MAD / √2, or the mean
/// absolute deviation where most differences are equal); `None` when every difference is 0
/// or there is none.
fn sigma_of_diffs(d: Vec<f64>) -> Option<f64> {
    if d.is_empty() {
        return None;
    }
    let med = median_in_place(&mut d.clone())?;
    let mut dev: Vec<f64> = d.iter().map(|x| (x - med).abs()).collect();
    let mad = median_in_place(&mut dev)?;
    let mut s = 1.4826 * mad / std::f64::consts::SQRT_2;
    if s.is_nan() || s <= 0.0 {
        let mean_abs = d.iter().map(|x| (x - med).abs()).sum::<f64>() / d.len() as f64;
        s = 1.2533 * mean_abs / std::f64::consts::SQRT_2;
    }
    (s > 0.0 && s.is_finite()).then_some(s)
}

/// Mean square of the standardised differences of neighbouring levels (those of `skip` left
/// out), winsorised at ±3 so steps count little; at least 1 (Gaussian noise gives about 1),
/// and 1 where fewer than [`MIN_DIFFS`] differences are left (those few may be the steps).
/// Heavy tails leave more spread than a MAD promises; the penalty must scale with the spread
/// the segmentation sees.
///
/// For each difference `j` (levels j − 1 and j), too, the inflation the others show without
/// it (the same where it was skipped): a step tested is no tail of its own noise.
pub(super) fn tails(y: &[f64], var: &[f64], skip: &[bool]) -> (f64, Vec<f64>) {
    let m = y.len();
    if m < 3 {
        return (1.0, vec![1.0; m]);
    }
    let mut term = vec![None; m];
    let (mut sum, mut count) = (0.0, 0usize);
    for j in 1..m {
        if skip.get(j).copied().unwrap_or(false) {
            continue;
        }
        let t = ((y[j] - y[j - 1]) / (var[j] + var[j - 1]).sqrt())
            .clamp(-3.0, 3.0)
            .powi(2);
        term[j] = Some(t);
        sum += t;
        count += 1;
    }
    let of = |sum: f64, count: usize| {
        let ms = sum / count.max(1) as f64;
        if ms.is_finite() && count >= MIN_DIFFS {
            ms.max(1.0)
        } else {
            1.0
        }
    };
    let all = of(sum, count);
    let without = term
        .iter()
        .map(|t| t.map_or(all, |t| of(sum - t, count - 1)))
        .collect();
    (all, without)
}

/// Each level's inflation by the series' tails (see `weighed`), and what it would be
/// without one difference of neighbouring levels.
pub(super) struct Tails {
    /// The level is compared within its stratum (by `own`), else across (by `all`; every
    /// level where the tails are read within strata).
    pub(super) inner: Vec<bool>,
    pub(super) own: (f64, Vec<f64>),
    pub(super) all: (f64, Vec<f64>),
}

impl Tails {
    /// Level `j`'s inflation, the difference between levels `without − 1` and `without`
    /// left out.
    pub(super) fn at(&self, j: usize, without: Option<usize>) -> f64 {
        let t = if self.inner[j] { &self.own } else { &self.all };
        without.and_then(|k| t.1.get(k).copied()).unwrap_or(t.0)
    }
}

/// Clips the level of a commit measured once (one moment: nothing tells an outlier run from
/// its level), but at an end, to ±k sd around the running median of 5 commits, or of 3 where a neighbour
/// agrees with it (within k sd of the two's difference): an isolated outlier moves, a level
/// held by two commits in a row does not.
pub(super) fn clip_lone(y: &[f64], var: &[f64], n: &[usize], k: f64) -> Vec<f64> {
    let m = y.len();
    let running = |j: usize, half: usize| {
        let (a, b) = (j.saturating_sub(half), (j + half + 1).min(m));
        let mut buf = [0.0f64; 5];
        buf[..b - a].copy_from_slice(&y[a..b]);
        median_in_place(&mut buf[..b - a]).unwrap_or(y[j])
    };
    (0..m)
        .map(|j| {
            // An end is never clipped: a level measured once there (the newest round) is a
            // step to decide, not an outlier to hide.
            if n[j] > 1 || m < 3 || j == 0 || j + 1 == m {
                return y[j];
            }
            let sd = var[j].sqrt();
            let agrees = |i: usize| (y[i] - y[j]).abs() <= (var[i] + var[j]).sqrt();
            let paired = (j > 0 && agrees(j - 1)) || (j + 1 < m && agrees(j + 1));
            let rm = running(j, if paired { 1 } else { 2 });
            y[j].clamp(rm - k * sd, rm + k * sd)
        })
        .collect()
}
