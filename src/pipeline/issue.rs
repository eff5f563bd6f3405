//! What an issue about a finished search shows beside its verdict, loaded in one place for
//! `report` and `triage` alike ([`IssueData::load`]): the rows of the searched commits, the
//! range asked where imported rounds narrowed the search to a gap of it, detect's change
//! points over that range, how it was measured, and the steps `triage` confirmed there. The
//! issue itself ([`crate::report::issue::Issue`]) is rendered from it and loads nothing.

use std::ops::Range;

use crate::config::Test;
use crate::pipeline::history::{History, Scope};
use crate::pipeline::rows::CommitRow;
use crate::pipeline::workspace::Workspace;
use crate::report::find::FindReport;
use crate::report::issue::{Issue, Measured};
use crate::report::known::Known;
use crate::stats::Detection;
use crate::store::findings::Findings;

/// The stored results an issue about one finished search stands on.
pub struct IssueData<'t> {
    /// One row per commit of the search's commits (same positions).
    all: History<'t>,
    /// The range asked (its old end first) and where the searched chain starts in it, where
    /// imported rounds narrowed the search to a gap of it.
    widened: Option<(History<'t>, usize)>,
    /// How many of `all`'s rows the search's chain holds.
    searched: usize,
    detection: Detection,
    measured: Measured,
    known: Vec<Known>,
}

impl<'t> IssueData<'t> {
    /// Load what the issue about `r` shows; `findings` is `triage`'s ledger (the steps it
    /// confirmed stand beside this search's verdict).
    pub fn load(ws: &Workspace, r: &FindReport<'t>, findings: &Findings) -> anyhow::Result<Self> {
        let all = History::of(ws, r.test, Scope::Commits(r.commits))?;
        let n = (r.searched + 1).min(all.rows.len());
        let narrowed = r.imported.is_some_and(|g| !g.fell_back);
        let widened = if narrowed {
            range_history(ws, r.test, r.range, &all.rows[..n])?
        } else {
            None
        };
        let detection = match &widened {
            Some((h, _)) => h.detection(),
            None => all.detection_of_first(n),
        };
        let named: Vec<gix::ObjectId> = match r.outcome {
            crate::bisect::Outcome::Culprits(cs) => {
                cs.iter().map(|c| r.commits[c.pos].id).collect()
            }
            _ => Vec::new(),
        };
        let mut out = IssueData {
            all,
            widened,
            searched: n,
            detection,
            measured: measured(ws, r.test),
            known: Vec::new(),
        };
        out.known = crate::report::known::confirmed(findings, &r.test.name, out.chain(), &named);
        Ok(out)
    }

    /// The rows of the range asked (its old end first): the searched chain, or more where
    /// imported rounds narrowed the search to a gap of it.
    pub fn chain(&self) -> &[CommitRow] {
        match &self.widened {
            Some((h, _)) => &h.rows,
            None => &self.all.rows[..self.searched],
        }
    }

    /// Where the searched chain starts among [`IssueData::chain`]'s rows.
    pub fn offset(&self) -> usize {
        self.widened.as_ref().map_or(0, |(_, o)| *o)
    }

    /// detect's change points over [`IssueData::chain`], and the steps it leaves undecided.
    pub fn detection(&self) -> &Detection {
        &self.detection
    }

    /// The issue view of `find` (a report of the search this was loaded for) over the chains
    /// `blocks`.
    pub fn issue<'a>(&'a self, find: &'a FindReport<'a>, blocks: &'a [Range<usize>]) -> Issue<'a> {
        Issue {
            find,
            rows: &self.all.rows,
            range_rows: self.chain(),
            blocks,
            detection: &self.detection,
            measured: &self.measured,
            known: &self.known,
        }
    }
}

