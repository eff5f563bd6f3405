//! A commit's tree as a worktree holds it: every tracked path with its object, mode, and the
//! repository that holds the object. Submodules are part of it: at each gitlink the tree of
//! the commit it pins is read in, below the gitlink's path, from the user's own clone (see
//! [`super::submodule`]), nested ones too, so a checkout is what `git submodule update --init
//! --recursive` would leave, and what is built depends on the superproject commit alone.

use std::collections::BTreeMap;

use anyhow::Context;
use gix::bstr::{BString, ByteSlice};
use gix::ObjectId;

use super::submodule::{self, Level, Located, MissingSubmodule, Objects, Src};

/// A commit whose tree cannot be read whole: an object is missing from the repository (a
/// partial mirror, a damaged clone). Nothing was written; builds count the commit as one
/// that cannot be built, and go on with the others.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot check out {}: its {what} {object}{} is not in the repository (a partial or damaged clone; `git fsck` lists what is missing)",
    commit.to_hex_with_len(10),
    path.as_ref().map(|p| format!(" (`{p}`)")).unwrap_or_default()
)]
pub struct MissingObject {
    pub commit: ObjectId,
    pub object: ObjectId,
    /// `commit`, `tree` or `blob`.
    pub what: &'static str,
    /// The path of a missing blob.
    pub path: Option<String>,
}

/// Kind of a tracked entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Executable,
    Symlink,
    /// A gitlink left as an empty folder, as git leaves it: not declared in `.gitmodules`,
    /// or declared with `update = none` or inactive in the user's config.
    Submodule,
}

/// One tracked path: its object, its kind, and the repository holding the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub id: ObjectId,
    pub kind: Kind,
    pub src: Src,
}

impl Entry {
    /// The same content: object and kind (which repository holds it does not matter).
    pub fn same(&self, other: &Entry) -> bool {
        self.id == other.id && self.kind == other.kind
    }
}

/// Every tracked path of a checkout, in path order.
pub type Entries = BTreeMap<BString, Entry>;

/// The entries of `commit`'s tree, submodules read in. A pinned commit no repository of the
/// user's clone holds is a [`MissingSubmodule`] error.
pub fn read(objs: &mut Objects<'_>, commit: ObjectId) -> anyhow::Result<Entries> {
    let mut out = Entries::new();
    let top = Level::top(objs);
    expand(objs, &top, commit, commit, &mut out)?;
    Ok(out)
}

/// The entries of `commit`'s tree in the repository of `level`, below its prefix, into `out`;
/// `top` is the superproject commit being read (for messages).
fn expand(
    objs: &mut Objects<'_>,
    level: &Level,
    commit: ObjectId,
    top: ObjectId,
    out: &mut Entries,
) -> anyhow::Result<()> {
    let list = own_entries(objs.repo(level.src), commit)?;
    let declared = list
        .iter()
        .find(|(p, e)| p == ".gitmodules" && e.kind == Kind::File)
        .and_then(|(_, e)| objs.repo(level.src).find_blob(e.id).ok())
        .map(|b| submodule::parse_gitmodules(&b.data))
        .unwrap_or_default();
    for (path, mut entry) in list {
        let full: BString = format!("{}{}", level.prefix, path.to_str_lossy()).into();
        entry.src = level.src;
        if entry.kind != Kind::Submodule {
            out.insert(full, entry);
            continue;
        }
        let rel = path.to_str_lossy();
        match submodule::locate(objs, level, &rel, entry.id, &declared) {
            Located::Empty => {
                out.insert(full, entry);
            }
            Located::Missing(looked) => {
                return Err(MissingSubmodule {
                    commit: top,
                    path: full.to_str_lossy().into_owned(),
                    pinned: entry.id,
                    looked,
                }
                .into())
            }
            Located::Found(sub) => {
                if sub.depth > submodule::MAX_DEPTH {
                    anyhow::bail!(
                        "cannot check out {}: submodules nested more than {} deep at `{}`",
                        top.to_hex_with_len(10),
                        submodule::MAX_DEPTH,
                        full.to_str_lossy()
                    );
                }
                let pinned = entry.id;
                expand(objs, &sub, pinned, top, out).map_err(|e| {
                    if e.is::<MissingSubmodule>() {
                        return e;
                    }
                    MissingObject {
                        commit: top,
                        object: pinned,
                        what: "submodule commit",
                        path: Some(full.to_str_lossy().into_owned()),
                    }
                    .into()
                })?;
            }
        }
    }
    Ok(())
}

/// The entries of `commit`'s own tree in `repo`, gitlinks as [`Kind::Submodule`] (source 0:
/// the caller sets it).
pub fn own_entries(
    repo: &gix::Repository,
    commit: ObjectId,
) -> anyhow::Result<Vec<(BString, Entry)>> {
    let tree = repo
        .find_commit(commit)
        .with_context(|| format!("cannot read commit {commit}"))?
        .tree_id()?
        .detach();
    let index = repo
        .index_from_tree(&tree)
        .with_context(|| format!("cannot read the tree of {commit}"))?;
    let mut out = Vec::with_capacity(index.entries().len());
    for e in index.entries() {
        use gix::index::entry::Mode;
        let kind = if e.mode == Mode::FILE_EXECUTABLE {
            Kind::Executable
        } else if e.mode == Mode::SYMLINK {
            Kind::Symlink
        } else if e.mode.is_submodule() {
            Kind::Submodule
        } else {
            Kind::File
        };
        out.push((
            e.path(&index).to_owned(),
            Entry {
                id: e.id,
                kind,
                src: 0,
            },
        ));
    }
    Ok(out)
}

/// The first object of `commit`'s tree (the commit, a tree) missing from the repository, when
/// reading the tree failed.
pub fn missing_object(repo: &gix::Repository, commit: ObjectId) -> Option<MissingObject> {
    let missing = |object, what| {
        Some(MissingObject {
            commit,
            object,
            what,
            path: None,
        })
    };
    let Ok(c) = repo.find_commit(commit) else {
        return missing(commit, "commit");
    };
    let mut trees = vec![c.tree_id().ok()?.detach()];
    while let Some(id) = trees.pop() {
        let Ok(tree) = repo.find_tree(id) else {
            return missing(id, "tree");
        };
        for e in tree.decode().ok()?.entries {
            if e.mode.is_tree() {
                trees.push(e.oid.to_owned());
            }
        }
    }
    None
}
