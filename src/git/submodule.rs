//! Submodules as perfbisect's worktrees check them out: the commit a tree pins at each gitlink
//! is read from the user's own clone (`.git/modules/NAME`, the submodule's checkout, or its
//! configured URL when that is a local path), never fetched, and nothing in any of those
//! repositories is written (no checkout, HEAD, index or ref of theirs moves). Also what a
//! commit does to the pins (`bumps `lib` a1b2c3d → e4f5a6b, 12 commits of lib`), for `find`.

use std::path::{Path, PathBuf};

use gix::bstr::{BString, ByteSlice};
use gix::ObjectId;

/// Deeper than this, nested submodules are taken for a loop.
pub const MAX_DEPTH: usize = 8;

/// A commit a submodule's gitlink pins that no repository of the user's clone holds: the
/// superproject commit cannot be checked out whole, so it cannot be built (said, never a
/// crash). `--retry-failed` builds it once the submodule is fetched.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot check out {}: submodule `{path}` pins commit {}, which is not in your clone ({looked}); \
     `git submodule update --init --recursive` in your checkout fetches it (perfbisect reads only \
     what is already there), and `--retry-failed` then builds this commit",
    commit.to_hex_with_len(10),
    pinned.to_hex_with_len(10)
)]
pub struct MissingSubmodule {
    /// The superproject commit being checked out.
    pub commit: ObjectId,
    /// The submodule's path in the worktree (`lib`, `lib/vendor/zlib` when nested).
    pub path: String,
    /// The commit its gitlink pins.
    pub pinned: ObjectId,
    /// Where it was looked for, as the message says it.
    pub looked: String,
}

/// One submodule as `.gitmodules` declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// Its name: `.git/modules/NAME` holds its repository.
    pub name: String,
    /// Its path in the tree.
    pub path: String,
    pub url: Option<String>,
    /// `update = none`: git leaves it unchecked out, and so does perfbisect (also when the
    /// user's config says so).
    pub update_none: bool,
}

/// The submodules a `.gitmodules` file declares. A name that could name a directory outside
/// `.git/modules` (`..`, an absolute path) is left out, as git refuses it.
pub fn parse_gitmodules(text: &[u8]) -> Vec<Declared> {
    let Ok(file) = gix::config::File::from_bytes_no_includes(
        text,
        gix::config::file::Metadata::api(),
        Default::default(),
    ) else {
        return Vec::new();
    };
    let Some(sections) = file.sections_by_name("submodule") else {
        return Vec::new();
    };
    let mut out: Vec<Declared> = Vec::new();
    for s in sections {
        let Some(name) = s.header().subsection_name().map(|n| n.to_string()) else {
            continue;
        };
        let Some(path) = s.value("path").map(|p| p.to_string()) else {
            continue;
        };
        if !safe_name(&name) {
            continue;
        }
        let path = path
            .trim_start_matches("./")
            .trim_end_matches('/')
            .to_string();
        out.retain(|d| d.path != path);
        out.push(Declared {
            name,
            path,
            url: s.value("url").map(|u| u.to_string()),
            update_none: s
                .value("update")
                .is_some_and(|u| u.to_str_lossy().trim() == "none"),
        });
    }
    out
}

/// A submodule name usable as a directory below `modules/`.
fn safe_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('/')
        && name
            .split(['/', '\\'])
            .all(|c| !c.is_empty() && c != ".." && c != ".")
}

/// The repositories a checkout reads objects from: the user's repository (source 0) and the
/// submodule repositories opened on the way (each once).
pub struct Objects<'r> {
    main: &'r gix::Repository,
    subs: Vec<(PathBuf, gix::Repository)>,
}

/// Which repository of an [`Objects`] holds an entry's object.
pub type Src = usize;

