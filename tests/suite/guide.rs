//! The guide and README.md stay true to the code: the generated parts (the command reference
//! from clap, the configuration keys from the parser's table, the list of pages, README's
//! table of commands) equal what the code generates now (`UPDATE_GUIDE=1` rewrites them),
//! every relative link resolves, `perfbisect guide` lists and prints every page, README.md
//! stays a front page, and every help text points into the guide.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_perfbisect"));
    c.env("NO_COLOR", "1");
    c
}

/// README.md and every page of the guide: (path relative to the crate, text).
fn documents() -> Vec<(String, String)> {
    let mut out = vec![(
        "README.md".to_string(),
        std::fs::read_to_string(root().join("README.md")).unwrap(),
    )];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("src/guide"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    for p in pages {
        let rel = p
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        out.push((rel, std::fs::read_to_string(&p).unwrap()));
    }
    out
}

#[test]
fn generated_parts_equal_what_the_code_generates() {
    let update = std::env::var_os("UPDATE_GUIDE").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for part in perfbisect::guide::generate::parts() {
        let path = root().join(part.file);
        let text = std::fs::read_to_string(&path).unwrap();
        let Some(fresh) = perfbisect::guide::generate::refresh(&text, part.name, &part.content)
        else {
            stale.push(format!(
                "{} (no markers of the part `{}`)",
                part.file, part.name
            ));
            continue;
        };
        if fresh != text {
            if update {
                std::fs::write(&path, &fresh).unwrap();
            } else {
                stale.push(format!("{} ({})", part.file, part.name));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "generated parts differ from the code: {}; run `UPDATE_GUIDE=1 cargo test --test suite guide::` \
         and commit the result",
        stale.join(", ")
    );
}

/// The targets of Markdown links `[text](target)` in `text`, outside code.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans hold no links.
        let mut plain = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                plain += part;
            }
        }
        let mut rest = plain.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

/// GitHub's anchors of the headings in `text`.
fn anchors(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let heading = line.trim_start_matches('#').trim();
        let a: String = heading
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let n = out.iter().filter(|o: &&String| **o == a).count();
        out.push(a.clone());
        if n > 0 {
            out.push(format!("{a}-{n}"));
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let docs = documents();
    let mut broken = Vec::new();
    for (file, text) in &docs {
        let dir = Path::new(file).parent().unwrap_or(Path::new(""));
        for target in links(text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() {
                PathBuf::from(file)
            } else {
                dir.join(path)
            };
            let on_disk = root().join(&resolved);
            if !on_disk.exists() {
                broken.push(format!("{file}: {target} (no {})", resolved.display()));
                continue;
            }
            if let Some(a) = anchor {
                let text = std::fs::read_to_string(&on_disk).unwrap_or_default();
                if !anchors(&text).iter().any(|x| x == a) {
                    broken.push(format!("{file}: {target} (no heading #{a})"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn readme_is_a_front_page_into_at_least_six_guide_pages() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.len() <= 15 * 1024,
        "README.md is {} bytes; keep it a front page (at most 15 KB) and put the rest in the guide",
        readme.len()
    );
    let pages = perfbisect::guide::PAGES;
    assert!(pages.len() >= 6);
    for p in pages {
        assert!(
            root().join(p.file()).is_file(),
            "{} is listed but missing",
            p.file()
        );
    }
    // Every page file is a listed page (README.md is the guide's own index).
    for (file, _) in documents() {
        if let Some(name) = file
            .strip_prefix("src/guide/")
            .and_then(|f| f.strip_suffix(".md"))
        {
            assert!(
                name == "README" || perfbisect::guide::page(name).is_some(),
                "{file} is not in guide::PAGES"
            );
        }
    }
    let linked = links(&readme);
    let into_guide = pages
        .iter()
        .filter(|p| linked.iter().any(|l| l.starts_with(&p.file())))
        .count();
    assert!(into_guide >= 6, "README.md links {into_guide} guide pages");
}

#[test]
fn perfbisect_guide_lists_and_prints_every_page_offline() {
    let out = bin().arg("guide").output().unwrap();
    assert!(out.status.success());
    let list = String::from_utf8(out.stdout).unwrap();
    for p in perfbisect::guide::PAGES {
        assert!(list.contains(&format!("  {} ", p.name)), "{list}");
        let out = bin().args(["guide", p.name]).output().unwrap();
        assert!(out.status.success(), "{}", p.name);
        let on_disk = std::fs::read_to_string(root().join(p.file())).unwrap();
        // Not assert_eq!: a page is long, and the line that differs is what helps.
        let printed = String::from_utf8(out.stdout).unwrap();
        let differs = printed
            .lines()
            .zip(on_disk.lines())
            .position(|(a, b)| a != b)
            .or((printed.lines().count() != on_disk.lines().count()).then_some(0));
        assert!(
            differs.is_none(),
            "{}: the binary's page is not the file (line {})",
            p.name,
            differs.unwrap_or(0) + 1
        );
    }
    let out = bin().args(["guide", "noize"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean `noise`?"), "{err}");
}

#[test]
fn every_help_ends_with_a_pointer_into_the_guide() {
    fn walk(prefix: Vec<String>, c: &clap::Command, out: &mut Vec<Vec<String>>) {
        out.push(prefix.clone());
        for s in c.get_subcommands().filter(|s| s.get_name() != "help") {
            let mut p = prefix.clone();
            p.push(s.get_name().to_string());
            walk(p, s, out);
        }
    }
    use clap::CommandFactory;
    let mut all = Vec::new();
    walk(Vec::new(), &perfbisect::cli::Cli::command(), &mut all);
    for words in all {
        for flag in ["-h", "--help"] {
            let out = bin().args(&words).arg(flag).output().unwrap();
            let help = String::from_utf8(out.stdout).unwrap();
            let last = help.trim_end().lines().last().unwrap_or("").to_string();
            let tail = help
                .trim_end()
                .rsplit("\n\n")
                .next()
                .unwrap_or("")
                .to_string();
            let page = tail
                .split("perfbisect guide ")
                .nth(1)
                .and_then(|r| r.split('`').next())
                .unwrap_or("");
            assert!(
                perfbisect::guide::page(page).is_some(),
                "`perfbisect {} {flag}` ends with `{last}`, not a guide page",
                words.join(" ")
            );
        }
    }
}

/// Each benchmark script writes its own section of benchmarks.md through
/// scripts/bench-page.py: every section a script names is on the page, and every section of
/// the page has its end.
#[test]
fn every_benchmark_script_has_its_section_on_the_benchmarks_page() {
    let page = std::fs::read_to_string(root().join("src/guide/benchmarks.md")).unwrap();
    let mut named = Vec::new();
    for e in std::fs::read_dir(root().join("scripts")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("bench-") || name == "bench-page.py" {
            continue;
        }
        let text = std::fs::read_to_string(e.path()).unwrap();
        // The call, not a comment about it: the line that runs bench-page.py NAME ... --.
        let call = text.lines().find(|l| {
            !l.trim_start().starts_with('#') && l.contains("bench-page.py") && l.contains("exec")
        });
        let Some(call) = call else {
            // bench-speed.py's sections (speed, speed-counted for --jobs) are written by
            // bench-page.py called by hand: one script, two sections.
            assert_eq!(name, "bench-speed.py", "{name} does not write its section");
            continue;
        };
        let after = call.split("bench-page.py").nth(1).unwrap();
        let section = after
            .split(|c: char| c == '"' || c == ')' || c == ',' || c.is_whitespace())
            .find(|w| !w.is_empty())
            .unwrap()
            .to_string();
        named.push(section);
    }
    assert!(named.len() >= 6, "{named:?}");
    for s in &named {
        for m in [
            format!("<!-- begin bench: {s} -->"),
            format!("<!-- end bench: {s} -->"),
        ] {
            assert!(page.contains(&m), "benchmarks.md has no `{m}`");
        }
    }
    assert_eq!(
        page.matches("<!-- begin bench: ").count(),
        page.matches("<!-- end bench: ").count()
    );
}
