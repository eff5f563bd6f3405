//! Eras of the machine. Every sample records the fingerprint it was measured under; when the
//! machine changes (a toolchain upgrade changes a `[fingerprint] commands` output, a new
//! kernel release), the samples before are of another era: their numbers are not comparable
//! with the new ones, so they are shown apart (an *earlier era*) and never compared with the
//! new era's as if the commits differed. A commit measured under both fingerprints (the
//! *bridge*: `triage` measures the previous round's newest commit again) says what the
//! machine's own change did to each test, and gives the new era a first commit to compare
//! the next round with. Nothing here blames a commit for the machine.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::config::Test;
use crate::git::CommitInfo;
use crate::pipeline::rows::CommitRow;
use crate::pipeline::samples::Samples;
use crate::pipeline::workspace::Workspace;
use crate::store::Sample;

/// The samples of one other fingerprint, in the commits' order.
pub struct Era {
    /// The fingerprint's id.
    pub fingerprint: u64,
    /// Seconds since the epoch of its first and last sample.
    pub first: u64,
    pub last: u64,
    /// Its commits with samples, oldest first.
    pub rows: Vec<CommitRow>,
    /// How its fingerprint differs from this machine's (`before`: the era's, `after`: this
    /// machine's); empty when its text is not kept in this cache.
    pub differs: Vec<LineChange>,
}

/// One line of a fingerprint that changed: `command `cc --version``, `kernel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineChange {
    /// The line's name in the fingerprint: `kernel`, `os`, `cpu`, `command `X``.
    pub what: String,
    /// Its value before and after (of a command's output, the first line that differs).
    pub before: String,
    pub after: String,
}

/// A commit measured before and after the machine changed: what the change did to a test.
#[derive(Debug, Clone, Serialize)]
pub struct Bridge {
    /// The commit (40 hex) and its subject.
    pub commit: String,
    pub subject: String,
    /// Medians of the commit's runs before (the earlier era's) and after.
    pub before: f64,
    pub after: f64,
    pub rel_change: f64,
    /// The runs each median is of.
    pub runs: (usize, usize),
    /// Whether the change reaches the test's threshold.
    pub reached: bool,
}

/// The change of the machine between a test's earlier era and its current one.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The test whose samples changed era.
    pub test: String,
    /// The fingerprints before and after (16 hex digits: `cache/fingerprints/<id>.txt`).
    pub from: String,
    pub to: String,
    /// What changed, in a word: `toolchain` (a `[fingerprint]` command's output), `kernel`,
    /// `OS`, `machine` (CPU, cores, or several of these), `setup`.
    pub kind: &'static str,
    /// The lines of the fingerprint that differ (empty when the earlier one's text is not
    /// kept in this cache).
    pub changed: Vec<LineChange>,
    pub bridge: Option<Bridge>,
    /// The test's unit, for the bridge's numbers.
    pub unit: String,
    /// Why there is no bridge, when that is known (its build failed, the budget was spent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A test's eras: the earlier ones, and the change into the current one.
pub struct Eras {
    /// Samples of other fingerprints, one era each, oldest (by its last sample) first.
    pub earlier: Vec<Era>,
    /// The change from the newest earlier era to this machine's, when this machine's samples
    /// are the newest.
    pub change: Option<Change>,
}

impl Eras {
    /// The commit to measure again for a bridge: the newest (in the commits' order) of the
    /// era before the current one.
    pub fn bridge_commit(&self) -> Option<&CommitInfo> {
        self.change.as_ref()?;
        let before = self.earlier.last()?;
        before
            .rows
            .iter()
            .rev()
            .find(|r| !r.values.is_empty())
            .map(|r| &r.commit)
    }
}

/// The eras of `test`: `here` its samples as every command uses them (this machine's
/// fingerprint), `others` those of other fingerprints ([`Workspace::other_fingerprints`]),
/// over `commits` (a range's, oldest first) or, without them, every commit with samples.
pub fn of(
    ws: &Workspace,
    test: &Test,
    here: &Samples,
    others: Samples,
    commits: Option<&[CommitInfo]>,
) -> anyhow::Result<Eras> {
    let mut by_fp: BTreeMap<u64, Samples> = BTreeMap::new();
    for (commit, list) in others.by_commit {
        for s in list {
            by_fp
                .entry(s.fingerprint)
                .or_default()
                .by_commit
                .entry(commit)
                .or_default()
                .push(s);
        }
    }
    let now = ws.test_fingerprint(test).text();
    let mut earlier = Vec::new();
    for (fp, mut samples) in by_fp {
        samples.twins = others.twins.clone();
        let times = samples.by_commit.values().flatten().map(|s| s.time);
        let (first, last) = times.fold((u64::MAX, 0), |(a, b), t| (a.min(t), b.max(t)));
        let list = match commits {
            Some(c) => c
                .iter()
                .filter(|c| !samples.records(&c.id).is_empty())
                .cloned()
                .collect(),
            None => ws.commits(None, &samples)?,
        };
        let rows: Vec<CommitRow> = crate::pipeline::rows::rows(ws, &samples, list)
            .into_iter()
            .filter(|r| !r.records.is_empty())
            .collect();
        earlier.push(Era {
            fingerprint: fp,
            first,
            last,
            rows,
            differs: text_of(ws, fp).map(|t| diff(&t, &now)).unwrap_or_default(),
        });
    }
    earlier.sort_by_key(|e| (e.last, e.fingerprint));
    let measured_here = |s: &&Sample| s.import.is_none();
    let here_last = here
        .by_commit
        .values()
        .flatten()
        .filter(measured_here)
        .map(|s| s.time)
        .max();
    // (Seconds: runs of both eras in one second are taken for this machine's newest.)
    let change = match (earlier.last(), here_last) {
        (Some(before), Some(last)) if last >= before.last => Some(change(ws, test, here, before)),
        _ => None,
    };
    Ok(Eras { earlier, change })
}

