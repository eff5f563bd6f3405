//! The store directory: one file per test, and the care of it (the stale-samples note, a
//! harness's unit, pruning, temp files left by a kill, the tests stored).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

use super::fs::{is_temp_name, read_own, temp_file, try_sync_dir};
use super::record::{decode_file, decode_record};
use super::rewrite::rewrite;
use super::sample::{Sample, RECORD_VERSION};

/// The store directory (`cache/results`).
#[derive(Debug, Clone)]
pub struct Store {
    pub(super) dir: PathBuf,
}

impl Store {
    pub fn new(dir: impl Into<PathBuf>) -> Store {
        Store { dir: dir.into() }
    }

    /// The file holding one test's samples.
    pub fn path(&self, test: &str) -> PathBuf {
        self.dir.join(format!("{test}.pbs"))
    }
}

impl Store {
    /// The note about `stale` samples of `test` that an earlier test or build definition made,
    /// when it is news: once per test and cache, and again only when their count changes. The
    /// count last told is kept in `results/<test>.stale-noted`.
    pub fn stale_note(&self, test: &str, stale: usize) -> Option<String> {
        let marker = self.dir.join(format!("{test}.stale-noted"));
        let told: Option<usize> = std::fs::read_to_string(&marker)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        if stale == 0 {
            if told.is_some() {
                let _ = std::fs::remove_file(&marker);
            }
            return None;
        }
        if told == Some(stale) {
            return None;
        }
        // Best effort: a marker that cannot be written only means the note comes again.
        let _ = std::fs::create_dir_all(&self.dir)
            .and_then(|()| std::fs::write(&marker, format!("{stale}\n")));
        Some(format!(
            "note: {stale} stored sample{s} of `{test}` come{v} from an earlier test or build \
             definition and {are} not used; `perfbisect cache prune` deletes {them} (this note \
             is shown once)",
            s = if stale == 1 { "" } else { "s" },
            v = if stale == 1 { "s" } else { "" },
            are = if stale == 1 { "is" } else { "are" },
            them = if stale == 1 { "it" } else { "them" },
        ))
    }
}

impl Store {
    /// The unit a harness reported for `test`'s values under the test definition `hash`
    /// (`results/<test>.unit`), so that commands that measure nothing still show it.
    pub fn tool_unit(&self, test: &str, hash: u64) -> Option<String> {
        let text = std::fs::read_to_string(self.dir.join(format!("{test}.unit"))).ok()?;
        let (h, unit) = text.trim_end_matches('\n').split_once(' ')?;
        (u64::from_str_radix(h, 16).ok()? == hash).then(|| unit.to_string())
    }

    /// Remember the unit a harness reported (through a temp file and a rename).
    pub fn set_tool_unit(&self, test: &str, hash: u64, unit: &str) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        let path = self.dir.join(format!("{test}.unit"));
        let mut tmp = temp_file(&self.dir, &format!(".{test}.unit."))?;
        tmp.write_all(format!("{hash:016x} {unit}\n").as_bytes())
            .and_then(|()| tmp.as_file().sync_all())
            .with_context(|| format!("cannot write {}", path.display()))?;
        tmp.persist(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(())
    }
}

/// What [`Store::prune`] did to one test's file.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pruned {
    /// Records kept (including those this perfbisect cannot read: they are not its to judge).
    pub kept: usize,
    /// Samples removed because `stale` said so.
    pub removed: usize,
    /// Corrupt bytes and a torn tail left out of the rewritten file (they were skipped on
    /// every load anyway).
    pub corrupt_bytes: usize,
    /// Batches whose markers an older `cache prune` had copied so that they framed nothing
    /// (every reader left their records out): framed again, so they count.
    pub reframed: usize,
}

impl Store {
    /// Rewrite `test`'s file without the samples `stale` picks: the kept records are copied
    /// as they are, with their batches framed again where they now lie (`store::rewrite`),
    /// into a temp file beside it, which is synced and renamed over the file, so
    /// a crash leaves the old file or the new one, never half of one. Records of a newer
    /// format or that cannot be decoded are kept. Nothing is written when nothing is stale and
    /// every batch is framed right.
    /// The caller holds the cache lock (no appender may be open).
    pub fn prune(&self, test: &str, stale: &dyn Fn(&Sample) -> bool) -> anyhow::Result<Pruned> {
        let path = self.path(test);
        let Some(bytes) = read_own(&path)? else {
            return Ok(Pruned::default());
        };
        // Refuses files that are not stores or are of a newer format.
        decode_file(&path, &bytes)?;
        let r = rewrite(&bytes, &mut |ver, payload| {
            ver <= RECORD_VERSION && decode_record(ver, payload).is_ok_and(|s| stale(&s))
        });
        let p = Pruned {
            kept: r.kept,
            removed: r.removed,
            corrupt_bytes: r.corrupt_bytes,
            reframed: r.reframed,
        };
        if p.removed == 0 && p.reframed == 0 {
            return Ok(p);
        }
        let out = r.bytes;
        let mut tmp = temp_file(&self.dir, &format!(".{test}.pbs."))?;
        // The store keeps the mode it had.
        let mode = std::fs::metadata(&path).map(|m| m.permissions());
        tmp.write_all(&out)
            .and_then(|()| mode.and_then(|m| tmp.as_file().set_permissions(m)))
            .and_then(|()| tmp.as_file().sync_all())
            .with_context(|| format!("cannot write a temp file in {}", self.dir.display()))?;
        tmp.persist(&path)
            .with_context(|| format!("cannot replace {}", path.display()))?;
        try_sync_dir(&self.dir)?;
        Ok(p)
    }

    /// Remove the temp files a rewrite killed midway (`kill -9` during an `import`, a `merge`
    /// or a `cache prune`) left beside the stores; the number removed. Only for the holder of
    /// the cache lock: every writer holds it while its temp file exists.
    pub fn remove_temp_files(&self) -> anyhow::Result<usize> {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return Ok(0);
        };
        let mut n = 0;
        for e in rd.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if !is_temp_name(&name) || !e.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            std::fs::remove_file(e.path())
                .with_context(|| format!("cannot remove {}", e.path().display()))?;
            n += 1;
        }
        Ok(n)
    }

    /// Names of the tests that have a file in the store, sorted.
    pub fn tests(&self) -> Vec<String> {
        let mut out: Vec<String> = std::fs::read_dir(&self.dir)
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| {
                        e.file_name()
                            .to_str()
                            .and_then(|n| n.strip_suffix(".pbs"))
                            .filter(|n| !n.starts_with('.'))
                            .map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }
}
