//! `perfbisect merge CACHE...`: add the samples of other caches' result stores (the shards of
//! a CI matrix, each run with `run --shard I/N`) to this cache. A sample already here is not
//! added again (samples are compared whole, counted with multiplicity), so merging twice, or
//! merging a store into itself, adds nothing; shards that all started from one restored store
//! carry its samples, which count once. Each test's file takes its new samples in one
//! atomic rewrite, and only once every source store has been read: one that cannot be read
//! (or holds no store) stops the merge before anything is written. The fingerprints, build manifests and failed-build records that come with
//! the samples are copied when this cache lacks them, so reports can name the machines, share
//! samples between identical builds and mark the commits that do not build. Builds come too
//! (a runner's `run --build-only`): each one this cache lacks is put together from the
//! source's content-addressed objects ([`crate::build::carry`]), so `run` here measures
//! without building. A test whose numbers depend on the machine ([`crate::shards`]) and whose
//! samples now come from several fingerprints is warned about.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::cli::{Global, MergeArgs};
use crate::error::UsageError;
use crate::pipeline::workspace::Workspace;
use crate::store::{encode_frame, Store};

use super::common::{locations, verbosity};

pub fn merge(g: &Global, args: MergeArgs) -> anyhow::Result<()> {
    let ws = Workspace::open(&locations(g), verbosity(g), true)?;
    let dest = ws.cache.store();
    let sources = sources(&args.caches)?;
    // Every source store is read (and every sample of it encoded) before anything is
    // written: an unreadable or corrupt source stops the merge with this cache unchanged.
    let mut tests: Vec<String> = sources
        .iter()
        .flat_map(|(_, r)| Store::new(r).tests())
        .collect();
    tests.sort();
    tests.dedup();
    let mut plan: Vec<(&String, Vec<crate::store::Sample>, usize)> = Vec::new();
    let mut mixed = Vec::new();
    for test in &tests {
        let here = dest.load(test).with_context(|| {
            format!(
                "cannot read {}; nothing was merged",
                crate::base::paths::display_path(&dest.path(test))
            )
        })?;
        let (new, present) = new_samples(&ws, test, &here.samples, &sources)?;
        if let Some(m) = machines_mixed(&ws, test, &here.samples, &new) {
            mixed.push(m);
        }
        plan.push((test, new, present));
    }
    let (copies, carried) = what_else_comes(&ws, &sources)?;

    // Builds first: samples whose build is here are measured-and-built, never the reverse.
    for c in &carried {
        crate::build::carry::put(&ws.cache, c)
            .with_context(|| format!("cannot bring the build {}", c.name))?;
    }

    let mut added_total = 0usize;
    let mut present_total = 0usize;
    for (test, new, present) in &plan {
        dest.add_atomically(test, new)
            .with_context(|| format!("cannot add the merged samples of test `{test}`"))?;
        if !new.is_empty() || *present > 0 {
            println!(
                "{test}: added {} sample{}, {present} already here",
                new.len(),
                if new.len() == 1 { "" } else { "s" }
            );
        }
        added_total += new.len();
        present_total += present;
    }
    let copied = copies.len();
    for (dest, bytes) in copies {
        write_new(&dest, &bytes)?;
    }
    print_summary(sources.len(), added_total, present_total, copied, &carried);
    warn_mixed(&ws, mixed);
    Ok(())
}

/// Each cache named, as (its root, its result store's folder); every one is checked before
/// anything is written.
fn sources(caches: &[PathBuf]) -> anyhow::Result<Vec<(PathBuf, PathBuf)>> {
    let mut sources: Vec<(PathBuf, PathBuf)> = Vec::new();
    for c in caches {
        let shown = crate::base::paths::display_path(c);
        let results = if c.join("results").is_dir() {
            c.join("results")
        } else if has_stores(c) {
            c.clone()
        } else if c.exists() {
            crate::usage!(
                "{shown}: no result store there (neither {shown}/results/ nor .pbs files)"
            );
        } else {
            crate::usage!("{shown}: no such directory");
        };
        let root = if results.ends_with("results") {
            results.parent().unwrap_or(&results).to_path_buf()
        } else {
            results.clone()
        };
        sources.push((root, results));
    }
    Ok(sources)
}

