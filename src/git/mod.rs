//! Read-only access to the user's repository through gix: revisions, ranges, commit metadata.
//! Nothing here writes to the user's repository.

pub mod metadata;
pub mod submodule;
pub mod tree;
pub mod worktree;

use std::path::{Path, PathBuf};

use anyhow::Context;
use gix::ObjectId;

use crate::error::UsageError;

/// One commit as perfbisect lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitInfo {
    pub id: ObjectId,
    pub subject: String,
    pub author: String,
    /// Author time, seconds since the epoch.
    pub time: i64,
}

impl CommitInfo {
    /// The first 10 hex digits.
    pub fn short(&self) -> String {
        short(&self.id)
    }
}

/// The first 10 hex digits of an id.
pub fn short(id: &ObjectId) -> String {
    id.to_hex_with_len(10).to_string()
}

/// A resolved range: the commits to walk, and the commit just before them (the old end).
#[derive(Debug, Clone)]
pub struct Range {
    /// What the user typed.
    pub spec: String,
    /// `A` in `A..B`; the first parent of the revision for a single revision (if any).
    pub base: Option<CommitInfo>,
    /// First-parent commits, oldest first.
    pub commits: Vec<CommitInfo>,
}

/// The user's repository.
pub struct Repo {
    repo: gix::Repository,
    /// Whether the last chain walked had a merge on it, by its ends: the note on merged
    /// branches asks about the chain the range walk has just read.
    last_merges: std::sync::Mutex<Option<(ObjectId, Option<ObjectId>, bool)>>,
}

impl Repo {
    /// Open the repository holding `dir` (default: the current directory).
    pub fn open(dir: Option<&Path>) -> anyhow::Result<Repo> {
        let start = dir
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let mut repo = gix::discover(&start).map_err(|e| {
            UsageError::err(format!(
                "{} is not in a git repository ({e}); pass --repo DIR",
                start.display()
            ))
        })?;
        repo.object_cache_size_if_unset(16 * 1024 * 1024);
        Ok(Repo {
            repo,
            last_merges: Default::default(),
        })
    }

    /// The working directory (or the git dir for a bare repository).
    pub fn dir(&self) -> &Path {
        self.repo.workdir().unwrap_or_else(|| self.repo.git_dir())
    }

    /// The `.git` directory.
    pub fn git_dir(&self) -> &Path {
        self.repo.git_dir()
    }

    /// The underlying gix repository.
    pub fn gix(&self) -> &gix::Repository {
        &self.repo
    }

    /// Resolve a revision as users write it (hash, short hash, tag, branch, `HEAD~3`, `@`)
    /// to a commit. Unknown revisions are usage errors naming the revision.
    pub fn resolve(&self, rev: &str) -> anyhow::Result<ObjectId> {
        let rev = rev.trim();
        if rev.is_empty() {
            crate::usage!("empty revision");
        }
        // gix's own wording ("couldn't parse revision, input=…") describes its parser, not the
        // user's problem: say what is missing, where, and the closest name there is.
        let id = self.repo.rev_parse_single(rev).map_err(|e| {
            let gix_says = format!("{e:#}").to_lowercase();
            // `HEAD~9`, `main^2`, `v1.0~3`: the name may exist and the steps from it not.
            let base_len = rev.find(['~', '^', ':']).unwrap_or(rev.len());
            let (base, steps) = rev.split_at(base_len);
            let base_ok =
                !base.is_empty() && !steps.is_empty() && self.repo.rev_parse_single(base).is_ok();
            let why = if gix_says.contains("ambiguous") {
                "several objects start with these hex digits; give more of them".to_string()
            } else if base_ok {
                format!(
                    "`{base}` exists, but `{steps}` from it leads to no commit (fewer \
                     ancestors or parents than that, or not a suffix git knows)"
                )
            } else {
                let refs: Vec<String> = self
                    .repo
                    .references()
                    .ok()
                    .and_then(|r| {
                        r.all().ok().map(|it| {
                            it.filter_map(Result::ok)
                                .map(|r| r.name().shorten().to_string())
                                .collect()
                        })
                    })
                    .unwrap_or_default();
                format!(
                    "no branch, tag or commit of that name in {}{}",
                    crate::base::paths::display_path(self.dir()),
                    crate::error::did_you_mean(base, refs.iter().map(String::as_str))
                )
            };
            UsageError::err(format!("unknown revision `{rev}`: {why}"))
        })?;
        let object = id
            .object()
            .map_err(|e| UsageError::err(format!("cannot read revision `{rev}`: {e}")))?;
        let kind = object.kind;
        let commit = object.peel_to_commit().map_err(|_| {
            UsageError::err(format!(
                "revision `{rev}` is a {kind}, not a commit: perfbisect builds commits"
            ))
        })?;
        Ok(commit.id)
    }

