//! The commits a change-point search works on (those with a finite sample), their samples,
//! and the ranks of their samples as one sorted pass for tests without drift.

/// Commits that have at least one finite sample.
pub(super) struct Kept {
    /// position in `series`
    pub(super) pos: Vec<usize>,
    /// finite samples of each kept commit (logarithms once the log scale is chosen; sorted
    /// once the per-commit levels are taken)
    pub(super) samples: Vec<Vec<f64>>,
    /// Every distinct value of each commit's samples, with the commit's index and how many
    /// of its samples have it, in `total_cmp` order: a test without drift ranks its commits'
    /// samples in one pass over it instead of sorting them. Made on the first such test.
    /// (Metrics repeat values, counts and sizes always and times at their resolution, so
    /// this is often far shorter than the samples.)
    pooled: std::cell::OnceCell<Vec<(f64, u32, u32)>>,
    /// How many entries [`Kept::pooled`] has (distinct values per commit), once `samples`
    /// are sorted.
    pub(super) distinct: usize,
}

impl Kept {
    /// Sorts each commit's samples (from here on they are used as a set: ranks, medians) and
    /// counts their distinct values.
    pub(super) fn sort_runs(&mut self) {
        use rayon::prelude::*;
        self.samples
            .par_iter_mut()
            .for_each(|s| s.sort_by(f64::total_cmp));
        self.distinct = self
            .samples
            .par_iter()
            .map(|s| 1 + s.windows(2).filter(|w| w[0] != w[1]).count())
            .sum();
    }

    pub(super) fn pooled(&self) -> &[(f64, u32, u32)] {
        self.pooled.get_or_init(|| {
            use rayon::prelude::*;
            let mut all: Vec<(f64, u32, u32)> = Vec::new();
            for (j, s) in self.samples.iter().enumerate() {
                let j = u32::try_from(j).expect("fewer than 2^32 commits");
                // `samples` are sorted: equal values are next to each other.
                for x in s {
                    match all.last_mut() {
                        Some((v, k, n)) if *k == j && *v == *x => *n += 1,
                        _ => all.push((*x, j, 1)),
                    }
                }
            }
            // The commits' runs are sorted already: a stable merge sort only merges them.
            all.par_sort_by(|x, y| x.0.total_cmp(&y.0));
            all
        })
    }

    /// The samples of kept commits [a, b) are all one value.
    pub(super) fn flat(&self, a: usize, b: usize) -> Option<f64> {
        let first = *self.samples.get(a)?.first()?;
        self.samples[a..b]
            .iter()
            .all(|s| s.iter().all(|x| *x == first))
            .then_some(first)
    }

    pub(super) fn count(&self, a: usize, b: usize) -> usize {
        self.samples[a..b].iter().map(Vec::len).sum()
    }
}

/// The commits of `series` with at least one finite sample, in order.
pub(super) fn keep(series: &[Vec<f64>]) -> Kept {
    use rayon::prelude::*;
    let (pos, samples): (Vec<usize>, Vec<Vec<f64>>) = series
        .par_iter()
        .enumerate()
        .filter_map(|(i, s)| {
            // (-0.0 becomes 0.0: the two are one value, and a median of both must not take
            // its sign from the order the samples are in.)
            let f: Vec<f64> = s
                .iter()
                .filter(|x| x.is_finite())
                .map(|&x| if x == 0.0 { 0.0 } else { x })
                .collect();
            (!f.is_empty()).then_some((i, f))
        })
        .unzip();
    Kept {
        pos,
        samples,
        pooled: Default::default(),
        distinct: 0,
    }
}