/// The samples of `test` in the sources that this cache (holding `here`) lacks, and how many
/// of the sources' samples it already holds.
fn new_samples(
    ws: &Workspace,
    test: &str,
    here: &[crate::store::Sample],
    sources: &[(PathBuf, PathBuf)],
) -> anyhow::Result<(Vec<crate::store::Sample>, usize)> {
    let mut have: HashMap<[u8; 32], usize> = HashMap::new();
    for s in here {
        *have.entry(key(&encode_frame(s)?)).or_default() += 1;
    }
    let mut new = Vec::new();
    let mut present = 0usize;
    for (_, results) in sources {
        let src = Store::new(results);
        let loaded = src.load(test).with_context(|| {
            format!(
                "cannot read {}; nothing was merged",
                crate::base::paths::display_path(&src.path(test))
            )
        })?;
        for w in &loaded.warnings {
            ws.warn(w);
        }
        // The union as a multiset: a sample this cache (or an earlier source) already holds
        // as often as this source does is not added again. Shards that started from one
        // restored store all carry its samples, which must count once.
        let mut seen: HashMap<[u8; 32], usize> = HashMap::new();
        for s in loaded.samples {
            let k = key(&encode_frame(&s).with_context(|| {
                format!(
                    "{}: a record cannot be stored again; nothing was merged",
                    crate::base::paths::display_path(&src.path(test))
                )
            })?);
            let n = seen.entry(k).or_default();
            *n += 1;
            let held = have.entry(k).or_default();
            if *n > *held {
                *held += 1;
                new.push(s);
            } else {
                present += 1;
            }
        }
    }
    Ok((new, present))
}

/// A configured test whose numbers depend on the machine and whose samples, once merged,
/// come from several fingerprints: its name, why it depends, and the fingerprints.
fn machines_mixed(
    ws: &Workspace,
    test: &str,
    here: &[crate::store::Sample],
    new: &[crate::store::Sample],
) -> Option<(String, crate::pipeline::shards::Dependence, BTreeSet<u64>)> {
    let t = ws.config.tests.get(test)?;
    let dep = crate::pipeline::shards::dependence(t);
    let fps = crate::pipeline::shards::fingerprints(
        here.iter().chain(new),
        t.definition_hash(),
        ws.config.build.recipe_hash(),
    );
    (!dep.independent() && fps.len() > 1).then(|| (test.to_string(), dep, fps))
}

/// Files to copy into this cache, as (where each goes, its bytes).
type Copies = Vec<(PathBuf, Vec<u8>)>;

/// What comes besides samples, read now: the fingerprints, manifests, failed-build records
/// and logs this cache lacks, as (where each goes, its bytes), and the builds to carry.
fn what_else_comes(
    ws: &Workspace,
    sources: &[(PathBuf, PathBuf)],
) -> anyhow::Result<(Copies, Vec<crate::build::carry::Carried>)> {
    let mut copies = Vec::new();
    let mut carried: Vec<crate::build::carry::Carried> = Vec::new();
    for (root, _) in sources {
        for dir in ["fingerprints", "manifests", "failed", "logs"] {
            copies.extend(missing(&root.join(dir), &ws.cache.root.join(dir))?);
        }
        let taken: Vec<String> = carried.iter().map(|c| c.name.clone()).collect();
        carried.extend(crate::build::carry::plan(root, &ws.cache, &taken)?);
    }
    Ok((copies, carried))
}