    /// The commit HEAD points at (read only).
    /// The commit `git bisect` holds as bad (new) while it runs: `refs/bisect/bad`, or the
    /// ref of the term `git bisect start --term-new` named (`BISECT_TERMS`). Read only;
    /// `None` outside a bisect.
    pub fn bisect_new(&self) -> Option<ObjectId> {
        let terms = std::fs::read_to_string(self.repo.git_dir().join("BISECT_TERMS")).ok();
        let term = terms
            .as_deref()
            .and_then(|t| t.lines().next())
            .map(str::trim)
            .filter(|t| !t.is_empty() && !t.contains(['/', ' ', '.']))
            .unwrap_or("bad");
        let name = format!("refs/bisect/{term}");
        self.repo
            .rev_parse_single(name.as_str())
            .ok()
            .map(|id| id.detach())
    }

    pub fn head(&self) -> anyhow::Result<ObjectId> {
        Ok(self
            .repo
            .head_id()
            .context("cannot read HEAD of the repository")?
            .detach())
    }

    /// Metadata of one commit.
    pub fn info(&self, id: ObjectId) -> anyhow::Result<CommitInfo> {
        let commit = self
            .repo
            .find_commit(id)
            .with_context(|| format!("cannot read commit {id}"))?;
        let decoded = commit.decode()?;
        // Untrusted text: inert wherever it is printed (a terminal, a CI log, Markdown).
        let subject = crate::base::text::shown(&decoded.message_summary().to_string());
        let author = decoded.author()?;
        let time = author.time().map(|t| t.seconds).unwrap_or(0);
        Ok(CommitInfo {
            id,
            subject,
            author: crate::base::text::shown(&format!("{} <{}>", author.name, author.email)),
            time,
        })
    }

    /// All parents of a commit, first parent first.
    pub fn parents(&self, id: ObjectId) -> anyhow::Result<Vec<ObjectId>> {
        let commit = self
            .repo
            .find_commit(id)
            .with_context(|| format!("cannot read commit {id}"))?;
        Ok(commit.parent_ids().map(|p| p.detach()).collect())
    }

    /// How many commits reachable from `to` and not from `hide` are off the first-parent chain
    /// (the commits of merged branches, which a range walk does not visit), given how many the
    /// chain holds.
    fn off_chain(
        &self,
        to: ObjectId,
        hide: Option<ObjectId>,
        on_chain: usize,
    ) -> anyhow::Result<usize> {
        let mut all = 0usize;
        for info in self
            .repo
            .rev_walk([to])
            .with_hidden(hide)
            .all()
            .context("cannot walk the commit graph")?
        {
            info.context("cannot walk the commit graph")?;
            all += 1;
        }
        Ok(all.saturating_sub(on_chain))
    }

    /// A note for `log` and `run` when `range` walks fewer commits than it holds: how many sit
    /// on merged branches, and how to reach them.
    pub fn off_chain_note(
        &self,
        spec: &str,
        base: Option<ObjectId>,
        walked: &[ObjectId],
    ) -> anyhow::Result<Option<String>> {
        let Some(&tip) = walked.last() else {
            return Ok(None);
        };
        // A single revision names one commit, not a range: a merge's branches are not "left
        // out" of it (its base is its first parent only for the comparison).
        if !spec.contains("..") {
            return Ok(None);
        }
        // Without a merge on the chain every reachable commit is on it: no second walk.
        if !self.merges_on_chain(tip, base)? {
            return Ok(None);
        }
        let n = self.off_chain(tip, base, walked.len())?;
        Ok((n > 0).then(|| {
            format!(
                "range `{}` walks its {} first-parent commit{}; {n} more commit{} on merged \
                 branches {} not walked. `find` descends into the merge that moved a test; to \
                 measure a merged branch, give its range: `MERGE^1..MERGE^2`",
                spec.trim(),
                walked.len(),
                if walked.len() == 1 { "" } else { "s" },
                if n == 1 { "" } else { "s" },
                if n == 1 { "is" } else { "are" },
            )
        }))
    }

