//! What an autotools project's `configure.ac` and `Makefile.am` say a release build needs,
//! for `config init`: the options a release build is configured with (maintainer mode off
//! where `AM_MAINTAINER_MODE` offers it: its rules remake the generated parser, lexer and
//! build files from their sources whenever those look newer, which a fresh checkout's
//! timestamps decide by chance), and the tools the build runs, each looked for on PATH.

use std::path::Path;

/// One tool an autotools build runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// The program looked for on PATH (`autoreconf`, `flex`).
    pub program: &'static str,
    /// The Debian package that has it.
    pub package: &'static str,
    /// What the build needs it for.
    pub why: String,
    /// Whether it is on PATH here.
    pub found: bool,
}

/// What `configure.ac` and `Makefile.am` say about a release build of the project.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Autotools {
    /// `AM_MAINTAINER_MODE` is there; `Some(true)` when it is on by default (`[enable]`).
    pub maintainer_mode: Option<bool>,
    /// The tools the build runs with the options of [`Autotools::options`].
    pub tools: Vec<Tool>,
    /// Tools only maintainer mode runs, left out by `--disable-maintainer-mode`: what they
    /// would remake (`flex: src/lexer.l`).
    pub maintainer_only: Vec<String>,
}

impl Autotools {
    /// The options `./configure` gets: ` --disable-maintainer-mode` where the project offers
    /// maintainer mode, else nothing.
    pub fn options(&self) -> &'static str {
        if self.maintainer_mode.is_some() {
            " --disable-maintainer-mode"
        } else {
            ""
        }
    }

    /// The tools that are not on PATH here.
    pub fn missing(&self) -> Vec<&Tool> {
        self.tools.iter().filter(|t| !t.found).collect()
    }
}

/// Read the project in `dir` (its tracked files `tracked`): what a release build needs.
/// `configure_tracked`: the project tracks its `configure` (no autoreconf then).
pub fn read(dir: &Path, tracked: &[String], configure_tracked: bool) -> Autotools {
    let ac = ["configure.ac", "configure.in"]
        .iter()
        .find_map(|f| std::fs::read_to_string(dir.join(f)).ok())
        .unwrap_or_default();
    let ac = strip_dnl(&ac);
    let am = std::fs::read_to_string(dir.join("Makefile.am")).unwrap_or_default();
    let maintainer_mode = regex::Regex::new(r"AM_MAINTAINER_MODE\s*(\(\s*\[?\s*(\w+))?")
        .expect("valid regex")
        .captures(&ac)
        .map(|c| c.get(2).is_some_and(|m| m.as_str() == "enable"));
    // Maintainer mode gates the parser and lexer rules of this Makefile.am (`if
    // MAINTAINER_MODE`), or automake's own rules for the build files only.
    let gated = maintainer_mode.is_some()
        && (am.contains("if MAINTAINER_MODE") || am.contains("@MAINTAINER_MODE_TRUE@"));
    let mut tools = Vec::new();
    let mut maintainer_only = Vec::new();
    let mut need = |program: &'static str, package: &'static str, why: String| {
        if !tools.iter().any(|t: &Tool| t.program == program) {
            tools.push(Tool {
                program,
                package,
                why,
                found: on_path(program),
            });
        }
    };
    if !configure_tracked {
        need(
            "autoreconf",
            "autoconf",
            "makes `configure` from configure.ac, which is not tracked".into(),
        );
        if ac.contains("AM_INIT_AUTOMAKE") {
            need(
                "automake",
                "automake",
                "makes each Makefile.in from its Makefile.am, for AM_INIT_AUTOMAKE".into(),
            );
        }
        if ["LT_INIT", "AC_PROG_LIBTOOL", "AM_PROG_LIBTOOL"]
            .iter()
            .any(|m| ac.contains(m))
        {
            need(
                "libtoolize",
                "libtool",
                "adds libtool's scripts, for LT_INIT".into(),
            );
        }
        if ac.contains("PKG_CHECK_MODULES") || ac.contains("PKG_PROG_PKG_CONFIG") {
            need(
                "pkg-config",
                "pkg-config",
                "its pkg.m4 macros, for PKG_CHECK_MODULES".into(),
            );
        }
    }
    // Generated sources: a tracked `.l`/`.y` whose `.c` is tracked beside it is remade only
    // by rules maintainer mode gates, when it gates them; otherwise the build runs the tool.
    for (ext, program, package) in [("l", "flex", "flex"), ("y", "bison", "bison")] {
        let sources: Vec<&String> = tracked
            .iter()
            .filter(|f| {
                f.rsplit_once('.').is_some_and(|(_, e)| e == ext)
                    && !f.starts_with("doc")
                    && !f.contains("/test")
            })
            .collect();
        let Some(first) = sources.first() else {
            continue;
        };
        let generated_tracked = sources.iter().all(|s| {
            let stem = &s[..s.len() - ext.len()];
            tracked.iter().any(|t| *t == format!("{stem}c"))
        });
        if generated_tracked && gated {
            maintainer_only.push(format!("{program}: {first}"));
        } else {
            need(
                program,
                package,
                format!(
                    "makes the {} from {first}",
                    if ext == "l" { "lexer" } else { "parser" }
                ),
            );
        }
    }
    Autotools {
        maintainer_mode,
        tools,
        maintainer_only,
    }
}

