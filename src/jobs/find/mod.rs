//! The search `find` and `report` share: the noisy bisection of a range on the real lab
//! ([`lab::WorkspaceLab`] through [`bisect::drive`]), narrowed first to the gap between
//! imported rounds that shows the step, descending into the branches merges brought in, and
//! the profile of the first culprit (`--why`). Its result, a [`FindRun`], is what both render.

use std::time::Instant;

use crate::bisect::{self, Culprit, Driven, Outcome, Params, Search};
use crate::build::State;
use crate::config::Test;
use crate::git::CommitInfo;
use crate::pipeline::history::{History, Scope};
use crate::pipeline::workspace::{Bench, Workspace};
use crate::report::charts;
use crate::report::find::{
    self as view, DriftFact, FindReport, GapHere, ImportedGap, SearchFacts, Skip,
};
use crate::report::plot::{Marker, MarkerKind};

mod imported;
pub mod lab;
mod merges;
mod saved;

/// What this invocation spent, over every search it ran.
#[derive(Debug, Default)]
struct Tally {
    builds: usize,
    runs: usize,
    reused: usize,
    build_rounds: usize,
    most_parallel: usize,
    building: std::time::Duration,
    measuring: std::time::Duration,
    /// Runs not made because identical builds' samples stood in, and what was said about it.
    runs_saved: usize,
    shared_notes: Vec<String>,
    /// How the runs were taken (windows, drift, ...), over every search.
    facts: SearchFacts,
    /// Pristine rebuilds that checked the verdict's builds, and their wall time.
    checks: usize,
    checking: std::time::Duration,
    /// Cachegrind runs of the culprits and their parents, and their wall time.
    profiles: usize,
    profiling: std::time::Duration,
    /// Builds beside measurements: the time both went on at once.
    overlap: std::time::Duration,
}

impl Tally {
    /// What an earlier search of the same invocation spent (one found stale, searched again).
    fn absorb(&mut self, earlier: &Tally) {
        self.builds += earlier.builds;
        self.runs += earlier.runs;
        self.build_rounds += earlier.build_rounds;
        self.most_parallel = self.most_parallel.max(earlier.most_parallel);
        self.building += earlier.building;
        self.measuring += earlier.measuring;
        self.runs_saved += earlier.runs_saved;
        self.checks += earlier.checks;
        self.checking += earlier.checking;
        self.overlap += earlier.overlap;
        self.facts.ahead += earlier.facts.ahead;
        self.facts.ahead_unused += earlier.facts.ahead_unused;
        self.facts.unprobed += earlier.facts.unprobed;
        self.facts.load_free |= earlier.facts.load_free;
        self.facts.counted |= earlier.facts.counted;
        self.facts.parallel_runs += earlier.facts.parallel_runs;
    }

    fn add(&mut self, d: &Driven) {
        self.builds += d.builds;
        self.runs += d.runs;
        self.reused += d.reused;
        self.build_rounds += d.build_rounds;
        self.most_parallel = self.most_parallel.max(d.most_parallel);
        self.building += d.building;
        self.measuring += d.measuring;
        self.overlap += d.overlap;
        self.checks += d.checks;
        self.checking += d.checking;
    }

    /// The identical builds that stood in for runs, as a note. One line for all of them: on a
    /// project whose commits often leave the binary as it was, a line per commit would bury
    /// the verdict.
    fn shared_note(&self) -> Option<String> {
        if self.shared_notes.is_empty() {
            return None;
        }
        Some(format!(
            "byte-identical builds stood in for runs ({}); {} run{} saved",
            self.shared_notes.join(", "),
            self.runs_saved,
            if self.runs_saved == 1 { "" } else { "s" }
        ))
    }
}

/// One search's answer, with positions into the commits it was given.
struct Searched {
    outcome: Outcome,
    probed: Vec<usize>,
    notes: Vec<String>,
    skips: Vec<Skip>,
    deterministic: bool,
    min_detectable: Option<f64>,
    /// The end that does not build, when that is why the search could not start.
    unbuilt: Option<usize>,
}

/// A finished `find`: the searched chain and the merged branches it descended into, what it
/// concluded, and what it spent. `report` renders the same.
pub struct FindRun {
    pub test: Test,
    /// What the user typed.
    pub spec: String,
    /// Commits of the searched range (the chain is `commits[..=searched]`).
    pub searched: usize,
    /// Position 0 the old end, 1..=searched the range, then merged branches searched.
    pub commits: Vec<CommitInfo>,
    /// Position ranges of `commits` that are one first-parent chain each: the range, then each
    /// merged branch (so "the commits around a culprit" stay on its own chain).
    pub blocks: Vec<std::ops::Range<usize>>,
    pub outcome: Outcome,
    pub probed: Vec<usize>,
    pub notes: Vec<String>,
    pub skips: Vec<Skip>,
    pub merges: Vec<(usize, usize)>,
    tally: Tally,
    pub deterministic: bool,
    pub seconds: f64,
    /// The imported rounds that narrowed the search, when they did.
    pub imported: Option<ImportedGap>,
    /// When this run states a verdict `find` reached earlier (kept in the cache): then.
    pub replayed: Option<u64>,
}

