//! A test's stored results as `show`, `detect`, `report` and `find` see them: one row per
//! commit (its values and records, and why a commit without values has none), and the change
//! points over those rows with the test's threshold.

use crate::pipeline::Workspace;

/// Per-commit rows of `test` for `commits`: the values and records stored, and whether a
/// commit without values failed to build, failed every run, or was never measured.
pub fn rows(
    ws: &Workspace,
    samples: &crate::pipeline::Samples,
    commits: Vec<crate::git::CommitInfo>,
) -> Vec<crate::report::show::CommitRow> {
    use crate::build::State;
    use crate::report::show::{CommitRow, Status};
    let mut previous: Option<[u8; 20]> = None;
    commits
        .into_iter()
        .map(|c| {
            let key = crate::store::commit_key(&c.id);
            let joins_previous =
                previous.is_some_and(|p| samples.twins.get(&key).is_some_and(|t| t.contains(&p)));
            previous = Some(key);
            let own = samples.own(&c.id).len();
            let records: Vec<_> = samples.records(&c.id).into_iter().cloned().collect();
            let values: Vec<f64> = records.iter().filter_map(|s| s.value).collect();
            let status = if !values.is_empty() {
                Status::Ok
            } else if matches!(ws.build_state(&c.id), State::Failed(_)) {
                Status::BuildFailed
            } else if !records.is_empty() {
                Status::RunFailed
            } else {
                Status::Missing
            };
            CommitRow {
                same_build_as: samples.shared_from(&c.id).first().copied(),
                own,
                joins_previous,
                commit: c,
                values,
                records,
                status,
            }
        })
        .collect()
}

/// `detect`'s change points over `rows` with the test's threshold (a declared deterministic
/// test: every change of at least the threshold, at its exact commit).
pub fn change_points(
    test: &crate::config::Test,
    rows: &[crate::report::show::CommitRow],
) -> Vec<crate::stats::ChangePoint> {
    use crate::stats::changepoint;
    let opts = changepoint::Options {
        threshold: test.threshold,
        deterministic: test.deterministic,
        ..changepoint::Options::default()
    };
    // One value per independent measurement (runs back to back are one look at the machine),
    // each real run once (where it was made, not again on commits of identical builds).
    crate::report::show::change_points(rows, &opts)
}
