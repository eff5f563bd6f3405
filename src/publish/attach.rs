//! Posting a report as a comment on a GitHub issue through the `gh` command line tool (Debian
//! package `gh`, logged in with `gh auth login`). The body goes as a file, in one request: a
//! comment is posted whole or not at all. `gh` gets [`GH_TIMEOUT`] (or
//! `PERFBISECT_GH_TIMEOUT` seconds) to answer: a network that hangs does not hang perfbisect.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// How long `gh issue comment` may take before it is killed: one request, which GitHub answers
/// in seconds; a minute is a network that hangs.
pub const GH_TIMEOUT: Duration = Duration::from_secs(60);

/// What `gh` printed and how it ended.
struct GhOutput {
    status: std::process::ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// [`GH_TIMEOUT`], or `PERFBISECT_GH_TIMEOUT` seconds when that is set to a number.
fn gh_timeout() -> Duration {
    std::env::var("PERFBISECT_GH_TIMEOUT")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(GH_TIMEOUT, Duration::from_secs_f64)
}

/// Run `cmd` (in a process group of its own) until it exits or `timeout` passes; then the
/// group is killed and the error says so.
fn run_with_timeout(mut cmd: Command, timeout: Duration) -> std::io::Result<Option<GhOutput>> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    // Readers on threads: a full pipe must not stall gh while this thread waits.
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break Some(st);
        }
        if Instant::now() >= deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let Some(status) = status else {
        // The whole group: gh's own helpers (a credential helper, a pager) too, so that
        // nothing keeps the pipes open.
        if let Ok(pid) = i32::try_from(child.id()) {
            // SAFETY: kill(2) with a negative pid signals the group this child leads.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        return Ok(None);
    };
    Ok(Some(GhOutput {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }))
}

/// How a `gh` command failed: callers that must tell "this gh cannot do that" from "the
/// network is down" match on it.
#[derive(Debug, thiserror::Error)]
pub enum GhError {
    /// It did not answer within its time and was killed.
    #[error("{what} did not answer in {after} and was killed (is the network or GitHub down?)")]
    Timeout { what: String, after: String },
    /// It exited with a failure; `message` is what it said (stderr, else stdout).
    #[error("{what} {how}: {message}")]
    Failed {
        what: String,
        how: String,
        message: String,
    },
    /// There is no `gh` on PATH.
    #[error(
        "`gh` (GitHub's command line tool, Debian package `gh`) is not on PATH; install it and \
         run `gh auth login`"
    )]
    Missing,
    /// It could not be started.
    #[error("cannot run `gh`: {0}")]
    Spawn(std::io::Error),
}

impl GhError {
    /// Whether gh answered that it does not know JSON field `field` (or `--json` at all): a
    /// definite "this gh cannot list that", unlike a time-out, a 502 or a garbled answer.
    pub fn unknown_field(&self, field: &str) -> bool {
        match self {
            GhError::Failed { message, .. } => {
                let m = message.to_ascii_lowercase();
                (m.contains("unknown json field") && m.contains(&format!("\"{field}\"")))
                    || m.contains("unknown flag: --json")
            }
            _ => false,
        }
    }
}