    /// The commits a merge brought in: its second parent's first-parent chain down to (not
    /// including) what the first parent already has, oldest first, and the commit they forked
    /// from (the first parent of the oldest). `None` for a commit that is not a merge.
    pub fn merged_side(
        &self,
        merge: ObjectId,
    ) -> anyhow::Result<Option<(ObjectId, Vec<ObjectId>)>> {
        let parents = self.parents(merge)?;
        let (Some(&main), Some(&side)) = (parents.first(), parents.get(1)) else {
            return Ok(None);
        };
        let ids = self.walk(side, Some(main))?;
        let Some(&oldest) = ids.first() else {
            return Ok(None);
        };
        let fork = self.first_parent(oldest)?.unwrap_or(main);
        Ok(Some((fork, ids)))
    }

    /// First parent of a commit, if any.
    pub fn first_parent(&self, id: ObjectId) -> anyhow::Result<Option<ObjectId>> {
        let commit = self.repo.find_commit(id)?;
        let parent = commit.parent_ids().next().map(|p| p.detach());
        Ok(parent)
    }

    /// Resolve `A..B` (either side may be empty, meaning HEAD) or a single revision.
    ///
    /// `A..B` lists the commits reachable from B and not from A, following first parents,
    /// oldest first; its base is A. A single revision lists just that commit; its base is
    /// its first parent.
    pub fn range(&self, spec: &str) -> anyhow::Result<Range> {
        let (base, ids) = self.range_ids(spec)?;
        let commits = ids
            .into_iter()
            .map(|id| self.info(id))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Range {
            spec: spec.trim().to_string(),
            base: base.map(|b| self.info(b)).transpose()?,
            commits,
        })
    }

    /// Like [`Repo::range`], ids only: no commit is decoded beyond what the walk needs.
    pub fn range_ids(&self, spec: &str) -> anyhow::Result<(Option<ObjectId>, Vec<ObjectId>)> {
        let spec_t = spec.trim();
        if spec_t.contains("...") {
            crate::usage!(
                "range `{spec_t}`: `A...B` (symmetric difference) is not supported; use `A..B`"
            );
        }
        if let Some((a, b)) = spec_t.split_once("..") {
            let a = if a.is_empty() { "HEAD" } else { a };
            let b = if b.is_empty() { "HEAD" } else { b };
            let from = self.resolve(a)?;
            let to = self.resolve(b)?;
            let ids = self.walk(to, Some(from))?;
            if ids.is_empty() {
                return Err(self.empty_range(spec_t, (a, from), (b, to)));
            }
            Ok((Some(from), ids))
        } else {
            let id = self.resolve(spec_t)?;
            Ok((self.first_parent(id)?, vec![id]))
        }
    }

    /// Why `A..B` holds no commit, as a usage error: both ends the same commit, the ends
    /// given in the other order (then how many commits that order holds), or a new end that
    /// the old end already contains.
    fn empty_range(
        &self,
        spec: &str,
        (a, from): (&str, ObjectId),
        (b, to): (&str, ObjectId),
    ) -> anyhow::Error {
        let why = if from == to {
            format!(
                "`{a}` and `{b}` are the same commit ({}): a range holds the commits after its \
                 old end up to its new end; `{a}^..{b}` is that commit alone",
                short(&from)
            )
        } else {
            match self.walk(from, Some(to)) {
                Ok(back) if !back.is_empty() => format!(
                    "`{b}` is an ancestor of `{a}`: the ends are in the other order \
                     (`{b}..{a}` holds {})",
                    crate::base::text::count(back.len(), "commit")
                ),
                _ => format!("every commit of `{b}` is already in `{a}`"),
            }
        };
        UsageError::err(format!("range `{spec}` is empty: {why}"))
    }

    /// A usage error unless `spec` is a range (`A..B`): `command` compares an old end with
    /// newer commits, and a single revision names neither which nor how many. The message
    /// names the two ranges the user may mean, `REV^..REV` (that commit against its parent)
    /// and `REV..HEAD` (every commit after it); an unknown revision is said as such.
    pub fn require_range(&self, spec: &str, command: &str) -> anyhow::Result<()> {
        let rev = spec.trim();
        if rev.contains("..") {
            return Ok(());
        }
        let id = self.resolve(rev)?;
        let what = self
            .info(id)
            .map(|c| format!("{} {}", c.short(), c.subject))
            .unwrap_or_else(|_| short(&id));
        let mut means = Vec::new();
        if self.first_parent(id)?.is_some() {
            means.push(format!("`{rev}^..{rev}` (that commit against its parent)"));
        }
        if self.head().is_ok_and(|h| h != id) {
            means.push(format!("`{rev}..HEAD` (every commit after it, up to HEAD)"));
        }
        let hint = match means.len() {
            0 => "it is a root commit and HEAD: there is nothing to compare it with".to_string(),
            _ => format!("did you mean {}?", means.join(" or ")),
        };
        crate::usage!(
            "`{command}` takes a range `OLD..NEW`, and `{rev}` is a single revision ({what}): {hint}"
        )
    }

    /// First-parent commits reachable from `to` and not from `hide`, oldest first.
    pub fn walk(&self, to: ObjectId, hide: Option<ObjectId>) -> anyhow::Result<Vec<ObjectId>> {
        // The usual range has its old end on the new end's first-parent chain: then the
        // answer is that chain down to the old end, and stopping there is much cheaper than
        // computing everything the old end can reach.
        let chain = self.chain(to, hide)?;
        let mut ids = if chain.reached {
            chain.ids
        } else {
            // The old end is off the chain (a side branch, a tag on a release branch): hide
            // everything it reaches, as git does.
            let platform = self
                .repo
                .rev_walk([to])
                .first_parent_only()
                .with_hidden(hide);
            let mut ids = Vec::new();
            for info in platform.all().context("cannot walk the commit graph")? {
                ids.push(info.context("cannot walk the commit graph")?.id);
            }
            ids
        };
        ids.reverse();
        Ok(ids)
    }

    /// The first-parent chain from `to` down to, not including, `stop` (to the root when `stop`
    /// is not on it), newest first.
    ///
    /// Parents come from the commit-graph where it holds the commit (`git gc` writes one): a
    /// step is then an index into a memory-mapped table, with no object decoded. Commits newer
    /// than the graph, and repositories without one, are read from their objects.
    fn chain(&self, to: ObjectId, stop: Option<ObjectId>) -> anyhow::Result<Chain> {
        let graph = self.repo.commit_graph_if_enabled().ok().flatten();
        let chain = match self.chain_with(graph.as_ref(), to, stop) {
            Ok(chain) => chain,
            // A damaged commit-graph is only a cache: the objects still answer.
            Err(_) if graph.is_some() => self.chain_with(None, to, stop)?,
            Err(e) => return Err(e),
        };
        *self.last_merges.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((to, stop, chain.merges));
        Ok(chain)
    }

    fn merges_on_chain(&self, to: ObjectId, stop: Option<ObjectId>) -> anyhow::Result<bool> {
        let memo = *self.last_merges.lock().unwrap_or_else(|e| e.into_inner());
        match memo {
            Some((t, s, merges)) if t == to && s == stop => Ok(merges),
            _ => Ok(self.chain(to, stop)?.merges),
        }
    }

    fn chain_with(
        &self,
        graph: Option<&gix::commitgraph::Graph>,
        to: ObjectId,
        stop: Option<ObjectId>,
    ) -> anyhow::Result<Chain> {
        let mut chain = Chain {
            ids: Vec::new(),
            reached: stop.is_none(),
            merges: false,
        };
        let mut next = Some(to);
        let mut start = None;
        while let Some(id) = next {
            if Some(id) == stop {
                chain.reached = true;
                return Ok(chain);
            }
            if let Some(pos) = graph.and_then(|g| g.lookup(id)) {
                start = Some(pos);
                break;
            }
            let parents = match self.repo.find_commit(id) {
                Ok(commit) => commit.parent_ids().map(|p| p.detach()).collect::<Vec<_>>(),
                // A shallow clone's boundary names parents it does not have: the chain
                // ends there, as `git rev-list` ends it.
                Err(_) if id != to && self.repo.is_shallow().unwrap_or(false) => break,
                Err(e) => return Err(e).with_context(|| format!("cannot read commit {id}")),
            };
            chain.ids.push(id);
            chain.merges |= parents.len() > 1;
            next = parents.first().copied();
        }
        if let (Some(graph), Some(mut pos)) = (graph, start) {
            loop {
                let commit = graph.commit_at(pos);
                let id = commit.id().to_owned();
                if Some(id) == stop {
                    chain.reached = true;
                    break;
                }
                chain.ids.push(id);
                let mut parents = commit.iter_parents();
                let first = parents
                    .next()
                    .transpose()
                    .context("cannot read the commit-graph")?;
                chain.merges |= parents.next().is_some();
                match first {
                    Some(p) => pos = p,
                    None => break,
                }
            }
        }
        Ok(chain)
    }
}

/// A first-parent chain as [`Repo::chain`] walks it.
struct Chain {
    /// Newest first.
    ids: Vec<ObjectId>,
    /// Whether the walk met the commit it was to stop at.
    reached: bool,
    /// Whether any commit on the chain has more than one parent.
    merges: bool,
}