impl<'r> Objects<'r> {
    /// Only the user's repository so far.
    pub fn new(main: &'r gix::Repository) -> Objects<'r> {
        Objects {
            main,
            subs: Vec::new(),
        }
    }

    /// The repository of source `src`.
    pub fn repo(&self, src: Src) -> &gix::Repository {
        match src {
            0 => self.main,
            n => &self.subs[n - 1].1,
        }
    }

    /// The repository at `path` (a git dir or a checkout with `.git`), opened once.
    fn open(&mut self, path: &Path) -> Option<Src> {
        let key = std::fs::canonicalize(path).ok()?;
        if let Some(i) = self.subs.iter().position(|(p, _)| *p == key) {
            return Some(i + 1);
        }
        let mut repo = gix::open(&key).ok()?;
        repo.object_cache_size_if_unset(4 * 1024 * 1024);
        let git_dir = std::fs::canonicalize(repo.git_dir()).unwrap_or_default();
        // The same repository reached another way (its checkout's `.git` file points to
        // `.git/modules/NAME`): the one opened first serves.
        if let Some(i) = self
            .subs
            .iter()
            .position(|(_, r)| std::fs::canonicalize(r.git_dir()).ok() == Some(git_dir.clone()))
        {
            return Some(i + 1);
        }
        self.subs.push((key, repo));
        Some(self.subs.len())
    }
}

/// A repository whose tree is being read: its source, and where the user keeps it.
#[derive(Debug, Clone)]
pub struct Level {
    pub src: Src,
    /// Its git directory (`.git`, `.git/modules/lib`): nested submodules live below its `modules/`.
    git_dir: PathBuf,
    /// The user's checkout of it, when there is one (nested submodules' checkouts are below).
    checkout: Option<PathBuf>,
    /// Where its tree goes in the worktree (`` for the superproject, `lib/` below it).
    pub prefix: String,
    pub depth: usize,
}

impl Level {
    /// The user's repository itself.
    pub fn top(objs: &Objects<'_>) -> Level {
        let repo = objs.repo(0);
        Level {
            src: 0,
            git_dir: repo.git_dir().to_path_buf(),
            checkout: repo.workdir().map(Path::to_path_buf),
            prefix: String::new(),
            depth: 0,
        }
    }
}

/// Where a gitlink's commit comes from.
pub enum Located {
    /// A repository holding the pinned commit: read its tree at this level.
    Found(Level),
    /// Not declared in `.gitmodules` (a stray gitlink), or declared with `update = none` or
    /// made inactive in the user's config: git leaves its folder empty, and so does perfbisect.
    Empty,
    /// Declared, but no repository of the user's clone holds the pinned commit: where it was
    /// looked for.
    Missing(String),
}

/// Find the repository holding `pinned`, the commit the gitlink at `path` (relative to
/// `level`) pins, given the submodules `level`'s tree declares.
pub fn locate(
    objs: &mut Objects<'_>,
    level: &Level,
    path: &str,
    pinned: ObjectId,
    declared: &[Declared],
) -> Located {
    let Some(d) = declared.iter().find(|d| d.path == path) else {
        return Located::Empty;
    };
    let config = objs.repo(level.src).config_snapshot();
    let file = config.plumbing();
    let active = file
        .string_by("submodule", d.name.as_str(), "active")
        .map(|v| v.to_str_lossy().trim().to_ascii_lowercase());
    let update_none = file
        .string_by("submodule", d.name.as_str(), "update")
        .is_some_and(|u| u.to_str_lossy().trim() == "none");
    if d.update_none
        || update_none
        || matches!(active.as_deref(), Some("false" | "no" | "off" | "0"))
    {
        return Located::Empty;
    }
    let url = file
        .string_by("submodule", d.name.as_str(), "url")
        .map(|u| u.to_str_lossy().into_owned())
        .or_else(|| d.url.clone());
    let origin = file
        .string_by("remote", "origin", "url")
        .map(|u| u.to_str_lossy().into_owned());
    let mut places: Vec<PathBuf> = vec![level.git_dir.join("modules").join(&d.name)];
    let checkout = level.checkout.as_ref().map(|c| c.join(path));
    if let Some(c) = &checkout {
        places.push(c.clone());
    }
    let base = level
        .checkout
        .clone()
        .unwrap_or_else(|| level.git_dir.clone());
    let local_url = url
        .as_deref()
        .and_then(|u| local_path(u, origin.as_deref(), &base));
    if let Some(p) = &local_url {
        places.push(p.clone());
    }
    let mut looked = Vec::new();
    for p in &places {
        let exists = if Some(p) == checkout.as_ref() {
            p.join(".git").exists()
        } else {
            p.exists()
        };
        if !exists {
            continue;
        }
        looked.push(crate::base::paths::display_path(p));
        let Some(src) = objs.open(p) else { continue };
        let repo = objs.repo(src);
        if repo.find_commit(pinned).is_ok() {
            return Located::Found(Level {
                src,
                git_dir: repo.git_dir().to_path_buf(),
                checkout: checkout.clone().filter(|c| c.join(".git").exists()),
                prefix: format!("{}{path}/", level.prefix),
                depth: level.depth + 1,
            });
        }
    }
    let looked = if looked.is_empty() {
        format!(
            "no clone of it here: {} does not exist{}",
            crate::base::paths::display_path(&places[0]),
            match (&url, &local_url) {
                (Some(u), None) => format!(" and its URL {u} is not a local path"),
                (Some(_), Some(p)) => format!(", nor {}", crate::base::paths::display_path(p)),
                (None, _) => String::new(),
            }
        )
    } else {
        format!("looked in {}", looked.join(", "))
    };
    Located::Missing(looked)
}

/// A submodule URL as a local path, when it is one: absolute, `file://`, or relative
/// (`../lib.git`) to the superproject's own origin when that is local, else to its checkout
/// (as git resolves it). Network URLs are `None`: nothing is fetched.
fn local_path(url: &str, origin: Option<&str>, base: &Path) -> Option<PathBuf> {
    let url = url.trim();
    if let Some(p) = url.strip_prefix("file://") {
        return Some(PathBuf::from(p));
    }
    if url.starts_with('/') {
        return Some(PathBuf::from(url));
    }
    if url.starts_with("./") || url.starts_with("../") {
        // Relative to the superproject's origin (a remote origin makes it remote too), or
        // without one to the superproject itself.
        let from = match origin {
            Some(o) => local_path(o, None, base)?,
            None => base.to_path_buf(),
        };
        return Some(from.join(url));
    }
    None
}

/// A gitlink: its path and the commit it pins.
pub type Gitlink = (String, ObjectId);

/// The gitlinks of `commit`'s tree in `repo`, and the submodules its `.gitmodules` declares.
pub fn gitlinks(
    repo: &gix::Repository,
    commit: ObjectId,
) -> anyhow::Result<(Vec<Gitlink>, Vec<Declared>)> {
    use anyhow::Context;
    let tree = repo
        .find_commit(commit)
        .with_context(|| format!("cannot read commit {commit}"))?
        .tree_id()?
        .detach();
    let index = repo
        .index_from_tree(&tree)
        .with_context(|| format!("cannot read the tree of {commit}"))?;
    let mut links = Vec::new();
    let mut declared = Vec::new();
    for e in index.entries() {
        let path: BString = e.path(&index).to_owned();
        if e.mode.is_submodule() {
            links.push((path.to_str_lossy().into_owned(), e.id));
        } else if path == ".gitmodules" {
            if let Ok(blob) = repo.find_blob(e.id) {
                declared = parse_gitmodules(&blob.data);
            }
        }
    }
    Ok((links, declared))
}

/// What a commit does to one submodule's pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bump {
    /// The submodule's path (nested ones below their parent's).
    pub path: String,
    pub from: Option<ObjectId>,
    pub to: Option<ObjectId>,
    /// Commits of the submodule reachable from `to` and not `from`, and the other way round;
    /// `None` when its repository or one of the commits is not in the user's clone.
    pub counts: Option<(usize, usize)>,
}

