//! Building a Rust project with cargo (`[build] cargo = {...}`): `cargo metadata` says which
//! workspace member holds each named target, `cargo build` / `cargo bench --no-run` build them
//! with `--message-format=json-render-diagnostics`, and cargo's `compiler-artifact` messages
//! say where each executable landed. Nobody writes a path under `target/` by hand.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use cargo_metadata::{Message, Metadata, Package, TargetKind};

use crate::config::CargoBuild;
use crate::process::{self, Output, Spec, Status};

/// How a cargo build ended.
pub enum Built {
    /// Each target's name and the executable cargo reported for it.
    Executables(Vec<(String, PathBuf)>),
    /// The build failed; the reason (the log's tail follows it in the failure record).
    Failed(String),
    /// Ctrl-C.
    Interrupted,
}

/// What runs cargo: the worktree, the build's environment, its time limit and its log.
pub struct Run<'a> {
    pub worktree: &'a Path,
    pub env: Vec<(String, String)>,
    pub deadline: Instant,
    pub timeout: Duration,
    pub log: &'a Path,
    /// A directory for cargo's JSON on stdout (the cache's tmp).
    pub scratch: &'a Path,
}

/// Build the targets of `cargo` in the worktree and find their executables.
pub fn build(cargo: &CargoBuild, run: &Run<'_>) -> anyhow::Result<Built> {
    let meta = match step(run, "cargo metadata --format-version 1 --no-deps")? {
        Ok(text) => match cargo_metadata::MetadataCommand::parse(text) {
            Ok(m) => m,
            Err(e) => {
                return Ok(Built::Failed(format!(
                    "cannot read the output of `cargo metadata`: {e}"
                )))
            }
        },
        Err(b) => return Ok(b),
    };
    let plan = match plan(cargo, &meta) {
        Ok(p) => p,
        Err(why) => return Ok(Built::Failed(why)),
    };
    let mut found: BTreeMap<String, PathBuf> = BTreeMap::new();
    for inv in &plan.invocations {
        let messages = match step(run, &inv.command)? {
            Ok(text) => text,
            Err(b) => return Ok(b),
        };
        for m in Message::parse_stream(messages.as_bytes()) {
            let Ok(Message::CompilerArtifact(a)) = m else {
                continue;
            };
            let Some(exe) = a.executable else { continue };
            if !a.target.kind.contains(&inv.kind) || !inv.packages.contains(&a.package_id.repr) {
                continue;
            }
            if inv.names.is_empty() || inv.names.contains(&a.target.name) {
                found.insert(a.target.name.clone(), exe.into_std_path_buf());
            }
        }
        for n in &inv.names {
            if !found.contains_key(n) {
                return Ok(Built::Failed(format!(
                    "cargo reported no executable for {} target `{n}` (see the log)",
                    kind_word(&inv.kind)
                )));
            }
        }
    }
    if found.is_empty() {
        return Ok(Built::Failed(
            "cargo built no executable (the package has no bin target; name `bins` or `benches`)"
                .into(),
        ));
    }
    Ok(Built::Executables(found.into_iter().collect()))
}

/// One cargo command and what it must produce.
struct Invocation {
    command: String,
    kind: TargetKind,
    /// Ids of the packages whose targets count.
    packages: Vec<String>,
    /// The targets named in the config (empty: every bin of `packages`).
    names: Vec<String>,
}

struct Plan {
    invocations: Vec<Invocation>,
}

fn kind_word(k: &TargetKind) -> &'static str {
    if *k == TargetKind::Bench {
        "bench"
    } else {
        "bin"
    }
}

/// The workspace members `cargo.package` allows.
fn members<'m>(cargo: &CargoBuild, meta: &'m Metadata) -> Result<Vec<&'m Package>, String> {
    let all = meta.workspace_packages();
    match &cargo.package {
        None => Ok(all),
        Some(p) => {
            let names: Vec<&str> = all.iter().map(|m| m.name.as_str()).collect();
            let hit: Vec<&Package> = all.into_iter().filter(|m| m.name.as_str() == p).collect();
            if hit.is_empty() {
                return Err(format!(
                    "package `{p}` is not a member of the workspace at this commit{} (members: {})",
                    crate::error::did_you_mean(p, names.iter().copied()),
                    names.join(", ")
                ));
            }
            Ok(hit)
        }
    }
}

