//! Posting the findings with `gh`: what posting still has to do, each issue or comment found
//! by its markers before it is posted (again), an issue opened beside another triage's closed
//! as its duplicate, and the issue's title.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;

use super::gh::{self, Comments, Marked};
use super::outcome::{now, Options, Outcome};
use crate::pipeline::workspace::Workspace;
use crate::report::triage::Posted;
use crate::store::findings::{self, Finding, Findings, Post, TestStep};

/// The issue's title: `perf: h2-req-mem +12.6 % at eb73af253c tool: fix memory…`.
pub fn title(x: &findings::Finding) -> String {
    let mut steps: Vec<&TestStep> = x.tests.iter().collect();
    steps.sort_by(|a, b| b.rel_change.abs().total_cmp(&a.rel_change.abs()));
    let lead = steps.first().map_or_else(String::new, |s| {
        format!("{} {:+.1} %", s.test, s.rel_change * 100.0)
    });
    let more = match steps.len() {
        0 | 1 => String::new(),
        2 => " (and 1 more test)".to_string(),
        n => format!(" (and {} more tests)", n - 1),
    };
    let mut subject: String = x.subject.chars().take(60).collect();
    if subject.len() < x.subject.len() {
        subject.push('…');
    }
    format!("perf: {lead}{more} at {} {subject}", at_commits(x))
}

/// "eb73af253c", or "1a2b3c4d5e or eb73af253c" when commits between the step's ends cannot be
/// built and any of them may be the culprit (the most a title lists: 3).
pub fn at_commits(x: &findings::Finding) -> String {
    let short = |c: &str| c.get(..10).unwrap_or(c).to_string();
    let Some(cands) = x.tests.iter().map(|t| &t.candidates).find(|c| c.len() > 1) else {
        return short(&x.commit);
    };
    let names: Vec<String> = cands.iter().map(|c| short(c)).collect();
    match names.as_slice() {
        [a, b] => format!("{a} or {b}"),
        [a, b, c] => format!("{a}, {b} or {c}"),
        [first, .., last] => format!("one of {} commits, {first} to {last},", names.len()),
        _ => short(&x.commit),
    }
}

/// Carry out what posting still has to do, saving after each step: the marker is looked for
/// before an issue is opened (an issue of an earlier run that crashed before saving counts),
/// each comment's markers before it is posted, and a failure leaves the post as it was, for
/// the next run. A post that makes more to do (an issue found by its marker that does not
/// name every test, a duplicate to close) is followed by it in the same run.
pub(super) fn post_all(
    ws: &Workspace,
    f: &mut Findings,
    file: &Path,
    repo: &str,
    opts: &Options<'_>,
    reports: &BTreeMap<String, BTreeMap<String, String>>,
    out: &mut Outcome,
) -> anyhow::Result<()> {
    let tmp = ws.cache.tmp();
    std::fs::create_dir_all(&tmp)?;
    let poster = Poster {
        ws,
        repo,
        label: &opts.label,
        tmp: &tmp,
        invocation: &opts.invocation,
        reports,
    };
    // Each kind of post of a finding is tried once a run: what fails waits for the next.
    let mut tried: Vec<(String, String)> = Vec::new();
    while let Some(p) = f.pending().into_iter().find(|p| !tried.contains(&kind(p))) {
        tried.push(kind(&p));
        let commit = p.commit().to_string();
        let Some(x) = f.get(&commit).cloned() else {
            continue;
        };
        let title = title(&x);
        if opts.dry_run {
            out.posted.push(Posted {
                commit,
                what: what_of(&p),
                url: x.url.clone(),
                title,
                dry_run: true,
            });
            continue;
        }
        let result = match &p {
            Post::Create { .. } => poster.create(f, &x, &title),
            Post::Join { tests, .. } => poster.join(f, &x, tests),
            Post::Fixed { by, .. } => poster.fixed(f, &x, by),
            Post::Close { number, .. } => poster.close(f, &x, *number),
        };
        // Saved whatever happened: a failed post may still have learnt something true (the
        // comments of some tests were there already).
        findings::save(file, f)?;
        match result {
            Ok(done) => {
                for (what, url) in done {
                    ws.note(&format!(
                        "perfbisect: triage: {what} {}",
                        url.as_deref().unwrap_or(&title)
                    ));
                    out.posted.push(Posted {
                        commit: commit.clone(),
                        what,
                        url,
                        title: title.clone(),
                        dry_run: false,
                    });
                }
            }
            Err(e) => {
                let msg = format!("{title}: {e:#}; left for the next run");
                ws.warn(&msg);
                out.failures.push(msg);
            }
        }
    }
    Ok(())
}

/// Which post of which finding `p` is, whatever tests it names.
fn kind(p: &Post) -> (String, String) {
    let k = match p {
        Post::Create { .. } => "create".to_string(),
        Post::Join { .. } => "join".to_string(),
        Post::Fixed { .. } => "fixed".to_string(),
        Post::Close { number, .. } => format!("close-{number}"),
    };
    (p.commit().to_string(), k)
}