impl Bump {
    /// As a note says it: "bumps `lib` a1b2c3d → e4f5a6b, 12 commits of lib".
    pub fn describe(&self) -> String {
        let h = |id: &ObjectId| id.to_hex_with_len(7).to_string();
        let name = self.path.rsplit('/').next().unwrap_or(&self.path);
        let commits = |n: usize| crate::base::text::count(n, "commit");
        match (&self.from, &self.to, self.counts) {
            (None, Some(to), _) => format!("adds submodule `{}` at {}", self.path, h(to)),
            (Some(from), None, _) => {
                format!("removes submodule `{}` (pinned at {})", self.path, h(from))
            }
            (Some(from), Some(to), counts) => {
                let (verb, what) = match counts {
                    Some((n, 0)) => ("bumps", format!("{} of {name}", commits(n))),
                    Some((0, m)) => ("moves back", format!("{} of {name} undone", commits(m))),
                    Some((n, m)) => (
                        "moves",
                        format!("{} of {name} in, {} out", commits(n), commits(m)),
                    ),
                    None => (
                        "moves",
                        format!("the commits between are not in your clone of {name}"),
                    ),
                };
                format!("{verb} `{}` {} → {}, {what}", self.path, h(from), h(to))
            }
            (None, None, _) => String::new(),
        }
    }
}

/// The pins `commit` moves against `parent`, nested submodules included (each read from the
/// user's clone as a checkout reads them), in path order; and whether the pins are all it
/// changes (no file of the superproject differs but `.gitmodules`).
pub fn bumps(
    repo: &gix::Repository,
    parent: ObjectId,
    commit: ObjectId,
) -> anyhow::Result<(Vec<Bump>, bool)> {
    let mut objs = Objects::new(repo);
    let top = Level::top(&objs);
    let mut out = Vec::new();
    compare(&mut objs, &top, parent, commit, &mut out)?;
    let only = !out.is_empty() && only_pins(repo, parent, commit)?;
    Ok((out, only))
}

