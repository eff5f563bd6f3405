//! `perfbisect config check` and `perfbisect config init`.
//!
//! `check` validates the config the global options pick (every key, regex, JSON pointer and
//! harness metric; exit 2 naming the key and line) without building anything, then warns,
//! with key and line, about commands whose program cannot be found: a first word not on PATH,
//! a helper script missing beside the config, a test program that is not among the build's
//! artifacts. For `[build] cargo` it says the cargo commands a build of the checkout runs,
//! with the exact package id `cargo metadata` gives (nothing is built). `init` prints a starting config for the repository at hand on stdout (`--at REV`: for REV's tree), and warns when
//! an end of the range it is given builds with another build system.

use anyhow::Context;

use crate::cli::{ConfigAction, ConfigArgs, Global, InitArgs};
use crate::scaffold::Source;

/// Run `config check` or `config init`.
pub fn config(g: &Global, args: ConfigArgs) -> anyhow::Result<()> {
    match args.action {
        ConfigAction::Check => check(g),
        ConfigAction::Init(args) => init(g, args),
    }
}

fn check(g: &Global) -> anyhow::Result<()> {
    // The repository only matters for finding REPO/perfbisect.toml; none is needed.
    let repo_dir = crate::git::Repo::open(g.repo.as_deref())
        .ok()
        .map(|r| r.dir().to_path_buf());
    let path = crate::config::locate(g.config.as_deref(), repo_dir.as_deref())?;
    let cfg = crate::config::load(&path)?;
    if cfg.tests.is_empty() {
        crate::usage!(
            "{}: no tests: nothing can be measured; add a `[tests.NAME]` table with a `command` \
             (`perfbisect config init` writes a config for the project; `perfbisect guide config` lists the keys)",
            crate::base::paths::display_path(&path)
        );
    }
    let mut warnings = crate::scaffold::lint::warnings(&cfg, &crate::scaffold::lint::path_dirs());
    // What the build makes, from the checkout's build files: before any build is tried.
    warnings.extend(crate::scaffold::lint::build_warnings(
        &cfg,
        repo_dir.as_deref(),
    ));
    for w in &warnings {
        eprintln!("{w}");
    }
    let counted = crate::scaffold::lint::counters(&cfg);
    let build = match (&cfg.build.cargo, &cfg.build.command) {
        (Some(c), _) => {
            let names: Vec<&str> = c.names().collect();
            if names.is_empty() {
                "cargo (every bin)".to_string()
            } else {
                format!("cargo ({})", names.join(", "))
            }
        }
        (None, Some(_)) => "command".to_string(),
        (None, None) if cfg.build.artifacts.is_empty() => "none".to_string(),
        (None, None) => "artifacts as checked out".to_string(),
    };
    let tests: Vec<&str> = cfg.tests.keys().map(String::as_str).collect();
    println!(
        "{}: ok; build: {build}; {} test{}{}{}",
        crate::base::paths::display_path(&path),
        tests.len(),
        if tests.len() == 1 { "" } else { "s" },
        if tests.is_empty() {
            String::new()
        } else {
            format!(" ({})", tests.join(", "))
        },
        match warnings.len() {
            0 => String::new(),
            1 => "; 1 warning".to_string(),
            n => format!("; {n} warnings"),
        }
    );
    for line in counted {
        println!("{line}");
    }
    if let (Some(c), Some(dir)) = (&cfg.build.cargo, &repo_dir) {
        // Nothing is built; cargo's metadata names the exact package each build will ask for.
        match crate::build::cargo::describe(c, dir) {
            Ok(commands) => {
                for c in commands {
                    println!("build at the checkout: {c}");
                }
            }
            Err(why) => eprintln!(
                "perfbisect: warning: {}: [build] cargo at the checkout: {why}",
                crate::base::paths::display_path(&path)
            ),
        }
    }
    Ok(())
}