/// The merge's closing line: caches merged, samples added and already here, builds brought
/// and records copied.
fn print_summary(
    sources: usize,
    added_total: usize,
    present_total: usize,
    copied: usize,
    carried: &[crate::build::carry::Carried],
) {
    let builds = if carried.is_empty() {
        String::new()
    } else {
        let bytes: u64 = carried.iter().map(|c| c.bytes()).sum();
        format!(
            "; brought {} build{} ({})",
            carried.len(),
            if carried.len() == 1 { "" } else { "s" },
            bytesize::ByteSize::b(bytes)
        )
    };
    println!(
        "merged {} cache{}: added {added_total} sample{}, {present_total} already here{builds}{}",
        sources,
        if sources == 1 { "" } else { "s" },
        if added_total == 1 { "" } else { "s" },
        if copied > 0 {
            format!("; copied {copied} fingerprint, manifest and failed-build record(s)")
        } else {
            String::new()
        }
    );
}

/// Warns about each test whose samples now mix machines its numbers depend on.
fn warn_mixed(
    ws: &Workspace,
    mixed: Vec<(String, crate::pipeline::shards::Dependence, BTreeSet<u64>)>,
) {
    for (test, dep, fps) in mixed {
        let list: Vec<String> = fps
            .iter()
            .map(|id| {
                format!(
                    "  {}",
                    crate::pipeline::fingerprint::describe(&ws.cache.root, *id)
                )
            })
            .collect();
        ws.warn(&format!(
            "the samples of `{test}` come from {} fingerprints, and its numbers depend on the \
             machine ({}): reports use one fingerprint's samples at a time (`--any-fingerprint` \
             mixes machines). Measure it on one machine: `run {test} RANGE --gaps` there, after \
             merging the builds.\n{}",
            fps.len(),
            dep.why(),
            list.join("\n")
        ));
    }
}

/// Identity of a sample: the hash of its encoded record.
fn key(frame: &[u8]) -> [u8; 32] {
    *blake3::hash(frame).as_bytes()
}

fn has_stores(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".pbs"))
    })
}

/// Names of the temp files `merge` writes its copies through: `cache gc` removes those a
/// kill left behind.
pub(super) const TEMP_PREFIX: &str = ".merge.";

/// The files of `from` that `to` lacks, as (where it goes, its bytes), read now so that an
/// unreadable one stops the merge before anything is written.
fn missing(from: &Path, to: &Path) -> anyhow::Result<Vec<(PathBuf, Vec<u8>)>> {
    let Ok(rd) = std::fs::read_dir(from) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name();
        // Only regular files, not followed through a link: a link in another cache (a CI
        // artifact) would copy a file from anywhere on this machine into this cache.
        if name.to_string_lossy().starts_with('.') || !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let dest = to.join(&name);
        if dest.symlink_metadata().is_ok() || out.iter().any(|(d, _)| *d == dest) {
            continue;
        }
        if from.ends_with("manifests") {
            // Checked now, like the manifests of the builds carried: this cache reads them.
            let n = name.to_string_lossy();
            crate::build::carry::read_foreign(&e.path(), n.strip_suffix(".json").unwrap_or(&n))?;
        }
        let bytes = std::fs::read(e.path()).with_context(|| {
            format!(
                "cannot read {}; nothing was merged",
                crate::base::paths::display_path(&e.path())
            )
        })?;
        out.push((dest, bytes));
    }
    Ok(out)
}

/// Write `bytes` as the new file `dest` through a temp file and a rename, with the mode a new
/// file gets (0644 under the usual umask, like the cache's other files, not a temp file's 0600).
fn write_new(dest: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let to = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(to)
        .map_err(|err| UsageError::err(format!("cannot create {}: {err}", to.display())))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(to)
        .with_context(|| format!("cannot create a temp file in {}", to.display()))?;
    std::io::Write::write_all(&mut tmp, bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", dest.display()))?;
    tmp.persist(dest)
        .with_context(|| format!("cannot write {}", dest.display()))?;
    Ok(())
}
