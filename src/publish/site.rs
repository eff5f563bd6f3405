//! The static HTML site of the stored results (`report --format html`): a page per test and
//! the index of every test, written only into a new or empty folder or one it wrote before.
//! What it shows is loaded by [`crate::pipeline::site`]; this renders and writes it.

use std::path::Path;

use anyhow::Context as _;
use rayon::prelude::*;

use crate::pipeline::site::TestSite;
use crate::report::html::{self, IndexEntry, Page, Site};
use crate::report::plot;

/// Marker file of a folder `report --format html` wrote.
const SITE_MARKER: &str = ".perfbisect-site";

/// Write the HTML site into `out` (checked by [`check_dir`]): a page for each of `tests` that
/// has one, and the index of every test. Returns how many files it wrote.
pub fn write(out: &Path, site: &Site<'_>, tests: &[TestSite<'_>]) -> anyhow::Result<usize> {
    std::fs::create_dir_all(out.join("img"))
        .with_context(|| format!("cannot create {}", out.join("img").display()))?;
    std::fs::write(
        out.join(SITE_MARKER),
        "written by `perfbisect report --format html`; it rewrites only its own files here\n",
    )
    .with_context(|| format!("cannot write into {}", out.display()))?;
    // Tests are independent: render them on every core.
    let done: Vec<anyhow::Result<usize>> = tests
        .par_iter()
        .filter(|x| x.page)
        .map(|x| {
            let t = x.history.test;
            let page = Page {
                unmeasured: x.unmeasured.clone(),
                test: t,
                scope: x.scope.clone(),
                rows: &x.history.rows,
                change_points: x.detection.points.clone(),
                undecided: x.detection.undecided.clone(),
                why: x.why.clone(),
                earlier_eras: x
                    .history
                    .eras
                    .as_ref()
                    .map(|e| crate::report::eras::html(e, &t.unit()))
                    .unwrap_or_default(),
            };
            let files = html::page(&page, site)?;
            for (rel, bytes) in &files {
                plot::write_file(&out.join(rel), bytes)?;
            }
            Ok(files.len())
        })
        .collect();
    let mut written = 0;
    for d in done {
        written += d?;
    }
    let entries: Vec<IndexEntry> = tests
        .iter()
        .map(|x| {
            let t = x.history.test;
            IndexEntry::new(
                t,
                &x.history.rows,
                html::Steps::of(&x.detection, t.direction),
                out.join(format!("{}.html", t.name)).exists(),
            )
        })
        .collect();
    plot::write_file(
        &out.join("index.html"),
        html::index(&entries, site).as_bytes(),
    )?;
    Ok(written + 1)
}

/// The site's folder must be new, empty, or one this command wrote before (it holds the
/// marker): a user's folder is never written into.
pub fn check_dir(out: &Path) -> anyhow::Result<()> {
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
