//! What the HTML site of the stored results shows, loaded in one place: every test's history
//! over the site's commits (with the earlier eras of the machine), its steps, the commits not
//! measured inside each, and why the profiled culprits moved. `publish::site` writes it.

use std::collections::HashMap;

use rayon::prelude::*;

use crate::config::Test;
use crate::pipeline::history::{History, Scope};
use crate::pipeline::workspace::Workspace;
use crate::report::html::Site;
use crate::stats::Detection;

/// One test of the site: its history over the site's commits and what its page shows.
pub struct TestSite<'a> {
    /// What the commits are ("all 1000 commits with results", "v8.21..HEAD").
    pub scope: String,
    pub history: History<'a>,
    /// detect's steps over the history.
    pub detection: Detection,
    /// Per step (by the row of its first commit at the new level): the commits not measured
    /// since the last measured at the old level, where the rows do not hold them.
    pub unmeasured: HashMap<usize, usize>,
    /// For change points whose culprit and parent were profiled (by `find` or `report`): the
    /// functions whose cost changed, by the change point's row.
    pub why: Vec<(usize, crate::pipeline::profile::Why)>,
    /// Whether the site gives it a page: asked for by name (empty or not), or measured here
    /// when every test is asked for (the index lists the others unlinked).
    pub page: bool,
}

/// The site of test `which` (or of every test, `all`) over `range` (or every commit with
/// results): what every page says about where the numbers come from, and every test (the
/// index shows all of them).
pub fn load<'a>(
    ws: &'a Workspace,
    which: &str,
    range: Option<&str>,
) -> anyhow::Result<(Site<'a>, Vec<TestSite<'a>>)> {
    let selected: Vec<&Test> = if which == "all" {
        ws.config.tests.values().collect()
    } else {
        vec![ws.config.test(which)?]
    };
    let site = Site {
        name: ws
            .repo
            .dir()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "perfbisect".into()),
        build: &ws.config.build,
        perfbisect: env!("CARGO_PKG_VERSION").to_string(),
    };
    let loaded = histories(ws, range)?;
    // Tests are independent: detect them on every core, then (the repository is one
    // thread's) count the commits not measured inside each step's span.
    let found: Vec<Detection> = loaded.par_iter().map(|(_, h)| h.detection()).collect();
    let (root, recipe) = (&ws.cache.root, ws.config.build.recipe_hash());
    let mut out = Vec::with_capacity(loaded.len());
    for ((scope, history), detection) in loaded.into_iter().zip(found) {
        let unmeasured = match range {
            Some(_) => HashMap::new(),
            None => gaps(ws, &history.rows, &detection),
        };
        let t = history.test;
        let measured = history.rows.iter().any(|r| !r.values.is_empty());
        let page = selected.iter().any(|s| s.name == t.name) && (which != "all" || measured);
        // Change points whose culprit was profiled (by `find`, `report`): why they moved.
        let why = if page {
            let rows = &history.rows;
            detection
                .points
                .iter()
                .filter_map(|cp| {
                    let before: Vec<gix::ObjectId> = rows[..cp.index]
                        .iter()
                        .rev()
                        .take(64)
                        .map(|r| r.commit.id)
                        .collect();
                    crate::pipeline::profile::cached(
                        root,
                        recipe,
                        t,
                        &before,
                        rows[cp.index].commit.id,
                    )
                    .map(|w| (cp.index, w))
                })
                .collect()
        } else {
            Vec::new()
        };
        out.push(TestSite {
            scope,
            history,
            detection,
            unmeasured,
            why,
            page,
        });
    }
    Ok((site, out))
}

/// Per step (by the row of its first commit at the new level): the commits not measured
/// since the last measured at the old level.
type Gaps = HashMap<usize, usize>;

/// [`Gaps`] of the steps of `d` over `rows` that hold only commits with results: the
/// repository says how many between two of them were not measured.
fn gaps(ws: &Workspace, rows: &[crate::pipeline::rows::CommitRow], d: &Detection) -> Gaps {
    d.points
        .iter()
        .map(|c| (c.last_before, c.index))
        .chain(d.undecided.iter().map(|u| (u.last_before, u.index)))
        .filter_map(|(a, b)| {
            let n = ws.commits_between(rows[a].commit.id, rows[b].commit.id)?;
            Some((b, n))
        })
        .collect()
}

/// One test's history over the site's commits, and what the commits are.
type Loaded<'a> = (String, History<'a>);

/// Every test's [`Loaded`] history over `range` (or every commit with results), with the
/// earlier eras of the machine where its samples hold another fingerprint. A range's rows
/// start at its old end, as `report`'s do: the level before its first commit, without which
/// a step at that first commit would not show.
fn histories<'a>(ws: &'a Workspace, range: Option<&str>) -> anyhow::Result<Vec<Loaded<'a>>> {
    let range_commits = match &range {
        Some(r) => Some(ws.chain_commits(r)?),
        None => None,
    };
    let mut loaded = Vec::new();
    for t in ws.config.tests.values() {
        let scope = match &range_commits {
            Some((c, _)) => Scope::Commits(c),
            None => Scope::Stored,
        };
        let history = History::with_eras(ws, t, scope)?;
        let n = history.rows.len();
        let what = match (&range, &range_commits) {
            (Some(r), Some((_, true))) => {
                format!("{} commits of {r} and its old end, oldest first", n - 1)
            }
            (Some(r), _) => format!("{n} commits of {r}, oldest first"),
            (None, _) => format!("all {n} commits with results, oldest first"),
        };
        loaded.push((what, history));
    }
    Ok(loaded)
}
