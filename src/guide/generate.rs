//! The parts of the guide that the code writes: the command reference from the clap
//! definitions (the text of `--help`), the configuration keys from the table the parser
//! checks keys against, the list of pages, and README.md's table of commands.
//!
//! Each part sits in its file between two markers, `<!-- begin generated: NAME -->` and
//! `<!-- end generated: NAME -->`; the prose around it is written by hand. `tests/suite/guide.rs`
//! regenerates every part and fails when a file differs (`UPDATE_GUIDE=1` rewrites them).

use clap::CommandFactory;

use crate::cli::Cli;
use crate::config::keys::{Kind, KEYS};

/// One generated part: the file it lives in (relative to the crate's top directory), its
/// name in the markers, and what belongs between them.
#[derive(Debug, Clone)]
pub struct Part {
    pub file: &'static str,
    pub name: &'static str,
    pub content: String,
}

/// Every generated part of README.md and the guide.
pub fn parts() -> Vec<Part> {
    vec![
        Part {
            file: "README.md",
            name: "command-table",
            content: command_table("src/guide/"),
        },
        Part {
            file: "README.md",
            name: "guide-pages",
            content: page_index("src/guide/"),
        },
        Part {
            file: "src/guide/README.md",
            name: "pages",
            content: page_index(""),
        },
        Part {
            file: "src/guide/commands.md",
            name: "commands",
            content: command_reference(),
        },
        Part {
            file: "src/guide/config.md",
            name: "keys",
            content: key_table(|p| !p.starts_with("build.cargo.")),
        },
        Part {
            file: "src/guide/rust.md",
            name: "cargo-keys",
            content: key_table(|p| p.starts_with("build.cargo.")),
        },
    ]
}

/// The begin and end markers of part `name`.
pub fn markers(name: &str) -> (String, String) {
    (
        format!("<!-- begin generated: {name} -->"),
        format!("<!-- end generated: {name} -->"),
    )
}

/// `text` with the part `name` replaced by `content`; `None` when the markers are missing.
pub fn refresh(text: &str, name: &str, content: &str) -> Option<String> {
    let (begin, end) = markers(name);
    let start = text.find(&begin)? + begin.len();
    let stop = start + text[start..].find(&end)?;
    Some(format!("{}\n{}{}", &text[..start], content, &text[stop..]))
}

/// The commands the reference lists, depth first: `perfbisect`, `perfbisect find`, ...,
/// `perfbisect config check`; clap's own `help` left out.
fn commands() -> Vec<clap::Command> {
    fn walk(c: &clap::Command, out: &mut Vec<clap::Command>) {
        out.push(c.clone());
        for s in c.get_subcommands().filter(|s| s.get_name() != "help") {
            walk(s, out);
        }
    }
    let mut root = Cli::command();
    root.build();
    let mut out = Vec::new();
    walk(&root, &mut out);
    out
}

/// A command's name as a user types it (`perfbisect config check`).
fn full_name(c: &clap::Command) -> String {
    c.get_bin_name().unwrap_or_else(|| c.get_name()).to_string()
}

/// GitHub's anchor of a heading `perfbisect config check`.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every command's `--help`, a section each, with a list of them first.
pub fn command_reference() -> String {
    let cmds = commands();
    let mut o = String::new();
    for c in &cmds[1..] {
        let name = full_name(c);
        o += &format!(
            "- [`{name}`](#{}): {}\n",
            anchor(&name),
            one_line(c.get_about().map(|a| a.to_string()).unwrap_or_default())
        );
    }
    for c in cmds {
        let name = full_name(&c);
        let mut c = c;
        let help = c.render_long_help().to_string();
        o += &format!("\n## {name}\n\n```text\n{}\n```\n", help.trim_end());
    }
    o
}

/// The first sentence of an about text, without its full stop.
fn one_line(about: String) -> String {
    about
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .trim_end_matches('.')
        .to_string()
}

/// README.md's table: each top-level command with its arguments and what it does, linked to
/// its section of the reference (`prefix` is the guide's folder as seen from the file).
pub fn command_table(prefix: &str) -> String {
    let cmds = commands();
    let mut o = String::from("| command | what it does |\n|---|---|\n");
    o += &format!(
        "| [`perfbisect TEST RANGE`]({prefix}commands.md#perfbisect) | the same as `find TEST RANGE` |\n"
    );
    for c in cmds
        .iter()
        .filter(|c| c.get_bin_name().is_some_and(|b| b.split(' ').count() == 2))
    {
        let name = full_name(c);
        let mut shown = c.get_name().to_string();
        let subs: Vec<&str> = c
            .get_subcommands()
            .map(|s| s.get_name())
            .filter(|n| *n != "help")
            .collect();
        if !subs.is_empty() {
            shown += &format!(" {}", subs.join("\\|"));
        }
        for a in c.get_positionals() {
            let v = a
                .get_value_names()
                .and_then(|v| v.first())
                .map(|v| v.to_string())
                .unwrap_or_else(|| a.get_id().as_str().to_uppercase());
            shown += &if a.is_required_set() {
                format!(" {v}")
            } else {
                format!(" [{v}]")
            };
        }
        o += &format!(
            "| [`{shown}`]({prefix}commands.md#{}) | {} |\n",
            anchor(&name),
            one_line(c.get_about().map(|a| a.to_string()).unwrap_or_default()).replace('|', "\\|")
        );
    }
    o
}

/// The guide's pages, a line each, linked from a file in `prefix` (as seen from that file).
pub fn page_index(prefix: &str) -> String {
    let mut o = String::from("| page | what it is for |\n|---|---|\n");
    for p in super::pages::PAGES {
        o += &format!(
            "| [{}]({prefix}{}.md) (`perfbisect guide {}`) | {} |\n",
            p.title(),
            p.name,
            p.name,
            p.about
        );
    }
    o
}

/// The configuration keys whose path `keep` accepts, as a Markdown table (tables of keys
/// are not rows of their own: their keys are).
pub fn key_table(keep: impl Fn(&str) -> bool) -> String {
    let mut o = String::from("| key | meaning | default |\n|---|---|---|\n");
    for k in KEYS
        .iter()
        .filter(|k| k.kind != Kind::Table && k.path != "tests" && keep(k.path))
    {
        o += &format!(
            "| `{}` | {} | {} |\n",
            k.path,
            k.meaning,
            if k.default.is_empty() {
                "—"
            } else {
                k.default
            }
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_is_replaced_between_its_markers_and_only_there() {
        let text = "intro\n<!-- begin generated: x -->\nold\n<!-- end generated: x -->\nafter\n";
        assert_eq!(
            refresh(text, "x", "new\n").unwrap(),
            "intro\n<!-- begin generated: x -->\nnew\n<!-- end generated: x -->\nafter\n"
        );
        assert!(refresh(text, "y", "new\n").is_none());
        assert_eq!(anchor("perfbisect config check"), "perfbisect-config-check");
    }

    #[test]
    fn the_reference_has_every_command_with_its_help() {
        let r = command_reference();
        for name in [
            "## perfbisect\n",
            "## perfbisect find\n",
            "## perfbisect config check\n",
        ] {
            assert!(r.contains(name), "no {name}");
        }
        assert!(
            r.contains("Usage: perfbisect find [OPTIONS] <TEST> <RANGE>"),
            "{r}"
        );
        assert!(!r.contains("## perfbisect help"), "{r}");
    }
}
