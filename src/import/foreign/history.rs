//! `--git-history BRANCH`: every version of a benchmark-action `data.js` that the branch's log
//! holds, oldest first, read from the repository through gix (nothing is checked out). The
//! file is not append-only (`max-items-in-chart` drops the oldest entries, people edit it by
//! hand), so its log is the whole record: an entry is read from the first version that has
//! it, once, and entries a later version dropped come back.

use std::collections::HashSet;
use std::path::Path;

use anyhow::Context as _;
use gix::ObjectId;

use super::point::{Options, Visit};
use crate::git::Repo;

/// Read every version of `path` on `branch` of `repo` into `v`.
pub(super) fn read(
    repo: &Repo,
    branch: &str,
    path: &Path,
    opts: &Options,
    v: &mut dyn Visit,
) -> anyhow::Result<()> {
    let gix = repo.gix();
    let tip = repo.resolve(branch)?;
    let shown = path.to_string_lossy().into_owned();
    let rel = shown.trim_start_matches("./").to_string();
    // Every commit of the branch, newest first (merges' sides too: a version is a version).
    let walk = gix
        .rev_walk([tip])
        .all()
        .context("cannot walk the branch's log")?;
    let mut blobs: Vec<(ObjectId, ObjectId)> = Vec::new();
    let mut have: HashSet<ObjectId> = HashSet::new();
    let mut commits = 0usize;
    for info in walk {
        let info = info.context("cannot walk the branch's log")?;
        commits += 1;
        let commit = gix.find_commit(info.id).context("cannot read a commit")?;
        let tree = commit.tree().context("cannot read a commit's tree")?;
        let Some(entry) = tree
            .lookup_entry_by_path(&rel)
            .with_context(|| format!("cannot read {rel} in {}", info.id))?
        else {
            continue;
        };
        if entry.mode().is_blob() && have.insert(entry.object_id()) {
            blobs.push((entry.object_id(), info.id));
        }
    }
    if blobs.is_empty() {
        crate::usage!(
            "no commit of `{branch}` ({commits} read) holds {rel}; give the file's path inside \
             the branch (benchmark-action's default is dev/bench/data.js)"
        );
    }
    let mut seen = HashSet::new();
    let mut fresh = 0usize;
    let versions = blobs.len();
    for (blob, commit) in blobs.into_iter().rev() {
        let data = gix
            .find_blob(blob)
            .with_context(|| format!("cannot read {rel} of {commit}"))?;
        let label = format!("{branch}:{rel} at {}", crate::git::short(&commit));
        fresh += super::action::read_bytes(&data.data, &label, opts, v, &mut seen)?;
    }
    v.note(format!(
        "read {versions} version{} of {rel} from the log of `{branch}` ({commits} commit{}): {fresh} distinct entries",
        if versions == 1 { "" } else { "s" },
        if commits == 1 { "" } else { "s" },
    ));
    Ok(())
}
