//! The findings `triage` keeps in the cache, one per culprit commit: which tests it moved and
//! by how much, and where it stands — *new* (confirmed, not posted yet), *posted* (the issue
//! it went to), *unconfirmed* (a change point `find` could not confirm: listed with why, never
//! posted) or *fixed* (a later step returned the level). The state machine is pure
//! ([`Findings`]' methods, property-tested); [`load`] and [`save`] keep it as durable as the
//! samples: written whole to a temp file, synced, renamed over the old one, the directory
//! synced, so a crash leaves the old state or the new, never half of one.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// Where a finding stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Confirmed by interleaved re-runs; not posted yet.
    New,
    /// Posted as an issue (`url`).
    Posted,
    /// A change point `find` could not confirm: listed, never posted.
    Unconfirmed,
    /// A later step returned the level (`fixed_by`).
    Fixed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::New => "new",
            State::Posted => "posted",
            State::Unconfirmed => "unconfirmed",
            State::Fixed => "fixed",
        }
    }
}

/// One test's step at a finding's commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestStep {
    pub test: String,
    /// The last commit measured at the old level (40 hex).
    pub parent: String,
    /// Medians of the runs taken side by side, and the change estimated window by window.
    pub before: f64,
    pub after: f64,
    pub rel_change: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<(f64, f64)>,
    pub p_value: f64,
    /// Compared as plain numbers (a struct size, a count): no p-value applies.
    #[serde(default)]
    pub deterministic: bool,
    /// Runs behind `before` and `after`.
    pub runs: (usize, usize),
    pub unit: String,
    /// "regression" or "improvement".
    pub kind: String,
    /// The functions whose cost moved most, when profiled ("name +12.3 %").
    #[serde(default)]
    pub why: Vec<String>,
    /// Said on the finding's issue (in its body or a comment).
    #[serde(default)]
    pub posted: bool,
    /// Every commit that may be the culprit (40 hex, oldest first, this finding's last) when
    /// commits between `parent` and it cannot be built: the step is among them. Empty when
    /// the finding's commit is the culprit itself, confirmed against its own parent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<String>,
    /// Runs of parent and commit taken interleaved to confirm the step (both sides) and their
    /// windows of time; 0 when exact values confirmed it (or a findings file older than these).
    #[serde(default)]
    pub reruns: usize,
    #[serde(default)]
    pub rerun_windows: usize,
}

/// A culprit commit and what it moved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The culprit (40 hex); for an unconfirmed finding, the change point's commit.
    pub commit: String,
    pub subject: String,
    pub state: State,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The issue's number, once posted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue: Option<u64>,
    pub tests: Vec<TestStep>,
    /// Why an unconfirmed finding is not one (per test: "h2-req-mem: …").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unconfirmed: Vec<String>,
    /// The commit whose step returned the level, once fixed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_by: Option<String>,
    /// The "fixed by" comment went to the issue.
    #[serde(default)]
    pub fixed_posted: bool,
    /// The steps at `fixed_by` that returned the level, one per test: the finding's own tests
    /// and tests that joined the job after it (measured only at the level it left, their
    /// step back is this fix, not news).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fix_steps: Vec<TestStep>,
    /// Issues opened for this finding by another `triage` at the same time (another cache,
    /// another runner), found after this one's issue: each is closed as a duplicate of the
    /// oldest (`url`), then leaves this list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub duplicates: Vec<u64>,
    /// Seconds since the epoch when first found and last changed.
    pub first_seen: u64,
    pub updated: u64,
}

/// A gap of one test's history that a search settled: the change point between `from` (the
/// last commit measured at the old level) and `to`, and what the search named (if anything).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Searched {
    pub test: String,
    pub from: String,
    pub to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub culprit: Option<String>,
}

/// Everything `triage` keeps between runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Findings {
    /// Version of this file's shape.
    #[serde(default = "version")]
    pub version: u32,
    pub findings: Vec<Finding>,
    /// Gaps searched already: a change point over one of them is settled.
    #[serde(default)]
    pub searched: Vec<Searched>,
    /// Changes of the machine (a test's fingerprint) said already: each is said once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub eras: Vec<EraSaid>,
}

