//! The machine's own changes, said once by `triage`: when the fingerprint of a test's newest
//! samples differs from the one before (a toolchain upgrade, a new kernel), the newest commit
//! of the era before is built again on this machine and measured with the test's runs (a
//! bridge: one build, whatever the tests), so the machine's own effect on each test is
//! measured and stated and the new era starts with a commit to compare the next round with.
//! No commit is blamed for it, and nothing of the history before is measured again.

use std::time::{Duration, Instant};

use super::outcome::{now, Options, Outcome};
use crate::config::Test;
use crate::git::CommitInfo;
use crate::pipeline::eras::{self, Change, Eras};
use crate::pipeline::workspace::Workspace;
use crate::store::findings::Findings;

/// Every test's change of machine not said yet: bridged (within the budget), then said in
/// `out.eras` and kept in `f` as said. A change whose bridge the budget left is said without
/// it and not kept: the next run measures it.
pub(super) fn machine_changes(
    ws: &Workspace,
    tests: &[Test],
    opts: &Options<'_>,
    f: &mut Findings,
    over_budget: &dyn Fn(&Outcome) -> bool,
    out: &mut Outcome,
) -> anyhow::Result<()> {
    let chain = match opts.range {
        Some(r) => Some(ws.chain_commits(r)?.0),
        None => None,
    };
    let ids: Option<Vec<gix::ObjectId>> = chain.as_ref().map(|c| c.iter().map(|c| c.id).collect());
    let eras_of = |t: &Test| -> anyhow::Result<Option<Eras>> {
        let others = ws.other_fingerprints(t, ids.as_deref())?;
        if others.by_commit.is_empty() {
            return Ok(None);
        }
        let here = ws.samples_for(t, ids.as_deref())?;
        Ok(Some(eras::of(ws, t, &here, others, chain.as_deref())?))
    };
    let mut said: Vec<Change> = Vec::new();
    // Each commit to bridge, with the tests (and their changes) it bridges.
    let mut bridges: Vec<(CommitInfo, Vec<(&Test, Change)>)> = Vec::new();
    for t in tests {
        let Some(e) = eras_of(t)? else { continue };
        let Some(ch) = e.change.clone() else { continue };
        if f.era_said(&t.name, &ch.from, &ch.to) {
            continue;
        }
        match e.bridge_commit().filter(|_| ch.bridge.is_none()) {
            Some(c) => match bridges.iter_mut().find(|(b, _)| b.id == c.id) {
                Some((_, ts)) => ts.push((t, ch)),
                None => bridges.push((c.clone(), vec![(t, ch)])),
            },
            None => said.push(ch),
        }
    }
    for (commit, ts) in bridges {
        if over_budget(out) {
            for (_, mut ch) in ts {
                ch.note = Some("the bridge is left for the next run (budget)".into());
                out.eras.push(ch);
            }
            continue;
        }
        let names: Vec<&str> = ts.iter().map(|(t, _)| t.name.as_str()).collect();
        ws.note(&format!(
            "perfbisect: triage: the machine changed ({}); building {} again on it and measuring {} there: the newest commit measured before, a bridge between the eras",
            crate::report::eras::lines(&ts[0].1),
            commit.short(),
            names.join(", ")
        ));
        let built =
            crate::build::rebuild_fresh(ws.repo.git_dir(), &ws.cache, &ws.config.build, commit.id)?;
        if built.interrupted {
            return Err(crate::base::interrupt::Interrupted.into());
        }
        out.builds += 1;
        if let Err(tail) = &built.result {
            let why = tail.lines().next().unwrap_or("failed").to_string();
            for (_, mut ch) in ts {
                ch.note = Some(format!("building {} again failed: {why}", commit.short()));
                said.push(ch);
            }
            continue;
        }
        let (b, r) = measure_at(ws, opts, &names.join(","), commit.id)?;
        out.builds += b;
        out.runs += r;
        for (t, old) in ts {
            let ch = eras_of(t)?
                .and_then(|e| e.change)
                .filter(|ch| ch.bridge.is_some())
                .unwrap_or(Change {
                    note: Some(format!(
                        "no run of {} on {} gave a value",
                        t.name,
                        commit.short()
                    )),
                    ..old
                });
            said.push(ch);
        }
    }
    for ch in said {
        f.say_era(&ch.test, &ch.from, &ch.to, now());
        out.eras.push(ch);
    }
    Ok(())
}

/// Measure `tests` (names, comma-separated) on commit `id` as `run --gaps` would (builds it
/// when needed, runs each test that has no number there): what the round and a bridge
/// measure. Returns the builds and runs made.
pub(super) fn measure_at(
    ws: &Workspace,
    opts: &Options<'_>,
    tests: &str,
    id: gix::ObjectId,
) -> anyhow::Result<(usize, usize)> {
    let hex = id.to_string();
    let round = crate::jobs::run::Options {
        tests,
        range: &hex,
        jobs: opts.jobs,
        shard: None,
        again: false,
        gaps: true,
        retry_failed: false,
        build_only: false,
    };
    let mut spent = crate::jobs::run::Spent::new(Instant::now());
    let counts = std::cell::Cell::new((0, 0));
    let keep = |s: &crate::report::run::Summary, _: Duration| {
        counts.set(s.counts());
        Ok(())
    };
    if crate::jobs::run::run_pass(ws, &round, true, &mut spent, &keep)? {
        crate::jobs::run::run_pass(ws, &round, false, &mut spent, &keep)?;
    }
    Ok(counts.get())
}
