//! Why the culprit moved: the test run once under Valgrind's Cachegrind on the parent's build
//! and on the culprit's, per-function instruction counts of the whole process tree, and the
//! functions whose cost changed most. Profiles are kept in the cache beside the builds
//! (`cache/profiles/<commit>-<recipe>-<test>/cg.<pid>`, readable with `cg_annotate`), so a
//! report after `find` reuses them.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use gix::ObjectId;
use serde::Serialize;

use crate::config::{Metric, Test};
use crate::pipeline::workspace::Workspace;

/// How many changed functions a report lists.
pub const TOP: usize = 8;

/// Valgrind runs a program 10-50 times slower: the test's timeout is scaled by this.
const SLOWER: u32 = 50;

/// Instructions per function of one run: (file, function) → (instructions, first line with a
/// cost, 0 when unknown).
#[derive(Debug, Default, Clone)]
pub struct Profile {
    pub functions: HashMap<(String, String), (u64, u32)>,
    pub total: u64,
}

impl Profile {
    /// Add one Cachegrind output file (`fl=`, `fn=` and `line Ir ...` lines; `fi=`/`fe=`
    /// inlined code counts for the function it was inlined into).
    pub fn add_cachegrind(&mut self, text: &str) {
        let mut file = String::new();
        // The file the cost lines are in: the function's own, or one inlined into it.
        let mut lines_in = String::new();
        let mut func: Option<(String, String)> = None;
        let mut ir_col = 0usize;
        for line in text.lines() {
            if let Some(ev) = line.strip_prefix("events:") {
                ir_col = ev.split_whitespace().position(|e| e == "Ir").unwrap_or(0);
            } else if let Some(f) = line.strip_prefix("fl=") {
                file = source_path(f);
                lines_in = file.clone();
            } else if let Some(f) = line.strip_prefix("fn=") {
                func = Some((file.clone(), f.to_string()));
                lines_in = file.clone();
            } else if let Some(f) = line
                .strip_prefix("fi=")
                .or_else(|| line.strip_prefix("fe="))
            {
                // Inlined lines of another file: still the current function's cost.
                lines_in = source_path(f);
            } else if let Some(key) = &func {
                let mut it = line.split_whitespace();
                let (Some(l), Some(ir)) = (
                    it.next().and_then(|x| x.parse::<u32>().ok()),
                    it.nth(ir_col).and_then(|x| x.parse::<u64>().ok()),
                ) else {
                    continue;
                };
                let e = self.functions.entry(key.clone()).or_insert((0, 0));
                e.0 = e.0.saturating_add(ir);
                if l > 0 && lines_in == key.0 && (e.1 == 0 || l < e.1) {
                    e.1 = l;
                }
                self.total = self.total.saturating_add(ir);
            }
        }
    }

    /// Every `cg.*` file in `dir`.
    pub fn read_dir(dir: &Path) -> anyhow::Result<Profile> {
        let mut p = Profile::default();
        let mut names: Vec<PathBuf> = fs::read_dir(dir)
            .with_context(|| format!("cannot read {}", dir.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("cg."))
            })
            .collect();
        names.sort();
        for n in names {
            let text =
                fs::read_to_string(&n).with_context(|| format!("cannot read {}", n.display()))?;
            p.add_cachegrind(&text);
        }
        Ok(p)
    }
}

/// A source path as the project names it: one in a perfbisect worktree
/// (`.../worktrees/<slot>/src/x.c`) is relative to the worktree (`src/x.c`), the same for
/// every slot the two builds were made in.
fn source_path(p: &str) -> String {
    let mut rest = p;
    while let Some(i) = rest.find("/worktrees/") {
        let after = &rest[i + "/worktrees/".len()..];
        match after.split_once('/') {
            Some((slot, tail)) if !slot.is_empty() && slot.bytes().all(|b| b.is_ascii_digit()) => {
                return tail.to_string();
            }
            _ => rest = after,
        }
    }
    p.to_string()
}

/// One function whose cost changed.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    pub function: String,
    /// Source file, when the build has debug information (`???` otherwise).
    pub file: String,
    /// First line of the function with a cost, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    pub before: u64,
    pub after: u64,
    /// `after - before`.
    pub delta: i64,
    /// The change as % of the parent's total instructions.
    pub pct_of_total: f64,
    /// The change as % of the function's own instructions at the parent (`None` for a
    /// function the parent did not run).
    pub pct_of_function: Option<f64>,
}

