//! `perfbisect cache ls | gc [--max-size SIZE] | rm REV | prune`.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use bytesize::ByteSize;

use crate::cli::{CacheAction, CacheArgs, Global};
use crate::error::UsageError;
use crate::pipeline::Workspace;

use super::{locations, verbosity};

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

pub fn cache(g: &Global, args: CacheArgs) -> anyhow::Result<()> {
    let write = !matches!(args.action, CacheAction::Ls);
    let ws = Workspace::open(&locations(g), verbosity(g), write)?;
    let root = &ws.cache.root;
    let subject = |name: &str| -> String {
        name.get(..40)
            .and_then(|h| gix::ObjectId::from_hex(h.as_bytes()).ok())
            .and_then(|id| ws.repo.info(id).ok())
            .map(|i| i.subject)
            .unwrap_or_default()
    };
    match args.action {
        CacheAction::Ls => {
            let arts = entries(&root.join("artifacts"));
            let total: u64 = arts.iter().map(|e| e.size).sum();
            println!(
                "{} ({} cached build{}, {})",
                root.display(),
                arts.len(),
                if arts.len() == 1 { "" } else { "s" },
                ByteSize(total)
            );
            for e in &arts {
                println!(
                    "  {:<10} {:>10}  {}",
                    &e.name[..10.min(e.name.len())],
                    ByteSize(e.size).to_string(),
                    subject(&e.name)
                );
            }
            let failed = entries(&root.join("failed"));
            if !failed.is_empty() {
                println!("failed builds ({}):", failed.len());
                for e in &failed {
                    let why = fs::read_to_string(&e.path).unwrap_or_default();
                    println!(
                        "  {:<10} {} ({})",
                        &e.name[..10.min(e.name.len())],
                        subject(&e.name),
                        why.lines().next().unwrap_or("").trim()
                    );
                }
            }
        }
        CacheAction::Gc { max_size } => {
            let mut freed = 0u64;
            for e in entries(&ws.cache.tmp()) {
                freed += e.size;
                remove(&e.path)?;
            }
            if let Some(max) = max_size {
                let max: ByteSize = max.parse().map_err(|e| {
                    UsageError::err(format!("--max-size `{max}`: {e} (use e.g. 500M or 10G)"))
                })?;
                let arts = entries(&root.join("artifacts"));
                let mut total: u64 = arts.iter().map(|e| e.size).sum();
                // Oldest first: recently built commits are the likeliest to be measured again.
                for e in arts {
                    if total <= max.as_u64() {
                        break;
                    }
                    remove(&e.path)?;
                    total -= e.size;
                    freed += e.size;
                }
            }
            println!("freed {}", ByteSize(freed));
        }
        CacheAction::Rm { rev } => {
            let id = ws.repo.resolve(&rev)?;
            let hex = id.to_string();
            let mut n = 0;
            for dir in ["artifacts", "failed"] {
                for e in entries(&root.join(dir)) {
                    if e.name.starts_with(&hex) {
                        remove(&e.path)?;
                        n += 1;
                    }
                }
            }
            println!(
                "removed {n} cache entr{} of {}",
                if n == 1 { "y" } else { "ies" },
                &hex[..10]
            );
        }
        CacheAction::Prune => prune(&ws)?,
    }
    Ok(())
}

/// Rewrite each configured test's store without the samples of other test or build
/// definitions (under the cache lock, each file replaced through a temp file and a rename).
fn prune(ws: &Workspace) -> anyhow::Result<()> {
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
            println!(
                "{}: removed {} stale sample{}, kept {} record{}",
                test.name,
                p.removed,
                if p.removed == 1 { "" } else { "s" },
                p.kept,
                if p.kept == 1 { "" } else { "s" }
            );
            if p.corrupt_bytes > 0 {
                println!(
                    "  and left out {} corrupt byte{} that no load could read",
                    p.corrupt_bytes,
                    if p.corrupt_bytes == 1 { "" } else { "s" }
                );
            }
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
        println!(
            "left alone: results of test{} not in {}: {} (delete {} by hand if {} no longer needed)",
            if others.len() == 1 { "" } else { "s" },
            crate::pipeline::display_path(&ws.config.path),
            others.join(", "),
            if others.len() == 1 {
                "its file in results/"
            } else {
                "their files in results/"
            },
            if others.len() == 1 { "it is" } else { "they are" }
        );
    }
    println!(
        "pruned {} stale sample{}",
        total,
        if total == 1 { "" } else { "s" }
    );
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
