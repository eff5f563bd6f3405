//! Care of the cache (`cache ls | gc | rm | prune`): what it holds and takes on disk, evicting
//! the least recently used builds and worktrees to a size, removing what kills left behind,
//! one commit's builds, and samples of other test or build definitions. Results are never
//! evicted. Each function returns the text that says what it found or did.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use bytesize::ByteSize;

use crate::build::cas;
use crate::pipeline::workspace::Workspace;

/// `cache ls --format json`.
#[derive(serde::Serialize)]
struct JsonLs {
    root: String,
    total_bytes: u64,
    builds: Vec<JsonBuild>,
    failed: Vec<JsonBuild>,
}

#[derive(serde::Serialize)]
struct JsonBuild {
    commit: String,
    /// The build recipe's hash (hex), as in the entry's name.
    recipe: String,
    subject: String,
    bytes: u64,
    /// Failed builds: the first line of why.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// Built (or failed) by another build recipe than the config's now: no command of this
    /// config uses it (a failure of it is not this config's failure).
    other_recipe: bool,
}

struct Entry {
    path: PathBuf,
    name: String,
    size: u64,
    modified: SystemTime,
}

fn entries(dir: &Path) -> Vec<Entry> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let path = e.path();
        let modified = e
            .metadata()
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        out.push(Entry {
            name: e.file_name().to_string_lossy().into_owned(),
            size: du(&path),
            path,
            modified,
        });
    }
    out.sort_by_key(|e| e.modified);
    out
}

fn du(p: &Path) -> u64 {
    match fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => fs::read_dir(p)
            .map(|rd| rd.flatten().map(|e| du(&e.path())).sum())
            .unwrap_or(0),
        Ok(m) => m.len(),
        Err(_) => 0,
    }
}

/// `cache ls`: every cached build with its size (as copies would take), the samples stored
/// for it and whether it shares its build with other commits; failed builds with why; and what
/// the cache takes on disk.
pub fn ls(ws: &Workspace, subject: &dyn Fn(&str) -> String) -> String {
    let mut o = String::new();
    let root = &ws.cache.root;
    let store = ws.cache.store();
    // Samples per commit, over every test and fingerprint.
    let mut samples: std::collections::HashMap<String, usize> = Default::default();
    let mut total_samples = 0usize;
    let mut commits_with_samples = std::collections::HashSet::new();
    for t in store.tests() {
        if let Ok(l) = store.load(&t) {
            for s in &l.samples {
                let hex = s.commit_id().to_string();
                commits_with_samples.insert(hex.clone());
                *samples.entry(hex).or_default() += 1;
                total_samples += 1;
            }
        }
    }
    let arts = entries(&root.join("artifacts"));
    let mut digests: std::collections::HashMap<String, usize> = Default::default();
    let mut rows = Vec::new();
    let mut copies = 0u64;
    for e in &arts {
        let (commit, recipe) = split_entry(&e.name);
        let manifest = commit.and_then(|c| cas::read_manifest(&ws.cache, &c, recipe));
        let size = manifest.as_ref().map_or(e.size, |m| m.bytes());
        copies += size;
        if let Some(m) = &manifest {
            *digests.entry(m.digest.clone()).or_default() += 1;
        }
        rows.push((e, size, manifest.map(|m| m.digest)));
    }
    let on_disk = cas::disk_bytes(&ws.cache);
    let worktrees = du(&ws.cache.worktrees());
    writeln!(o,
        "{} ({} cached build{}: {} as plain copies, {} on disk, {} per build; worktrees {}; results {})",
        root.display(),
        arts.len(),
        if arts.len() == 1 { "" } else { "s" },
        ByteSize(copies),
        ByteSize(on_disk),
        ByteSize(on_disk / arts.len().max(1) as u64),
        ByteSize(worktrees),
        ByteSize(du(&root.join("results")))
    )
    .unwrap();
    for (e, size, digest) in &rows {
        let hex = e.name.get(..40).unwrap_or(&e.name);
        let n = samples.get(hex).copied().unwrap_or(0);
        let same = digest
            .as_ref()
            .and_then(|d| digests.get(d))
            .filter(|&&k| k > 1)
            .map(|k| {
                format!(
                    " [build identical to {} other{}]",
                    k - 1,
                    if *k == 2 { "" } else { "s" }
                )
            })
            .unwrap_or_default();
        writeln!(
            o,
            "  {:<10} {:>10}  {:>5} sample{}  {}{same}",
            &e.name[..10.min(e.name.len())],
            ByteSize(*size).to_string(),
            n,
            if n == 1 { " " } else { "s" },
            subject(&e.name)
        )
        .unwrap();
    }
    let failed = entries(&root.join("failed"));
    if !failed.is_empty() {
        writeln!(o, "failed builds ({}):", failed.len()).unwrap();
        let current = ws.config.build.recipe_hash();
        for e in &failed {
            let why = fs::read_to_string(&e.path).unwrap_or_default();
            let (_, recipe) = split_entry(e.name.trim_end_matches(".txt"));
            writeln!(
                o,
                "  {:<10} {} ({}){}",
                &e.name[..10.min(e.name.len())],
                subject(&e.name),
                why.lines().next().unwrap_or("").trim(),
                if recipe == current {
                    ""
                } else {
                    " [another build recipe: this config does not build it so]"
                }
            )
            .unwrap();
        }
    }
    writeln!(o,
        "results: {total_samples} sample{} of {} commit{} ({} of them not cached now: results are kept when builds are evicted)",
        if total_samples == 1 { "" } else { "s" },
        commits_with_samples.len(),
        if commits_with_samples.len() == 1 { "" } else { "s" },
        commits_with_samples
            .iter()
            .filter(|c| !arts.iter().any(|e| e.name.starts_with(c.as_str())))
            .count()
    ).unwrap();
    o
}