impl FindRun {
    /// The report of this run; `invocation` are the global options to repeat in reproduce
    /// commands.
    pub fn report<'a>(&'a self, invocation: &'a str) -> FindReport<'a> {
        FindReport {
            test: &self.test,
            range: &self.spec,
            searched: self.searched,
            invocation,
            commits: &self.commits,
            outcome: &self.outcome,
            probed: &self.probed,
            notes: &self.notes,
            // A pristine rebuild is a build this invocation performed.
            builds: self.tally.builds + self.tally.checks,
            runs: self.tally.runs,
            reused: self.tally.reused,
            replayed: self.replayed,
            time: view::TimeSpent {
                building: self.tally.building.as_secs_f64(),
                measuring: self.tally.measuring.as_secs_f64(),
                build_rounds: self.tally.build_rounds,
                most_parallel: self.tally.most_parallel,
                checking: self.tally.checking.as_secs_f64(),
                checks: self.tally.checks,
                profiling: self.tally.profiling.as_secs_f64(),
                profiles: self.tally.profiles,
                both: self.tally.overlap.as_secs_f64(),
            },
            skipped: &self.skips,
            merges: &self.merges,
            deterministic: self.deterministic,
            seconds: self.seconds,
            sparkline: None,
            plot: None,
            imported: self.imported.as_ref(),
            facts: &self.tally.facts,
            why: &[],
        }
    }

    /// Stop the run's clock: its total is the wall time since `started`, the command's start
    /// (everything it did, the loading of stored samples and the rendering's preparation
    /// included). Called again just before the report is printed.
    pub fn stop_clock(&mut self, started: Instant) {
        self.seconds = started.elapsed().as_secs_f64();
    }

    /// Builds this run performed (pristine checks included) and runs it stored.
    pub fn counts(&self) -> (usize, usize) {
        (self.tally.builds + self.tally.checks, self.tally.runs)
    }

    /// A plot's title that says the finding: "value: +8.08 % regression at edf5fc6 in a..b".
    pub fn chart_title(&self) -> String {
        let what = match &self.outcome {
            Outcome::Culprits(cs) => {
                let c = &cs[0];
                format!(
                    "{:+.2} % {} at {}{}",
                    c.rel_change * 100.0,
                    view::judge(self.test.direction, c.rel_change),
                    self.commits[c.pos].id.to_hex_with_len(7),
                    if cs.len() > 1 {
                        format!(" (and {} more)", cs.len() - 1)
                    } else {
                        String::new()
                    }
                )
            }
            Outcome::NoChange { .. } => "no change".to_string(),
            Outcome::Inconclusive { .. } => "inconclusive".to_string(),
        };
        format!(
            "{}: {what} in {}",
            self.test.name,
            charts::abbreviate_hashes(&self.spec)
        )
    }

    /// The commits whose builds are the evidence for the verdict: each culprit and the last
    /// commit measured at the old level before it; without a culprit, the two ends (a stale
    /// incremental build at the new end could hide the step a "no change" denies).
    pub fn evidence(&self) -> Vec<gix::ObjectId> {
        let positions: Vec<usize> = match &self.outcome {
            Outcome::Culprits(cs) => cs.iter().flat_map(|c| [c.parent, c.pos]).collect(),
            _ => self
                .blocks
                .first()
                .map(|b| vec![b.start, b.end.saturating_sub(1)])
                .unwrap_or_default(),
        };
        let mut out = Vec::new();
        for p in positions {
            if let Some(c) = self.commits.get(p) {
                if !out.contains(&c.id) {
                    out.push(c.id);
                }
            }
        }
        out
    }

    /// The old end and the range's commits: the first-parent chain that was searched.
    pub fn chain(&self) -> &[CommitInfo] {
        &self.commits[..=self.searched]
    }

