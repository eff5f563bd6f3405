//! The descent into merges: a culprit that is a merge has the branch it merged searched for
//! the commits that moved the test there, merge by merge down to [`MAX_DESCENT`], each commit
//! named once.

use std::ops::Range;

use crate::bisect::{Culprit, Outcome, Params};
use crate::config::Test;
use crate::git::CommitInfo;
use crate::pipeline::workspace::Workspace;
use crate::report::find::Skip;

/// Deepest chain of merges `find` descends through (a merge of a merge of ...).
const MAX_DESCENT: usize = 8;

/// Share of a merge's step that the culprits found on its branch may leave unaccounted for
/// (medians of noisy runs do not add up exactly) before the rest is said to show at the merge.
const UNEXPLAINED: f64 = 0.2;

/// What a search went through and said besides its verdict, which each branch searched
/// extends: the commits (the chain first, then each branch), their blocks, the positions
/// probed, the notes and the commits skipped.
pub(super) struct Trail {
    pub(super) commits: Vec<CommitInfo>,
    pub(super) blocks: Vec<Range<usize>>,
    pub(super) probed: Vec<usize>,
    pub(super) notes: Vec<String>,
    pub(super) skips: Vec<Skip>,
}

/// One branch's search, with positions into the branch's commits.
pub(super) struct Branch {
    pub(super) outcome: Outcome,
    pub(super) probed: Vec<usize>,
    pub(super) notes: Vec<String>,
    pub(super) skips: Vec<Skip>,
}

/// Search a branch (its fork point first, as a search's old end).
pub(super) type Drive<'a> = dyn FnMut(&[CommitInfo]) -> anyhow::Result<Branch> + 'a;

/// Descend into the culprits `cs` that are merges (with a single candidate): each one's
/// branch is searched with `drive` and appended to `trail`; the culprits found there take the
/// merge's place (and are descended into in turn), else the merge stays the culprit. Returns
/// (culprit inside a merged branch, the merge that brought it in); `cs` ends sorted by the
/// size of their step.
pub(super) fn descend(
    ws: &Workspace,
    test: &Test,
    params: Params,
    cs: &mut Vec<Culprit>,
    trail: &mut Trail,
    drive: &mut Drive<'_>,
) -> anyhow::Result<Vec<(usize, usize)>> {
    let mut merges: Vec<(usize, usize)> = Vec::new();
    let mut todo: Vec<(Culprit, usize)> = cs.drain(..).map(|c| (c, 0)).collect();
    // With the depth each was found at.
    let mut done: Vec<(Culprit, usize)> = Vec::new();
    while let Some((c, depth)) = todo.pop() {
        let merge = trail.commits[c.pos].id;
        let side = if depth < MAX_DESCENT && c.candidates.len() == 1 {
            ws.repo.merged_side(merge)?
        } else {
            None
        };
        let Some((fork, ids)) = side else {
            done.push((c, depth));
            continue;
        };
        let mut inner: Vec<CommitInfo> = vec![ws.repo.info(fork)?];
        for id in ids {
            inner.push(ws.repo.info(id)?);
        }
        let m = &trail.commits[c.pos];
        ws.note(&format!(
            "{} {} is a merge: searching the {} the branch it merged",
            m.short(),
            m.subject,
            crate::base::text::plural(inner.len() - 1, "commit of", "commits of"),
        ));
        let r = drive(&inner)?;
        let off = trail.commits.len();
        let side_span = format!("{}..{}", inner[0].short(), inner[inner.len() - 1].short());
        trail.blocks.push(off..off + inner.len());
        trail.commits.extend(inner);
        // The fork point may already be on the chain searched before: list it once.
        for p in r.probed.iter().map(|p| p + off) {
            if !trail
                .probed
                .iter()
                .any(|&q| trail.commits[q].id == trail.commits[p].id)
            {
                trail.probed.push(p);
            }
        }
        trail.notes.extend(r.notes);
        trail.skips.extend(r.skips.into_iter().map(|s| Skip {
            pos: s.pos + off,
            reason: s.reason,
        }));
        let m = trail.commits[c.pos].clone();
        match r.outcome {
            Outcome::Culprits(inner_cs) => {
                if let Some(note) = unexplained(test, params, &c, &inner_cs, &m, &side_span) {
                    trail.notes.push(note);
                }
                for mut ic in inner_cs {
                    shift(&mut ic, off);
                    merges.push((ic.pos, c.pos));
                    todo.push((ic, depth + 1));
                }
            }
            Outcome::NoChange { .. } => {
                trail.notes.push(format!(
                    "{} {} is the culprit itself: the branch it merged ({side_span}) does \
                     not move `{}`",
                    m.short(),
                    m.subject,
                    test.name
                ));
                done.push((c, depth));
            }
            Outcome::Inconclusive { reason, .. } => {
                trail.notes.push(format!(
                    "inside the branch merged by {} ({side_span}) no commit could be \
                     named: {reason}",
                    m.short()
                ));
                done.push((c, depth));
            }
        }
    }
    *cs = listed_once(done, trail, &mut merges);
    Ok(merges)
}