/// A change of the machine that `test` is measured on, from fingerprint `from` to `to` (16
/// hex each), said by `triage` at `at` (seconds since the epoch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EraSaid {
    pub test: String,
    pub from: String,
    pub to: String,
    pub at: u64,
}

fn version() -> u32 {
    1
}

impl Default for Findings {
    fn default() -> Self {
        Findings {
            version: version(),
            findings: Vec::new(),
            searched: Vec::new(),
            eras: Vec::new(),
        }
    }
}

/// What posting has still to do for a finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Post {
    /// Open an issue for it.
    Create { commit: String },
    /// Comment that these tests moved too.
    Join { commit: String, tests: Vec<String> },
    /// Comment that `by` returned the level.
    Fixed { commit: String, by: String },
    /// Close issue `number`, opened for the same finding by another `triage` at the same
    /// time, as a duplicate of the finding's issue.
    Close { commit: String, number: u64 },
}

impl Post {
    /// The finding's commit.
    pub fn commit(&self) -> &str {
        match self {
            Post::Create { commit }
            | Post::Join { commit, .. }
            | Post::Fixed { commit, .. }
            | Post::Close { commit, .. } => commit,
        }
    }
}

impl Findings {
    /// The finding of `commit`, if any.
    pub fn get(&self, commit: &str) -> Option<&Finding> {
        self.findings.iter().find(|f| f.commit == commit)
    }

    fn get_mut(&mut self, commit: &str) -> Option<&mut Finding> {
        self.findings.iter_mut().find(|f| f.commit == commit)
    }

    /// Whether a search already settled `test`'s change point over `from..to`.
    pub fn settled(&self, test: &str, from: &str, to: &str) -> bool {
        self.searched
            .iter()
            .any(|s| s.test == test && s.from == from && s.to == to)
    }

    /// Remember that `test`'s gap `from..to` was searched, naming `culprit` or nothing.
    pub fn mark_searched(&mut self, test: &str, from: &str, to: &str, culprit: Option<&str>) {
        if let Some(s) = self
            .searched
            .iter_mut()
            .find(|s| s.test == test && s.from == from && s.to == to)
        {
            s.culprit = culprit.map(str::to_string);
            return;
        }
        self.searched.push(Searched {
            test: test.into(),
            from: from.into(),
            to: to.into(),
            culprit: culprit.map(str::to_string),
        });
    }

    /// A confirmed step of one test at `commit`: a new finding, or a test joining (or updating)
    /// the finding of that commit. An unconfirmed finding of the commit becomes new; a posted
    /// one stays posted, the joining test left to say in a comment.
    pub fn confirmed(&mut self, commit: &str, subject: &str, step: TestStep, now: u64) {
        match self.get_mut(commit) {
            Some(f) => {
                match f.tests.iter_mut().find(|t| t.test == step.test) {
                    Some(t) => {
                        let posted = t.posted;
                        *t = TestStep { posted, ..step };
                    }
                    None => f.tests.push(step),
                }
                if f.state == State::Unconfirmed {
                    f.state = State::New;
                    f.unconfirmed.clear();
                }
                f.updated = now;
            }
            None => self.findings.push(Finding {
                commit: commit.into(),
                subject: subject.into(),
                state: State::New,
                url: None,
                issue: None,
                tests: vec![step],
                unconfirmed: Vec::new(),
                fixed_by: None,
                fixed_posted: false,
                fix_steps: Vec::new(),
                duplicates: Vec::new(),
                first_seen: now,
                updated: now,
            }),
        }
    }