    /// The culprits as plot markers on the chain; one found inside a merged branch is drawn at
    /// the merge that brought it in, labelled with its own hash.
    pub fn markers(&self) -> Vec<Marker> {
        let culprits: Vec<(&Culprit, bool)> = match &self.outcome {
            Outcome::Culprits(cs) => cs.iter().map(|c| (c, c.verified)).collect(),
            Outcome::Inconclusive {
                best_guess: Some(c),
                ..
            } => vec![(c, false)],
            _ => Vec::new(),
        };
        let best_guess = matches!(self.outcome, Outcome::Inconclusive { .. });
        culprits
            .into_iter()
            .map(|(c, confirmed)| {
                let mut at = c.pos;
                while let Some(&(_, m)) = self.merges.iter().find(|(p, _)| *p == at) {
                    at = m;
                }
                let hash = self.commits[c.pos].id.to_hex_with_len(7).to_string();
                let mut label = if at == c.pos {
                    hash
                } else {
                    format!("{hash} (merged here)")
                };
                // Not a finding: the label says so, and the line is dashed.
                if best_guess {
                    label = format!("best guess {label}?");
                } else if !confirmed {
                    label = format!("{label} (not confirmed)");
                }
                Marker {
                    index: at,
                    label,
                    kind: if confirmed {
                        MarkerKind::Culprit
                    } else {
                        MarkerKind::Guess
                    },
                }
            })
            .filter(|m| m.index <= self.searched)
            .collect()
    }
}

/// What `find` and `report` ask of [`find`].
pub struct Ask<'a> {
    pub range: &'a str,
    pub jobs: usize,
    pub no_descend: bool,
    /// `--why` and `--no-why`.
    pub why: bool,
    pub no_why: bool,
    /// State the verdict an earlier `find` reached over the same range (kept in the cache)
    /// instead of searching again: `report`.
    pub replay: bool,
}

impl FindRun {
    /// The run a kept verdict describes: its search as `find` made it, nothing spent now.
    /// `None` when the kept commits do not parse.
    /// `range` as resolved now: the kept verdict names its searched commits by their place
    /// on the range's chain, and keeps only the merged branches' own.
    fn replayed(test: Test, range: &crate::git::Range, v: saved::Verdict) -> Option<FindRun> {
        let mut commits = (v.offset..=v.offset + v.searched)
            .map(|i| on_chain(range, i).cloned())
            .collect::<Option<Vec<_>>>()?;
        for c in &v.branches {
            commits.push(c.info()?);
        }
        let mut notes = v.notes;
        notes.push(format!(
            "the verdict is the one perfbisect find reached over this range on {} (kept in the \
             cache): report states it as find did, and find searches again",
            crate::base::text::date(i64::try_from(v.at).unwrap_or(i64::MAX))
        ));
        Some(FindRun {
            test,
            spec: range.spec.clone(),
            searched: v.searched,
            commits,
            blocks: v.blocks.into_iter().map(|(a, b)| a..b).collect(),
            outcome: v.outcome,
            probed: v.probed,
            notes,
            skips: v
                .skips
                .into_iter()
                .map(|(pos, reason)| Skip { pos, reason })
                .collect(),
            merges: v.merges,
            tally: Tally {
                facts: v.facts,
                ..Tally::default()
            },
            deterministic: v.deterministic,
            seconds: 0.0,
            imported: v.imported,
            replayed: Some(v.at),
        })
    }

    /// This run's verdict as the cache keeps it.
    /// `None` when its searched commits are no stretch of `range`'s chain.
    fn saved(
        &self,
        definition: String,
        ends: (String, String),
        range: &crate::git::Range,
    ) -> Option<saved::Verdict> {
        // The imported gap narrows the search to a stretch of the chain: kept by its place.
        let first = self.commits.first()?.id;
        let offset =
            (0..=range.commits.len()).find(|&i| on_chain(range, i).map(|c| c.id) == Some(first))?;
        let stretch = (0..=self.searched)
            .all(|i| on_chain(range, offset + i).map(|c| c.id) == Some(self.commits[i].id));
        if !stretch {
            return None;
        }
        Some(saved::Verdict {
            definition,
            ends,
            at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            offset,
            branches: self.commits[self.searched + 1..]
                .iter()
                .map(saved::SavedCommit::of)
                .collect(),
            searched: self.searched,
            blocks: self.blocks.iter().map(|b| (b.start, b.end)).collect(),
            outcome: self.outcome.clone(),
            probed: self.probed.clone(),
            notes: self.notes.clone(),
            skips: self
                .skips
                .iter()
                .map(|s| (s.pos, s.reason.clone()))
                .collect(),
            merges: self.merges.clone(),
            deterministic: self.deterministic,
            imported: self.imported.clone(),
            facts: self.tally.facts.clone(),
        })
    }
}

/// Position `i` of `range`'s chain: 0 its old end, then its commits, oldest first.
fn on_chain(range: &crate::git::Range, i: usize) -> Option<&CommitInfo> {
    match i {
        0 => range.base.as_ref(),
        _ => range.commits.get(i - 1),
    }
}