/// Run `gh ARGS` (prompts off, stdin closed) within [`GH_TIMEOUT`] and return what it printed
/// on stdout; `what` names the command in errors ("`gh issue create`"). A missing `gh`, a
/// failing one or one that does not answer in time is an error carrying gh's own message or
/// the time it was given.
pub fn gh(args: &[&std::ffi::OsStr], what: &str) -> Result<String, GhError> {
    let mut cmd = Command::new("gh");
    cmd.args(args)
        .env("GH_PROMPT_DISABLED", "1")
        .stdin(Stdio::null());
    let timeout = gh_timeout();
    let out = match run_with_timeout(cmd, timeout) {
        Ok(Some(o)) => o,
        Ok(None) => {
            return Err(GhError::Timeout {
                what: what.to_string(),
                after: crate::base::text::fmt_secs(timeout.as_secs_f64()),
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(GhError::Missing),
        Err(e) => return Err(GhError::Spawn(e)),
    };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let msg = [stderr.trim(), stdout.trim()]
            .into_iter()
            .find(|m| !m.is_empty())
            .unwrap_or("no message");
        let how = out
            .status
            .code()
            .map_or_else(|| "was killed".to_string(), |c| format!("exited with {c}"));
        return Err(GhError::Failed {
            what: what.to_string(),
            how,
            message: msg.to_string(),
        });
    }
    Ok(stdout)
}

/// The last line of `gh`'s output that is a URL (the issue or comment it made), if any: a
/// line of anything else (a newer gh's wording, a warning on stdout) is never taken for one.
pub fn url_in(stdout: &str) -> Option<String> {
    stdout
        .lines()
        .map(str::trim)
        .rfind(|l| {
            (l.starts_with("https://") || l.starts_with("http://"))
                && !l.contains(char::is_whitespace)
        })
        .map(str::to_string)
}

/// The issue (or pull request) a URL of gh's names: the URL and its number
/// (`https://github.com/o/r/issues/42`, a comment's `…/issues/42#issuecomment-7` too).
pub fn issue_url(stdout: &str) -> Option<(String, u64)> {
    let url = url_in(stdout)?;
    let path = url.split('#').next().unwrap_or(&url).trim_end_matches('/');
    let (rest, n) = path.rsplit_once('/')?;
    let n: u64 = n.parse().ok()?;
    (rest.ends_with("/issues") || rest.ends_with("/pull")).then_some((url, n))
}

/// Post the file `body` as a comment on `target` with `gh issue comment`; the comment's URL.
/// A missing `gh`, a failing one or one that does not answer in time is an error carrying
/// gh's own message or the time it was given.
pub fn post(target: &Target, body: &Path) -> anyhow::Result<String> {
    let repo = format!("{}/{}", target.owner, target.repo);
    let number = target.number.to_string();
    let args: [&std::ffi::OsStr; 7] = [
        "issue".as_ref(),
        "comment".as_ref(),
        number.as_ref(),
        "--repo".as_ref(),
        repo.as_ref(),
        "--body-file".as_ref(),
        body.as_os_str(),
    ];
    let stdout = gh(&args, "`gh issue comment`").map_err(|e| match e {
        GhError::Timeout { .. } => {
            anyhow::anyhow!("{e}; nothing was posted unless the comment shows on {target}")
        }
        e => anyhow::Error::new(e),
    })?;
    // gh prints the new comment's URL; keep the line that is one.
    Ok(url_in(&stdout).unwrap_or_else(|| format!("(posted to {target}; gh printed no URL)")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_url_is_taken_for_one() {
        assert_eq!(
            issue_url("https://github.com/o/r/issues/42\n"),
            Some(("https://github.com/o/r/issues/42".into(), 42))
        );
        assert_eq!(
            issue_url("Creating issue in o/r\n\nhttps://github.com/o/r/issues/7#issuecomment-3\n")
                .map(|u| u.1),
            Some(7)
        );
        assert_eq!(issue_url("! a newer gh says: created issue 42\n"), None);
        assert_eq!(url_in("warning: something\n"), None);
        assert_eq!(issue_url("https://github.com/o/r/issues/new\n"), None);
    }

    /// Issue 51, item 1: only gh's own "unknown JSON field" (or no `--json` at all) says it
    /// cannot list comments; a 502, a time-out or garbage does not.
    #[test]
    fn only_an_unknown_field_is_a_gh_that_cannot_list() {
        let failed = |m: &str| GhError::Failed {
            what: "`gh issue view`".into(),
            how: "exited with 1".into(),
            message: m.into(),
        };
        let old =
            failed("Unknown JSON field: \"comments\"\nAvailable fields:\n  assignees\n  body");
        assert!(old.unknown_field("comments"));
        assert!(!old.unknown_field("state"));
        assert!(failed("unknown flag: --json\n\nUsage: gh issue view").unknown_field("comments"));
        assert!(!failed("HTTP 502: Bad Gateway").unknown_field("comments"));
        let slow = GhError::Timeout {
            what: "`gh issue view`".into(),
            after: "1s".into(),
        };
        assert!(!slow.unknown_field("comments"));
        assert!(slow.to_string().contains("did not answer in 1s"), "{slow}");
        assert_eq!(
            old.to_string().lines().next(),
            Some("`gh issue view` exited with 1: Unknown JSON field: \"comments\"")
        );
    }

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
