//! The static HTML site of the stored results (`report --format html`): a page per test and
//! the index of every test, written only into a new or empty folder or one it wrote before.

use std::path::Path;

use anyhow::Context as _;
use rayon::prelude::*;

use crate::config::Test;
use crate::pipeline::history::{History, Scope};
use crate::pipeline::workspace::Workspace;
use crate::report::html::{self, IndexEntry, Page, Site};
use crate::report::plot;

/// Per step (by the row of its first commit at the new level): the commits not measured
/// since the last measured at the old level.
type Gaps = std::collections::HashMap<usize, usize>;

/// [`Gaps`] of the steps of `d` over `rows` that hold only commits with results: the
/// repository says how many between two of them were not measured.
fn gaps(
    ws: &Workspace,
    rows: &[crate::pipeline::rows::CommitRow],
    d: &crate::stats::Detection,
) -> Gaps {
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
fn load<'a>(ws: &'a Workspace, range: Option<&str>) -> anyhow::Result<Vec<Loaded<'a>>> {
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

/// Marker file of a folder `report --format html` wrote.
const SITE_MARKER: &str = ".perfbisect-site";

/// Write the HTML site of the stored results into `out`: a page for test `which` (or for each
/// test measured here when `which` is `all`) over `range` (or every commit with results), and
/// the index of every test.
pub fn site(ws: &Workspace, out: &Path, which: &str, range: Option<&str>) -> anyhow::Result<()> {
    check_site_dir(out)?;
    let selected: Vec<&Test> = if which == "all" {
        ws.config.tests.values().collect()
    } else {
        vec![ws.config.test(which)?]
    };
    // Every test's rows (the index shows all tests); pages for the selected ones.
    let loaded = load(ws, range)?;
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
    std::fs::create_dir_all(out.join("img"))
        .with_context(|| format!("cannot create {}", out.join("img").display()))?;
    std::fs::write(
        out.join(SITE_MARKER),
        "written by `perfbisect report --format html`; it rewrites only its own files here\n",
    )
    .with_context(|| format!("cannot write into {}", out.display()))?;
    let (root, recipe) = (ws.cache.root.clone(), ws.config.build.recipe_hash());
    // Tests are independent: detect them on every core, then (the repository is one
    // thread's) count the commits not measured inside each step's span, then render them on
    // every core.
    let found: Vec<crate::stats::Detection> =
        loaded.par_iter().map(|(_, h)| h.detection()).collect();
    let gaps: Vec<Gaps> = loaded
        .iter()
        .zip(&found)
        .map(|((_, h), d)| match range {
            Some(_) => Gaps::default(),
            None => gaps(ws, &h.rows, d),
        })
        .collect();
    let done: Vec<anyhow::Result<(html::Steps, usize)>> = loaded
        .par_iter()
        .zip(found)
        .zip(gaps)
        .map(|(((scope, h), found), unmeasured)| {
            let (t, rows, eras) = (h.test, &h.rows, &h.eras);
            let n_cps = html::Steps::of(&found, t.direction);
            let crate::stats::Detection {
                points: cps,
                undecided,
            } = found;
            // `all` leaves out tests never measured here (the index lists them unlinked); a
            // test asked for by name gets its page, empty or not.
            let measured = rows.iter().any(|r| !r.values.is_empty());
            if !selected.iter().any(|s| s.name == t.name) || (which == "all" && !measured) {
                return Ok((n_cps, 0));
            }
            // Change points whose culprit was profiled (by `find`, `report`): why they moved.
            let why = cps
                .iter()
                .filter_map(|cp| {
                    let before: Vec<gix::ObjectId> = rows[..cp.index]
                        .iter()
                        .rev()
                        .take(64)
                        .map(|r| r.commit.id)
                        .collect();
                    crate::pipeline::profile::cached(
                        &root,
                        recipe,
                        t,
                        &before,
                        rows[cp.index].commit.id,
                    )
                    .map(|w| (cp.index, w))
                })
                .collect();
            let page = Page {
                unmeasured,
                test: t,
                scope: scope.clone(),
                rows,
                change_points: cps,
                undecided,
                why,
                earlier_eras: eras
                    .as_ref()
                    .map(|e| crate::report::eras::html(e, &t.unit()))
                    .unwrap_or_default(),
            };
            let files = html::page(&page, &site)?;
            for (rel, bytes) in &files {
                plot::write_file(&out.join(rel), bytes)?;
            }
            Ok((n_cps, files.len()))
        })
        .collect();
    let mut written = 0;
    let mut cps_per_test = Vec::new();
    for d in done {
        let (n_cps, files) = d?;
        written += files;
        cps_per_test.push(n_cps);
    }
    let entries: Vec<IndexEntry> = loaded
        .iter()
        .zip(cps_per_test)
        .map(|((_, h), n_cps)| {
            let (t, rows) = (h.test, &h.rows);
            IndexEntry::new(
                t,
                rows,
                n_cps,
                out.join(format!("{}.html", t.name)).exists(),
            )
        })
        .collect();
    plot::write_file(
        &out.join("index.html"),
        html::index(&entries, &site).as_bytes(),
    )?;
    ws.note(&format!(
        "wrote {} file{} into {}; open {}",
        written + 1,
        if written == 0 { "" } else { "s" },
        crate::base::paths::display_path(out),
        crate::base::paths::display_path(&out.join("index.html"))
    ));
    Ok(())
}

/// The site's folder must be new, empty, or one this command wrote before (it holds the
/// marker): a user's folder is never written into.
fn check_site_dir(out: &Path) -> anyhow::Result<()> {
    match std::fs::read_dir(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            crate::usage!("--out {}: is a file, not a folder", out.display())
        }
        Err(e) => Err(e).with_context(|| format!("cannot read {}", out.display())),
        Ok(mut entries) => {
            if entries.next().is_none() || out.join(SITE_MARKER).exists() {
                Ok(())
            } else {
                crate::usage!(
                    "--out {}: the folder is not empty and no perfbisect site was written there before; give a new or empty folder",
                    out.display()
                )
            }
        }
    }
}