/// What a verdict over `range` depends on besides the range, and the range's ends: the key
/// a kept verdict is found by. `None` for a range without an old end.
fn verdict_key(
    ws: &Workspace,
    test: &Test,
    range: &crate::git::Range,
    no_descend: bool,
) -> Option<(String, (String, String))> {
    let base = range.base.as_ref()?;
    let tip = range.commits.last().map_or(base.id, |c| c.id);
    let definition = format!(
        "{test:?}|build {:x}|descend {}",
        ws.config.build.recipe_hash(),
        !no_descend
    );
    Some((definition, (base.id.to_string(), tip.to_string())))
}

/// `find`'s whole job, which `report` does too: the search; the check of the builds its
/// verdict stands on against pristine builds (an incremental build that missed a changed
/// header would measure another program), and the search again, pristine, when one was stale;
/// the profile of every culprit. Each phase's time and count goes into the run's tally, so
/// its summary accounts for all of them; the run's clock starts at `started`, the command's
/// start ([`FindRun::stop_clock`] ends it).
pub fn find(
    ws: &Workspace,
    test: Test,
    ask: &Ask<'_>,
    started: Instant,
) -> anyhow::Result<(FindRun, Vec<crate::pipeline::profile::Profiled>)> {
    // Resolved once: the key of a kept verdict and every search below walk the same chain.
    let range = ws.repo.range(ask.range)?;
    let key = verdict_key(ws, &test, &range, ask.no_descend);
    let kept = key
        .as_ref()
        .filter(|_| ask.replay)
        .and_then(|(d, ends)| saved::load(&ws.cache.root, &test.name, d, ends))
        .and_then(|v| FindRun::replayed(test.clone(), &range, v));
    if let Some(mut run) = kept {
        ws.note(
            "perfbisect: stating the verdict `find` reached over this range (kept in the cache)",
        );
        // Its culprits as the store states them now (runs `compare` or `run` added since
        // included), as `detect` and the report's rows read them: one size for one step.
        if !run.deterministic {
            let params = crate::pipeline::history::pair_params(&run.test);
            let search = bisect::Search::new(run.commits.len(), params);
            let outcome = std::mem::replace(&mut run.outcome, Outcome::Culprits(Vec::new()));
            let load = |ids: &[gix::ObjectId]| ws.samples_for(&run.test, Some(ids));
            let (outcome, exact) = lab::restated(&load, &search, &run.commits, outcome, false)?;
            run.outcome = outcome;
            run.deterministic = exact;
        }
        return finish(ws, run, ask, started);
    }
    let mut run = search(ws, test.clone(), &range, ask.jobs, ask.no_descend)?;
    // A "no change" names no build: cargo's builds, whose own dependency tracking is trusted
    // (as beside the measurements), are not rebuilt for it; other builds' ends are, since a
    // stale new end would hide a step.
    let evidence = match run.outcome {
        Outcome::NoChange { .. } if ws.config.build.cargo.is_some() => Vec::new(),
        _ => run.evidence(),
    };
    let checked = ws.check_builds_jobs(&evidence, ask.jobs, &[&run.test])?;
    run.tally.checks += checked.builds;
    run.tally.checking += std::time::Duration::from_secs_f64(checked.seconds);
    if checked.stale {
        ws.note("perfbisect: searching again, with pristine builds");
        let first = run;
        run = search(ws, test, &range, ask.jobs, ask.no_descend)?;
        run.tally.absorb(&first.tally);
        run.notes.push(
            "the first search stood on a stale incremental build, so the range was searched \
             again with pristine builds; the builds, runs and times above are of both searches"
                .to_string(),
        );
    }
    // A culprit that moves a submodule's pin is named with what it moved.
    run.notes.extend(pin_notes(ws, &run));
    if matches!(run.outcome, Outcome::NoChange { .. }) {
        // Ends alike can hide a step and its return that the stored runs show.
        let history = History::of(ws, &run.test, Scope::Commits(run.chain()))?;
        if let Some(n) = history.steps_inside(&run.spec) {
            run.notes.push(n);
        }
    }
    if let Some(v) = key.and_then(|(definition, ends)| run.saved(definition, ends, &range)) {
        // Losing it costs only a report's replay: said, never fatal.
        if let Err(e) = saved::save(&ws.cache.root, &run.test.name, v) {
            ws.warn(&format!("the verdict was not kept for `report`: {e:#}"));
        }
    }
    finish(ws, run, ask, started)
}