    /// A change point of `test` at `commit` that the search could not confirm (`why`): listed
    /// as unconfirmed unless the commit already has a confirmed finding.
    pub fn unconfirmed(&mut self, commit: &str, subject: &str, test: &str, why: &str, now: u64) {
        let line = format!("{test}: {why}");
        match self.get_mut(commit) {
            Some(f) if f.state == State::Unconfirmed => {
                f.unconfirmed
                    .retain(|l| !l.starts_with(&format!("{test}: ")));
                f.unconfirmed.push(line);
                f.updated = now;
            }
            Some(_) => {}
            None => self.findings.push(Finding {
                commit: commit.into(),
                subject: subject.into(),
                state: State::Unconfirmed,
                url: None,
                issue: None,
                tests: Vec::new(),
                unconfirmed: vec![line],
                fixed_by: None,
                fixed_posted: false,
                fix_steps: Vec::new(),
                duplicates: Vec::new(),
                first_seen: now,
                updated: now,
            }),
        }
    }

    /// `by`'s step returned the level `commit` moved `test` away from: a new or posted finding
    /// becomes fixed (the issue is told, once).
    pub fn fixed(&mut self, commit: &str, by: &str, now: u64) {
        if let Some(f) = self.get_mut(commit) {
            if matches!(f.state, State::New | State::Posted) {
                f.state = State::Fixed;
                f.fixed_by = Some(by.into());
                // Said on its issue even when no URL was saved: an issue created but not saved
                // (a kill before the save) is found by its marker; none found, nothing is said.
                f.fixed_posted = false;
                f.updated = now;
            }
        }
    }

    /// `step` (at `by`) is part of the fix of `commit`'s finding: kept there, once per test,
    /// for the "fixed by" comment. A finding fixed by another commit keeps its own.
    pub fn fix_step(&mut self, commit: &str, by: &str, step: TestStep, now: u64) {
        if let Some(f) = self.get_mut(commit) {
            if f.fixed_by.as_deref().is_some_and(|b| b != by) {
                return;
            }
            match f.fix_steps.iter_mut().find(|t| t.test == step.test) {
                Some(t) => *t = step,
                None => f.fix_steps.push(step),
            }
            f.updated = now;
        }
    }

    /// `test`'s step at `commit` was a fix of another finding's: it is said there ("fixed
    /// by"), not as a finding of its own; a new finding left without tests goes.
    pub fn drop_test(&mut self, commit: &str, test: &str) {
        if let Some(f) = self.get_mut(commit) {
            if f.state == State::New {
                f.tests.retain(|t| t.test != test);
            }
        }
        self.findings
            .retain(|f| !(f.state == State::New && f.tests.is_empty()));
    }

    /// What posting still has to do, oldest finding first: issues to open for new findings,
    /// comments for tests that joined a posted one, "fixed by" comments, duplicates to close.
    pub fn pending(&self) -> Vec<Post> {
        let mut out = Vec::new();
        for f in &self.findings {
            for &number in &f.duplicates {
                out.push(Post::Close {
                    commit: f.commit.clone(),
                    number,
                });
            }
            match f.state {
                State::New if f.url.is_none() => out.push(Post::Create {
                    commit: f.commit.clone(),
                }),
                State::Posted | State::New => {
                    let tests: Vec<String> = f
                        .tests
                        .iter()
                        .filter(|t| !t.posted)
                        .map(|t| t.test.clone())
                        .collect();
                    if !tests.is_empty() {
                        out.push(Post::Join {
                            commit: f.commit.clone(),
                            tests,
                        });
                    }
                }
                // Without a URL too: its issue may have been created unsaved (found by marker).
                State::Fixed if !f.fixed_posted => out.push(Post::Fixed {
                    commit: f.commit.clone(),
                    by: f.fixed_by.clone().unwrap_or_default(),
                }),
                _ => {}
            }
        }
        out
    }

    /// The issue for `commit` was created now at `url`: posted, every test it lists said.
    pub fn posted(&mut self, commit: &str, url: &str, issue: Option<u64>, now: u64) {
        let all: Vec<String> = self
            .get(commit)
            .map(|f| f.tests.iter().map(|t| t.test.clone()).collect())
            .unwrap_or_default();
        self.posted_naming(commit, url, issue, &all, now);
    }

