//! What every command does with the global options: the locations and verbosity they pick,
//! the options a printed command must repeat, and the refusal of a format a command does not
//! print.

use crate::cli::{Format, Global};
use crate::pipeline::workspace::{Locations, Verbosity, Workspace};

pub fn locations(g: &Global) -> Locations {
    Locations {
        repo: g.repo.clone(),
        config: g.config.clone(),
        cache: g.cache.clone(),
    }
}

pub fn verbosity(g: &Global) -> Verbosity {
    Verbosity {
        quiet: g.quiet,
        verbose: g.verbose,
        progress: !g.quiet && !g.no_progress,
    }
}

/// The global options that pick the repository, config and cache, as they must be repeated in
/// a command printed for the user to paste (absolute paths, shell-quoted, trailing space);
/// empty when all are the defaults.
/// The global options reproduce commands repeat: those given, and `--config` whenever the
/// config in use is not the repository's own `perfbisect.toml` (found in the current folder,
/// say), so that the commands work as pasted in the repository.
pub fn invocation(g: &Global, ws: &Workspace) -> String {
    let mut out = String::new();
    let own = ws.repo.dir().join("perfbisect.toml");
    let same = |a: &std::path::Path, b: &std::path::Path| {
        crate::base::paths::normalize(a) == crate::base::paths::normalize(b)
    };
    let config = g
        .config
        .clone()
        .or_else(|| (!same(&ws.config.path, &own)).then(|| ws.config.path.clone()));
    for (flag, p) in [
        ("--repo", &g.repo),
        ("--config", &config),
        ("--cache", &g.cache),
    ] {
        if let Some(p) = p {
            let abs = crate::base::paths::display_path(p);
            out += &format!("{flag} {} ", shell_quote(&abs));
        }
    }
    out
}

/// [`invocation`] for text that leaves this machine (an issue, a comment, Markdown for one):
/// no absolute path of the runner's. The commands run in the repository's top directory, so
/// `--repo` goes, and `--cache` too (a reader builds into their own); a config inside the
/// repository is named relative to it, one outside by its file name alone (the reader's copy
/// beside them).
pub fn public_invocation(g: &Global, ws: &Workspace) -> String {
    let repo = crate::base::paths::normalize(ws.repo.dir());
    let own = repo.join("perfbisect.toml");
    let config = crate::base::paths::normalize(&ws.config.path);
    if g.config.is_none() && config == own {
        return String::new();
    }
    let name = match config.strip_prefix(&repo) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => config.file_name().map_or_else(
            || "perfbisect.toml".into(),
            |n| n.to_string_lossy().into_owned(),
        ),
    };
    format!("--config {} ", shell_quote(&name))
}

/// `s` as one word for `sh`.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:=@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Refuse formats a command does not offer.
pub fn check_format(format: Format, allowed: &[Format], command: &str) -> anyhow::Result<()> {
    if !allowed.contains(&format) {
        let names: Vec<String> = allowed
            .iter()
            .map(|f| format!("{f:?}").to_lowercase())
            .collect();
        crate::usage!(
            "`{command}` cannot print --format {}; use one of: {}",
            format!("{format:?}").to_lowercase(),
            names.join(", ")
        );
    }
    Ok(())
}

/// `--max-runs N`: the budget of every test of this invocation (over each test's
/// `max_runs`), refused below 1 or below a test's `max_repeats`.
pub fn max_runs(ws: &mut Workspace, n: Option<usize>) -> anyhow::Result<()> {
    let Some(n) = n else { return Ok(()) };
    if n == 0 {
        crate::usage!("--max-runs must be at least 1");
    }
    for t in ws.config.tests.values_mut() {
        t.max_runs = Some(n);
    }
    Ok(())
}