/// What each culprit (or the best guess) does to submodule pins, a note per culprit that
/// moves one: "3f2a1b0c9d bumps `lib` a1b2c3d → e4f5a6b, 12 commits of lib", and when the
/// pin is all it changes, that the step is among those commits and how to list them.
fn pin_notes(ws: &Workspace, run: &FindRun) -> Vec<String> {
    let culprits: Vec<&Culprit> = match &run.outcome {
        Outcome::Culprits(cs) => cs.iter().collect(),
        Outcome::Inconclusive {
            best_guess: Some(c),
            ..
        } => vec![c],
        _ => Vec::new(),
    };
    let mut out = Vec::new();
    for c in culprits {
        let at = &run.commits[c.pos];
        let Ok(Some(parent)) = ws.repo.first_parent(at.id) else {
            continue;
        };
        // Reading the pins is only a note: a repository that cannot say leaves it out.
        let Ok((bumps, only)) = crate::git::submodule::bumps(ws.repo.gix(), parent, at.id) else {
            continue;
        };
        let Some(first) = bumps.first() else {
            continue;
        };
        let what: Vec<String> = bumps.iter().map(|b| b.describe()).collect();
        let list = match (only, bumps.len(), first.from, first.to) {
            (true, 1, Some(from), Some(to)) => format!(
                "; the pin is all it changes, so the step is among those commits (`git -C {} \
                 log --oneline {}..{}` lists them)",
                first.path,
                from.to_hex_with_len(7),
                to.to_hex_with_len(7)
            ),
            (true, ..) => "; the pins are all it changes".to_string(),
            _ => String::new(),
        };
        out.push(format!("{} {}{list}", at.short(), what.join("; ")));
    }
    out
}

/// The profiles of a run's culprits, and its clock stopped.
fn finish(
    ws: &Workspace,
    mut run: FindRun,
    ask: &Ask<'_>,
    started: Instant,
) -> anyhow::Result<(FindRun, Vec<crate::pipeline::profile::Profiled>)> {
    let t = Instant::now();
    let mut profiles = 0;
    let why = why(ws, &run, ask.why, ask.no_why, &mut profiles)?;
    run.tally.profiling += t.elapsed();
    run.tally.profiles += profiles;
    run.stop_clock(started);
    Ok((run, why))
}

/// The functions whose cost changed from each culprit's parent to it (see
/// [`crate::pipeline::profile`]), culprit by culprit (its position in the run's commits with the
/// answer): with `--why`, or by default for tests of a time or a count where Valgrind is
/// installed; empty when not profiled. `made` counts the profiles run now.
pub fn why(
    ws: &Workspace,
    run: &FindRun,
    asked: bool,
    refused: bool,
    made: &mut usize,
) -> anyhow::Result<Vec<crate::pipeline::profile::Profiled>> {
    let Outcome::Culprits(cs) = &run.outcome else {
        return Ok(Vec::new());
    };
    let valgrind =
        crate::process::counter::select(crate::config::harness::Choice::Cachegrind).is_ok();
    if refused || !(asked || (valgrind && crate::pipeline::profile::worth_profiling(&run.test))) {
        return Ok(Vec::new());
    }
    let mut out = Vec::with_capacity(cs.len());
    for c in cs {
        let (parent, culprit) = (&run.commits[c.parent], &run.commits[c.pos]);
        // A parent shared by two culprits is profiled once: its profile is kept.
        let w = crate::pipeline::profile::why_counted(ws, &run.test, parent.id, culprit.id, made)?;
        out.push((c.pos, w));
    }
    Ok(out)
}

