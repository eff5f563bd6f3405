//! The verdicts `find` reached, kept in the cache by test and range: `report` over a range
//! `find` searched states that verdict (its culprits, numbers and notes) instead of a new
//! search's, which the runs the first one stored could lead elsewhere.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::bisect::Outcome;
use crate::git::CommitInfo;
use crate::report::find::{ImportedGap, SearchFacts};

/// Verdicts kept per test: the ranges searched most recently.
const KEEP: usize = 16;

/// One commit of a saved verdict, as the report names it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SavedCommit {
    pub id: String,
    pub subject: String,
    pub author: String,
    pub time: i64,
}

impl SavedCommit {
    pub fn of(c: &CommitInfo) -> Self {
        SavedCommit {
            id: c.id.to_string(),
            subject: c.subject.clone(),
            author: c.author.clone(),
            time: c.time,
        }
    }

    /// The commit again; `None` for an id that does not parse (a hand-edited file).
    pub fn info(&self) -> Option<CommitInfo> {
        Some(CommitInfo {
            id: gix::ObjectId::from_hex(self.id.as_bytes()).ok()?,
            subject: self.subject.clone(),
            author: self.author.clone(),
            time: self.time,
        })
    }
}

/// What one `find` concluded over one range, with what its report shows of the search.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verdict {
    /// What the verdict depends on besides the range: the test's definition, the build
    /// recipe, whether merges were descended into. Another one is another search.
    pub definition: String,
    /// The range's old end and new end (40 hex): they fix the first-parent chain between.
    pub ends: (String, String),
    /// Seconds since the epoch when `find` reached it.
    pub at: u64,
    /// Where the searched chain starts on the range's chain (0: its old end; further in when
    /// imported rounds narrowed the search to a gap): the commits are the range's, resolved
    /// again, and only a merged branch's own are kept (`branches`).
    pub offset: usize,
    /// The commits of the merged branches searched, in the run's order after the chain.
    pub branches: Vec<SavedCommit>,
    pub searched: usize,
    pub blocks: Vec<(usize, usize)>,
    pub outcome: Outcome,
    pub probed: Vec<usize>,
    pub notes: Vec<String>,
    pub skips: Vec<(usize, String)>,
    pub merges: Vec<(usize, usize)>,
    pub deterministic: bool,
    pub imported: Option<ImportedGap>,
    pub facts: SearchFacts,
}

fn path(cache_root: &Path, test: &str) -> PathBuf {
    // A test's name is letters, digits, `-`, `_` and `.` (the config checks it): a file name.
    cache_root.join("verdicts").join(format!("{test}.json"))
}

fn read(path: &Path) -> Vec<Verdict> {
    // A verdict file that cannot be read (a newer shape, a damaged file) holds nothing to
    // replay: the report searches instead, as without it.
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// The verdict `find` reached for `test` over the range `ends` under `definition`, if kept.
pub fn load(
    cache_root: &Path,
    test: &str,
    definition: &str,
    ends: &(String, String),
) -> Option<Verdict> {
    read(&path(cache_root, test))
        .into_iter()
        .find(|v| v.definition == definition && &v.ends == ends)
}

/// Keep `v` as `test`'s verdict over its range (replacing an earlier one of the same range
/// and definition), durably: a temp file synced and renamed over the old one.
pub fn save(cache_root: &Path, test: &str, v: Verdict) -> anyhow::Result<()> {
    let path = path(cache_root, test);
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut all = read(&path);
    all.retain(|o| !(o.definition == v.definition && o.ends == v.ends));
    all.push(v);
    let drop = all.len().saturating_sub(KEEP);
    all.drain(..drop);
    crate::store::replace_file(
        &path,
        ".verdicts.json.",
        serde_json::to_string(&all)?.as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(definition: &str, ends: (&str, &str), note: &str) -> Verdict {
        Verdict {
            definition: definition.into(),
            ends: (ends.0.into(), ends.1.into()),
            at: 1,
            offset: 0,
            branches: Vec::new(),
            searched: 0,
            blocks: Vec::new(),
            outcome: Outcome::Inconclusive {
                reason: "r".into(),
                best_guess: None,
            },
            probed: Vec::new(),
            notes: vec![note.into()],
            skips: Vec::new(),
            merges: Vec::new(),
            deterministic: false,
            imported: None,
            facts: SearchFacts::default(),
        }
    }

    #[test]
    fn a_verdict_is_found_by_its_range_and_definition_and_replaced_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let ends = ("a".to_string(), "b".to_string());
        assert!(load(root, "t.x", "d", &ends).is_none());
        save(root, "t.x", verdict("d", ("a", "b"), "first")).unwrap();
        save(root, "t.x", verdict("other", ("a", "b"), "other recipe")).unwrap();
        save(root, "t.x", verdict("d", ("a", "c"), "other range")).unwrap();
        save(root, "t.x", verdict("d", ("a", "b"), "second")).unwrap();
        assert_eq!(load(root, "t.x", "d", &ends).unwrap().notes, ["second"]);
        assert_eq!(
            load(root, "t.x", "other", &ends).unwrap().notes,
            ["other recipe"]
        );
        // Another test's verdicts are its own.
        assert!(load(root, "t_x", "d", &ends).is_none());
        for i in 0..KEEP + 3 {
            save(root, "t.x", verdict("d", ("z", &i.to_string()), "n")).unwrap();
        }
        assert_eq!(read(&path(root, "t.x")).len(), KEEP);
        // A damaged file replays nothing (the report searches), and is written over.
        std::fs::write(path(root, "t.x"), b"{").unwrap();
        assert!(load(root, "t.x", "d", &ends).is_none());
        save(root, "t.x", verdict("d", ("a", "b"), "again")).unwrap();
        assert_eq!(load(root, "t.x", "d", &ends).unwrap().notes, ["again"]);
    }
}
