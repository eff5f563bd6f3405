//! Paths as perfbisect prints them and hands them to commands: absolute, without `.` or
//! `..`; and the indentation of quoted text under a message. Below every other module, so
//! that config, git and the pipeline can all use it.

use std::path::{Path, PathBuf};

/// A path as messages print it: absolute, without `.` or `..` (`repo/../cache` is printed as
/// `cache`), so that it can be pasted from any directory.
pub fn display_path(p: &Path) -> String {
    normalize(p).display().to_string()
}

/// Why `rel`, a path read from a file perfbisect did not write itself (a manifest of another
/// cache, an import), cannot name a file inside the directory it is relative to: it is
/// empty, absolute, or has a `.`, `..` or empty component (or a NUL). `None`: it stays inside.
/// Symbolic links on the way are the caller's to refuse (it opens what it names).
pub fn outside_reason(rel: &str) -> Option<&'static str> {
    if rel.is_empty() {
        return Some("it is empty");
    }
    if rel.starts_with('/') {
        return Some("it is absolute");
    }
    if rel.contains('\0') {
        return Some("it holds a NUL byte");
    }
    for c in rel.split('/') {
        match c {
            ".." => return Some("it climbs out with `..`"),
            "." | "" => return Some("it has an empty or `.` component"),
            _ => {}
        }
    }
    None
}

/// Indent every line by four spaces.
pub fn indent(s: &str) -> String {
    s.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `p` as an absolute path without `.` or `..` (`repo/../cache` is `cache`), for messages and
/// for paths handed to commands. A path with `..` has the part that exists resolved by the
/// filesystem (a `..` after a symlink goes where the kernel would go) and the rest cleaned
/// lexically; a path without is only made absolute.
pub fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let comps: Vec<Component> = abs.components().collect();
    if !comps.contains(&Component::ParentDir) {
        // Already clean (`absolute` drops `.`): printed as given, symlinks and all.
        return abs;
    }
    // The longest prefix that exists, canonicalized, then the remaining components.
    let mut base = None;
    let mut rest_from = comps.len();
    for end in (1..=comps.len()).rev() {
        let prefix: PathBuf = comps[..end].iter().collect();
        if let Ok(c) = std::fs::canonicalize(&prefix) {
            base = Some(c);
            rest_from = end;
            break;
        }
    }
    let (mut out, rest) = match base {
        Some(b) => (b, &comps[rest_from..]),
        None => (PathBuf::new(), &comps[..]),
    };
    for c in rest {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(c);
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_clean_relative_paths_stay_inside() {
        for ok in ["a", "lib/libfoo.so", "a..b/c", ".hidden/x", "p|q.c"] {
            assert_eq!(outside_reason(ok), None, "{ok}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a/./b",
            "a//b",
            "a/",
            "..",
            "a\0b",
        ] {
            assert!(outside_reason(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn normalize_cleans_dot_dot_and_resolves_what_exists() {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        std::fs::create_dir(root.join("repo")).unwrap();
        assert_eq!(normalize(&root.join("repo/../cache")), root.join("cache"));
        assert_eq!(
            normalize(&root.join("new/./x/../y/../../repo")),
            root.join("repo")
        );
        // Through a symlink, `..` goes where the filesystem goes.
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::os::unix::fs::symlink(root.join("a/b"), root.join("link")).unwrap();
        assert_eq!(normalize(&root.join("link/../c")), root.join("a/c"));
        // A clean path is kept as it is, even through a symlink.
        assert_eq!(normalize(&root.join("link/c")), root.join("link/c"));
        let rel = normalize(Path::new("some/../rel"));
        assert!(
            rel.is_absolute() && rel.ends_with("rel"),
            "{}",
            rel.display()
        );
        assert!(!rel.to_string_lossy().contains(".."));
    }
}