/// Run `find`'s search of `test` over `range` (descending into merges unless
/// `no_descend`), building up to `jobs` commits at once.
pub fn search(
    ws: &Workspace,
    test: Test,
    range: &crate::git::Range,
    jobs: usize,
    no_descend: bool,
) -> anyhow::Result<FindRun> {
    let range_spec = range.spec.as_str();
    // Said first (or refused, exit 2), before any other word of the search.
    ws.counter_note(&test)?;
    if let Some(w) = crate::jobs::calibrate::threshold_warning(&ws.cache, &test) {
        ws.warn(&w);
    }
    let Some(base) = range.base.clone() else {
        crate::usage!(
            "range `{}` has no old end to compare with (a root commit); use `OLD..NEW`",
            range_spec
        );
    };
    let mut commits: Vec<CommitInfo> = vec![base];
    commits.extend(range.commits.iter().cloned());
    let mut blocks: Vec<std::ops::Range<usize>> = Vec::new();
    blocks.push(0..commits.len());
    let started = Instant::now();

    let bench = ws.bench(&test, true)?;
    let params = search_params(&test, &bench.stored, &|w| ws.warn(w));
    let mut s = Searcher {
        bench,
        params,
        jobs,
        tally: Tally::default(),
    };
    if jobs == 0 {
        crate::usage!("--jobs must be at least 1");
    }
    let mut searched = range.commits.len();
    // Imported rounds first: when they show a step, only the gap between the two rounds
    // around it is searched (and built).
    let mut gap = imported::gap(&test, &s.bench.stored, &commits, params);
    let mut gap_notes = Vec::new();
    let mut first = None;
    if let Some((lo, hi, g)) = &mut gap {
        let sub: Vec<CommitInfo> = commits[*lo..=*hi].to_vec();
        if let Some(r) = s.search_gap(&sub, g, &mut gap_notes)? {
            searched = sub.len() - 1;
            blocks.clear();
            blocks.push(0..sub.len());
            commits = sub;
            first = Some(r);
        }
    }
    let first = match first {
        Some(r) => r,
        None => s.drive(&commits)?,
    };
    if let Some(pos) = first.unbuilt {
        unbuilt(&s.bench, range_spec, &commits, pos)?;
    }
    s.first_facts(&first);
    let mut outcome = first.outcome;
    let mut notes = gap_notes;
    notes.extend(first.notes);
    let deterministic = first.deterministic;
    let mut trail = merges::Trail {
        commits,
        blocks,
        probed: first.probed,
        notes,
        skips: first.skips,
    };
    // (culprit inside a merged branch, the merge that brought it in)
    let mut merges: Vec<(usize, usize)> = Vec::new();
    if !no_descend {
        if let Outcome::Culprits(cs) = &mut outcome {
            let mut drive = |inner: &[CommitInfo]| {
                s.drive(inner).map(|r| merges::Branch {
                    outcome: r.outcome,
                    probed: r.probed,
                    notes: r.notes,
                    skips: r.skips,
                })
            };
            merges = merges::descend(ws, &test, params, cs, &mut trail, &mut drive)?;
        }
    }
    let merges::Trail {
        commits,
        blocks,
        probed,
        mut notes,
        mut skips,
    } = trail;
    let tally = s.tally;
    skips.sort_by_key(|s| s.pos);
    notes.extend(tally.shared_note());
    Ok(FindRun {
        test,
        spec: range.spec.clone(),
        searched,
        commits,
        blocks,
        outcome,
        probed,
        notes,
        skips,
        merges,
        tally,
        deterministic,
        seconds: started.elapsed().as_secs_f64(),
        imported: gap.map(|(_, _, g)| g),
        replayed: None,
    })
}

/// What the searches of one `find` share: the test, its stored samples and appender, the
/// bisection knobs, how many commits build at once, and what the searches spent.
struct Searcher<'a> {
    bench: Bench<'a>,
    params: Params,
    jobs: usize,
    tally: Tally,
}