/// Which packages hold the named targets, and the cargo commands that build them.
fn plan(cargo: &CargoBuild, meta: &Metadata) -> Result<Plan, String> {
    let members = members(cargo, meta)?;
    let mut invocations = Vec::new();
    let bins_all = cargo.bins.is_empty() && cargo.benches.is_empty();
    for (kind, names) in [
        (TargetKind::Bin, &cargo.bins),
        (TargetKind::Bench, &cargo.benches),
    ] {
        if names.is_empty() && !(bins_all && kind == TargetKind::Bin) {
            continue;
        }
        let mut packages: Vec<&Package> = Vec::new();
        if names.is_empty() {
            // Every bin of the chosen package, or of the default members.
            let pool = if cargo.package.is_some() {
                members.clone()
            } else {
                let d = meta.workspace_default_packages();
                if d.is_empty() {
                    members.clone()
                } else {
                    d
                }
            };
            packages = pool
                .into_iter()
                .filter(|p| p.targets.iter().any(|t| t.is_kind(TargetKind::Bin)))
                .collect();
            if packages.is_empty() {
                return Err("no package of the workspace has a bin target; name the targets in `bins` or `benches`".into());
            }
        }
        for n in names.iter() {
            let holders: Vec<&Package> = members
                .iter()
                .copied()
                .filter(|p| {
                    p.targets
                        .iter()
                        .any(|t| t.is_kind(kind.clone()) && &t.name == n)
                })
                .collect();
            match holders.as_slice() {
                [] => {
                    let have: Vec<&str> = members
                        .iter()
                        .flat_map(|p| &p.targets)
                        .filter(|t| t.is_kind(kind.clone()))
                        .map(|t| t.name.as_str())
                        .collect();
                    return Err(format!(
                        "no {} target `{n}` in the workspace at this commit{} ({} targets: {})",
                        kind_word(&kind),
                        crate::error::did_you_mean(n, have.iter().copied()),
                        kind_word(&kind),
                        if have.is_empty() {
                            "none".to_string()
                        } else {
                            have.join(", ")
                        }
                    ));
                }
                [one] => {
                    if !packages.iter().any(|p| p.id == one.id) {
                        packages.push(one);
                    }
                }
                many => {
                    let names: Vec<&str> = many.iter().map(|p| p.name.as_str()).collect();
                    return Err(format!(
                        "{} target `{n}` is in several packages ({}); set `package` in [build] cargo",
                        kind_word(&kind),
                        names.join(", ")
                    ));
                }
            }
        }
        let mut cmd = String::from(if kind == TargetKind::Bench {
            "cargo bench --no-run"
        } else {
            "cargo build"
        });
        cmd += " --message-format=json-render-diagnostics";
        // Benches keep `cargo bench`'s own profile (`bench`, which inherits `release`)
        // unless one is configured.
        match (&kind, &cargo.profile) {
            (TargetKind::Bench, None) => {}
            _ => cmd += &format!(" --profile {}", quote(cargo.bin_profile())),
        }
        for p in &packages {
            cmd += &format!(" -p {}", quote(&package_spec(p)));
        }
        if names.is_empty() {
            cmd += " --bins";
        }
        for n in names.iter() {
            cmd += &format!(" --{} {}", kind_word(&kind), quote(n));
        }
        if !cargo.features.is_empty() {
            cmd += &format!(" --features {}", quote(&cargo.features.join(",")));
        }
        if cargo.no_default_features {
            cmd += " --no-default-features";
        }
        invocations.push(Invocation {
            command: cmd,
            kind: kind.clone(),
            packages: packages.iter().map(|p| p.id.repr.clone()).collect(),
            names: names.clone(),
        });
    }
    Ok(Plan { invocations })
}

/// The package's exact id as a package id spec for `-p`: its name alone is ambiguous once a
/// dependency (a dev-dependency's own dependency, say) pulls another copy of the crate.
/// cargo ≥ 1.77 prints ids as specs already (`path+file:///w/app#0.1.0`); older ones as
/// `name version (source)`, rewritten here as `source#name@version`.
fn package_spec(p: &Package) -> String {
    let id = &p.id.repr;
    match id.split_once(" (") {
        Some((_, source)) if id.ends_with(')') => {
            format!("{}#{}@{}", &source[..source.len() - 1], p.name, p.version)
        }
        _ => id.clone(),
    }
}

