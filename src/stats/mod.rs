//! Statistics on slices (placeholder until the full engine lands).

/// Smallest change that matters.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Threshold {
    Relative(f64),
    Absolute(f64),
}

impl Threshold {
    /// Whether the change from `before` to `after` reaches the threshold.
    pub fn reached(&self, before: f64, after: f64) -> bool {
        match *self {
            Threshold::Relative(r) => {
                before != 0.0 && ((after - before) / before).abs() >= r
                    || before == 0.0 && after != 0.0
            }
            Threshold::Absolute(a) => (after - before).abs() >= a,
        }
    }
}

/// Summary of one sample.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub p25: f64,
    pub median: f64,
    pub p75: f64,
    pub max: f64,
    pub mean: f64,
    pub std_dev: f64,
}

impl Summary {
    pub fn cv_percent(&self) -> f64 {
        if self.mean == 0.0 {
            0.0
        } else {
            self.std_dev / self.mean.abs() * 100.0
        }
    }
    pub fn span(&self) -> f64 {
        self.max - self.min
    }
}

pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

pub fn summarize(xs: &[f64]) -> Option<Summary> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    let mean = v.iter().sum::<f64>() / n as f64;
    let var = if n > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
    } else {
        0.0
    };
    Some(Summary {
        n,
        min: v[0],
        p25: percentile(&v, 0.25),
        median: percentile(&v, 0.5),
        p75: percentile(&v, 0.75),
        max: v[n - 1],
        mean,
        std_dev: var.sqrt(),
    })
}

pub fn median(xs: &[f64]) -> Option<f64> {
    summarize(xs).map(|s| s.median)
}