/// `<commit>-<recipe>` of an artifact entry.
fn split_entry(name: &str) -> (Option<gix::ObjectId>, u64) {
    let commit = name
        .get(..40)
        .and_then(|h| gix::ObjectId::from_hex(h.as_bytes()).ok());
    let recipe = name
        .get(41..)
        .and_then(|r| u64::from_str_radix(r, 16).ok())
        .unwrap_or(0);
    (commit, recipe)
}

/// `cache gc`: remove temp files (`temp_prefixes` names those of other writers) (in `tmp/` and those left beside the stores) and objects
/// nothing links; with a size, evict the least
/// recently used artifact entries and worktree slots until the cache (everything in it,
/// results included) fits, or nothing evictable is left. Results are never removed, nor the
/// manifests that say which builds were identical.
pub fn gc(ws: &Workspace, max: Option<u64>, temp_prefixes: &[&str]) -> anyhow::Result<String> {
    let mut o = String::new();
    let root = &ws.cache.root;
    let before = du_cache(ws);
    for e in entries(&ws.cache.tmp()) {
        remove(&e.path)?;
    }
    // Rewrites of a store (import, merge, prune) write a temp file beside it: one a kill left
    // behind is removed too (this process holds the lock, so no rewrite is under way).
    ws.cache.store().remove_temp_files()?;
    for dir in [
        "fingerprints",
        "manifests",
        "failed",
        "stale",
        "calibration",
        "verdicts",
    ] {
        remove_merge_temps(&root.join(dir), temp_prefixes)?;
    }
    cas::remove_unused_objects(&ws.cache)?;
    let (mut builds, mut slots) = (0usize, 0usize);
    if let Some(max) = max {
        // Candidates by last use: an entry's time is set each time it is measured, a slot's
        // `.commit` file each time it is switched to another commit.
        let mut cands: Vec<(SystemTime, PathBuf, bool)> = entries(&root.join("artifacts"))
            .into_iter()
            .map(|e| (e.modified, e.path, true))
            .collect();
        for e in entries(&ws.cache.worktrees()) {
            if e.name.ends_with(".commit") {
                continue;
            }
            let marker = ws.cache.worktrees().join(format!("{}.commit", e.name));
            let used = fs::metadata(&marker)
                .and_then(|m| m.modified())
                .unwrap_or(e.modified);
            cands.push((used, e.path, false));
        }
        cands.sort_by_key(|c| c.0);
        // The size is taken once and then reduced by what each eviction frees: walking the
        // cache after each one would be quadratic in the number of builds.
        let mut total = du_cache(ws);
        for (_, path, is_build) in cands {
            if total <= max {
                break;
            }
            if is_build {
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                let (commit, recipe) = split_entry(name.as_deref().unwrap_or(""));
                let manifest = commit.and_then(|c| cas::read_manifest(&ws.cache, &c, recipe));
                let plain = cas::unlinked_bytes(&path);
                remove(&path)?;
                let objects = match &manifest {
                    Some(m) => cas::release(&ws.cache, m)?,
                    None => cas::remove_unused_objects(&ws.cache)?.1,
                };
                total = total.saturating_sub(plain + objects);
                builds += 1;
            } else {
                let size = du(&path);
                // The marker first: a slot without it is checked out from scratch.
                let mut marker = path.clone().into_os_string();
                marker.push(".commit");
                let _ = fs::remove_file(&marker);
                remove(&path)?;
                total = total.saturating_sub(size);
                slots += 1;
            }
        }
        let now = du_cache(ws);
        if now > max {
            writeln!(o,
                "the cache still takes {} after evicting every build and worktree: stored results and logs are kept",
                ByteSize(now)
            ).unwrap();
        }
    }
    let after = du_cache(ws);
    writeln!(
        o,
        "freed {} (evicted {builds} build{} and {slots} worktree{}); the cache takes {}",
        ByteSize(before.saturating_sub(after)),
        if builds == 1 { "" } else { "s" },
        if slots == 1 { "" } else { "s" },
        ByteSize(after)
    )
    .unwrap();
    Ok(o)
}

