//! Untrusted text in the Markdown reports (what `--attach` posts to GitHub) renders as text:
//! a commit whose subject and author hold HTML comments, mentions, images, cross-references,
//! backticks and pipes, a unit and a description with more, through the real binary; and a
//! `gh` that never answers is killed at its timeout.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::Fixture;

const SUBJECT: &str =
    "<!-- hide the rest --> @alice ![x](https://e.vil/p.png) #1 `code` a|b <img src=x> *em*";
const AUTHOR: &str = "Eve @mallory";

const CONFIG: &str = r#"
[build]
command = "true"
artifacts = ["app"]

[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
deterministic = true
unit = "<b>B</b> @unitname"
description = "<!-- desc --> @descname #2 ![d](https://e.vil/d.png)"
"#;

/// A repository of three commits whose middle one (the step) has a hostile subject and author.
fn hostile() -> Fixture {
    hostile_with(SUBJECT)
}

/// [`hostile`] with this subject for the step.
fn hostile_with(step_subject: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str], author: &str| {
        let o = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", author)
            .env("GIT_AUTHOR_EMAIL", "eve@example.com")
            .env("GIT_COMMITTER_NAME", "Dev One")
            .env("GIT_COMMITTER_EMAIL", "dev@example.com")
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "git {args:?}: {}{}",
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&o.stdout)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    git(&["init", "-q", "-b", "main", "."], "Dev One");
    for (value, subject, author) in [
        (1000, "Start", "Dev One"),
        (1100, step_subject, AUTHOR),
        (1100, "More", "Dev One"),
    ] {
        let app = repo.join("app");
        std::fs::write(&app, format!("#!/bin/sh\necho value: {value}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&app, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(repo.join("NEWS"), subject).unwrap();
        git(&["add", "-A"], author);
        git(&["commit", "-q", "-m", subject], author);
    }
    let ids = git(&["rev-list", "--reverse", "main"], "Dev One")
        .lines()
        .map(str::to_string)
        .collect();
    let config = dir.path().join("perfbisect.toml");
    std::fs::write(&config, CONFIG).unwrap();
    Fixture {
        repo,
        config,
        cache: dir.path().join("cache"),
        ids,
        dir,
    }
}

/// The forms GitHub would act on: hidden text, mentions, images, links, cross-references,
/// HTML and code that the subject opened.
fn assert_inert(md: &str) {
    for active in [
        "<!--",
        "@alice",
        "@mallory",
        "@unitname",
        "@descname",
        "![x]",
        "![d]",
        "https://e.vil",
        "#1 ",
        "#2 ",
        "<img",
        "<b>",
        " `code` ",
        " a|b ",
        " *em*",
    ] {
        assert!(!md.contains(active), "`{active}` in:\n{md}");
    }
    // What they said is still there to read.
    assert!(md.contains("&lt;!-- hide the rest --&gt;"), "{md}");
    assert!(md.contains("\\`code\\`"), "{md}");
}

#[test]
fn markdown_reports_render_subjects_authors_units_and_descriptions_as_text() {
    let f = hostile();
    let range = f.range();
    let o = f
        .cmd()
        .args(["report", "value", &range, "--format", "md"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(md.contains(&f.ids[1][..10]), "the step is found:\n{md}");
    assert_inert(&md);
    let o = f
        .cmd()
        .args(["find", "value", &range, "--format", "md"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(md.contains("- author: Eve @\u{2060}mallory"), "{md}");
    assert_inert(&md);
}

/// Issue 38, defect 7: a subject that would retitle the terminal and rewrite the line
/// (`ESC ] 0 ; … BEL ESC [ 2 K CR`), turn the text around (U+202E) or link an issue (`GH-12`,
/// `owner/repo#3`) is shown, not acted on: in the terminal's text, the JSON and the Markdown.
#[test]
fn live_text_in_a_subject_is_shown_not_acted_on() {
    let live = "\u{1b}]0;pwned\u{7}\u{1b}[2K\rfix GH-12 and owner/repo#3 \u{202e}gnp.exe";
    let f = hostile_with(live);
    let range = f.range();
    let o = f.cmd().args(["find", "value", &range]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    for bad in ['\u{1b}', '\u{7}', '\r', '\u{202e}'] {
        assert!(!text.contains(bad), "{bad:?} in:\n{text}");
    }
    assert!(
        text.contains("\u{fffd}]0;pwned\u{fffd}\u{fffd}[2K fix GH-12"),
        "replaced: {text}"
    );
    assert!(text.contains("\\u{202e}gnp.exe"), "{text}");
    let j = f.json(&["find", "value", &range, "--format", "json"]);
    let subject = j["culprit"]["subject"].as_str().unwrap();
    assert!(
        !subject.contains('\u{1b}') && subject.contains("\u{fffd}]0;pwned"),
        "{subject}"
    );
    let o = f
        .cmd()
        .args(["find", "value", &range, "--format", "md"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&o.stdout).into_owned();
    for bad in ["GH-12", "repo#3", "\u{202e}", "\u{1b}"] {
        assert!(!md.contains(bad), "{bad:?} in:\n{md}");
    }
    assert!(md.contains("GH-\u{2060}12"), "{md}");
}

/// Issue 50: a tab in a subject reads as a space wherever the subject is shown (the text,
/// the Markdown, the JSON), never written out as `\u{9}`.
#[test]
fn a_tab_in_a_subject_reads_as_a_space() {
    let f = hostile_with("perf:\tfaster loop");
    let range = f.range();
    for format in ["text", "md"] {
        let o = f
            .cmd()
            .args(["find", "value", &range, "--format", format])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(out.contains("perf: faster loop"), "{format}: {out}");
        assert!(
            !out.contains("\\u{9}") && !out.contains('\t'),
            "{format}: {out}"
        );
    }
    let j = f.json(&["find", "value", &range, "--format", "json"]);
    assert_eq!(j["culprit"]["subject"], "perf: faster loop");
}

#[test]
fn a_gh_that_never_answers_is_killed_at_its_timeout() {
    let f = hostile();
    let bin = f.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let gh = bin.join("gh");
    let pidfile = f.dir.path().join("gh-sleep.pid");
    std::fs::write(
        &gh,
        format!(
            "#!/bin/sh\nsleep 300 &\necho $! > {}\nwait\n",
            pidfile.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = f
        .cmd()
        .env("PATH", path)
        .env("PERFBISECT_GH_TIMEOUT", "1")
        .args(["report", "value", &f.range(), "--attach", "o/r#1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("did not answer in") && stderr.contains("it is saved as"),
        "{stderr}"
    );
    // Its whole process group went with it: the `sleep` it started is gone. SIGKILL is
    // delivered when the process is next scheduled, which on a loaded machine can be a
    // moment after perfbisect has exited, so this waits (far less than the sleep's 300 s).
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let pid = pid.trim();
    let gone = || {
        !Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z ") || s.contains(") X "))
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !gone() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(gone(), "gh's sleep {pid} survived");
}