impl Searcher<'_> {
    /// One search over `commits` (see [`drive`]).
    fn drive(&mut self, commits: &[CommitInfo]) -> anyhow::Result<Searched> {
        drive(
            &mut self.bench,
            self.params,
            commits,
            self.jobs,
            &mut self.tally,
        )
    }

    /// What the first search (of the gap, or of the range) says of the whole `find`: the
    /// stored samples it used (said), the smallest step it could see, the counter.
    fn first_facts(&mut self, first: &Searched) {
        let test = self.bench.test;
        if self.tally.reused > 0 {
            self.bench.ws.note(&format!(
                "used {} stored samples of `{}` in this range",
                self.tally.reused, test.name
            ));
        }
        self.tally.facts.min_detectable = first.min_detectable;
        if matches!(test.metric, crate::config::Metric::Instructions) {
            self.tally.facts.counter = crate::process::counter::select(test.counter)
                .ok()
                .map(|s| format!("{}: {}", s.counter.describe(), s.why));
        }
    }

    /// Search the gap `sub` the imported rounds put a step in (`g`), saying so in `notes`:
    /// its search, or `None` when measured here the gap's ends do not differ (then the whole
    /// range is searched instead, `g.fell_back`).
    fn search_gap(
        &mut self,
        sub: &[CommitInfo],
        g: &mut ImportedGap,
        notes: &mut Vec<String>,
    ) -> anyhow::Result<Option<Searched>> {
        self.bench.ws.note(&format!(
            "perfbisect: imported rounds show the step between {} and {} ({} commit{} between); searching only there{}",
            sub[0].short(),
            sub[sub.len() - 1].short(),
            g.inside,
            if g.inside == 1 { "" } else { "s" },
            if g.trusted_ends {
                ""
            } else {
                ", after measuring both ends here"
            }
        ));
        let r = self.drive(sub)?;
        let ends = format!(
            "{} and {}",
            imported::gap_end(&g.old, &sub[0]),
            imported::gap_end(&g.new, &sub[sub.len() - 1])
        );
        if let Outcome::NoChange {
            before,
            after,
            p_value,
            ..
        } = r.outcome
        {
            // The step of the imported numbers does not show here (another machine, a runner
            // change, dependencies resolved anew, the benchmark edited): no commit is blamed
            // on the imported numbers alone; the whole range is searched on this machine's.
            g.fell_back = true;
            g.here = Some(GapHere {
                old_median: before,
                new_median: after,
                p_value,
            });
            let fmt = crate::base::text::fmt_num;
            let rel =
                |a: f64, b: f64| crate::base::text::fmt_rel(crate::stats::rel_change(a, b), 2);
            notes.push(format!(
                "the imported step does not show here: imported {} to {} ({}) between {ends}; measured here {} {} and {} {} ({}, {}), no change; searched the whole range instead",
                fmt(g.old.median),
                fmt(g.new.median),
                rel(g.old.median, g.new.median),
                sub[0].short(),
                fmt(before),
                sub[sub.len() - 1].short(),
                fmt(after),
                rel(before, after),
                crate::base::text::fmt_p(p_value)
            ));
            return Ok(None);
        }
        if matches!(r.outcome, Outcome::Inconclusive { .. }) {
            // Not "does not show": the runs here could not tell either way.
            let fmt = crate::base::text::fmt_num;
            notes.push(format!(
                "the imported step is not confirmed here: imported {} to {} ({}) between {ends}, and the runs here could not decide (above); a culprit is named only from runs measured here",
                fmt(g.old.median),
                fmt(g.new.median),
                crate::base::text::fmt_rel(crate::stats::rel_change(g.old.median, g.new.median), 2),
            ));
            return Ok(Some(r));
        }
        notes.push(format!(
            "imported numbers: {ends}; {}; only the {} commit{} between them {} searched",
            if g.trusted_ends {
                "used as they are (deterministic test)"
            } else {
                "both measured again here before their levels were trusted (the import may come from another machine)"
            },
            g.inside,
            if g.inside == 1 { "" } else { "s" },
            if g.inside == 1 { "was" } else { "were" }
        ));
        Ok(Some(r))
    }
}

/// A search that could not start because the end `pos` of `commits` does not build: that is
/// the build's failure (exit 1, as `run` fails when nothing builds), not an inconclusive
/// verdict (exit 3, for runs that could not decide), and it says how the build ended.
fn unbuilt(bench: &Bench, spec: &str, commits: &[CommitInfo], pos: usize) -> anyhow::Result<()> {
    let failed = commits
        .iter()
        .filter(|c| matches!(bench.state(&c.id), State::Failed(_)))
        .count();
    let c = &commits[pos];
    let failed = crate::base::text::count(failed, "build");
    if pos == 0 {
        anyhow::bail!(
            "the old end of `{spec}`, {} {}, could not be built and no samples of it are stored, \
             so nothing can be compared with it ({failed} failed); its build ended with:\n{}",
            c.short(),
            c.subject,
            bench.failure(&c.id)
        )
    }
    anyhow::bail!(
        "no commit of `{spec}` after its old end could be built ({failed} failed); the first \
         tried, {} {}, ended with:\n{}",
        c.short(),
        c.subject,
        bench.failure(&c.id)
    )
}