    /// The issue for `commit` exists at `url` and names the tests `said` (an issue found by
    /// its marker names those its body names): posted, exactly those tests said; the others
    /// are left for a comment (which looks for their markers on the issue first).
    pub fn posted_naming(
        &mut self,
        commit: &str,
        url: &str,
        issue: Option<u64>,
        said: &[String],
        now: u64,
    ) {
        if let Some(f) = self.get_mut(commit) {
            f.url = Some(url.into());
            f.issue = issue;
            for t in &mut f.tests {
                t.posted = said.contains(&t.test);
            }
            if f.state == State::New {
                f.state = State::Posted;
            }
            f.updated = now;
        }
    }

    /// Issue `number` was opened for `commit`'s finding beside its issue: to close as a
    /// duplicate.
    pub fn duplicate(&mut self, commit: &str, number: u64, now: u64) {
        if let Some(f) = self.get_mut(commit) {
            if f.issue != Some(number) && !f.duplicates.contains(&number) {
                f.duplicates.push(number);
                f.updated = now;
            }
        }
    }

    /// Duplicate issue `number` of `commit`'s finding is closed.
    pub fn duplicate_closed(&mut self, commit: &str, number: u64, now: u64) {
        if let Some(f) = self.get_mut(commit) {
            f.duplicates.retain(|&n| n != number);
            f.updated = now;
        }
    }

    /// Whether the change of `test`'s machine from fingerprint `from` to `to` was said.
    pub fn era_said(&self, test: &str, from: &str, to: &str) -> bool {
        self.eras
            .iter()
            .any(|e| e.test == test && e.from == from && e.to == to)
    }

    /// The change of `test`'s machine from `from` to `to` is said (once).
    pub fn say_era(&mut self, test: &str, from: &str, to: &str, now: u64) {
        if !self.era_said(test, from, to) {
            self.eras.push(EraSaid {
                test: test.into(),
                from: from.into(),
                to: to.into(),
                at: now,
            });
        }
    }

    /// The issue of `commit`'s finding is issue `number` at `url` (found by its marker).
    pub fn set_issue(&mut self, commit: &str, url: &str, number: u64) {
        if let Some(f) = self.get_mut(commit) {
            f.url = Some(url.into());
            f.issue = Some(number);
        }
    }

    /// The comment that `tests` moved too went to the issue.
    pub fn joined(&mut self, commit: &str, tests: &[String], now: u64) {
        if let Some(f) = self.get_mut(commit) {
            for t in f.tests.iter_mut().filter(|t| tests.contains(&t.test)) {
                t.posted = true;
            }
            f.updated = now;
        }
    }

    /// The "fixed by" comment went to the issue.
    pub fn fix_posted(&mut self, commit: &str, now: u64) {
        if let Some(f) = self.get_mut(commit) {
            f.fixed_posted = true;
            f.updated = now;
        }
    }
}

/// The marker a posted issue's body carries (as `<sub>…</sub>`), which `gh issue list
/// --search` finds: a culprit is posted once, whatever this cache remembers.
pub fn marker(commit: &str) -> String {
    format!("perfbisect-finding-{commit}")
}

/// The marker an issue's body carries for each test it names (an HTML comment): an issue
/// found by its marker says which tests it names, and only those count as said.
pub fn test_marker(commit: &str, test: &str) -> String {
    format!("perfbisect-finding-{commit}-test-{test}")
}

/// The marker of the comment that `test` moved `commit` too: one per test, whatever other
/// tests the comment names, so that a test's join is found on its own however many tests
/// join after it.
pub fn join_marker(commit: &str, test: &str) -> String {
    format!("perfbisect-comment-{commit}-join-{test}")
}

/// The markers a post carries, each of which is looked for on the issue before it is
/// posted (again): an issue's body its finding's ([`marker`]) and one per test
/// ([`test_marker`]); a join comment one per test ([`join_marker`]); a "fixed by" comment and
/// a duplicate's closing comment one each.
pub fn markers(p: &Post, tests: &[String]) -> Vec<String> {
    match p {
        Post::Create { commit } => std::iter::once(marker(commit))
            .chain(tests.iter().map(|t| test_marker(commit, t)))
            .collect(),
        Post::Join { commit, tests } => tests.iter().map(|t| join_marker(commit, t)).collect(),
        Post::Fixed { commit, by } => vec![format!("perfbisect-comment-{commit}-fixed-{by}")],
        Post::Close { commit, number } => {
            vec![format!("perfbisect-comment-{commit}-duplicate-{number}")]
        }
    }
}