/// A culprit (its position among a search's commits) and why it moved, or why that is not
/// known (no Valgrind, a test that cannot run under it).
pub type Profiled = (usize, Result<Why, String>);

/// The functions that moved between the parent's and the culprit's runs.
#[derive(Debug, Clone, Serialize)]
pub struct Why {
    pub parent: String,
    pub culprit: String,
    /// Instructions of the whole run, parent and culprit.
    pub total_before: u64,
    pub total_after: u64,
    /// The functions whose cost changed most, largest change first.
    pub changes: Vec<Change>,
    /// How much of the run's change the listed functions add up to: the sum of their changes
    /// (`delta`, with their signs) over `total_after - total_before` (1 = all of it; more
    /// than 1 when unlisted functions moved the other way); `None` when the totals are equal.
    pub explained: Option<f64>,
    /// Where the two profiles are (`cg_annotate` or `cg_diff` open them).
    pub parent_profile: String,
    pub culprit_profile: String,
}

/// The `top` functions whose instructions changed most from `before` to `after`.
pub fn diff(before: &Profile, after: &Profile, top: usize) -> (Vec<Change>, Option<f64>) {
    let mut keys: Vec<&(String, String)> = before.functions.keys().collect();
    keys.extend(
        after
            .functions
            .keys()
            .filter(|k| !before.functions.contains_key(*k)),
    );
    let mut changes: Vec<Change> = keys
        .into_iter()
        .map(|k| {
            let (b, lb) = before.functions.get(k).copied().unwrap_or((0, 0));
            let (a, la) = after.functions.get(k).copied().unwrap_or((0, 0));
            let delta = a as i64 - b as i64;
            let line = if la > 0 { la } else { lb };
            Change {
                function: k.1.clone(),
                file: k.0.clone(),
                line: (line > 0).then_some(line),
                before: b,
                after: a,
                delta,
                pct_of_total: if before.total > 0 {
                    delta as f64 / before.total as f64 * 100.0
                } else {
                    0.0
                },
                pct_of_function: (b > 0).then(|| delta as f64 / b as f64 * 100.0),
            }
        })
        .filter(|c| c.delta != 0)
        .collect();
    // Changes too small to matter (a few instructions of printing a longer number) are left
    // out: under 1 % of the run's change, or of a ten-thousandth of its total when the total
    // did not move.
    let step = (after.total as i64 - before.total as i64).unsigned_abs();
    let floor = if step > 0 {
        step / 100
    } else {
        before.total / 10_000
    };
    changes.retain(|c| c.delta.unsigned_abs() > floor);
    changes.sort_by(|x, y| {
        y.delta
            .unsigned_abs()
            .cmp(&x.delta.unsigned_abs())
            .then(x.function.cmp(&y.function))
    });
    changes.truncate(top);
    let step = after.total as i64 - before.total as i64;
    let explained = (step != 0).then(|| {
        // Every listed change with its sign, over the step: a function that got cheaper
        // offsets one that got dearer, as in the run's total (summing only the changes that go
        // the step's way said "123 %" of a step the list accounts for 99 % of).
        let sum: i64 = changes.iter().map(|c| c.delta).sum();
        sum as f64 / step as f64
    });
    (changes, explained)
}

/// Whether a test's culprit is worth profiling by default: its metric is a cost of running
/// code (times, instructions, a number the command prints), not a size or a peak of memory,
/// and not a benchmark harness's: criterion, Google Benchmark and hyperfine run for a set
/// time, so a faster build runs more iterations and its instructions are not comparable
/// (`--why` still asks for it).
pub fn worth_profiling(test: &Test) -> bool {
    !test.deterministic && !matches!(test.metric, Metric::MaxRss | Metric::Harness(_))
}

/// The directory of `commit`'s profile for `test`.
fn profile_dir(ws: &Workspace, test: &Test, commit: &ObjectId) -> PathBuf {
    dir_in(&ws.cache.root, ws.config.build.recipe_hash(), test, commit)
}

/// [`profile_dir`] in the cache at `root`, for builds of `recipe`.
fn dir_in(root: &Path, recipe: u64, test: &Test, commit: &ObjectId) -> PathBuf {
    root.join("profiles").join(format!(
        "{commit}-{recipe:016x}-{:016x}",
        test.definition_hash()
    ))
}