/// `text` without its `dnl` comments (a macro named in a comment is not called).
fn strip_dnl(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("dnl") {
            Some(i) if l[..i].trim().is_empty() || l[..i].ends_with(char::is_whitespace) => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `program` is a file on PATH.
fn on_path(program: &str) -> bool {
    super::lint::path_dirs()
        .iter()
        .any(|d| d.join(program).is_file())
}

/// The comment of the `[build]` section: the options and why, the tools and which are not
/// here.
pub fn comment(a: &Autotools) -> String {
    let mut parts = Vec::new();
    match a.maintainer_mode {
        Some(on) => {
            let only = if a.maintainer_only.is_empty() {
                String::new()
            } else {
                format!(
                    " ({} only in maintainer mode)",
                    a.maintainer_only
                        .iter()
                        .map(|m| format!("`{m}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            parts.push(format!(
                "--disable-maintainer-mode, as a release build is configured: maintainer mode \
                 ({}) remakes generated files from their sources whenever a checkout's \
                 timestamps make them look older, with tools a release build does not need{only}.",
                if on {
                    "on by default here"
                } else {
                    "off by default"
                }
            ));
        }
        None => parts.push("configure.ac offers no maintainer mode to turn off.".to_string()),
    }
    if !a.tools.is_empty() {
        let list: Vec<String> = a
            .tools
            .iter()
            .map(|t| {
                format!(
                    "{} ({}; {})",
                    t.program,
                    t.why,
                    if t.found {
                        "on PATH".to_string()
                    } else {
                        format!("NOT on PATH: Debian package `{}`", t.package)
                    }
                )
            })
            .collect();
        parts.push(format!("The build runs: {}.", list.join(", ")));
    }
    super::text::wrap_comment(&parts.join(" "))
}

/// What `config init` says on stderr about the tools that are missing here, if any.
pub fn note(a: &Autotools) -> Option<String> {
    let missing = a.missing();
    if missing.is_empty() {
        return None;
    }
    let names: Vec<String> = missing.iter().map(|t| format!("`{}`", t.program)).collect();
    let mut packages: Vec<&str> = missing.iter().map(|t| t.package).collect();
    packages.dedup();
    Some(format!(
        "the build runs {} (see the comment in [build]), not on PATH here: every build will fail \
         until {} (Debian: `apt-get install {}`)",
        names.join(", "),
        if missing.len() == 1 {
            "it is installed"
        } else {
            "they are installed"
        },
        packages.join(" ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(ac: &str, am: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("configure.ac"), ac).unwrap();
        std::fs::write(d.path().join("Makefile.am"), am).unwrap();
        d
    }

    fn tracked(files: &[&str]) -> Vec<String> {
        files.iter().map(|f| f.to_string()).collect()
    }

    #[test]
    fn maintainer_mode_is_turned_off_and_its_own_tools_are_not_needed() {
        // As jq's: on by default, the lexer and parser gated by `if MAINTAINER_MODE`, their
        // generated sources tracked.
        let d = project(
            "AC_INIT([x],[1])\nAM_INIT_AUTOMAKE\nAM_MAINTAINER_MODE([enable])\nLT_INIT\nAC_PROG_YACC\n",
            "if MAINTAINER_MODE\nsrc/lexer.c: src/lexer.l\n\tflex -o $@ $<\nendif\n",
        );
        let files = tracked(&["src/lexer.l", "src/lexer.c", "src/parser.y", "src/parser.c"]);
        let a = read(d.path(), &files, false);
        assert_eq!(a.maintainer_mode, Some(true));
        assert_eq!(a.options(), " --disable-maintainer-mode");
        let programs: Vec<&str> = a.tools.iter().map(|t| t.program).collect();
        assert_eq!(programs, ["autoreconf", "automake", "libtoolize"]);
        assert_eq!(
            a.maintainer_only,
            ["flex: src/lexer.l", "bison: src/parser.y"]
        );
        let c = comment(&a).replace("\n# ", " ");
        assert!(c.contains("on by default here"), "{c}");
    }

    #[test]
    fn ungated_or_untracked_generated_sources_need_their_tools() {
        let d = project(
            "AC_INIT([x],[1])\ndnl AM_MAINTAINER_MODE is not used\nAM_INIT_AUTOMAKE\n",
            "bin_PROGRAMS = x\nx_SOURCES = main.c scan.l\n",
        );
        let a = read(d.path(), &tracked(&["scan.l", "main.c"]), true);
        assert_eq!(
            a.maintainer_mode, None,
            "a macro in a dnl comment is not called"
        );
        assert_eq!(a.options(), "");
        let programs: Vec<&str> = a.tools.iter().map(|t| t.program).collect();
        assert_eq!(programs, ["flex"], "configure is tracked: no autoreconf");
        // Off by default, but the parser is not gated by it: bison is needed.
        let d = project(
            "AC_INIT([x],[1])\nAM_MAINTAINER_MODE\n",
            "x_SOURCES = gram.y\n",
        );
        let a = read(d.path(), &tracked(&["gram.y", "gram.c"]), true);
        assert_eq!(a.maintainer_mode, Some(false));
        assert_eq!(a.tools.len(), 1);
        assert_eq!(a.tools[0].program, "bison");
    }
}