/// Where imported rounds narrowed the search to a gap of `range`: the history of the range
/// (its old end first) and where `searched` (the chain `find` searched, its old end first)
/// starts among them; `None` when the searched chain is the range's.
fn range_history<'t>(
    ws: &Workspace,
    test: &'t Test,
    range: &str,
    searched: &[CommitRow],
) -> anyhow::Result<Option<(History<'t>, usize)>> {
    let whole = ws.repo.range(range)?;
    let commits: Vec<crate::git::CommitInfo> =
        whole.base.iter().cloned().chain(whole.commits).collect();
    let first = searched.first().map(|r| r.commit.id);
    match commits.iter().position(|c| Some(c.id) == first) {
        Some(offset) if offset > 0 || commits.len() != searched.len() => Ok(Some((
            History::of(ws, test, Scope::Commits(&commits))?,
            offset,
        ))),
        _ => Ok(None),
    }
}

/// What the "How it was measured" section says.
pub fn measured(ws: &Workspace, t: &Test) -> Measured {
    Measured {
        test_command: t.command.clone(),
        metric: t.metric.describe(),
        repeats: t.repeats,
        warmup: t.warmup,
        max_repeats: t.max_repeats,
        threshold: match t.threshold {
            crate::stats::Threshold::Relative(r) => {
                format!("{} %", crate::base::text::fmt_num(r * 100.0))
            }
            crate::stats::Threshold::Absolute(a) => crate::report::units::quantity(a, &t.unit()),
        },
        alpha: t.alpha,
        deterministic: t.deterministic,
        build_command: ws.config.build.command.clone().or_else(|| {
            ws.config.build.cargo.as_ref().map(|c| {
                let mut parts = Vec::new();
                if !c.bins.is_empty() {
                    parts.push(format!("bins {}", c.bins.join(", ")));
                }
                if !c.benches.is_empty() {
                    parts.push(format!("benches {}", c.benches.join(", ")));
                }
                if parts.is_empty() {
                    parts.push("every bin".into());
                }
                format!(
                    "cargo ({}; profile {})",
                    parts.join("; "),
                    c.profile
                        .as_deref()
                        .unwrap_or(if c.bins.is_empty() && !c.benches.is_empty() {
                            "bench"
                        } else {
                            "release"
                        })
                )
            })
        }),
        artifacts: ws.config.build.artifacts.clone(),
        machine: crate::pipeline::fingerprint::machine(),
        perfbisect: env!("CARGO_PKG_VERSION").to_string(),
        runs: runs_setup(t),
    }
}

/// How `t`'s runs are taken, for "How it was measured": side by side or back to back, the
/// quiet-run settings, the instructions counter.
pub fn runs_setup(t: &Test) -> String {
    let mut parts = vec![if t.deterministic {
        "one run per commit (deterministic)".to_string()
    } else if t.interleave {
        "commits compared are measured side by side, in interleaved rounds".to_string()
    } else {
        "each commit's runs back to back (`[measure] interleave = false`)".to_string()
    }];
    if let Some(c) = &t.cpus {
        parts.push(format!("pinned to CPUs {}", crate::config::cpu_list(c)));
    }
    if !t.aslr {
        parts.push("address-space randomisation off".into());
    }
    if matches!(t.metric, crate::config::Metric::Instructions) {
        match crate::process::counter::select(t.counter) {
            Ok(s) => parts.push(format!(
                "user-space instructions of the whole process tree, counted by {}: {}",
                s.counter.describe(),
                s.why
            )),
            Err(e) => parts.push(format!("instructions, but no counter here: {e}")),
        }
    }
    parts.join("; ")
}

/// The Markdown report of a finished search (`r`, over the chains `blocks`), as `report TEST
/// RANGE --format md` prints it (without a plot): what `triage` puts in the issue of each
/// culprit.
pub fn markdown<'a>(
    ws: &Workspace,
    mut r: FindReport<'a>,
    blocks: &[Range<usize>],
    why: &'a [crate::pipeline::profile::Profiled],
    findings: &Findings,
) -> anyhow::Result<String> {
    let data = IssueData::load(ws, &r, findings)?;
    r.why = why;
    r.sparkline = crate::report::spark::medians_line(data.chain(), &r.test.unit());
    Ok(crate::report::issue::markdown(&data.issue(&r, blocks)))
}