/// Profile `test` on `commit` (built), or reuse the profile kept from before; `made` counts
/// the profiles run now.
fn profile_of(
    ws: &Workspace,
    test: &Test,
    commit: ObjectId,
    valgrind: &Path,
    made: &mut usize,
) -> anyhow::Result<Result<(Profile, PathBuf), String>> {
    let dir = profile_dir(ws, test, &commit);
    if dir.is_dir() {
        if let Ok(p) = Profile::read_dir(&dir) {
            if p.total > 0 {
                return Ok(Ok((p, dir)));
            }
        }
    }
    let (artifacts, _) = ws.ensure_built(&commit)?;
    let Some(artifacts) = artifacts else {
        return Ok(Err(format!(
            "{} does not build",
            crate::git::short(&commit)
        )));
    };
    let parent = dir.parent().expect("profiles have a parent");
    fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    // Made in a temp dir and renamed into place: a profile there is whole.
    let tmp = tempfile::Builder::new()
        .prefix(".profile.")
        .tempdir_in(parent)
        .with_context(|| format!("cannot create a directory in {}", parent.display()))?;
    ws.note(&format!(
        "perfbisect: profiling {} under Cachegrind, one run (10-50 times slower than a plain \
         run; --no-why skips this), to see which functions moved",
        crate::git::short(&commit)
    ));
    let ctx = ws.run_context(test, commit, &artifacts);
    *made += 1;
    let beat = ws.progress.heartbeat(format!(
        "profiling {} under Cachegrind",
        crate::git::short(&commit)
    ));
    let once = crate::measure::profile_once(&ctx, valgrind, tmp.path(), SLOWER)?;
    drop(beat);
    if let Err(why) = once {
        return Ok(Err(why));
    }
    let p = Profile::read_dir(tmp.path())?;
    let _ = fs::remove_dir_all(&dir);
    fs::rename(tmp.keep(), &dir).with_context(|| format!("cannot write {}", dir.display()))?;
    Ok(Ok((p, dir)))
}

/// The answer from profiles already kept in the cache at `root` (made by `find` or `report`
/// for builds of `recipe`), without running anything: `culprit`'s, and the nearest of `before`
/// (newest first) that has one.
pub fn cached(
    root: &Path,
    recipe: u64,
    test: &Test,
    before: &[ObjectId],
    culprit: ObjectId,
) -> Option<Why> {
    let adir = dir_in(root, recipe, test, &culprit);
    if !adir.is_dir() {
        return None;
    }
    let (parent, bdir) = before
        .iter()
        .map(|p| (*p, dir_in(root, recipe, test, p)))
        .find(|(_, d)| d.is_dir())?;
    let (b, a) = (
        Profile::read_dir(&bdir).ok()?,
        Profile::read_dir(&adir).ok()?,
    );
    Some(answer((parent, &b, &bdir), (culprit, &a, &adir)))
}

/// The functions that moved from the parent's profile to the culprit's, each with its commit
/// and where it is kept.
fn answer(
    (parent, b, bdir): (ObjectId, &Profile, &Path),
    (culprit, a, adir): (ObjectId, &Profile, &Path),
) -> Why {
    let (changes, explained) = diff(b, a, TOP);
    Why {
        parent: parent.to_string(),
        culprit: culprit.to_string(),
        total_before: b.total,
        total_after: a.total,
        changes,
        explained,
        parent_profile: crate::base::paths::display_path(bdir),
        culprit_profile: crate::base::paths::display_path(adir),
    }
}

/// Profile `test` on `parent` and `culprit` and list the functions that moved. `Err` inside:
/// why there is no answer (no Valgrind, a test that cannot run under it), for the report to
/// say beside the culprit.
pub fn why(
    ws: &Workspace,
    test: &Test,
    parent: ObjectId,
    culprit: ObjectId,
) -> anyhow::Result<Result<Why, String>> {
    why_counted(ws, test, parent, culprit, &mut 0)
}

