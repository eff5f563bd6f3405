//! Posting a report as a comment on a GitHub issue through the `gh` command line tool (Debian
//! package `gh`, logged in with `gh auth login`). The body goes as a file, in one request: a
//! comment is posted whole or not at all.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::UsageError;

/// Where to post: issue (or pull request) `number` of `owner/repo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub owner: String,
    pub repo: String,
    pub number: u64,
}

impl Target {
    /// Parse `OWNER/REPO#N`; a usage error (exit 2) naming what is wrong otherwise.
    pub fn parse(s: &str) -> anyhow::Result<Target> {
        let bad = |why: &str| {
            UsageError::err(format!(
                "--attach {s}: {why}; write OWNER/REPO#N, e.g. curl/curl#1234"
            ))
        };
        let (repo_part, number) = s.rsplit_once('#').ok_or_else(|| bad("no `#N`"))?;
        let number: u64 = number
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| bad("the issue number is not a positive number"))?;
        let (owner, repo) = repo_part
            .split_once('/')
            .ok_or_else(|| bad("no `OWNER/` before the repository"))?;
        let ok = |p: &str| {
            !p.is_empty()
                && !p.starts_with('-')
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        };
        if !ok(owner) || !ok(repo) {
            return Err(bad(
                "owner and repository are letters, digits, `-`, `_` and `.`",
            ));
        }
        Ok(Target {
            owner: owner.into(),
            repo: repo.into(),
            number,
        })
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}#{}", self.owner, self.repo, self.number)
    }
}

/// Post the file `body` as a comment on `target` with `gh issue comment`; the comment's URL.
/// A missing `gh` or a failing one is an error carrying gh's own message.
pub fn post(target: &Target, body: &Path) -> anyhow::Result<String> {
    let out = Command::new("gh")
        .args(["issue", "comment"])
        .arg(target.number.to_string())
        .arg("--repo")
        .arg(format!("{}/{}", target.owner, target.repo))
        .arg("--body-file")
        .arg(body)
        // Never wait for an answer nobody will type.
        .env("GH_PROMPT_DISABLED", "1")
        .stdin(Stdio::null())
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => anyhow::bail!(
            "`gh` (GitHub's command line tool, Debian package `gh`) is not on PATH; install it and \
             run `gh auth login`"
        ),
        Err(e) => anyhow::bail!("cannot run `gh`: {e}"),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let msg = [stderr.trim(), stdout.trim()]
            .into_iter()
            .find(|m| !m.is_empty())
            .unwrap_or("no message");
        let code = out
            .status
            .code()
            .map_or_else(|| "was killed".to_string(), |c| format!("exited with {c}"));
        anyhow::bail!("`gh issue comment` {code}: {msg}");
    }
    // gh prints the new comment's URL; keep the line that is one.
    let url = stdout
        .lines()
        .map(str::trim)
        .rfind(|l| l.starts_with("https://") || l.starts_with("http://"))
        .map(str::to_string)
        .unwrap_or_else(|| stdout.trim().to_string());
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_or_say_what_is_wrong() {
        let t = Target::parse("curl/curl#1234").unwrap();
        assert_eq!(
            (t.owner.as_str(), t.repo.as_str(), t.number),
            ("curl", "curl", 1234)
        );
        assert_eq!(t.to_string(), "curl/curl#1234");
        for (bad, why) in [
            ("curl/curl", "no `#N`"),
            ("curl/curl#x", "not a positive number"),
            ("curl/curl#0", "not a positive number"),
            ("curl#3", "no `OWNER/`"),
            ("cu rl/curl#3", "letters, digits"),
            ("-x/curl#3", "letters, digits"),
        ] {
            let e = Target::parse(bad).unwrap_err();
            assert!(crate::error::is_usage(&e), "{bad}");
            let msg = format!("{e}");
            assert!(msg.contains(why) && msg.contains(bad), "{bad}: {msg}");
        }
    }
}