fn init(g: &Global, args: InitArgs) -> anyhow::Result<()> {
    let repo = crate::git::Repo::open(g.repo.as_deref());
    let dir = match &repo {
        Ok(r) => r.dir().to_path_buf(),
        Err(_) => match &g.repo {
            Some(d) if d.is_dir() => d.clone(),
            Some(d) => crate::usage!("--repo {}: no such directory", d.display()),
            None => std::env::current_dir()?,
        },
    };
    let dir = crate::base::paths::normalize(&dir);
    // --at and a range are revisions of the repository: without one, the error says so.
    let repo = match repo {
        Ok(r) => Some(r),
        Err(e) if args.at.is_some() || args.range.is_some() => return Err(e),
        Err(_) => None,
    };
    let at = match (&args.at, &repo) {
        (Some(rev), Some(r)) => Some((rev.trim().to_string(), r.resolve(rev)?)),
        _ => None,
    };
    let ends = match (&args.range, &repo) {
        (Some(spec), Some(r)) => range_ends(r, spec)?,
        _ => Vec::new(),
    };
    let source = match (&at, &repo) {
        (Some((rev, id)), Some(r)) => Source::Commit {
            repo: r.gix(),
            id: *id,
            rev: rev.clone(),
        },
        _ => Source::Checkout,
    };
    // --at: the tree of REV, written into a temporary directory of perfbisect's own (removed
    // when `tmp` goes), never into the checkout.
    let mut tmp = None;
    let read = match &source {
        Source::Commit { repo, id, .. } => {
            let t = tempfile::Builder::new()
                .prefix("perfbisect-init-")
                .tempdir()
                .context("cannot make a temporary directory")?;
            let read = crate::scaffold::checkout(repo, *id, t.path())
                .with_context(|| format!("cannot read the tree of {}", source.what()))?;
            tmp = Some(t);
            read
        }
        Source::Checkout => dir.clone(),
    };
    let mut found = crate::scaffold::detect(&read, &source);
    let probed = crate::scaffold::probe(&dir, &source, &mut found);
    let at_what = at.as_ref().map(|_| source.what());
    print!(
        "{}",
        crate::scaffold::render(&dir, &found, at_what.as_deref())
    );
    drop(tmp);
    if g.quiet {
        return Ok(());
    }
    if let Some(p) = probed {
        eprintln!("perfbisect: {p}");
    }
    if let Some(n) = crate::scaffold::bench_note(&found) {
        eprintln!("perfbisect: {n}");
    }
    if let Some(n) = crate::scaffold::tools_note(&found) {
        eprintln!("{} {n}", crate::base::style::warning_prefix());
    }
    let what = match found.first() {
        Some(f) => format!("{} ({})", f.system.name(), f.evidence),
        None => "no build system I know".to_string(),
    };
    let program = crate::scaffold::program_note(&found)
        .map(|n| format!("; {n}"))
        .unwrap_or_default();
    let at_note = at_what
        .as_ref()
        .map(|w| format!(" at {w}"))
        .unwrap_or_default();
    eprintln!(
        "perfbisect: found {what} in {}{at_note}{program}; save the config printed above (e.g. as perfbisect.toml) and run `perfbisect config check`",
        dir.display()
    );
    if let (Some(r), Some(spec)) = (&repo, &args.range) {
        let read_what = match &at_what {
            Some(w) => w.clone(),
            None => match r.head() {
                Ok(h) => format!("the checkout (HEAD {})", crate::git::short(&h)),
                Err(_) => "the checkout".to_string(),
            },
        };
        let read = found.first().map(|f| (f.system, f.evidence.as_str()));
        for (end, name, id) in &ends {
            let paths = crate::git::worktree::paths(r.gix(), *id)?;
            let theirs = crate::scaffold::systems_of(&paths).first().copied();
            if theirs.map(|t| t.0) == read.map(|t| t.0) {
                continue;
            }
            let builds = |s: Option<(crate::scaffold::System, &str)>| match s {
                Some((system, file)) => format!("builds with {} ({file})", system.name()),
                None => "has no build system perfbisect knows".to_string(),
            };
            eprintln!(
                "perfbisect: {} range `{}`: its {end} `{name}` ({}) {}, but the config above was \
                 read from {read_what}, which {}: its [build] command may not build the {end}'s commits. \
                 `perfbisect config init --at {name}` reads the project at that end (a range \
                 across the change needs a build command for both)",
                crate::base::style::warning_prefix(),
                spec.trim(),
                crate::git::short(id),
                builds(theirs),
                builds(read),
            );
        }
    }
    Ok(())
}

/// The ends of range `spec` as the user named them (a side left empty is HEAD; a single
/// revision's old end is its first parent), with their commits: the old end (none for a root
/// commit's range), then the new end.
fn range_ends(
    repo: &crate::git::Repo,
    spec: &str,
) -> anyhow::Result<Vec<(&'static str, String, gix::ObjectId)>> {
    let (base, ids) = repo.range_ids(spec)?;
    let spec = spec.trim();
    let (old, new) = match spec.split_once("..") {
        Some((a, b)) => {
            let or_head = |s: &str| if s.is_empty() { "HEAD" } else { s }.to_string();
            (or_head(a), or_head(b))
        }
        None => (format!("{spec}^"), spec.to_string()),
    };
    let mut out = Vec::new();
    if let Some(b) = base {
        out.push(("old end", old, b));
    }
    if let Some(&last) = ids.last() {
        out.push(("new end", new, last));
    }
    Ok(out)
}
