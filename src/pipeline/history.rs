//! A test's history as every view sees it, assembled in one place ([`History::of`]): one row
//! per commit (its values and records, and why a commit without values has none), what the
//! read set aside, the change points over those rows with the test's threshold, and the
//! earlier eras of the machine.

use crate::config::Test;
use crate::git::CommitInfo;
use crate::pipeline::rows::CommitRow;
use crate::pipeline::samples::Samples;
use crate::pipeline::workspace::Workspace;
use crate::stats::Detection;
use crate::store::{Run, Sample};

/// Which commits a history covers.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    /// Every commit with stored results, oldest first ([`Workspace::commits`]).
    Stored,
    /// A range's chain: its old end first where it has one (its runs are the level before the
    /// range's first commit), then its commits.
    Range(&'a str),
    /// These commits, in this order (a search's chain, a range as a view lists it).
    Commits(&'a [CommitInfo]),
}

impl<'a> Scope<'a> {
    /// A range, or without one every commit with stored results.
    pub fn of(range: Option<&'a str>) -> Scope<'a> {
        range.map_or(Scope::Stored, Scope::Range)
    }
}

/// A test's stored results over a [`Scope`]: the only assembly of the rows, change points and
/// eras that `show`, `detect`, `report`, `find`, `run`, `triage` and the site render.
///
/// `R` is what is kept of each run: whole [`Sample`]s, or [`crate::store::Observation`]s
/// where only statistics over a long history are wanted.
pub struct History<'t, R = Sample> {
    pub test: &'t Test,
    /// One row per commit of the scope, in its order.
    pub rows: Vec<CommitRow<R>>,
    /// Whether `rows[0]` is a range's old end (not one of its commits).
    pub old_end: bool,
    /// What the read set aside (stale definitions, other fingerprints) and the byte-identical
    /// builds; the rows' records are moved out of it (a store of millions of samples is not
    /// held twice).
    pub read: Samples<R>,
    /// The earlier eras of the machine (samples of other fingerprints), where
    /// [`History::with_eras`] was asked and there are some.
    pub eras: Option<crate::pipeline::eras::Eras>,
}

impl<'t, R: crate::store::Keep + Run + Clone> History<'t, R> {
    /// Read `test`'s stored results over `scope`: with a range or commits, only their records
    /// (through the store's index); otherwise every record.
    pub fn of(ws: &Workspace, test: &'t Test, scope: Scope<'_>) -> anyhow::Result<Self> {
        let (read, commits, old_end) = Self::read(ws, test, scope)?;
        Ok(Self::assemble(ws, test, (read, commits, old_end), None))
    }

    /// The rows of `commits`, their records moved out of `read`.
    fn assemble(
        ws: &Workspace,
        test: &'t Test,
        (mut read, commits, old_end): (Samples<R>, Vec<CommitInfo>, bool),
        eras: Option<crate::pipeline::eras::Eras>,
    ) -> Self {
        let rows = crate::pipeline::rows::take_rows(ws, &mut read, commits);
        History {
            test,
            rows,
            old_end,
            read,
            eras,
        }
    }

    fn read(
        ws: &Workspace,
        test: &Test,
        scope: Scope<'_>,
    ) -> anyhow::Result<(Samples<R>, Vec<CommitInfo>, bool)> {
        let ids = |c: &[CommitInfo]| c.iter().map(|c| c.id).collect::<Vec<_>>();
        Ok(match scope {
            Scope::Stored => {
                let read = ws.samples_as::<R>(test, None)?;
                let commits = ws.commits(None, &read)?;
                (read, commits, false)
            }
            Scope::Range(r) => {
                let (commits, old_end) = ws.chain_commits(r)?;
                (
                    ws.samples_as::<R>(test, Some(&ids(&commits)))?,
                    commits,
                    old_end,
                )
            }
            Scope::Commits(c) => (ws.samples_as::<R>(test, Some(&ids(c)))?, c.to_vec(), false),
        })
    }

    /// The change points and undecided steps over every row, with the test's threshold.
    pub fn detection(&self) -> Detection {
        detection(self.test, &self.rows)
    }

    /// [`History::detection`] over the first `n` rows (a search's chain within its range).
    pub fn detection_of_first(&self, n: usize) -> Detection {
        detection(self.test, &self.rows[..n.min(self.rows.len())])
    }

    /// [`History::detection`] at significance `alpha` (`detect --alpha`).
    pub fn detection_at(&self, alpha: f64) -> Detection {
        let opts = crate::stats::changepoint::Options {
            alpha,
            ..options(self.test)
        };
        crate::pipeline::rows::detection(&self.rows, &opts, &pair_params(self.test))
    }
}

impl<'t> History<'t, Sample> {
    /// [`History::of`], with the earlier eras of the machine when samples of other
    /// fingerprints were set aside (not with `--any-fingerprint`, which uses them).
    pub fn with_eras(ws: &Workspace, test: &'t Test, scope: Scope<'_>) -> anyhow::Result<Self> {
        let (read, commits, old_end) = Self::read(ws, test, scope)?;
        let eras = if ws.any_fingerprint || read.other_fingerprints.is_empty() {
            None
        } else {
            let within = !matches!(scope, Scope::Stored);
            let ids: Option<Vec<_>> = within.then(|| commits.iter().map(|c| c.id).collect());
            let others = ws.other_fingerprints(test, ids.as_deref())?;
            Some(crate::pipeline::eras::of(
                ws,
                test,
                &read,
                others,
                within.then_some(commits.as_slice()),
            )?)
        };
        Ok(Self::assemble(ws, test, (read, commits, old_end), eras))
    }

    /// What a "no change" between the ends of the rows leaves unsaid ([`steps_inside`]).
    pub fn steps_inside(&self, range: &str) -> Option<String> {
        steps_inside(self.test, &self.rows, range)
    }
}

/// `detect`'s change points over `rows` with the test's threshold (a declared deterministic
/// test: every change of at least the threshold, at its exact commit), and the steps too few
/// runs leave undecided.
fn detection<R: Run>(
    test: &crate::config::Test,
    rows: &[crate::pipeline::rows::CommitRow<R>],
) -> crate::stats::Detection {
    // One value per independent measurement (runs back to back are one look at the machine),
    // each real run once (where it was made, not again on commits of identical builds).
    crate::pipeline::rows::detection(rows, &options(test), &pair_params(test))
}

/// The detector's options for `test`: its threshold, and whether its values are exact.
fn options(test: &Test) -> crate::stats::changepoint::Options {
    crate::stats::changepoint::Options {
        threshold: test.threshold,
        deterministic: test.deterministic,
        counted: pair_params(test).counted,
        ..crate::stats::changepoint::Options::default()
    }
}

/// What a "no change" between the ends of `rows` (the old end first) leaves unsaid: the
/// change points the stored runs inside the range show (a step and its return), as `report`
/// would list them, with the search that would name the first one. `None` when there are none.
fn steps_inside(
    test: &crate::config::Test,
    rows: &[crate::pipeline::rows::CommitRow],
    range: &str,
) -> Option<String> {
    let d = detection(test, rows);
    let points: Vec<&crate::stats::ChangePoint> = d
        .points
        .iter()
        .filter(|c| c.index > 0 && c.index < rows.len())
        .collect();
    let first = points.first()?;
    let steps: Vec<String> = points
        .iter()
        .map(|c| {
            let r = &rows[c.index];
            format!(
                "{:+.2} % at {} {}",
                100.0 * c.rel_change,
                r.commit.short(),
                r.commit.subject
            )
        })
        .collect();
    let old = &rows[0].commit;
    let at = &rows[first.index].commit;
    Some(format!(
        "the ends do not differ, but the stored runs inside the range step: {} (the change \
         point{} `perfbisect report {} {range}` lists); `perfbisect find {} {}..{}` names the \
         first",
        steps.join(", "),
        if steps.len() == 1 { "" } else { "s" },
        test.name,
        test.name,
        old.short(),
        at.short()
    ))
}

/// The rules `find` compares a culprit with its parent by, for the views that state a step
/// between two commits measured side by side as `find` does ([`crate::pipeline::rows::side_by_side`]).
pub fn pair_params(test: &crate::config::Test) -> crate::bisect::Params {
    crate::bisect::Params {
        alpha: test.alpha,
        threshold: test.threshold,
        repeats: test.repeats,
        max_repeats: test.max_repeats,
        deterministic: test.deterministic,
        interleave: test.interleave,
        counted: matches!(test.metric, crate::config::Metric::Instructions),
        tolerance: 0.0,
        max_runs: test.max_runs,
    }
}

/// The first row of a test declared deterministic whose runs differ (the declaration is then
/// wrong); a count's jitter within a tenth of the threshold (33 instructions in 2.17 billion)
/// leaves its values exact, as a search compares them: only a wider spread disproves.
pub fn uneven<'a, R: Run>(
    test: &crate::config::Test,
    rows: &'a [crate::pipeline::rows::CommitRow<R>],
) -> Option<&'a crate::pipeline::rows::CommitRow<R>> {
    use crate::stats::threshold::Threshold;
    let counted = matches!(test.metric, crate::config::Metric::Instructions);
    let tolerance = |level: f64| match test.threshold {
        Threshold::Relative(r) => r.abs() / 10.0,
        Threshold::Absolute(a) if level != 0.0 => (a / level).abs() / 10.0,
        Threshold::Absolute(_) => 0.0,
    };
    rows.iter().find(|r| {
        let first = r.values.first().copied().unwrap_or(0.0);
        r.values.iter().any(|x| {
            *x != first
                && !(counted && first != 0.0 && ((x - first) / first).abs() <= tolerance(first))
        })
    })
}