/// [`why`], adding the profiles it ran now (not those kept from before) to `made`.
pub fn why_counted(
    ws: &Workspace,
    test: &Test,
    parent: ObjectId,
    culprit: ObjectId,
    made: &mut usize,
) -> anyhow::Result<Result<Why, String>> {
    let valgrind = match crate::process::counter::select(crate::config::harness::Choice::Cachegrind)
    {
        Ok(s) => match s.counter {
            crate::process::counter::Counter::Cachegrind { valgrind, .. } => valgrind,
            crate::process::counter::Counter::Perf => {
                return Ok(Err("Valgrind's Cachegrind is not available".into()))
            }
        },
        Err(e) => return Ok(Err(e.to_string())),
    };
    let (before, bdir) = match profile_of(ws, test, parent, &valgrind, made)? {
        Ok(x) => x,
        Err(e) => return Ok(Err(e)),
    };
    let (after, adir) = match profile_of(ws, test, culprit, &valgrind, made)? {
        Ok(x) => x,
        Err(e) => return Ok(Err(e)),
    };
    Ok(Ok(answer(
        (parent, &before, &bdir),
        (culprit, &after, &adir),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "desc: I1 cache:\ncmd: ./app\nevents: Ir\nfl=/c/worktrees/0/app.c\nfn=main\n5 10\n6 20\nfn=work\n12 1000\nfl=???\nfn=_start\n0 7\nsummary: 1037\n";
    const CULPRIT: &str = "events: Ir\nfl=/c/worktrees/1/app.c\nfn=main\n5 10\n6 20\nfn=work\n12 1200\nfi=inl.h\n3 30\nfe=app.c\nfn=new_fn\n40 5\nfl=???\nfn=_start\n0 7\nsummary: 1272\n";

    #[test]
    fn functions_are_summed_and_the_biggest_change_comes_first() {
        let mut b = Profile::default();
        b.add_cachegrind(PARENT);
        let mut a = Profile::default();
        a.add_cachegrind(CULPRIT);
        assert_eq!(b.total, 1037);
        assert_eq!(a.total, 1272);
        let (changes, explained) = diff(&b, &a, 8);
        assert_eq!(changes[0].function, "work");
        assert_eq!(
            changes[0].delta, 230,
            "inlined lines count for the function"
        );
        assert_eq!(
            changes[0].line,
            Some(12),
            "its own file's line, not an inlined one's"
        );
        assert_eq!(
            changes[0].file, "app.c",
            "relative to the worktree, whichever slot"
        );
        assert_eq!(changes[1].function, "new_fn");
        assert_eq!(changes.len(), 2, "unchanged functions are not listed");
        assert!((explained.unwrap() - 1.0).abs() < 1e-9);
        assert!((changes[0].pct_of_total - 230.0 / 1037.0 * 100.0).abs() < 1e-9);
    }

    #[test]
    fn several_processes_add_up_and_a_top_cut_explains_less() {
        let mut b = Profile::default();
        b.add_cachegrind(PARENT);
        b.add_cachegrind("events: Ir\nfl=sh.c\nfn=sh_main\n1 100\n");
        let mut a = Profile::default();
        a.add_cachegrind(CULPRIT);
        a.add_cachegrind("events: Ir\nfl=sh.c\nfn=sh_main\n1 90\n");
        assert_eq!(b.total, 1137);
        let (changes, explained) = diff(&b, &a, 1);
        assert_eq!(changes.len(), 1);
        // +230 of a +225 step (the shell got 10 cheaper): more than all of it.
        assert!(explained.unwrap() > 1.0);
    }

    #[test]
    fn the_share_explained_is_the_signed_sum_over_the_step() {
        let run = |a, b, c, d| {
            let mut p = Profile::default();
            p.add_cachegrind(&format!(
                "events: Ir\nfl=x.c\nfn=a\n1 {a}\nfn=b\n2 {b}\nfn=c\n3 {c}\nfn=d\n4 {d}\n"
            ));
            p
        };
        let before = run(100_000, 100_000, 100_000, 100_000);
        // +12300, -2300 and -100 listed; +99 of `d` is under the floor (1 % of the step).
        let after = run(112_300, 97_700, 99_900, 100_099);
        let (changes, explained) = diff(&before, &after, TOP);
        assert_eq!(changes.len(), 3, "{changes:?}");
        // 9900 of the 9999 the run moved: 99 %, not the 123 % of the dearer one alone.
        assert!((explained.unwrap() - 9900.0 / 9999.0).abs() < 1e-12);
    }
}