/// The moved pins between `a` and `b`, two commits of `level`'s repository.
fn compare(
    objs: &mut Objects<'_>,
    level: &Level,
    a: ObjectId,
    b: ObjectId,
    out: &mut Vec<Bump>,
) -> anyhow::Result<()> {
    let (old, _) = gitlinks(objs.repo(level.src), a)?;
    let (new, declared) = gitlinks(objs.repo(level.src), b)?;
    let mut paths: Vec<&String> = old.iter().chain(&new).map(|(p, _)| p).collect();
    paths.sort();
    paths.dedup();
    for path in paths {
        let from = old.iter().find(|(p, _)| p == path).map(|(_, id)| *id);
        let to = new.iter().find(|(p, _)| p == path).map(|(_, id)| *id);
        if from == to {
            continue;
        }
        let full = format!("{}{path}", level.prefix);
        let mut counts = None;
        let mut inner = None;
        if let (Some(f), Some(t)) = (from, to) {
            if let Located::Found(sub) = locate(objs, level, path, t, &declared) {
                let r = objs.repo(sub.src);
                if r.find_commit(f).is_ok() {
                    counts = Some((reach(r, t, f), reach(r, f, t)));
                    inner = Some((sub, f, t));
                }
            }
        }
        out.push(Bump {
            path: full,
            from,
            to,
            counts,
        });
        if let Some((sub, f, t)) = inner.filter(|(s, _, _)| s.depth < MAX_DEPTH) {
            compare(objs, &sub, f, t, out)?;
        }
    }
    Ok(())
}

/// How many commits are reachable from `to` and not from `hide` (counted up to a bound: a
/// pin moved across years of history says "100000 commits").
fn reach(repo: &gix::Repository, to: ObjectId, hide: ObjectId) -> usize {
    let Ok(walk) = repo.rev_walk([to]).with_hidden([hide]).all() else {
        return 0;
    };
    walk.take(100_000).filter(Result::is_ok).count()
}

/// Whether the superproject's files other than gitlinks and `.gitmodules` are the same in
/// both commits.
fn only_pins(repo: &gix::Repository, a: ObjectId, b: ObjectId) -> anyhow::Result<bool> {
    let files = |c: ObjectId| -> anyhow::Result<Vec<(BString, ObjectId)>> {
        let tree = repo.find_commit(c)?.tree_id()?.detach();
        let index = repo.index_from_tree(&tree)?;
        Ok(index
            .entries()
            .iter()
            .filter(|e| !e.mode.is_submodule())
            .map(|e| (e.path(&index).to_owned(), e.id))
            .filter(|(p, _)| p != ".gitmodules")
            .collect())
    };
    Ok(files(a)? == files(b)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitmodules_are_read_and_unsafe_names_left_out() {
        let text = b"[submodule \"lib\"]\n\tpath = lib\n\turl = ../lib.git\n\
            [submodule \"docs\"]\n\tpath = doc/theme/\n\turl = https://example.invalid/t\n\tupdate = none\n\
            [submodule \"../../escape\"]\n\tpath = x\n\turl = /tmp/x\n";
        let d = parse_gitmodules(text);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(
            d[0],
            Declared {
                name: "lib".into(),
                path: "lib".into(),
                url: Some("../lib.git".into()),
                update_none: false
            }
        );
        assert_eq!((d[1].path.as_str(), d[1].update_none), ("doc/theme", true));
        assert!(parse_gitmodules(b"not [ a config").is_empty());
    }

    #[test]
    fn only_local_urls_are_paths() {
        let base = Path::new("/work/super");
        assert_eq!(
            local_path("/srv/lib.git", None, base),
            Some(PathBuf::from("/srv/lib.git"))
        );
        assert_eq!(
            local_path("file:///srv/lib", None, base),
            Some(PathBuf::from("/srv/lib"))
        );
        assert_eq!(
            local_path("../lib", None, base),
            Some(PathBuf::from("/work/super/../lib"))
        );
        assert_eq!(
            local_path("../lib", Some("/srv/super.git"), base),
            Some(PathBuf::from("/srv/super.git/../lib"))
        );
        assert_eq!(
            local_path("../lib", Some("https://h.invalid/s"), base),
            None
        );
        assert_eq!(local_path("git@h.invalid:lib.git", None, base), None);
        assert_eq!(local_path("https://h.invalid/lib", None, base), None);
    }

    #[test]
    fn bumps_are_said_as_people_say_them() {
        let id = |c: char| ObjectId::from_hex(c.to_string().repeat(40).as_bytes()).unwrap();
        let b = Bump {
            path: "lib".into(),
            from: Some(id('a')),
            to: Some(id('e')),
            counts: Some((12, 0)),
        };
        assert_eq!(
            b.describe(),
            "bumps `lib` aaaaaaa → eeeeeee, 12 commits of lib"
        );
        let back = Bump {
            counts: Some((0, 1)),
            ..b.clone()
        };
        assert_eq!(
            back.describe(),
            "moves back `lib` aaaaaaa → eeeeeee, 1 commit of lib undone"
        );
        let added = Bump {
            path: "vendor/z".into(),
            from: None,
            counts: None,
            ..b
        };
        assert_eq!(added.describe(), "adds submodule `vendor/z` at eeeeeee");
    }
}