/// What `p` does when it is carried out, as `Posted` says it.
fn what_of(p: &Post) -> &'static str {
    match p {
        Post::Create { .. } => "created",
        Post::Join { .. } => "commented",
        Post::Fixed { .. } => "fixed",
        Post::Close { .. } => "duplicate",
    }
}

/// What one post did: each step (`created`, `found`, `commented`, `fixed`, `duplicate`) with
/// its URL when gh gave one.
type Done = Vec<(&'static str, Option<String>)>;

/// Where and how `triage` posts.
struct Poster<'a> {
    ws: &'a Workspace,
    repo: &'a str,
    label: &'a str,
    tmp: &'a Path,
    invocation: &'a str,
    reports: &'a BTreeMap<String, BTreeMap<String, String>>,
}

impl Poster<'_> {
    /// `body` in a file of its own for `gh --body-file`, removed after `post` ran.
    fn with_body<T>(
        &self,
        x: &Finding,
        body: &str,
        post: impl FnOnce(&Path) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let path = self.tmp.join(format!("triage-{}.md", x.commit));
        std::fs::write(&path, body)?;
        let r = post(&path);
        let _ = std::fs::remove_file(&path);
        r
    }

    /// Open `x`'s issue, unless an issue carrying its marker exists already (then the tests
    /// its body names are said, the others left for a comment); after opening one, look
    /// again: an older open issue of the same finding (another `triage` at the same time)
    /// keeps the finding, and this one is left to close as its duplicate.
    fn create(&self, f: &mut Findings, x: &Finding, title: &str) -> anyhow::Result<Done> {
        let commit = &x.commit;
        if let Some(m) = keep(&gh::search_marked(self.repo, commit)?) {
            let said = said_in_body(x, &m.body);
            f.posted_naming(commit, &m.url, Some(m.number), &said, now());
            return Ok(vec![("found", Some(m.url.clone()))]);
        }
        let body = crate::report::triage::issue_body(
            x,
            self.reports.get(commit).unwrap_or(&BTreeMap::new()),
            self.invocation,
        );
        let stdout = self.with_body(x, &body, |path| {
            Ok(crate::publish::attach::gh(
                &[
                    OsStr::new("issue"),
                    OsStr::new("create"),
                    OsStr::new("--repo"),
                    OsStr::new(self.repo),
                    OsStr::new("--title"),
                    OsStr::new(title),
                    OsStr::new("--body-file"),
                    path.as_os_str(),
                    OsStr::new("--label"),
                    OsStr::new(self.label),
                ],
                "`gh issue create`",
            )?)
        })?;
        // The issue's URL and number from gh's answer, else from the issue that
        // carries the marker; an issue that cannot be identified stays pending.
        let (url, n) = match crate::publish::attach::issue_url(&stdout) {
            Some(found) => found,
            None => {
                let found = gh::search_marked(self.repo, commit)?;
                let m = keep(&found).ok_or_else(|| {
                    anyhow::anyhow!(
                        "`gh issue create` printed no issue URL ({}) and no issue carries \
                         the finding's marker yet; the issue stays pending (the next run \
                         looks for its marker before creating one)",
                        stdout.trim()
                    )
                })?;
                (m.url.clone(), m.number)
            }
        };
        f.posted(commit, &url, Some(n), now());
        let mut done: Done = vec![("created", Some(url.clone()))];
        match gh::open_marked(self.repo, self.label, commit) {
            Ok(open) => {
                if let Some(older) = open.iter().find(|m| m.number < n) {
                    let said = said_in_body(x, &older.body);
                    f.posted_naming(commit, &older.url, Some(older.number), &said, now());
                    f.duplicate(commit, n, now());
                    done.push(("found", Some(older.url.clone())));
                }
            }
            Err(e) => self.ws.warn(&format!(
                "created {url}, but cannot look for an issue of the same finding that another \
                 triage opened at the same time ({e:#})"
            )),
        }
        Ok(done)
    }

    /// The number of `x`'s issue: known, or found by its marker (then kept). `None` when no
    /// issue carries the marker.
    fn issue_of(&self, f: &mut Findings, x: &Finding) -> anyhow::Result<Option<u64>> {
        if let Some(n) = x.issue {
            return Ok(Some(n));
        }
        // A posted finding whose number was never known: its issue by marker.
        Ok(keep(&gh::search_marked(self.repo, &x.commit)?).map(|m| {
            f.set_issue(&x.commit, &m.url, m.number);
            m.number
        }))
    }

    /// Say on `x`'s issue that `tests` moved too: each test whose marker is on the issue
    /// already (its comment went through unanswered) is said; one comment names the rest.
    fn join(&self, f: &mut Findings, x: &Finding, tests: &[String]) -> anyhow::Result<Done> {
        let Some(n) = self.issue_of(f, x)? else {
            anyhow::bail!(
                "the finding's issue cannot be identified (no number known, and no issue \
                 carries its marker): the comment stays pending"
            );
        };
        let rest: Vec<String> = match self.check(n)? {
            Some(found) => {
                let (said, rest): (Vec<String>, Vec<String>) = tests
                    .iter()
                    .cloned()
                    .partition(|t| findings::test_said(&found, &x.commit, t));
                f.joined(&x.commit, &said, now());
                rest
            }
            None => tests.to_vec(),
        };
        if rest.is_empty() {
            return Ok(vec![("found", x.url.clone())]);
        }
        let body = crate::report::triage::join_comment(x, &rest);
        let url = self.comment(x, n, &body)?;
        f.joined(&x.commit, &rest, now());
        Ok(vec![("commented", url)])
    }

    /// Say on `x`'s issue that `by` returned the level, unless its comment is there.
    fn fixed(&self, f: &mut Findings, x: &Finding, by: &str) -> anyhow::Result<Done> {
        let Some(n) = self.issue_of(f, x)? else {
            // Fixed before any issue of it was opened: nothing to comment on.
            f.fix_posted(&x.commit, now());
            return Ok(vec![("fixed before it was posted, no comment:", None)]);
        };
        let p = Post::Fixed {
            commit: x.commit.clone(),
            by: by.to_string(),
        };
        if self
            .check(n)?
            .is_some_and(|found| findings::markers(&p, &[]).iter().all(|m| found.contains(m)))
        {
            f.fix_posted(&x.commit, now());
            return Ok(vec![("found", None)]);
        }
        let subject = gix::ObjectId::from_hex(by.as_bytes())
            .ok()
            .and_then(|id| self.ws.repo.info(id).ok())
            .map(|i| i.subject)
            .unwrap_or_default();
        let body = crate::report::triage::fixed_comment(x, by, &subject);
        let url = self.comment(x, n, &body)?;
        f.fix_posted(&x.commit, now());
        Ok(vec![("fixed", url)])
    }

    /// Close issue `number`, opened beside `x`'s issue, as its duplicate (its comment once).
    fn close(&self, f: &mut Findings, x: &Finding, number: u64) -> anyhow::Result<Done> {
        let Some(kept) = x.issue else {
            anyhow::bail!("the finding's own issue is not known: issue #{number} stays open");
        };
        let p = Post::Close {
            commit: x.commit.clone(),
            number,
        };
        let said = self
            .check(number)?
            .is_some_and(|found| findings::markers(&p, &[]).iter().all(|m| found.contains(m)));
        let text = crate::report::triage::duplicate_comment(x, number, kept);
        gh::close(self.repo, number, (!said).then_some(text.as_str()))?;
        f.duplicate_closed(&x.commit, number, now());
        // Its URL: the kept issue's, with its number.
        let url = x
            .url
            .as_deref()
            .and_then(|u| u.rsplit_once('/'))
            .map(|(base, _)| format!("{base}/{number}"));
        Ok(vec![("duplicate", url)])
    }

    /// The markers on the comments of issue `n`: `None` when this gh cannot list comments
    /// (the post goes unchecked, said as a warning); an error, leaving the post pending, when
    /// the question failed any other way.
    fn check(&self, n: u64) -> anyhow::Result<Option<std::collections::BTreeSet<String>>> {
        match gh::comment_markers(self.repo, n) {
            Comments::Markers(found) => Ok(Some(found)),
            Comments::CannotList(e) => {
                self.ws.warn(&format!(
                    "this gh cannot list the comments of issue {n} ({e}); posting without \
                     looking for an earlier copy (a newer gh looks)"
                ));
                Ok(None)
            }
            Comments::Unknown(e) => anyhow::bail!(
                "cannot tell whether issue {n} has the comment already ({e}); it stays pending \
                 rather than risk a second copy"
            ),
        }
    }

    /// Post `body` as a comment on issue `n`: the comment's URL when gh printed one.
    fn comment(&self, x: &Finding, n: u64, body: &str) -> anyhow::Result<Option<String>> {
        let n = n.to_string();
        let stdout = self.with_body(x, body, |path| {
            Ok(crate::publish::attach::gh(
                &[
                    OsStr::new("issue"),
                    OsStr::new("comment"),
                    OsStr::new(&n),
                    OsStr::new("--repo"),
                    OsStr::new(self.repo),
                    OsStr::new("--body-file"),
                    path.as_os_str(),
                ],
                "`gh issue comment`",
            )?)
        })?;
        Ok(crate::publish::attach::url_in(&stdout))
    }
}

/// The issue of a finding among those carrying its marker: the oldest open one, else the
/// oldest.
fn keep(found: &[Marked]) -> Option<&Marked> {
    found.iter().find(|m| m.open).or_else(|| found.first())
}

/// The tests of `x` that an issue body carrying its marker names: by their markers, or (a
/// body written before bodies carried them) by their rows in its table.
fn said_in_body(x: &Finding, body: &str) -> Vec<String> {
    let tests: Vec<String> = x.tests.iter().map(|t| t.test.clone()).collect();
    let found = findings::markers_in(body);
    let prefix = findings::test_marker(&x.commit, "");
    if found.iter().any(|m| m.starts_with(&prefix)) {
        tests
            .into_iter()
            .filter(|t| findings::test_said(&found, &x.commit, t))
            .collect()
    } else {
        findings::tests_in_old_body(body, &tests)
    }
}