/// What a cargo build of `cargo` runs in `dir` (the user's checkout, read only: `cargo metadata
/// --no-deps` resolves nothing and writes nothing), one line per command, or why it would fail.
pub fn describe(cargo: &CargoBuild, dir: &Path) -> Result<Vec<String>, String> {
    let out = std::process::Command::new("cargo")
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(dir)
        .env("CARGO_NET_OFFLINE", "true")
        .output()
        .map_err(|e| format!("cannot run `cargo metadata`: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "`cargo metadata` failed in {}: {}",
            dir.display(),
            err.trim()
        ));
    }
    let meta = cargo_metadata::MetadataCommand::parse(String::from_utf8_lossy(&out.stdout))
        .map_err(|e| format!("cannot read the output of `cargo metadata`: {e}"))?;
    Ok(plan(cargo, &meta)?
        .invocations
        .into_iter()
        .map(|i| i.command)
        .collect())
}

/// `s` as one word for `sh` (cargo names need no quotes; features may).
fn quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_/,.+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Run one cargo command in the worktree, its stderr appended to the log and its stdout
/// (JSON) returned. `Err` is how the build ended when the command did not succeed.
fn step(run: &Run<'_>, command: &str) -> anyhow::Result<Result<String, Built>> {
    use std::io::Write as _;
    let mut log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(run.log)
        .with_context(|| format!("cannot open {}", run.log.display()))?;
    let _ = writeln!(log, "$ {command}");
    fs::create_dir_all(run.scratch)?;
    let out = tempfile::Builder::new()
        .prefix("cargo-json.")
        .tempfile_in(run.scratch)
        .context("cannot create a temp file for cargo's messages")?;
    let mut env = run.env.clone();
    env.push((
        "PERFBISECT_CARGO_JSON".into(),
        out.path().display().to_string(),
    ));
    // Each worktree slot keeps its own target/ (incremental builds, and two slots building at
    // once never share one), whatever CARGO_TARGET_DIR the environment has; `[build] env`
    // may still set one on purpose.
    if !env.iter().any(|(k, _)| k == "CARGO_TARGET_DIR") {
        if std::env::var_os("CARGO_TARGET_DIR").is_some() {
            use std::sync::Once;
            static SAID: Once = Once::new();
            SAID.call_once(|| {
                eprintln!(
                    "perfbisect: note: CARGO_TARGET_DIR is set in the environment; each worktree slot builds into its own target/ instead (set it in [build] env to share one on purpose)"
                )
            });
        }
        env.push((
            "CARGO_TARGET_DIR".into(),
            run.worktree.join("target").display().to_string(),
        ));
    }
    let left = run.deadline.saturating_duration_since(Instant::now());
    let fin = process::run(Spec {
        command: &format!("{command} >\"$PERFBISECT_CARGO_JSON\""),
        dir: run.worktree,
        env,
        timeout: left.max(Duration::from_millis(1)),
        output: Output::File(log),
        interrupt: Some(&crate::base::interrupt::REQUESTED),
        kill_leftovers: true,
        own_rss: false,
        extra: Default::default(),
    })?;
    match fin.status {
        Status::Interrupted => return Ok(Err(Built::Interrupted)),
        Status::TimedOut => {
            return Ok(Err(Built::Failed(format!(
                "build timed out after {} (in `{command}`)",
                humantime::format_duration(run.timeout)
            ))))
        }
        Status::Exited(127) => {
            return Ok(Err(Built::Failed(
                "`cargo` is not on PATH (exit code 127)".into(),
            )))
        }
        s if !s.success() => return Ok(Err(Built::Failed(format!("`{command}` failed ({s})")))),
        _ => {}
    }
    let text = fs::read_to_string(out.path())
        .with_context(|| format!("cannot read cargo's messages in {}", out.path().display()))?;
    Ok(Ok(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cargo metadata --no-deps` of a workspace with members `app` (bins app, tool; bench
    /// speed) and `other` (bin tool).
    fn meta() -> Metadata {
        meta_with(|name| format!("path+file:///w/{name}#0.1.0"))
    }

    /// The same workspace with its ids as `id` writes them.
    fn meta_with(id: impl Fn(&str) -> String) -> Metadata {
        let pkg = |name: &str, targets: &[(&str, &str)]| {
            let ts: Vec<String> = targets
                .iter()
                .map(|(k, n)| {
                    format!(
                        r#"{{"name": "{n}", "kind": ["{k}"], "crate_types": ["bin"], "required-features": [], "src_path": "/w/{name}/src/{n}.rs", "edition": "2021", "doctest": false, "test": true, "doc": false}}"#
                    )
                })
                .collect();
            format!(
                r#"{{"name": "{name}", "version": "0.1.0", "id": "{}", "license": null, "license_file": null, "description": null, "source": null, "dependencies": [], "targets": [{}], "features": {{}}, "manifest_path": "/w/{name}/Cargo.toml", "metadata": null, "publish": null, "authors": [], "categories": [], "keywords": [], "readme": null, "repository": null, "homepage": null, "documentation": null, "edition": "2021", "links": null, "default_run": null, "rust_version": null}}"#,
                id(name),
                ts.join(",")
            )
        };
        let text = format!(
            r#"{{"packages": [{}, {}], "workspace_members": ["{}", "{}"], "workspace_default_members": ["{}"], "resolve": null, "target_directory": "/w/target", "version": 1, "workspace_root": "/w", "metadata": null}}"#,
            pkg(
                "app",
                &[("bin", "app"), ("bin", "tool"), ("bench", "speed")]
            ),
            pkg("other", &[("bin", "tool")]),
            id("app"),
            id("other"),
            id("app"),
        );
        cargo_metadata::MetadataCommand::parse(text).unwrap()
    }

    fn cargo(bins: &[&str], benches: &[&str], package: Option<&str>) -> CargoBuild {
        CargoBuild {
            bins: bins.iter().map(|s| s.to_string()).collect(),
            benches: benches.iter().map(|s| s.to_string()).collect(),
            package: package.map(str::to_string),
            ..CargoBuild::default()
        }
    }

    #[test]
    fn targets_are_found_in_their_workspace_member() {
        let p = plan(&cargo(&["app"], &["speed"], None), &meta()).unwrap();
        assert_eq!(
            p.invocations[0].command,
            "cargo build --message-format=json-render-diagnostics --profile release -p 'path+file:///w/app#0.1.0' --bin app"
        );
        assert_eq!(
            p.invocations[1].command,
            "cargo bench --no-run --message-format=json-render-diagnostics -p 'path+file:///w/app#0.1.0' --bench speed"
        );
        // Every bin of the default member when nothing is named.
        let p = plan(&cargo(&[], &[], None), &meta()).unwrap();
        assert_eq!(p.invocations.len(), 1);
        assert!(
            p.invocations[0]
                .command
                .ends_with("-p 'path+file:///w/app#0.1.0' --bins"),
            "{}",
            p.invocations[0].command
        );
    }

    #[test]
    fn packages_are_named_by_their_exact_id_whatever_cargo_prints() {
        // cargo before 1.77 printed `name version (source)`, which `-p` does not take.
        let m = meta_with(|name| format!("{name} 0.1.0 (path+file:///w/{name})"));
        let p = plan(&cargo(&["app"], &[], None), &m).unwrap();
        assert!(
            p.invocations[0]
                .command
                .ends_with("-p 'path+file:///w/app#app@0.1.0' --bin app"),
            "{}",
            p.invocations[0].command
        );
    }

    #[test]
    fn ambiguous_and_missing_targets_are_explained() {
        let e = plan(&cargo(&["tool"], &[], None), &meta()).err().unwrap();
        assert!(
            e.contains("several packages (app, other)") && e.contains("`package`"),
            "{e}"
        );
        let p = plan(&cargo(&["tool"], &[], Some("other")), &meta()).unwrap();
        assert!(p.invocations[0]
            .command
            .contains("-p 'path+file:///w/other#0.1.0' --bin tool"));
        let e = plan(&cargo(&["ap"], &[], None), &meta()).err().unwrap();
        assert!(
            e.contains("no bin target `ap`") && e.contains("did you mean `app`"),
            "{e}"
        );
        let e = plan(&cargo(&["app"], &[], Some("nope")), &meta())
            .err()
            .unwrap();
        assert!(
            e.contains("package `nope`") && e.contains("app, other"),
            "{e}"
        );
    }
}
