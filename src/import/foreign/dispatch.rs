//! Which reader reads a history: by the tool, and for benchmark-action by whether the file's
//! versions come from a branch's log.

use std::path::Path;

use super::point::{Options, Tool, Visit};

/// Read `path` as `tool`'s history into `v`; `repo` resolves what names a commit where the
/// files do not (BMF, hyperfine) and holds the branch of `--git-history`.
pub(crate) fn read(
    tool: Tool,
    path: &Path,
    opts: &Options,
    repo: Option<&crate::git::Repo>,
    v: &mut dyn Visit,
) -> anyhow::Result<()> {
    if opts.git_history.is_some() && tool != Tool::BenchmarkAction {
        crate::usage!("--git-history reads a benchmark-action data.js from a branch's log; `--from {}` reads files", tool.name());
    }
    match tool {
        Tool::BenchmarkAction => match &opts.git_history {
            Some(branch) => {
                let Some(repo) = repo else {
                    crate::usage!("--git-history needs the repository holding branch `{branch}`");
                };
                super::history::read(repo, branch, path, opts, v)
            }
            None => super::action::read_file(path, opts, v),
        },
        Tool::Asv => super::asv::read(path, opts, v),
        Tool::PytestBenchmark => super::pytest::read(path, opts, v),
        Tool::Bmf | Tool::Hyperfine => super::commitless::read(tool, path, opts, repo, v),
    }
}