/// How a marker is written into a post: the finding's and each comment's as a line of small
/// text, the tests an issue's body names as HTML comments (not shown).
pub fn write_marker(m: &str) -> String {
    if m.starts_with("perfbisect-finding-") && m.contains("-test-") {
        format!("<!-- {m} -->")
    } else {
        format!("<sub>{m}</sub>")
    }
}

/// Every marker in `text`, each whole: the text of each `<sub>…</sub>` and each HTML comment
/// `<!-- … -->` that starts with `perfbisect-`, trimmed. A marker is found only as itself
/// (`…-join-h2-req` is not in `<sub>…-join-h2-req-mem</sub>`).
pub fn markers_in(text: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for (open, close) in [("<sub>", "</sub>"), ("<!--", "-->")] {
        let mut rest = text;
        while let Some(i) = rest.find(open) {
            let after = &rest[i + open.len()..];
            let Some(j) = after.find(close) else { break };
            let inner = after[..j].trim();
            if inner.starts_with("perfbisect-") && !inner.contains(char::is_whitespace) {
                out.insert(inner.to_string());
            }
            rest = &after[j + close.len()..];
        }
    }
    out
}

/// Whether `commit`'s issue, whose body and comments carry `found` ([`markers_in`]), says
/// that `test` moved: its body names it ([`test_marker`]), or a comment ([`join_marker`],
/// or the marker of one comment for several tests an earlier perfbisect wrote,
/// `…-join-a+b`; test names hold no `+`).
pub fn test_said(found: &std::collections::BTreeSet<String>, commit: &str, test: &str) -> bool {
    if found.contains(&test_marker(commit, test)) || found.contains(&join_marker(commit, test)) {
        return true;
    }
    let prefix = join_marker(commit, "");
    found.iter().any(|m| {
        m.strip_prefix(&prefix)
            .is_some_and(|names| names.contains('+') && names.split('+').any(|n| n == test))
    })
}

/// The tests among `tests` that an issue body written before bodies carried a marker per
/// test names: those with a row of their own in its table (`| `name` |`).
pub fn tests_in_old_body(body: &str, tests: &[String]) -> Vec<String> {
    tests
        .iter()
        .filter(|t| body.contains(&format!("| `{t}` |")))
        .cloned()
        .collect()
}

/// The findings file of a cache.
pub fn path(cache_root: &Path) -> PathBuf {
    cache_root.join("findings.json")
}

/// The findings kept at `path` (none when there is no file yet). A file that cannot be read is
/// an error naming it, never taken for an empty one: that would post everything again.
pub fn load(path: &Path) -> anyhow::Result<Findings> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Findings::default()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let f: Findings = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a findings file perfbisect wrote (move it aside to start afresh: every finding would be posted again)",
            path.display()
        )
    })?;
    if f.version > version() {
        anyhow::bail!(
            "{} was written by a newer perfbisect (version {} of its shape; this one reads {})",
            path.display(),
            f.version,
            version()
        );
    }
    Ok(f)
}

