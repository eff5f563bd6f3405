//! Posting the findings with `gh`: what posting still has to do, each issue or comment found
//! by its marker before it is posted (again), and the issue's title.

use std::collections::BTreeMap;
use std::ffi::OsStr;

use super::outcome::{now, Options, Outcome};
use crate::pipeline::workspace::Workspace;
use crate::report::triage::Posted;
use crate::store::findings::{self, Findings, Post, TestStep};

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
/// and a failure leaves the finding as it was, for the next run.
pub(super) fn post_all(
    ws: &Workspace,
    f: &mut Findings,
    file: &std::path::Path,
    repo: &str,
    opts: &Options<'_>,
    reports: &BTreeMap<String, BTreeMap<String, String>>,
    out: &mut Outcome,
) -> anyhow::Result<()> {
    let tmp = ws.cache.tmp();
    std::fs::create_dir_all(&tmp)?;
    for p in f.pending() {
        let commit = match &p {
            Post::Create { commit } | Post::Join { commit, .. } | Post::Fixed { commit, .. } => {
                commit.clone()
            }
        };
        let Some(x) = f.get(&commit).cloned() else {
            continue;
        };
        let title = title(&x);
        let body = body(ws, &p, &x, reports.get(&commit), &opts.invocation);
        let what = match p {
            Post::Create { .. } => "created",
            Post::Join { .. } => "commented",
            Post::Fixed { .. } => "fixed",
        };
        if opts.dry_run {
            out.posted.push(Posted {
                commit,
                what,
                url: x.url.clone(),
                title,
                dry_run: true,
            });
            continue;
        }
        // Every post carries its marker, by which a post that went through unsaved is found.
        let body = match &p {
            Post::Create { .. } => body,
            _ => format!("{body}\n<sub>{}</sub>\n", findings::comment_marker(&p)),
        };
        let path = tmp.join(format!("triage-{commit}.md"));
        std::fs::write(&path, &body)?;
        let result = match &p {
            Post::Create { .. } => create(f, repo, &opts.label, &commit, &title, &path),
            Post::Join { .. } | Post::Fixed { .. } => {
                comment(ws, f, repo, &p, &x, &commit, &path, what)
            }
        };
        let _ = std::fs::remove_file(&path);
        match result {
            Ok((what, url)) => {
                findings::save(file, f)?;
                ws.note(&format!(
                    "perfbisect: triage: {what} {}",
                    url.as_deref().unwrap_or(&title)
                ));
                out.posted.push(Posted {
                    commit,
                    what,
                    url,
                    title,
                    dry_run: false,
                });
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

/// What `p` posts of finding `x`: the issue's body (with `reports`, its reports by test), or
/// the comment.
fn body(
    ws: &Workspace,
    p: &Post,
    x: &findings::Finding,
    reports: Option<&BTreeMap<String, String>>,
    invocation: &str,
) -> String {
    match p {
        Post::Create { .. } => {
            crate::report::triage::issue_body(x, reports.unwrap_or(&BTreeMap::new()), invocation)
        }
        Post::Join { tests, .. } => crate::report::triage::join_comment(x, tests),
        Post::Fixed { by, .. } => {
            let subject = gix::ObjectId::from_hex(by.as_bytes())
                .ok()
                .and_then(|id| ws.repo.info(id).ok())
                .map(|i| i.subject)
                .unwrap_or_default();
            crate::report::triage::fixed_comment(x, by, &subject)
        }
    }
}

/// Open `commit`'s issue in `repo` with the body at `path`, unless an issue carrying its
/// marker exists already: what was done and the issue's URL.
fn create(
    f: &mut Findings,
    repo: &str,
    label: &str,
    commit: &str,
    title: &str,
    path: &std::path::Path,
) -> anyhow::Result<(&'static str, Option<String>)> {
    if let Some((url, n)) = find_marked(repo, commit)? {
        f.posted(commit, &url, n, now());
        return Ok(("found", Some(url)));
    }
    let stdout = crate::publish::attach::gh(
        &[
            OsStr::new("issue"),
            OsStr::new("create"),
            OsStr::new("--repo"),
            OsStr::new(repo),
            OsStr::new("--title"),
            OsStr::new(title),
            OsStr::new("--body-file"),
            path.as_os_str(),
            OsStr::new("--label"),
            OsStr::new(label),
        ],
        "`gh issue create`",
    )?;
    // The issue's URL and number from gh's answer, else from the issue that
    // carries the marker; an issue that cannot be identified stays pending.
    let (url, n) = match crate::publish::attach::issue_url(&stdout) {
        Some((url, n)) => (url, Some(n)),
        None => find_marked(repo, commit)?.ok_or_else(|| {
            anyhow::anyhow!(
                "`gh issue create` printed no issue URL ({}) and no issue carries \
                 the finding's marker yet; the issue stays pending (the next run \
                 looks for its marker before creating one)",
                stdout.trim()
            )
        })?,
    };
    f.posted(commit, &url, n, now());
    Ok(("created", Some(url)))
}

/// Post comment `p` (the body at `path`) on finding `x`'s issue in `repo`, unless a copy of
/// it is there already: what was done (`what` when posted) and the comment's URL.
#[allow(clippy::too_many_arguments)]
fn comment(
    ws: &Workspace,
    f: &mut Findings,
    repo: &str,
    p: &Post,
    x: &findings::Finding,
    commit: &str,
    path: &std::path::Path,
    what: &'static str,
) -> anyhow::Result<(&'static str, Option<String>)> {
    let n = match x.issue {
        Some(n) => n,
        // A posted finding whose number was never known: its issue by marker.
        None => match find_marked(repo, commit)? {
            Some((url, Some(n))) => {
                f.set_issue(commit, &url, n);
                n
            }
            // Fixed before any issue of it was opened: nothing to comment on.
            None if matches!(p, Post::Fixed { .. }) => {
                mark(f, p);
                return Ok(("fixed before it was posted, no comment:", None));
            }
            _ => anyhow::bail!(
                "the finding's issue cannot be identified (no number known, and \
                 no issue carries its marker): the comment stays pending"
            ),
        },
    };
    let n = n.to_string();
    // A comment that went through unanswered (a timeout, a kill before the
    // save) carries its marker: found, not posted again.
    let marker = findings::comment_marker(p);
    match commented(repo, &n, &marker) {
        Ok(true) => {
            mark(f, p);
            return Ok(("found", None));
        }
        Ok(false) => {}
        // A gh that cannot list the comments (an older one): posted unchecked,
        // as before markers, and said.
        Err(e) => ws.warn(&format!(
            "cannot look for an earlier copy of the comment on issue {n} ({e:#}); \
             posting it"
        )),
    }
    let stdout = crate::publish::attach::gh(
        &[
            OsStr::new("issue"),
            OsStr::new("comment"),
            OsStr::new(&n),
            OsStr::new("--repo"),
            OsStr::new(repo),
            OsStr::new("--body-file"),
            path.as_os_str(),
        ],
        "`gh issue comment`",
    )?;
    mark(f, p);
    Ok((what, crate::publish::attach::url_in(&stdout)))
}

/// A comment of `p` went to its issue.
fn mark(f: &mut Findings, p: &Post) {
    match p {
        Post::Join { commit, tests } => f.joined(commit, tests, now()),
        Post::Fixed { commit, .. } => f.fix_posted(commit, now()),
        Post::Create { .. } => {}
    }
}

/// The URL and number of an issue of `repo` whose body carries `commit`'s marker, if there
/// is one.
fn find_marked(repo: &str, commit: &str) -> anyhow::Result<Option<(String, Option<u64>)>> {
    let marker = findings::marker(commit);
    let stdout = crate::publish::attach::gh(
        &[
            OsStr::new("issue"),
            OsStr::new("list"),
            OsStr::new("--repo"),
            OsStr::new(repo),
            OsStr::new("--state"),
            OsStr::new("all"),
            OsStr::new("--search"),
            OsStr::new(&marker),
            OsStr::new("--json"),
            OsStr::new("number,url,body"),
        ],
        "`gh issue list`",
    )?;
    let list: serde_json::Value = serde_json::from_str(stdout.trim()).map_err(|e| {
        anyhow::anyhow!(
            "`gh issue list` printed no JSON list ({e}): {}",
            stdout.trim()
        )
    })?;
    Ok(list.as_array().and_then(|a| {
        a.iter()
            .find(|i| i["body"].as_str().is_some_and(|b| b.contains(&marker)))
            .and_then(|i| Some((i["url"].as_str()?.to_string(), i["number"].as_u64())))
    }))
}

/// Whether issue `number` of `repo` has a comment carrying `marker`.
fn commented(repo: &str, number: &str, marker: &str) -> anyhow::Result<bool> {
    let stdout = crate::publish::attach::gh(
        &[
            OsStr::new("issue"),
            OsStr::new("view"),
            OsStr::new(number),
            OsStr::new("--repo"),
            OsStr::new(repo),
            OsStr::new("--json"),
            OsStr::new("comments"),
        ],
        "`gh issue view`",
    )?;
    let v: serde_json::Value = serde_json::from_str(stdout.trim())
        .map_err(|e| anyhow::anyhow!("`gh issue view` printed no JSON ({e}): {}", stdout.trim()))?;
    Ok(v["comments"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["body"].as_str().is_some_and(|b| b.contains(marker)))
    }))
}