/// What the cache takes on disk: artifacts (objects once, plain copies) and everything else
/// except the demo's folder.
fn du_cache(ws: &Workspace) -> u64 {
    let root = &ws.cache.root;
    let rest: u64 = fs::read_dir(root)
        .map(|rd| {
            rd.flatten()
                .filter(|e| {
                    let n = e.file_name();
                    !matches!(n.to_str(), Some("artifacts" | "objects" | "demo"))
                })
                .map(|e| du(&e.path()))
                .sum()
        })
        .unwrap_or(0);
    cas::disk_bytes(&ws.cache) + rest
}

/// Rewrite each configured test's store without the samples of other test or build
/// definitions (under the cache lock, each file replaced through a temp file and a rename).
pub fn prune(ws: &Workspace) -> anyhow::Result<String> {
    let mut o = String::new();
    let store = ws.cache.store();
    let recipe = ws.config.build.recipe_hash();
    let mut total = 0;
    for test in ws.config.tests.values() {
        let th = test.definition_hash();
        // Imported rows are never stale by this config (see `Workspace::samples`).
        let p = store.prune(&test.name, &|s| {
            s.import.is_none() && (s.test_hash != th || s.recipe_hash != recipe)
        })?;
        total += p.removed;
        if p.removed > 0 {
            writeln!(
                o,
                "{}: removed {} stale sample{}, kept {} record{}",
                test.name,
                p.removed,
                if p.removed == 1 { "" } else { "s" },
                p.kept,
                if p.kept == 1 { "" } else { "s" }
            )
            .unwrap();
        }
        if p.reframed > 0 {
            writeln!(
                o,
                "{}: framed {} batch{} of records again (an older `cache prune` had left {} unread)",
                test.name,
                p.reframed,
                if p.reframed == 1 { "" } else { "es" },
                if p.reframed == 1 { "it" } else { "them" },
            )
            .unwrap();
        }
        if (p.removed > 0 || p.reframed > 0) && p.corrupt_bytes > 0 {
            writeln!(
                o,
                "  and left out {} corrupt byte{} that no load could read",
                p.corrupt_bytes,
                if p.corrupt_bytes == 1 { "" } else { "s" }
            )
            .unwrap();
        }
        // The note about stale samples is news again if some come back.
        let _ = store.stale_note(&test.name, 0);
    }
    let others: Vec<String> = store
        .tests()
        .into_iter()
        .filter(|t| !ws.config.tests.contains_key(t))
        .collect();
    if !others.is_empty() {
        writeln!(o,
            "left alone: results of test{} not in {}: {} (delete {} by hand if {} no longer needed)",
            if others.len() == 1 { "" } else { "s" },
            crate::base::paths::display_path(&ws.config.path),
            others.join(", "),
            if others.len() == 1 {
                "its file in results/"
            } else {
                "their files in results/"
            },
            if others.len() == 1 { "it is" } else { "they are" }
        ).unwrap();
    }
    writeln!(
        o,
        "pruned {} stale sample{}",
        total,
        if total == 1 { "" } else { "s" }
    )
    .unwrap();
    Ok(o)
}