/// The change from era `before` to this machine's fingerprint, with its bridge when a commit
/// of `before` was measured here after it.
fn change(ws: &Workspace, test: &Test, here: &Samples, before: &Era) -> Change {
    let now = ws.test_fingerprint(test);
    let changed = before.differs.clone();
    // The bridge is the era's newest measured commit measured again here (the one `triage`
    // measures): an older commit measured here since (a range's old end) is far from the
    // change, and the machine's state may have moved in between.
    let newest = before.rows.iter().rev().find(|r| !r.values.is_empty());
    let bridge = newest.and_then(|r| {
        let after: Vec<f64> = here
            .records(&r.commit.id)
            .into_iter()
            .filter(|s| s.import.is_none() && s.time >= before.last)
            .filter_map(|s| s.value)
            .collect();
        let (b, a) = (
            crate::stats::median(&r.values)?,
            crate::stats::median(&after)?,
        );
        Some(Bridge {
            commit: r.commit.id.to_string(),
            subject: r.commit.subject.clone(),
            before: b,
            after: a,
            rel_change: crate::stats::rel_change(b, a),
            runs: (r.values.len(), after.len()),
            reached: test.threshold.reached(b, a),
        })
    });
    Change {
        test: test.name.clone(),
        from: format!("{:016x}", before.fingerprint),
        to: format!("{:016x}", now.id()),
        kind: kind(&changed),
        changed,
        bridge,
        unit: test.unit(),
        note: None,
    }
}

/// The kept text of fingerprint `id`, if this cache has it.
fn text_of(ws: &Workspace, id: u64) -> Option<String> {
    std::fs::read_to_string(crate::pipeline::fingerprint::path_of(&ws.cache.root, id)).ok()
}

/// A fingerprint's text as (what, value) pairs: `cpu`, `kernel`, ... and each command (its
/// output's lines joined).
fn entries(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for l in text.lines() {
        if let Some(out_line) = l.strip_prefix("    ") {
            if let Some((_, v)) = out.last_mut() {
                if !v.is_empty() {
                    v.push('\n');
                }
                v.push_str(out_line);
            }
        } else if let Some(cmd) = l.strip_suffix(':').filter(|c| c.starts_with("command `")) {
            out.push((cmd.to_string(), String::new()));
        } else if let Some((k, v)) = l.split_once(": ") {
            out.push((k.to_string(), v.to_string()));
        }
    }
    out
}

/// The lines of fingerprint text `new` that differ from `old`: of a command's output, the
/// first line that differs on each side.
pub fn diff(old: &str, new: &str) -> Vec<LineChange> {
    let (a, b) = (entries(old), entries(new));
    let mut out = Vec::new();
    let mut names: Vec<&String> = a.iter().map(|(k, _)| k).collect();
    for (k, _) in &b {
        if !names.contains(&k) {
            names.push(k);
        }
    }
    let value = |list: &[(String, String)], k: &str| {
        list.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| "(none)".into())
    };
    for k in names {
        let (x, y) = (value(&a, k), value(&b, k));
        if x == y {
            continue;
        }
        let (lx, ly): (Vec<&str>, Vec<&str>) = (x.lines().collect(), y.lines().collect());
        let i = (0..lx.len().max(ly.len()))
            .find(|&i| lx.get(i) != ly.get(i))
            .unwrap_or(0);
        out.push(LineChange {
            what: k.clone(),
            before: lx.get(i).copied().unwrap_or("(none)").to_string(),
            after: ly.get(i).copied().unwrap_or("(none)").to_string(),
        });
    }
    out
}

/// The change in a word, from the lines that changed.
fn kind(changed: &[LineChange]) -> &'static str {
    let of = |what: &str| match what {
        "kernel" => "kernel",
        "os" => "OS",
        "cpu" | "cores" => "machine",
        "counter" | "cpus" | "aslr" | "recipe" => "setup",
        _ => "toolchain",
    };
    let mut kinds: Vec<&str> = changed.iter().map(|l| of(&l.what)).collect();
    kinds.dedup();
    match kinds.as_slice() {
        [one] => one,
        _ => "machine",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_that_changed_are_named_and_the_change_in_a_word() {
        let old =
            "cpu: X\ncores: 2\nkernel: Linux 6.1.0\nos: Debian 12\nrecipe: 00000000000000aa\n\
                   command `cc --version`:\n    cc (Debian 12.2.0-14) 12.2.0\n    Copyright\n";
        let new = old.replace("12.2.0-14) 12.2.0", "13.1.0-2) 13.1.0");
        let d = diff(old, &new);
        assert_eq!(
            d,
            [LineChange {
                what: "command `cc --version`".into(),
                before: "cc (Debian 12.2.0-14) 12.2.0".into(),
                after: "cc (Debian 13.1.0-2) 13.1.0".into(),
            }]
        );
        assert_eq!(kind(&d), "toolchain");
        let k = diff(old, &old.replace("6.1.0", "6.5.0"));
        assert_eq!((k[0].what.as_str(), kind(&k)), ("kernel", "kernel"));
        let both = diff(old, &new.replace("6.1.0", "6.5.0"));
        assert_eq!((both.len(), kind(&both)), (2, "machine"));
        assert!(diff(old, old).is_empty());
    }
}
