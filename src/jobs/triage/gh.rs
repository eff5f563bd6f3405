//! What `triage` asks `gh` about the issues before and after it posts: the issues that carry
//! a finding's marker (searched before an issue is opened; listed again after one is, where
//! GitHub's search index may not show it yet), the markers on an issue's comments (with what
//! a failure of that question means), and closing a duplicate.

use std::collections::BTreeSet;
use std::ffi::OsStr;

use crate::publish::attach::{gh, GhError};
use crate::store::findings;

/// An issue whose body carries a finding's marker.
#[derive(Debug, Clone)]
pub(super) struct Marked {
    pub number: u64,
    pub url: String,
    /// Open (gh's `state` is `OPEN`, or it printed none).
    pub open: bool,
    pub body: String,
}

/// The issues `gh issue list ARGS --json number,url,body,state` printed whose body carries
/// `commit`'s marker whole, oldest (lowest number) first.
fn marked(args: &[&OsStr], commit: &str) -> anyhow::Result<Vec<Marked>> {
    let mut all: Vec<&OsStr> = vec![OsStr::new("issue"), OsStr::new("list")];
    all.extend_from_slice(args);
    all.extend([OsStr::new("--json"), OsStr::new("number,url,body,state")]);
    let stdout = gh(&all, "`gh issue list`")?;
    let list: serde_json::Value = serde_json::from_str(stdout.trim()).map_err(|e| {
        anyhow::anyhow!(
            "`gh issue list` printed no JSON list ({e}): {}",
            brief(&stdout)
        )
    })?;
    let Some(items) = list.as_array() else {
        anyhow::bail!("`gh issue list` printed JSON that is not a list of issues");
    };
    let marker = findings::marker(commit);
    let mut out: Vec<Marked> = items
        .iter()
        .filter_map(|i| {
            let body = i["body"].as_str()?;
            if !findings::markers_in(body).contains(&marker) {
                return None;
            }
            Some(Marked {
                number: i["number"].as_u64()?,
                url: i["url"].as_str()?.to_string(),
                open: i["state"]
                    .as_str()
                    .is_none_or(|s| s.eq_ignore_ascii_case("open")),
                body: body.to_string(),
            })
        })
        .collect();
    out.sort_by_key(|m| m.number);
    out.dedup_by_key(|m| m.number);
    Ok(out)
}

/// The issues of `repo`, open or closed, that carry `commit`'s marker, found by `gh issue
/// list --search` (GitHub's search index: an issue opened seconds ago may not be in it yet).
pub(super) fn search_marked(repo: &str, commit: &str) -> anyhow::Result<Vec<Marked>> {
    let marker = findings::marker(commit);
    marked(
        &[
            OsStr::new("--repo"),
            OsStr::new(repo),
            OsStr::new("--state"),
            OsStr::new("all"),
            OsStr::new("--search"),
            OsStr::new(&marker),
        ],
        commit,
    )
}

/// The open issues of `repo` that carry `commit`'s marker, looked for twice: the newest open
/// issues labelled `label` as listed (no search index between: an issue another `triage`
/// opened a moment ago is there), and the search; what either found, oldest first. Fails
/// only when both fail.
pub(super) fn open_marked(repo: &str, label: &str, commit: &str) -> anyhow::Result<Vec<Marked>> {
    let listed = marked(
        &[
            OsStr::new("--repo"),
            OsStr::new(repo),
            OsStr::new("--state"),
            OsStr::new("open"),
            OsStr::new("--label"),
            OsStr::new(label),
            OsStr::new("--limit"),
            OsStr::new("100"),
        ],
        commit,
    );
    let searched = search_marked(repo, commit);
    let mut all = match (listed, searched) {
        (Err(e), Err(_)) => return Err(e),
        (a, b) => a
            .unwrap_or_default()
            .into_iter()
            .chain(b.unwrap_or_default())
            .filter(|m| m.open)
            .collect::<Vec<_>>(),
    };
    all.sort_by_key(|m| m.number);
    all.dedup_by_key(|m| m.number);
    Ok(all)
}

/// What the comments of an issue told about the markers on them.
pub(super) enum Comments {
    /// The markers of every comment ([`findings::markers_in`]).
    Markers(BTreeSet<String>),
    /// This gh says it cannot list an issue's comments (an unknown JSON field): a post can
    /// only go unchecked.
    CannotList(String),
    /// The question failed (a time-out, a 502, an answer that is not JSON): whether the post
    /// is there already is unknown, so it waits for the next run.
    Unknown(String),
}

/// The markers on the comments of issue `number` of `repo` (`gh issue view N --json comments`).
pub(super) fn comment_markers(repo: &str, number: u64) -> Comments {
    let n = number.to_string();
    let stdout = match gh(
        &[
            OsStr::new("issue"),
            OsStr::new("view"),
            OsStr::new(&n),
            OsStr::new("--repo"),
            OsStr::new(repo),
            OsStr::new("--json"),
            OsStr::new("comments"),
        ],
        "`gh issue view`",
    ) {
        Ok(s) => s,
        Err(e @ GhError::Failed { .. }) if e.unknown_field("comments") => {
            return Comments::CannotList(e.to_string())
        }
        Err(e) => return Comments::Unknown(e.to_string()),
    };
    let v: serde_json::Value = match serde_json::from_str(stdout.trim()) {
        Ok(v) => v,
        Err(e) => {
            return Comments::Unknown(format!(
                "`gh issue view` printed no JSON ({e}): {}",
                brief(&stdout)
            ))
        }
    };
    let Some(comments) = v["comments"].as_array() else {
        return Comments::Unknown("`gh issue view` printed no list of comments".into());
    };
    let mut found = BTreeSet::new();
    for c in comments {
        // gh prints each comment as an object with its `body`; a plain string is taken too.
        if let Some(b) = c["body"].as_str().or_else(|| c.as_str()) {
            found.extend(findings::markers_in(b));
        }
    }
    Comments::Markers(found)
}

/// Close issue `number` of `repo`, with `comment` when given (`gh issue close N --comment`).
/// Closing an issue that is closed already is no failure (gh says so and exits 0).
pub(super) fn close(repo: &str, number: u64, comment: Option<&str>) -> anyhow::Result<()> {
    let n = number.to_string();
    let mut args = vec![
        OsStr::new("issue"),
        OsStr::new("close"),
        OsStr::new(&n),
        OsStr::new("--repo"),
        OsStr::new(repo),
        OsStr::new("--reason"),
        OsStr::new("not planned"),
    ];
    if let Some(c) = comment {
        args.extend([OsStr::new("--comment"), OsStr::new(c)]);
    }
    gh(&args, "`gh issue close`")?;
    Ok(())
}

/// The start of what gh printed, for a message: its first line, at most 120 characters.
fn brief(stdout: &str) -> String {
    let line = stdout.trim().lines().next().unwrap_or("");
    let mut s: String = line.chars().take(120).collect();
    if s.len() < line.len() {
        s.push('…');
    }
    if s.is_empty() {
        "(nothing)".into()
    } else {
        s
    }
}