/// Run one search over `commits` (position 0 the old end) through the driver loop, on the
/// real lab: builds up to `jobs` at once, every sample stored before the next run starts.
fn drive(
    bench: &mut Bench,
    params: Params,
    commits: &[CommitInfo],
    jobs: usize,
    tally: &mut Tally,
) -> anyhow::Result<Searched> {
    let mut search = Search::new(commits.len(), params);
    search.set_labels(
        commits
            .iter()
            .map(|c| format!("{} ({})", c.short(), c.subject))
            .collect(),
    );
    let test = bench.test;
    let mut lab = lab::WorkspaceLab::new(bench, commits, "find");
    // Another machine's numbers set no level for a noisy test: it measures here.
    lab.trust_imported(params.deterministic);
    // A count the machine's load does not move: runs of different commits on every core at
    // once, and the next probes building while one is measured. Never a time or a peak.
    let dep = crate::pipeline::shards::dependence(test);
    tally.facts.load_free |= dep.independent();
    tally.facts.counted |= params.counted || params.deterministic;
    if jobs > 1 && dep.independent() {
        lab.parallel = jobs;
        lab.why_parallel = format!("{}: the machine's load does not move it", dep.why());
        tally.facts.parallel_why = Some(lab.why_parallel.clone());
    }
    let driven = bisect::drive(&mut search, &mut lab, commits.len(), jobs);
    lab.finish();
    let (outcome, d) = driven?;
    let lab::WorkspaceLab {
        runs_saved,
        stood_in,
        shared,
        overlapped,
        last_error,
        bench,
        ..
    } = lab;
    let load = |ids: &[gix::ObjectId]| bench.samples_for(ids);
    let (outcome, exact) = lab::restated(&load, &search, commits, outcome, params.deterministic)?;
    tally.add(&d);
    tally.facts.parallel_runs += overlapped;
    tally.facts.ahead += d.ahead.len();
    tally.facts.ahead_unused += d
        .ahead
        .iter()
        .filter(|p| !search.probed().contains(p))
        .count();
    tally.facts.unprobed += d.unmeasured();
    let (windows, window_runs, beside) = search.interleaving();
    tally.facts.windows += windows;
    tally.facts.window_runs += window_runs;
    tally.facts.beside_runs += beside;
    if let Some(dr) = search.drift() {
        if tally.facts.drift.as_ref().is_none_or(|f| dr.rel > f.rel) {
            tally.facts.drift = Some(DriftFact {
                rel: dr.rel,
                commit: commits[dr.pos].id.to_string(),
                windows: dr.windows,
                p_value: dr.p_value,
                significant: dr.p_value < 0.01,
            });
        }
    }
    tally.runs_saved += runs_saved;
    // Each real run once: values of identical builds the search was handed are not runs.
    tally.runs = tally.runs.saturating_sub(stood_in);
    for (pos, twin) in &shared {
        tally.shared_notes.push(format!(
            "{} same build as {}",
            commits[*pos].short(),
            crate::git::short(twin)
        ));
    }
    // Besides the commits the search tried and could not build, the unbuildable commits that
    // make a culprit ambiguous (known from earlier runs, so never tried now).
    let in_doubt: Vec<usize> = match &outcome {
        Outcome::Culprits(cs) => cs.iter().flat_map(|c| c.candidates.clone()).collect(),
        Outcome::Inconclusive {
            best_guess: Some(c),
            ..
        } => c.candidates.clone(),
        _ => Vec::new(),
    };
    let mut skips: Vec<Skip> = Vec::new();
    let probed_or_doubt = search.probed().iter().copied().chain(in_doubt);
    for pos in probed_or_doubt {
        if skips.iter().any(|s| s.pos == pos) {
            continue;
        }
        if let State::Failed(tail) = bench.state(&commits[pos].id) {
            skips.push(Skip {
                pos,
                reason: format!("does not build\n{}", tail.trim_end()),
            });
        }
    }
    for pos in search.failing() {
        if skips.iter().any(|s| s.pos == pos) {
            continue;
        }
        let tail = last_error.get(&pos).map(|e| e.trim_end()).unwrap_or("");
        skips.push(Skip {
            pos,
            reason: format!(
                "its test failed {} runs in a row\n{tail}",
                test.repeats.max(2)
            ),
        });
    }
    skips.sort_by_key(|s| s.pos);
    Ok(Searched {
        outcome,
        probed: search.probed().to_vec(),
        notes: search.notes().to_vec(),
        skips,
        deterministic: search.is_deterministic() || exact,
        min_detectable: search.min_detectable(),
        unbuilt: search.unbuilt_end(),
    })
}

/// The bisection knobs of a test. Only `deterministic = true` makes a metric deterministic; a
/// declared one whose stored runs of some commit differ is treated as noisy, with a warning.
pub fn search_params(
    test: &crate::config::Test,
    stored: &crate::pipeline::samples::Samples,
    warn: &dyn Fn(&str),
) -> crate::bisect::Params {
    let mut deterministic = test.deterministic;
    if deterministic {
        let mut spread: Vec<_> = stored
            .by_commit
            .iter()
            .filter(|(_, recs)| {
                let vals: Vec<f64> = recs.iter().filter_map(|s| s.value).collect();
                vals.iter().any(|&v| v != vals[0])
            })
            .collect();
        spread.sort_by_key(|(k, _)| **k);
        if let Some((_, recs)) = spread.first() {
            let vals: Vec<f64> = recs.iter().filter_map(|s| s.value).collect();
            let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            warn(&format!(
                "test `{}` is declared deterministic, but runs of commit {} differ ({} to {}); \
                 treating it as noisy",
                test.name,
                crate::git::short(&recs[0].commit_id()),
                crate::base::text::fmt_num(lo),
                crate::base::text::fmt_num(hi)
            ));
            deterministic = false;
        }
    }
    crate::bisect::Params {
        deterministic,
        ..crate::pipeline::history::pair_params(test)
    }
}