/// Write `findings` to `path` durably: a temp file beside it, synced, renamed over it, the
/// directory synced.
pub fn save(path: &Path, findings: &Findings) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(findings)? + "\n";
    crate::store::fs::replace_file(path, ".findings.json.", text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn step(test: &str, rel: f64) -> TestStep {
        TestStep {
            test: test.into(),
            parent: "p".into(),
            before: 100.0,
            after: 100.0 * (1.0 + rel),
            rel_change: rel,
            interval: None,
            p_value: 1e-6,
            deterministic: false,
            runs: (10, 10),
            unit: "bytes".into(),
            kind: "regression".into(),
            why: Vec::new(),
            posted: false,
            candidates: Vec::new(),
            reruns: 20,
            rerun_windows: 2,
        }
    }

    #[test]
    fn a_finding_is_posted_once_joined_by_later_tests_and_fixed_on_its_issue() {
        let mut f = Findings::default();
        f.confirmed("c1", "s", step("a", 0.1), 1);
        f.confirmed("c1", "s", step("b", 0.2), 1);
        assert_eq!(
            f.pending(),
            vec![Post::Create {
                commit: "c1".into()
            }]
        );
        f.posted("c1", "https://x/1", Some(1), 2);
        assert!(f.pending().is_empty());
        assert_eq!(f.get("c1").unwrap().state, State::Posted);
        // The same finding again: nothing to post.
        f.confirmed("c1", "s", step("a", 0.1), 3);
        assert!(f.pending().is_empty());
        // A third test joins: one comment.
        f.confirmed("c1", "s", step("c", 0.3), 4);
        assert_eq!(
            f.pending(),
            vec![Post::Join {
                commit: "c1".into(),
                tests: vec!["c".into()]
            }]
        );
        f.joined("c1", &["c".into()], 5);
        f.fixed("c1", "c9", 6);
        assert_eq!(
            f.pending(),
            vec![Post::Fixed {
                commit: "c1".into(),
                by: "c9".into()
            }]
        );
        f.fix_posted("c1", 7);
        assert!(f.pending().is_empty());
    }

    /// Issue 38, item 9: an issue created but not saved (a kill before the save), then the
    /// fix confirmed before the next post: the "fixed" comment is still pending (its issue is
    /// found by marker), not lost with the URL nobody saved; each comment has its own marker.
    #[test]
    fn a_fix_of_a_finding_whose_issue_was_never_saved_is_still_said() {
        let mut f = Findings::default();
        f.confirmed("c1", "s", step("a", 0.1), 1);
        f.fixed("c1", "c9", 2);
        let p = Post::Fixed {
            commit: "c1".into(),
            by: "c9".into(),
        };
        assert_eq!(f.pending(), vec![p.clone()]);
        let join = Post::Join {
            commit: "c1".into(),
            tests: vec!["a".into(), "b".into()],
        };
        assert_eq!(markers(&p, &[]), ["perfbisect-comment-c1-fixed-c9"]);
        // A join's markers are one per test: the same whoever joins beside it.
        assert_eq!(
            markers(&join, &[]),
            [
                "perfbisect-comment-c1-join-a",
                "perfbisect-comment-c1-join-b"
            ]
        );
        assert_ne!(markers(&p, &[]), [marker("c1")]);
    }

    /// Issue 51, items 2 and 4: a marker is found only whole (`…-join-h2-req` is not inside
    /// `…-join-h2-req-mem`), in `<sub>` or an HTML comment; one comment an earlier perfbisect
    /// wrote for several tests (`…-join-a+b`) still says each of them.
    #[test]
    fn markers_are_matched_whole_and_each_test_on_its_own() {
        let body = "text perfbisect-comment-c-join-h2-req in prose\n\
                    <sub>perfbisect-comment-c-join-h2-req-mem</sub>\n\
                    <!-- perfbisect-finding-c-test-value2 -->\n<sub>not a marker</sub>";
        let found = markers_in(body);
        assert_eq!(
            found.iter().map(String::as_str).collect::<Vec<_>>(),
            [
                "perfbisect-comment-c-join-h2-req-mem",
                "perfbisect-finding-c-test-value2"
            ]
        );
        assert!(test_said(&found, "c", "h2-req-mem"));
        assert!(!test_said(&found, "c", "h2-req"), "inside another marker");
        assert!(test_said(&found, "c", "value2"));
        assert!(!test_said(&found, "c", "value"));
        assert!(!test_said(&found, "d", "value2"), "another finding's");
        let old = markers_in("<sub>perfbisect-comment-c-join-vtwo+vthree</sub>");
        assert!(test_said(&old, "c", "vtwo") && test_said(&old, "c", "vthree"));
        assert!(!test_said(&old, "c", "v"));
        let table = "| `value2` | 1 | 2 |\n| `rss` | 1 | 2 |";
        assert_eq!(
            tests_in_old_body(table, &["value".into(), "value2".into(), "rss".into()]),
            ["value2", "rss"]
        );
        // Each kind of marker is written so that it is read back.
        let p = Post::Create { commit: "c".into() };
        for m in markers(&p, &["value".into()]) {
            assert!(markers_in(&write_marker(&m)).contains(&m), "{m}");
        }
    }

    /// Issue 51, item 6: a change of the machine is said once per test and pair of
    /// fingerprints, kept across runs; a findings file from before eras reads as none said.
    #[test]
    fn a_change_of_machine_is_said_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let file = path(dir.path());
        let mut f = Findings::default();
        assert!(!f.era_said("value", "aa", "bb"));
        f.say_era("value", "aa", "bb", 1);
        f.say_era("value", "aa", "bb", 2);
        assert_eq!(f.eras.len(), 1);
        assert!(!f.era_said("value2", "aa", "bb") && !f.era_said("value", "bb", "aa"));
        save(&file, &f).unwrap();
        assert!(load(&file).unwrap().era_said("value", "aa", "bb"));
        std::fs::write(&file, r#"{"version": 1, "findings": [], "searched": []}"#).unwrap();
        assert!(load(&file).unwrap().eras.is_empty());
    }

    /// Issue 58: the steps of a fix are kept on the finding it fixes, once per test, and
    /// never on a finding another commit fixed.
    #[test]
    fn the_steps_of_a_fix_are_kept_on_the_finding_it_fixes() {
        let mut f = Findings::default();
        f.confirmed("c1", "s", step("a", 0.1), 1);
        f.fixed("c1", "c9", 2);
        f.fix_step("c1", "c9", step("a", -0.09), 3);
        f.fix_step("c1", "c9", step("joined", -0.1), 3);
        f.fix_step("c1", "c9", step("joined", -0.11), 4);
        let x = f.get("c1").unwrap();
        let names: Vec<&str> = x.fix_steps.iter().map(|t| t.test.as_str()).collect();
        assert_eq!(names, ["a", "joined"]);
        assert_eq!(x.fix_steps[1].rel_change, -0.11);
        f.fix_step("c1", "c8", step("other", -0.1), 5);
        assert_eq!(
            f.get("c1").unwrap().fix_steps.len(),
            2,
            "fixed by c9, not c8"
        );
    }

    #[test]
    fn unconfirmed_change_points_are_listed_never_posted() {
        let mut f = Findings::default();
        f.unconfirmed("c2", "s", "a", "verification failed", 1);
        assert!(f.pending().is_empty());
        assert_eq!(f.get("c2").unwrap().state, State::Unconfirmed);
        // Confirmed later: new, and posted then.
        f.confirmed("c2", "s", step("a", 0.1), 2);
        assert_eq!(f.pending().len(), 1);
        // An unconfirmed test beside a confirmed finding changes nothing.
        f.unconfirmed("c2", "s", "b", "no", 3);
        assert_eq!(f.get("c2").unwrap().state, State::New);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Confirmed(usize, usize),
        Unconfirmed(usize, usize),
        Fixed(usize, usize),
        /// Another triage opened an issue of the same finding beside this one's.
        Duplicate(usize),
        /// Carry out everything pending (a `gh` that works).
        PostAll,
        /// Carry out the first pending action only, then "crash".
        PostOne,
        /// Save and load again (a new run).
        Reload,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0usize..3, 0usize..3).prop_map(|(c, t)| Op::Confirmed(c, t)),
            (0usize..3, 0usize..3).prop_map(|(c, t)| Op::Unconfirmed(c, t)),
            (0usize..3, 3usize..5).prop_map(|(c, b)| Op::Fixed(c, b)),
            (0usize..3).prop_map(Op::Duplicate),
            Just(Op::PostAll),
            Just(Op::PostOne),
            Just(Op::Reload),
        ]
    }

    /// Carries out `p`, counting the issues opened per commit.
    fn carry(f: &mut Findings, p: &Post, opened: &mut std::collections::HashMap<String, usize>) {
        match p {
            Post::Create { commit } => {
                *opened.entry(commit.clone()).or_default() += 1;
                f.posted(commit, &format!("https://x/{commit}"), None, 9);
            }
            Post::Join { commit, tests } => f.joined(commit, tests, 9),
            Post::Fixed { commit, .. } => f.fix_posted(commit, 9),
            Post::Close { commit, number } => f.duplicate_closed(commit, *number, 9),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        /// Whatever the names (one the start of another, `value` and `value2`), the tests
        /// said on an issue are exactly those whose markers it carries, in any order and
        /// among other text.
        #[test]
        fn a_test_is_said_exactly_when_its_own_marker_is_there(
            names in proptest::collection::btree_set("[a-c]{1,3}(-[a-c]{1,2})?", 1..6),
            pick in proptest::collection::vec(any::<bool>(), 6),
            body_too in any::<bool>(),
        ) {
            let names: Vec<String> = names.into_iter().collect();
            let said: Vec<String> = names.iter().zip(&pick).filter(|(_, p)| **p).map(|(n, _)| n.clone()).collect();
            let mut text = String::from("some text\n");
            for n in &said {
                let m = if body_too { test_marker("c", n) } else { join_marker("c", n) };
                text += &format!("a line\n{}\n", write_marker(&m));
            }
            let found = markers_in(&text);
            for n in &names {
                prop_assert_eq!(test_said(&found, "c", n), said.contains(n), "{}: {}", n, text);
            }
        }

        /// Whatever happens in whatever order: never two issues for one culprit, an unconfirmed
        /// finding is never posted, every confirmed finding ends up posted once posting has
        /// run with nothing failing, and the file reads back what was written.
        #[test]
        fn never_two_issues_for_one_culprit_and_nothing_lost(ops in proptest::collection::vec(op(), 0..40)) {
            let dir = tempfile::tempdir().unwrap();
            let file = path(dir.path());
            let mut f = Findings::default();
            let mut opened = std::collections::HashMap::new();
            let tests = ["a", "b", "c"];
            for o in &ops {
                match *o {
                    Op::Confirmed(c, t) => f.confirmed(&format!("c{c}"), "s", step(tests[t], 0.1), 1),
                    Op::Unconfirmed(c, t) => f.unconfirmed(&format!("c{c}"), "s", tests[t], "why", 1),
                    Op::Fixed(c, b) => f.fixed(&format!("c{c}"), &format!("c{b}"), 1),
                    Op::Duplicate(c) => f.duplicate(&format!("c{c}"), 100 + c as u64, 1),
                    Op::PostAll => for p in f.pending() { carry(&mut f, &p, &mut opened) },
                    Op::PostOne => if let Some(p) = f.pending().first() { carry(&mut f, p, &mut opened) },
                    Op::Reload => {
                        save(&file, &f).unwrap();
                        let back = load(&file).unwrap();
                        prop_assert_eq!(&back, &f);
                        f = back;
                    }
                }
                for p in f.pending() {
                    if let Post::Create { commit } = &p {
                        prop_assert_eq!(f.get(commit).unwrap().state, State::New);
                    }
                }
                prop_assert!(opened.values().all(|&n| n == 1), "{:?}", opened);
            }
            for p in f.pending() { carry(&mut f, &p, &mut opened) }
            prop_assert!(f.pending().is_empty());
            prop_assert!(f.findings.iter().all(|x| x.duplicates.is_empty()));
            prop_assert!(opened.values().all(|&n| n == 1));
            for x in &f.findings {
                match x.state {
                    State::Unconfirmed => prop_assert!(x.url.is_none() && !opened.contains_key(&x.commit)),
                    State::Posted => prop_assert!(x.url.is_some() && x.tests.iter().all(|t| t.posted)),
                    State::New => prop_assert!(false, "left new: {:?}", x),
                    State::Fixed => {}
                }
            }
        }
    }
}