/// What the culprits `inner_cs` found in the branch merged by `m` (culprit `c`) leave out of
/// its step, when that is more than noise: said as a note.
///
/// The branch's steps should add up to the merge's; what they leave out happened at the
/// merge (an evil merge, branches that combine differently than each alone), and what they
/// add beyond it was already on the first parent (a branch that merged it in).
fn unexplained(
    test: &Test,
    params: Params,
    c: &Culprit,
    inner_cs: &[Culprit],
    m: &CommitInfo,
    side_span: &str,
) -> Option<String> {
    let step = c.after - c.before;
    let found: f64 = inner_cs.iter().map(|ic| ic.after - ic.before).sum();
    let rest = step - found;
    if !(rest.abs() > UNEXPLAINED * step.abs()
        && params.threshold.reached(c.before + found, c.after))
    {
        return None;
    }
    let unit = test.unit();
    Some(format!(
        "{} {} moves `{}` by {} {unit}, but the culprits found in the \
         branch it merged ({side_span}) add up to {} {unit}: {} {unit} \
         of the step shows at the merge {}",
        m.short(),
        m.subject,
        test.name,
        signed(step),
        signed(found),
        signed(rest),
        if rest * step > 0.0 {
            "itself (its own changes, or how the branches combine)"
        } else {
            "as less than its branch moved (the branch brought in \
             changes its first parent already had)"
        }
    ))
}

/// The culprits `done` (with the depth each was found at), each commit once, largest step
/// first: a commit reached twice (on the chain and again through a branch that merged it in,
/// or through two merges) is one culprit, the one found highest up, and is said so.
fn listed_once(
    mut done: Vec<(Culprit, usize)>,
    trail: &mut Trail,
    merges: &mut Vec<(usize, usize)>,
) -> Vec<Culprit> {
    let commits = &trail.commits;
    done.sort_by_key(|(_, depth)| *depth);
    let mut seen: Vec<gix::ObjectId> = Vec::new();
    let mut dropped = Vec::new();
    done.retain(|(c, _)| {
        let id = commits[c.pos].id;
        if seen.contains(&id) {
            dropped.push(c.pos);
            false
        } else {
            seen.push(id);
            true
        }
    });
    for pos in dropped {
        if let Some(&(_, via)) = merges.iter().find(|(p, _)| *p == pos) {
            trail.notes.push(format!(
                "{} {} was found again inside the branch merged by {} {}: listed once",
                commits[pos].short(),
                commits[pos].subject,
                commits[via].short(),
                commits[via].subject
            ));
        }
        merges.retain(|(p, _)| *p != pos);
    }
    let mut done: Vec<Culprit> = done.into_iter().map(|(c, _)| c).collect();
    done.sort_by(|a, b| {
        b.rel_change
            .abs()
            .total_cmp(&a.rel_change.abs())
            .then(a.pos.cmp(&b.pos))
    });
    done
}

/// A change with its sign: `+4184`, `-12.5`.
fn signed(v: f64) -> String {
    let n = crate::base::text::fmt_num(v);
    if v > 0.0 {
        format!("+{n}")
    } else {
        n
    }
}

/// Move a culprit's positions from a search's own list into the report's.
fn shift(c: &mut Culprit, off: usize) {
    c.pos += off;
    c.parent += off;
    for p in &mut c.candidates {
        *p += off;
    }
}