/// Temp files a kill left in `dir`: those named by `temp_prefixes` (merge's copies), and the files written through a temp name
/// and a rename (manifests, fingerprints, stale-build records, calibrations, kept verdicts;
/// `.tmp` from older versions).
fn remove_merge_temps(dir: &Path, temp_prefixes: &[&str]) -> anyhow::Result<()> {
    const PREFIXES: [&str; 6] = [
        ".manifest.",
        ".fingerprint.",
        ".stale.",
        ".calibration.",
        ".verdicts.json.",
        ".tmp",
    ];
    for e in entries(dir) {
        if temp_prefixes.iter().any(|p| e.name.starts_with(p))
            || PREFIXES.iter().any(|p| e.name.starts_with(p))
        {
            remove(&e.path)?;
        }
    }
    Ok(())
}

fn remove(p: &Path) -> anyhow::Result<()> {
    let r = if p.is_dir() {
        fs::remove_dir_all(p)
    } else {
        fs::remove_file(p)
    };
    r.map_err(|e| anyhow::anyhow!("cannot remove {}: {e}", p.display()))
}

/// `cache ls --format json`: every cached and failed build, and what the builds take.
pub fn ls_json(ws: &Workspace, subject: &dyn Fn(&str) -> String) -> anyhow::Result<String> {
    let root = &ws.cache.root;
    let split = |name: &str| -> (String, String) {
        match name.split_once('-') {
            Some((c, r)) => (c.to_string(), r.trim_end_matches(".txt").to_string()),
            None => (name.to_string(), String::new()),
        }
    };
    let arts = entries(&root.join("artifacts"));
    let failed = entries(&root.join("failed"));
    let current = format!("{:016x}", ws.config.build.recipe_hash());
    let out = JsonLs {
        root: root.display().to_string(),
        total_bytes: arts.iter().map(|e| e.size).sum(),
        builds: arts
            .iter()
            .map(|e| {
                let (commit, recipe) = split(&e.name);
                let other_recipe = recipe != current;
                JsonBuild {
                    subject: subject(&e.name),
                    commit,
                    recipe,
                    bytes: e.size,
                    reason: None,
                    other_recipe,
                }
            })
            .collect(),
        failed: failed
            .iter()
            .map(|e| {
                let (commit, recipe) = split(&e.name);
                let other_recipe = recipe != current;
                let why = fs::read_to_string(&e.path).unwrap_or_default();
                JsonBuild {
                    subject: subject(&e.name),
                    commit,
                    recipe,
                    bytes: e.size,
                    reason: Some(why.lines().next().unwrap_or("").trim().to_string()),
                    other_recipe,
                }
            })
            .collect(),
    };
    Ok(crate::report::json::json_pretty(&out)?)
}

/// `cache rm REV`: remove the builds (and their logs and manifests) of commit `id`; its stored
/// results stay.
pub fn rm(ws: &Workspace, id: gix::ObjectId) -> anyhow::Result<String> {
    let root = &ws.cache.root;
    let hex = id.to_string();
    let before = cas::disk_bytes(&ws.cache);
    let mut n = 0;
    for dir in ["artifacts", "failed", "manifests", "logs"] {
        for e in entries(&root.join(dir)) {
            if e.name.starts_with(&hex) {
                remove(&e.path)?;
                if matches!(dir, "artifacts" | "failed") {
                    n += 1;
                }
            }
        }
    }
    cas::remove_unused_objects(&ws.cache)?;
    let freed = before.saturating_sub(cas::disk_bytes(&ws.cache));
    Ok(format!(
        "removed {n} cache entr{} of {} ({} freed); its stored results stay",
        if n == 1 { "y" } else { "ies" },
        &hex[..10],
        ByteSize(freed)
    ))
}
