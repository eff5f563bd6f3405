//! `perfbisect config check` and `perfbisect config init`.
//!
//! `check` validates the config the global options pick (every key, regex, JSON pointer and
//! harness metric; exit 2 naming the key and line) without building anything, then warns,
//! with key and line, about commands whose program cannot be found: a first word not on PATH,
//! a helper script missing beside the config, a test program that is not among the build's
//! artifacts. For `[build] cargo` it says the cargo commands a build of the checkout runs,
//! with the exact package id `cargo metadata` gives (nothing is built). `init` prints a starting config for the repository at hand on stdout.

use crate::cli::{ConfigAction, ConfigArgs, Global};

/// Run `config check` or `config init`.
pub fn config(g: &Global, args: ConfigArgs) -> anyhow::Result<()> {
    match args.action {
        ConfigAction::Check => check(g),
        ConfigAction::Init => init(g),
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
            crate::paths::display_path(&path)
        );
    }
    let warnings = crate::lint::warnings(&cfg, &crate::lint::path_dirs());
    for w in &warnings {
        eprintln!("{w}");
    }
    let counted = crate::lint::counters(&cfg);
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
        crate::paths::display_path(&path),
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
                crate::paths::display_path(&path)
            ),
        }
    }
    Ok(())
}

fn init(g: &Global) -> anyhow::Result<()> {
    let dir = match crate::git::Repo::open(g.repo.as_deref()) {
        Ok(r) => r.dir().to_path_buf(),
        Err(_) => match &g.repo {
            Some(d) if d.is_dir() => d.clone(),
            Some(d) => crate::usage!("--repo {}: no such directory", d.display()),
            None => std::env::current_dir()?,
        },
    };
    let dir = crate::paths::normalize(&dir);
    let mut found = crate::scaffold::detect(&dir);
    let probed = crate::scaffold::probe(&dir, &mut found);
    print!("{}", crate::scaffold::render(&dir, &found));
    if !g.quiet {
        if let Some(p) = probed {
            eprintln!("perfbisect: {p}");
        }
        let what = match found.first() {
            Some(f) => format!("{} ({})", f.system.name(), f.evidence),
            None => "no build system I know".to_string(),
        };
        let program = crate::scaffold::program_note(&found)
            .map(|n| format!("; {n}"))
            .unwrap_or_default();
        eprintln!(
            "perfbisect: found {what} in {}{program}; save the config printed above (e.g. as perfbisect.toml) and run `perfbisect config check`",
            dir.display()
        );
    }
    Ok(())
}
